"""corun's planner: construct, then improve by local moves, every candidate simulated.

A candidate is a list of kernels, each a set of units (independent node sets) with a
release stage and a launch shape. Construction tries the whole pipeline as one kernel at
every stage, at a few launch sizes, both stream priorities and one or two batches ahead,
and (with remapping) the whole pipeline on the host CPU. Improvement repeats
best-improvement steps over these moves until none helps or time runs out: move a kernel
to another stage; split a kernel's units in two (the second half tried at every stage);
merge two kernels of one stage; double or halve a kernel's blocks, or move them half a
step (LAUNCH_STEPS); flip a kernel with long list outputs between a warp and a thread per
row (FusedKernel.warp_rows); flip the plan's stream priority (training
above preprocessing, or equal: on a pipeline too heavy to hide, equal priority finishes
the kernels sooner); preprocess one or two batches ahead (Plan.batches_ahead: with two, a
kernel that outlasts the step does not hold back the next one; a plan one ahead is chosen
only where it gains AHEAD_MARGIN over itself two ahead); remap a unit: to the host
CPU workers and back (into a new kernel at every stage where no local kernel is left),
or (several GPUs) a unit that is one sparse feature to its table's owner GPU, over the
global batch, which saves its ids the input all-to-all (construction also tries every
such unit at its owner at once). A move that puts more units on
the host CPU must gain CPU_MARGIN. Where the host thread paces two candidates alike (a
tie, TIE), the one faster on the GPU side wins: the host's pace is the least certain part
of a prediction.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from corun.costmodel import shard_tables
from corun.planner.judge import SimJudge
from corun.planner.runners_up import NEAR_TIE_PCT
from corun.planner.types import Judge, Judged, Proposer
from corun.planner.units import units_of
from corun.sim.strategy import default_launch
from corun.spec import BEFORE_ITERATION, FusedKernel, Mapping, Plan, stages_for

TIE = 1e-6
"""Relative throughput difference below which two plans are predicted alike (the host
thread pacing both): the GPU side decides (Judge.gpu_side_ms)."""

CPU_MARGIN = 0.005
"""Predicted throughput gain a move must bring to put more units on the host CPU. Host
cores are what GPU preprocessing exists to free (the CPU fleet it replaces), so where
GPU and CPU plans are predicted alike (GPU-paced steps: both at ideal, to 0.1%) the
GPU plan stays; where the host thread sets the pace (kaggle b4096 on the H200: a CPU
plan saves the fused launches) the CPU plan wins. A product preference, not a fit: 0.5%
is above the repeat spread of measured ideal throughput on one H200 (0.04%)."""

AHEAD_MARGIN = NEAR_TIE_PCT / 100
"""Predicted throughput a plan one batch ahead must gain over the same plan two ahead to
be chosen (`prefer_two_ahead`). One ahead, the next step waits for the kernels' tail, so
any error in the co-run model's account of it goes straight into the step; two ahead
leaves a step of slack. Over the executed pairs of one plan at both leads on the H200,
the simulator predicted one ahead faster in two, and two ahead measured 6-9% faster
there. 1.5%: NEAR_TIE_PCT, the simulator's median error on the H200."""


def prefer_two_ahead(judge: Judge, best: Judged) -> Judged:
    """`best`, or where it is one batch ahead and the same plan two ahead is predicted
    within AHEAD_MARGIN of it, that plan."""
    if best.plan.batches_ahead != 1 or not best.plan.kernels:
        return best
    twin = judge.judge(replace(best.plan, batches_ahead=2))
    keep = best.throughput_samples_per_s > twin.throughput_samples_per_s * (1 + AHEAD_MARGIN)
    return best if keep else twin


def wins_tie(judge: Judge, j: Judged, ref: Judged) -> bool:
    """Whether `j` and `ref` are predicted alike (within TIE) and `j` wins the tie:
    faster on the GPU side (Judge.gpu_side_ms); alike there too, more batches ahead
    (Plan.batches_ahead), since a kernel the model thinks short then delays nothing if
    it is not: kaggle b16384's kernel at the optimizer in 66 blocks, predicted alike one
    and two batches ahead, ran 6% slower one ahead on the H200 (waiting for the
    optimizer's SMs, then holding back the next step's batch). LocalSearch's tie-break."""
    if abs(j.throughput_samples_per_s - ref.throughput_samples_per_s) > \
            TIE * ref.throughput_samples_per_s:
        return False
    a, b = judge.gpu_side_ms(j.plan), judge.gpu_side_ms(ref.plan)
    if a is not None and b is not None and abs(a - b) > TIE * b:
        return a < b
    return j.plan.batches_ahead > ref.plan.batches_ahead


