"""The preprocessing stream on SMs of its own (RunSettings.preprocess_sms,
backend/sm_split.py): refused where it cannot run; on a GPU, both streams compute right
and the SMs are split, not shared."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from backend.settings import RunSettings
from spec import Plan, SpecError, model_preset, pipeline_preset

real_cuda = pytest.mark.skipif(
    not torch.cuda.is_available() or os.environ.get("NUMBA_ENABLE_CUDASIM") == "1",
    reason="needs a CUDA GPU and Numba's real CUDA target (NUMBA_ENABLE_CUDASIM=0)")


def test_a_negative_sm_count_is_refused():
    with pytest.raises(SpecError, match="preprocess_sms"):
        RunSettings(preprocess_sms=-1)


def test_preprocessing_first_and_an_sm_split_are_refused_together():
    with pytest.raises(SpecError, match="preprocess_first.*preprocess_sms > 0"):
        RunSettings(preprocess_sms=16, preprocess_first=True)
    assert RunSettings(preprocess_first=True).preprocess_first


@real_cuda
def test_preprocessing_first_puts_its_stream_above_training():
    from backend.streams import Streams

    device = torch.device("cuda", 0)
    first = Streams(device, training_high=True, preprocess_first=True)
    assert first.pre.priority < first.train.priority  # lower number, higher priority
    usual = Streams(device, training_high=True)
    assert usual.train.priority < usual.pre.priority


def test_the_executor_refuses_to_split_a_cpu():
    from backend.executor import Executor

    model, pipeline = model_preset("criteo-kaggle"), pipeline_preset("kaggle")
    empty = Plan(pipeline.name, model.name, 1, ())
    with pytest.raises(SpecError, match="preprocess_sms.*CPU"):
        Executor(model, pipeline, empty, "ideal", RunSettings(preprocess_sms=16), "cpu",
                 replay=True)


@real_cuda
def test_split_streams_run_numba_and_torch_on_disjoint_sms():
    from numba import cuda

    from backend import compat  # noqa: F401  (before the first CUDA compile)
    from backend.sm_split import split_sms

    device = torch.device("cuda:0")
    total = torch.cuda.get_device_properties(0).multi_processor_count
    s = split_sms(device, 16, training_high=True)
    assert s.pre_sms >= 16 and s.train_sms + s.pre_sms == total

    @cuda.jit
    def add_one(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] += 1

    x = torch.zeros(1 << 20, device=device)
    a = torch.randn(1024, 1024, device=device, generator=torch.Generator(device).manual_seed(0))
    want = a @ a
    with torch.cuda.stream(s.pre):
        add_one[1024, 1024, cuda.external_stream(s.pre.cuda_stream)](cuda.as_cuda_array(x))
    with torch.cuda.stream(s.train):
        got = a @ a
    torch.cuda.synchronize()
    assert bool((x == 1).all())
    np.testing.assert_allclose(got.cpu().numpy(), want.cpu().numpy(), rtol=1e-5, atol=1e-4)


@real_cuda
def test_training_keeps_at_least_eight_sms():
    from backend.sm_split import split_sms

    total = torch.cuda.get_device_properties(0).multi_processor_count
    with pytest.raises(SpecError, match="preprocess_sms"):
        split_sms(torch.device("cuda:0"), total - 4, training_high=True)
