"""The cost model's vocabulary: the work a stage or kernel does, and the interface.

Read this file first. Work descriptions are hardware-independent counts (FLOPs,
bytes, elements); a `CostModel` turns them into milliseconds on a `Hardware`.
The analytic model (costmodel/analytic.py) and the learned one (costmodel/learned.py)
implement it.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from corun.spec import Hardware, Model, OpKind, Precision, Stage
from corun.spec.findings import Finding

if TYPE_CHECKING:
    from corun.costmodel.stage_room import RoomKind, StageRoom


class Comm(enum.Enum):
    """How a stage uses the links."""

    NONE = "none"
    ALL_TO_ALL = "all-to-all"
    ALL_REDUCE = "all-reduce"


@dataclass(frozen=True)
class StageWork:
    """What one GPU does in one training stage of one iteration."""

    stage: Stage
    flops: float
    hbm_bytes: float
    precision: Precision
    kernels: int
    """Kernel launches the stage makes (each costs a launch latency)."""
    parallelism: float
    """Independent threads the stage can keep busy (for its occupancy)."""
    comm: Comm = Comm.NONE
    send_bytes: float = 0.0
    recv_bytes: float = 0.0
    lookups: float = 0.0
    """Embedding ids whose rows the stage updates one by one (the sparse backward and
    the sparse update): their cost follows the id count, not the bytes (heavy on the
    H200: 10.6 M ids of dim 8, emb_bwd 5.0 ms, 36x kaggle's for 48x the ids)."""
    embedding_dim: int = 0
    feature_count: int = 0
    cross_network: bool = False
    """The model's shape (0 / False: not given). How fast a stage's kernels run follows
    it beyond their FLOPs: the dot interaction multiplies features x dim matrices per
    sample, small ones run far from peak (H200: kaggle's 3.3 GFLOP interaction_bwd takes
    1.17 ms, mlperf-dcnv2's 174 GFLOP cross network 4.55 ms)."""
    fused_update: bool = False
    """The embedding backward is the fused SGD update (EmbeddingUpdate.FUSED_SGD): one
    pass of atomic adds per id, not PyTorch's backward (heavy at batch 4096 on the
    H200: 6.2 ms of backward and update unfused)."""
    graphed: bool = False
    """The stage is replayed as a CUDA graph (`Model.cuda_graphs`, costmodel/graphs.py)."""
    table_bytes: float = 0.0
    """Bytes of the embedding tables the stage reads or updates (emb_fwd, emb_bwd, the
    optimizer; 0 elsewhere): whether they fit in the L2 sets how fast their rows come
    (heavy-small's 8.3 MB ran its step 11-12% faster than heavy-fused's 83 MB with the
    same id counts)."""
    bag_kernel: bool = False
    """The embedding forward is the bag kernel (EmbeddingForward.BAG_KERNEL), not
    PyTorch's `embedding_bag`: the same bytes in 3.2-3.5x less time at dim 8 on the H200, which
    no other feature tells apart."""
    hot_row_update: bool = False
    """The embedding backward is the hot-row fused update (EmbeddingUpdate.
    FUSED_SGD_HOT_ROW): the same ids in half the time on zipf-skewed ids on the H200
    (heavy-lean b16384: 1.21 against 2.53 ms)."""
    reorder_bytes: float = 0.0
    """A collective stage's copies around its collective (read and written): the
    trainer lays the data out per peer before it and per table after it
    (backend/distributed.py). Not a learned feature."""
    trains_on: str = ""
    """The pipeline whose outputs the step trains on ("": not given). Not a feature: it
    picks which looked-up stage times may answer (costmodel.learned.CoRunModel.
    stage_timed). The ids' duplicates set the update's pace, and no feature sees them:
    on one H200 start heavy-lean b32768's update took 5.39 ms on heavy-small's ids and
    5.15 on heavy-rehash's."""


@dataclass(frozen=True)
class KernelWork:
    """What one fused preprocessing kernel does on one GPU for one batch."""

    name: str
    rows: int
    elements: float
    """Sum over its op nodes of the values each reads."""
    int_ops: float
    """Estimated integer/float instructions over all elements."""
    hbm_bytes: float
    """Bytes read from and written to device memory (intermediates of fused chains stay
    in registers)."""
    ops: tuple[OpKind, ...]
    blocks: int
    threads_per_block: int
    registers_per_thread: int = 40
    node_count: int = 1
    chains: int = 1
    """Chains (sinks) it writes: one block range each."""
    has_lists: bool = False
    """It finds its lists' offsets with a lengths kernel and a scan (scans_lists in
    costmodel/workload.py): lists of a fixed length, written by the values kernel alone,
    do not count."""
    op_counts: tuple[tuple[OpKind, int], ...] = ()
    """How many of its nodes are of each op kind."""
    key: str = ""
    """Its name in a profile (costmodel.workload.kernel_key); empty when not known."""
    warp_rows: bool = False
    """It writes long list outputs a warp per row (FusedKernel.warp_rows, in effect)."""
    bound_key: str = ""
    """Where FusedKernel.source_first takes effect, the key of the same kernel without it:
    that kernel computes every value this one does and more, so its measured time bounds
    this one's from above where no profile timed this one; empty otherwise."""

    @property
    def timing_keys(self) -> tuple[str, ...]:
        """The keys a timing of this kernel is looked up by, its own first, then its
        bound's (bound_key)."""
        return tuple(k for k in (self.key, self.bound_key) if k)


MAX_OVERLAP_FACTOR = 100.0
"""The slowdown that stands for "makes no progress while the other runs": a kernel queued
behind a stage that holds every SM, or a stage the kernel delays by more than their
overlap (both seen on the H200: costmodel/data/h200/profile-heavy-fused-plans.csv)."""


@dataclass(frozen=True)
class CoRunEffect:
    """Slowdown factors (>= 1) while a kernel and a stage share the GPU: each progresses
    at 1/factor of its standalone rate for as long as both run (the simulator's use)."""

    stage_factor: float
    kernel_factor: float

    @classmethod
    def from_whole_run(cls, kernel_alone_ms: float, kernel_corun_ms: float,
                       stage_alone_ms: float, stage_corun_ms: float) -> CoRunEffect:
        """The rates behind a profiled pair, which starts kernel and stage together and
        times each whole: the ratios of whole times would spread a stage's delay over
        all of it, though it accrues only while the kernel runs (a 0.5 ms kernel that
        delays a 1.5 ms stage by 0.44 ms slows it 4x while they overlap, not 1.29x).
        Stage: its delay accrues over the overlap. Kernel: what it did not finish by
        the stage's end it does alone afterwards, at its standalone rate."""
        overlap = min(kernel_corun_ms, stage_corun_ms)
        delay = stage_corun_ms - stage_alone_ms
        if delay <= 0 or overlap <= 0:
            stage = 1.0
        elif delay >= overlap * (1 - 1 / MAX_OVERLAP_FACTOR):
            stage = MAX_OVERLAP_FACTOR
        else:
            stage = overlap / (overlap - delay)
        if kernel_corun_ms <= stage_corun_ms:
            kernel = kernel_corun_ms / max(kernel_alone_ms, 1e-9)
        else:
            done_ms = kernel_alone_ms - (kernel_corun_ms - stage_corun_ms)
            kernel = stage_corun_ms / done_ms if done_ms > 0 else MAX_OVERLAP_FACTOR
        return cls(stage, min(MAX_OVERLAP_FACTOR, max(1.0, kernel)))


WholeRun = tuple[float, float, float, float]
"""A profiled pair as timed: (kernel alone, kernel from release to end, stage alone, stage
beside the kernel), ms; the kernel released at the stage's start (or, for a resident
run, on the SMs when the stage starts, its times from then)."""


def kernel_factors_through(runs: Sequence[WholeRun],
                           carried: tuple[Sequence[WholeRun], Sequence[float]] | None = None
                           ) -> list[float]:
    """Kernel slowdown factors for every stage of a step, from whole runs that released
    the kernel at each stage's start. Where the kernel outlasts its stage, the rest of
    its work runs beside the stages after it, at the rates solved for them (from the last
    stage back: after the last, the GPU is idle and the kernel runs alone), not alone as
    `CoRunEffect.from_whole_run` takes it. Beside a 0.02 ms stage that reading
    attributes almost the whole run to the stage and stalls the kernel there.
    `carried`: the whole runs of the kernel already resident when each stage starts and
    the factors solved from them (this function's answer for those runs), which the rest
    of its work meets in the stages after the one it started in (default: `runs` and the
    factors solved here)."""
    factors = [1.0] * len(runs)
    later_runs, later = (runs, factors) if carried is None else carried
    for i in range(len(runs) - 1, -1, -1):
        alone, corun, _, stage = runs[i]
        if i == len(runs) - 1 or corun <= stage or alone <= 0 or stage <= 0:
            factors[i] = CoRunEffect.from_whole_run(*runs[i]).kernel_factor
            continue
        done = _work_beside(stage, corun, alone, lambda w, i=i: _finish_ms(later_runs, later,
                                                                            i + 1, w))
        factors[i] = MAX_OVERLAP_FACTOR if done <= 0 else min(
            MAX_OVERLAP_FACTOR, max(1.0, stage / done))
    return factors


def _finish_ms(runs: Sequence[WholeRun], factors: list[float], first: int,
               work_ms: float) -> float:
    """Time to do `work_ms` of standalone work from stage `first`'s start, at `factors`
    beside each stage (its time beside the kernel, runs[j][3]) and alone after the last."""
    t = 0.0
    for j in range(first, len(runs)):
        stage_ms = runs[j][3]
        if work_ms <= stage_ms / factors[j]:
            return t + work_ms * factors[j]
        work_ms -= stage_ms / factors[j]
        t += stage_ms
    return t + work_ms


def _work_beside(stage_ms: float, corun_ms: float, alone_ms: float, after) -> float:
    """Standalone work (ms) a kernel did beside a stage of `stage_ms`, given that it
    ended `corun_ms` after its release and `after(w)` ms of the following stages finish
    work w: bisection on a decreasing function; 0 if it would have ended sooner even
    stalled, the standalone rate's share if later even at that rate."""
    lo, hi = 0.0, min(alone_ms, stage_ms)

    def late(done: float) -> float:
        return stage_ms + after(alone_ms - done) - corun_ms

    if late(lo) <= 0:
        return 0.0
    if late(hi) >= 0:
        return hi
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if late(mid) > 0 else (lo, mid)
    return hi


class CostModel(abc.ABC):
    """Times on a given hardware. Implementations must be pure and deterministic."""

    name: str = "abstract"

    @abc.abstractmethod
    def stage_ms(self, work: StageWork, hw: Hardware) -> float:
        """Standalone compute time of a stage (collective link time excluded)."""

    @abc.abstractmethod
    def kernel_ms(self, work: KernelWork, hw: Hardware) -> float:
        """Standalone time of a preprocessing kernel, launch included."""

    @abc.abstractmethod
    def corun(self, kernel: KernelWork, stage: StageWork, hw: Hardware,
              training_priority_high: bool) -> CoRunEffect:
        """How much each slows while they overlap."""

    def whole_run(self, kernel: KernelWork, stage: StageWork, hw: Hardware,
                  resident: bool = False) -> WholeRun | None:
        """The pair as a profile times it, where the model knows it that way (None: only
        as rates, `corun`); `resident`: the kernel already on the SMs when the stage
        starts."""
        return None

    def whole_runs(self, kernel: KernelWork, stages: Sequence[StageWork], hw: Hardware,
                   resident: bool = False) -> list[WholeRun | None]:
        """`whole_run` beside each of `stages`, in order (a model may answer them in one
        batch)."""
        return [self.whole_run(kernel, stage, hw, resident) for stage in stages]

    def release_rates(self, kernel: KernelWork, works: Sequence[StageWork], hw: Hardware,
                      release: int) -> list[tuple[float, float]] | None:
        """(stage factor, kernel factor) at each stage position from `release` on, where
        the model measured the whole step that released this kernel there
        (costmodel/release_steps.py); None otherwise."""
        return None

    def stage_room(self, model: str, batch: int, stage: str, graphed: bool, hw: Hardware,
                   kind: RoomKind) -> StageRoom | None:
        """The stage's room in time for a kernel of `kind` that starts partway into it,
        where a probe measured it (costmodel/stage_room.py); None: one rate for the
        stage."""
        return None

    @abc.abstractmethod
    def cpu_batch_ms(self, kernel: KernelWork) -> float:
        """One host core's time to run the kernel's nodes over its rows."""

    def untimed_kernels(self, kernels: Sequence[KernelWork], hw: Hardware) -> Finding | None:
        """A KERNELS_UNTIMED finding where some of a plan's fused kernels were not timed
        on this GPU (None: all were, or the model times none)."""
        return None

    def untimed_stages(self, model: Model, stages: Sequence[StageWork],
                       hw: Hardware) -> Finding | None:
        """A STAGES_UNTIMED finding where the model's training stages were timed less
        closely than a profile times them on this GPU (None: they were timed)."""
        return None

    def carried(self, hw: Hardware) -> Finding | None:
        """A TIMES_CARRIED finding where the times are another GPU kind's, carried to this
        one (costmodel/carried.py); None where they are this kind's own."""
        return None
