"""corun's planner: construct, then improve by local moves, every candidate simulated.

A candidate is a list of kernels, each a set of units (independent node sets) with a
release stage and a launch shape. Construction tries the whole pipeline as one kernel at
every stage. Improvement repeats best-improvement steps over these moves until none
helps or time runs out: move a kernel to another stage; split a kernel's units in two
(the second half tried at every stage); merge two kernels of one stage; double or halve
a kernel's blocks; flip the plan's stream priority (training above preprocessing, or
equal: on a pipeline too heavy to hide, equal priority finishes the kernels sooner).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from planner.judge import SimJudge
from planner.types import Judge, Judged, Proposer
from planner.units import units_of
from sim.strategy import default_launch
from spec import BEFORE_ITERATION, FusedKernel, Plan, stages_for


@dataclass(frozen=True)
class Draft:
    units: tuple[int, ...]
    stage: str
    blocks: int
    threads: int


class LocalSearch(Proposer):
    name = "corun"

    def __init__(self, progress: Callable[[int, Judged], None] | None = None,
                 tune_launch: bool = True) -> None:
        self.progress = progress
        self.tune_launch = tune_launch
        """False keeps every kernel at the default launch shape (to compare with the
        MILP, which decides fusion and schedule only)."""

    def propose(self, judge: Judge, time_limit_s: float) -> Judged:
        assert isinstance(judge, SimJudge)
        sc = judge.scenario
        pipeline, hw = sc.pipeline, sc.hardware
        units = units_of(pipeline)
        stages = [s.value for s in stages_for(hw.gpu_count)] + [BEFORE_ITERATION]
        blocks, threads = default_launch(hw)
        deadline = time.monotonic() + time_limit_s

        def to_plan(state: tuple[list[Draft], bool]) -> Plan:
            drafts, priority_high = state
            pos = {s: i for i, s in enumerate([BEFORE_ITERATION] + stages[:-1])}
            kernels = []
            for i, d in enumerate(sorted(drafts, key=lambda d: (pos[d.stage], d.units))):
                nodes = tuple(n for u in d.units for n in units[u])
                kernels.append(FusedKernel(f"k{i}", nodes, d.stage, d.blocks, d.threads))
            return Plan(pipeline.name, sc.model.name, hw.gpu_count, tuple(kernels),
                        training_priority_high=priority_high)

        def score(state: tuple[list[Draft], bool]) -> Judged:
            return judge.judge(to_plan(state))

        def min_blocks(d: Draft) -> int:
            return len(pipeline.sinks([n for u in d.units for n in units[u]]))

        def valid(drafts: list[Draft]) -> bool:
            return all(d.blocks >= min_blocks(d) for d in drafts)

        every = tuple(range(len(units)))
        best_state = max((([Draft(every, s, blocks, threads)], high)
                          for high in (True, False) for s in stages),
                         key=lambda st: score(st).throughput_samples_per_s)
        best = score(best_state)
        while time.monotonic() < deadline:
            improved = None
            drafts, high = best_state
            moves = [(c, high) for c in self._neighbours(drafts, stages, self.tune_launch)]
            moves.append((drafts, not high))
            for cand in moves:
                if time.monotonic() >= deadline:
                    break
                if not valid(cand[0]):
                    continue
                j = score(cand)
                if j.throughput_samples_per_s > (improved or best).throughput_samples_per_s \
                        * (1 + 1e-9):
                    improved, improved_state = j, cand
            if improved is None:
                break
            best, best_state = improved, improved_state
            if self.progress:
                self.progress(judge.evaluations, best)
        return best

    @staticmethod
    def _neighbours(drafts: list[Draft], stages: list[str], tune_launch: bool):
        for i, d in enumerate(drafts):
            rest = drafts[:i] + drafts[i + 1 :]
            for s in stages:
                if s != d.stage:
                    yield rest + [Draft(d.units, s, d.blocks, d.threads)]
            if len(d.units) > 1:
                half = len(d.units) // 2
                a, b = d.units[:half], d.units[half:]
                for s in stages:
                    yield rest + [Draft(a, d.stage, d.blocks, d.threads),
                                  Draft(b, s, d.blocks, d.threads)]
            for f in (2, 0.5) if tune_launch else ():
                nb = int(d.blocks * f)
                if 1 <= nb <= 1 << 16:
                    yield rest + [Draft(d.units, d.stage, nb, d.threads)]
            for j in range(i + 1, len(drafts)):
                e = drafts[j]
                if e.stage == d.stage:
                    merged = Draft(tuple(sorted(d.units + e.units)), d.stage, d.blocks,
                                   d.threads)
                    yield [x for k, x in enumerate(drafts) if k not in (i, j)] + [merged]
