"""Shared fixtures. The CUDA simulator must be on before numba is first imported."""

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
# One compute thread a test process: the README's command runs two processes
# (`pytest -n 2`, CI's two cores), and OpenMP and Numba threads spinning beside the other
# process made the suite slower than one process (690 s against 537 s on this 2-core
# machine); with one thread each it took 358 s (session 44).
for _threads in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                 "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

import pytest  # noqa: E402

from corun import spec  # noqa: E402


@pytest.fixture
def h200():
    return spec.hardware_preset("h200", 1)


@pytest.fixture
def kaggle():
    return spec.pipeline_preset("kaggle")


@pytest.fixture
def kaggle_model():
    return spec.model_preset("criteo-kaggle")
