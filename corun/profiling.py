"""Co-run profiling: how long a fused kernel takes on the GPU beside a training stage,
and how much it slows that stage, measured the way the executor runs them.

For one model and batch, the profiler trains on a replayed batch and, for each sampled
kernel (a set of a pipeline's features fused into one kernel, with a launch shape) and
each training stage, runs steps whose opening event of that stage releases the kernel on
the lower-priority preprocessing stream; plain steps, once per model and batch, give
every stage's time alone, and the kernel alone is timed on an idle GPU.

Every timed step and kernel is enqueued behind a GPU spin, so the host's launches (a
fused Numba launch costs ~1 ms of host time on the H200, a step 5-6 ms) finish before the GPU
starts: the events then time the GPU alone. The first H200 profile, taken without the spin,
repeated to only 20-26% on its kernel times; host time is modelled
apart (sim's host thread). Each row records the share of its steps where the host was
ahead. Rows go to a CSV as they are measured, so a lost machine loses at most one
kernel's rows, and a rerun skips every key already in the file.

With a lead (`corun profile --resident`), the kernel is released at the mark that opens
the stage and the training stream is held a moment (LEAD_MS) before the stage's work, so
the kernel's blocks are resident on the SMs when the stage starts: the case of a kernel
that outlasts the stage it was released at and runs on into the next ones. Those rows go
to resident*.csv. On the H200 the two differ most where a stage's kernels fill the SMs'
registers: heavy-lean's whole pipeline in 198 blocks ran about 4x slowed beside emb_bwd
when launched at its start, about 2x when already resident.

For a model with `cuda_graphs` the profiler trains as the executor then does, the step
replayed as CUDA graphs a stage (backend/graphed.py), and the kernel released between
them (`corun profile --cuda-graphs`, into graphed-profile*.csv / graphed-resident*.csv).
"""

from __future__ import annotations

import csv
import functools
import hashlib
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from corun.backend.data import synthetic_inputs
from corun.backend.executor import versions
from corun.backend.fusion import FusedGroup
from corun.backend.graphed import make_trainer
from corun.backend.reference import run_reference
from corun.backend.runner import PipelineProgram, trainer_batch
from corun.backend.streams import HostPoolSet, ReleaseClock, Streams, gpu_spin
from corun.backend.trainer import TRAINING_STAGES, Batch, Clock, Trainer
from corun.costmodel.features import stage_row
from corun.costmodel.profile_data import KEY, LEAD_ASKED, is_resident
from corun.costmodel.release_steps import format_steps
from corun.costmodel.workload import kernel_key, kernel_key_suffix, kernel_work, stage_work
from corun.spec import Hardware, Model, OpKind, Pipeline, SpecError, Stage
from corun.spec.sharding import shard_tables

BLOCKS = (8, 33, 132, 264, 528, 1056, 2112)
"""Launch sizes from a few blocks to several waves of the H200's 132 SMs."""
THREADS = (64, 128, 256, 512)
STEP_SPIN_MS = 9.0
"""Longer than the host's launch of any profiled step and one fused kernel (<= 6 ms and
~1 ms on the H200)."""
KERNEL_SPIN_MS = 3.0
LEAD_MS = 0.01
"""How long a resident row's kernel runs before its stage starts: longer than its blocks
take to be dispatched (a few microseconds), short against the kernels profiled (0.01-3
ms alone on the H200), whose work done alone meanwhile the fit subtracts
(costmodel.learned.targets, the row's kernel_lead_ms)."""
PLAIN_REPS = 60
"""Plain steps per model and batch, for every stage's time alone. heavy-fused b16384's
emb_bwd takes one of about three speeds (near 2.62, 2.85 and 3.09 ms), drawn afresh each
step, as the memory traffic just before the update leaves the memory system; the median
of 15 steps moved by 0.16 ms from one block count to the next, that of 60 is steadier."""

