"""bench/render_driver.py: strategies beside their "+core" twins of the same round, and
the host calls' medians both ways."""

import json

import pytest

from bench.render_driver import DRIVER, main
from bench.render_twins import pairs


def case(strategy: str, ms: float, rnd: int, batch: int = 8192) -> dict:
    m = {"pipeline": "heavy", "gpu_count": 1, "iteration": {"median_ms": ms},
         "git_commit": "4bec2ee0000"}
    return {"pipeline": "heavy", "batch": batch, "strategy": strategy, "repeat": rnd,
            "measurement": m}


RAW = [case("gpu-sequential", 4.5, 0), case("gpu-sequential+core", 5.0, 0),
       case("corun-2", 4.4, 0), case("corun-2+core", 4.0, 0),
       case("gpu-sequential", 4.6, 1),  # round 1 ran no twin
       case("corun-2+core", 4.0, 2),  # nor round 2 the strategy
       case("ideal", 3.9, 0)]


def breakdown(strategy: str, stage_ms: float) -> dict:
    return {"strategy": strategy, "calls": {"Lane.stage": {
        "median_ms": stage_ms, "calls_per_step": 1.0, "ms_per_step": stage_ms}}}


def test_only_strategies_beside_their_twin_of_the_same_round_are_paired(tmp_path):
    path = tmp_path / "execute_x.json"
    path.write_text(json.dumps(RAW))
    rows = pairs([path], DRIVER)
    assert [(r["round"], r["strategy"], r["commit"]) for r in rows] == [
        (0, "gpu-sequential", "4bec2ee"), (0, "corun-2", "4bec2ee")]
    assert [r["ms"] / r["twin_ms"] for r in rows] == pytest.approx([0.9, 1.1])


def test_the_command_line_writes_the_summary_and_the_call_table(tmp_path):
    path, hb, out = tmp_path / "execute_x.json", tmp_path / "hb.json", tmp_path / "d.md"
    path.write_text(json.dumps(RAW))
    hb.write_text(json.dumps({"command": "python bench/host_breakdown.py x", "results": [
        breakdown("gpu-sequential", 0.12), breakdown("gpu-sequential+core", 0.15),
        breakdown("ideal", 0.0)]}))
    assert main([str(path), str(hb), "-o", str(out)]) == 0
    text = out.read_text()
    assert "2 paired rounds: ratio median 1.000, range 0.900-1.100" in text
    assert "| Lane.stage | 0.1200 / 0.1500 (x1) |" in text
    with pytest.raises(SystemExit):
        main([str(tmp_path / "missing.json"), "-o", str(out)])
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"cases": []}))
    with pytest.raises(SystemExit, match="neither a list of cases"):
        main([str(other), "-o", str(tmp_path / "o.md")])
    assert not (tmp_path / "o.md").exists()


def test_render_calls_pairs_the_calls_twins_and_shows_calls_one_side_made(tmp_path):
    from bench.render_calls import main as calls_main

    path, out = tmp_path / "execute_y.json", tmp_path / "c.md"
    path.write_text(json.dumps(RAW + [case("corun-2+calls", 4.0, 0)]))
    hb = tmp_path / "hb.json"
    graphs = breakdown("gpu-overlap", 0.1)
    graphs["calls"]["_Graph.launch"] = {"median_ms": 0.0168, "calls_per_step": 3.0,
                                        "ms_per_step": 0.05}
    hb.write_text(json.dumps({"command": "python bench/host_breakdown.py y", "results": [
        graphs, breakdown("gpu-overlap+calls", 0.09)]}))
    other = tmp_path / "hb_core.json"  # twins of another kind: not counted here
    other.write_text(json.dumps({"command": "c", "results": [
        breakdown("corun", 0.1), breakdown("corun+core", 0.2)]}))
    assert calls_main([str(path), str(hb), str(other), "-o", str(out)]) == 0
    text = out.read_text()
    assert "from 1 runs with \"+calls\" cases and 1 host breakdowns" in text
    assert "1 paired rounds: ratio median 1.100" in text  # corun-2 4.4 against 4.0
    assert "| _Graph.launch | 0.0168 / - (x3) |" in text
    assert "| Lane.stage | 0.1000 / 0.0900 (x1) |" in text
