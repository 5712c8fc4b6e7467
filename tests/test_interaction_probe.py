"""bench/interaction_probe.py on the CPU: the trainer's flat gather gives advanced
indexing's outputs and gradients exactly, for every model the probe times."""

import csv
import json

import pytest
import torch

from backend.trainer import DotInteraction
from bench.interaction_probe import CASES, IndexDotInteraction, main
from costmodel.interaction import SAVING_CSV, read_savings, saving_at
from costmodel.profile_data import read_profile


def test_the_trainer_s_flat_gather_equals_advanced_indexing():
    gen = torch.Generator().manual_seed(1)
    bottom = torch.rand(5, 4, generator=gen, requires_grad=True)
    emb = torch.rand(5, 6, 4, generator=gen, requires_grad=True)
    a = IndexDotInteraction(7)(bottom, emb)
    b = DotInteraction(7)(bottom, emb)
    assert a.shape == (5, 4 + 21) and torch.equal(a, b)
    ga = torch.autograd.grad(a.sum(), (bottom, emb))
    gb = torch.autograd.grad(b.sum(), (bottom, emb))
    assert all(torch.equal(x, y) for x, y in zip(ga, gb))


def test_dry_run_times_each_model_once(tmp_path):
    assert main(["--dry-run", "--reps", "1", "--warmup", "0", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "interaction_probe.json").read_text())
    assert doc["dry_run"] and doc["command"].startswith("python bench/interaction_probe.py")
    assert [c["model"] for c in doc["cases"]] == list(dict.fromkeys(m for m, _ in CASES))
    for c in doc["cases"]:
        assert c["equal"] and c["index"]["bwd_ms"] > 0 and c["flat"]["fwd_ms"] > 0
    md = tmp_path / "probe.md"
    assert main(["--render", str(tmp_path / "interaction_probe.json"), "-o", str(md)]) == 0
    rows = [line for line in md.read_text().splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + len(doc["cases"])  # the header, then a row a case


def test_saving_csv_from_a_record_corrects_the_profile_rows(tmp_path):
    """A probe record (here made up: a GPU run's) becomes the saving CSV, and rows of
    that shape timed before the change lose their saving; later rows and other stages
    keep what was measured."""
    doc = {"device": "NVIDIA H200", "dry_run": False, "cases": [
        {"model": "criteo-kaggle", "batch": b, "features": 28, "dim": 128,
         "index": {"fwd_ms": 0.25, "bwd_ms": 1.5 * b / 8192},
         "flat": {"fwd_ms": 0.27, "bwd_ms": 0.75 * b / 8192}} for b in (8192, 16384)]}
    record = tmp_path / "probe.json"
    record.write_text(json.dumps(doc))
    folder = tmp_path / "h200"
    folder.mkdir()
    assert main(["--saving", str(record), "-o", str(folder / SAVING_CSV)]) == 0
    savings = read_savings(folder / SAVING_CSV)
    assert savings[("NVIDIA H200", 28, 128, "interaction_bwd")] == [(8192, 0.75), (16384, 1.5)]
    assert saving_at([(8192, 0.75), (16384, 1.5)], 12288) == pytest.approx(1.125)
    assert saving_at([(8192, 0.75), (16384, 1.5)], 4096) == pytest.approx(0.375)  # in proportion

    def row(stage, batch, utc, model="criteo-terabyte"):
        return {"gpu": "NVIDIA H200", "model": model, "batch": str(batch), "kernel": "k",
                "stage": stage, "stage_alone_ms": "2.0", "stage_corun_ms": "2.5",
                "measured_utc": utc}
    before, after = "2026-11-29T14:12:35Z", "2026-12-02T00:00:00Z"
    with (folder / "profile.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(row("x", 1, "")))
        w.writeheader()
        w.writerows([row("interaction_bwd", 16384, before), row("interaction_fwd", 8192, before),
                     row("interaction_bwd", 16384, after, "criteo-kaggle"),
                     row("emb_bwd", 16384, before),
                     row("interaction_bwd", 16384, before, "mlperf-dcnv2")])
    got = [(float(r["stage_alone_ms"]), float(r["stage_corun_ms"])) for r in read_profile(folder)]
    assert got[0] == pytest.approx((0.5, 1.0))  # 1.5 ms saved, alone and beside the kernel
    assert got[1] == pytest.approx((2.02, 2.52))  # the flat forward is 0.02 ms slower
    assert got[2:] == [(2.0, 2.5)] * 3  # measured the flat way; another stage; no triangle
    with pytest.raises(SystemExit, match="dry-run"):
        record.write_text(json.dumps({**doc, "dry_run": True}))
        main(["--saving", str(record), "-o", str(folder / SAVING_CSV)])
