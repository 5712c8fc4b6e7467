"""bench/execute_gpu.py: what plan each label of a matrix runs (no execution here)."""

from dataclasses import replace

import pytest

import spec
from bench.execute_gpu import MATRICES, MATRIX_MODEL, PLANS, case_plan, plan_dir, same_plan_as


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
    folder = plan_dir("heavy-stages", "heavy", 8192, 1)
    assert folder == PLANS / "heavy-fused-b8192"
    assert plan_dir("graphs", "kaggle", 4096, 1) == PLANS / "graphs" / "kaggle-b4096"
    assert plan_dir("heavy-lean-graphs", "heavy-small", 16384, 1) == \
        PLANS / "graphs" / "heavy-lean-b16384"
    assert plan_dir("multigpu", "kaggle", 4096, 2) == PLANS / "x2" / "kaggle-b4096"
    rehash = plan_dir("heavy-rehash", "heavy-rehash", 32768, 1)  # the heavy case's plans
    assert rehash == PLANS / "rehash" / "heavy-lean-b32768"
    rehash_plan = spec.load(spec.Plan, rehash / "plan.json")
    assert (rehash_plan.pipeline, rehash_plan.model) == ("heavy-rehash", "heavy-lean")
    plan, strategy = case_plan("corun", pipeline, model, folder, hw)
    assert strategy is None
    assert plan == spec.load(spec.Plan, PLANS / "heavy-fused-b8192" / "plan.json")
    assert plan.model == "heavy-fused"
    second, _ = case_plan("corun-2", pipeline, model, folder, hw)  # runner-up
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
    for batches in ("8192,abc", "0"):  # refused by argparse, naming the value, not a traceback
        with pytest.raises(SystemExit):
            main(["--matrix", "heavy", "--batches", batches, "--dry-run"])
        assert "--batches" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # on the GPU, a batch of no case is a typo, not an empty run
        main(["--matrix", "heavy", "--batches", "4096"])
    assert ("--batches 4096: none of --matrix heavy's batches (8192, 16384, 32768); a "
            "--dry-run takes any") in capsys.readouterr().err
    for update in ("ideal+ub0", "ideal+ubx"):  # the update's blocks an SM: an integer >= 1
        with pytest.raises(SystemExit):
            main(["--matrix", "heavy", "--strategies", update, "--dry-run"])
        assert f"--strategies {update}: +ub<N>" in capsys.readouterr().err
    for offset in ("gpu-overlap+offx", "gpu-overlap+off200"):  # ms in 0..100
        with pytest.raises(SystemExit):
            main(["--matrix", "heavy", "--strategies", offset, "--dry-run"])
        assert f"--strategies {offset}: +off<ms> takes ms" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # the assemblies' stream one way or the other
        main(["--matrix", "graphs", "--strategies", "corun+own+behind", "--dry-run"])
    assert "--strategies corun+own+behind: +own or +behind" in capsys.readouterr().err


def test_release_offset_suffix_reads_ms():
    from bench.render_execute import release_offset_ms

    assert release_offset_ms(["ahead2", "off1.4"]) == 1.4
    assert release_offset_ms(["ahead2"]) == 0.0  # none: released with the stage
    assert release_offset_ms(["offx"]) is None


def test_a_plan_file_holding_an_earlier_label_s_plan_is_not_measured_again(tmp_path):
    """On several GPUs the planner's choice can be its GPU plan and its owner-mapped form
    at once (plan.json = plan-gpu.json = plan-owner.json): the matrix runs it once."""
    src = PLANS / "kaggle-b4096"
    chosen, rap = (spec.load(spec.Plan, src / f) for f in ("plan.json", "plan-rap.json"))
    for name, plan in (("plan.json", chosen), ("plan-gpu.json", chosen),
                       ("plan-owner.json", rap)):
        spec.save(plan, tmp_path / name)
    labels = ["ideal", "gpu-sequential", "corun", "corun-gpu", "corun-owner"]
    same = {x: same_plan_as(x, labels[: labels.index(x)], tmp_path) for x in labels}
    assert same == {"ideal": None, "gpu-sequential": None, "corun": None,
                    "corun-gpu": "corun", "corun-owner": None}
    assert same_plan_as("corun-gpu+ahead2", ["corun"], tmp_path) is None  # a variant runs


def test_two_kernels_split_the_pipeline_by_feature(capsys):
    """"two:<stage A>/<blocks A>/<k>/<stage B>/<blocks B>": the dense features and the
    first k sparse ones in kernel A, the rest in B, every node once; labels of matrices
    that release one kernel at a stage take it; a malformed one is refused up front."""
    from bench.execute_gpu import cases_for, main, two_kernel_plan

    hw = spec.hardware_preset("h200", 1)
    pipeline = spec.pipeline_preset("heavy-short")
    plan, strategy = case_plan("two:emb_fwd/1056/4/emb_bwd/528", pipeline,
                               spec.model_preset("heavy-hot"), "unused", hw)
    a, b = plan.kernels
    assert strategy is None and plan.training_priority_high
    assert (a.stage, a.blocks, b.stage, b.blocks) == ("emb_fwd", 1056, "emb_bwd", 528)
    assert sorted(a.nodes + b.nodes) == sorted(pipeline.order)
    owner = pipeline.feature_of()
    assert {owner[n] for n in a.nodes} == set(pipeline.dense_outputs) | {
        s.node for s in pipeline.sparse_outputs[:4]}
    labels = MATRICES["heavy-short-graphs"][0][2]
    assert cases_for(labels, "ideal,two:emb_fwd/1056/4/emb_bwd/528+ahead2") == \
        ["ideal", "two:emb_fwd/1056/4/emb_bwd/528+ahead2"]
    assert cases_for(MATRICES["heavy"][0][2], "two:emb_fwd/1056/4/emb_bwd/528") == []
    for bad, says in (("two:emb_fwd/1056/26/emb_bwd/528", "features in A in 1..25"),
                      ("two:emb_fwd/1056/4/emb_bwd", "two:<stage A>/<blocks A>"),
                      ("two:emb_fwd/1056/4/nowhere/528", "stage")):
        with pytest.raises(spec.SpecError, match=says):
            two_kernel_plan(bad, pipeline, "heavy-hot", 1, 256)
        with pytest.raises(SystemExit):
            main(["--matrix", "heavy-short-graphs", "--strategies", bad, "--dry-run"])
        assert f"--strategies {bad}:" in capsys.readouterr().err
    for unroll in ("ideal+u0", "ideal+u9"):
        with pytest.raises(SystemExit):
            main(["--matrix", "heavy", "--strategies", unroll, "--dry-run"])
        assert f"--strategies {unroll}: +u<N>" in capsys.readouterr().err
    for cap in ("ideal+r8", "ideal+r256"):
        with pytest.raises(SystemExit):
            main(["--matrix", "heavy", "--strategies", cap, "--dry-run"])
        assert f"--strategies {cap}: +r<N>" in capsys.readouterr().err