COLUMNS = KEY + (
    "pipeline", "features", "nodes", "chains", "has_lists", "rows", "elements", "int_ops",
    "kernel_bytes", "blocks", "threads", "registers", "occupancy", "warp_rows",
    *(f"op_{op.value}" for op in OpKind),
    "stage_flops", "stage_bytes", "stage_kernels", "stage_parallelism", "stage_lookups",
    "stage_embedding_dim", "stage_feature_count", "stage_cross_network", "stage_fused_update",
    "stage_bag_kernel", "stage_table_bytes", "stage_hot_row", "stage_alone_ms",
    "stage_corun_ms", "kernel_alone_ms", "kernel_corun_ms", "host_ahead", "reps", "torch",
    "numba_cuda", "measured_utc")
STEP_COLUMN = "step_stage_ms"
"""Every stage's median time in the steps that released the kernel, "stage=ms ..." (the
stages after the release ran beside the kernel carried into them)."""
STEP_COLUMNS = COLUMNS + (STEP_COLUMN,)
"""A new profile*.csv's columns."""
RESIDENT_COLUMNS = COLUMNS + ("kernel_lead_ms", LEAD_ASKED)
"""A resident*.csv's columns: kernel_lead_ms is the median time from the kernel's
release to its stage's start (kernel_corun_ms is timed from the release, so includes
it), lead_asked_ms the hold asked for (`corun profile --lead-ms`)."""

DERIVED = ("stage_lookups", "stage_embedding_dim", "stage_feature_count",
           "stage_cross_network", "stage_fused_update", "stage_bag_kernel",
           "stage_table_bytes", "stage_hot_row")
BEFORE_DERIVED = tuple(c for c in COLUMNS if c not in DERIVED)
"""The columns before the stage's ids and model shape were recorded: such a file is still
appended to (without them; the fit derives them from the preset model,
costmodel.features.stage_lookups, stage_shape and stage_fused)."""
BEFORE_HOT = {h: tuple(c for c in h if c != "stage_hot_row")
              for h in (STEP_COLUMNS, RESIDENT_COLUMNS, RESIDENT_COLUMNS[:-1], COLUMNS)}
"""The columns before the hot-row update (EmbeddingUpdate.FUSED_SGD_HOT_ROW; the fit
derives stage_hot_row from the preset), by the header that followed them."""
BEFORE_BAG = tuple(c for c in COLUMNS if c not in ("stage_bag_kernel", "stage_table_bytes",
                                                   "stage_hot_row"))
"""The columns before the trainer's bag-kernel forward (EmbeddingForward.BAG_KERNEL:
every emb_fwd PyTorch's) and the tables' bytes (the fit derives them from the preset)."""
BEFORE_WARP = tuple(c for c in BEFORE_BAG if c != "warp_rows")
"""The columns before kernels could write a warp per row: every kernel a thread per row."""
READABLE_HEADERS = (STEP_COLUMNS, RESIDENT_COLUMNS, RESIDENT_COLUMNS[:-1], COLUMNS,
                    *BEFORE_HOT.values(), BEFORE_BAG,
                    BEFORE_WARP,
                    tuple(c for c in BEFORE_WARP if c != "stage_fused_update"),
                    tuple(c for c in BEFORE_DERIVED if c != "warp_rows"))
"""Headers a profile is appended to: this version's and the earlier ones."""


