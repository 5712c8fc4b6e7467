"""bench/host_breakdown.py: the executor's host calls timed in an executed case (the
dry run on the CPU, in a process of its own: the script rewraps classes)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.host_breakdown import summary

ROOT = Path(__file__).resolve().parent.parent


def test_summary_is_per_call_medians_and_per_step_totals():
    got = summary({"Lane.stage": [0.1, 0.3, 0.2, 0.2], "unused": []}, steps=2)
    assert got == {"Lane.stage": {"median_ms": 0.2, "calls_per_step": 2.0,
                                  "ms_per_step": 0.4}}


def test_a_dry_run_times_the_lane_calls_of_a_planned_case(tmp_path):
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench/host_breakdown.py"), "--out", str(tmp_path), "--",
         "--matrix", "plans", "--only", "heavy", "--dry-run", "--batches", "4096",
         "--strategies", "corun"],
        capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    (case,) = json.loads((tmp_path / "host_breakdown.json").read_text())["results"]
    assert case["strategy"] == "corun" and case["iteration_median_ms"] > 0
    calls = case["calls"]
    for name in ("Lane.stage", "Lane.launch", "Lane.assemble", "Lane.finish", "Trainer.step"):
        assert calls[name]["calls_per_step"] == 1.0, name


def test_host_split_refuses_an_unknown_pipeline(capsys):
    from bench.host_split import main as host_split

    with pytest.raises(SystemExit):
        host_split(["--dry-run", "--only", "kaggle,nope"])
    assert "--only: 'kaggle,nope' is not a comma-separated list of heavy, kaggle" in \
        capsys.readouterr().err
