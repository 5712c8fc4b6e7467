"""Counting the host's launches in one eager training step, by stage, from the trainer.

Each PyTorch operator the step dispatches is about one kernel launch from the host thread
on a GPU, and each kernel the trainer launches through Numba (the bag forward, the fused
embedding update) one more. On the CPU those kernels run as torch code standing in for
them (`kernel_stand_in`): the count takes each as its kernel launches, not as its
operators. The count does not depend on table sizes or on the ids, so it runs on the CPU
with the tables cut to a few rows (bench/launch_counts.py counts the presets).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from corun.spec import Model
from corun.spec.launches import StepLaunches

TABLE_ROWS = 64
"""Rows each table keeps for counting."""


@dataclasses.dataclass
class Tally:
    """Operators dispatched outside stand-ins, and kernels stood in for, so far."""

    operators: int = 0
    kernels: int = 0
    stand_in: int = 0


_tallies: list[Tally] = []
"""The counts in progress (`counting`)."""


@contextmanager
def kernel_stand_in(kernels: int = 1) -> Iterator[None]:
    """CPU code that stands in for `kernels` launches of the trainer's GPU kernels: a
    count in progress sees those launches and none of the operators inside."""
    for t in _tallies:
        t.stand_in += 1
        t.kernels += kernels
    try:
        yield
    finally:
        for t in _tallies:
            t.stand_in -= 1


@contextmanager
def counting() -> Iterator[Tally]:
    """Count the operators dispatched and the kernels stood in for inside the block."""
    from torch.utils._python_dispatch import TorchDispatchMode

    tally = Tally()

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if not tally.stand_in:
                tally.operators += 1
            return func(*args, **(kwargs or {}))

    _tallies.append(tally)
    try:
        with Count():
            yield tally
    finally:
        _tallies.remove(tally)


def _cut_down(model: Model, batch: int, seed: int):
    """`model` eager at `batch` with its tables cut to TABLE_ROWS rows, and one batch of
    random single-id bags for it (on the CPU): launches follow neither size nor ids."""
    from corun.backend.trainer import batch_from_tables, row_bases

    small = dataclasses.replace(model, batch_per_gpu=batch, cuda_graphs=False, tables=tuple(
        dataclasses.replace(t, rows=min(t.rows, TABLE_ROWS)) for t in model.tables))
    rng = np.random.default_rng(seed)
    tables = [(rng.integers(0, t.rows, batch), np.arange(batch + 1)) for t in small.tables]
    return small, batch_from_tables(
        rng.random((batch, small.dense_features), np.float32), tables, row_bases(small),
        (rng.random(batch) < 0.5).astype(np.float32))


def step_launches(model: Model, batch: int = 64, seed: int = 0) -> StepLaunches:
    """The launches one eager step of `model` makes, by stage, counted on the CPU."""
    from corun.backend.trainer import Trainer

    class Marks:
        """The tally at each stage mark of the counted step."""

        def __init__(self, tally: Tally) -> None:
            self.tally, self.at = tally, []

        def mark(self, stage) -> None:
            self.at.append((stage, self.tally.operators, self.tally.kernels))

    small, b = _cut_down(model, batch, seed)
    trainer = Trainer(small, "cpu", seed)
    trainer.step(b)
    with counting() as tally:
        marks = Marks(tally)
        trainer.step(b, marks)
    pairs = list(zip(marks.at, marks.at[1:]))
    return StepLaunches(
        model.name,
        {stage.value: n - m for (_, m, _), (stage, n, _) in pairs},
        {stage.value: k - j for (_, _, j), (stage, _, k) in pairs if k > j})


HOST_SPIN_MS = 30.0
"""The GPU spin each timed step is launched behind: longer than any eager step's launches
(3-8 ms on the hosts measured), so the host never waits for the GPU while it launches."""


def host_step_ms(model: Model, device: str = "cuda", batch: int = 2048, reps: int = 20,
                 seed: int = 0) -> tuple[float, int]:
    """The host thread's time to launch one eager step of `model` on a GPU, as the
    executor's step launches it (stage marks included): the median over the `reps` steps
    launched wholly behind a GPU spin (the host never waited for the GPU), and how many
    those were. Tables are cut to TABLE_ROWS rows: launches do not depend on their size."""
    import time

    import torch
    from corun.backend.streams import gpu_spin
    from corun.backend.trainer import Clock, Trainer

    small, b = _cut_down(model, batch, seed)
    dev = torch.device(device)
    b = b.to(dev)
    trainer = Trainer(small, device, seed)
    for _ in range(3):  # compile and warm every kernel
        trainer.step(b, Clock(dev))
    torch.cuda.synchronize(dev)
    times = []
    for _ in range(reps):
        gpu_spin(HOST_SPIN_MS)
        began = torch.cuda.Event()
        began.record()
        t0 = time.perf_counter()
        trainer.step(b, Clock(dev))
        t1 = time.perf_counter()
        if not began.query():  # the GPU was still spinning: nothing waited for it
            times.append((t1 - t0) * 1e3)
        torch.cuda.synchronize(dev)
    if not times:
        raise RuntimeError(f"{model.name}: no step was launched within the {HOST_SPIN_MS} "
                           "ms spin")
    times.sort()
    return times[len(times) // 2], len(times)
