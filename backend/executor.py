"""The plan executor: train the DLRM while the plan preprocesses the next batch.

One GPU. Three CUDA streams: training (higher priority when the plan says so),
preprocessing, and host-to-device copies. Once the host has launched step i-1, batch
i+a's staged columns (raw inputs, plus any columns the host CPU computed) are copied into
one of a+1 pool sets, a being the plan's `batches_ahead`; during iteration i each fused
kernel of the plan is launched on the preprocessing stream behind the CUDA event that
opens its planned training stage (kernels planned `before` the iteration run on the
training stream, ahead of stage 0).
Right after a lane's last kernel is launched, the assembly of its pools into the
trainer's Batch is queued behind it. Once the host has launched step i it waits for
batch i+1's Batch (it needs the id counts to slice it): with a = 1 that batch's kernels
co-run with step i, so the host launches step i+1 only when they are done; with a = 2
they co-ran with step i-1, so the host runs up to a step ahead of the GPU. The training
stream waits for batch i+1 at the start of iteration i+1. Every value of the warmup's
batches (each distinct raw batch at least once; with RunSettings.check_timed every
batch) is compared with the NumPy reference on the device (on the GPU by the kernel that
assembles it; batch 0 also on the host), and the host reads one flag: a mismatch stops
the run, naming the feature and row. That batch work (build, check, stage) follows
each step on the launching thread, or, with RunSettings.feed_thread, runs on a second
host thread during the step's backward (backend/feed_thread.py).

On the CPU the same code runs without streams or events (Numba CPU kernels, the host
clock), so CI exercises every step but the timing.
"""

from __future__ import annotations

