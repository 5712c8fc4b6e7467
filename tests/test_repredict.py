"""bench/repredict.py: its comparison with an earlier commit's rows pairs the same cases
and lists only the runs that moved; its list of runs takes each raw file once."""

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.repredict import against_table, every_raw  # noqa: E402


def row(source: str, strategy: str, measured: float, error: float) -> dict:
    return {"source": source, "model": "m", "batch": 4096, "strategy": strategy,
            "measured_ms": measured, "predicted_ms": measured * (1 + error / 100),
            "error_pct": error}


def test_against_pairs_the_same_cases_and_lists_the_runs_that_moved():
    old = [row("a.json.gz", "ideal", 3.0, 8.0), row("a.json.gz", "ideal", 3.1, -2.0),
           row("b.json", "rap", 5.0, 4.0), row("gone.json", "ideal", 1.0, 50.0)]
    today = [row("a.json", "ideal", 3.1, -1.0), row("a.json", "ideal", 3.0, 4.0),
             row("b.json", "rap", 5.0, 4.0), row("new.json", "ideal", 2.0, 30.0)]
    text = "\n".join(against_table(today, old))
    assert "(3 cases in both)" in text  # gone.json and new.json are in one side only
    assert "earlier mean 4.67%" in text and "today mean 3.00%" in text
    assert "| a.json | 2 | 5.00% (1) | 2.50% (2) | -2.50 |" in text
    assert "| b.json |" not in text and "(1 of 2)" in text  # b.json did not move


def test_every_raw_takes_each_run_once():
    from bench.render_execute import run_name

    runs = every_raw()
    names = [run_name(p) for p in runs]
    assert runs and len(set(names)) == len(runs)
    assert all((n.startswith("execute_") or n.startswith("tune_") and n.endswith("/tune.json"))
               and n.endswith(".json") for n in names)
    assert "tune_heavy_lean_b8192_run1/tune.json" in names


def test_a_tune_run_gives_a_case_per_strategy_whose_measurement_came_back(tmp_path):
    """measured_cases reads a `corun tune` summary as an execute file's cases: the
    strategies whose Measurement file is beside it (plain or gzipped), the rest left out."""
    import gzip
    import json

    from bench.render_execute import measured_cases, run_name

    run = tmp_path / "tune_x_run1"
    run.mkdir()
    doc = {"model": "m", "pipeline": "p", "batch": 8192,
           "rows": [{"strategy": s} for s in ("ideal", "corun", "corun-2")]}
    (run / "tune.json").write_text(json.dumps(doc))
    (run / "ideal.json").write_text(json.dumps({"iteration": {"median_ms": 1.0}}))
    (run / "corun.json.gz").write_bytes(gzip.compress(b'{"iteration": {"median_ms": 1.5}}'))
    cases, ideal = measured_cases(run / "tune.json")
    assert [c["strategy"] for c in cases] == ["ideal", "corun"]  # corun-2 did not come back
    assert cases[1]["measurement"]["iteration"]["median_ms"] == 1.5
    assert ideal == {("p", 8192): {"iteration": {"median_ms": 1.0}}}
    assert run_name(run / "tune.json") == "tune_x_run1/tune.json"
    assert run_name(tmp_path / "execute_a.json.gz") == "execute_a.json"


def test_calibrated_rows_put_each_case_beside_its_command_s_ideal(tmp_path):
    from bench.repredict_calibrated import main, rows

    raw = Path(__file__).resolve().parent.parent / "bench/results/raw"
    rs = rows([raw / "execute_small_b8192.json"], skipped := {})
    assert not skipped and rs and all(not r["strategy"].startswith("ideal") for r in rs)
    assert {r["strategy"] for r in rs} >= {"gpu-sequential", "corun"}
    # every case scaled by the run's ideal over the model's (3.740 ms for heavy-small
    # b8192), by mean iteration
    from bench.render_execute import measured_cases
    from reports.rounds import record_iteration_ms

    ideal = [c["measurement"] for c in measured_cases(raw / "execute_small_b8192.json")[0]
             if c["strategy"] == "ideal"]
    measured = statistics.median(record_iteration_ms(m) for m in ideal)
    factor = {round(r["calibrated_ms"] / r["plain_ms"], 6) for r in rs}
    assert len(factor) == 1 and abs(factor.pop() - measured / 3.740) < 0.002
    assert main([str(raw / "execute_small_b8192.json"), "-o", str(tmp_path / "c.md")]) == 0
    assert "| all | 21 |" in (tmp_path / "c.md").read_text()  # 7 strategies x 3 rounds


def test_named_runs_without_out_leave_the_default_report(tmp_path, monkeypatch, capsys):
    """The committed repredict_h200.md is its default runs' report; other runs print."""
    import bench.repredict as rp

    default = tmp_path / "default.md"
    default.write_text("committed")
    monkeypatch.setattr(rp, "OUT", default)
    raw = Path(__file__).resolve().parent.parent / "bench/results/raw"
    assert rp.main([str(raw / "execute_small_b8192.json")]) == 0
    assert "execute_small_b8192" in capsys.readouterr().out
    assert default.read_text() == "committed"


def test_a_run_with_variants_the_model_cannot_predict_keeps_its_other_cases():
    """The update on SMs of its own (+upd92, ideal+upd92) and the static split (+sm<N>)
    are not predicted; ideal, gpu-sequential and the plan of the same run are."""
    from bench.render_plans import unpredicted
    from bench.repredict import rows

    raw = Path(__file__).resolve().parent.parent / "bench/results/raw"
    rs = rows([raw / "execute_update_partition_lean_run3.json"])
    strategies = {r["strategy"] for r in rs}
    assert {"ideal", "gpu-sequential", "corun"} <= strategies
    assert not any("upd" in s or s.startswith("ideal+") for s in strategies)
    assert "green contexts" in unpredicted("ideal+sm24")
    assert unpredicted("corun+ahead2") is None and unpredicted("ideal") is None


def test_the_report_counts_each_model_apart():
    from bench.repredict import render

    rs = [row("a.json", "ideal", 3.0, 2.0), row("a.json", "corun", 3.0, -8.0),
          {**row("b.json", "ideal", 2.0, 1.0), "model": "n"}]
    text = render(rs, [], "python bench/repredict.py", {})
    assert "Iteration-time error: mean 3.67%, median 2.00%, 2 of 3 within 5%" in text
    assert "- m: mean 5.00%, median 5.00%, 1 of 2 within 5%" in text
    assert "- n: mean 1.00%, median 1.00%, 1 of 1 within 5%" in text
