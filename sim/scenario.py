"""A scenario, and its compilation into lookup tables the event loop reads.

Following Vidur, every cost-model call happens here, once, before the event loop; the
hot path only indexes tuples.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from corun.costmodel import CostModel, Sharding, kernel_work, shard_tables, stage_work
from corun.costmodel.comm import all_to_all_ms, collective_stage_ms, pgas_exposed_ms
from corun.costmodel.host import (
    HOST_STEP_SPREAD,
    HostCosts,
    assembly_ms,
    host_costs,
    kernel_launches,
    output_mb,
)
from corun.costmodel.release_steps import ReleaseStep, rates
from corun.costmodel.stage_room import RoomKind, StageRoom
from corun.costmodel.types import Comm, CoRunEffect, KernelWork, StageWork, kernel_factors_through
from corun.sim.strategy import Strategy, StrategyKind, strategy_plan
from corun.spec import (
    FusedKernel,
    GpuKind,
    Hardware,
    Mapping,
    Model,
    Pipeline,
    Plan,
    SpecError,
    Stage,
    stages_for,
)
from corun.spec.errors import require, require_int_range
from corun.spec.findings import Finding, FindingKind, finding
from corun.spec.hardware import kernel_scale_at, scale_at
from corun.spec.plan import (
    CAP_GRANULARITY_SMS,
    TRAINER_UPDATE_BLOCKS_PER_SM,
    default_cap_sms,
)


class EmbeddingComm(enum.Enum):
    """How pooled embeddings reach the data-parallel GPUs."""

    COLLECTIVE = "collective"
    """NCCL-style all-to-all after the lookup, every GPU synchronised."""
    PGAS = "pgas"
    """One-sided puts issued during the lookup (SC'24 PGAS paper's mechanism)."""


@dataclass(frozen=True)
class Scenario:
    hardware: Hardware
    model: Model
    pipeline: Pipeline
    strategy: Strategy
    iterations: int = 30
    warmup: int = 5
    seed: int = 0
    jitter_cv: float = 0.0
    """Coefficient of variation of lognormal noise on every duration (0: exact)."""
    embedding_comm: EmbeddingComm = EmbeddingComm.COLLECTIVE
    queue_depth_per_gpu: int = 4
    """Preprocessed batches the CPU workers may run ahead, per GPU."""
    host_thread: bool = True
    """Model the host thread that launches each GPU's kernels and stages, assembles and
    checks its batches, as `corun execute` runs them (costmodel/host.py); False: the GPU
    alone, as if launches were free."""
    time_scale: float = 1.0
    """Every simulated duration times this: a machine's measured ideal iteration over the
    predicted one (sim.calibrate, costmodel/calibration.py); 1: uncalibrated."""
    timed_check: bool = False
    """Each batch's assembly also compares it with the reference, as `corun execute
    --check-timed` runs: a longer assembly (costmodel.host.assembly_ms)."""

    def __post_init__(self) -> None:
        require_int_range("iterations", self.iterations, 1, 1_000_000)
        require_int_range("warmup", self.warmup, 0, 1_000_000)
        require(0 <= self.jitter_cv <= 0.5, "jitter_cv", self.jitter_cv, "a number in [0, 0.5]")
        require(0.1 <= self.time_scale <= 10, "time_scale", self.time_scale,
                "a factor in [0.1, 10] (measured ideal over predicted)")
        require_int_range("queue_depth_per_gpu", self.queue_depth_per_gpu, 1, 1024)
        self.pipeline.check_model(self.model)


CPU_ITERATIONS, CPU_WARMUP = 60, 20
"""The shortest run of a scenario with host CPU work (steady_state)."""


def host_cpu_work(strategy: Strategy) -> bool:
    """Whether host CPU workers preprocess any of the strategy's batches."""
    return strategy.kind is StrategyKind.CPU or (strategy.plan is not None
                                                 and bool(strategy.plan.cpu_nodes))


def steady_state(sc: Scenario) -> Scenario:
    """`sc`, run at least CPU_ITERATIONS after CPU_WARMUP where host CPU workers feed it:
    their queue starts full, and a short run counts the prefilled batches as free. On
    kaggle b4096 (H200, learned model) cpu:4 predicts 936,003 samples/s at 30 iterations
    after 5, 911,308 at 60 after 20 and at 400 after 100, the host-paced rate of cpu:8
    and of the all-CPU plan; the planner once chose CPU mappings that stalled."""
    if not host_cpu_work(sc.strategy):
        return sc
    return replace(sc, iterations=max(sc.iterations, CPU_ITERATIONS),
                   warmup=max(sc.warmup, CPU_WARMUP))


@dataclass(frozen=True)
class KernelRun:
    """One fused kernel on one GPU, as the event loop needs it."""

    name: str
    release_pos: int
    """Index of the releasing stage in the GPU's stage list; -1: before the iteration."""
    alone_ms: float
    effects: tuple[tuple[float, float], ...]
    """Per stage position: (stage slowdown factor, kernel slowdown factor) for the kernel
    started at or during the stage."""
    carried: tuple[tuple[float, float], ...] = ()
    """The same for the kernel already running when the stage starts (its blocks on the
    SMs first); empty: as `effects`."""
    rooms: tuple[StageRoom | None, ...] = ()
    """Per stage position, the stage's room in time for this kernel where it starts after
    the stage began (`stage_rooms`); empty or None: the stage's one rate."""


@dataclass
class GpuTables:
    stages: tuple[Stage, ...]
    stage_ms: tuple[float, ...]
    """Standalone compute time per stage (0 for collectives)."""
    comm_ms: tuple[float, ...]
    """Per stage: link time after the barrier (collective), 0 otherwise."""
    pre_barrier_ms: tuple[float, ...]
    """Per stage: time spent before the barrier (PGAS puts left after their overlap)."""
    kernels: tuple[KernelRun, ...]
    h2d_ms: float
    """Host-to-device copy of one batch's inputs for this GPU."""
    host_ms: float = 0.0
    """The host thread's time to launch and feed one iteration (0: not modelled)."""
    turnaround_ms: float = 0.0
    """From a batch's assembly to the earliest start of the step that trains on it
    (costmodel.host.HostCosts.turnaround_ms)."""
    launched_ms: tuple[float, ...] = ()
    """Per stage position, the host's time from the start of a step's launches until
    that stage's are made (costmodel.host.HostCosts.launched_ms; the last: all of them,
    the rest of host_ms is the batch's read-back, check and staging); empty: the host is
    not modelled."""
    host_waits_for_batch: bool = True
    """Whether the host waits for the next batch's assembly (its id count) before it
    launches the step that trains on it (Model.waits_for_id_counts); where not, the GPU
    orders the two alone."""
    stage_slowdown_max: float = math.inf
    """The most a training stage slows beside the preprocessing stream
    (`stage_slowdown_bound`): bounded where the plan confines that stream to some SMs."""


@dataclass
class Compiled:
    scenario: Scenario
    plan: Plan
    sharding: Sharding
    gpus: list[GpuTables]
    cpu_batch_ms: float
    """One worker's time to preprocess one GPU's batch on the host (0: no CPU work)."""
    cost_model: str
    findings: list[Finding] = field(default_factory=list)


def _owner_mapped_tables(plan: Plan, pipeline: Pipeline, sharding: Sharding) -> frozenset[str]:
    tables = {s.node: s.table for s in pipeline.sparse_outputs}
    out = set()
    for feature, mapping in plan.feature_mapping.items():
        if feature not in tables:
            raise SpecError(f"plan.feature_mapping.{feature}", mapping.value,
                            "keys that are sparse output nodes of the pipeline")
        if mapping is Mapping.OWNER:
            out.add(tables[feature])
    feature_of = pipeline.feature_of()
    for i, k in enumerate(plan.kernels):
        for n in k.nodes:
            f = feature_of.get(n)
            owner_kernel = k.gpu is not None
            owner_feature = f in tables and plan.mapping_of(f) is Mapping.OWNER
            require(owner_kernel == owner_feature, f"plan.kernels[{i}].gpu", k.gpu,
                    f"a GPU index exactly when node {n!r} belongs to an owner-mapped feature")
            if owner_kernel:
                table = tables[f]  # type: ignore[index]
                require(sharding.owner[table] == k.gpu, f"plan.kernels[{i}].gpu", k.gpu,
                        f"the owner of table {table!r} (GPU {sharding.owner[table]})")
    return frozenset(out)


def _profiled_effect(cm: CostModel, kw: KernelWork, work: StageWork, hw: Hardware,
                     priority: bool) -> tuple[float, float]:
    """(stage factor, kernel factor) as the cost model's co-run rates give them;
    collectives are taken as free of interference (NCCL kernels use few SMs and wait on
    the links)."""
    if work.comm is not Comm.NONE:
        return 1.0, 1.0
    e = cm.corun(kw, work, hw, priority)
    return e.stage_factor, e.kernel_factor


def _machine_release(hw: Hardware, model: Model, kw: KernelWork, works: list[StageWork],
                     release: int) -> ReleaseStep | None:
    """The eager step a machine profile timed this kernel released in, at this model,
    batch and releasing stage (Hardware.release_steps), as a ReleaseStep; None where it
    timed none such (or the step is graphed: the profile times eager steps)."""
    if works[release].graphed:
        return None
    timed = (model.name, model.batch_per_gpu, tuple(w.stage.value for w in works),
             works[release].stage.value)
    for t in hw.release_steps.get(kw.key, ()):
        if (t.model, t.batch_per_gpu, t.stages, t.stage) == timed:
            return ReleaseStep(t.step_ms, t.alone_ms, t.kernel_alone_ms, t.kernel_ms)
    return None


def _effects(cm: CostModel, kw: KernelWork, works: list[StageWork], hw: Hardware,
             model: Model, priority: bool, release: int,
             outlasts: Sequence[bool]) -> tuple[tuple[tuple[float, float], ...],
                                                tuple[tuple[float, float], ...]]:
    """`_rated_effects`; where the machine profile or the cost model measured the step
    that released the kernel at `release` (a stage position; profiled with training above
    preprocessing, so for such plans only), that step's rates from the release on: the
    kernel's started rates at the release, its carried ones after it. The machine's own
    step comes first, a stage it timed faster beside the kernel sped up as timed (the
    cost model's steps, profiled on other hosts, never speed one up)."""
    started, carried = _rated_effects(cm, kw, works, hw, priority, outlasts)
    measured = None
    if release >= 0 and priority:
        step = _machine_release(hw, model, kw, works, release)
        measured = rates(step, release, speed_ups=True) if step is not None else \
            cm.release_rates(kw, works, hw, release)
    if measured is None:
        return started, carried
    return (started[:release] + (measured[0],) + started[release + 1:],
            carried[:release + 1] + tuple(measured[1:]))


def _rated_effects(cm: CostModel, kw: KernelWork, works: list[StageWork], hw: Hardware,
                   priority: bool, outlasts: Sequence[bool]
                   ) -> tuple[tuple[tuple[float, float], ...],
                              tuple[tuple[float, float], ...]]:
    """(stage factor, kernel factor) at every stage of the step, in order, for the kernel
    started with the stage, then for the kernel carried into it. Where the cost model
    knows each stage's pair as a whole run (the learned one), the kernel's factors come
    from all of them together (`kernel_factors_through`), a kernel carried into a stage
    at the rates of its resident runs; otherwise stage by stage, the same either way.
    `outlasts[i]`: stage i takes at least the kernel's time alone (`_effect`)."""
    computed = [w for w in works if w.comm is Comm.NONE]
    answers = iter(cm.whole_runs(kw, computed, hw))
    runs = [next(answers) if w.comm is Comm.NONE else None for w in works]
    if any(r is None for r in runs):
        started = tuple(_effect(_profiled_effect(cm, kw, w, hw, priority), w, priority, o)
                        for w, o in zip(works, outlasts))
        return started, started
    carried_runs = cm.whole_runs(kw, works, hw, resident=True)
    carried = kernel_factors_through(carried_runs)
    kernel = kernel_factors_through(runs, (carried_runs, carried))
    return (tuple(_effect((CoRunEffect.from_whole_run(*r).stage_factor, k), w, priority, o)
                  for r, k, w, o in zip(runs, kernel, works, outlasts)),
            tuple((CoRunEffect.from_whole_run(*r).stage_factor, k)
                  for r, k in zip(carried_runs, carried)))


def _effect(profiled: tuple[float, float], work: StageWork,
            priority: bool, outlasts: bool = True) -> tuple[float, float]:
    """(stage factor, kernel factor): the profiled rates, except that a graphed stage
    above the preprocessing stream that `outlasts` the kernel (takes at least the kernel's
    time alone) keeps its pace and the kernel takes the whole profiled delay. Eagerly the
    host launches a stage's kernels one by one, and a co-running kernel's blocks take the
    SMs in the gaps between them and keep them until they end; one graph launch leaves no
    such gaps (on the H200, kernels released at the optimizer stretched it in half of the
    eager cases and hardly in the graphed ones).
    Not applied to a kernel carried into a stage (`_rated_effects`' second half): the
    rule is about who gets the SMs as a stage is launched, and a resident kernel holds
    them already. Nor to a stage shorter than the kernel alone: the kernel's blocks take
    the SMs the stage's later kernels need and keep them to its end.

    The delay is taken in time: the kernel runs beside the stage as long as it did in
    the profile plus the stage's delay there, a factor of kernel * (2 - 1 / stage) (the
    stage factor is the overlap over the stage's progress in it, from_whole_run). Taken
    as kernel * stage, the two agree for small delays but not where the stage all but
    stopped beside the kernel (a hot-row update beside a large kernel: a stage factor of
    12 would have the kernel run at 1/14 of its pace, where measured it took 2.5x).
    """
    stage, kernel = profiled
    if work.graphed and priority and outlasts:
        return 1.0, kernel * (2.0 - 1.0 / stage)
    return stage, kernel


ASSEMBLY_KERNEL = "assembly"


ASSEMBLY_HOLDS = (math.inf, 1.0)
"""The rates of a stage that starts while a large batch assembly is on the SMs: the stage
waits for it, which runs as alone (see `_assembly_run`)."""

ASSEMBLY_HOLD_MIN_MS = 0.1
"""The assembly holds the stages that start beside it where it takes at least this long
alone: a grid that fills the GPU for a while (heavy pipelines: 0.13-0.29 ms, many waves
of blocks; the Criteo-like and wide ones: 0.05-0.08 ms, under one wave). Below it the
kernel's rates stay: holding every assembly put GPU-paced eager Criteo-like cases
0.3-0.75% slow where they had been within 0.1%."""


def _assembly_run(last: KernelRun, batch_mb: float, compared: bool) -> KernelRun:
    """The kernel that assembles the batch (backend/device_assembly.py; `compared`: it also
    compares it with the reference, Scenario.timed_check), on
    the preprocessing stream right behind the batch's last kernel (after a kernel run
    before the iteration: from stage 0), co-running at that kernel's rates: it streams
    the kernels' outputs through the memory system as they did (on the H200, a stage
    beside a heavy kernel stretched by the kernel's delay plus its assembly's).

    A stage that starts while a large assembly runs waits for it (ASSEMBLY_HOLDS,
    ASSEMBLY_HOLD_MIN_MS): its grid fills the GPU; a stage it starts during keeps the
    kernel's rates.

    Where the plan says (Plan.assembly_stream), the executor runs the assembly on a
    stream of its own, where the next batch's kernel does not wait for it; here it
    queues behind the kernels either way, so the two are predicted alike. They part
    where an assembly runs into the step after it."""
    alone_ms = assembly_ms(batch_mb, compared)
    holds = tuple(ASSEMBLY_HOLDS for _ in last.effects) \
        if alone_ms >= ASSEMBLY_HOLD_MIN_MS else last.carried
    return KernelRun(ASSEMBLY_KERNEL, max(0, last.release_pos), alone_ms, last.effects, holds)


HOST_LINK_NOTE_SHARE = 0.8
"""A plan's copy of each batch's raw inputs over the host link is noted where it takes at
least this share of the step's GPU work: near the floor no GPU plan can go under (graphed
heavy-lean b16384 copies 175 MB a step, near its whole step); the Criteo-like batches copy
well under a tenth of their step."""


def host_link_bound(h2d_ms: float, gpu_ms: float) -> Finding | None:
    """Where copying a batch's raw inputs over the host link (`h2d_ms`) nears the step's
    `gpu_ms` of training work: it bounds every plan that preprocesses on the GPU."""
    if gpu_ms <= 0 or h2d_ms < HOST_LINK_NOTE_SHARE * gpu_ms:
        return None
    return finding(FindingKind.HOST_LINK_BOUND, h2d_ms=h2d_ms, gpu_ms=gpu_ms)


def _host_paces_eager(sc: Scenario, tables: GpuTables, host: HostCosts) -> Finding | None:
    """Where the host's own step outlasts the GPU's and the trainer could replay it as
    CUDA graphs (one GPU, a model Model.cuda_graphs admits)."""
    model, hw = sc.model, sc.hardware
    if not sc.host_thread or model.cuda_graphs or hw.gpu_count > 1:
        return None
    try:
        replace(model, cuda_graphs=True)
    except SpecError:
        return None
    host_ms, gpu_ms = host.step_ms * sc.time_scale, sum(tables.stage_ms)
    if host_ms <= gpu_ms:
        return None
    if hw.host is None:  # the reference host: lent hosts' pace spans a band around it
        spread = {"lent_low": HOST_STEP_SPREAD[0], "lent_high": HOST_STEP_SPREAD[1]}
    elif (band := hw.host.round_band_ms) is not None:  # a measured host: its rounds' band
        spread = {"round_low": band[0] / hw.host.step_ms,
                  "round_high": band[1] / hw.host.step_ms}
    else:
        spread = {}
    return finding(FindingKind.HOST_PACES_EAGER, host_ms=host_ms, gpu_ms=gpu_ms, **spread)


CAP_HINT_ALONE_MS = 1.0
"""A kernel released beside the eager step that runs at least this long alone can race
the training stages for the SMs (`racing_kernel`): on the H200 a 3 ms kernel of eager
heavy-rehash b32768 held the next GEMM about 2 ms where it won them; beside the
Criteo-like plans' kernels (0.1-0.6 ms) no such hold was measured."""


def racing_kernel(sc: Scenario, plan: Plan,
                  tables: GpuTables) -> tuple[FusedKernel, float] | None:
    """The first kernel an eager one-GPU plan releases beside the training stages that can
    fill every SM (at least an SM count of blocks) and runs CAP_HINT_ALONE_MS or more
    alone, with its alone ms: where it becomes ready between two training kernels it can
    take every SM and hold the next one, which the simulator does not model. None for a
    graphed step or several GPUs."""
    if sc.model.cuda_graphs or sc.hardware.gpu_count > 1:
        return None
    by_name = {k.name: k for k in plan.kernels}
    for k in tables.kernels:
        fused = by_name.get(k.name)
        if (fused is not None and k.release_pos >= 0 and k.alone_ms >= CAP_HINT_ALONE_MS
                and fused.blocks >= sc.hardware.gpu.sm_count):
            return fused, k.alone_ms
    return None


def _uncapped_racing_kernel(sc: Scenario, plan: Plan, tables: GpuTables) -> Finding | None:
    """Where a plan of corun's (not a baseline's, nor RAP's) has a racing kernel and does
    not cap its SMs (`corun plan --no-sm-cap`, or a plan written by hand)."""
    if plan.preprocess_sm_cap or sc.strategy.kind is not StrategyKind.PLAN \
            or not sc.strategy.caps_racing_kernels:
        return None
    racing = racing_kernel(sc, plan, tables)
    if racing is None:
        return None
    k, alone_ms = racing
    return finding(FindingKind.RACING_KERNEL, kernel=k.name, blocks=k.blocks,
                   alone_ms=alone_ms, cap_sms=default_cap_sms(sc.hardware.gpu.sm_count))


def stage_rooms(cm: CostModel, model: Model, hw: Hardware, stages: Sequence[Stage],
                priority: bool, kind: RoomKind) -> tuple[StageRoom | None, ...]:
    """Each stage's room in time for kernels of `kind` (costmodel/stage_room.py) where a
    probe measured it for this model and batch: one GPU, training above preprocessing, as
    the probe ran; () where none was. A kernel that starts after its stage began (the
    batch's assembly behind a kernel, a kernel queued behind another) then gets the
    room's rates there; a kernel released with the stage keeps the profiled rate, which
    timed exactly that.

    Installed for graphed heavy-lean and heavy-hot b16384 (costmodel/data/h200/
    stage-room.json, fitted from the probe records beside it). Checked on the executed
    one-kernel plans there, they made the predicted best the measured best in more
    commands at the same case error."""
    if hw.gpu_count != 1 or not priority:
        return ()
    rooms = tuple(cm.stage_room(model.name, model.batch_per_gpu, s.value, model.cuda_graphs,
                                hw, kind) for s in stages)
    return rooms if any(rooms) else ()


def _stage_scale(hw: Hardware, model: Model, work: StageWork) -> float:
    """A machine profile's scale for this stage (Hardware.stage_scale). The profile timed
    the eager stages: a graphed stage, which the graph replays without the eager
    launches between kernels, keeps the cost model's time."""
    if work.graphed:
        return 1.0
    return scale_at(hw.stage_scale.get(work.stage.value, ()), model.name, model.batch_per_gpu)


def _timed_on_machine(hw: Hardware, model: Model, work: StageWork) -> bool:
    """Whether the machine profile timed this eager stage at this model and batch (its
    time is then the machine's own, whatever the cost model had)."""
    return not work.graphed and any(
        p.model == model.name and p.batch_per_gpu == model.batch_per_gpu
        for p in hw.stage_scale.get(work.stage.value, ()))


def _machine_timings(hw: Hardware, kw: KernelWork) -> tuple:
    """A machine profile's timings of this kernel alone (Hardware.kernel_scale), else of
    the kernel that bounds it (KernelWork.bound_key), as the cost model answers it."""
    return next((hw.kernel_scale[k] for k in kw.timing_keys if k in hw.kernel_scale), ())


def _kernel_timed_on_machine(hw: Hardware, kw: KernelWork) -> bool:
    """Whether the machine profile timed this kernel (or its bound) alone at these rows."""
    return any(p.rows == kw.rows for p in _machine_timings(hw, kw))


def _kernel_scale(hw: Hardware, kw: KernelWork) -> float:
    """A machine profile's scale for this kernel alone (Hardware.kernel_scale): 1 for a
    kernel the profile did not time."""
    return kernel_scale_at(_machine_timings(hw, kw), kw.rows)


def compile_scenario(sc: Scenario, cm: CostModel) -> Compiled:
    """Turn a scenario into per-GPU duration tables (all cost-model calls happen here)."""
    hw, model, pipeline = sc.hardware, sc.model, sc.pipeline
    model.check_gpu_count(hw.gpu_count)
    plan = strategy_plan(sc.strategy, pipeline, model.name, hw, model)
    sharding = shard_tables(model, hw, plan.table_owner or None)
    owner_mapped = _owner_mapped_tables(plan, pipeline, sharding)
    owner_share = len(owner_mapped) / len(model.tables)
    stages = stages_for(hw.gpu_count)
    works = [{s: replace(w, trains_on=pipeline.name)
              for s, w in stage_work(model, hw, sharding, g, owner_mapped).items()}
             for g in range(hw.gpu_count)]
    link = hw.collective_link
    host = host_costs(hw).for_model(model)
    pgas = sc.embedding_comm is EmbeddingComm.PGAS
    comm: dict[Stage, float] = {}
    for s in stages:
        if works[0][s].comm is not Comm.NONE and not (
                pgas and s in (Stage.EMB_A2A_FWD, Stage.EMB_A2A_BWD)):
            comm[s] = collective_stage_ms([w[s] for w in works], hw)
    rows_local = model.batch_per_gpu
    raw_cols: dict[str, float] = {c.name: c.bytes_per_row() for c in pipeline.inputs}
    cols = pipeline.columns
    kernel_works: dict[tuple, KernelWork] = {}
    """Each plan kernel's work by (kernel, rows): the same on every GPU that runs it
    (costmodel.kernel_work walks the kernel's nodes; 8 GPUs asked it 8 times)."""
    gpus = []
    raw_ms = 0.0  # GPU 0's copy of the raw inputs its kernels read
    for g in range(hw.gpu_count):
        w = works[g]
        stage_ms = tuple(0.0 if w[s].comm is not Comm.NONE
                         else cm.stage_ms(w[s], hw) * _stage_scale(hw, model, w[s])
                         for s in stages)
        pre = []
        for s in stages:
            if pgas and s is Stage.EMB_A2A_FWD:
                pre.append(pgas_exposed_ms(w[s].send_bytes, w[s].recv_bytes,
                                           stage_ms[stages.index(Stage.EMB_FWD)], link))
            elif pgas and s is Stage.EMB_A2A_BWD:
                pre.append(pgas_exposed_ms(w[s].send_bytes, w[s].recv_bytes,
                                           stage_ms[stages.index(Stage.BOTTOM_MLP_BWD)], link))
            else:
                pre.append(0.0)
        kernels = []
        priority = plan.training_priority_high
        rooms = stage_rooms(cm, model, hw, stages, priority, RoomKind.KERNEL)
        copy_bytes = 0.0  # raw inputs the kernels read, then what the host CPU hands over
        for k in plan.kernels:
            if k.gpu is not None and k.gpu != g:
                continue
            rows = rows_local if k.gpu is None else rows_local * hw.gpu_count
            if (k, rows) not in kernel_works:
                kernel_works[k, rows] = kernel_work(pipeline, k.name, k.nodes, rows, k.blocks,
                                                    k.threads_per_block, k.warp_rows,
                                                    k.fixed_offsets, k.source_first)
            kw = kernel_works[k, rows]
            pos = -1 if k.release is None else stages.index(k.release)
            alone_ms = cm.kernel_ms(kw, hw) * _kernel_scale(hw, kw)
            outlasts = [w[s].comm is not Comm.NONE or ms >= alone_ms
                        for s, ms in zip(stages, stage_ms)]
            effects, carried = _effects(cm, kw, [w[s] for s in stages], hw, model, priority,
                                        pos, outlasts)
            kernels.append(KernelRun(k.name, pos, alone_ms, effects, carried, rooms))
            copy_bytes += rows * sum(raw_cols[pipeline.node_by_name[n].input]
                                     for n in k.nodes
                                     if pipeline.node_by_name[n].input in raw_cols)
        if g == 0 and copy_bytes:  # the copy a GPU plan cannot beat (host_link_bound)
            raw_ms = hw.host_link.transfer_ms(copy_bytes) * sc.time_scale
        cpu_set = set(plan.cpu_nodes)
        outputs = set(pipeline.dense_outputs) | {s.node for s in pipeline.sparse_outputs}
        for n in plan.cpu_nodes:  # what the host hands the GPU: CPU results used on GPU
            if n in outputs or any(c not in cpu_set for c in pipeline.consumers[n]):
                copy_bytes += rows_local * cols[n].bytes_per_row()
        kernels.sort(key=lambda r: r.release_pos)  # stable: plan order within a stage
        host_ms, batch_mb = 0.0, output_mb(pipeline, rows_local)
        if kernels:
            kernels.append(replace(_assembly_run(kernels[-1], batch_mb, sc.timed_check),
                                   rooms=stage_rooms(cm, model, hw, stages, priority,
                                                     RoomKind.ASSEMBLY)))
        launched: tuple[float, ...] = ()
        if sc.host_thread:
            mine = [k for k in plan.kernels if k.gpu is None or k.gpu == g]
            workers = bool(plan.cpu_nodes)
            host_ms = host.iteration_ms(kernel_launches(mine, pipeline), batch_mb,
                                             sc.strategy.kind is not StrategyKind.IDEAL,
                                             hw.gpu_count, model.cuda_graphs, workers,
                                             owner_share)
            at = [kernel_launches([k for k in mine if k.release == s], pipeline)
                  for s in stages]
            before = kernel_launches([k for k in mine if k.release is None], pipeline)
            launched = host.launched_ms(stages, at, before, hw.gpu_count,
                                             model.cuda_graphs, model.name, workers,
                                             owner_share,
                                             sc.strategy.kind is not StrategyKind.IDEAL)
        waits = model.waits_for_id_counts(hw.gpu_count)
        turnaround = host.turnaround_ms(sc.host_thread and waits, hw.gpu_count)
        gpus.append(_scaled(GpuTables(stages, stage_ms, tuple(comm.get(s, 0.0) for s in stages),
                                      tuple(pre), tuple(kernels),
                                      hw.host_link.transfer_ms(copy_bytes), host_ms,
                                      turnaround, launched, waits,
                                      stage_slowdown_bound(plan, hw.gpu)), sc.time_scale))
    cpu_ms = 0.0
    if plan.cpu_nodes:
        kw = kernel_work(pipeline, "cpu", plan.cpu_nodes, rows_local, 1, 32)
        cpu_ms = cm.cpu_batch_ms(kw) * sc.time_scale
    found: list[Finding | None] = []
    if sc.strategy.kind is StrategyKind.CPU and sc.strategy.cpu_workers > hw.host_cpu_cores:
        found.append(finding(FindingKind.CPU_OVERSUBSCRIBED, workers=sc.strategy.cpu_workers,
                             cores=hw.host_cpu_cores))
    if sc.host_thread:
        found.append(finding(FindingKind.HOST_THREAD, host_ms=gpus[0].host_ms,
                             source=host.source))
    if sc.time_scale != 1.0:
        found.append(finding(FindingKind.CALIBRATED, scale=sc.time_scale))
    if hw.machine:
        found.append(finding(FindingKind.MACHINE_PROFILE, machine=hw.machine,
                             stages=float(len(hw.stage_scale)),
                             kernels=float(len(hw.kernel_scale)),
                             coruns=float(sum(map(len, hw.release_steps.values())))))
    found.append(cm.carried(hw))
    found.append(cm.untimed_stages(model, [w for w in works[0].values()
                                           if w.comm is Comm.NONE
                                           and not _timed_on_machine(hw, model, w)], hw))
    found.append(cm.untimed_kernels([k for k in kernel_works.values()
                                     if not _kernel_timed_on_machine(hw, k)], hw))
    found.append(_host_paces_eager(sc, gpus[0], host))
    found.append(_uncapped_racing_kernel(sc, plan, gpus[0]))
    found.append(host_link_bound(raw_ms, sum(gpus[0].stage_ms)))
    if owner_mapped:
        found.append(_owner_mapped(model, hw, sharding, owner_mapped,
                                   comm.get(Stage.INPUT_A2A, 0.0),
                                   host if sc.host_thread else None))
    if plan.preprocess_sm_cap:
        bound = gpus[0].stage_slowdown_max
        found.append(finding(FindingKind.SM_CAP_BOUND, sm_cap=plan.preprocess_sm_cap,
                             sm_count=hw.gpu.sm_count,
                             max_stage_slowdown=0.0 if math.isinf(bound) else bound))
    if plan.update_blocks_per_sm:
        found.append(finding(FindingKind.UPDATE_GRID_NOT_SIMULATED,
                             blocks_per_sm=plan.update_blocks_per_sm,
                             default=TRAINER_UPDATE_BLOCKS_PER_SM))
    return Compiled(sc, plan, sharding, gpus, cpu_ms, cm.name, [f for f in found if f])


def stage_slowdown_bound(plan: Plan, gpu: GpuKind) -> float:
    """The most a training stage slows beside the preprocessing stream. Where the plan
    confines that stream to C of the GPU's N SMs (Plan.preprocess_sm_cap, rounded up to
    the driver's groups of CAP_GRANULARITY_SMS), training keeps N - C SMs to itself and
    runs at least at their share: N / (N - C), 3.7x for 96 of 132 SMs. Unbounded without
    a cap, or where it would leave training fewer than CAP_GRANULARITY_SMS SMs (the
    executor then runs the plan on every SM: backend.sm_split.runnable_cap). The kernel
    gives up what the stage gains (`bounded`); its pace alone on fewer SMs is left as on
    every SM (beside training it gets about as many)."""
    asked = plan.preprocess_sm_cap
    if not asked or asked > gpu.sm_count - CAP_GRANULARITY_SMS:  # as runnable_cap decides
        return math.inf
    cap = -(-asked // CAP_GRANULARITY_SMS) * CAP_GRANULARITY_SMS
    return gpu.sm_count / (gpu.sm_count - cap)


def bounded(stage: float, kernel: float, most: float) -> tuple[float, float]:
    """(stage factor, kernel factor) with the stage slowed `most` at most
    (`stage_slowdown_bound`); the SM time the stage gains is the kernel's loss: the
    stage's share of its pace alone rises from 1/stage to 1/most, the kernel's falls by
    as much (to a tenth of its share at least: a guard against a share of none, not a
    measured floor)."""
    if stage <= most:
        return stage, kernel
    share = 1.0 / kernel - (1.0 / most - 1.0 / stage)
    return most, 1.0 / max(share, 0.1 / kernel)


def _scaled(t: GpuTables, f: float) -> GpuTables:
    """`t` with every duration times `f` (Scenario.time_scale); the factors stay."""
    if f == 1.0:
        return t

    def ms(xs: tuple[float, ...]) -> tuple[float, ...]:
        return tuple(x * f for x in xs)

    return replace(t, stage_ms=ms(t.stage_ms), comm_ms=ms(t.comm_ms),
                   pre_barrier_ms=ms(t.pre_barrier_ms),
                   kernels=tuple(replace(k, alone_ms=k.alone_ms * f) for k in t.kernels),
                   h2d_ms=t.h2d_ms * f, host_ms=t.host_ms * f,
                   turnaround_ms=t.turnaround_ms * f, launched_ms=ms(t.launched_ms))


def _owner_mapped(model: Model, hw: Hardware, sharding: Sharding,
                  owner_mapped: frozenset[str], input_a2a_ms: float,
                  host: HostCosts | None) -> Finding:
    """Why a plan with owner-mapped features can beat `ideal`: their ids skip the input
    all-to-all that ideal's row-wise batches go through (their raw columns come from the
    host instead, to the owner, over the global batch), and, with the host thread
    modelled (`host`), what that saves and costs the host."""
    works = [stage_work(model, hw, sharding, g)[Stage.INPUT_A2A] for g in range(hw.gpu_count)]
    row_wise_ms = all_to_all_ms([w.send_bytes for w in works], [w.recv_bytes for w in works],
                                hw.collective_link)
    saved = {}
    if host is not None:
        saved = {"host_saved_ms": host.owner_saved_ms(
                     hw.gpu_count, len(owner_mapped) / len(model.tables)),
                 "owner_lane_ms": host.distributed_owner_lane_ms}
    return finding(FindingKind.OWNER_MAPPED, tables=len(owner_mapped),
                   of_tables=len(model.tables), row_wise_ms=row_wise_ms,
                   input_a2a_ms=input_a2a_ms, **saved)
