"""The plan executor: train the DLRM while the plan preprocesses the next batch.

One GPU. Three CUDA streams: training (higher priority when the plan says so),
preprocessing, and host-to-device copies. During iteration i, batch i+1's staged
columns (raw inputs, plus any columns the host CPU computed) are copied into one of two
pool sets, and each fused kernel of the plan is launched on the preprocessing stream
behind the CUDA event that opens its planned training stage (kernels planned `before`
the iteration run on the training stream, ahead of stage 0). The pools are then
assembled into the trainer's Batch, which the training stream waits for at the start of
iteration i+1. Every batch is copied back and a random sample of its rows compared
with the NumPy reference before the run goes on: a mismatch stops the run.

On the CPU the same code runs without streams or events (Numba CPU kernels, the host
clock), so CI exercises every step but the timing.
"""

from __future__ import annotations

import functools
import importlib.metadata
import platform
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist

from backend.assembly import (
    Assembler,
    CheckBuffer,
    HostBatch,
    check_batch_rows,
    local_batch,
    output_map,
)
from backend.columns import ColumnData
from backend.cpu_feeder import POOLS, CpuFeeder, page_lock, stage_into, staging_buffers
from backend.data import inputs_of, read_criteo, synthetic_inputs
from backend.distributed import DistributedTrainer, LocalBatch
from backend.faults import faults
from backend.fusion import FusedGroup
from backend.reference import run_reference
from backend.runner import PipelineProgram, trainer_inputs
from backend.streams import HostPoolSet, ReleaseClock, Streams
from backend.trainer import Batch, Clock, Trainer, batch_from_tables
from costmodel.sharding import shard_tables
from spec import (
    BEFORE_ITERATION,
    Hardware,
    Mapping,
    Measurement,
    Model,
    Pipeline,
    Plan,
    SpecError,
    Spread,
    Stage,
    hardware_preset,
    stages_for,
)


@dataclass(frozen=True)
class RunSettings:
    iterations: int = 200
    warmup: int = 20
    distinct_batches: int = 4
    """Raw batches generated (or read) once and cycled; preprocessing reruns each time."""
    check_rows: int = 64
    """Rows of every batch compared with the reference."""
    seed: int = 0
    data: str | None = None
    """A Criteo-format TSV file; synthetic data when None."""
    cpu_workers: int = 16
    """Host worker processes for host-mapped nodes (cpu:N sets it to N)."""

    def __post_init__(self) -> None:
        for name, lo in (("iterations", 1), ("warmup", 0), ("distinct_batches", 1),
                         ("check_rows", 0), ("cpu_workers", 1)):
            v = getattr(self, name)
            if not isinstance(v, int) or v < lo:
                raise SpecError(name, v, f"an integer >= {lo}")


def spread(xs: Sequence[float]) -> Spread:
    return Spread(float(statistics.median(xs)), float(np.percentile(xs, 10)),
                  float(np.percentile(xs, 90)))


@dataclass
class _Raw:
    columns: dict[str, ColumnData]
    labels: np.ndarray
    reference: HostBatch


