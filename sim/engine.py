"""The SimPy event loop: training and preprocessing streams on every GPU, collectives,
host copies, and CPU workers feeding a bounded queue.

Co-running is a fluid model: while a preprocessing kernel overlaps a training stage,
each progresses at 1/factor of its standalone rate (factors from the cost model: those of
a kernel started with or during the stage, or, where it was running when the stage
began, those of a kernel carried into it); rates change only when one of them ends, or,
in a stage whose room in time a probe measured (KernelRun.rooms), where a kernel that
started after the stage began enters the next piece of that room.
During collectives and stalls the kernel runs alone. One preprocessing stream per GPU:
its kernels run one at a time, in plan order, each once its releasing stage has started.
A step waits for the batch it trains on: with the plan's `batches_ahead` 1, for the
kernels of the step before; with 2, for those of the step before that, so a kernel still
running at a step's end runs on into the next step.

Where the host thread is modelled it runs the executor's loop: it launches a step, waits
for the batch the next step trains on, then reads it back, checks it and stages the next
inputs. The GPU begins a step once the host has begun launching it, and each stage once
the host has launched the stages before it (costmodel.host.HostCosts.launched_ms), so a
batch assembled late holds back the next step's launches, not only its start.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import simpy
from corun.sim.scenario import Compiled, GpuTables, bounded
from corun.sim.trace import COPY, HOST, PREPROCESS, TRAINING, WAIT, Span


@dataclass
class RunLog:
    """Raw outcome of one run, per GPU and iteration."""

    iteration_start_ms: list[list[float]]
    iteration_end_ms: list[list[float]]
    stall_ms: list[list[float]]
    busy_ms: list[list[float]]
    stage_ms: list[list[list[float]]]
    """[gpu][iteration][stage position] wall time of the stage (barrier wait excluded)."""
    kernel_ms: list[list[list[float]]]
    """[gpu][iteration][kernel index] wall time from start to end."""
    spans: list[Span]
    end_ms: float
    events: int = 0
    """SimPy events scheduled (for the benchmark)."""


class _Barrier:
    """All GPUs arrive, then all leave together."""

    def __init__(self, env: simpy.Environment, parties: int) -> None:
        self.env, self.parties, self.count = env, parties, 0
        self.event = env.event()

    def arrive(self) -> simpy.Event:
        self.count += 1
        if self.count == self.parties:
            self.event.succeed()
        return self.event


class _PreStream:
    """The preprocessing stream of one GPU: each iteration's released kernels queue up
    in plan order and run one at a time, each once its releasing stage (of the iteration
    that released it) has started. Kernels left at an iteration's end run on into the
    next one, unless the trainer waits for them."""

    def __init__(self, gpu: int, tables: GpuTables, spans: list[Span],
                 kernel_ms: list[list[float]]) -> None:
        self.gpu, self.spans, self.kernel_ms = gpu, spans, kernel_ms
        self.kernels = [k for k in tables.kernels if k.release_pos >= 0]
        self.index = [i for i, k in enumerate(tables.kernels) if k.release_pos >= 0]
        self.queue: deque[tuple[int, int, float]] = deque()  # (iteration, kernel, noise)
        self.it = 0  # the training iteration now running
        self.active = -1  # position in self.kernels of the running kernel, or -1
        self.active_it = 0
        self.remaining = 0.0  # standalone ms left of the active kernel
        self.started = 0.0
        self.carried = False  # the active kernel was running when this stage began
        self.done_ms: dict[int, float] = {}
        """Iteration -> when the last kernel it released ended."""
        self.on_done: Callable[[int, float], None] | None = None
        """Told (iteration, time) when an iteration's last kernel ends: the time may lie
        behind the clock (a span run alone, worked out afterwards) or ahead (`drain`)."""

    def release(self, it: int, noise: np.ndarray) -> None:
        """Queue iteration it's kernels (each starts once its stage of `it` has)."""
        self.it = it
        self.queue.extend((it, j, float(noise[j])) for j in range(len(self.kernels)))

    def start_ready(self, now: float, pos: int) -> None:
        if self.active >= 0 or not self.queue:
            return
        it, j, noise = self.queue[0]
        if it < self.it or self.kernels[j].release_pos <= pos:
            self.queue.popleft()
            self.active, self.active_it = j, it
            self.remaining = self.kernels[j].alone_ms * noise
            self.started = now
            self.carried = False

    def effects(self, pos: int) -> tuple[float, float]:
        """(stage factor, kernel factor) of the active kernel beside stage `pos`."""
        k = self.kernels[self.active]
        return (k.carried if self.carried and k.carried else k.effects)[pos]

    def room(self, pos: int):
        """The active kernel's room in stage `pos` (KernelRun.rooms), or None."""
        rooms = self.kernels[self.active].rooms
        return rooms[pos] if rooms else None

    def finish(self, now: float) -> None:
        j, it = self.active, self.active_it
        self.spans.append(Span(self.gpu, PREPROCESS, self.kernels[j].name, it,
                               self.started, now))
        self.kernel_ms[it][self.index[j]] = now - self.started
        if not any(q[0] == it for q in self.queue):
            self.done_ms[it] = now
            if self.on_done is not None:
                self.on_done(it, now)
        self.active = -1

    def pending(self, upto_it: int) -> bool:
        """Whether a kernel released in iteration `upto_it` or before has not ended."""
        return (self.active >= 0 and self.active_it <= upto_it) or \
            any(q[0] <= upto_it for q in self.queue)

    def advance_alone(self, t0: float, t1: float, pos: int) -> None:
        """Run kernels alone from t0 to t1 (during a barrier, a collective or a stall)."""
        now = t0
        self.start_ready(now, pos)
        while self.active >= 0 and now + self.remaining <= t1:
            now += self.remaining
            self.finish(now)
            self.start_ready(now, pos)
        if self.active >= 0:
            self.remaining -= t1 - now

    def drain(self, now: float, upto_it: int) -> float:
        """Run, alone from `now`, the kernels up to the last one iteration `upto_it`
        released; returns when it ended (`now` if none was left)."""
        t = now
        while self.pending(upto_it):
            self.start_ready(t, len(self.kernels[0].effects))
            t += self.remaining
            self.finish(t)
        return t


