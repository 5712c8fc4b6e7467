"""bench/update_grid_report.py: session 59's runs of the fused embedding update's grid on
the heavy case, rendered from the committed records."""

import pytest

from bench.update_grid_report import grid, grid_rows, main, measurements, plan_rows, stage_ms
from reports.rounds import record_iteration_ms
from tests.report_files import written_report


def test_a_label_names_the_update_grid_it_ran():
    assert grid("ideal") == "4 an SM (528 blocks), the default"
    assert grid("corun+cap96+ub16") == "16 an SM (2112 blocks)"
    assert grid("ideal+uncapped") == "one thread per (bag, column)"


def test_each_grid_s_emb_bwd_is_against_the_same_command_s_default():
    recs = measurements("27b")
    row = next(r for r in grid_rows() if r.startswith("| 27b | 16 an SM"))
    cells = [c.strip() for c in row.split("|")[1:-1]]
    fast, default = stage_ms(recs["ideal+ub16"], "emb_bwd"), stage_ms(recs["ideal"], "emb_bwd")
    assert cells[4] == f"{fast:.3f}" and cells[5] == f"{fast - default:+.3f}"
    assert fast < default - 1.0  # the 16-block update: over a millisecond faster


def test_recovery_is_against_its_own_grid_and_the_fast_grid():
    recs = measurements("28")
    mid = {s: sorted(record_iteration_ms(r) for r in rs) for s, rs in recs.items()}
    med = {s: sum(v) / len(v) for s, v in mid.items()}  # two rounds: their mean
    row = next(r for r in plan_rows("28") if r.startswith("| corun+cap96 |"))
    cells = [c.strip() for c in row.split("|")[1:-1]]
    own = 100 * (med["gpu-sequential"] - med["corun+cap96"]) / (
        med["gpu-sequential"] - med["ideal"])
    fast = 100 * (med["gpu-sequential+ub16"] - med["corun+cap96"]) / (
        med["gpu-sequential+ub16"] - med["ideal+ub16"])
    assert cells[6] == f"{own:.0f}%" and cells[7] == f"{fast:.0f}%"
    assert own > 100 > 75 > fast  # the default grid's 112% is 55% against the fast ideal


def test_the_report_is_written_whole(tmp_path):
    text = written_report(main, tmp_path / "r.md", (
        "## Summary", "## Ideal on each grid (runs 27a-27b)",
        "## Every placement on the 16-block grid (run 29)",
        "## Session 60: `corun tune` with its grid variants (runs 32-34, 36)",
        "## Ideal on four grids, three heavy models (run 35)"))
    assert "| corun+cap64+ub16 | 16 an SM (2112 blocks) | 1 | 6.644 |" in text


def test_where_the_64_sm_choice_s_time_goes_adds_up_from_its_records():
    from bench.update_grid_report import ms, rest_rows

    recs = measurements("30")
    [row] = rest_rows([("30", recs, "corun+cap64+ub16")])[2:]
    assert row.startswith("| 30 | corun+cap64+ub16 |")
    cells = [float(c) for c in row.split("|")[3:-1]]
    best, base = recs["corun+cap64+ub16"], recs["ideal+ub16"]
    assert cells[0] == round(ms(best) - ms(base), 3)
    assert cells[-1] == pytest.approx(sum(cells[1:-1]), abs=2e-3)  # the stages' sum
    assert cells[8] == round(stage_ms(best, "emb_bwd") - stage_ms(base, "emb_bwd"), 3) < 0


def test_the_graphed_tunes_recover_most_of_the_16_block_gap_from_their_records():
    """Runs 32 and 34 (session 60): the graphed choice on 16 blocks an SM, by the median
    rounds tune kept, recovers over three quarters of that grid's gap; its tune.md says
    the same."""
    from bench.update_grid_report import RAW, ms, tune_measurements

    for run in ("32", "34"):
        folder = f"tune_grid_rehash_graphs_b32768_run{run}"
        recs = tune_measurements(folder)
        ideal, seq, plan = (ms(recs[s]) for s in ("ideal+ub16", "gpu-sequential+ub16",
                                                  "corun-ub16"))
        share = 100 * (seq - plan) / (seq - ideal)
        assert 75 < share < 90 and ms(recs["ideal+ub16"]) < ms(recs["ideal"])
        row = next(x for x in (RAW / folder / "tune.md").read_text().splitlines()
                   if x.startswith("corun-ub16 "))
        assert f"{share:.0f}%" in row.split()


def test_ideal_on_four_grids_per_model_names_the_fastest():
    from bench.update_grid_report import ideal_grid_rows

    rows = ideal_grid_rows()[2:]
    assert len(rows) == 6
    lean = next(r for r in rows if r.startswith("| heavy-lean | 32768 |"))
    assert lean.endswith("| 16 an SM (2112 blocks) |")
    for r in rows:  # the default (first) is slower than 8 and 16 blocks an SM in each
        four = [float(c.split()[0]) for c in r.split("|")[3:7]]
        assert four[0] > max(four[1], four[2])
