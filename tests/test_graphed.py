"""The trainer's step replayed as CUDA graphs (backend/graphed.py): refused where it
cannot run, and on a GPU equal to the eager step."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from backend.fusion import FusedGroup
from backend.graphed import GraphedTrainer, make_trainer
from backend.data import synthetic_inputs
from backend.runner import PipelineProgram, trainer_batch
from backend.trainer import Batch, Clock, Trainer
from corun.workload import shrink_tables
from spec import (
    EmbeddingUpdate,
    Optimizer,
    SpecError,
    Stage,
    hardware_preset,
    model_preset,
    pipeline_preset,
)

gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def small_kaggle(batch: int = 256):
    model = replace(model_preset("criteo-kaggle"), batch_per_gpu=batch, cuda_graphs=True)
    return shrink_tables(model, pipeline_preset("kaggle"), 5000)


def batches(model, pipeline, n: int, seed: int = 0) -> list[Batch]:
    rng = np.random.default_rng(seed)
    group = [FusedGroup(pipeline, pipeline.order, "all")]
    out = []
    for _ in range(n):
        raw = synthetic_inputs(pipeline, model.batch_per_gpu, rng)
        labels = (rng.random(model.batch_per_gpu) < 0.25).astype(np.float32)
        out.append(trainer_batch(pipeline, model, PipelineProgram(pipeline, group, raw).run_cpu(),
                                 labels))
    return out


@pytest.mark.parametrize("field,change", [("optimizer", {"optimizer": Optimizer.ADAGRAD}),
                                          ("embedding_update", {"embedding_update":
                                                                EmbeddingUpdate.FUSED_SGD})])
def test_a_step_that_reads_back_to_the_host_is_refused(field, change):
    with pytest.raises(SpecError, match=field):
        replace(model_preset("criteo-kaggle"), cuda_graphs=True, **change)


def test_graphs_are_refused_on_a_cpu_and_on_several_gpus():
    model, pipeline = small_kaggle()
    with pytest.raises(SpecError, match="cuda_graphs.*CPU"):
        GraphedTrainer(model, "cpu")
    assert type(make_trainer(replace(model, cuda_graphs=False))) is Trainer
    from sim import Scenario, Strategy, StrategyKind, simulate

    sc = Scenario(hardware_preset("h200", 2), model, pipeline, Strategy(StrategyKind.IDEAL))
    with pytest.raises(SpecError, match="cuda_graphs.*several GPUs"):
        simulate(sc)


def test_the_graphed_step_costs_the_host_less_in_simulation():
    from sim import Scenario, Strategy, StrategyKind, simulate

    model = replace(model_preset("criteo-kaggle"), batch_per_gpu=4096)
    sc = Scenario(hardware_preset("h200", 1), model, pipeline_preset("kaggle"),
                  Strategy(StrategyKind.GPU_SEQUENTIAL))
    eager = simulate(sc).prediction
    graphed = simulate(replace(sc, model=replace(model, cuda_graphs=True))).prediction
    assert graphed.iteration_time_ms < 0.9 * eager.iteration_time_ms  # host-paced eagerly


@gpu
def test_the_graphed_step_trains_as_the_eager_one():
    model, pipeline = small_kaggle()
    data = [b.to(torch.device("cuda")) for b in batches(model, pipeline, 3)]
    eager = Trainer(replace(model, cuda_graphs=False), "cuda", seed=1)
    graphed = GraphedTrainer(model, "cuda", seed=1)
    graphed.capture(data[0])  # its warm-up steps train it: start both from eager's weights
    graphed.net.load_state_dict(eager.net.state_dict())
    for i in range(6):
        clock = Clock(torch.device("cuda"))
        a = eager.step(data[i % 3])
        b = graphed.step(data[i % 3], clock)
        torch.cuda.synchronize()
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-6), (i, a.item(), b.item())
        assert set(clock.stage_ms()) == set(Stage) & set(clock.stage_ms())
        assert len(clock.stage_ms()) == 9
    for (name, p), q in zip(eager.net.named_parameters(), graphed.net.parameters()):
        assert torch.allclose(p, q, rtol=1e-4, atol=1e-6), name


@gpu
def test_a_batch_of_another_shape_is_refused_by_name():
    model, pipeline = small_kaggle()
    data = [b.to(torch.device("cuda")) for b in batches(model, pipeline, 1)]
    graphed = GraphedTrainer(model, "cuda")
    graphed.step(data[0])
    short = Batch(data[0].dense, data[0].ids[:-1], data[0].offsets, data[0].labels)
    with pytest.raises(SpecError, match="batch.ids"):
        graphed.step(short)
