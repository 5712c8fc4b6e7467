"""Launching one Numba CUDA kernel many times over the same arguments, at little host cost.

Numba types and marshals every argument on every launch. A fused kernel takes about 15
device arrays (7 parameters each), and on the H200 machine's host a launch cost 0.54-1.05
ms of Python against 0.02-0.3 ms of GPU, on
the thread that also launches the training step. The executor launches the same kernel
over the same pools every batch, so here the parameters are packed once, after a first
launch through Numba. cuda.core's `launch` still converts every parameter on each call
(0.07-0.22 ms of host per fused kernel against Numba's 0.22-0.59 ms), so the packed
parameters are kept as C values behind one array of pointers and each later launch is one
`cuLaunchKernel` call (the driver's own ABI), checked at binding against the kernel's
parameter sizes.
"""

from __future__ import annotations

import ctypes
import warnings
from collections.abc import Sequence

import numpy as np
from corun.backend import driver


def driver_arguments(params: Sequence[object], sizes: Sequence[int]):
    """(the C values, an array of pointers to them) for cuLaunchKernel from Numba's packed
    parameters (Python ints for pointers and extents, ctypes scalars, bools), or None
    where a parameter's size differs from the kernel's (`sizes`, the driver's own account)."""
    values = []
    for p in params:
        if isinstance(p, bool):
            values.append(ctypes.c_bool(p))
        elif isinstance(p, int):
            values.append(ctypes.c_int64(p))
        elif isinstance(p, ctypes._SimpleCData):
            values.append(p)
        else:
            return None
    if len(values) != len(sizes) or any(ctypes.sizeof(v) != n for v, n in zip(values, sizes)):
        return None
    pointers = (ctypes.c_void_p * max(len(values), 1))(*map(ctypes.addressof, values))
    return values, pointers


def stream_address(stream) -> int:
    """The CUstream address of a Numba stream (0: the default stream)."""
    if not stream:
        return 0
    h = getattr(stream, "handle", stream)
    h = getattr(h, "value", h)  # a ctypes handle
    return int(h or 0)


class BoundLaunch:
    """`dispatcher[grid, block, stream](*args)` for any stream, with `args` (device
    arrays and integers that stay the same) packed at the first launch: later launches
    call the driver (`driver` True, unless `backend.driver.use` is off) or cuda.core's
    `launch`. Falls back to Numba's own launch in the CUDA simulator or if this
    numba-cuda lacks the internals used (`bound` says which)."""

    def __init__(self, dispatcher, grid: int | tuple[int, int], block: int,
                 args: Sequence[object]) -> None:
        self.dispatcher, self.grid, self.block = dispatcher, grid, block
        self.args = tuple(args)
        self.bound = self.driver = False
        self._tried = False

    def __call__(self, stream=0) -> None:
        if self.bound:
            key = id(stream)
            if key not in self._streams:  # converted as Numba does, once per stream
                self._streams[key] = (stream, self._to_core(stream), stream_address(stream))
            if self.driver and driver.use:
                driver.launch_kernel(self._function, self._shape, self._streams[key][2],
                                     self._pointers)
                return
            self._launch(self._streams[key][1], self._config, self._kernel, *self._params)
            return
        if self._tried:  # not bound (the CUDA simulator, or internals missing)
            self.dispatcher[self.grid, self.block, stream](*self.args)
            return
        with warnings.catch_warnings():
            # plans launch a few blocks on purpose (a thin kernel beside training, the
            # batch's one-block start finder), below Numba's 128-block warning
            warnings.filterwarnings("ignore", message=".*Grid size .* under-utilization")
            self.dispatcher[self.grid, self.block, stream](*self.args)  # compiles
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
        self._bind_driver()

    def _bind_driver(self) -> None:
        """The driver's launch over C copies of the packed parameters, where libcuda and
        the kernel's parameter sizes (cuFuncGetParamInfo) can be had and agree."""
        if not driver.available():
            return
        try:
            function, sizes = driver_entry(self._kernel)
        except Exception:  # an older driver or cuda.core: cuda.core's launch it is
            return
        packed = driver_arguments(self._params, sizes)
        if packed is None:
            return
        gx, gy = self.grid if isinstance(self.grid, tuple) else (self.grid, 1)
        self._shape = (gx, gy, 1, self.block, 1, 1, 0)
        self._values, pointers = packed
        self._pointers_array = pointers  # kept alive: the driver reads through it
        self._pointers = ctypes.addressof(pointers)
        self._function = function
        self.driver = True
        carveout = driver.carveout_percent()
        if carveout is not None:
            driver.set_preferred_carveout(function, carveout)


