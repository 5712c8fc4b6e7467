"""bench/render_assembly.py pairs each strategy's early and late assembly runs."""

import json

from bench.render_assembly import main, pairs


def case(strategy: str, median_ms: float, wait_ms: float) -> dict:
    m = {"iteration": {"median_ms": median_ms, "p90_ms": median_ms * 1.1},
         "throughput_samples_per_s": 4096e3 / median_ms, "host": {"wait": {"median_ms": wait_ms}},
         "command": "python bench/execute_gpu.py --matrix assembly", "git_commit": "abc1234def"}
    return {"pipeline": "heavy", "batch": 4096, "strategy": strategy, "measurement": m}


def test_pairs_and_shares(tmp_path, capsys):
    raw = [case("ideal", 7.0, 0.0), case("gpu-sequential", 7.5, 0.1),
           case("gpu-sequential+late", 9.0, 5.0), case("corun", 7.2, 0.1),
           {"pipeline": "heavy", "batch": 4096, "strategy": "corun+late", "error": "x"}]
    rows = pairs(raw)
    assert [r["strategy"] for r in rows] == ["gpu-sequential"]  # corun+late failed
    r = rows[0]
    assert (round(r["early_pct"], 2), round(r["late_pct"], 2)) == (93.33, 77.78)
    assert (r["early_wait_ms"], r["late_wait_ms"]) == (0.1, 5.0)
    path = tmp_path / "raw.json"
    path.write_text(json.dumps(raw))
    assert main([str(path), "-o", str(tmp_path / "a.md")]) == 0
    assert "| heavy b4096 | gpu-sequential | 7.500 (8.25) | 9.000 (9.90) | 93.3% / 77.8% " \
        "| 0.10 / 5.00 |" in (tmp_path / "a.md").read_text()
    path.write_text(json.dumps(raw[:1]))
    assert main([str(path), "-o", str(tmp_path / "b.md")]) == 2
    assert "no strategy measured both early and late" in capsys.readouterr().err
    assert not (tmp_path / "b.md").exists()
