"""The trainer's step replayed as CUDA graphs (backend/graphed.py): refused where it
cannot run, and on a GPU equal to the eager step."""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pytest
import torch
from corun.backend.graphed import GraphedTrainer, make_trainer
from corun.backend.trainer import Batch, Clock, Trainer
from corun.spec import (
    EmbeddingUpdate,
    Optimizer,
    SpecError,
    Stage,
    hardware_preset,
    model_preset,
    pipeline_preset,
)

from corun.workload import shrink_tables

gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
real_cuda = pytest.mark.skipif(
    not torch.cuda.is_available() or os.environ.get("NUMBA_ENABLE_CUDASIM") == "1",
    reason="needs a CUDA GPU and Numba's real CUDA target (NUMBA_ENABLE_CUDASIM=0; the "
    "suite turns the simulator on by default)")


def small_kaggle(batch: int = 256):
    model = replace(model_preset("criteo-kaggle"), batch_per_gpu=batch, cuda_graphs=True)
    return shrink_tables(model, pipeline_preset("kaggle"), 5000)


def batches(model, pipeline, n: int, seed: int = 0) -> list[Batch]:
    from corun.backend.runner import preprocessed_batches

    return preprocessed_batches(model, pipeline, n, np.random.default_rng(seed))


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
    from corun.backend.executor import Executor
    from corun.backend.settings import RunSettings
    from corun.spec import Plan

    empty = Plan(pipeline.name, model.name, 1, (), ())
    with pytest.raises(SpecError, match="cuda_graphs.*CPU"):  # before any batch is made
        Executor(model, pipeline, empty, "ideal", RunSettings(), "cpu", replay=True)
    assert type(make_trainer(replace(model, cuda_graphs=False))) is Trainer
    from corun.sim import Scenario, Strategy, StrategyKind, simulate

    sc = Scenario(hardware_preset("h200", 2), model, pipeline, Strategy(StrategyKind.IDEAL))
    with pytest.raises(SpecError, match="cuda_graphs.*several GPUs"):
        simulate(sc)


def test_the_graphed_step_costs_the_host_less_in_simulation_and_a_hint_says_so():
    from corun.sim import Scenario, Strategy, StrategyKind, simulate

    from corun.advice import shown

    def hints(p):
        return [n for n in shown([p]) if n.startswith("hint: ") and "--cuda-graphs" in n]

    model = replace(model_preset("criteo-kaggle"), batch_per_gpu=4096)
    sc = Scenario(hardware_preset("h200", 1), model, pipeline_preset("kaggle"),
                  Strategy(StrategyKind.GPU_SEQUENTIAL))
    eager = simulate(sc).prediction
    graphed = simulate(replace(sc, model=replace(model, cuda_graphs=True))).prediction
    assert graphed.iteration_time_ms < 0.9 * eager.iteration_time_ms  # host-paced eagerly
    assert len(hints(eager)) == 1 and not hints(graphed)
    gpu_bound = simulate(replace(sc, model=replace(model, batch_per_gpu=16384))).prediction
    assert not hints(gpu_bound)
    adagrad = replace(sc, model=replace(model_preset("mlperf-dcnv2"), batch_per_gpu=4096),
                      pipeline=pipeline_preset("multihot"))
    assert not hints(simulate(adagrad).prediction)  # a model graphs cannot take


def test_plan_says_what_the_graphed_step_would_give_where_the_host_paces():
    """`corun plan`'s what-if line: ideal and the chosen plan simulated with the graphed
    step, where (only where) the hint fires; its numbers are those of simulating it so."""
    import re

    from corun.sim import Scenario, Strategy, StrategyKind, simulate_steady
    from corun.spec import one_kernel_plan

    from corun.plan_cmd import graphs_whatif

    model = replace(model_preset("criteo-kaggle"), batch_per_gpu=4096)
    pipeline = pipeline_preset("kaggle")
    hw = hardware_preset("h200", 1)
    plan = one_kernel_plan(pipeline, model.name, 1, "emb_fwd", 66, 256)
    base = Scenario(hw, model, pipeline, Strategy(StrategyKind.IDEAL), iterations=30)
    preds = [simulate_steady(base).prediction]
    line = graphs_whatif(base, plan, preds, lambda _: None)
    graphed = replace(base, model=replace(model, cuda_graphs=True))
    ideal = simulate_steady(graphed).prediction.mean_iteration_ms
    mine = simulate_steady(replace(graphed, strategy=Strategy(
        StrategyKind.PLAN, plan=plan, name="corun"))).prediction.mean_iteration_ms
    assert line is not None and \
        f"ideal {ideal:.3f} ms an iteration, the plan {mine:.3f} ms" in line
    ratio = float(re.search(r"and ([0-9.]+)x the eager", line).group(1))
    assert ratio == pytest.approx(preds[0].mean_iteration_ms / mine, abs=0.01) and ratio > 1.2
    wide = replace(base, model=replace(model, batch_per_gpu=16384))  # the GPU paces it
    assert graphs_whatif(wide, plan, [simulate_steady(wide).prediction], print) is None