class Executor:
    """Runs one strategy's plan on one device and measures it."""

    def __init__(self, model: Model, pipeline: Pipeline, plan: Plan, strategy: str,
                 settings: RunSettings, device: torch.device | str = "cuda",
                 replay: bool = False, command: str = "", say=print,
                 trainer: Trainer | None = None, hardware: Hardware | None = None) -> None:
        """`replay` is the `ideal` strategy: reference batches preprocessed ahead of time
        and replayed (the plan must then be empty). `trainer` reuses a built one (a
        benchmark running several strategies on one model). Inside an initialised
        torch.distributed group every rank runs one, on its own batches, with the tables
        sharded over the ranks (`hardware` sizes the balancer; H200s by default)."""
        self.device = torch.device(device)
        self.model, self.pipeline, self.plan = model, pipeline, plan
        self.strategy, self.settings, self.replay = strategy, settings, replay
        self.command, self.say, self.trainer = command, say, trainer
        pipeline.check_model(model)
        if replay and (plan.kernels or plan.cpu_nodes):
            raise SpecError("plan", plan.pipeline, "an empty plan for the ideal strategy")
        if not replay:
            plan.check_pipeline(pipeline)
        group = dist.is_available() and dist.is_initialized()
        self.world = dist.get_world_size() if group else 1
        self.rank = dist.get_rank() if group else 0
        if plan.gpu_count != self.world:
            raise SpecError("plan.gpu_count", plan.gpu_count,
                            f"the number of processes running it ({self.world})")
        if self.world > 1 and (any(k.gpu is not None for k in plan.kernels) or any(
                m is Mapping.OWNER for m in plan.feature_mapping.values())):
            raise SpecError("plan.feature_mapping", "owner", "local or cpu: executing the "
                            "table-owner mapping is not built yet")
        self.hardware = hardware or hardware_preset("h200", self.world)
        self.stages = stages_for(self.world)
        self.rows = model.batch_per_gpu
        stage_pos = {s: i for i, s in enumerate(self.stages)}
        ordered = sorted(enumerate(plan.kernels), key=lambda ik: (
            -1 if ik[1].stage == BEFORE_ITERATION else stage_pos[Stage(ik[1].stage)], ik[0]))
        self.kernels = [k for _, k in ordered]
        self.groups = [FusedGroup(pipeline, [n for n in pipeline.order if n in set(k.nodes)],
                                  k.name, k.blocks, k.threads_per_block) for k in self.kernels]
        self.host_nodes = [n for n in pipeline.order if n in set(plan.cpu_nodes)]
        reads = {c.source for g in self.groups for c in g.chains}
        outputs = set(pipeline.dense_outputs) | {s.node for s in pipeline.sparse_outputs}
        names = [c.name for c in pipeline.inputs] + self.host_nodes
        self.staged = [n for n in names if n in reads or (n in self.host_nodes and n in outputs)]

    # ---------------------------------------------------------------- set-up
    def _raw_batches(self, rng: np.random.Generator) -> list[_Raw]:
        s, p, b = self.settings, self.pipeline, self.rows
        chunks: list[tuple[dict[str, ColumnData], np.ndarray]] = []
        if s.data is None:
            for _ in range(s.distinct_batches):
                cols = synthetic_inputs(p, b, rng)
                chunks.append((cols, (rng.random(b) < 0.25).astype(np.float32)))
        else:
            for chunk in read_criteo(s.data, chunk_rows=b):
                if chunk.rows == b:
                    chunks.append((dict(inputs_of(chunk, p)), chunk.labels.astype(np.float32)))
                if len(chunks) == s.distinct_batches:
                    break
            if not chunks:
                raise SpecError("--data", s.data, f"a file with at least {b} rows (one batch)")
        base = [0] + list(np.cumsum([t.rows for t in self.model.tables])[:-1])
        out = []
        for cols, labels in chunks:
            ref = run_reference(p, cols)
            ti = trainer_inputs(p, ref)
            tables = [(ti.sparse[t.name].values, ti.sparse[t.name].offsets)
                      for t in self.model.tables]
            want = HostBatch.of(batch_from_tables(ti.dense, tables, base, labels))
            out.append(_Raw({**cols, **{k: v for k, v in ref.items()
                                        if k in p.node_by_name}}, labels, want))
        return out

    def _build(self, raws: list[_Raw]) -> None:
        cuda = self.device.type == "cuda"
        capacity = {n: max(len(r.columns[n].values) for r in raws) for n in self.staged}
        first = {n: raws[0].columns[n] for n in self.staged}
        programs = [PipelineProgram(self.pipeline, self.groups, first, capacity,
                                    self.host_nodes)
                    for _ in range(2)]
        self.layout = programs[0].layout
        self.sizes = programs[0].staged_size
        with faults("copying the pools to the GPU"):
            self.sets = [p.to_device() if cuda else HostPoolSet(p) for p in programs]
        self.omap = output_map(self.layout, self.pipeline, self.model)
        self.assemblers = [Assembler(self.omap, s.views) for s in self.sets]
        self.checks = [CheckBuffer(self.omap, cuda) for _ in range(2)]
        self.labels = [torch.zeros(self.rows, device=self.device) for _ in range(2)]
        self.raw_labels = [torch.from_numpy(r.labels).pin_memory() if cuda else
                           torch.from_numpy(r.labels) for r in raws]
        self.staging = []
        if not self.host_nodes:
            for r in raws:
                bufs = staging_buffers(self.sizes)
                if cuda:
                    bufs = {k: v.pin_memory() for k, v in bufs.items()}
                stage_into(self.layout, bufs, {n: r.columns[n] for n in self.staged})
                self.staging.append(bufs)

    # ---------------------------------------------------------------- one batch
    def _stage(self, i: int) -> None:
        """Copy batch i's staged columns and labels into pool set i % 2."""
        S, k = self.S, i % 2
        raw = i % len(self.raws)
        bufs = self.feeder.get(i) if self.feeder is not None else self.staging[raw]
        with S.use(S.copy):
            S.wait(S.copy, self.pool_free[k])
            t0 = S.event(S.copy)
            for name in POOLS:
                n = self.sizes[name]
                if n:
                    self.sets[k].views[name][:n].copy_(bufs[name][:n], non_blocking=True)
            self.labels[k].copy_(self.raw_labels[raw], non_blocking=True)
            self.copied[i] = S.event(S.copy)
        self.spans["h2d"].append((i, t0, self.copied[i]))

    def _launch(self, i: int, index: int, stream) -> None:
        S = self.S
        with S.use(stream):
            S.wait(stream, self.copied[i])
            t0 = S.event(stream)
            with faults(f"launching fused kernel {self.kernels[index].name!r} "
                         f"({len(self.kernels[index].nodes)} op nodes)"):
                self.sets[i % 2].launch(index, S.numba(stream))
            self.spans[self.kernels[index].name].append((i, t0, S.event(stream)))

    def _release(self, i: int | None, stage: Stage, opened) -> None:
        """Stage `stage` of the current iteration opened (event `opened`): launch the
        kernels planned for it on the preprocessing stream, for batch i."""
        if i is None:
            return
        S = self.S
        for index, k in enumerate(self.kernels):
            if k.stage == stage.value:
                S.wait(S.pre, opened)
                self._launch(i, index, S.pre)

    def _finish(self, i: int, before_done) -> Batch:
        """Assemble batch i on the preprocessing stream (the host waits for its id
        counts), start its copy back for the check."""
        S, k = self.S, i % 2
        with S.use(S.pre):
            S.wait(S.pre, self.copied[i])
            S.wait(S.pre, before_done)
            t0 = S.event(S.pre)
            stacked = self.assemblers[k].offsets()
            h0 = time.perf_counter()
            S.sync(S.event(S.pre))
            self.host_ms["wait"].append((i, (time.perf_counter() - h0) * 1e3))
            if self.feeder is not None:
                self.feeder.release(i)
            with faults(f"assembling batch {i}"):
                batch = self.assemblers[k].batch(stacked, self.labels[k])
            self.pool_free[k] = S.event(S.pre)
            self.checks[k].copy_from(batch)
            self.checked[i] = S.event(S.pre)
        self.spans["assemble"].append((i, t0, self.pool_free[k]))
        if S.cuda:
            for t in (batch.dense, batch.ids, batch.offsets, batch.labels):
                t.record_stream(S.train)
        return self._for_trainer(batch, self.assemblers[k].totals.tolist())

    def _for_trainer(self, batch: Batch, counts: list[int]) -> Batch | LocalBatch:
        """The batch in the form the trainer takes (per-table pieces on several GPUs)."""
        if self.world == 1:
            return batch
        with self.S.use(self.S.pre):
            local = local_batch(batch, len(self.model.tables), counts, self._row_base())
        if self.S.cuda:
            for t in local.lengths:
                t.record_stream(self.S.train)
        return local

    def _row_base(self) -> list[int]:
        return [0] + [int(x) for x in np.cumsum([t.rows for t in self.model.tables])[:-1]]

    def _check(self, i: int) -> int:
        if self.replay or self.settings.check_rows == 0:
            return 0
        self.S.sync(self.checked[i])
        got = self.checks[i % 2].host()
        pick = np.sort(self.rng.choice(self.rows, min(self.settings.check_rows, self.rows),
                                       replace=False))
        return check_batch_rows(self.omap, got, self.raws[i % len(self.raws)].reference, pick)

    # ---------------------------------------------------------------- the run
    def run(self) -> Measurement:
        s = self.settings
        self.rng = np.random.default_rng([s.seed, self.rank])
        self.say(f"{self.strategy}: preparing {s.distinct_batches} batch(es) of {self.rows} "
                 "rows and their reference outputs ...")
        self.raws = self._raw_batches(self.rng)
        cuda = self.device.type == "cuda"
        self.S = Streams(self.device, self.plan.training_priority_high)
        if self.trainer is None:
            with faults(f"building the {self.model.name} trainer"):
                if self.world > 1:
                    sharding = shard_tables(self.model, self.hardware, self.plan.table_owner
                                            or None)
                    owner = [sharding.owner[t.name] for t in self.model.tables]
                    self.trainer = DistributedTrainer(self.model, owner, self.device, s.seed)
                else:
                    self.trainer = Trainer(self.model, self.device, s.seed)
        total = s.warmup + s.iterations
        self.feeder = None
        try:
            if self.replay:
                return self._run_replay(total)
            self._build(self.raws)
            if self.host_nodes:
                # compile once here: the workers then load the kernels from Numba's cache
                gpu_nodes = [n for n in self.pipeline.order if n not in set(self.host_nodes)]
                PipelineProgram(self.pipeline, [FusedGroup(self.pipeline, self.host_nodes)],
                                {c.name: self.raws[0].columns[c.name]
                                 for c in self.pipeline.inputs}, elsewhere=gpu_nodes).run_cpu()
                self.say(f"starting {s.cpu_workers} host worker process(es) ...")
                self.feeder = CpuFeeder(s.cpu_workers, self.pipeline, self.host_nodes,
                                        self.staged, self.layout, self.sizes,
                                        [{c.name: r.columns[c.name] for c in self.pipeline.inputs}
                                         for r in self.raws], total,
                                        pin=page_lock if cuda else None)
            return self._run_pipelined(total)
        finally:
            if self.feeder is not None:
                self.feeder.close()

    def _run_replay(self, total: int) -> Measurement:
        S = self.S
        batches = []
        for r in self.raws:
            b = Batch(*(torch.from_numpy(a).to(self.device) for a in
                        (r.reference.dense, r.reference.ids, r.reference.offsets)),
                      torch.from_numpy(r.labels).to(self.device))
            t = len(self.model.tables)
            counts = np.diff(r.reference.offsets[:: self.rows])[:t].tolist()
            batches.append(self._for_trainer(b, counts))
        tops, afters, ends, clocks = [], [], [], []
        self.host_ms = {"step": []}
        for i in range(total):
            t0 = time.perf_counter()
            with S.use(S.train):
                tops.append(S.event(S.train))
                afters.append(tops[-1])
                clock = Clock(self.device)
                self.trainer.step(batches[i % len(batches)], clock)
                ends.append(S.event(S.train))
                clocks.append(clock)
            self.host_ms["step"].append((i, (time.perf_counter() - t0) * 1e3))
        with S.use(S.train):
            tops.append(S.event(S.train))
        return self._measure(tops, afters, ends, clocks, checked=0)

    def _run_pipelined(self, total: int) -> Measurement:
        S = self.S
        self.spans: dict[str, list] = {"h2d": [], "assemble": []}
        self.spans.update({k.name: [] for k in self.kernels})
        self.copied: dict[int, object] = {}
        self.checked: dict[int, object] = {}
        self.pool_free: list[object] = [None, None]
        self.host_ms: dict[str, list] = {k: [] for k in ("stage", "step", "wait", "finish",
                                                         "check")}
        before = [i for i, k in enumerate(self.kernels) if k.stage == BEFORE_ITERATION]
        clock = time.perf_counter

        def host(step: str, i: int, t0: float) -> float:
            now = clock()
            self.host_ms[step].append((i, (now - t0) * 1e3))
            return now

        # batch 0: preprocessed before the loop, every kernel on the preprocessing stream
        self.say(f"{self.strategy}: compiling and running batch 0 ...")
        self._stage(0)
        for index in range(len(self.kernels)):
            self._launch(0, index, S.pre)
        batch = self._finish(0, None)
        checked = self._check(0)
        tops, afters, ends, clocks = [], [], [], []
        report = max(1, total // 10)
        for i in range(total):
            nxt = i + 1 if i + 1 < total else None
            t0 = clock()
            if nxt is not None:
                self._stage(nxt)
            t0 = host("stage", i, t0)
            with S.use(S.train):
                tops.append(S.event(S.train))
                S.wait(S.train, self.pool_free[i % 2])  # batch i assembled
                afters.append(S.event(S.train))
                before_done = None
                if nxt is not None and before:
                    for index in before:
                        self._launch(nxt, index, S.train)
                    before_done = S.event(S.train)
                timer = ReleaseClock(self.device, functools.partial(self._release, nxt),
                                     self.stages)
                with faults(f"training iteration {i}"):
                    self.trainer.step(batch, timer)
                ends.append(S.event(S.train))
                clocks.append(timer)
            t0 = host("step", i, t0)
            if nxt is not None:
                batch = self._finish(nxt, before_done)
            t0 = host("finish", i, t0)
            checked += self._check(i) if i > 0 else 0
            host("check", i, t0)
            if (i + 1) % report == 0:
                self.say(f"  iteration {i + 1}/{total}")
        with S.use(S.train):
            tops.append(S.event(S.train))
        return self._measure(tops, afters, ends, clocks, checked)

    def _measure(self, tops, afters, ends, clocks, checked: int) -> Measurement:
        S, s = self.S, self.settings
        if S.cuda:
            torch.cuda.synchronize()
        w, total = s.warmup, s.warmup + s.iterations
        timed = range(w, total)
        iters = [S.ms(tops[i], tops[i + 1]) for i in timed]
        busy = [S.ms(afters[i], ends[i]) for i in timed]
        span_ms = S.ms(tops[w], tops[total])
        stages: dict[str, list[float]] = {}
        for i in timed:
            for st, ms in clocks[i].stage_ms().items():
                stages.setdefault(st.value, []).append(ms)
        kernels: dict[str, Spread] = {}
        extra: dict[str, Spread] = {}
        for name, spans in getattr(self, "spans", {}).items():
            xs = [S.ms(a, b) for i, a, b in spans if w < i <= total]
            if xs:
                (extra if name in ("h2d", "assemble") else kernels)[name] = spread(xs)
        stage_spreads = {k: spread(v) for k, v in stages.items()}
        host = {}
        for name, xs in getattr(self, "host_ms", {}).items():
            timed_xs = [ms for i, ms in xs if w <= i < total]
            if timed_xs:
                host[name] = spread(timed_xs)
        stage_spreads.update(extra)
        from sim.simulate import git_commit

        return Measurement(
            strategy=self.strategy, model=self.model.name, pipeline=self.pipeline.name,
            hardware=(torch.cuda.get_device_name(self.device) if S.cuda else
                      f"cpu {platform.machine()}"),
            gpu_count=self.world, batch_per_gpu=self.rows, iterations=s.iterations,
            warmup=s.warmup, iteration=spread(iters),
            throughput_samples_per_s=self.world * self.rows * s.iterations / span_ms * 1e3,
            stall_ms_per_iteration=float(np.mean([a - b for a, b in zip(iters, busy)])),
            stages=stage_spreads, kernels=kernels, checked_rows=checked,
            versions=versions(), git_commit=git_commit(), command=self.command,
            notes=self._notes(), host=host, plan=self.plan)

    def _notes(self) -> tuple[str, ...]:
        notes = [f"the timings of rank 0 of {self.world}"] if self.world > 1 else []
        notes += ["stall = iteration time minus the training stream's busy time (from its "
                 "inputs being ready to the optimizer's end): data waits and host gaps"]
        if self.replay:
            notes.append("ideal: the reference's batches, preprocessed ahead and replayed "
                         "(equal to the reference by construction, so not re-checked)")
        else:
            notes.append(f"h2d and assemble are listed with the stages; {self.settings.check_rows}"
                         " random rows of every batch were compared with the NumPy reference")
        if self.host_nodes:
            notes.append(f"{len(self.host_nodes)} op node(s) on {self.settings.cpu_workers} "
                         "host worker process(es), one thread each")
        return tuple(notes)


def versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "torch": torch.__version__,
           "numpy": np.__version__}
    for pkg in ("numba", "numba-cuda"):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            pass
    if torch.cuda.is_available():
        out["cuda"] = str(torch.version.cuda)
    return out