@dataclass(frozen=True)
class KernelSpec:
    """A fused kernel to profile: every node that `features` of `pipeline` need, or,
    for a kernel of a plan, exactly the plan's `group` of nodes (whose inputs from other
    kernels are staged from the reference, as an earlier kernel would have left them)."""

    pipeline: Pipeline
    features: tuple[str, ...]
    blocks: int
    threads: int
    group: tuple[str, ...] = ()
    warp_rows: bool = True
    """As FusedKernel.warp_rows."""
    fixed_offsets: bool = True
    """As FusedKernel.fixed_offsets; on unless a plan's kernel says otherwise, so a profile
    times the kernels plans launch."""
    source_first: bool = False
    """As FusedKernel.source_first; off unless a plan's kernel says otherwise."""
    max_registers: int | None = None
    """As FusedGroup.max_registers (an experiment)."""

    @functools.cached_property
    def nodes(self) -> tuple[str, ...]:
        """The features' nodes and all they read, shared ancestors included (kaggle's
        bucket_int_0 reads the fill_int_0 that logit_int_0 also reads); a plan kernel's
        group as it is."""
        if self.group:
            inside = set(self.group)
            return tuple(n for n in self.pipeline.order if n in inside)
        by_name, keep = self.pipeline.node_by_name, set()
        for cur in self.features:
            while cur in by_name and cur not in keep:
                keep.add(cur)
                cur = by_name[cur].input
        return tuple(n for n in self.pipeline.order if n in keep)

    @property
    def warp(self) -> bool:
        """Whether `warp_rows` takes effect: the kernel writes a long list."""
        return self.warp_rows and bool(self.pipeline.warp_sinks(self.nodes))

    @property
    def fixed(self) -> bool:
        """Whether `fixed_offsets` takes effect: the kernel's lists all have fixed lengths."""
        return self.fixed_offsets and self.pipeline.offsets_fixed(self.nodes)

    @property
    def src(self) -> bool:
        """Whether `source_first` takes effect: the kernel writes a list made by one ngram."""
        return self.source_first and bool(self.pipeline.source_first_sinks(self.nodes))

    @property
    def name(self) -> str:
        if self.group:
            return kernel_key(self.pipeline, self.nodes, self.blocks, self.threads, self.warp,
                              self.fixed, self.src)
        digest = hashlib.sha1(",".join(self.features).encode()).hexdigest()[:8]
        name = f"{self.pipeline.name}:{len(self.features)}f:{digest}:{self.blocks}x{self.threads}"
        return name + kernel_key_suffix(self.warp, self.fixed, self.src) + \
            (f":r{self.max_registers}" if self.max_registers else "")

    @property
    def feature_count(self) -> int:
        """Features the kernel computes some of."""
        if not self.group:
            return len(self.features)
        feature = self.pipeline.feature_of()
        return len({feature[n] for n in self.nodes})


def plan_kernels(plan, pipeline: Pipeline) -> list[KernelSpec]:
    """Each fused kernel of a plan as it runs (its nodes, blocks and threads): the shapes
    a planner's plans launch, RAP's per-layer kernels among them, which feature-set
    sampling does not draw."""
    return [KernelSpec(pipeline, (), k.blocks, k.threads_per_block, tuple(k.nodes),
                       k.warp_rows, k.fixed_offsets, k.source_first) for k in plan.kernels]


def sample_kernels(pipelines: Sequence[Pipeline], shapes: int, launches: int,
                   rng: np.random.Generator, mappings: Sequence[bool] = (False, True)
                   ) -> list[KernelSpec]:
    """`shapes` random feature sets (sizes spread log-uniformly from one feature to the
    whole pipeline), each with `launches` random launch shapes, each launch with every
    thread mapping of `mappings` (FusedKernel.warp_rows; one where it makes no
    difference). Launch shapes of one feature set share a compiled kernel, which keeps
    compile time down. The random draws do not depend on `mappings`."""
    specs = []
    for s in range(shapes):
        p = pipelines[s % len(pipelines)]
        outs = list(p.dense_outputs) + [o.node for o in p.sparse_outputs]
        k = int(np.clip(round(np.exp(rng.uniform(0, np.log(len(outs))))), 1, len(outs)))
        feats = tuple(sorted(rng.choice(outs, k, replace=False).tolist()))
        for _ in range(launches):
            blocks, threads = int(rng.choice(BLOCKS)), int(rng.choice(THREADS))
            specs += [KernelSpec(p, feats, blocks, threads, warp_rows=w) for w in mappings]
    unique = {s.name: s for s in reversed(specs)}  # a launch shape drawn twice: keep one
    return [s for s in specs if unique[s.name] is s]


@dataclass(frozen=True)
class StepTimes:
    """One profiled step, in ms of GPU time."""

    stage_ms: dict[Stage, float]
    kernel_ms: float
    """The released kernel from its release to its end (0 when none was released)."""
    span_ms: float
    """From the step's first stage opening to the later of its end and the kernel's."""
    lead_ms: float
    """From the kernel's release to the start of its stage's work (0: released with it)."""
    host_ahead: bool
    """Whether the host had enqueued the whole step before the GPU began it (always on
    the CPU)."""


