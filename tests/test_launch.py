"""Bound launches (backend/launch.py) and the driver's per-batch calls
(backend/driver.py): the packed parameters as the driver reads them, and on a GPU the
driver's launch computing what Numba's own does and its copies moving what PyTorch's do."""

from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest
import torch
from corun.backend import (
    compat,  # noqa: F401  (before the first CUDA compile)
    driver,
)
from corun.backend.launch import (
    BoundLaunch,
    TensorLaunch,
    driver_arguments,
    stream_address,
    tensor_params,
)
from numba import cuda

real_cuda = pytest.mark.skipif(
    not torch.cuda.is_available() or os.environ.get("NUMBA_ENABLE_CUDASIM") == "1",
    reason="needs a CUDA GPU and Numba's real CUDA target (NUMBA_ENABLE_CUDASIM=0)")


@cuda.jit
def add(x, k):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += k


@cuda.jit
def axpy(out, x, n, a, flip):
    i = cuda.grid(1)
    if i < n:
        v = a * x[i] + out[i]
        out[i] = -v if flip else v


def test_packed_parameters_are_read_back_through_the_pointer_array():
    params = [0, 0, 12, 8, 0x7F0000001000, ctypes.c_int32(-5), ctypes.c_float(1.5), True]
    values, pointers = driver_arguments(params, [8, 8, 8, 8, 8, 4, 4, 1])
    read = [ctypes.cast(pointers[k], ctypes.POINTER(type(v))).contents.value
            for k, v in enumerate(values)]
    assert read == [0, 0, 12, 8, 0x7F0000001000, -5, 1.5, True]


@pytest.mark.parametrize("sizes", [[8, 8], [8, 8, 8, 4], [8, 8, 8]])
def test_parameters_the_kernel_reads_otherwise_are_not_packed(sizes):
    assert driver_arguments([1, 2, ctypes.c_int32(3)], sizes) is None
    assert driver_arguments([1, "x"], [8, 8]) is None


def test_a_default_stream_has_address_zero():
    assert stream_address(0) == 0 and stream_address(None) == 0

    class Handle:
        value = 0xABC

    class Stream:
        handle = Handle()

    assert stream_address(Stream()) == 0xABC


def test_the_simulator_launches_through_numba_unbound():
    from numba import config

    if not config.ENABLE_CUDASIM:
        pytest.skip("the CUDA simulator's path (NUMBA_ENABLE_CUDASIM=1)")
    x = cuda.to_device(np.zeros(40, np.int64))
    launch = BoundLaunch(add, 2, 32, (x, 3))
    launch()
    launch()
    assert not launch.bound and not launch.driver
    assert (x.copy_to_host() == 6).all()


@cuda.jit
def scale(x, k):
    i = cuda.grid(1)
    if i < x.size:
        x[i] *= k


@real_cuda
def test_the_carveout_switch_sets_the_bound_kernels_attribute(monkeypatch):
    """CORUN_SMEM_CARVEOUT: the kernel bound to the driver reads back the preferred
    carveout asked for (cuKernelGetAttribute) and still computes."""
    monkeypatch.setenv(driver.CARVEOUT_ENV, "25")
    x = cuda.to_device(np.full(512, 2.0, np.float32))
    launch = BoundLaunch(scale, 2, 256, (x, np.float32(3.0)))
    launch()  # compiles through Numba, then binds
    launch()  # through the driver
    cuda.synchronize()
    assert launch.driver
    np.testing.assert_array_equal(x.copy_to_host(), np.full(512, 18.0, np.float32))
    lib = ctypes.CDLL("libcuda.so.1")
    value, device = ctypes.c_int(), ctypes.c_int()
    assert lib.cuCtxGetDevice(ctypes.byref(device)) == 0
    get = lib.cuKernelGetAttribute
    get.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    assert get(ctypes.byref(value), 9, launch._function, device.value) == 0
    assert value.value == 25


