"""bench/render_heavy_probe.py: shares of the same process's ideal, stage and span
columns, and the header naming the commands when it writes a file."""

from __future__ import annotations

import json

from bench.render_heavy_probe import main


def case(strategy: str, ms: float, kernels: dict | None = None) -> dict:
    stages = {"emb_fwd": 1.0, "interaction_bwd": 0.5, "emb_bwd": ms - 1.5}
    if kernels:
        stages.update({"h2d": 1.25, "assemble": 0.25})
    m = {"iteration": {"median_ms": ms},
         "stages": {k: {"median_ms": v} for k, v in stages.items()},
         "kernels": {k: {"median_ms": v} for k, v in (kernels or {}).items()},
         "host": {"step": {"median_ms": ms - 0.1}}}
    return {"batch": 8192, "strategy": strategy, "measurement": json.dumps(m)}


def test_shares_are_of_the_ideal_in_the_same_file(tmp_path, capsys):
    raw = tmp_path / "run.json"
    raw.write_text(json.dumps([case("ideal", 4.0), case("gpu-overlap+sm24", 5.0, {"all": 1.3}),
                               {"batch": 8192, "strategy": "corun", "error": "boom"}]))
    assert main([str(raw)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "| 4.000 | 100.0% | 4.00 | 1.00 / 0.50 / 2.50 | - | - / - | 3.90 |" in lines[2]
    assert "| gpu-overlap+sm24 | 5.000 | 80.0% | 5.00 |" in lines[3]
    assert "| 1.30 | 1.25 / 0.25 |" in lines[3]
    assert "boom" in lines[4]
    out = tmp_path / "t.md"
    main([str(raw), "-o", str(out)])
    assert out.read_text().startswith("# Heavy case on the H200")
