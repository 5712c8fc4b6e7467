"""Training stages replayed as CUDA graphs (`Model.cuda_graphs`): their times on a GPU.

A graph runs a stage's kernels back to back, without the eager step's gap before each
kernel, so a stage takes a little less than the profile (eager, the whole step enqueued
before the GPU starts) timed it. Where the graphed step itself was timed (`ideal` in.py
--matrix graphs-stages`, rows in data/<gpu>/graphed-stages.csv), its stage times answer as
measured, as the learned model answers a profiled stage with its profile. Elsewhere a stage is
its eager time less the stage's saving: the median, over the model-batch pairs both timed, of
eager less graphed.
"""

from __future__ import annotations

import csv
import statistics
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path

COLUMNS = ("gpu", "model", "batch", "stage", "graphed_ms", "source")
"""graphed-stages.csv: a GPU kind's name, a model preset, its batch per GPU, a training
stage, the graphed stage's median ms and the measurement file it came from."""


def read_graphed(path: Path) -> list[dict[str, str]]:
    """The rows of a graphed-stages.csv (none if it does not exist)."""
    if not path.exists():
        return []
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def fit_savings(graphed: dict[tuple[str, Hashable], float],
                eager: Callable[[Hashable], float | None]) -> dict[str, float]:
    """Per stage, the median of eager less graphed ms over the stages (keyed (stage name,
    key)) for which `eager` gives a profiled eager time; a stage with none saves 0."""
    diffs: dict[str, list[float]] = {}
    for (stage, key), ms in graphed.items():
        e = eager(key)
        if e is not None:
            diffs.setdefault(stage, []).append(e - ms)
    return {s: float(statistics.median(d)) for s, d in diffs.items()}


@dataclass(frozen=True)
class GraphedStages:
    """Graphed stage times for one GPU kind's cost model: measured ones by key, and each
    stage's saving for the rest."""

    measured: dict[Hashable, float]
    saving_ms: dict[str, float]

    def stage_ms(self, stage: str, key: Hashable, eager_ms: float) -> float:
        """The graphed time of a stage whose eager time is `eager_ms` (the saving never
        takes more than half of it)."""
        if key in self.measured:
            return self.measured[key]
        return max(eager_ms - self.saving_ms.get(stage, 0.0), 0.5 * eager_ms)
