"""bench/update_mode_probe.py on the CPU: each series has a step per --steps, with the
addresses it reads, and the modes' runs are counted right."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_runs_count_consecutive_steps_on_one_side():
    from bench.update_mode_probe import runs, summary

    assert runs([1.0, 1.1, 3.0, 3.2, 2.9, 1.0], 2.0) == [2, 3, 1]
    s = summary([2.87, 2.86, 3.03, 3.04, 3.02, 2.88])
    assert 2.87 < s["split_ms"] < 3.02 and s["fast_share"] == 0.5 and s["runs"] == 3


def test_probe_dry_run_records_every_series(tmp_path):
    out = tmp_path / "probe.json"
    subprocess.run([sys.executable, str(ROOT / "bench/update_mode_probe.py"), "--dry-run",
                    "-o", str(out)], check=True, cwd=ROOT, capture_output=True)
    record = json.loads(out.read_text())
    assert record["command"].startswith("python bench/update_mode_probe.py --dry-run")
    for name in ("steps", "moved", "kernel", "kernel_lr", "after_read", "after_write",
                 "after_fwd"):
        assert len(record[name]) == 4 and record["summary"][name]["median_ms"] > 0
    assert all(s["grad"] and s["table"] for s in record["steps"] + record["moved"])
    assert all(k["ms"] > 0 for k in record["kernel"])
    assert any(s["pad_bytes"] > 0 for s in record["moved"])