def graphed_trains_as_eager(model, data: list[Batch], loss_rtol: float,
                            weight_atol: float) -> GraphedTrainer:
    """Six steps of the eager and the graphed trainer from the same weights over `data`:
    equal losses, nine stage marks a step, equal weights after. Returns the graphed one."""
    eager = Trainer(replace(model, cuda_graphs=False), "cuda", seed=1)
    graphed = GraphedTrainer(model, "cuda", seed=1)
    graphed.capture(data[0])  # its warm-up steps train it: start both from eager's weights
    graphed.net.load_state_dict(eager.net.state_dict())
    for i in range(6):
        clock = Clock(torch.device("cuda"))
        a = eager.step(data[i % 3])
        b = graphed.step(data[i % 3], clock)
        torch.cuda.synchronize()
        assert torch.allclose(a, b, rtol=loss_rtol, atol=1e-6), (i, a.item(), b.item())
        assert set(clock.stage_ms()) == set(Stage) & set(clock.stage_ms())
        assert len(clock.stage_ms()) == 9
    for (name, p), q in zip(eager.net.named_parameters(), graphed.net.parameters()):
        assert torch.allclose(p, q, rtol=1e-4, atol=weight_atol), name
    return graphed


@gpu
def test_the_graphed_step_trains_as_the_eager_one():
    model, pipeline = small_kaggle()
    data = [b.to(torch.device("cuda")) for b in batches(model, pipeline, 3)]
    graphed_trains_as_eager(model, data, 1e-5, 1e-6)


def test_the_bag_kernels_admit_graphs_and_the_fused_update_alone_does_not():
    lean = replace(model_preset("heavy-lean"), cuda_graphs=True)
    assert lean.cuda_graphs
    with pytest.raises(SpecError, match="embedding_update.*bag-kernel"):
        replace(model_preset("heavy-small"), cuda_graphs=True)


@real_cuda
def test_the_graphed_step_with_bag_kernels_trains_as_the_eager_one_on_any_id_count():
    """The embedding kernels run between the graphs on each batch's own ids: batches of
    different id counts train as eagerly (the fused update adds atomically, so within
    float tolerance)."""
    model = replace(model_preset("heavy-lean"), batch_per_gpu=128, cuda_graphs=True)
    data = [b.to(torch.device("cuda"))
            for b in batches(model, pipeline_preset("heavy-small"), 3)]
    short = data[1].offsets.clone()
    short[-1] = short[-2]  # the last bag empty: fewer ids than the captured batch
    data[1] = Batch(data[1].dense, data[1].ids[: int(short[-1])], short, data[1].labels)
    assert len({b.ids.numel() for b in data}) > 1
    graphed = graphed_trains_as_eager(model, data, 1e-4, 1e-5)
    other = Batch(data[0].dense, data[0].ids, data[0].offsets[:-1], data[0].labels)
    with pytest.raises(SpecError, match="batch.offsets"):
        graphed.step(other)


@gpu
def test_a_batch_of_another_shape_is_refused_by_name():
    model, pipeline = small_kaggle()
    data = [b.to(torch.device("cuda")) for b in batches(model, pipeline, 1)]
    graphed = GraphedTrainer(model, "cuda")
    graphed.step(data[0])
    short = Batch(data[0].dense, data[0].ids[:-1], data[0].offsets, data[0].labels)
    with pytest.raises(SpecError, match="batch.ids"):
        graphed.step(short)


def test_savings_are_the_median_of_eager_less_graphed_where_both_were_timed():
    from corun.costmodel.graphs import GraphedStages, fit_savings

    graphed = {("emb_fwd", "a"): 1.0, ("emb_fwd", "b"): 2.0, ("emb_fwd", "c"): 3.0,
               ("optimizer", "a"): 0.5, ("optimizer", "z"): 9.0}
    eager = {"a": 1.1, "b": 2.3, "c": 3.2}.get  # "z": never profiled eagerly
    savings = fit_savings(graphed, eager)
    assert savings == pytest.approx({"emb_fwd": 0.2, "optimizer": 0.6})
    stages = GraphedStages({"a": 0.9}, savings)
    assert stages.stage_ms("emb_fwd", "a", 5.0) == 0.9  # measured: as measured
    assert stages.stage_ms("emb_fwd", "new", 5.0) == pytest.approx(4.8)
    assert stages.stage_ms("emb_fwd", "new", 0.3) == pytest.approx(0.15)  # at most half
    assert stages.stage_ms("top_mlp_fwd", "new", 5.0) == 5.0  # no saving fitted


