"""The flat interaction's saving: bench/interaction_saving.py writes it from ideal
records before and after, and read_profile takes it off rows timed the old way."""

import csv
import json

import pytest

from bench.interaction_saving import main
from costmodel.interaction import SAVING_CSV, read_savings, saving_at
from costmodel.profile_data import read_profile


def _record(path, bwd_ms: dict[int, float]) -> str:
    """An execute record of criteo-kaggle ideals: interaction_bwd at each batch, the
    forward 0.25 ms, and one gpu-sequential case (not read)."""
    def case(strategy, batch, bwd):
        return {"strategy": strategy, "batch": batch, "measurement": {
            "strategy": strategy, "gpu_count": 1, "model": "criteo-kaggle",
            "hardware": "NVIDIA H200",
            "batch_per_gpu": batch, "stages": {"interaction_fwd": {"median_ms": 0.25},
                                               "interaction_bwd": {"median_ms": bwd}}}}
    cases = [case("ideal", b, ms) for b, ms in bwd_ms.items()]
    path.write_text(json.dumps(cases + [case("gpu-sequential", 8192, 9.0)]))
    return str(path)


def test_savings_from_records_correct_the_rows_timed_before(tmp_path):
    before = _record(tmp_path / "before.json", {8192: 1.5, 16384: 3.0, 4096: 0.8})
    after = _record(tmp_path / "after.json", {8192: 0.75, 16384: 1.5})
    folder = tmp_path / "h200"
    folder.mkdir()
    assert main(["--pair", before, after, "-o", str(folder / SAVING_CSV)]) == 0
    savings = read_savings(folder / SAVING_CSV)
    assert savings[("NVIDIA H200", 28, 128, "interaction_bwd")] == [(8192, 0.75), (16384, 1.5)]
    assert savings[("NVIDIA H200", 28, 128, "interaction_fwd")] == [(8192, 0.0), (16384, 0.0)]
    assert saving_at([(8192, 0.75), (16384, 1.5)], 12288) == pytest.approx(1.125)
    assert saving_at([(8192, 0.75), (16384, 1.5)], 4096) == pytest.approx(0.375)  # in proportion
    assert main(["--pair", before, after, "--skip", "criteo-kaggle:8192",
                 "-o", str(tmp_path / "skip.csv")]) == 0
    assert read_savings(tmp_path / "skip.csv")[
        ("NVIDIA H200", 28, 128, "interaction_bwd")] == [(16384, 1.5)]
    with pytest.raises(SystemExit, match="no ideal case"):
        main(["--pair", before, after, "wide-2x", "-o", str(tmp_path / "x")])
    for bad in (["--pair", before, after, "a", "b"],  # BEFORE AFTER [MODELS]: not four
                ["--pair", before, after, "--skip", "criteo-kaggle"],  # no batch
                ["--pair", before, str(tmp_path / "missing.json")]):
        with pytest.raises(SystemExit):
            main([*bad, "-o", str(tmp_path / "x")])
        assert not (tmp_path / "x").exists()

    def row(stage, batch, utc, model="criteo-terabyte"):  # terabyte: kaggle's shape
        return {"gpu": "NVIDIA H200", "model": model, "batch": str(batch), "kernel": "k",
                "stage": stage, "stage_alone_ms": "2.0", "stage_corun_ms": "2.5",
                "measured_utc": utc}
    old, new = "2026-11-29T14:12:35Z", "2026-12-02T00:00:00Z"
    with (folder / "profile.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(row("x", 1, "")))
        w.writeheader()
        w.writerows([row("interaction_bwd", 16384, old), row("interaction_bwd", 12288, old),
                     row("interaction_bwd", 16384, new, "criteo-kaggle"),
                     row("emb_bwd", 16384, old),
                     row("interaction_bwd", 16384, old, "mlperf-dcnv2")])
    got = [(float(r["stage_alone_ms"]), float(r["stage_corun_ms"])) for r in read_profile(folder)]
    assert got[0] == pytest.approx((0.5, 1.0))  # 1.5 ms saved, alone and beside the kernel
    assert got[1] == pytest.approx((0.875, 1.375))  # between the batches timed
    assert got[2:] == [(2.0, 2.5)] * 3  # timed the flat way; another stage; no triangle
    raw = [(float(r["stage_alone_ms"]), float(r["stage_corun_ms"]))
           for r in read_profile(folder, corrected=False)]
    assert raw == [(2.0, 2.5)] * 5  # as measured: what a copy into another profile keeps