class Profiler:
    """One trainer (model, batch) on one device; measures kernels against its stages."""

    def __init__(self, model: Model, pipeline: Pipeline, hw: Hardware, device: str,
                 seed: int = 0, say: Callable[..., None] = print,
                 trainer: Trainer | None = None) -> None:
        """`trainer` reuses one built for the same model (tables of 100 GB take
        seconds to build)."""
        self.model, self.hw, self.say = model, hw, say
        self.device = torch.device(device)
        self.rng = np.random.default_rng(seed)
        self.rows = model.batch_per_gpu
        # the trainer first, as the executor builds it: allocated after the streams, the
        # fused update's table ran its atomics 7% slower
        self.trainer = trainer if trainer is not None else make_trainer(model, self.device,
                                                                         seed)
        self.trainer.begin_run()  # a graphed trainer captures this batch size afresh
        self.S = Streams(self.device, training_high=True)
        raw = synthetic_inputs(pipeline, self.rows, self.rng)
        labels = (self.rng.random(self.rows) < 0.25).astype(np.float32)
        self.batch: Batch = trainer_batch(pipeline, model, run_reference(pipeline, raw),
                                          labels).to(self.device)
        self.work = stage_work(model, hw, shard_tables(model, hw), 0)
        self._raw: dict[str, dict] = {}

    def _sync(self) -> None:
        if self.S.cuda:
            torch.cuda.synchronize()

    def _state(self, spec: KernelSpec):
        """Pools holding the spec's raw inputs and the group's outputs (inputs never
        change, so reruns recompute the same outputs)."""
        p = spec.pipeline
        if p.name not in self._raw:
            self._raw[p.name] = synthetic_inputs(p, self.rows, self.rng)
        group = FusedGroup(p, spec.nodes, spec.name, spec.blocks, spec.threads,
                           warp_rows=spec.warp_rows, max_registers=spec.max_registers,
                           fixed_offsets=spec.fixed_offsets, source_first=spec.source_first)
        inside = set(spec.nodes)
        rest = [n for n in p.order if n not in inside]
        read = {p.node_by_name[n].input for n in spec.nodes} - inside
        made = [c for c in read if c in p.node_by_name]  # outputs of other kernels
        inputs = {**self._raw[p.name], **(run_reference(p, self._raw[p.name], made)
                                          if made else {})}
        program = PipelineProgram(p, [group], inputs, elsewhere=rest)
        return group, (program.to_device() if self.S.cuda else HostPoolSet(program))

    def step(self, release: Stage | None, launch, lead_ms: float = 0.0,
             spin_ms: float = STEP_SPIN_MS) -> StepTimes:
        """One training step behind a spin; `launch` (pre-stream) released at `release`
        (none: a plain step): with the stage's opening, or, with `lead_ms`, that long
        before the stage's work starts (LeadClock). `spin_ms` 0: no spin, so the GPU
        runs the step while the host enqueues it (paced steps)."""
        S, spans = self.S, []

        def on_open(stage: Stage, opened) -> None:
            if stage is not release:
                return
            with S.use(S.pre):
                S.wait(S.pre, opened)
                t0 = S.event(S.pre)
                launch()
                spans.append((t0, S.event(S.pre)))

        with S.use(S.train):
            if S.cuda:
                if spin_ms > 0:
                    gpu_spin(spin_ms)
                began = S.event(S.train)
            if release is None:
                clock = Clock(self.device)
            elif lead_ms > 0:
                clock = LeadClock(self.device, release, on_open, lead_ms)
            else:
                clock = ReleaseClock(self.device, on_open)
            self.trainer.step(self.batch, clock)
            ahead = not began.query() if S.cuda else True
        self._sync()
        first, last = clock.marks[0][1], clock.marks[-1][1]
        span = S.ms(first, last)
        kernel = lead = 0.0
        if spans:
            kernel = S.ms(*spans[0])
            span = max(span, S.ms(first, spans[0][1]))
            if isinstance(clock, LeadClock):
                lead = S.ms(spans[0][0], clock.started)
        return StepTimes(clock.stage_ms(), kernel, span, lead, ahead)

    @functools.cached_property
    def plain_stage_ms(self) -> dict[Stage, float]:
        """Each stage's median time over PLAIN_REPS plain steps (after two warm ones)."""
        steps = [self.step(None, None).stage_ms for _ in range(PLAIN_REPS + 2)][2:]
        return {st: statistics.median(s[st] for s in steps) for st in TRAINING_STAGES}

    def kernel_alone_ms(self, launch, reps: int) -> float:
        S, xs = self.S, []
        for _ in range(reps):
            with S.use(S.pre):
                if S.cuda:
                    gpu_spin(KERNEL_SPIN_MS)
                t0 = S.event(S.pre)
                launch()
                t1 = S.event(S.pre)
            self._sync()
            xs.append(S.ms(t0, t1))
        return statistics.median(xs)

    def launcher(self, spec: KernelSpec) -> tuple[FusedGroup, Callable[[], None]]:
        """The spec's fused group and a call that launches it on the preprocessing
        stream (compiled and warmed by its first call)."""
        group, state = self._state(spec)
        numba_stream = self.S.numba(self.S.pre)

        def launch() -> None:
            with self.S.use(self.S.pre):
                state.launch(0, numba_stream)

        return group, launch

    def profile(self, spec: KernelSpec, reps: int, lead_ms: float = 0.0) -> Iterator[dict]:
        """The spec's rows, one per training stage (with `lead_ms`: the kernel resident
        before each stage starts, RESIDENT_COLUMNS)."""
        group, launch = self.launcher(spec)
        launch()  # compile and warm
        self._sync()
        alone = self.kernel_alone_ms(launch, reps)
        kw = kernel_work(spec.pipeline, spec.name, spec.nodes, self.rows, group.grid(),
                         spec.threads, spec.warp_rows, spec.fixed_offsets, spec.source_first)
        regs = group.registers_per_thread() if self.S.cuda else None
        occ = group.occupancy(self.hw.gpu) if self.S.cuda else None
        ops = {op: 0 for op in OpKind}
        for n in spec.nodes:
            ops[spec.pipeline.node_by_name[n].op] += 1
        v = versions()
        for stage in TRAINING_STAGES:
            corun, kernel, lead, steps, ahead = [], [], [], [], 0
            for _ in range(reps):
                t = self.step(stage, launch, lead_ms)
                steps.append(t.stage_ms)
                corun.append(t.stage_ms[stage])
                kernel.append(t.kernel_ms)
                lead.append(t.lead_ms)
                ahead += t.host_ahead
            w = self.work[stage]
            resident = {"kernel_lead_ms": statistics.median(lead)} if lead_ms > 0 else {
                STEP_COLUMN: format_steps({st.value: statistics.median(x[st] for x in steps)
                                           for st in TRAINING_STAGES})}
            yield {
                "gpu": torch.cuda.get_device_name() if self.S.cuda else "cpu",
                "model": self.model.name, "batch": str(self.rows), "kernel": spec.name,
                "stage": stage.value, "pipeline": spec.pipeline.name,
                "features": spec.feature_count, "nodes": len(spec.nodes),
                "chains": group.slots, "has_lists": int(group.has_lists), "rows": self.rows,
                "elements": kw.elements, "int_ops": kw.int_ops, "kernel_bytes": kw.hbm_bytes,
                "blocks": group.grid(), "threads": spec.threads,
                "registers": regs if regs is not None else "",
                "occupancy": occ if occ is not None else "", "warp_rows": int(spec.warp),
                **{f"op_{op.value}": c for op, c in ops.items()},
                **stage_row(w),
                "stage_alone_ms": self.plain_stage_ms[stage],
                "stage_corun_ms": statistics.median(corun), "kernel_alone_ms": alone,
                "kernel_corun_ms": statistics.median(kernel), "host_ahead": ahead / reps,
                "reps": reps,
                "torch": v["torch"], "numba_cuda": v.get("numba-cuda", ""),
                "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                **resident,
            }