@real_cuda
def test_the_driver_launch_computes_as_numba_on_any_stream():
    x = cuda.to_device(np.arange(1000, dtype=np.float32))
    mine = cuda.to_device(np.ones(1000, np.float32))
    theirs = cuda.to_device(np.ones(1000, np.float32))
    args = (np.int64(900), np.float32(0.5), True)
    launch = BoundLaunch(axpy, 4, 256, (mine, x, *args))
    stream = cuda.external_stream(torch.cuda.Stream().cuda_stream)
    for s in (0, stream, stream):
        launch(s)
        axpy[4, 256, s](theirs, x, *args)
    cuda.synchronize()
    assert launch.bound and launch.driver
    np.testing.assert_array_equal(mine.copy_to_host(), theirs.copy_to_host())
    assert mine.copy_to_host()[950] == 1.0  # past n: untouched


def test_without_libcuda_the_driver_is_not_available():
    from numba import config

    if config.ENABLE_CUDASIM:
        assert not driver.available()


@real_cuda
def test_driver_copies_and_zeroing_move_what_pytorch_moves():
    stream = torch.cuda.Stream()
    host = torch.arange(1000, dtype=torch.int64).pin_memory()
    dev = torch.full((1200,), -1, dtype=torch.int64, device="cuda")
    back = torch.zeros(1000, dtype=torch.int64).pin_memory()
    driver.copy_to_device(dev.data_ptr(), host.data_ptr(), 8000, stream.cuda_stream)
    driver.zero_words(dev.data_ptr() + 8 * 10, 2 * 5, stream.cuda_stream)
    driver.copy_to_host(back.data_ptr(), dev.data_ptr(), 8000, stream.cuda_stream)
    stream.synchronize()
    want = torch.arange(1000, dtype=torch.int64)
    want[10:15] = 0
    assert torch.equal(back, want)
    assert (dev[1000:].cpu() == -1).all()  # nothing past the copy
    with pytest.raises(RuntimeError, match="cuMemcpyHtoDAsync failed"):
        driver.copy_to_device(0, host.data_ptr(), 8, stream.cuda_stream)


def test_tensor_params_pack_as_numba_lays_an_array_out():
    """An array: meminfo and parent (0), size, item size, address, shape, strides in bytes
    (C order from the shape where contiguous, a size-1 dimension's included); scalars as
    the C types Numba gives them."""
    t = torch.zeros(3, 1, 4, dtype=torch.float32)
    step = torch.zeros(4, 6, dtype=torch.int64)[:, ::2]
    p = tensor_params([t, step, np.float32(0.25), 7, True, np.int32(-2)])
    assert p[:11] == [0, 0, 12, 4, t.data_ptr(), 3, 1, 4, 16, 16, 4]
    assert p[11:20] == [0, 0, 12, 8, step.data_ptr(), 4, 3, 48, 16]
    assert isinstance(p[20], ctypes.c_float) and p[20].value == 0.25
    assert isinstance(p[21], ctypes.c_int64) and p[21].value == 7
    assert p[22] is True and isinstance(p[23], ctypes.c_int32) and p[23].value == -2
    with pytest.raises(TypeError, match="no packing for a str"):
        tensor_params(["x"])


@real_cuda
def test_tensor_launch_binds_and_computes_as_numba_on_new_tensors():
    """Bound after its first launch, the driver's launch over each call's own tensors
    gives what Numba's launch gives, on a stream of PyTorch's."""
    launch = TensorLaunch(axpy)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for n in (1000, 700, 1000):
            x = torch.arange(n, dtype=torch.float32, device="cuda")
            mine = torch.ones(n, device="cuda")
            theirs = torch.ones(n, device="cuda")
            launch(4, 256, stream.cuda_stream, mine, x, np.int64(n - 100), np.float32(0.5),
                   True)
            axpy[4, 256, cuda.external_stream(stream.cuda_stream)](
                cuda.as_cuda_array(theirs), cuda.as_cuda_array(x), np.int64(n - 100),
                np.float32(0.5), True)
            stream.synchronize()
            assert torch.equal(mine, theirs) and mine[n - 50] == 1.0
    assert list(launch.bound.values()) and all(launch.bound.values())