import functools
import gc
import importlib.metadata
import platform
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
from corun.backend.assembly import HostBatch, table_pieces
from corun.backend.columns import ColumnData, take_rows
from corun.backend.cpu_feeder import CpuFeeder, page_lock
from corun.backend.data import inputs_of, read_criteo, synthetic_inputs
from corun.backend.distributed import DistributedTrainer, LocalBatch
from corun.backend.embedding_sgd import UPDATE_BLOCKS_PER_SM
from corun.backend.faults import faults
from corun.backend.feed_thread import make_feed
from corun.backend.fusion import FusedGroup
from corun.backend.graphed import make_trainer
from corun.backend.lane import Lane
from corun.backend.reference import run_reference
from corun.backend.runner import PipelineProgram, trainer_batch
from corun.backend.settings import RunSettings
from corun.backend.streams import ReleaseClock, Streams
from corun.backend.trainer import Batch, Clock, Trainer
from corun.spec import (
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
from corun.spec.measurement import ASSEMBLY_STREAM_NOTE, CHECKED_EVERY, GRAPHS_NOTE, UNCHECKED
from corun.spec.provenance import host_id
from corun.spec.sharding import shard_tables


def freeze_heap() -> None:
    """Set every object made so far aside from Python's cyclic collector (gc.freeze; the
    run undoes it when it ends). A full collection otherwise walks every object the
    trainer, Numba and the plan's kernels made, and stalls one iteration: on the H200,
    wide-2x b4096's corun plan stalled 359-369 ms at the same timed iteration in two runs;
    frozen, no iteration went above 1.7x its median in 45 cases."""
    gc.collect()
    gc.freeze()


def spread(xs: Sequence[float]) -> Spread:
    return Spread(float(statistics.median(xs)), float(np.percentile(xs, 10)),
                  float(np.percentile(xs, 90)))


@dataclass
class _Raw:
    """One raw batch over the global rows (all ranks' batches, rank order), its labels
    and the NumPy reference's columns."""

    columns: dict[str, ColumnData]
    labels: np.ndarray
    reference: dict[str, ColumnData]


class Executor:
    """Runs one strategy's plan on one device and measures it."""

    def __init__(self, model: Model, pipeline: Pipeline, plan: Plan, strategy: str,
                 settings: RunSettings, device: torch.device | str = "cuda",
                 replay: bool = False, command: str = "", say=print,
                 trainer: Trainer | None = None, hardware: Hardware | None = None,
                 inputs: dict | None = None, iterations_done=None) -> None:
        """`replay` is the `ideal` strategy: reference batches preprocessed ahead of time
        and replayed (the plan must then be empty). `trainer` reuses a built one (a
        benchmark running several strategies on one model); so does `inputs`, a dict that
        keeps the raw batches and their references by what makes them (pipeline, rows,
        seed, count, data file) for the next Executor of the same batches. Inside an
        initialised torch.distributed group every rank runs one, on its own rows of each
        global batch, with the tables sharded over the ranks (`hardware` sizes the
        balancer; H200s by default); a table's owner preprocesses its owner-mapped
        features over the global batch. `iterations_done(done, total)` hears of the
        iterations run at each tenth of them, between steps (default: a `say` line)."""
        self.device = torch.device(device)
        self.model, self.pipeline, self.plan = model, pipeline, plan
        self.strategy, self.settings, self.replay = strategy, settings, replay
        self.command, self.say, self.trainer = command, say, trainer
        self.iterations_done = iterations_done or (
            lambda done, total: say(f"  iteration {done}/{total}"))
        self.inputs = inputs
        pipeline.check_model(model)
        if replay and (plan.kernels or plan.cpu_nodes):
            raise SpecError("plan", plan.pipeline, "an empty plan for the ideal strategy")
        if not replay:
            plan.check_pipeline(pipeline)
            gpu = (hardware.gpu if hardware is not None else hardware_preset("h200").gpu)
            plan.check_model(model, gpu.sm_count, gpu.max_blocks_per_sm)
        group = dist.is_available() and dist.is_initialized()
        self.world = dist.get_world_size() if group else 1
        self.rank = dist.get_rank() if group else 0
        if plan.gpu_count != self.world:
            raise SpecError("plan.gpu_count", plan.gpu_count,
                            f"the number of processes running it ({self.world})")
        model.check_gpu_count(self.world)
        if model.cuda_graphs and self.device.type != "cuda":
            raise SpecError("model.cuda_graphs", True, "off on a CPU (CUDA graphs need a GPU)")
        on_gpu = self.device.type == "cuda" and self.world == 1
        self.pre_cap = settings.preprocess_sm_cap
        self.cap_left_out = ""  # why the plan's cap did not run, for the notes (_plan_cap)
        if self.pre_cap is None:  # as the plan says; a plan's cap means nothing on a CPU
            self.pre_cap = self._plan_cap(plan.preprocess_sm_cap) if on_gpu else 0
        if self.pre_cap and not on_gpu:
            raise SpecError("preprocess_sm_cap", self.pre_cap,
                            "0 on a CPU or several GPUs (the SMs of one GPU are split)")
        if self.pre_cap and settings.preprocess_sm_cap:  # a flag's cap is held to
            why = _cap_not_runnable(self.device, self.pre_cap)
            if why:
                raise SpecError("preprocess_sm_cap", self.pre_cap, f"0 here: {why}")
        self.update_grid = settings.update_blocks_per_sm
        """The fused update's blocks an SM (0: a thread per bag and column; None: the
        trainer's default): the settings', else the plan's (its 0: the default)."""
        if self.update_grid is None:
            self.update_grid = plan.update_blocks_per_sm or None
        if self.update_grid is not None and not model.embedding_update.fused:
            raise SpecError("update_blocks_per_sm", self.update_grid,
                            f"unset for model {model.name!r}: its embedding update "
                            f"({model.embedding_update.value}) is not the fused kernel")
        self.hardware = hardware or hardware_preset("h200", self.world)
        self.sharding = shard_tables(model, self.hardware, plan.table_owner or None)
        self.stages = stages_for(self.world)
        self.rows = model.batch_per_gpu
        stage_pos = {s: i for i, s in enumerate(self.stages)}
        ordered = [k for _, k in sorted(enumerate(plan.kernels), key=lambda ik: (
            -1 if ik[1].stage == BEFORE_ITERATION else stage_pos[Stage(ik[1].stage)],
            ik[0]))]
        self.host_nodes = [n for n in pipeline.order if n in set(plan.cpu_nodes)]
        self.lanes = self._make_lanes(ordered)
        self.kernels = [(lane, i, k) for lane in self.lanes for i, k in enumerate(lane.kernels)]
        self.released: dict[str, list[tuple[Lane, int]]] = {}
        """Per training stage, the (lane, kernel index) it releases, in launch order: a
        step calls `_release` at each of its stages, most of which release nothing."""
        for lane, index, k in self.kernels:
            if k.stage != BEFORE_ITERATION:
                self.released.setdefault(k.stage, []).append((lane, index))

    def _make_lanes(self, ordered: list) -> list[Lane]:
        """The local lane (kernels every GPU runs over its rows, host nodes) and, on a
        rank owning owner-mapped tables, the owner lane over the global batch."""
        table_index = {t.name: k for k, t in enumerate(self.model.tables)}
        table_of = {s.node: s.table for s in self.pipeline.sparse_outputs}
        owned_kernels = [k for k in ordered if k.gpu is not None] if self.world > 1 else []
        self.owner_mapped = sorted(
            table_index[table_of[f]] for f, m in self.plan.feature_mapping.items()
            if m is Mapping.OWNER and f in table_of) if self.world > 1 else []
        owner_nodes = {n for k in owned_kernels for n in k.nodes}
        feature = self.pipeline.feature_of()
        for n in owner_nodes:
            src = self.pipeline.node_by_name[n].input
            if src in set(self.host_nodes):
                raise SpecError("plan.cpu_nodes", src, f"a node not read by owner-mapped "
                                f"node {n!r} (owner lanes read raw columns only)")
        local_tables = [k for k in range(len(self.model.tables)) if k not in self.owner_mapped]
        local_kernels = [k for k in ordered if k not in owned_kernels]
        lanes = [Lane("local", self.pipeline, self.model, local_kernels, self.host_nodes,
                      self.host_nodes + sorted(owner_nodes), local_tables, True)]
        mine = [k for k in owned_kernels if k.gpu == self.rank]
        if mine:
            mine_tables = [k for k in self.owner_mapped
                           if self.sharding.owner[self.model.tables[k].name] == self.rank]
            inside = {n for k in mine for n in k.nodes}
            for n in inside:
                t = table_of.get(feature[n])
                if t is None or table_index[t] not in mine_tables:
                    raise SpecError("plan.kernels", n, f"a node of a feature whose table "
                                    f"rank {self.rank} owns and preprocesses")
            lanes.append(Lane("owner", self.pipeline, self.model, mine, [],
                              [n for n in self.pipeline.order if n not in inside],
                              mine_tables, False))
        return lanes

    # ---------------------------------------------------------------- set-up
    def _raw_batches(self) -> list[_Raw]:
        """Global batches (world x rows), generated with the same seed on every rank or
        read from the Criteo file, each with its reference."""
        s, p = self.settings, self.pipeline
        g = self.rows * self.world
        rng = np.random.default_rng(s.seed)
        chunks: list[tuple[dict[str, ColumnData], np.ndarray]] = []
        if s.data is None:
            for _ in range(s.distinct_batches):
                cols = synthetic_inputs(p, g, rng)
                chunks.append((cols, (rng.random(g) < 0.25).astype(np.float32)))
        else:
            for chunk in read_criteo(s.data, chunk_rows=g):
                if chunk.rows == g:
                    chunks.append((dict(inputs_of(chunk, p)), chunk.labels.astype(np.float32)))
                if len(chunks) == s.distinct_batches:
                    break
            if not chunks:
                raise SpecError("--data", s.data, f"a file with at least {g} rows (one batch "
                                f"of {self.rows} rows per GPU)")
        return [_Raw(cols, labels, {k: v for k, v in run_reference(p, cols).items()
                                    if k in p.node_by_name}) for cols, labels in chunks]

    def _mine(self, raw: _Raw) -> tuple[dict[str, ColumnData], dict[str, ColumnData],
                                        np.ndarray]:
        """This rank's rows of a global batch: raw columns, reference columns, labels."""
        if self.world == 1:
            return raw.columns, raw.reference, raw.labels
        rows = np.arange(self.rank * self.rows, (self.rank + 1) * self.rows)
        return ({k: take_rows(v, rows) for k, v in raw.columns.items()},
                {k: take_rows(v, rows) for k, v in raw.reference.items()}, raw.labels[rows])

    def _build(self) -> None:
        for lane in self.lanes:
            cols, refs, labels = [], [], []
            for raw in self.raws:
                if lane.name == "local":
                    c, r, lab = self._mine(raw)
                else:
                    c, r, lab = raw.columns, raw.reference, raw.labels
                cols.append({**c, **r})
                labels.append(lab)
                refs.append(HostBatch.of(trainer_batch(self.pipeline, self.model, r, lab,
                                                       lane.tables, lane.dense)))
            lane.build(cols, labels, refs, self.device,
                       staged_ahead=not (lane.host_nodes and lane.name == "local"),
                       check=self.settings.check, slots=self.plan.batches_ahead + 1,
                       compared_batches=self.settings.compared_batches(
                           self.plan.batches_ahead + 1),
                       ids_per_thread=self.settings.assembly_ids_per_thread,
                       graphs=self.settings.preprocess_graphs,
                       capture_sides=self.S.capture_sides())

    # ---------------------------------------------------------------- one batch
    def _stage(self, i: int) -> None:
        """Copy batch i's staged columns into every lane's pool set for batch i."""
        for lane in self.lanes:
            bufs = self.feeder.get(i) if self.feeder is not None and lane.name == "local" \
                else None
            t0, t1 = lane.stage(self.S, i, bufs)
            self.spans["h2d" + lane.suffix].append((i, t0, t1))

    def _launch(self, i: int, lane: Lane, index: int, stream) -> None:
        """Launch a lane's kernel for batch i; its GPU span and the host time its launch
        took (`kernels`, summed by batch: a fused kernel's launch cost measured directly,
        costmodel/host_fit.py) are kept."""
        t = time.perf_counter()
        t0, t1 = lane.launch(self.S, i, index, stream)
        self.host_ms["kernels"].append((i, (time.perf_counter() - t) * 1e3))
        self.spans[lane.kernels[index].name].append((i, t0, t1))

    def _release(self, i: int | None, stage: Stage, opened) -> None:
        """Stage `stage` of the current iteration opened (event `opened`): launch the
        kernels planned for it on the preprocessing stream, for batch i, and the assembly
        of each lane whose last kernel that was."""
        if i is None or stage.value not in self.released:
            return
        S = self.S
        S.wait(S.pre, opened)
        for lane, index in self.released[stage.value]:
            self._launch(i, lane, index, S.pre)
        self._assemble(i, stage.value)

    def _assemble(self, i: int, after: str | None) -> None:
        """Enqueue batch i's assembly in the lanes whose kernels all come at or before
        `after` (a stage or BEFORE_ITERATION; a lane without kernels counts as before
        the iteration), or with `after` None in every lane not yet enqueued."""
        for lane in self.lanes:
            last = lane.kernels[-1].stage if lane.kernels else BEFORE_ITERATION
            if i not in lane.opened and (after is None or last == after):
                lane.assemble(self.S, i, *self.assembly_waits)

    def _finish(self, i: int) -> Batch | LocalBatch:
        """Batch i from every lane (enqueued by `_assemble`, the rest now), in the form
        the trainer takes; without waiting for its id count where the model need not
        (Model.waits_for_id_counts: `check` counts it)."""
        self._assemble(i, None)
        batches, counts = [], []
        for lane in self.lanes:
            batch, n, start = lane.finish(self.S, i,
                                          lambda ms: self.host_ms["wait"].append((i, ms)),
                                          counted=self.model.waits_for_id_counts(self.world))
            batches.append(batch)
            counts.append(n)
            self.spans["assemble" + lane.suffix].append(
                (i, start, lane.pool_free[i % lane.slots]))
            if self.feeder is not None and lane.name == "local":
                self.feeder.release(i)
        self.ready[i] = [lane.pool_free[i % lane.slots] for lane in self.lanes]
        if self.world == 1:
            return batches[0]
        return self._local_batch(batches, counts)

    def _local_batch(self, batches: Sequence[Batch], counts: Sequence[list[int]]
                     ) -> LocalBatch:
        """The distributed trainer's batch: local lane tables per table, owner lane
        tables (global rows) in `owned`, empty pieces for tables others preprocess."""
        t = len(self.model.tables)
        empty = torch.zeros(0, dtype=torch.int64, device=self.device)
        ids, lengths, owned = [empty] * t, [empty] * t, {}
        with self.S.use(self.S.assembly):
            for lane, batch, c in zip(self.lanes, batches, counts):
                pieces, lens = table_pieces(batch, c)
                if self.S.cuda:  # made on the assembly stream, read by training
                    lens.record_stream(self.S.train)
                for k, p, n in zip(lane.tables, pieces, lens.unbind(0)):
                    if lane.name == "local":
                        ids[k], lengths[k] = p, n
                    else:
                        owned[k] = (p, n)
                if lane.name == "local":
                    local = batch
        return LocalBatch(local.dense, local.labels, ids, lengths, owned)

    def _check(self, i: int) -> int:
        if self.replay:
            return 0
        return sum(lane.check(self.S, i) for lane in self.lanes)

    # ---------------------------------------------------------------- the run
    def run(self) -> Measurement:
        s = self.settings
        if self.trainer is None:
            # first, before the batches and the streams: built later in the process, the
            # heavy-fused table's fused update (atomics) ran 3.04-3.05 ms a step on the
            # H200 against 2.85 built first
            with faults(f"building the {self.model.name} trainer"):
                if self.world > 1:
                    owner = [self.sharding.owner[t.name] for t in self.model.tables]
                    self.trainer = DistributedTrainer(self.model, owner, self.device, s.seed,
                                                      self.owner_mapped)
                else:
                    self.trainer = make_trainer(self.model, self.device, s.seed)
        key = (repr(self.pipeline), self.rows * self.world, s.seed, s.distinct_batches, s.data)
        if self.inputs is not None and key in self.inputs:
            self.say(f"{self.strategy}: the batches and references of an earlier case")
            self.raws = self.inputs[key]
        else:
            self.say(f"{self.strategy}: preparing {s.distinct_batches} batch(es) of "
                     f"{self.rows} rows{f' per GPU x {self.world}' if self.world > 1 else ''}"
                     " and their reference outputs ...")
            self.raws = self._raw_batches()
            if self.inputs is not None:
                self.inputs[key] = self.raws
        cuda = self.device.type == "cuda"
        self.S = Streams(self.device, self.plan.training_priority_high,
                         self.plan.assembly_stream if s.assembly_stream is None
                         else s.assembly_stream, self.pre_cap)
        self.trainer.begin_run()
        self.trainer.update_max_blocks = self._update_max_blocks()
        total = s.warmup + s.iterations
        self.feeder = None
        try:
            if self.replay:
                return self._run_replay(total)
            self._build()
            local = self.lanes[0]
            if local.host_nodes:
                # compile once here: the workers then load the kernels from Numba's cache
                gpu_nodes = [n for n in self.pipeline.order if n not in set(self.host_nodes)]
                mine = [self._mine(r)[0] for r in self.raws]
                PipelineProgram(self.pipeline, [FusedGroup(self.pipeline, self.host_nodes)],
                                {c.name: mine[0][c.name] for c in self.pipeline.inputs},
                                elsewhere=gpu_nodes).run_cpu()
                self.say(f"starting {s.cpu_workers} host worker process(es) ...")
                self.feeder = CpuFeeder(s.cpu_workers, self.pipeline, self.host_nodes,
                                        local.staged, local.layout, local.sizes,
                                        [{c.name: m[c.name] for c in self.pipeline.inputs}
                                         for m in mine], total,
                                        depth=self.plan.batches_ahead + 1,
                                        pin=page_lock if cuda else None)
            return self._run_pipelined(total)
        finally:
            gc.unfreeze()
            if self.feeder is not None:
                self.feeder.close()

    def _run_replay(self, total: int) -> Measurement:
        S = self.S
        batches = []
        for raw in self.raws:
            _, ref, labels = self._mine(raw)
            host = trainer_batch(self.pipeline, self.model, ref, labels)
            b = host.to(self.device)
            if self.world > 1:
                counts = np.diff(host.offsets.numpy()[:: self.rows]).tolist()
                pieces, lens = table_pieces(b, counts)
                b = LocalBatch(b.dense, b.labels, pieces, list(lens.unbind(0)))
            batches.append(b)
        with S.use(S.train):
            self.trainer.prepare(batches[0])
        tops, afters, ends, clocks = [], [], [], []
        self.host_ms = {"step": []}
        freeze_heap()
        for i in range(total):
            t0 = time.perf_counter()
            with S.use(S.train):
                tops.append(S.event(S.train))
                afters.append(tops[-1])
                clock = Clock(self.device, S.train)
                self.trainer.step(batches[i % len(batches)], clock)
                ends.append(S.event(S.train))
                clocks.append(clock)
            self.host_ms["step"].append((i, (time.perf_counter() - t0) * 1e3))
        with S.use(S.train):
            tops.append(S.event(S.train))
        return self._measure(tops, afters, ends, clocks, checked=0)

    def _run_pipelined(self, total: int) -> Measurement:
        S = self.S
        self.spans: dict[str, list] = {}
        for lane in self.lanes:
            self.spans.update({"h2d" + lane.suffix: [], "assemble" + lane.suffix: []})
        self.spans.update({k.name: [] for _, _, k in self.kernels})
        self.ready: dict[int, list] = {}
        self.host_ms: dict[str, list] = {k: [] for k in ("stage", "step", "wait", "finish",
                                                         "check", "join", "kernels")}
        before = [(lane, i) for lane, i, k in self.kernels if k.stage == BEFORE_ITERATION]
        clock = time.perf_counter
        ahead = self.plan.batches_ahead

        def host(step: str, i: int, t0: float) -> float:
            now = clock()
            self.host_ms[step].append((i, (now - t0) * 1e3))
            return now

        # batches 0 .. ahead-1: preprocessed before the loop, every kernel on the
        # preprocessing stream
        self.say(f"{self.strategy}: compiling and running batch 0 ...")
        self.assembly_waits = (None, None)
        batches: dict[int, Batch | LocalBatch] = {}
        for b in range(min(ahead, total)):
            self._stage(b)
            for lane, index, _ in self.kernels:
                self._launch(b, lane, index, S.pre)
            batches[b] = self._finish(b)
        checked = [self._check(0)]
        if ahead < total:
            self._stage(ahead)
        if total:
            with S.use(S.train):
                for ready in self.ready[0]:  # batch 0 assembled (the loop waits again)
                    S.wait(S.train, ready)
                self.trainer.prepare(batches[0])

        def batch_work(i: int) -> None:
            """Besides step i: batch i + 1 from its lanes, batch i checked, and batch
            i + 1 + ahead staged (into batch i - 1's pool set, whose assembly is done)."""
            t0 = clock()
            if ahead <= i + 1 < total:
                batches[i + 1] = self._finish(i + 1)
            t0 = host("finish", i, t0)
            checked[0] += self._check(i) if i > 0 else 0
            t0 = host("check", i, t0)
            if i + 1 + ahead < total:
                self._stage(i + 1 + ahead)
            host("stage", i, t0)

        feed = make_feed(self.settings.feed_thread, self.device)
        trigger = self._feed_trigger() if feed.threaded else None
        tops, afters, ends, clocks = [], [], [], []
        report = max(1, total // 10)
        freeze_heap()
        try:
            for i in range(total):
                far = i + ahead if i + ahead < total else None  # preprocessed during step i
                t0 = clock()
                with S.use(S.train):
                    tops.append(S.event(S.train))
                    for ready in self.ready.pop(i):  # batch i assembled
                        S.wait(S.train, ready)
                    afters.append(S.event(S.train))
                    before_done = None
                    if far is not None and before:
                        for lane, index in before:
                            self._launch(far, lane, index, S.train)
                        before_done = S.event(S.train)
                    # batch far reuses batch i - 1's buffers: its assembly waits for step
                    # i - 1
                    self.assembly_waits = (before_done, tops[-1])
                    if far is not None:
                        self._assemble(far, BEFORE_ITERATION)
                    posted = [False]

                    def on_mark(stage: Stage, opened, far=far, i=i, posted=posted) -> None:
                        self._release(far, stage, opened)
                        if stage is trigger:
                            feed.post(functools.partial(batch_work, i))
                            posted[0] = True

                    timer = ReleaseClock(self.device, on_mark, self.stages, S.train)
                    with faults(f"training iteration {i}"):
                        self.trainer.step(batches.pop(i), timer)
                    ends.append(S.event(S.train))
                    clocks.append(timer)
                t0 = host("step", i, t0)
                if not posted[0]:
                    feed.post(functools.partial(batch_work, i))
                waited_ms = feed.join()
                if feed.threaded:  # inline there is nothing to wait for
                    self.host_ms["join"].append((i, waited_ms))
                if (i + 1) % report == 0:
                    self.iterations_done(i + 1, total)
        finally:
            feed.close()
        with S.use(S.train):
            tops.append(S.event(S.train))
        return self._measure(tops, afters, ends, clocks, checked[0])

    def _feed_trigger(self) -> Stage | None:
        """The stage whose closing mark hands a step's batch work to the feed thread: the
        last forward one, so that the work runs while the launching thread is in the
        backward; with batches one ahead, not before the last stage that releases a kernel
        (the batch finished in step i is the one released in it). None: after the step."""
        order = list(self.stages)
        if Stage.TOP_MLP_FWD not in order:
            return None
        at = order.index(Stage.TOP_MLP_FWD)
        if self.plan.batches_ahead == 1:
            released = [order.index(Stage(k.stage)) for _, _, k in self.kernels
                        if k.stage != BEFORE_ITERATION]
            at = max([at, *released])
        return order[at] if at < len(order) - 1 else None

    def _measure(self, tops, afters, ends, clocks, checked: int) -> Measurement:
        S, s = self.S, self.settings
        if S.cuda:
            torch.cuda.synchronize()
        w, total = s.warmup, s.warmup + s.iterations
        timed = range(w, total)
        iters = [S.ms(tops[i], tops[i + 1]) for i in timed]
        busy = [S.ms(afters[i], ends[i]) for i in timed]
        span_ms = S.ms(tops[w], tops[total])
        by_stage = [clocks[i].stage_ms() for i in timed]  # each timed iteration's stages
        stages: dict[str, list[float]] = {}
        for stage_ms in by_stage:
            for st, ms in stage_ms.items():
                stages.setdefault(st.value, []).append(ms)
        kernels: dict[str, Spread] = {}
        extra: dict[str, Spread] = {}
        by_batch: dict[str, dict[int, float]] = {}
        for name, spans in getattr(self, "spans", {}).items():
            ms_of = {i: S.ms(a, b) for i, a, b in spans}
            xs = [ms for i, ms in ms_of.items() if w < i <= total]
            if xs:
                is_stage = name.split(":")[0] in ("h2d", "assemble")
                (extra if is_stage else kernels)[name] = spread(xs)
                by_batch[name] = ms_of
        stage_spreads = {k: spread(v) for k, v in stages.items()}
        launch: dict[str, list[float]] = {}
        for i in timed:
            for st, ms in clocks[i].host_stage_ms().items():
                launch.setdefault(f"launch:{st.value}", []).append(ms)
        host = {k: spread(v) for k, v in launch.items()}
        rounded = functools.partial(round, ndigits=4)
        per_iteration = {"iteration": tuple(map(rounded, iters)),
                         "batch_wait": tuple(rounded(S.ms(tops[i], afters[i])) for i in timed),
                         "busy": tuple(map(rounded, busy))}
        for name, xs in getattr(self, "host_ms", {}).items():
            by_index: dict[int, float] = {}  # several launches of a batch's kernels: summed
            for i, ms in xs:
                by_index[i] = by_index.get(i, 0.0) + ms
            timed_xs = [ms for i, ms in by_index.items() if w <= i < total]
            if timed_xs:
                host[name] = spread(timed_xs)
                # logged by batch: batch i + 1's wait falls in iteration i, and batch
                # i + ahead's kernels are launched in it
                shift = {"wait": 1, "kernels": self.plan.batches_ahead}.get(name, 0)
                in_iteration: dict[int, float] = {}
                for i, ms in xs:
                    in_iteration[i - shift] = in_iteration.get(i - shift, 0.0) + ms
                per_iteration[f"host_{name}"] = tuple(rounded(in_iteration.get(i, 0.0))
                                                      for i in timed)
        ahead = self.plan.batches_ahead
        for name, xs in by_batch.items():  # the batch each timed iteration preprocessed
            per_iteration[f"span_{name}"] = tuple(rounded(xs.get(i + ahead, 0.0))
                                                  for i in timed)
            opened = {i: a for i, a, _ in self.spans[name]}  # where in the step it began
            per_iteration[f"start_{name}"] = tuple(
                rounded(S.ms(tops[i], opened[i + ahead])) if i + ahead in opened else 0.0
                for i in timed)
        for st in self.stages:
            per_iteration[f"stage_{st.value}"] = tuple(rounded(ms.get(st, 0.0))
                                                       for ms in by_stage)
        stage_spreads.update(extra)
        from corun.spec.provenance import git_commit

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
            notes=self._notes(), host=host, plan=self.plan, per_iteration=per_iteration)

    def _plan_cap(self, cap: int) -> int:
        """A plan's preprocessing SM cap as this GPU can run it: left out, and said, where
        it cannot (`_cap_not_runnable`); a cap given by `--preprocess-sm-cap` is held to
        instead, and refused where it cannot run."""
        why = _cap_not_runnable(self.device, cap) if cap else ""
        if why:
            self.cap_left_out = (f"the plan's preprocessing SM cap ({cap}) left out, the "
                                 f"preprocessing on every SM: {why}")
            self.say(f"{self.strategy}: {self.cap_left_out}")
            return 0
        return cap

    def _update_max_blocks(self) -> int | None:
        """The fused update's grid cap the trainer takes (Trainer.update_max_blocks) from
        `update_grid`: None, its default; 0, a thread per bag and column; else that many
        blocks an SM of this GPU. Set on every run, so a trainer reused across runs takes
        each run's own."""
        per_sm = self.update_grid
        if per_sm is None or self.device.type != "cuda":  # a CPU's update is index_add_
            return None
        return per_sm * torch.cuda.get_device_properties(self.device).multi_processor_count

    def _check_note(self) -> str:
        """What the run compared with the reference (spec.measurement reads it back)."""
        s = self.settings
        if not s.check:
            return "the batches were not checked"
        n = s.compared_batches(self.plan.batches_ahead + 1)
        if n is None:
            return CHECKED_EVERY
        return (f"every row of batches 0-{n - 1} was compared with the NumPy reference on "
                "the device (the run's first, each distinct batch at least once); " + UNCHECKED)

    def _notes(self) -> tuple[str, ...]:
        notes = [f"the timings of rank 0 of {self.world}"] if self.world > 1 else []
        notes += ["stall = iteration time minus the training stream's busy time (from its "
                 "inputs being ready to the optimizer's end): data waits and host gaps"]
        if self.replay:
            notes.append("ideal: the reference's batches, preprocessed ahead and replayed "
                         "(equal to the reference by construction, so not re-checked)")
        else:
            notes.append("h2d and assemble are listed with the stages; " + self._check_note())
        if self.model.cuda_graphs:
            notes.append(GRAPHS_NOTE + ", one a stage, captured "
                         "before the timed loop on the run's first batch, after eager "
                         "warm-up steps on it (backend/graphed.py)")
        streams = getattr(self, "S", None)
        if streams is not None and streams.assembly is not None \
                and streams.assembly is not streams.pre:
            notes.append(ASSEMBLY_STREAM_NOTE)
        split = getattr(streams, "split", None)
        if split is not None and self.pre_cap:
            notes.append(f"preprocessing confined to {split.pre_sms} SMs, training on "
                         "every SM (a CUDA green context, backend/sm_split.py)")
        elif self.cap_left_out:
            notes.append(self.cap_left_out)
        per_sm = self.update_grid
        if per_sm is not None:
            notes.append("the fused embedding update on " + (
                "a thread per bag and column" if per_sm == 0 else f"{per_sm} blocks an SM")
                + f", not the default {UPDATE_BLOCKS_PER_SM} (update_blocks_per_sm"
                + ("; ignored on a CPU" if self.device.type != "cuda" else "") + ")")
        if self.host_nodes:
            notes.append(f"{len(self.host_nodes)} op node(s) on {self.settings.cpu_workers} "
                         "host worker process(es), one thread each")
        return tuple(notes)


def _cap_not_runnable(device, cap: int) -> str:
    """Why this GPU cannot confine the preprocessing to `cap` SMs, or "" where it can
    (backend.sm_split.runnable_cap: green contexts, and 8 SMs left to training)."""
    from corun.backend.sm_split import green_contexts_supported, runnable_cap

    sms = torch.cuda.get_device_properties(device).multi_processor_count
    return runnable_cap(cap, green_contexts_supported(), sms)[1]


def versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "torch": torch.__version__,
           "numpy": np.__version__, "host": platform.node(), "host_id": host_id()}
    for pkg in ("numba", "numba-cuda"):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            pass
    if torch.cuda.is_available():
        out["cuda"] = str(torch.version.cuda)
    return out