class LeadClock(Clock):
    """The profiler's clock for a resident row: at the mark that opens `stage` it
    releases the kernel, then holds the training stream `lead_ms` (a GPU spin) and marks
    again, so the stage is timed from the end of the hold, with the kernel's blocks
    already on the SMs (the hold's interval closes with no stage and counts for none).
    On the CPU the hold is nothing: the kernel has run by then."""

    def __init__(self, device: torch.device, stage: Stage, release: Callable[[Stage, object],
                 None], lead_ms: float) -> None:
        super().__init__(device)
        self.stage, self.release, self.lead_ms = stage, release, lead_ms
        self.opening = TRAINING_STAGES.index(stage)
        """How many marks precede the one that opens `stage` (the first opens emb_fwd)."""
        self.started: object = None
        """The mark the stage's work starts at, after the hold."""

    def mark(self, stage: Stage | None) -> None:
        opens = len(self.marks) == self.opening
        super().mark(stage)
        if opens:
            self.release(self.stage, self.marks[-1][1])
            if self.cuda:
                gpu_spin(self.lead_ms)
            super().mark(None)
            self.started = self.marks[-1][1]


def csv_header(path: Path) -> tuple[str, ...]:
    """The column names on a CSV's first line (none for an empty file)."""
    with path.open(newline="") as f:
        return tuple(next(csv.reader(f), []))