LAUNCH_NOTE_BEHIND_PCT = 2.0
"""How far behind ideal a plan with kernels beside training must be predicted for `corun
plan` to point at `corun tune` (launch_shape_note): within 2% of ideal, where the graphed
Criteo-like plans run as chosen."""


CONSTRUCT_BLOCK_DIVISORS = (1, 2, 4, 8)
"""Construction tries the whole pipeline at every stage with the default blocks and, in
the first half of the time limit, 1/2, 1/4 and 1/8 of them: a kernel with fewer blocks
leaves a stage more SMs, and one move at a time does not reach it from the default when
the default at every stage loses to running before the iteration. The heavy preset
under the analytic model: without the smaller launches the search stopped at
gpu-sequential's 67.8% of ideal; with them it finds the whole kernel at emb_fwd with 132
blocks and equal priority, 89.7% (tests/test_planner.py checks it)."""


RESTARTS = 3
"""After the climb from the best construction start, climbs from the next best starts at
other release stages (LocalSearch._restarts): on eager heavy-lean b32768 beside
heavy-rehash, the best start's climb stops at 132 blocks at top_mlp_bwd, where the third
stage's start climbs to 198 blocks at interaction_bwd, predicted and measured faster."""
RESTART_GAIN = 0.005
"""How much faster a restart's plan must be predicted to replace the first climb's.
Smaller gains are within the simulator's error: with any gain, restarts moved kaggle and
terabyte b8192's choices, measured within 0.3% of ideal, for 0.1-0.2% predicted."""


CONSTRUCT_BLOCK_SCALES = (1, 0.75)
"""With the step as CUDA graphs, construction also tries each of those launches at three
quarters of its blocks: the moves change one thing at a time, so a kernel at a new stage
with a launch between the halvings was two moves from every start. With the graphed
heavy-lean b16384 stage rooms (costmodel/stage_room.py) the search otherwise stops at
the pipeline in 132 blocks at top_mlp_bwd, 0.1% behind 198 blocks at interaction_bwd,
which measured the faster on the H200. Not for the eager step: there the host paces most
plans alike, and the extra starts only feed the GPU-side tie-break."""


LAUNCH_STEPS = (2, 0.5, 1.5, 0.75)
"""A launch move multiplies a kernel's blocks by one of these: double or halve, or half a
step. On the H200 heavy-lean's whole pipeline released at interaction_bwd of the graphed
step recovered most of the gap in 198 blocks, between the halvings from the default
1056."""


@dataclass(frozen=True)
class Draft:
    units: tuple[int, ...]
    stage: str
    blocks: int
    threads: int
    gpu: int | None = None
    """None: every GPU over its local batch; an index: the owner GPU over the global batch."""
    warp_rows: bool = True


@dataclass(frozen=True)
class State:
    drafts: tuple[Draft, ...]
    priority_high: bool
    cpu_units: frozenset[int] = frozenset()
    ahead: int = 1
    """Plan.batches_ahead."""


