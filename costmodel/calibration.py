"""One machine's measured ideal step, to put in place of the cost model's stage times.

An experiment (bench/repredict_calibrated.py, bench/results/
repredict_calibrated_stages_h200.md): the simulator takes each training stage's median
from the ideal measured for the same model, batch and GPU count, and scales the fused
kernels by the stages' measured over modelled total; co-running factors and the host
model stay the cost model's.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from spec import Measurement, SpecError, Stage, load, stages_for
from spec.measurement import notes_say_graphed


@dataclass(frozen=True)
class Calibration:
    """The measured ideal step of `model` at `batch_per_gpu` on `gpu_count` GPUs."""

    model: str
    batch_per_gpu: int
    gpu_count: int
    cuda_graphs: bool
    stage_ms: tuple[tuple[str, float], ...]
    """(training stage, median ms) as measured; the simulator takes the compute stages'."""
    source: str

    def applies_to(self, model: str, batch_per_gpu: int, gpu_count: int,
                   cuda_graphs: bool) -> bool:
        return (self.model, self.batch_per_gpu, self.gpu_count, self.cuda_graphs) == \
            (model, batch_per_gpu, gpu_count, cuda_graphs)

    def stage(self, stage: Stage) -> float | None:
        return dict(self.stage_ms).get(stage.value)

    def describe(self) -> str:
        return (f"stage times of the ideal step measured in {self.source} "
                f"({self.model}, batch {self.batch_per_gpu}, {self.gpu_count} GPU(s))")


def from_measurement(m: Measurement, source: str) -> Calibration:
    """The calibration an executed `ideal` gives; refuses anything else."""
    if m.strategy != "ideal":
        raise SpecError("calibration.strategy", m.strategy,
                        "ideal (corun execute --strategy ideal)")
    compute = [s.value for s in stages_for(m.gpu_count)]
    stage_ms = tuple((s, m.stages[s].median_ms) for s in compute if s in m.stages)
    if not stage_ms:
        raise SpecError("calibration.stages", sorted(m.stages),
                        f"the training stages' times ({', '.join(compute)})")
    return Calibration(m.model, m.batch_per_gpu, m.gpu_count, notes_say_graphed(m.notes),
                       stage_ms, source)


def median_of(cals: Sequence[Calibration]) -> Calibration:
    """One calibration from several ideal runs of one workload: each stage's median."""
    if not cals:
        raise SpecError("calibration", "none", "at least one ideal measurement")
    first = cals[0]
    for c in cals[1:]:
        if not c.applies_to(first.model, first.batch_per_gpu, first.gpu_count,
                            first.cuda_graphs):
            raise SpecError("calibration", f"{c.model} at batch {c.batch_per_gpu} ({c.source})",
                            f"{first.model} at batch {first.batch_per_gpu}, as {first.source}")
    names = [s for s, _ in first.stage_ms if all(c.stage(Stage(s)) is not None for c in cals)]
    stage_ms = tuple((s, statistics.median(c.stage(Stage(s)) for c in cals)) for s in names)
    return replace(first, stage_ms=stage_ms,
                   source=", ".join(dict.fromkeys(c.source for c in cals)))


def load_calibration(paths: Sequence[str | Path]) -> Calibration:
    """A calibration from measurement files that `corun execute --strategy ideal` wrote
    for one workload (several: the median of each stage)."""
    cals = []
    for path in paths:
        p = Path(path)
        if not p.is_file():
            raise SpecError("--calibration", str(path), "a measurement file from corun "
                            "execute --strategy ideal")
        cals.append(from_measurement(load(Measurement, p), p.name))
    return median_of(cals)
