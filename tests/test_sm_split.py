"""The preprocessing stream confined to some SMs (Plan.preprocess_sm_cap,
backend/sm_split.py): refused where it cannot run; on a GPU, both streams compute right
on SMs of their own."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from corun.backend.settings import RunSettings
from corun.spec import Plan, SpecError, model_preset, pipeline_preset

real_cuda = pytest.mark.skipif(
    not torch.cuda.is_available() or os.environ.get("NUMBA_ENABLE_CUDASIM") == "1",
    reason="needs a CUDA GPU and Numba's real CUDA target (NUMBA_ENABLE_CUDASIM=0)")


@real_cuda
def test_training_runs_above_preprocessing_and_assemblies_may_have_their_own_stream():
    from corun.backend.streams import Streams

    device = torch.device("cuda", 0)
    usual = Streams(device, training_high=True)
    assert usual.train.priority < usual.pre.priority  # lower number, higher priority
    assert usual.assembly is usual.pre  # by default the assemblies queue behind the kernels
    own = Streams(device, training_high=True, assembly_stream=True)
    assert own.assembly is not own.pre and own.assembly.priority == own.pre.priority


def test_the_executor_refuses_to_cap_a_cpu():
    from corun.backend.executor import Executor

    model, pipeline = model_preset("criteo-kaggle"), pipeline_preset("kaggle")
    empty = Plan(pipeline.name, model.name, 1, ())
    with pytest.raises(SpecError, match="preprocess_sm_cap = 16: 0 on a CPU"):
        Executor(model, pipeline, empty, "ideal", RunSettings(preprocess_sm_cap=16), "cpu",
                 replay=True)


def test_a_negative_cap_is_refused():
    with pytest.raises(SpecError, match="preprocess_sm_cap = -1: None .as the plan says. or "
                                        "an integer >= 0"):
        RunSettings(preprocess_sm_cap=-1)
    assert RunSettings().preprocess_sm_cap is None  # as the plan says


@real_cuda
def test_split_streams_run_numba_and_torch_on_disjoint_sms():
    from corun.backend import compat  # noqa: F401  (before the first CUDA compile)
    from corun.backend.sm_split import split_sms
    from numba import cuda

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
def test_a_kernel_captured_on_the_green_side_stream_keeps_to_its_sms_when_replayed():
    """Blocks that only sleep take as many waves as the SMs they may use allow: 16 SMs
    take several times as long as every SM, eager or replayed from a graph captured on
    the split's side stream (backend/batch_graphs.py)."""
    from corun.backend import compat  # noqa: F401  (before the first CUDA compile)
    from corun.backend.batch_graphs import capture
    from corun.backend.sm_split import split_sms
    from numba import cuda

    @cuda.jit
    def sleep_blocks(out):
        for _ in range(20):
            cuda.nanosleep(5000)
        if cuda.threadIdx.x == 0:
            out[cuda.blockIdx.x] = 1

    device = torch.device("cuda:0")
    total = torch.cuda.get_device_properties(0).multi_processor_count
    s = split_sms(device, 16, training_high=True)
    out = torch.zeros(4 * total, device=device)
    every = torch.cuda.Stream(device)

    def work(stream) -> None:
        sleep_blocks[4 * total, 1024, cuda.external_stream(stream.cuda_stream)](
            cuda.as_cuda_array(out))

    def timed(launch, stream) -> float:
        launch(stream)  # compiles and warms
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(stream)
        launch(stream)
        end.record(stream)
        end.synchronize()
        return start.elapsed_time(end)

    graph = capture(work, s.pre_side)
    alone, eager, replayed = (timed(work, every), timed(work, s.pre),
                              timed(graph.launch, s.pre))
    assert bool((out == 1).all())
    assert eager > 3 * alone and replayed > 3 * alone, (alone, eager, replayed)


@real_cuda
def test_training_keeps_at_least_eight_sms():
    from corun.backend.sm_split import split_sms

    total = torch.cuda.get_device_properties(0).multi_processor_count
    with pytest.raises(SpecError, match="preprocess_sm_cap"):
        split_sms(torch.device("cuda:0"), total - 4, training_high=True)


