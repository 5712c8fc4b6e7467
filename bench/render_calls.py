"""Each batch's preprocessing calls replayed as CUDA graphs (backend/batch_graphs.py, the
default) against the calls one by one ("+calls"), measured in the same rounds: each
strategy's median iteration over its "+calls" twin's of the same round, and, from
bench/host_breakdown.py's runs, each host call's median time both ways. Writes
bench/results/calls_h200.md.

    python bench/render_calls.py [RAW.json ...] [-o OUT.md]

RAW: as bench/render_driver.py takes them (by default every execute and host breakdown
file under bench/results/raw; those without a "+calls" case add nothing).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_twins import Twins, twins_main  # noqa: E402

OUT = ROOT / "bench/results/calls_h200.md"
GRAPHS = Twins(
    "+calls", "graphs", "with the calls as CUDA graphs (the default)",
    "Each batch's preprocessing calls as CUDA graphs, against the calls one by one",
    "Both ways the calls go through the CUDA driver where they can (backend/driver.py).",
    ("Lane.stage", "Lane.launch", "Lane.assemble", "Lane.finish", "WorkGraphs.run",
     "_Graph.launch", "DeviceState.launch", "DeviceAssembler.start", "Streams.event",
     "Trainer.step"))


def main(argv: list[str] | None = None) -> int:
    return twins_main(argv, __doc__, GRAPHS, OUT, "bench/render_calls.py")


if __name__ == "__main__":
    raise SystemExit(main())
