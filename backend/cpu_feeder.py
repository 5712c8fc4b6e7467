"""Host preprocessing for the executor: N worker processes feed a bounded queue.

Worker w runs the plan's host nodes (Numba CPU, one thread) on batches w, w + N, ...
and writes the columns the GPU needs into staging buffers in shared memory, which the
executor page-locks so its host-to-device copy is asynchronous. Each worker owns
`depth` buffers; a buffer returns to its worker once the executor's copy out of it has
finished, so at most N * depth batches wait: the bounded queue. A worker done with its
batches waits for `close` before it exits: on two GPUs, the iterations after the last
workers had exited took 18-32 ms against 8-9 (all-CPU plans at batch 4096, timed
iterations 166-200 of 200).
"""

from __future__ import annotations

import queue as queue_mod
import time
from collections.abc import Mapping, Sequence
from multiprocessing.reduction import ForkingPickler

import torch
import torch.multiprocessing as mp
from corun.backend.columns import ColumnData
from corun.backend.faults import ExecuteError
from corun.backend.pools import HostPools, Layout
from corun.spec import Pipeline

POOLS = ("f32", "i64", "offs", "valid")
CLEAN_EXIT_S = 10.0
"""How long `close` waits for the workers to exit by themselves before ending them. With
2 s, a fresh clone's test run (cold caches, on the 2-core development machine while
other jobs ran) saw both workers ended by SIGTERM; warm, under two busy loops, they
exited in time. Only a hung worker costs the wait."""
DTYPES = {"f32": torch.float32, "i64": torch.int64, "offs": torch.int64, "valid": torch.uint8}


def staging_buffers(sizes: Mapping[str, int]) -> dict[str, torch.Tensor]:
    """One staging buffer per pool (the staged prefix), in shared memory."""
    return {k: torch.zeros(max(sizes[k], 1), dtype=DTYPES[k]).share_memory_() for k in POOLS}


def stage_into(layout: Layout, buffers: Mapping[str, torch.Tensor],
               columns: Mapping[str, ColumnData]) -> None:
    """Pack `columns` into staging buffers laid out like the program's pool prefix."""
    pools = HostPools(layout, {k: buffers[k].numpy() for k in POOLS})
    for name, data in columns.items():
        pools.pack(name, data)


def _worker(inbox, free, done, stop) -> None:
    """Take the worker's data from `inbox` (pickled by the parent), then `_feed`."""
    _feed(*ForkingPickler.loads(inbox.get()), free, done, stop)


def _feed(w: int, n: int, pipeline: Pipeline, host_nodes: Sequence[str],
          staged: Sequence[str], layout: Layout, raw: Sequence[Mapping[str, ColumnData]],
          buffers: Sequence[Mapping[str, torch.Tensor]], total: int, free, done,
          stop) -> None:
    import numba
    from corun.backend.fusion import FusedGroup
    from corun.backend.runner import PipelineProgram

    numba.set_num_threads(1)
    group = [FusedGroup(pipeline, host_nodes, "host")]
    gpu_nodes = [n for n in pipeline.order if n not in set(host_nodes)]
    programs = [PipelineProgram(pipeline, group, r, elsewhere=gpu_nodes) for r in raw]
    for slot_use, i in enumerate(range(w, total, n)):
        prog = programs[i % len(programs)]
        out = prog.run_cpu()
        have = {**raw[i % len(raw)], **out}
        free.acquire()
        slot = slot_use % len(buffers)
        stage_into(layout, buffers[slot], {s: have[s] for s in staged})
        done.put((i, slot))
    stop.wait()  # exit with the executor, not during its timed loop


class CpuFeeder:
    """Starts the workers; `get(i)` waits for batch i and names its staging buffers."""

    def __init__(self, workers: int, pipeline: Pipeline, host_nodes: Sequence[str],
                 staged: Sequence[str], layout: Layout, sizes: Mapping[str, int],
                 raw: Sequence[Mapping[str, ColumnData]], total: int, depth: int = 2,
                 pin=None) -> None:
        ctx = mp.get_context("spawn")
        self.workers, self.depth = workers, depth
        self.buffers = [[staging_buffers(sizes) for _ in range(depth)] for _ in range(workers)]
        self.locked = [t for per_worker in self.buffers for bufs in per_worker
                       for t in bufs.values() if pin is not None and pin(t)]
        self.free = [ctx.Semaphore(depth) for _ in range(workers)]
        self.done = [ctx.Queue() for _ in range(workers)]
        self.stop = ctx.Event()
        # The data (the raw batches: megabytes) goes through a queue once every worker
        # has started; only the synchronisation objects, which must be inherited, go to
        # Process. Passed to Process, the data filled the pipe of each start, which then
        # waited for its worker to import torch before the next began: 16 workers took
        # 71 s to start on the H200 machine.
        self.inbox = [ctx.Queue() for _ in range(workers)]
        self.procs = [ctx.Process(target=_worker, daemon=True, args=(
            self.inbox[w], self.free[w], self.done[w], self.stop)) for w in range(workers)]
        for p in self.procs:
            p.start()
        for w, box in enumerate(self.inbox):  # pickled here: an error is raised here
            data = (w, workers, pipeline, tuple(host_nodes), tuple(staged), layout,
                    list(raw), self.buffers[w], total)
            box.put(bytes(ForkingPickler.dumps(data)))

    def get(self, i: int, timeout_s: float = 600.0) -> dict[str, torch.Tensor]:
        w, waited_s = i % self.workers, 0.0
        while True:
            try:
                j, slot = self.done[w].get(timeout=1.0)
                break
            except queue_mod.Empty:
                waited_s += 1.0
                if not self.procs[w].is_alive():
                    raise ExecuteError(f"host preprocessing worker {w} died (exit code "
                                       f"{self.procs[w].exitcode}) before batch {i}") from None
                if waited_s >= timeout_s:
                    raise ExecuteError(f"no batch {i} from host worker {w} in "
                                       f"{timeout_s:g} s") from None
        assert j == i, (j, i)
        return self.buffers[w][slot]

    def release(self, i: int) -> None:
        """The copy out of batch i's buffers has finished: the worker may refill them."""
        self.free[i % self.workers].release()

    def close(self) -> None:
        self.stop.set()  # workers done with their batches exit; the rest are ended below
        deadline = time.monotonic() + CLEAN_EXIT_S
        for p in self.procs:
            p.join(timeout=max(0.0, deadline - time.monotonic()))
        for p in self.procs:
            if p.is_alive():
                p.terminate()
        for p in self.procs:
            p.join(timeout=5)
        if self.locked:  # before the memory goes: a later buffer may reuse the addresses
            torch.cuda.synchronize()
            for t in self.locked:
                torch.cuda.cudart().cudaHostUnregister(t.data_ptr())
            self.locked = []


def page_lock(t: torch.Tensor) -> bool:
    """Register a shared-memory tensor with CUDA so copies from it are asynchronous;
    False (and the copy stays correct, only synchronous) if the driver refuses."""
    try:
        rc = torch.cuda.cudart().cudaHostRegister(t.data_ptr(), t.numel() * t.element_size(), 0)
        return int(rc) == 0
    except Exception:  # an older binding without cudaHostRegister
        return False

