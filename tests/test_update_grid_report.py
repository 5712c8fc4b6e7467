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
        "## Every placement on the 16-block grid (run 29)"))
    assert "| corun+cap64+ub16 | 16 an SM (2112 blocks) | 1 | 6.644 |" in text


def test_where_the_64_sm_choice_s_time_goes_adds_up_from_its_records():
    from bench.update_grid_report import ms, rest_rows

    recs = measurements("30")
    row = next(r for r in rest_rows() if r.startswith("| 30 |"))
    cells = [float(c) for c in row.split("|")[2:-1]]
    best, base = recs["corun+cap64+ub16"], recs["ideal+ub16"]
    assert cells[0] == round(ms(best) - ms(base), 3)
    assert cells[-1] == pytest.approx(sum(cells[1:-1]), abs=2e-3)  # the stages' sum
    assert cells[8] == round(stage_ms(best, "emb_bwd") - stage_ms(base, "emb_bwd"), 3) < 0
