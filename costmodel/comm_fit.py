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


def _works(row: dict, hardware: str):
    model = replace(model_preset(row["model"]), batch_per_gpu=int(row["batch_per_gpu"]))
    hw = hardware_preset(hardware, int(row["gpus"]))
    sharding = shard_tables(model, hw)
    stage = Stage(row["stage"])
    return [stage_work(model, hw, sharding, g)[stage] for g in range(hw.gpu_count)], hw


def predicted_ms(row: dict, hardware: str) -> float:
    """The stage as the simulator predicts it today (comm.collective_stage_ms)."""
    works, hw = _works(row, hardware)
    return comm.collective_stage_ms(works, hw.collective_link, hw.gpu)


def wire_and_fixed_ms(row: dict, hardware: str) -> tuple[Comm, float, float]:
    """(the collective, its bytes on the wire at the link's whole peak, the rest of the
    predicted stage: latency and copies) in ms."""
    works, hw = _works(row, hardware)
    link, n = hw.collective_link, hw.gpu_count
    kind = works[0].comm
    if kind is Comm.ALL_REDUCE:
        latency = 2 * (n - 1) * link.latency_us * 1e-3
        wire = comm.ring_allreduce_ms(works[0].send_bytes, n, link, share=1.0) - latency
    else:
        latency = link.latency_us * 1e-3
        wire = comm.all_to_all_ms([w.send_bytes for w in works],
                                  [w.recv_bytes for w in works], link, share=1.0) - latency
    copies = max(w.reorder_bytes for w in works) / hw.gpu.copy_bytes_per_s * 1e3
    return kind, wire, latency + copies


def is_steady(row: dict) -> bool:
    return row["median_ms"] <= STEADY_RATIO * row["p10_ms"]


def link_shares(rows: Sequence[dict], hardware: str) -> dict[Comm, float]:
    """Per collective, the median share of the link's peak over the steady FIT_GPUS rows."""
    shares: dict[Comm, list[float]] = {}
    for r in rows:
        if int(r["gpus"]) != FIT_GPUS or not is_steady(r):
            continue
        kind, wire, fixed = wire_and_fixed_ms(r, hardware)
        if r["p10_ms"] > fixed:
            shares.setdefault(kind, []).append(wire / (r["p10_ms"] - fixed))
    return {k: statistics.median(v) for k, v in shares.items()}
