"""Each batch's preprocessing calls as CUDA graphs (backend/batch_graphs.py): a key runs
eagerly once, is captured at its second call and replayed after; off, always eager. On a
GPU, the executor's batches (every one checked against the reference) come out the same
with and without the graphs."""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pytest
import torch
from corun.backend.batch_graphs import WorkGraphs

real_cuda = pytest.mark.skipif(
    not torch.cuda.is_available() or os.environ.get("NUMBA_ENABLE_CUDASIM") == "1",
    reason="needs a CUDA GPU and Numba's real CUDA target (NUMBA_ENABLE_CUDASIM=0)")


class _Recorded:
    """A stand-in graph: remembers the work captured and the streams it was launched on."""

    def __init__(self, work, side) -> None:
        self.work, self.side, self.launched = work, side, []

    def launch(self, stream) -> None:
        self.launched.append(stream)


def test_a_key_runs_eagerly_once_then_is_captured_once_and_replayed():
    done: list[tuple[str, object]] = []
    graphs = WorkGraphs(True, side="side", capture=_Recorded)
    for stream in ("s1", "s2", "s3"):
        graphs.run("a", lambda s: done.append(("a", s)), stream)
    graphs.run("b", lambda s: done.append(("b", s)), "s4")
    assert done == [("a", "s1"), ("b", "s4")]  # eager only at each key's first call
    assert set(graphs.graphs) == {"a"}
    g = graphs.graphs["a"]
    assert g.side == "side" and g.launched == ["s2", "s3"]
    g.work("x")  # the captured work is the work given
    assert done[-1] == ("a", "x")


class _Stream:
    def __init__(self, handle: int) -> None:
        self.cuda_stream = handle


def test_work_for_a_green_context_stream_is_captured_on_that_context_s_side_stream():
    green, plain = _Stream(7), _Stream(9)
    graphs = WorkGraphs(True, side="side", capture=_Recorded, sides={7: "green side"})
    for _ in range(2):
        graphs.run("kernel", lambda s: None, green)
        graphs.run("copy", lambda s: None, plain)
    assert graphs.graphs["kernel"].side == "green side"
    assert graphs.graphs["copy"].side == "side"


def test_off_every_call_is_eager():
    done: list[object] = []
    graphs = WorkGraphs(False, capture=_Recorded)
    for stream in ("s1", "s2", "s3"):
        graphs.run("a", done.append, stream)
    assert done == ["s1", "s2", "s3"] and not graphs.graphs


@real_cuda
@pytest.mark.parametrize("pipeline_name, strategy", [("kaggle", "gpu-overlap"),
                                                     ("heavy", "gpu-sequential")])
def test_graphed_batches_equal_the_reference_as_the_calls_do(pipeline_name, strategy):
    from corun.backend.executor import Executor
    from corun.backend.settings import RunSettings
    from corun.sim.strategy import parse_strategy, strategy_plan
    from corun.spec import DEFAULT_MODEL_FOR, hardware_preset, model_preset, pipeline_preset

    pipeline = pipeline_preset(pipeline_name)
    model = replace(model_preset(DEFAULT_MODEL_FOR[pipeline_name]), batch_per_gpu=1024)
    hw = hardware_preset("h200")
    plan = strategy_plan(parse_strategy(strategy, hw), pipeline, model.name, hw)
    seen = {}
    for on in (True, False):
        settings = RunSettings(iterations=12, warmup=2, distinct_batches=3,
                               preprocess_graphs=on, check_timed=True)
        ex = Executor(model, pipeline, plan, strategy, settings, "cuda:0", say=lambda _: None)
        m = ex.run()
        seen[on] = (m.checked_rows, len(ex.lanes[0].graphs.graphs))
    assert seen[True][0] == seen[False][0] == 1024 * 14  # every batch, warm-up and timed
    assert seen[True][1] > 0 and seen[False][1] == 0  # captured only when on


def test_corun_execute_turns_the_graphs_off_on_request():
    import argparse

    from corun.execute_cmd import add_arguments, build

    p = argparse.ArgumentParser()
    add_arguments(p)
    for extra, on in (([], True), (["--no-batch-graphs"], False)):
        args = p.parse_args(["--strategy", "gpu-sequential", "--device", "cpu", "-o", "m.json",
                             *extra])
        assert build(args).settings.preprocess_graphs is on


@real_cuda
@pytest.mark.parametrize("pipeline_name, model_name, batch, stage, blocks, ahead", [
    ("kaggle", "criteo-kaggle", 2048, "top_mlp_bwd", 66, 2),
    ("kaggle", "criteo-kaggle", 2048, "emb_fwd", 66, 1),
    ("heavy-small", "heavy-lean", 16384, "top_mlp_bwd", 132, 2)])  # graphed: the heavy case
def test_the_trainer_gets_each_batchs_own_labels(pipeline_name, model_name, batch, stage,
                                                 blocks, ahead):
    """The labels each step trains on are its batch's, read in the training stream's
    order: they are copied into the assembly's outputs behind its kernel, before the
    event the training stream waits for (a clone made when the host collected the batch
    queued behind later batches' kernels, and training did not wait for it). On kaggle
    every value of every step's batch equals its reference too, the timed ones assembled
    without the comparison (RunSettings.check_timed off) included."""
    from corun.backend.assembly import HostBatch, check_batch_rows
    from corun.backend.executor import Executor
    from corun.backend.graphed import make_trainer
    from corun.backend.settings import RunSettings
    from corun.spec import hardware_preset, model_preset, one_kernel_plan, pipeline_preset

    pipeline = pipeline_preset(pipeline_name)
    model = replace(model_preset(model_name), batch_per_gpu=batch,
                    cuda_graphs=model_name == "heavy-lean")
    plan = replace(one_kernel_plan(pipeline, model.name, 1, stage, blocks),
                   batches_ahead=ahead, training_priority_high=True)
    trainer = make_trainer(model, "cuda:0", 0)
    seen, values, real = [], [], trainer.step

    def step(batch, clock=None):
        seen.append(batch.labels.clone())  # on the training stream, where the step reads
        if pipeline_name == "kaggle":  # heavy's batches are 0.3 GB each
            values.append(HostBatch.of(batch))
        return real(batch, clock)

    trainer.step = step
    settings = RunSettings(iterations=10, warmup=2, distinct_batches=3)
    ex = Executor(model, pipeline, plan, "corun", settings, "cuda:0", say=lambda _: None,
                  trainer=trainer, hardware=hardware_preset("h200"))
    ex.run()
    torch.cuda.synchronize()
    raw = ex.lanes[0].raw_labels
    assert len(seen) == 12 and not torch.equal(raw[0], raw[1])
    wrong = [i for i, got in enumerate(seen) if not torch.equal(got.cpu(), raw[i % 3].float())]
    assert not wrong, f"steps {wrong} of {len(seen)} trained on another batch's labels"
    lane = ex.lanes[0]
    assert lane.compared_batches == 3  # the timed batches were not compared on the device
    for i, got in enumerate(values):
        assert check_batch_rows(lane.omap, got, lane.references[i % 3],
                                np.arange(batch)) == batch
