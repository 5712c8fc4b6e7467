"""Fitting comm.py's link shares to measured collective stages, and the check of the
collective model against them (bench/collective_stages.py measures them).

A collective stage's 10th-percentile span is its latency, its copies at the copy
ceiling, and its bytes on the wire at the share of the link's peak NCCL reached. The
fit takes, per collective, the median share over the steady stages of the two-GPU runs:
those whose median step is within STEADY_RATIO of their 10th percentile, where the host
thread did not hold the stage back. Runs on more GPUs are left out of the fit and check
it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import replace

from corun.costmodel import comm
from corun.costmodel.types import Comm
from corun.costmodel.workload import stage_work
from corun.spec import Stage, hardware_preset, model_preset
from corun.spec.sharding import shard_tables

STEADY_RATIO = 1.2
"""A stage whose median is within this factor of its 10th percentile was not held back
by the host: its 10th percentile is the GPU's time."""
FIT_GPUS = 2
"""The GPU count whose runs the shares are fitted on; the other counts are held out."""


def parts(row: dict, hardware: str) -> comm.CollectiveParts:
    """The stage of a measured row as the simulator's collective model splits it."""
    model = replace(model_preset(row["model"]), batch_per_gpu=int(row["batch_per_gpu"]))
    hw = hardware_preset(hardware, int(row["gpus"]))
    sharding = shard_tables(model, hw)
    works = [stage_work(model, hw, sharding, g)[Stage(row["stage"])]
             for g in range(hw.gpu_count)]
    return comm.collective_parts(works, hw)


def predicted_ms(row: dict, hardware: str) -> float:
    """The stage as the simulator predicts it today (comm.collective_stage_ms)."""
    return parts(row, hardware).ms()


def is_steady(row: dict) -> bool:
    return row["median_ms"] <= STEADY_RATIO * row["p10_ms"]


def link_shares(rows: Sequence[dict], hardware: str) -> dict[Comm, float]:
    """Per collective, the median share of the link's peak over the steady FIT_GPUS rows."""
    shares: dict[Comm, list[float]] = {}
    for r in rows:
        if int(r["gpus"]) != FIT_GPUS or not is_steady(r):
            continue
        p = parts(r, hardware)
        fixed = p.latency_ms + p.copies_ms
        if r["p10_ms"] > fixed:
            shares.setdefault(p.comm, []).append(p.wire_ms / (r["p10_ms"] - fixed))
    return {k: statistics.median(v) for k, v in shares.items()}
