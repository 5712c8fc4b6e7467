"""bench/execute_gpu.py: what plan each label of a matrix runs (no execution here)."""

from dataclasses import replace

import pytest

import spec
from bench.execute_gpu import MATRICES, MATRIX_MODEL, PLANS, case_plan


@pytest.fixture
def heavy_fused():
    hw = spec.hardware_preset("h200", 1)
    model = replace(spec.model_preset(MATRIX_MODEL["heavy-stages"]), batch_per_gpu=8192)
    return spec.pipeline_preset("heavy"), model, hw


def test_at_a_stage_is_the_baselines_kernel_released_there(heavy_fused):
    pipeline, model, hw = heavy_fused
    plan, strategy = case_plan("at:interaction_bwd", pipeline, model, "unused", hw)
    seq, _ = case_plan("gpu-sequential", pipeline, model, "unused", hw)
    (k,) = plan.kernels
    assert strategy is None and plan.training_priority_high and plan.model == "heavy-fused"
    assert k.stage == "interaction_bwd" and set(k.nodes) == set(pipeline.order)
    assert (k.blocks, k.threads_per_block) == (seq.kernels[0].blocks,
                                               seq.kernels[0].threads_per_block)
    with pytest.raises(spec.SpecError, match="a stage that exists"):
        case_plan("at:emb_a2a_fwd", pipeline, model, "unused", hw)  # one GPU: no all-to-all


def test_plan_labels_read_the_model_s_own_folder(heavy_fused):
    pipeline, model, hw = heavy_fused
    plan, strategy = case_plan("corun", pipeline, model, "heavy-fused-b8192", hw)
    assert strategy is None
    assert plan == spec.load(spec.Plan, PLANS / "heavy-fused-b8192" / "plan.json")
    assert plan.model == "heavy-fused"
    second, _ = case_plan("corun-2", pipeline, model, "heavy-fused-b8192", hw)  # runner-up
    assert second == spec.load(spec.Plan, PLANS / "heavy-fused-b8192" / "plan-2.json")
    from planner.runners_up import schedule

    assert schedule(second) != schedule(plan)  # another schedule, as corun plan wrote it
    labels = [lab for _, _, labs in MATRICES["heavy-stages"] for lab in labs]
    assert [lab for lab in labels if lab.startswith("at:")][0] == "at:emb_fwd"


def test_strategies_name_labels_their_variants_and_runners_up(capsys):
    from bench.execute_gpu import cases_for, main

    labels = MATRICES["heavy"][0][2]
    assert cases_for(labels, None) == list(labels)
    assert cases_for(labels, "corun-2,gpu-overlap+b4224,ideal,at:emb_fwd") == \
        ["ideal", "corun-2", "gpu-overlap+b4224"]  # labels first, then in the order given
    with pytest.raises(SystemExit):  # a name that matches no case: refused before any run
        main(["--matrix", "heavy", "--strategies", "ideal,at:emb_bwd", "--dry-run"])
    assert "--strategies at:emb_bwd: not a label of --matrix heavy" in capsys.readouterr().err
