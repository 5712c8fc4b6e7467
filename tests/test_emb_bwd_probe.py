"""bench/emb_bwd_probe.py under the CUDA simulator: every mode times every training
stage, and the record names its command."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_probe_dry_run_times_every_mode(tmp_path):
    subprocess.run([sys.executable, str(ROOT / "bench/emb_bwd_probe.py"), "--dry-run",
                    "--rounds", "1", "--out", str(tmp_path)], check=True, cwd=ROOT,
                   capture_output=True)
    record = json.loads((tmp_path / "emb_bwd_probe.json").read_text())
    assert record["command"].startswith("python bench/emb_bwd_probe.py --dry-run")
    rounds = record["batches"][0]["rounds"]
    from bench.emb_bwd_probe import MODES, STAGE_NAMES

    assert [r["mode"] for r in rounds] == list(MODES)
    for r in rounds:
        assert set(r["stage_ms"]) == STAGE_NAMES
        assert all(ms > 0 for ms in r["stage_ms"].values())
