"""One machine's measured ideal step, to calibrate predictions made for that machine.

Lent machines of one GPU kind differ (heavy-fused's fused embedding update took
2.82-3.21 ms at batch 16384 across H200 machines), and the learned model carries the
profiling machine's times: much of a prediction's error is the training step's own time,
not co-running. So: `corun execute --strategy ideal -o ideal.json` on the machine, then
`corun plan --calibration ideal.json`: every simulated duration is scaled by the measured
ideal's mean iteration over the predicted one (sim.calibrate). One factor cannot change
which plan ranks first. docs/results.md gives the error of every executed case
calibrated by its own command's ideal, held out.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from corun.spec import Measurement, SpecError, load
from corun.spec.measurement import notes_say_graphed


@dataclass(frozen=True)
class Calibration:
    """The measured ideal iteration of `model` at `batch_per_gpu` on `gpu_count` GPUs."""

    model: str
    batch_per_gpu: int
    gpu_count: int
    cuda_graphs: bool
    ideal_ms: float
    """Mean iteration of the measured ideal, as its throughput counts it (the median of
    several measurements')."""
    source: str

    def applies_to(self, model: str, batch_per_gpu: int, gpu_count: int,
                   cuda_graphs: bool) -> bool:
        return (self.model, self.batch_per_gpu, self.gpu_count, self.cuda_graphs) == \
            (model, batch_per_gpu, gpu_count, cuda_graphs)

    def workload(self) -> str:
        return workload_text(self.model, self.batch_per_gpu, self.gpu_count, self.cuda_graphs)


def workload_text(model: str, batch_per_gpu: int, gpu_count: int, cuda_graphs: bool) -> str:
    """A workload as calibration errors name it."""
    return (f"{model} at batch {batch_per_gpu} on {gpu_count} GPU(s), "
            f"{'graphed' if cuda_graphs else 'eager'}")


def from_measurement(m: Measurement, source: str) -> Calibration:
    """The calibration an executed `ideal` gives; refuses anything else."""
    if m.strategy != "ideal":
        raise SpecError("calibration.strategy", m.strategy,
                        "ideal (corun execute --strategy ideal)")
    if not m.throughput_samples_per_s > 0:
        raise SpecError("calibration.throughput_samples_per_s", m.throughput_samples_per_s,
                        "a positive rate")
    return Calibration(m.model, m.batch_per_gpu, m.gpu_count, notes_say_graphed(m.notes),
                       m.mean_iteration_ms, source)


def median_of(cals: Sequence[Calibration]) -> Calibration:
    """One calibration from several ideal runs of one workload: their median."""
    if not cals:
        raise SpecError("calibration", "none", "at least one ideal measurement")
    first = cals[0]
    for c in cals[1:]:
        if not c.applies_to(first.model, first.batch_per_gpu, first.gpu_count,
                            first.cuda_graphs):
            raise SpecError("calibration", f"{c.workload()} ({c.source})",
                            f"{first.workload()}, as {first.source}")
    return replace(first, ideal_ms=statistics.median(c.ideal_ms for c in cals),
                   source=", ".join(dict.fromkeys(c.source for c in cals)))


def load_calibration(paths: Sequence[str | Path]) -> Calibration:
    """A calibration from measurement files that `corun execute --strategy ideal` wrote
    for one workload (several: their median)."""
    cals = []
    for path in paths:
        p = Path(path)
        if not p.is_file():
            raise SpecError("--calibration", str(path), "a measurement file from corun "
                            "execute --strategy ideal")
        cals.append(from_measurement(load(Measurement, p), p.name))
    return median_of(cals)