def to_owners(d: Draft, owned: list[int], owner_of: dict[int, int]) -> list[Draft]:
    """Local kernel `d` with its `owned` units (each one sparse feature) moved to their
    tables' owner GPUs: what is left of `d`, then one kernel per owner at d's stage, its
    blocks d's share per unit."""
    keep = tuple(x for x in d.units if x not in owned)
    by_gpu: dict[int, list[int]] = {}
    for u in owned:
        by_gpu.setdefault(owner_of[u], []).append(u)
    share = max(1, d.blocks // max(len(d.units), 1))
    return ([replace(d, units=keep)] if keep else []) + [
        Draft(tuple(us), d.stage, share * len(us), d.threads, g)
        for g, us in sorted(by_gpu.items())]


class LocalSearch(Proposer):
    name = "corun"

    def __init__(self, progress: Callable[[int, Judged], None] | None = None,
                 tune_launch: bool = True, remap: bool = True,
                 tune_priority: bool = True, tune_ahead: bool = True) -> None:
        """Turning off `tune_launch`, `remap`, `tune_priority` and `tune_ahead` leaves the
        decisions the MILP makes (fusion and release stages, training at high priority,
        one batch ahead), to measure the search's gap to the exact optimum."""
        self.progress = progress
        self.tune_launch, self.remap, self.tune_priority = tune_launch, remap, tune_priority
        self.tune_ahead = tune_ahead
        self.converged = False
        """Whether the last `propose` judged every construction start and ended where no
        move improved its plan; False: it stopped at its time limit first, and its plan
        depends on the limit and on how busy the machine was (`time_limit_note`)."""

    def propose(self, judge: Judge, time_limit_s: float) -> Judged:
        from corun.costmodel.threads import single_threaded

        with single_threaded():  # a time-limited search: its judge's threads would starve it
            return self._propose(judge, time_limit_s)

    def _propose(self, judge: Judge, time_limit_s: float) -> Judged:
        assert isinstance(judge, SimJudge)
        sc = judge.scenario
        pipeline, hw = sc.pipeline, sc.hardware
        units = units_of(pipeline)
        stages = [s.value for s in stages_for(hw.gpu_count)] + [BEFORE_ITERATION]
        blocks, threads = default_launch(hw)
        deadline = time.monotonic() + time_limit_s
        owner_of = self._owners(sc, units)
        sparse_out = {o.node for o in pipeline.sparse_outputs}
        # the sharding the owner moves and the prediction assume, written into the plan: an
        # executor re-sharding another table set (cut tables, a changed balancer) would
        # otherwise hand an owner kernel features whose tables another GPU holds
        table_owner = shard_tables(sc.model, hw).owner if owner_of else {}

        def to_plan(state: State) -> Plan:
            pos = {s: i for i, s in enumerate([BEFORE_ITERATION] + stages[:-1])}
            kernels, mapping = [], {}
            for i, d in enumerate(sorted(state.drafts, key=lambda d: (pos[d.stage], d.units))):
                nodes = tuple(n for u in d.units for n in units[u])
                kernels.append(FusedKernel(f"k{i}", nodes, d.stage, d.blocks, d.threads, d.gpu,
                                           d.warp_rows, fixed_offsets=True))
                if d.gpu is not None:
                    mapping.update({units[u][-1]: Mapping.OWNER for u in d.units})
            cpu = tuple(n for u in sorted(state.cpu_units) for n in units[u])
            for u in state.cpu_units:
                mapping.update({n: Mapping.CPU for n in units[u]
                                if n in sparse_out})
            owned = any(d.gpu is not None for d in state.drafts)
            return Plan(pipeline.name, sc.model.name, hw.gpu_count, tuple(kernels), cpu,
                        mapping, state.priority_high, dict(table_owner) if owned else {},
                        batches_ahead=state.ahead)

        def score(state: State) -> Judged:
            return judge.judge(to_plan(state))

        def better(j: Judged, ref: Judged, gain: float = 0.0) -> bool:
            """j ahead of ref by more than `gain`; with no gain asked, a tie goes to the
            plan faster on the GPU side."""
            if j.throughput_samples_per_s > ref.throughput_samples_per_s * (1 + gain + TIE):
                return True
            return not gain and wins_tie(judge, j, ref)

        def valid(state: State) -> bool:
            return all(d.units and d.blocks >= len(pipeline.sinks(
                [n for u in d.units for n in units[u]])) for d in state.drafts)

        def has_long_lists(d: Draft) -> bool:  # where warp_rows changes the kernel
            return bool(pipeline.warp_sinks([n for u in d.units for n in units[u]]))

        every = tuple(range(len(units)))
        priorities = (True, False) if self.tune_priority else (True,)
        scales = CONSTRUCT_BLOCK_SCALES if sc.model.cuda_graphs else (1,)
        shapes = sorted({max(1, int(blocks * s) // f) for f in CONSTRUCT_BLOCK_DIVISORS
                         for s in scales}, reverse=True) \
            if self.tune_launch else [blocks]
        # the default launch at every stage first; smaller launches while the first half
        # of the time lasts (the moves keep the rest)
        aheads = (1, 2) if self.tune_ahead else (1,)
        starts = [State((Draft(every, s, b, threads),), high, ahead=a)
                  for b in shapes for a in aheads for high in priorities for s in stages]
        best_state, best = starts[0], score(starts[0])
        judged_starts = [(best, best_state)]
        half = deadline - time_limit_s / 2
        every_start = True
        for st in starts[1:]:
            if st.drafts[0].blocks != blocks and time.monotonic() >= half:
                every_start = False
                break
            if valid(st):
                j = score(st)
                judged_starts.append((j, st))
                if better(j, best):
                    best_state, best = st, j
        if self.remap:  # the whole pipeline on the host CPU, judged from the start
            on_cpu = State((), True, frozenset(every))
            j = score(on_cpu)
            if better(j, best, CPU_MARGIN):
                best, best_state = j, on_cpu
        if self.remap and owner_of and len(best_state.drafts) == 1:
            # every sparse feature at its table's owner, from the best start: many GPUs
            # make the one-at-a-time moves too many for a short time limit to reach it
            d = best_state.drafts[0]
            owned = replace(best_state, drafts=tuple(to_owners(d, [
                u for u in d.units if u in owner_of], owner_of)))
            if valid(owned):
                j = score(owned)
                if better(j, best):
                    best, best_state = j, owned
        def climb(best: Judged, best_state: State) -> tuple[Judged, State, bool]:
            """Moves from `best_state` while one improves it: the plan reached, and
            whether no move improved it (False: the time limit came first)."""
            while time.monotonic() < deadline:
                improved, improved_state = None, best_state
                for cand in self._moves(best_state, stages, owner_of, (blocks, threads),
                                        has_long_lists):
                    if time.monotonic() >= deadline:
                        break
                    if not valid(cand):
                        continue
                    j = score(cand)
                    ref = improved or best
                    gain = CPU_MARGIN if len(cand.cpu_units) > len(improved_state.cpu_units) \
                        else 0.0
                    if better(j, ref, gain):
                        improved, improved_state = j, cand
                else:  # every move judged
                    if improved is None:
                        return best, best_state, True
                if improved is None:
                    break
                best, best_state = improved, improved_state
                if self.progress:
                    self.progress(judge.evaluations, best)
            return best, best_state, False

        climbed_from = best_state
        best, best_state, local_optimum = climb(best, best_state)
        for j, st in self._restarts(judged_starts, (climbed_from, best_state), best):
            if time.monotonic() >= deadline:
                local_optimum = False
                break
            j, st, ended = climb(j, st)
            local_optimum = local_optimum and ended
            if better(j, best, RESTART_GAIN):
                best, best_state = j, st
        self.converged = every_start and local_optimum
        return prefer_two_ahead(judge, best) if self.tune_ahead else best

    @staticmethod
    def _restarts(judged: list[tuple[Judged, State]], climbed: tuple[State, State],
                  reached: Judged) -> list[tuple[Judged, State]]:
        """The RESTARTS fastest one-kernel starts, each the fastest at its release stage,
        at stages other than those of the first climb's start and end (`climbed`), and
        predicted slower than the plan it `reached`: where the step's best kernel is two
        moves from the best start (a new stage and a new launch, each alone slower), one
        climb stops short of it. Starts level with that plan are left: where the host
        paces the step every plan ties, and climbs from them cost one-GPU kaggle b4096's
        search 330 more plans for the same plan (as did climbs from every stage's start
        on kaggle, terabyte and wide-2x)."""
        seen = {d.stage for st in climbed for d in st.drafts}
        slower = reached.throughput_samples_per_s * (1 - TIE)
        out: list[tuple[Judged, State]] = []
        for j, st in sorted(judged, key=lambda x: -x[0].throughput_samples_per_s):
            if len(out) >= RESTARTS:
                break
            stage = st.drafts[0].stage if len(st.drafts) == 1 else None
            if stage is not None and stage not in seen and j.throughput_samples_per_s < slower:
                seen.add(stage)
                out.append((j, st))
        return out

    @staticmethod
    def _owners(sc, units: list[tuple[str, ...]]) -> dict[int, int]:
        """Unit -> owner GPU, for units that are exactly one sparse feature's chain."""
        if sc.hardware.gpu_count == 1:
            return {}
        owner = shard_tables(sc.model, sc.hardware).owner
        table_of = {o.node: o.table for o in sc.pipeline.sparse_outputs}
        feature_of = sc.pipeline.feature_of()
        out = {}
        for i, u in enumerate(units):
            features = {feature_of.get(n) for n in u}
            if len(features) == 1 and u[-1] in table_of:
                out[i] = owner[table_of[u[-1]]]
        return out

    def _moves(self, state: State, stages: list[str], owner_of: dict[int, int],
               launch: tuple[int, int], has_long_lists: Callable[[Draft], bool]):
        drafts = list(state.drafts)
        blocks = sorted(d.blocks for d in drafts)
        for cand in self._neighbours(drafts, stages, self.tune_launch, has_long_lists):
            yield replace(state, drafts=tuple(cand))
            if self.tune_ahead and sorted(d.blocks for d in cand) != blocks:
                # a launch made longer or shorter with the other lead: a thinner kernel
                # may outlast the step, which only two batches ahead absorbs
                yield replace(state, drafts=tuple(cand), ahead=3 - state.ahead)
        if self.tune_priority:
            yield replace(state, priority_high=not state.priority_high)
        if self.tune_ahead and state.drafts:  # kernels two batches ahead, or one
            yield replace(state, ahead=3 - state.ahead)
        if not self.remap:
            return
        for i, d in enumerate(drafts):  # units of a local kernel to the CPU or owners
            if d.gpu is not None:
                continue
            rest = drafts[:i] + drafts[i + 1 :]
            # one unit, half, or all: where the host thread is the bottleneck only moving
            # a whole kernel's units saves its launches, a step no smaller move improves
            for moved in {d.units[:1], d.units[: max(1, len(d.units) // 2)], d.units}:
                left = tuple(x for x in d.units if x not in moved)
                kept = rest + ([replace(d, units=left)] if left else [])
                yield replace(state, drafts=tuple(kept), cpu_units=state.cpu_units | set(moved))
                owned = [u for u in moved if u in owner_of]
                if owned:
                    yield replace(state, drafts=tuple(rest + to_owners(d, owned, owner_of)))
        local = [k for k, d in enumerate(drafts) if d.gpu is None]
        on_cpu = sorted(state.cpu_units)
        for back in {tuple(on_cpu[:1]), tuple(on_cpu)} if on_cpu else ():
            left = state.cpu_units - set(back)
            if local:  # back from the CPU into the first local kernel
                k = local[0]
                merged = replace(drafts[k], units=tuple(sorted(drafts[k].units + back)))
                yield replace(state, drafts=tuple(drafts[:k] + [merged] + drafts[k + 1 :]),
                              cpu_units=left)
            else:  # no local kernel left: a new one, at every stage
                for s in stages:
                    yield replace(state, drafts=tuple(drafts) + (Draft(back, s, *launch),),
                                  cpu_units=left)

    @staticmethod
    def _neighbours(drafts: list[Draft], stages: list[str], tune_launch: bool,
                    has_long_lists: Callable[[Draft], bool]):
        for i, d in enumerate(drafts):
            rest = drafts[:i] + drafts[i + 1 :]
            for s in stages:
                if s != d.stage:
                    yield rest + [replace(d, stage=s)]
            if len(d.units) > 1:
                half = len(d.units) // 2
                a, b = d.units[:half], d.units[half:]
                for s in stages:
                    yield rest + [replace(d, units=a), replace(d, units=b, stage=s)]
            for f in LAUNCH_STEPS if tune_launch else ():
                nb = int(d.blocks * f)
                if 1 <= nb <= 1 << 16:
                    yield rest + [replace(d, blocks=nb)]
            if tune_launch and has_long_lists(d):
                yield rest + [replace(d, warp_rows=not d.warp_rows)]
            for j in range(i + 1, len(drafts)):
                e = drafts[j]
                if e.stage == d.stage and e.gpu == d.gpu == None:  # noqa: E711
                    merged = replace(d, units=tuple(sorted(d.units + e.units)))
                    yield [x for k, x in enumerate(drafts) if k not in (i, j)] + [merged]
