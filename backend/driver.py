"""The CUDA driver calls the executor makes for every batch, through ctypes.

On the H200 machine's host each PyTorch operation costs the thread that also launches
the training step 10-35 us (five staging copies 0.13
ms, the assembly's zeroing and read-back 0.045 ms), and cuda.core's launch converts every
kernel parameter on each call. A driver call through ctypes costs a few microseconds; the
executor makes these for the copies and launches whose addresses stay the same from batch to batch.
`available()` is False on a machine without libcuda (the CPU and the CUDA simulator):
callers keep their PyTorch or Numba path there.
"""

from __future__ import annotations

import ctypes
import os

_LIB: list = []  # the loaded calls, or None where libcuda is missing (empty: not tried)

use = True
"""False: the executor's per-batch copies go through PyTorch and its launches through
cuda.core (a same-run baseline for these calls)."""

CARVEOUT_ENV = "CORUN_SMEM_CARVEOUT"
"""An experiment: where set to a percent (0-100),
every kernel the executor binds to the driver gets that preferred shared-memory carveout
(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) before its first driver launch. A
fused kernel that uses no shared memory may leave the SMs it holds configured with
little, so a training GEMM that needs some fits fewer blocks beside it. Ruled out on the
H200: at 100% the GEMM was still held
(425 us median beside the fused kernel, 33 alone) and eager heavy-lean b16384's plan took
4.41-4.42 ms against 4.43-4.45 without it."""
_PREFERRED_SHARED_MEMORY_CARVEOUT = 9  # CUfunction_attribute


def carveout_percent() -> int | None:
    """The preferred carveout CORUN_SMEM_CARVEOUT asks for, or None where it is unset;
    a value outside 0-100 is an error naming the variable."""
    raw = os.environ.get(CARVEOUT_ENV, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if not 0 <= value <= 100:
        raise ValueError(f"{CARVEOUT_ENV} must be a whole percent in 0-100, got {raw!r}")
    return value


def _calls():
    if not _LIB:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            calls = {"launch": lib.cuLaunchKernel, "htod": lib.cuMemcpyHtoDAsync_v2,
                     "dtoh": lib.cuMemcpyDtoHAsync_v2, "memset32": lib.cuMemsetD32Async,
                     "graph": lib.cuGraphLaunch, "kernel_attr": lib.cuKernelSetAttribute,
                     "ctx_device": lib.cuCtxGetDevice}
        except (OSError, AttributeError):
            calls = None
        else:
            p, u, n = ctypes.c_void_p, ctypes.c_uint, ctypes.c_size_t
            calls["launch"].argtypes = [p] + [u] * 7 + [p] * 3
            calls["htod"].argtypes = [p, p, n, p]
            calls["dtoh"].argtypes = [p, p, n, p]
            calls["memset32"].argtypes = [p, u, n, p]
            calls["graph"].argtypes = [p, p]
            calls["kernel_attr"].argtypes = [ctypes.c_int, ctypes.c_int, p, ctypes.c_int]
            calls["ctx_device"].argtypes = [ctypes.POINTER(ctypes.c_int)]
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


def set_preferred_carveout(kernel: int, percent: int) -> None:
    """cuKernelSetAttribute(PREFERRED_SHARED_MEMORY_CARVEOUT, percent, kernel, the current
    context's device): `kernel` a CUkernel (cuda.core's Kernel.handle)."""
    device = ctypes.c_int()
    _check(_calls()["ctx_device"](ctypes.byref(device)), "cuCtxGetDevice")
    _check(_calls()["kernel_attr"](_PREFERRED_SHARED_MEMORY_CARVEOUT, percent, kernel,
                                   device.value), "cuKernelSetAttribute")
