"""bench/render_update_grid.py: a row per update grid, each stretch with its share of the
co-runner's time alone; bench/update_grid_probe.py's dry run writes what it reads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.render_update_grid import main

ROOT = Path(__file__).resolve().parent.parent


def run() -> dict:
    def row(cap: int, emb_bwd: float, stretch: float) -> dict:
        return {"blocks_per_sm": cap, "max_blocks": 132 * cap,
                "plain": {"span_ms": emb_bwd + 3.0, "stage_ms": {"emb_bwd": emb_bwd}},
                "kernels": {"fused": {"emb_bwd": {"stretch_ms": stretch}}}}
    return {"command": "python bench/update_grid_probe.py --out X", "commit": "abc",
            "batches": [{"batch": 16384, "output_matches_reference": True,
                         "kernels": {"fused": {"alone_ms": 0.5, "blocks": 1056}},
                         "by_cap": [row(0, 5.6, 0.5), row(4, 3.2, 0.15)]}]}


def test_a_row_per_grid(tmp_path, capsys):
    raw = tmp_path / "update_grid_a.json"
    raw.write_text(json.dumps(run()))
    out = tmp_path / "out.md"
    assert main([str(raw), "-o", str(out)]) == 0
    text = out.read_text()
    assert "## update_grid_a.json, batch 16384" in text
    assert "| one thread per (bag, column) | 5.600 | 8.600 | +0.500 (100%) |" in text
    assert "| 4 an SM (528 blocks) | 3.200 | 6.200 | +0.150 (30%) |" in text
    assert capsys.readouterr().out == text + "\n"


def test_probe_dry_run_renders(tmp_path):
    """The probe on the CPU (the CUDA simulator, tables cut) writes a file the renderer
    reads: every grid asked for, every co-runner at every stage asked for."""
    subprocess.run([sys.executable, str(ROOT / "bench/update_grid_probe.py"), "--dry-run",
                    "--caps", "0,2", "--stages", "emb_bwd", "--out", str(tmp_path)],
                   check=True, capture_output=True, cwd=ROOT)
    data = json.loads((tmp_path / "update_grid_heavy-fused.json").read_text())
    assert data["command"].startswith("python bench/update_grid_probe.py --dry-run")
    assert data["dry_run"]
    (batch,) = data["batches"]
    assert [r["blocks_per_sm"] for r in batch["by_cap"]] == [0, 2]
    assert set(batch["by_cap"][1]["kernels"]) == {"fused", "fused-thin", "alu"}
    assert list(batch["by_cap"][1]["kernels"]["alu"]) == ["emb_bwd"]
    assert batch["output_matches_reference"] is True
    assert main([str(tmp_path / "update_grid_heavy-fused.json"), "-o",
                 str(tmp_path / "o.md")]) == 0
