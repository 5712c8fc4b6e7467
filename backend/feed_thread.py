"""A second host thread for each step's batch work, so that the thread launching the
training step does not do it.

Where the eager trainer is host-paced (kaggle and terabyte b4096 on the H200: 3.7-5 ms
of launches a step against 2.5 ms of GPU work), whatever else that thread does per
batch lengthens every step: staging the next raw batch, building the assembled batch
from its id counts and checking it took 0.25-0.35 ms a step beside the kernel launches.
The launching thread spends most of the
step's backward inside PyTorch's autograd engine with the GIL released, so a second
thread, handed the batch work as the backward starts, could do it there.

Measured, it does not (RunSettings.feed_thread is off by default): on the H200 machine
(medians of 2-4 rounds) the launching thread's own step grew by as much as it handed over or
more (kaggle b8192 corun: 5.29 ms of host a step against 4.40 inline), and the iteration with
it: corun 3.83 / 3.95 / 5.27 / 4.73 ms with the thread against 3.63 / 4.27 / 4.68 / 4.49 inline at
kaggle b4096, terabyte b4096, kaggle b8192, terabyte b8192; graphed heavy-lean b16384
3.56 against 3.50. The thread that launches PyTorch's step holds the GIL for most of it.
Kept for interpreters without a GIL, and to measure again.

`InlineFeed` does the same work on the calling thread, where `post` is called."""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable

import torch

Job = Callable[[], None]

SWITCH_INTERVAL_S = 5e-5
"""The interpreter's GIL switch interval while the feed thread runs (Python's default is
5 ms): when the launching thread comes back from the autograd engine and wants the GIL
the feed thread holds, it waits at most about this long, not up to 5 ms."""


class InlineFeed:
    """Runs each job where it is posted (the launching thread, as before the feed thread)."""

    threaded = False

    def post(self, job: Job) -> None:
        job()

    def join(self) -> float:
        return 0.0

    def close(self) -> None:
        pass


class FeedThread:
    """One daemon thread running posted jobs one at a time; `join` waits for the last
    posted job and re-raises what it raised (a MismatchError stays one)."""

    threaded = True

    def __init__(self, device: torch.device, switch_interval_s: float = SWITCH_INTERVAL_S
                 ) -> None:
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._done: queue.SimpleQueue[BaseException | None] = queue.SimpleQueue()
        self._pending = 0
        self._interval = sys.getswitchinterval()
        sys.setswitchinterval(switch_interval_s)
        self._thread = threading.Thread(target=self._serve, args=(device,),
                                        name="corun-feed", daemon=True)
        self._thread.start()

    def _serve(self, device: torch.device) -> None:
        if device.type == "cuda":  # this thread's CUDA calls go to the run's device
            torch.cuda.set_device(device)
        while (job := self._jobs.get()) is not None:
            try:
                job()
            except BaseException as e:  # handed to the launching thread by join
                self._done.put(e)
            else:
                self._done.put(None)

    def post(self, job: Job) -> None:
        self._pending += 1
        self._jobs.put(job)

    def join(self) -> float:
        """Wait for every posted job; returns the ms waited."""
        t0 = time.perf_counter()
        error = None
        while self._pending:
            self._pending -= 1
            e = self._done.get()
            error = error or e
        if error is not None:
            raise error
        return (time.perf_counter() - t0) * 1e3

    def close(self) -> None:
        """Stop the thread (after its jobs) and restore the switch interval."""
        if self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join()
        sys.setswitchinterval(self._interval)


def make_feed(threaded: bool, device: torch.device) -> InlineFeed | FeedThread:
    return FeedThread(device) if threaded else InlineFeed()