def driver_entry(cu_kernel) -> tuple[int, list[int]]:
    """(CUfunction address, its parameters' sizes from cuFuncGetParamInfo) of a compiled
    kernel (cuda.core's); raises where this driver or cuda.core cannot tell them."""
    sizes = [getattr(p, "size", None) or p[1] for p in cu_kernel.arguments_info]
    return int(cu_kernel.handle), sizes


def tensor_params(args: Sequence[object]) -> list:
    """Numba's packed kernel parameters for `args` (torch tensors and ctypes-convertible
    scalars), built from the tensors' own pointers and shapes: for an array, meminfo and
    parent (0), its size and item size, its address, its shape, its strides in bytes (C
    order from the shape where the tensor is contiguous, as Numba takes them). Checked
    against Numba's own packing when a TensorLaunch binds."""
    params: list = []
    for a in args:
        if hasattr(a, "data_ptr"):
            item = a.element_size()
            shape = tuple(a.shape)
            if a.is_contiguous():
                strides, step = [], item
                for n in reversed(shape):
                    strides.append(step)
                    step *= n
                strides.reverse()
            else:
                strides = [s * item for s in a.stride()]
            params += [0, 0, a.numel(), item, a.data_ptr(), *shape, *strides]
        elif isinstance(a, bool | np.bool_):
            params.append(bool(a))
        elif isinstance(a, np.float32):
            params.append(ctypes.c_float(a))
        elif isinstance(a, np.float64 | float):
            params.append(ctypes.c_double(a))
        elif isinstance(a, np.integer):
            params.append(getattr(ctypes, f"c_{a.dtype}")(int(a)))
        elif isinstance(a, int):
            params.append(ctypes.c_int64(a))
        else:
            raise TypeError(f"no packing for a {type(a).__name__} argument")
    return params


def _arg_kind(a: object) -> tuple:
    if hasattr(a, "data_ptr"):
        return (str(a.dtype), a.dim(), a.is_contiguous())
    return (type(a).__name__,)


class TensorLaunch:
    """`dispatcher[grid, block, stream](*args)` over torch tensors that change from call
    to call, at one driver call's host cost. Numba converts each tensor and types every
    argument on every launch: 0.30-0.42 ms of host a launch of the trainer's embedding
    kernels on the H200, on the thread that
    launches the step. The first launch of each argument signature goes through Numba
    (it compiles); then, where Numba's packing of those arguments equals
    `tensor_params`' and the driver can be called, later launches pack the tensors' own
    addresses and shapes and call cuLaunchKernel. Elsewhere (the CUDA simulator, another
    numba-cuda) every launch stays Numba's."""

    def __init__(self, dispatcher) -> None:
        self.dispatcher = dispatcher
        self.bound: dict[tuple, tuple[int, list[int]] | None] = {}
        """Argument signature -> (the kernel's CUfunction address, its parameters'
        sizes), or None: Numba's launch."""

    def __call__(self, grid: int, block: int, stream: int, *args) -> None:
        """Launch on the CUstream at address `stream` (0: the default stream)."""
        key = tuple(_arg_kind(a) for a in args)
        bound = self.bound.get(key)
        if bound is not None:
            function, sizes = bound
            packed = driver_arguments(tensor_params(args), sizes)
            if packed is not None:
                driver.launch_kernel(function, (grid, 1, 1, block, 1, 1, 0), stream,
                                     ctypes.addressof(packed[1]))
                return
        from numba import cuda

        numba_args = [cuda.as_cuda_array(a) if hasattr(a, "data_ptr") else a for a in args]
        self.dispatcher[grid, block, cuda.external_stream(stream) if stream else 0](*numba_args)
        if key not in self.bound:
            self.bound[key] = self._bind(numba_args, args)

    def _bind(self, numba_args: list, args: Sequence[object]) -> tuple[int, list[int]] | None:
        """(CUfunction address, parameter sizes) where tensor_params packs `args` as
        Numba packed `numba_args`; None where it does not or cannot be told."""
        from numba import config

        if config.ENABLE_CUDASIM or not driver.available():
            return None
        try:
            d = self.dispatcher
            kernel = d.overloads[tuple(d.typeof_pyval(a) for a in numba_args)]
            params: list = []
            for t, v in zip(kernel.argument_types, numba_args):
                kernel._prepare_args(t, v, 0, [], params)
            function, sizes = driver_entry(kernel._codelibrary.get_cufunc().kernel)
        except Exception:  # internals of another numba-cuda: Numba's launch it is
            return None
        theirs = driver_arguments(params, sizes)
        ours = driver_arguments(tensor_params(args), sizes)
        if theirs is None or ours is None or \
                [v.value for v in theirs[0]] != [v.value for v in ours[0]]:
            return None
        return function, sizes