def run(compiled: Compiled) -> RunLog:
    """Simulate warm-up plus measured iterations; deterministic for a given seed."""
    sc = compiled.scenario
    n = sc.hardware.gpu_count
    iters = sc.warmup + sc.iterations
    rng = np.random.default_rng(sc.seed)
    n_stages = len(compiled.gpus[0].stages)
    n_kernels = max((len(g.kernels) for g in compiled.gpus), default=0)

    def noise(shape: tuple[int, ...]) -> np.ndarray:
        if sc.jitter_cv == 0:
            return np.ones(shape)
        sigma = np.sqrt(np.log1p(sc.jitter_cv**2))
        return rng.lognormal(-sigma**2 / 2, sigma, size=shape)

    stage_noise = noise((n, iters, n_stages)).tolist()
    comm_noise = noise((iters, n_stages)).tolist()
    kernel_noise = noise((n, iters, max(n_kernels, 1)))
    cpu_noise = noise((iters * n + 1,)).tolist()
    host_noise = noise((n, iters)).tolist()  # drawn last: earlier draws stay as they were

    env = simpy.Environment()
    spans: list[Span] = []
    log = RunLog([[0.0] * iters for _ in range(n)], [[0.0] * iters for _ in range(n)],
                 [[0.0] * iters for _ in range(n)], [[0.0] * iters for _ in range(n)],
                 [[[0.0] * n_stages for _ in range(iters)] for _ in range(n)],
                 [[[0.0] * n_kernels for _ in range(iters)] for _ in range(n)], spans, 0.0)
    barriers: dict[tuple[int, int], _Barrier] = {}
    ready = [simpy.Store(env, capacity=2) for _ in range(n)]
    host_start = [[env.event() for _ in range(iters)] for _ in range(n)]
    """[gpu][iteration] the host thread has begun launching that step (value: when)."""
    gpu_start = [[env.event() for _ in range(iters)] for _ in range(n)]
    inputs = [[env.event() for _ in range(iters)] for _ in range(n)]
    """[gpu][iteration] that step's inputs have reached the GPU."""
    batch_ready = [[env.event() for _ in range(iters)] for _ in range(n)]
    """[gpu][iteration] the batch whose kernels that iteration released is assembled."""
    cpu_ms = compiled.cpu_batch_ms
    queue = simpy.Store(env, capacity=sc.queue_depth_per_gpu * n) if cpu_ms > 0 else None

    def barrier(it: int, pos: int) -> simpy.Event:
        key = (it, pos)
        if key not in barriers:
            barriers[key] = _Barrier(env, n)
        return barriers[key].arrive()

    def cpu_worker(w: int, workers: int):
        b = w
        while b < iters * n:
            t0 = env.now
            yield env.timeout(cpu_ms * cpu_noise[b])
            spans.append(Span(-1, w, "preprocess", b // n, t0, env.now))
            yield queue.put(b)
            b += workers

    def loader(g: int, tables: GpuTables):
        """Brings each batch's inputs over the host link into a double buffer."""
        for it in range(iters + 1):
            if queue is not None:
                yield queue.get()
            t0 = env.now
            yield env.timeout(tables.h2d_ms)
            spans.append(Span(g, COPY, "h2d", it, t0, env.now))
            if it < iters:
                inputs[g][it].succeed()
            yield ready[g].put(it)

    def fire(event: simpy.Event, at_ms: float) -> None:
        """Trigger `event` at `at_ms` (now if that has passed)."""
        if at_ms <= env.now:
            event.succeed()
        else:
            env.timeout(at_ms - env.now).callbacks.append(lambda _: event.succeed())

    def host_thread(g: int, tables: GpuTables, feeds: bool):
        """The executor's loop (backend/executor.py): launch step `it` (with the kernels
        it releases), wait for the batch step it + 1 trains on to be assembled (where
        the plan has kernels: `feeds`), then read it back, check it and stage the next
        inputs (the rest of host_ms). Step it + 1's launches begin once the GPU has
        begun step it and has the inputs of step it + 1: the host runs at most one step
        ahead, and starts with the GPU (the executor preprocesses its first batches
        before its loop)."""
        launch_ms = tables.launched_ms[-1]
        finish_ms = max(0.0, tables.host_ms - launch_ms)
        ahead = compiled.plan.batches_ahead
        for it in range(iters):
            yield inputs[g][it]  # the step's inputs are on the GPU
            if it > 0:
                yield gpu_start[g][it - 1]
            t0 = env.now
            scale = host_noise[g][it]
            host_start[g][it].succeed(t0)
            yield env.timeout(launch_ms * scale)
            spans.append(Span(g, HOST, "launch step", it, t0, env.now))
            need = it + 1 - ahead  # the iteration that released step it + 1's batch
            if feeds and need >= 0 and it + 1 < iters:
                yield batch_ready[g][need]
            t1 = env.now
            yield env.timeout(finish_ms * scale)
            if env.now > t1:
                spans.append(Span(g, HOST, "feed batch", it, t1, env.now))

    def gpu(g: int, tables: GpuTables):
        before = [k for k in tables.kernels if k.release_pos < 0]
        stage_ms, comm_ms, pre_ms = tables.stage_ms, tables.comm_ms, tables.pre_barrier_ms
        names = [s.value for s in tables.stages]
        pre = _PreStream(g, tables, spans, log.kernel_ms[g])
        pre.on_done = lambda j, t: fire(batch_ready[g][j], t)
        launched = tables.launched_ms
        ahead = compiled.plan.batches_ahead
        for it in range(iters):
            start = env.now
            log.iteration_start_ms[g][it] = start
            busy = 0.0
            yield ready[g].get()  # this iteration's inputs (and the next batch's raw data)
            if env.now > start:
                spans.append(Span(g, WAIT, "wait for input", it, start, env.now))
            if tables.host_ms > 0:
                t_host = env.now
                yield host_start[g][it]  # the host thread has begun this step
                if env.now > t_host:
                    spans.append(Span(g, WAIT, "wait for host launches", it, t_host,
                                      env.now))
            gpu_start[g][it].succeed()
            stall = env.now - start
            knoise = kernel_noise[g, it]
            pre.release(it, knoise[len(before):])
            pre.advance_alone(start, env.now, -1)  # kernels left from earlier iterations
            for i, k in enumerate(before):  # on the training stream, before stage 0
                t0 = env.now
                yield env.timeout(k.alone_ms * knoise[i])
                spans.append(Span(g, TRAINING, k.name, it, t0, env.now))
                log.kernel_ms[g][it][i] = env.now - t0
                busy += env.now - t0
            for pos in range(n_stages + 1):
                if launched and pos > 0:  # the host has not launched all before `pos`
                    gate = host_start[g][it].value + host_noise[g][it] * launched[pos - 1]
                    if gate > env.now + 1e-9:
                        t_gate = env.now
                        yield env.timeout(gate - env.now)
                        pre.advance_alone(t_gate, env.now, pos - 1)
                        spans.append(Span(g, WAIT, "wait for host launches", it, t_gate,
                                          env.now))
                        stall += env.now - t_gate
                if pos == n_stages:
                    break
                t0 = env.now
                if comm_ms[pos] > 0 or pre_ms[pos] > 0 or (n > 1 and tables.stages[pos]
                                                           .is_collective):
                    if pre_ms[pos] > 0:
                        yield env.timeout(pre_ms[pos] * stage_noise[g][it][pos])
                    t_arrive = env.now
                    yield barrier(it, pos)
                    if env.now > t_arrive:
                        spans.append(Span(g, WAIT, "barrier", it, t_arrive, env.now))
                    t_comm = env.now
                    yield env.timeout(comm_ms[pos] * comm_noise[it][pos])
                    pre.advance_alone(t0, env.now, pos)
                    spans.append(Span(g, TRAINING, names[pos], it, t_comm, env.now))
                    log.stage_ms[g][it][pos] = env.now - t_comm + (t_arrive - t0)
                    busy += env.now - t_comm + (t_arrive - t0)
                    continue
                left = total = stage_ms[pos] * stage_noise[g][it][pos]
                pre.carried = pre.active >= 0
                pre.start_ready(env.now, pos)
                while left > 1e-12:
                    if pre.active < 0:
                        yield env.timeout(left)
                        break
                    f_s, f_k = bounded(*pre.effects(pos), tables.stage_slowdown_max)
                    t_stage, t_kernel = left * f_s, pre.remaining * f_k
                    t_piece = t_stage
                    room = pre.room(pos)
                    if room is not None and pre.started > t0 + 1e-12:
                        # started partway in: the room's rates here (module docstring)
                        f_s, f_k, piece_end = room.factors(f_s, f_k, 1.0 - left / total)
                        f_s, f_k = bounded(f_s, f_k, tables.stage_slowdown_max)
                        t_stage, t_kernel = left * f_s, pre.remaining * f_k
                        t_piece = max(1e-9, (left - (1.0 - piece_end) * total) * f_s)
                    dt = min(t_stage, t_kernel, t_piece)
                    yield env.timeout(dt)
                    left -= dt / f_s
                    pre.remaining -= dt / f_k
                    if t_kernel <= min(t_stage, t_piece):
                        pre.finish(env.now)
                        pre.start_ready(env.now, pos)
                spans.append(Span(g, TRAINING, names[pos], it, t0, env.now))
                log.stage_ms[g][it][pos] = env.now - t0
                busy += env.now - t0
            # the next step trains on the batch iteration it + 1 - ahead preprocessed: it
            # starts once that batch's last kernel, its assembly and the host's
            # turn-around are done (hidden when that kernel ended early); later kernels
            # run on into the next iteration (all of them after the last)
            need = it + 1 - ahead
            drain = 0.0
            if pre.kernels and need >= 0:
                end = pre.drain(env.now, need)
                drain = max(0.0, pre.done_ms.get(need, end) + tables.turnaround_ms - env.now)
            if it + 1 == iters:
                pre.drain(env.now + drain, it)  # for the log only: no step trains on them
            if drain > 0:  # the next batch is not ready yet: the trainer waits
                spans.append(Span(g, WAIT, "wait for preprocessing", it, env.now,
                                  env.now + drain))
                yield env.timeout(drain)
            log.stall_ms[g][it] = stall + drain
            log.iteration_end_ms[g][it] = env.now
            log.busy_ms[g][it] = busy

    if queue is not None:
        workers = sc.strategy.cpu_workers or sc.hardware.host_cpu_cores
        for w in range(workers):
            env.process(cpu_worker(w, workers))
    for g in range(n):
        env.process(loader(g, compiled.gpus[g]))
        env.process(gpu(g, compiled.gpus[g]))
        tables = compiled.gpus[g]
        if tables.host_ms > 0:
            feeds = tables.host_waits_for_batch and any(k.release_pos >= 0
                                                        for k in tables.kernels)
            env.process(host_thread(g, tables, feeds))
    env.run()
    log.end_ms = env.now
    log.events = next(env._eid)  # SimPy numbers every scheduled event from this counter
    return log
