"""Launching one Numba CUDA kernel many times over the same arguments, at little host cost.

Numba types and marshals every argument on every launch. A fused kernel takes about 15
device arrays (7 parameters each), and on the H200 machine's host a launch cost 0.54-1.05
ms of Python against 0.02-0.3 ms of GPU (bench/results/raw/host_split_h200_run1.json), on
the thread that also launches the training step. The executor launches the same kernel
over the same pools every batch, so here the parameters are packed once, after a first
launch through Numba, and every later launch is one call of cuda.core's `launch`.
`python bench/host_split.py` measures both ways in one run: 0.07-0.22 ms of host per
fused kernel against Numba's 0.22-0.59 ms (bench/results/raw/host_split_h200_run2.json).
"""

from __future__ import annotations

from collections.abc import Sequence


class BoundLaunch:
    """`dispatcher[grid, block, stream](*args)` for any stream, with `args` (device
    arrays and integers that stay the same) packed at the first launch. Falls back to
    Numba's own launch in the CUDA simulator or if this numba-cuda lacks the internals
    used (`bound` says which)."""

    def __init__(self, dispatcher, grid: int | tuple[int, int], block: int,
                 args: Sequence[object]) -> None:
        self.dispatcher, self.grid, self.block = dispatcher, grid, block
        self.args = tuple(args)
        self.bound = False
        self._tried = False

    def __call__(self, stream=0) -> None:
        if self.bound:
            key = id(stream)
            if key not in self._streams:  # converted as Numba does, once per stream
                self._streams[key] = (stream, self._to_core(stream))
            self._launch(self._streams[key][1], self._config, self._kernel, *self._params)
            return
        self.dispatcher[self.grid, self.block, stream](*self.args)  # compiles if needed
        if not self._tried:
            self._tried = True
            self._bind()

    def through_numba(self, stream=0) -> None:
        """The same launch the way Numba does it every time (a baseline for benches)."""
        self.dispatcher[self.grid, self.block, stream](*self.args)

    def _bind(self) -> None:
        from numba import config

        if config.ENABLE_CUDASIM:
            return
        try:
            from numba.cuda import dispatcher as nd
        except ImportError:
            return
        if not all(hasattr(nd, a) for a in ("launch", "LaunchConfig", "CUDA_CORE_GE_1_0")):
            return
        d = self.dispatcher
        kernel = d.overloads.get(tuple(d.typeof_pyval(a) for a in self.args))
        if kernel is None or getattr(kernel, "debug", False) or \
                getattr(kernel, "cooperative", False):
            return
        params: list = []
        written_back: list = []
        for t, v in zip(kernel.argument_types, self.args):
            kernel._prepare_args(t, v, 0, written_back, params)
        if written_back:  # a host array was copied over: not a fixed argument
            return
        shape = dict(grid=self.grid, block=self.block, shmem_size=0)
        flag = "is_cooperative" if nd.CUDA_CORE_GE_1_0 else "cooperative_launch"
        self._config = nd.LaunchConfig(**shape, **{flag: False})
        self._kernel = kernel._codelibrary.get_cufunc().kernel
        self._params = params
        self._launch = nd.launch
        self._to_core = getattr(nd.driver, "_to_core_stream", lambda s: s)
        self._streams: dict[int, tuple] = {}
        self.bound = True
