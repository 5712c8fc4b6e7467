"""bench/sm_cap_report.py: run 20's choices confined to some SMs, rendered from the
committed records, each round's recovery against that round's own ideal and
gpu-sequential."""

import pytest

from bench.sm_cap_report import EAGER, main, records, recovery_rows
from reports.rounds import record_iteration_ms
from tests.report_files import written_report


def test_each_round_recovers_against_its_own_baselines():
    docs = records(EAGER)
    rows = recovery_rows(docs, ["-r1", "-r2"], {"corun": 7.0})
    cap = next(r for r in rows if r.startswith("| corun+cap96 |"))
    ms = {r: record_iteration_ms(docs[f"corun+cap96{r}"]) for r in ("-r1", "-r2")}
    for r, cell in zip(("-r1", "-r2"), cap.split("|")[2:4]):
        ideal, seq = (record_iteration_ms(docs[f"{s}{r}"]) for s in ("ideal", "gpu-sequential"))
        assert cell.strip() == f"{ms[r]:.3f} ({100 * (seq - ms[r]) / (seq - ideal):.0f}%)"
    median = (ms["-r1"] + ms["-r2"]) / 2  # two rounds: the mean of the middle pair
    assert cap.endswith(f"| {median:.3f} | 7.000 | {100 * (7.0 - median) / median:+.1f}% |")
    calls = next(r for r in rows if r.startswith("| corun+calls |"))
    assert "| - |" in calls  # run in round 1 only
    assert ms["-r1"] == pytest.approx(6.897, abs=5e-4)


def test_the_report_is_written_whole(tmp_path):
    text = written_report(main, tmp_path / "r.md", (
        "## Summary", "## Eager heavy-rehash b32768's choice (two rounds)",
        "## Graphed heavy-rehash b16384's choice (one round)"))
    assert "| corun+cap64-r1 | 3.572 | 91.4% |" in text  # graphed b16384 on 64 SMs


def test_each_capped_tune_row_reads_its_rounds_medians():
    """Runs 24-25: a row per `corun tune` of a capped folder, its recoveries as tune's
    rows give them and the gap from the rounds' median ideal and gpu-sequential."""
    import json

    from bench.sm_cap_report import CAPPED_TUNES, RAW, tune_rows
    from spec.serde import read_stored_text, stored_path

    rows = tune_rows()
    assert len(rows) == 2 + len(CAPPED_TUNES)
    main_case = next(r for r in rows if r.startswith("| tune_capped_rehash_b32768_run25 |"))
    doc = json.loads(read_stored_text(stored_path(RAW / "tune_capped_rehash_b32768_run25" /
                                                  "tune.json")))
    by = {r["strategy"]: r for r in doc["rows"]}
    seq, ideal = by["gpu-sequential"]["median_ms"], by["ideal"]["median_ms"]
    cells = [c.strip() for c in main_case.split("|")[1:-1]]
    assert cells[3] == f"{100 * (seq - ideal) / seq:.1f}%" == "21.6%"
    assert cells[4:8] == ["111%", "100%", "80%", "corun"]  # the capped choice kept
    assert cells[9] == f"{by['corun']['error_pct']:+.1f}%"


def test_each_choice_s_kernel_span_is_read_from_its_records():
    """The kernel table: heavy-small b16384's 132-block kernel took longer confined (two
    waves) than on every SM, as its records say."""
    from bench.sm_cap_report import RAW, kernel_rows

    row = next(r for r in kernel_rows() if r.startswith("| heavy-small / heavy-small b16384 |"))
    cells = [c.strip() for c in row.split("|")[1:-1]]
    docs = records(RAW / "sm_cap_heavy_small_b16384_run22")
    assert cells[1] == "132"
    assert cells[3:] == [f"{docs[n]['kernels']['k0']['median_ms']:.2f}"
                         for n in ("corun-r1", "corun+cap96-r1", "corun+cap64-r1")]
    assert float(cells[4]) > 1.3 * float(cells[3])


def test_the_uncounted_tune_and_the_emb_bwd_lines_come_from_the_records():
    """The uncounted heavy-rehash b16384 tune's ideal: its slow steps and its fast steps'
    bottom_mlp_bwd against the next tunes'; run 25's emb_bwd under ideal's."""
    from bench.sm_cap_report import emb_bwd_row, ideal_steps_rows

    rows = {r.split("|")[1].strip(): [c.strip() for c in r.split("|")[2:-1]]
            for r in ideal_steps_rows()[2:]}
    assert rows["tune_capped_rehash_b16384_run24"][1] == "46/300"
    assert float(rows["tune_capped_rehash_b16384_run24"][4]) > 4 * float(
        rows["tune_capped_rehash_b16384_run25"][4])  # bottom_mlp_bwd, no preprocessing
    line = emb_bwd_row("tune_capped_rehash_b32768_run25")
    assert "ideal's emb_bwd 5.172 ms" in line and "corun -0.504" in line


def test_a_tune_folder_s_prediction_files_are_not_read_as_its_records():
    """Since session 58 `corun tune` writes prediction-<strategy>.json beside each median
    round (run 26's folder has them); the report reads the measurements only."""
    from bench.sm_cap_report import RAW, emb_bwd_row

    docs = records(RAW / "tune_capped_rehash_b32768_run26")
    assert {"ideal", "gpu-sequential", "corun", "corun-cap64", "corun-uncapped"} <= set(docs)
    assert not any(name.startswith("prediction-") for name in docs)
    line = emb_bwd_row("tune_capped_rehash_b32768_run26")
    assert "ideal's emb_bwd 5.106 ms" in line and "corun -0.512" in line