@real_cuda
def test_corun_runs_a_plan_with_preprocessing_confined_and_checks_it():
    """Plan.preprocess_sm_cap end to end (RunSettings.preprocess_sm_cap None: as the plan
    says): the preprocessing stream in a green context of 64 SMs, training on an
    ordinary stream (every SM); every batch checked, the cap noted."""
    from dataclasses import replace

    from corun.backend.executor import Executor
    from corun.backend.streams import Streams
    from corun.spec import one_kernel_plan

    device = torch.device("cuda:0")
    capped = Streams(device, training_high=True, pre_cap=64)
    assert capped.split.pre_sms >= 64 and capped.pre is capped.split.pre
    assert capped.train is not capped.split.train and capped.assembly is capped.pre
    model = replace(model_preset("heavy-lean"), batch_per_gpu=512, cuda_graphs=False)
    pipeline = pipeline_preset("heavy-small")
    plan = replace(one_kernel_plan(pipeline, model.name, 1, "interaction_bwd", 198, 256),
                   preprocess_sm_cap=64)
    settings = RunSettings(iterations=12, warmup=3, distinct_batches=2, check_timed=True)
    ex = Executor(model, pipeline, plan, "corun-cap64", settings, "cuda:0")
    m = ex.run()
    assert m.checked_rows == 15 * 512
    assert ex.lanes[0].graphs.graphs  # each batch's work replayed, captured in the context
    assert any(n.startswith("preprocessing confined to 64 SMs, training on every SM")
               for n in m.notes)


def test_a_plan_s_cap_is_one_gpu_s_and_names_its_range():
    from dataclasses import replace

    from corun.spec import one_kernel_plan

    plan = one_kernel_plan(pipeline_preset("heavy-small"), "heavy-lean", 1,
                           "interaction_bwd", 198, 256)
    assert plan.preprocess_sm_cap == 0 and replace(plan, preprocess_sm_cap=96)
    with pytest.raises(SpecError, match=r"preprocess_sm_cap = 4: an integer in \[8, 4096\]"):
        replace(plan, preprocess_sm_cap=4)
    with pytest.raises(SpecError, match="preprocess_sm_cap = 96: 0 with several GPUs"):
        replace(plan, gpu_count=2, preprocess_sm_cap=96)


def test_a_plan_s_cap_is_left_aside_on_a_cpu_but_a_flag_s_is_refused():
    """A plan tuned on a GPU still runs on the host for checks (no SMs to confine);
    asked for explicitly there, the cap is an error that names it."""
    from dataclasses import replace

    from corun.backend.executor import Executor
    from corun.spec import one_kernel_plan

    model, pipeline = model_preset("criteo-kaggle"), pipeline_preset("kaggle")
    plan = replace(one_kernel_plan(pipeline, model.name, 1, "top_mlp_fwd", 64, 256),
                   preprocess_sm_cap=96)
    ex = Executor(model, pipeline, plan, "corun-cap96", RunSettings(), "cpu")
    assert ex.pre_cap == 0
    with pytest.raises(SpecError, match="preprocess_sm_cap = 96: 0 on a CPU"):
        Executor(model, pipeline, plan, "corun-cap96", RunSettings(preprocess_sm_cap=96),
                 "cpu")


def test_no_green_contexts_without_a_driver():
    """This CPU machine has no CUDA driver: green contexts are not supported, and say so
    instead of raising."""
    from corun.backend.sm_split import green_contexts_supported

    if torch.cuda.is_available():
        pytest.skip("a GPU machine: its driver decides")
    assert green_contexts_supported() is False


def test_a_plan_s_cap_the_gpu_cannot_run_is_left_out_and_says_why():
    """corun plan caps for the GPU it plans for (96 of an H200's 132); where the plan runs
    on a GPU without green contexts, or with too few SMs for that cap, the executor runs
    it on every SM and says why (a cap given by flag is refused instead)."""
    from corun.backend.sm_split import runnable_cap

    assert runnable_cap(96, True, 132) == (96, "")
    assert runnable_cap(0, False, 132) == (0, "")  # uncapped: nothing to say
    cap, why = runnable_cap(96, False, 132)
    assert cap == 0 and "no green contexts" in why
    assert runnable_cap(96, True, 104) == (96, "")  # training keeps 8
    cap, why = runnable_cap(96, True, 78)  # an L40S-sized GPU
    assert cap == 0 and why == "this GPU has 78 SMs (training keeps at least 8)"


def test_the_executor_says_and_notes_a_plan_cap_it_leaves_out(monkeypatch):
    """Executor._plan_cap on a GPU whose driver makes no green contexts: the plan's cap is
    left out, said, and kept for the Measurement's notes (stubbed device: no GPU here)."""
    from types import SimpleNamespace

    import corun.backend.sm_split as sm_split
    import torch
    from corun.backend.executor import Executor

    said = []
    fake = SimpleNamespace(device="cuda:0", strategy="corun", say=said.append, cap_left_out="")
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda _: SimpleNamespace(multi_processor_count=132))
    monkeypatch.setattr(sm_split, "green_contexts_supported", lambda: False)
    assert Executor._plan_cap(fake, 96) == 0
    assert said == [f"corun: {fake.cap_left_out}"]
    assert fake.cap_left_out.startswith("the plan's preprocessing SM cap (96) left out")
    monkeypatch.setattr(sm_split, "green_contexts_supported", lambda: True)
    fake.cap_left_out = ""
    assert Executor._plan_cap(fake, 96) == 96 and fake.cap_left_out == ""
    assert Executor._plan_cap(fake, 0) == 0 and len(said) == 1
