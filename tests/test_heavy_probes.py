"""The heavy-case probes that share bench/contention_probe.heavy_probe_parser, run on the
CPU (the CUDA simulator where they launch kernels): each takes the heavy workload by
default and records its command."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(*argv: str) -> None:
    subprocess.run([sys.executable, *argv], check=True, cwd=ROOT, capture_output=True)


def test_parser_defaults_to_the_heavy_workload():
    from bench.contention_probe import heavy_probe_parser

    args = heavy_probe_parser("doc").parse_args([])
    assert (args.model, args.pipeline, args.batch) == ("heavy-fused", "heavy", 16384)
    assert not hasattr(heavy_probe_parser("doc", batch=False).parse_args([]), "batch")


def test_plain_drift_probe_dry_run(tmp_path):
    out = tmp_path / "drift.json"
    run("bench/plain_drift_probe.py", "--dry-run", "--blocks", "2", "--steps", "1",
        "-o", str(out))
    record = json.loads(out.read_text())
    assert record["model"] == "heavy-fused" and len(record["blocks"]) == 2
    assert all(b["stage_ms"]["emb_bwd"] > 0 for b in record["blocks"])
