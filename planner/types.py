"""The planner's vocabulary and interfaces (read this file first).

A plan is judged by simulating it (sim + costmodel); the search only proposes. Units are
the pipeline's independent node sets (weakly connected components: a feature's chain,
with shared prefixes kept together), so any grouping of units into kernels is valid.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

from corun.spec import Plan


@dataclass(frozen=True)
class Judged:
    """A plan with its predicted throughput (higher is better)."""

    plan: Plan
    throughput_samples_per_s: float
    iteration_ms: float


class Judge(abc.ABC):
    """Predicts a plan's throughput; implementations cache by plan."""

    @abc.abstractmethod
    def judge(self, plan: Plan) -> Judged: ...

    def gpu_side_ms(self, plan: Plan) -> float | None:
        """The plan's iteration with the host thread's pace left out (the GPUs alone), to
        break ties between plans the host paces alike; None where there is no host pace."""
        return None


class Proposer(abc.ABC):
    """Produces a plan for the judge's scenario within `time_limit_s`."""

    name: str = "abstract"
    """The strategy its plans are shown and measured as (`corun plan`'s table, plan files)."""
    caps_racing_kernels: bool = True
    """Whether its plans get the SM cap rule (planner/sm_cap.py) where a kernel can race
    the eager step; the simulator hints at the cap for such plans left uncapped. A
    published heuristic is shown as published: False."""

    @abc.abstractmethod
    def propose(self, judge: Judge, time_limit_s: float) -> Judged: ...