def appendable_header(path: Path, warp_rows: bool, bag_kernel: bool = False
                      ) -> tuple[str, ...] | None:
    """The header rows are appended to `path` under (None: a new file, written with
    COLUMNS); refuses another version's columns and, where `warp_rows` (some kernel
    writes a warp per row) or `bag_kernel` (some stage is the bag kernel's forward),
    columns from before them."""
    if not path.exists() or path.stat().st_size == 0:
        return None
    header = csv_header(path)
    if header not in READABLE_HEADERS:
        raise SpecError(str(path), "its header", "the columns of this corun profile "
                        "(the file is from another version: profile into a new --out)")
    if warp_rows and "warp_rows" not in header:
        raise SpecError(str(path), "its header", "a warp_rows column for kernels that "
                        "write a warp per row (a profile from before it: profile into a "
                        "new --out, or --mappings thread)")
    if bag_kernel and "stage_bag_kernel" not in header:
        raise SpecError(str(path), "its header", "a stage_bag_kernel column for a model "
                        "whose forward is the bag kernel (a profile from before it: "
                        "profile into a new --out)")
    return header


def drop_torn_row(path: Path) -> str | None:
    """Where a run was killed mid-write, the file's last row has no line end: cut it off,
    so the next row is not joined onto it, and return it (None where the file is whole)."""
    if not path.exists() or path.stat().st_size == 0:
        return None
    with path.open("r+b") as f:
        f.seek(-1, 2)
        if f.read(1) == b"\n":
            return None
        f.seek(0)
        data = f.read()
        keep = data.rfind(b"\n") + 1
        f.truncate(keep)
    return data[keep:].decode(errors="replace")


def append_rows(path: Path, rows: Sequence[dict]) -> None:
    """Append rows (with a header for a new file: RESIDENT_COLUMNS for resident rows,
    STEP_COLUMNS otherwise) and flush them to disk; resident and other rows never share a
    file. A torn last row left by a killed run is dropped first, and said on stderr."""
    torn = drop_torn_row(path)
    if torn is not None:
        print(f"corun: {path}: dropped a torn last row ({len(torn)} characters) left by an "
              "interrupted run; it is measured again", file=sys.stderr)
    header = appendable_header(path, any(int(r.get("warp_rows", 0)) for r in rows),
                               any(float(r.get("stage_bag_kernel", 0)) for r in rows))
    resident = any(is_resident(r) for r in rows)
    new = header is None
    header = header or (RESIDENT_COLUMNS if resident else STEP_COLUMNS)
    if resident != ("kernel_lead_ms" in header) or (
            any(r.get(LEAD_ASKED) for r in rows) and LEAD_ASKED not in header):
        raise SpecError(str(path), "its header", "resident rows in a resident*.csv with "
                        "the lead_asked_ms column and other rows in a profile*.csv (corun "
                        "profile --resident picks it; a resident*.csv from before the "
                        "column: profile into a new --out)")
    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header, extrasaction="ignore")
        if new:
            w.writeheader()
        w.writerows(rows)
        f.flush()
