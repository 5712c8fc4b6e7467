"""Each batch's preprocessing calls replayed as CUDA graphs, one graph per piece of work.

Per batch the executor's host thread stages the raw columns (five or six copies),
launches each fused kernel (lengths, a scan of two PyTorch ops, values) and enqueues the
assembly (zeroing, the kernel, the read-back): about 0.45 ms of host calls at heavy
b8192 on the H200 machine, on the thread that also launches the training step.
The work is the same from batch to batch over the same buffers: a pool set's kernels
read and write the same addresses, a raw batch's staging copies the same pinned buffers.
So each piece is captured once per key (pool set and raw batch, pool set and kernel,
pool set and reference) and replayed with one graph launch.

A key's first call runs its work eagerly: kernels compile and bind their launches
(backend/launch.py) and PyTorch sets up what it sets up lazily, none of which may happen
inside a capture. The second call captures the work on a side stream (capture runs
nothing) and replays it; later calls only replay. Events and waits between streams stay
outside the graphs, issued as before. Work for the stream of an SM cap's green context
is captured on a second stream of that context: its kernel nodes then run on the
context's SMs when replayed (tests/test_sm_split.py times it on a GPU).

Measured on the H200: a kernel's launch 0.069 ms of host against 0.169, the assembly's enqueue 0.065
against 0.089; the iteration moved by no more than the host's own spread (46 paired
rounds, median ratio 0.998).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import torch
from corun.backend import driver

Work = Callable[[object], None]
"""Issues a piece of work on the given torch stream (and on nothing else)."""


class _Graph:
    """One captured piece of work, launched on any stream: through the driver's
    cuGraphLaunch where it can be had, else PyTorch's replay on that stream."""

    def __init__(self, graph: torch.cuda.CUDAGraph) -> None:
        self.graph = graph
        raw = getattr(graph, "raw_cuda_graph_exec", None)
        self.exec_address = int(raw()) if raw is not None and driver.available() else 0

    def launch(self, stream) -> None:
        if self.exec_address and driver.use:
            driver.launch_graph(self.exec_address, stream.cuda_stream)
            return
        with torch.cuda.stream(stream):
            self.graph.replay()


def capture(work: Work, side) -> _Graph:
    """Capture `work` issued on the stream `side` as one CUDA graph (nothing runs)."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(side):
        graph.capture_begin(capture_error_mode="thread_local")
        try:
            work(side)
        finally:
            graph.capture_end()
    return _Graph(graph)


class WorkGraphs:
    """Pieces of repeated work by key: eager the first time, a captured graph after
    (see the module's docstring); every call eager where `on` is False.

    Work for a stream of a green context (backend/sm_split.py) is captured on a side
    stream of that context (`sides`: stream handle -> its side), so that its kernels
    keep to the context's SMs when replayed; other work on `side`."""

    def __init__(self, on: bool, side=None,
                 capture: Callable[[Work, object], object] = capture,
                 sides: dict[int, object] | None = None) -> None:
        self.on, self.side, self._capture = on, side, capture
        self.sides = dict(sides or {})
        self.graphs: dict[Hashable, object] = {}
        self._seen: set[Hashable] = set()

    def run(self, key: Hashable, work: Work, stream) -> None:
        """Issue the work for `key` on `stream`, eagerly or as its graph."""
        if not self.on:
            work(stream)
            return
        graph = self.graphs.get(key)
        if graph is None:
            if key not in self._seen:
                self._seen.add(key)
                work(stream)
                return
            side = self.sides.get(stream.cuda_stream, self.side) if self.sides else self.side
            graph = self.graphs[key] = self._capture(work, side)
        graph.launch(stream)
