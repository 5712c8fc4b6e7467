"""The CUDA driver calls the executor makes for every batch, through ctypes.

On the H200 machine's host each PyTorch operation costs the thread that also launches
the training step 10-35 us (`python bench/host_breakdown.py`: five staging copies 0.13
ms, the assembly's zeroing and read-back 0.045 ms; bench/results/raw/
host_breakdown_h200_run1.json), and cuda.core's launch converts every kernel parameter
on each call. A driver call through ctypes costs a few microseconds; the executor makes
these for the copies and launches whose addresses stay the same from batch to batch.
`available()` is False on a machine without libcuda (the CPU and the CUDA simulator):
callers keep their PyTorch or Numba path there.
"""

from __future__ import annotations

import ctypes

_LIB: list = []  # the loaded calls, or None where libcuda is missing (empty: not tried)

use = True
"""False: the executor's per-batch copies go through PyTorch and its launches through
cuda.core, as before these calls (the same-run baseline of bench/execute_gpu.py's
"+core")."""


def _calls():
    if not _LIB:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            calls = {"launch": lib.cuLaunchKernel, "htod": lib.cuMemcpyHtoDAsync_v2,
                     "dtoh": lib.cuMemcpyDtoHAsync_v2, "memset32": lib.cuMemsetD32Async,
                     "graph": lib.cuGraphLaunch}
        except (OSError, AttributeError):
            calls = None
        else:
            p, u, n = ctypes.c_void_p, ctypes.c_uint, ctypes.c_size_t
            calls["launch"].argtypes = [p] + [u] * 7 + [p] * 3
            calls["htod"].argtypes = [p, p, n, p]
            calls["dtoh"].argtypes = [p, p, n, p]
            calls["memset32"].argtypes = [p, u, n, p]
            calls["graph"].argtypes = [p, p]
            for f in calls.values():
                f.restype = ctypes.c_int
        _LIB.append(calls)
    return _LIB[0]


def available() -> bool:
    """Whether libcuda's calls can be made here (not in Numba's CUDA simulator)."""
    from numba import config

    return not config.ENABLE_CUDASIM and _calls() is not None


def _check(rc: int, what: str) -> None:
    if rc:
        raise RuntimeError(f"CUDA driver call {what} failed: CUresult {rc}")


def launch_kernel(function: int, shape: tuple[int, ...], stream: int, pointers: int) -> None:
    """cuLaunchKernel(function, *shape (grid xyz, block xyz, shared bytes), stream,
    pointers: the address of an array of pointers to the parameters)."""
    _check(_calls()["launch"](function, *shape, stream, pointers, None), "cuLaunchKernel")


def copy_to_device(dst: int, src: int, nbytes: int, stream: int) -> None:
    """Copy `nbytes` from pinned host memory at `src` to device address `dst`, on `stream`."""
    _check(_calls()["htod"](dst, src, nbytes, stream), "cuMemcpyHtoDAsync")


def copy_to_host(dst: int, src: int, nbytes: int, stream: int) -> None:
    """Copy `nbytes` from device address `src` to pinned host memory at `dst`, on `stream`."""
    _check(_calls()["dtoh"](dst, src, nbytes, stream), "cuMemcpyDtoHAsync")


def zero_words(dst: int, words: int, stream: int) -> None:
    """Set `words` 32-bit words at device address `dst` to zero, on `stream`."""
    _check(_calls()["memset32"](dst, 0, words, stream), "cuMemsetD32Async")


def launch_graph(graph_exec: int, stream: int) -> None:
    """cuGraphLaunch: an instantiated CUDA graph (its CUgraphExec address) on `stream`."""
    _check(_calls()["graph"](graph_exec, stream), "cuGraphLaunch")