def test_the_learned_model_answers_a_graphed_stage_from_its_measurement():
    from corun.costmodel.learned import cost_model_for, graph_key, preset_stages

    hw = hardware_preset("h200", 1)
    cm = cost_model_for(hw)
    if not cm.graphs.measured:
        pytest.skip("no graphed-stages.csv beside the committed model")
    import csv
    from pathlib import Path

    from corun.costmodel.learned import DATA_DIR, GRAPHED_CSV

    rows = list(csv.DictReader(Path(DATA_DIR / "h200" / GRAPHED_CSV).open()))
    r = rows[0]
    work = preset_stages(r["model"], int(r["batch"]))[r["stage"]]
    graphed = replace(work, graphed=True)
    key = graph_key(hw.gpu.name, graphed)
    assert key == graph_key(hw.gpu.name, work)
    same = [float(x["graphed_ms"]) for x in rows if x["stage"] == r["stage"] and graph_key(
        hw.gpu.name, preset_stages(x["model"], int(x["batch"]))[x["stage"]]) == key]
    assert cm.stage_ms(graphed, hw) == pytest.approx(np.mean(same))  # kaggle = terabyte
    other = preset_stages(r["model"], 3 * int(r["batch"]))[r["stage"]]  # never graphed
    eager = cm.stage_ms(other, hw)
    saving = cm.graphs.saving_ms.get(r["stage"], 0.0)
    assert cm.stage_ms(replace(other, graphed=True), hw) == pytest.approx(
        max(eager - saving, eager / 2))


@real_cuda
@pytest.mark.parametrize("workload", ["kaggle", "heavy-lean"])
def test_corun_execute_runs_a_plan_on_the_graphed_step_and_checks_it(tmp_path, workload):
    """`corun execute PLAN --cuda-graphs`: a one-kernel plan co-running with the graphed
    step, every batch checked on the device, noted as graphed. heavy-lean's bag kernels
    read ids by their offsets: the host never waits for a batch's id count (no "wait"),
    and the batches are counted and checked afterwards all the same."""
    from corun.spec import Measurement, one_kernel_plan
    from corun.spec.serde import load, save

    from corun.cli import main

    if workload == "kaggle":
        model, pipeline = small_kaggle(512)
    else:
        model = replace(model_preset("heavy-lean"), batch_per_gpu=512, cuda_graphs=True)
        pipeline = pipeline_preset("heavy-small")
    save(replace(model, cuda_graphs=False), tmp_path / "model.json")
    save(pipeline, tmp_path / "pipeline.json")
    plan = one_kernel_plan(pipeline, model.name, 1, "top_mlp_fwd", 64, 128)
    save(plan, tmp_path / "plan.json")
    out = tmp_path / "m.json"
    assert main(["execute", str(tmp_path / "plan.json"), "--cuda-graphs", "--model",
                 str(tmp_path / "model.json"), "--pipeline", str(tmp_path / "pipeline.json"),
                 "--iterations", "20", "--warmup", "3", "--distinct-batches", "2",
                 "--check-timed", "--quiet", "-o", str(out)]) == 0
    m = load(Measurement, out)
    assert m.checked_rows == 23 * 512  # every batch, warm-up included
    assert any("CUDA graphs" in n for n in m.notes)
    assert len(m.kernels) == 1 and len([s for s in Stage if s.value in m.stages]) == 9
    assert ("wait" in m.host) == (workload == "kaggle")


def test_the_command_line_takes_cuda_graphs_and_refuses_it_on_two_gpus(capsys):
    from corun.cli import main

    assert main(["simulate", "--cuda-graphs", "--batch", "4096", "--strategy", "ideal"]) == 0
    out = capsys.readouterr().out
    assert "ideal" in out and "hint:" not in out  # already graphed: nothing to suggest
    assert main(["plan", "--cuda-graphs", "--gpus", "2", "--quiet"]) == 2
    assert "model.cuda_graphs" in capsys.readouterr().err


