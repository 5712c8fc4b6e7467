"""What the executor and the profiler run on: CUDA streams and timing events (no-ops and
the host clock on the CPU), host-memory pool sets for the CPU path, and the trainer's
clock that releases preprocessing at the opening of each training stage."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

import torch
from corun.backend.cpu_feeder import POOLS
from corun.backend.runner import PipelineProgram
from corun.backend.trainer import TRAINING_STAGES, Clock
from corun.spec import Stage

SPIN_CLOCK_HZ = 1.98e9
"""The H200's SM boost clock (GPU.md): torch.cuda._sleep counts cycles of it."""


def gpu_spin(ms: float) -> None:
    """Keep the current CUDA stream busy for about `ms`, so that what the host enqueues
    meanwhile runs back to back afterwards: its CUDA events then time the GPU alone,
    without the host's launch gaps."""
    torch.cuda._sleep(int(ms * 1e-3 * SPIN_CLOCK_HZ))


class Streams:
    """Streams and timing events on a GPU; no-ops and the host clock on the CPU."""

    def __init__(self, device: torch.device, training_high: bool,
                 assembly_stream: bool = False, pre_cap: int = 0) -> None:
        """`training_high`: the training stream above preprocessing. `pre_cap` > 0: the
        preprocessing stream confined to that many SMs (backend/sm_split.py), training on
        every SM; 0: both streams on every SM. `assembly_stream`: the batches'
        assemblies on a stream of their own (`assembly`), else on the preprocessing
        stream (RunSettings.assembly_stream; the profiler assembles nothing)."""
        self.cuda = device.type == "cuda"
        self.split = None
        if self.cuda:
            self.train = torch.cuda.Stream(device, priority=-2 if training_high else 0)
            if pre_cap:
                from corun.backend.sm_split import split_sms

                self.split = split_sms(device, pre_cap, training_high)
                self.pre = self.split.pre  # the split's other stream stays unused
            else:
                self.pre = torch.cuda.Stream(device, priority=0)
            self.copy = torch.cuda.Stream(device, priority=0)
            # the batches' assemblies on a stream of their own, beside the preprocessing
            # kernels at their priority: queued behind a batch's assembly on the kernels'
            # stream, the next batch's kernel started late whenever that assembly ran into
            # the next step, and lost the race for the SMs it was planned to win (graphed
            # heavy-rehash b16384 two ahead on the H200: started 0.11 ms late in every other
            # step, each such step 1.4 ms slower). Made
            # last, so the other streams keep the places in PyTorch's pools they had.
            # With the SMs split, the assemblies stay on the kernels' stream and its SMs.
            self.assembly = self.pre if self.split or not assembly_stream else torch.cuda.Stream(
                device, priority=0)
            from numba import cuda

            self._nb = {id(s): cuda.external_stream(s.cuda_stream)
                        for s in (self.train, self.pre)}
            self._kept: list = []
        else:
            self.train = self.pre = self.assembly = self.copy = None

    def capture_sides(self) -> dict[int, object]:
        """The side stream to capture each green-context stream's work on
        (backend/batch_graphs.WorkGraphs), by stream handle: none without an SM split."""
        if self.split is None:
            return {}
        return {self.pre.cuda_stream: self.split.pre_side}

    def use(self, stream):
        return torch.cuda.stream(stream) if self.cuda else contextlib.nullcontext()

    def numba(self, stream):
        """Numba's handle on a torch stream of this device (made once per stream)."""
        if not self.cuda:
            return None
        if id(stream) not in self._nb:
            from numba import cuda

            self._nb[id(stream)] = cuda.external_stream(stream.cuda_stream)
            self._kept.append(stream)  # its id must not be reused while the handle lives
        return self._nb[id(stream)]

    def event(self, stream):
        if not self.cuda:
            return time.perf_counter()
        e = torch.cuda.Event(enable_timing=True)
        e.record(stream)
        return e

    def wait(self, stream, event) -> None:
        if self.cuda and event is not None:
            stream.wait_event(event)

    def sync(self, event) -> None:
        if self.cuda:
            event.synchronize()

    def ms(self, a, b) -> float:
        return a.elapsed_time(b) if self.cuda else (b - a) * 1e3


class HostPoolSet:
    """A pool set in host memory (the CPU path): Numba CPU kernels, torch views."""

    def __init__(self, program: PipelineProgram) -> None:
        self.program = program
        self.views = {k: torch.from_numpy(getattr(program.host, k)) for k in POOLS}

    def launch(self, index: int, stream=None) -> None:
        self.program.launch_on_host(index, "cpu")


class ReleaseClock(Clock):
    """The trainer's clock; it releases each stage's kernels behind the event that opens
    the stage, once the host has enqueued the stage's own work (the mark that closes it).

    Released at the opening mark instead, before the stage's kernels were enqueued, a
    kernel found the GPU caught up with the host (which waits for each batch's assembly)
    and took the SMs first: heavy-fused b16384's whole pipeline released at emb_bwd
    stretched that stage from 5.98 to 7.34 ms on the H200, where the profile, which
    enqueues the whole step first, saw it wait for the stage and leave it at 5.74 ms
    Enqueued after them, the training stream's higher priority gets the SMs first, as in
    the profile. `stages` is the order the trainer marks them in (with collectives on
    several GPUs)."""

    def __init__(self, device: torch.device, release: Callable[[Stage, object], None],
                 stages: tuple[Stage, ...] = TRAINING_STAGES, stream=None) -> None:
        super().__init__(device, stream)
        self.release, self.stages = release, stages

    def mark(self, stage: Stage | None) -> None:
        super().mark(stage)
        if stage is not None:  # `stage` is enqueued: release it behind its opening mark
            self.release(stage, self.marks[-2][1])
