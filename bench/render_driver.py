"""The executor's per-batch host calls made through the CUDA driver (backend/driver.py)
against PyTorch's copies and cuda.core's launches ("+core"), measured in the same rounds:
each strategy's median iteration over its "+core" twin's of the same round, and, from
bench/host_breakdown.py's runs, each host call's median time both ways. Writes
bench/results/driver_h200.md.

    python bench/render_driver.py [RAW.json ...] [-o OUT.md]

RAW: bench/execute_gpu.py's files (a list of cases) and bench/host_breakdown.py's (an
object with "results"), told apart by their content. By default every
bench/results/raw/execute_*.json (those without a "+core" case add nothing) and every
bench/results/raw/host_breakdown_*.json.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_twins import Twins, twins_main  # noqa: E402

OUT = ROOT / "bench/results/driver_h200.md"
DRIVER = Twins(
    "+core", "driver", "with the driver's calls (the default)",
    "Per-batch host calls through the CUDA driver, against PyTorch and cuda.core",
    "At commit c736e4a \"+core\" changed the launches only (the copies went through "
    "PyTorch both ways); from 4bec2ee on, the copies too.",
    ("Lane.stage", "Lane.launch", "Lane.assemble", "Lane.finish", "BoundLaunch.__call__",
     "DeviceAssembler.start", "DeviceState._scan", "Trainer.step"))


def main(argv: list[str] | None = None) -> int:
    return twins_main(argv, __doc__, DRIVER, OUT, "bench/render_driver.py")


if __name__ == "__main__":
    raise SystemExit(main())
