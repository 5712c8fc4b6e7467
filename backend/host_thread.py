"""The host thread that launches training and preprocessing, kept on one CPU core.

On the H200 machine's 16-core host the eager step's host time moved by 25% from
iteration to iteration within one case (kaggle b4096 ideal: 2.64-3.22 ms p10-p90, and
medians of 2.72-3.69 ms between cases of one process; bench/results/raw/
execute_plans_calls_b4096.json). `RunSettings.pin_host` keeps the thread on one core
for the timed loop, so the scheduler does not move it (and its caches) between cores.
"""

from __future__ import annotations

import contextlib
import os


def core_for(local_rank: int, cores: set[int]) -> int:
    """The core the thread of GPU `local_rank` keeps: counted from the highest allowed
    core down (core 0 takes most of the machine's interrupts)."""
    ordered = sorted(cores, reverse=True)
    return ordered[local_rank % len(ordered)]


@contextlib.contextmanager
def pinned(on: bool, local_rank: int = 0):
    """Inside: the calling thread on one core (`core_for`), where the platform allows it;
    its former cores afterwards. Threads started inside inherit the one core."""
    if not on or not hasattr(os, "sched_setaffinity"):
        yield None
        return
    before = os.sched_getaffinity(0)
    core = core_for(local_rank, before)
    os.sched_setaffinity(0, {core})
    try:
        yield core
    finally:
        os.sched_setaffinity(0, before)