def test_a_plan_made_for_the_graphed_step_says_so_and_is_run_so(tmp_path, capsys):
    import json

    from corun.spec import Plan
    from corun.spec.serde import load, save

    from corun.cli import main

    plan_file = tmp_path / "plan.json"
    assert main(["plan", "--cuda-graphs", "--time-limit", "1", "--quiet",
                 "-o", str(plan_file)]) == 0
    plan = load(Plan, plan_file)
    assert plan.cuda_graphs
    capsys.readouterr()
    times = []
    for flag in ([], ["--cuda-graphs"], ["--model", "criteo-kaggle"]):
        assert main(["simulate", "--strategy", "plan", "--plan", str(plan_file), "--batch",
                     "4096", "--json", *flag]) == 0
        times.append(json.loads(capsys.readouterr().out)["iteration_time_ms"])
    assert times[0] == times[1] == times[2]  # the plan's own word is enough
    eager = replace(plan, cuda_graphs=False)
    save(eager, tmp_path / "eager.json")
    assert main(["simulate", "--strategy", "plan", "--plan", str(tmp_path / "eager.json"),
                 "--batch", "4096", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["iteration_time_ms"] > 1.2 * times[0]
    with pytest.raises(SpecError, match="cuda_graphs.*several GPUs"):
        replace(plan, gpu_count=2)
    assert main(["execute", str(plan_file), "--device", "cpu", "-o",
                 str(tmp_path / "m.json")]) == 2  # graphed, so refused on a CPU
    assert "cuda_graphs" in capsys.readouterr().err


def test_a_graphed_stage_keeps_its_pace_beside_a_lower_priority_kernel():
    """sim/scenario.py `_effect`: eagerly both sides take the profiled rates; a graphed
    stage above the preprocessing stream keeps its pace and the kernel takes the delay,
    unless the stage is shorter than the kernel alone."""
    from corun.costmodel import shard_tables, stage_work
    from corun.costmodel.types import CoRunEffect
    from corun.sim.scenario import _effect

    profiled = (1.5, 2.0)  # (stage factor, kernel factor) as a profile gives them
    hw = hardware_preset("h200", 1)
    model = replace(model_preset("criteo-kaggle"), batch_per_gpu=4096)
    eager = stage_work(model, hw, shard_tables(model, hw), 0)[Stage.OPTIMIZER]
    graphed = stage_work(replace(model, cuda_graphs=True), hw,
                         shard_tables(model, hw), 0)[Stage.OPTIMIZER]
    assert graphed.graphed and not eager.graphed
    assert _effect(profiled, eager, True) == (1.5, 2.0)
    assert _effect(profiled, graphed, True) == pytest.approx((1.0, 2.0 * (2 - 1 / 1.5)))
    assert _effect(profiled, graphed, False) == (1.5, 2.0)
    # a graphed stage shorter than the kernel alone waits on its blocks: profiled rates
    assert _effect(profiled, graphed, True, outlasts=False) == (1.5, 2.0)
    # the delay is handed over in time: heavy-hot's update (1.082 ms alone) took 1.691
    # beside a 0.588 ms kernel that took 0.663; kept at pace, the update leaves the kernel
    # 0.663 + 0.609 ms, not 1/14 of its pace (kernel * stage, 13.9x)
    run = CoRunEffect.from_whole_run(0.588, 0.663, 1.082, 1.691)
    stage, kernel = _effect((run.stage_factor, run.kernel_factor), graphed, True)
    assert stage == 1.0
    assert kernel * 0.588 == pytest.approx(0.663 + (1.691 - 1.082))


def test_a_graphed_stage_shorter_than_the_kernel_waits_on_it():
    """The learned H200 model, graphed heavy-hot b16384: the whole heavy-short pipeline
    in 1056 blocks released at bottom_mlp_bwd (a 0.06 ms stage, the kernel 0.55 ms alone)
    holds that stage, as it did on the H200 (+0.48 ms, bench/results/
    heavy_short_remade_h200.md); released at emb_bwd, which outlasts it, the stage keeps
    its pace."""
    from corun.sim import Scenario, Strategy, StrategyKind, simulate
    from corun.spec import one_kernel_plan

    model = replace(model_preset("heavy-hot"), batch_per_gpu=16384, cuda_graphs=True)
    pipeline = pipeline_preset("heavy-short")
    hw = hardware_preset("h200", 1)

    def stage_ms(stage: str) -> tuple[float, float]:
        plan = replace(one_kernel_plan(pipeline, model.name, 1, stage, 1056),
                       batches_ahead=2)
        sc = Scenario(hw, model, pipeline, Strategy(StrategyKind.PLAN, plan=plan),
                      iterations=8, warmup=4)
        s = {x.stage: x for x in simulate(sc).prediction.stages}[stage]
        return s.time_ms, s.standalone_ms

    held, alone = stage_ms("bottom_mlp_bwd")
    assert held > alone + 0.1
    paced, alone = stage_ms("emb_bwd")
    assert paced == pytest.approx(alone, rel=1e-6)
