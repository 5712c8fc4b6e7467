"""Shared fixtures. The CUDA simulator must be on before numba is first imported."""

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import pytest  # noqa: E402

import spec  # noqa: E402


@pytest.fixture
def h200():
    return spec.hardware_preset("h200", 1)


@pytest.fixture
def kaggle():
    return spec.pipeline_preset("kaggle")


@pytest.fixture
def kaggle_model():
    return spec.model_preset("criteo-kaggle")
