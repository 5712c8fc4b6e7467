"""corun calibrate (with its GPU runs replaced by made-up ones: the measuring itself runs
on a GPU machine) and the machine profile it writes, as plan and simulate apply it."""

from __future__ import annotations

import json

import pytest
from corun.costmodel.host import kernel_launches
from corun.spec import SpecError, hardware_preset, one_kernel_plan, pipeline_preset
from corun.spec.hardware import HostTimes
from corun.spec.machine import MachineProfile, StageTiming
from corun.spec.serde import load, save, to_jsonable

from corun.cli import main

DEVICE = "NVIDIA H100 80GB HBM3"
STEP_MS, LAUNCH_MS, BATCH_MS, GRAPH_MS = 2.5, 0.05, 0.3, 0.4
KERNEL_MS = 0.5
PLAN_STEP_MS = 0.2
"""What an eager plan's step costs beyond ideal's and its kernels' launches."""
TIMED_LAUNCH_MS: float | None = LAUNCH_MS
"""A fused kernel's launch as the executor times it (None: runs without the piece)."""
ROUND_PACE: dict[int, float] = {}
LAUNCHED_MS = {"criteo-kaggle": 2.4, "heavy-lean": 1.8}
"""Each model's step as the host launches it behind a spin."""
"""A round's host steps over the constants' (1 where absent): a host whose pace moved."""


def made_up_run(run: str, pace: float = 1.0) -> dict:
    """A Measurement document as the executor writes one, with the host pieces a host
    of the constants above would show, its step `pace` times theirs."""
    pipeline = pipeline_preset("kaggle")
    kernels = () if run == "ideal" else one_kernel_plan(pipeline, "criteo-kaggle", 1,
                                                        "emb_fwd").kernels
    launches = kernel_launches(kernels, pipeline)
    step = (GRAPH_MS if run.endswith("graphed") else STEP_MS) + LAUNCH_MS * launches
    if run not in ("ideal", "gpu-sequential-graphed"):
        step += PLAN_STEP_MS
    step *= pace
    host = {"step": step, **({} if run == "ideal" else {
        "stage": 0.1, "finish": 0.15, "wait": 0.0, "check": 0.05})}
    if launches and TIMED_LAUNCH_MS is not None and not run.endswith("graphed"):
        host["kernels"] = TIMED_LAUNCH_MS * launches
    host.update({f"launch:{s}": step / 9 for s in ("emb_fwd", "bottom_mlp_fwd",
                 "interaction_fwd", "top_mlp_fwd", "top_mlp_bwd", "interaction_bwd",
                 "bottom_mlp_bwd", "emb_bwd", "optimizer")})
    return {"model": "criteo-kaggle", "pipeline": "kaggle", "gpu_count": 1,
            "iteration": {"median_ms": step},
            "host": {k: {"median_ms": v} for k, v in host.items()},
            "plan": {"kernels": [to_jsonable(k) for k in kernels]}}


@pytest.fixture
def fake_gpu(monkeypatch):
    """A CUDA GPU that is an H100, and calibrate's measurers made up; returns the list of
    pieces measured, in order."""
    import torch

    from corun import calibrate_cmd

    measured: list[str] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: DEVICE)

    def measurers(args, *_):
        out = {"copy": lambda: 3.0e12, "gemm": lambda: 7.9e14,
               "launches": lambda: dict(LAUNCHED_MS)}
        for piece in calibrate_cmd.pieces(args.rounds, {}):
            if piece.startswith("host:"):
                _, r, run = piece.split(":")
                out[piece] = lambda run=run, r=int(r): made_up_run(run, ROUND_PACE.get(r, 1))
        return {p: (lambda p=p, f=f: (measured.append(p), f())[1]) for p, f in out.items()}

    def stage_timer(model, batch, *_):
        def timed():
            measured.append(f"stages:{model}:{batch}")
            return {"pipeline": "kaggle", "stage_ms": {"emb_fwd": 0.2 * batch / 4096,
                                                       "top_mlp_bwd": 0.9 * batch / 4096}}
        return timed

    def kernel_timer(plan, *_):
        def timed():
            measured.append(f"kernels:{plan.model}")
            return [{"pipeline": plan.pipeline, "nodes": list(k.nodes), "blocks": k.blocks,
                     "threads_per_block": k.threads_per_block, "warp_rows": k.warp_rows,
                     "fixed_offsets": k.fixed_offsets, "rows": plan.batch_per_gpu,
                     "ms": KERNEL_MS} for k in plan.kernels]
        return timed

    monkeypatch.setattr(calibrate_cmd, "_measurers", measurers)
    monkeypatch.setattr(calibrate_cmd, "_stage_timer", stage_timer)
    monkeypatch.setattr(calibrate_cmd, "_kernel_timer", kernel_timer)
    return measured


def test_calibrate_fits_the_host_and_resumes_where_it_stopped(fake_gpu, tmp_path, monkeypatch):
    from corun import calibrate_cmd

    out = tmp_path / "h100.json"
    real = calibrate_cmd._measurers

    def interrupted(*a):
        ms = real(*a)
        ms["host:2:ideal"] = lambda: (_ for _ in ()).throw(KeyboardInterrupt)
        return ms

    monkeypatch.setattr(calibrate_cmd, "_measurers", interrupted)
    args = ["calibrate", "-o", str(out), "--rounds", "2", "--quiet"]
    assert main(args) == 130
    first = list(fake_gpu)
    assert first and not out.exists()
    assert (tmp_path / "h100.json.partial.json").exists()
    monkeypatch.setattr(calibrate_cmd, "_measurers", real)
    fake_gpu.clear()
    assert main(args) == 0
    assert not set(fake_gpu) & set(first)  # nothing measured twice
    assert set(first) | set(fake_gpu) == set(calibrate_cmd.pieces(2, {
        "stages:criteo-kaggle:4096": 0, "stages:criteo-kaggle:16384": 0}))
    assert not (tmp_path / "h100.json.partial.json").exists()
    p = load(MachineProfile, out)
    assert p.device == DEVICE and p.gpu_preset == "h100"
    assert p.host.step_ms == pytest.approx(STEP_MS)
    assert p.host.kernel_launch_ms == pytest.approx(LAUNCH_MS)
    assert p.host.plan_step_ms == pytest.approx(PLAN_STEP_MS)
    assert p.host.batch_fixed_ms == pytest.approx(BATCH_MS)
    assert p.host.graph_step_ms == pytest.approx(GRAPH_MS)
    assert p.host.round_step_ms == pytest.approx((STEP_MS, STEP_MS))
    assert p.host.model_launch_ms == LAUNCHED_MS
    assert p.host.step_spread_pct == pytest.approx(0.0)
    assert {(t.batch_per_gpu, t.stage) for t in p.stages} == {
        (b, s) for b in (4096, 16384) for s in ("emb_fwd", "top_mlp_bwd")}
    assert p.measured_s > 0  # the first run's pieces and the resumed run's


def plan_run(out: str) -> dict:
    """The plan's prediction in `corun simulate --plan --json` output."""
    return next(r for r in json.loads(out) if r["strategy"].startswith("plan:"))


def test_calibrate_times_the_plans_kernels_and_the_simulator_predicts_them(
        fake_gpu, tmp_path, capsys):
    """calibrate --plans: each kernel's time alone goes into the profile; simulate
    --machine then gives that kernel its measured time at the timed batch, and at another
    batch the model's time scaled by the same ratio."""
    from dataclasses import replace

    plan, cpu = tmp_path / "plan.json", tmp_path / "plan-cpu.json"
    one = replace(one_kernel_plan(pipeline_preset("kaggle"), "criteo-kaggle", 1, "emb_fwd"),
                  batch_per_gpu=4096)
    save(one, plan)
    save(replace(one, kernels=(), cpu_nodes=pipeline_preset("kaggle").order), cpu)
    out = tmp_path / "h100.json"
    assert main(["calibrate", "-o", str(out), "--rounds", "1", "--stages", "",
                 "--plans", f"{plan},{cpu}"]) == 0
    assert f"{cpu}: no fused kernel to time" in capsys.readouterr().err
    assert "kernels:criteo-kaggle" in fake_gpu
    p = load(MachineProfile, out)
    assert [(t.rows, t.ms) for t in p.kernels] == [(4096, KERNEL_MS)]
    sim = ["simulate", "--hardware", "h100", "--plan", str(plan), "--json", "--quiet",
           "--iterations", "4"]
    timed, untimed = {}, {}
    for batch in ("4096", "16384"):
        for machine in ([], ["--machine", str(out)]):
            capsys.readouterr()
            assert main([*sim, "--batch", batch, *machine]) == 0
            run = plan_run(capsys.readouterr().out)
            timed[batch, bool(machine)] = run["kernels"][0]["standalone_ms"]
            untimed[batch, bool(machine)] = any(f["kind"] == "kernels-untimed"
                                                for f in run["findings"])
    assert timed["4096", True] == pytest.approx(KERNEL_MS)
    assert timed["16384", True] / timed["16384", False] == pytest.approx(
        KERNEL_MS / timed["4096", False])
    # timed at 4096 rows on the machine: not untimed there, still at 16384
    assert untimed == {("4096", False): True, ("4096", True): False,
                       ("16384", False): True, ("16384", True): True}


@pytest.mark.parametrize("beside", [3.0, 0.5])
def test_a_kernel_timed_in_its_step_gives_the_simulator_its_co_run_there(
        fake_gpu, tmp_path, capsys, monkeypatch, beside):
    """calibrate --plans also times each kernel's step with the kernel released at its
    stage; simulate --machine takes the kernel's co-run rates from that step at its model,
    batch and stage (here the releasing stage ran 3x slower beside it, or in half its
    time), and says so; at another batch the cost model's rates stay."""
    from dataclasses import replace

    from corun.spec import stages_for

    from corun import calibrate_cmd

    stages = [s.value for s in stages_for(1)]
    alone = [0.2] * len(stages)

    def kernel_timer(plan, *_):
        def timed():
            step = {"model": plan.model, "batch_per_gpu": plan.batch_per_gpu,
                    "stage": "emb_fwd", "stages": stages, "alone_ms": alone,
                    "step_ms": [beside * a if s == "emb_fwd" else a
                                for s, a in zip(stages, alone)],
                    "kernel_alone_ms": KERNEL_MS, "kernel_ms": 2 * KERNEL_MS}
            return [{"pipeline": plan.pipeline, "nodes": list(k.nodes), "blocks": k.blocks,
                     "threads_per_block": k.threads_per_block, "warp_rows": k.warp_rows,
                     "fixed_offsets": k.fixed_offsets, "rows": plan.batch_per_gpu,
                     "ms": KERNEL_MS, "release": step} for k in plan.kernels]
        return timed

    monkeypatch.setattr(calibrate_cmd, "_kernel_timer", kernel_timer)
    plan = tmp_path / "plan.json"
    save(replace(one_kernel_plan(pipeline_preset("kaggle"), "criteo-kaggle", 1, "emb_fwd"),
                 batch_per_gpu=4096), plan)
    out, alone_only = tmp_path / "h100.json", tmp_path / "h100-alone.json"
    assert main(["calibrate", "-o", str(out), "--rounds", "1", "--stages", "",
                 "--plans", str(plan), "--quiet"]) == 0
    p = load(MachineProfile, out)
    assert p.kernels[0].release.step_ms[0] == pytest.approx(0.2 * beside)
    save(replace(p, kernels=tuple(replace(k, release=None) for k in p.kernels)), alone_only)
    emb_fwd = {}
    for batch in ("4096", "8192"):
        for profile in (out, alone_only):
            capsys.readouterr()
            assert main(["simulate", "--hardware", "h100", "--plan", str(plan), "--json",
                         "--quiet", "--iterations", "4", "--no-host-thread", "--batch", batch,
                         "--machine", str(profile)]) == 0
            run = plan_run(capsys.readouterr().out)
            emb_fwd[batch, profile == out] = next(
                x["time_ms"] for x in run["stages"] if x["stage"] == "emb_fwd")
            said = [f for f in run["findings"] if f["kind"] == "machine-profile"][0]
            assert said["facts"]["coruns"] == (1.0 if profile == out else 0.0)
    if beside > 1:
        assert emb_fwd["4096", True] > 1.5 * emb_fwd["4096", False]
    else:  # sped up as timed on the machine: the cost model never speeds a stage up
        assert emb_fwd["4096", True] < 0.75 * emb_fwd["4096", False]
    assert emb_fwd["8192", True] == pytest.approx(emb_fwd["8192", False])


def test_a_launch_cost_fitted_below_zero_is_replaced_with_a_warning(
        fake_gpu, tmp_path, capsys, monkeypatch):
    """Rounds whose plans ran faster than ideal (a host that sped up between runs) fit a
    negative launch cost: the profile keeps the reference host's, scaled by this host's
    step, and calibrate says why."""
    import sys

    from corun.costmodel.host import HostCosts

    monkeypatch.setattr(sys.modules[__name__], "LAUNCH_MS", -0.01)
    monkeypatch.setattr(sys.modules[__name__], "TIMED_LAUNCH_MS", None)
    monkeypatch.setattr(sys.modules[__name__], "PLAN_STEP_MS", 0.0)
    out = tmp_path / "h100.json"
    assert main(["calibrate", "-o", str(out), "--rounds", "1", "--stages", "",
                 "--quiet"]) == 0
    ref = HostCosts()
    host = load(MachineProfile, out).host
    assert host.kernel_launch_ms == pytest.approx(ref.kernel_launch_ms * STEP_MS / ref.step_ms)
    assert host.plan_step_ms == 0.0  # not told apart from the launches without their timing
    err = capsys.readouterr().err
    assert "launch cost fitted to -0.010 ms" in err and "reference host's scaled" in err


def test_a_launch_cost_the_host_drift_hides_is_not_kept():
    """A slope no larger than twice its standard error, or larger than a graphed step
    allows, is the host's drift, not a launch: the reference host's cost, scaled, is kept.
    A clear slope within the graphed bound is kept as fitted. Launches the executor timed
    win over either."""
    from corun.costmodel.host import HostCosts
    from corun.costmodel.host_fit import LaunchSource, launch_fit

    ref = HostCosts()
    scaled = ref.kernel_launch_ms * 3.0 / ref.step_ms
    clear = launch_fit([(3, 0.30), (2, 0.21), (3, 0.29), (2, 0.19)], [(3, 0.6)], 3.0)
    assert not clear.hidden and clear.ms == pytest.approx(clear.fitted_ms)
    assert clear.source is LaunchSource.FITTED and clear.timed_ms is None
    assert clear.ms == pytest.approx(0.1, rel=0.05) and clear.stderr_ms < 0.01
    drift = launch_fit([(3, 1.2), (2, -0.4), (3, -0.5), (2, 0.9)], [(3, 3.0)], 3.0)
    assert drift.hidden and drift.stderr_ms > drift.fitted_ms / 2
    assert drift.ms == pytest.approx(scaled) and drift.source is LaunchSource.REFERENCE
    capped = launch_fit([(3, 2.1), (2, 1.4)], [(3, 1.2)], 3.0)  # 0.7 ms a launch > 0.4
    assert capped.fitted_ms == pytest.approx(0.7) and capped.ceiling_ms == pytest.approx(0.4)
    assert capped.hidden and capped.ms == pytest.approx(scaled)
    timed = launch_fit([(3, 1.2), (2, -0.4), (3, -0.5), (2, 0.9)], [(3, 3.0)], 3.0, 0.06)
    assert timed.hidden and timed.ms == 0.06 and timed.source is LaunchSource.TIMED


def test_launches_the_executor_timed_set_the_launch_cost_whatever_the_host_drift(
        fake_gpu, tmp_path, capsys, monkeypatch):
    """Rounds whose plans' steps ran faster than ideal's (a host that sped up between
    runs) and whose kernels' launches the executor timed: the profile keeps the timed
    launch (a batch's `kernels` piece over its launches), without a warning, and says
    what the steps' slope gave; the plans' steps beyond ideal's and their launches, here
    below zero, add nothing."""
    import sys

    monkeypatch.setattr(sys.modules[__name__], "LAUNCH_MS", -0.01)
    monkeypatch.setattr(sys.modules[__name__], "TIMED_LAUNCH_MS", 0.07)
    monkeypatch.setattr(sys.modules[__name__], "PLAN_STEP_MS", 0.0)
    out = tmp_path / "h100.json"
    assert main(["calibrate", "-o", str(out), "--rounds", "1", "--stages", ""]) == 0
    host = load(MachineProfile, out).host
    assert host.kernel_launch_ms == pytest.approx(0.07) and host.plan_step_ms == 0.0
    captured = capsys.readouterr()
    assert "0.070 ms a kernel launch (timed; the plans' steps give -0.010" in captured.out
    assert "warning" not in captured.err


def test_rounds_whose_host_step_moved_are_kept_and_warned_of(
        fake_gpu, tmp_path, capsys, monkeypatch):
    """A host whose eager step ran 20% slower in the second round: the profile keeps each
    round's step, their median is its step, and calibrate warns that predictions of
    host-paced eager steps there can be no surer; rounds 1% apart pass without a word."""
    import sys

    module = sys.modules[__name__]
    out = tmp_path / "h100.json"
    args = ["calibrate", "-o", str(out), "--rounds", "2", "--stages", ""]
    monkeypatch.setattr(module, "ROUND_PACE", {2: 1.2})
    assert main(args) == 0
    host = load(MachineProfile, out).host
    assert host.round_step_ms == pytest.approx((STEP_MS, 1.2 * STEP_MS))
    assert host.step_ms == pytest.approx(1.1 * STEP_MS)
    assert host.step_spread_pct == pytest.approx(20.0)
    captured = capsys.readouterr()
    assert "eager step 2.500-3.000 ms over 2 rounds, 20% apart" in captured.out
    assert "eager step moved 20% between the rounds (2.500-3.000 ms)" in captured.err
    monkeypatch.setattr(module, "ROUND_PACE", {2: 1.01})
    assert main(args) == 0
    assert load(MachineProfile, out).host.step_spread_pct == pytest.approx(1.0)
    assert "moved" not in capsys.readouterr().err


def test_calibrate_refuses_a_plan_of_several_gpus(tmp_path, capsys):
    from dataclasses import replace

    plan = tmp_path / "plan.json"
    save(replace(one_kernel_plan(pipeline_preset("kaggle"), "criteo-kaggle", 1, "emb_fwd"),
                 gpu_count=2), plan)
    assert main(["calibrate", "-o", str(tmp_path / "m.json"), "--plans", str(plan)]) == 2
    assert f"--plans = '{plan}': a one-GPU plan" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()
    plan.write_text('{"schema": "corun.plan/1"}')
    assert main(["calibrate", "-o", str(tmp_path / "m.json"), "--plans", str(plan)]) == 2
    err = capsys.readouterr().err
    assert f"--plans = '{plan}': a plan file" in err and "pipeline" in err


def test_calibrate_refuses_a_bad_stage_list_and_a_machine_without_a_gpu(monkeypatch, capsys):
    import torch

    assert main(["calibrate", "-o", "x.json", "--stages", "criteo-kaggle:abc"]) == 2
    assert "--stages = 'criteo-kaggle:abc': MODEL:BATCH" in capsys.readouterr().err
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["calibrate", "-o", "x.json"]) == 2
    assert "--device = 'cuda': a CUDA GPU of this machine" in capsys.readouterr().err


def profile(**host) -> MachineProfile:
    times = HostTimes(**{"step_ms": 2.0, "graph_step_ms": 0.3, "kernel_launch_ms": 0.04,
                         "batch_fixed_ms": 0.2, "measured_on": "criteo-kaggle b4096",
                         **host})
    return MachineProfile(DEVICE, 3.0e12, 7.9e14, times, "0.1.0", "abc", "2026-12-06T00:00:00",
                          {}, (StageTiming("criteo-kaggle", "kaggle", 4096, "top_mlp_bwd",
                                           2.0),))


def test_a_profile_sets_the_host_and_the_stage_it_timed(tmp_path, capsys):
    """simulate --machine: ideal at kaggle b4096 on one H100 paced by the measured host
    (not the reference H200 host), the timed stage at the measured time over the
    predicted one, eagerly (the profile timed eager stages; a graphed stage keeps the
    model's time); a profile of another kind refused, naming both."""
    from corun.costmodel.machine import on_machine

    path = tmp_path / "m.json"
    save(profile(step_ms=9.0), path)
    common = ["simulate", "--hardware", "h100", "--batch", "4096", "--strategy", "ideal",
              "--json", "--quiet", "--iterations", "6"]
    assert main(common) == 0
    preset = json.loads(capsys.readouterr().out)
    assert main([*common, "--machine", str(path)]) == 0
    mine = json.loads(capsys.readouterr().out)
    assert preset["iteration_time_ms"] < 9.0 <= mine["iteration_time_ms"] + 1e-6
    hw = on_machine(hardware_preset("h100"), profile())
    assert hw.host.step_ms == 2.0 and hw.gpu.copy_bytes_per_s == 3.0e12
    assert set(hw.stage_scale) == {"top_mlp_bwd"}
    assert hw.stage_scale["top_mlp_bwd"][0].ratio > 0
    stage = {s["stage"]: s["standalone_ms"] for s in preset["stages"]}
    save(profile(), path)
    assert main([*common, "--machine", str(path)]) == 0
    timed = {s["stage"]: s["standalone_ms"] for s in json.loads(capsys.readouterr().out)["stages"]}
    assert timed["top_mlp_bwd"] == pytest.approx(2.0, rel=1e-6)
    assert timed["emb_fwd"] == pytest.approx(stage["emb_fwd"], rel=1e-6)
    untimed = [f["facts"]["untimed"] for f in preset["findings"]
               if f["kind"] == "stages-untimed"]
    assert untimed == [9]  # and with the profile, the stage it timed is not untimed:
    assert main([*common, "--machine", str(path)]) == 0
    mine = json.loads(capsys.readouterr().out)
    assert [f["facts"]["untimed"] for f in mine["findings"]
            if f["kind"] == "stages-untimed"] == [8]
    assert any(f["kind"] == "machine-profile" and f["facts"]["machine"].startswith("m.json")
               for f in mine["findings"])
    graphed = ["--cuda-graphs"]
    assert main([*common, *graphed]) == 0
    preset_graphed = {s["stage"]: s["standalone_ms"]
                      for s in json.loads(capsys.readouterr().out)["stages"]}
    assert main([*common, *graphed, "--machine", str(path)]) == 0
    timed_graphed = {s["stage"]: s["standalone_ms"]
                     for s in json.loads(capsys.readouterr().out)["stages"]}
    assert timed_graphed["top_mlp_bwd"] == pytest.approx(preset_graphed["top_mlp_bwd"])
    with pytest.raises(SpecError, match="--hardware h100 for this one"):
        profile().apply(hardware_preset("h200"))
    assert main([*common[:2], "h200", *common[3:], "--machine", str(path)]) == 2


def test_a_profile_of_another_corun_version_is_used_with_a_warning(tmp_path, capsys):
    from dataclasses import replace

    path = tmp_path / "m.json"
    save(replace(profile(), corun_version="0.0.1"), path)
    assert main(["simulate", "--hardware", "h100", "--strategy", "ideal", "--quiet",
                 "--iterations", "4", "--machine", str(path)]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and "measured with corun 0.0.1" in err


@pytest.mark.parametrize("field,value,says", [
    ("step_ms", 0.0, "step_ms = 0.0: a finite number > 0"),
    ("kernel_launch_ms", float("nan"), "kernel_launch_ms = nan: a finite number of ms >= 0"),
    ("launch_share", {"emb_fwd": 2.0}, "launch_share.emb_fwd = 2.0: a share in [0, 1]"),
    ("plan_step_ms", -0.1, "plan_step_ms = -0.1: a finite number of ms >= 0"),
    ("round_step_ms", (2.0, 0.0), "round_step_ms[1] = 0.0: a finite number > 0"),
])
def test_host_times_name_a_bad_field(field, value, says):
    import re

    with pytest.raises(SpecError, match=re.escape(says)):
        profile(**{field: value})


def test_a_stage_scale_follows_the_model_and_batch_it_was_timed_at():
    from corun.spec.hardware import StageScale, scale_at

    points = (StageScale("a", 4096, 1.2), StageScale("a", 16384, 0.8), StageScale("b", 8192, 1.5))
    assert scale_at(points, "a", 4096) == 1.2 and scale_at(points, "a", 65536) == 0.8
    assert scale_at(points, "a", 8192) == pytest.approx(1.0)  # halfway in log batch
    assert scale_at(points, "a", 1024) == 1.2
    assert scale_at(points, "c", 8192) == 1.2  # a model not timed: the median of all
    assert scale_at((), "a", 4096) == 1.0


def test_a_kernel_scale_follows_the_rows_it_was_timed_at_and_no_other_kernel():
    from corun.spec.hardware import KernelScale, kernel_scale_at

    points = (KernelScale(4096, 0.6), KernelScale(16384, 0.9))
    assert kernel_scale_at(points, 4096) == 0.6 and kernel_scale_at(points, 65536) == 0.9
    assert kernel_scale_at(points, 8192) == pytest.approx(0.75)
    assert kernel_scale_at((), 4096) == 1.0  # not timed: the cost model's time


def test_the_kernel_timer_times_a_plan_kernel_alone_and_in_its_step(tmp_path):
    """calibrate's own kernel timer (on the CPU here: the same profiler steps as on a
    GPU): the kernel's time alone, and the step it is released in at its stage, every
    stage in step order, which the profile reads back."""
    from dataclasses import replace

    from corun.backend.trainer import TRAINING_STAGES
    from corun.spec.machine import KernelTiming
    from corun.spec.serde import from_jsonable

    from corun.calibrate_cmd import _kernel_timer, _TrainerSlot
    from tests.workload_files import write_small_kaggle

    _, pipe = write_small_kaggle(tmp_path, 32, 300)
    plan = replace(one_kernel_plan(pipe, str(tmp_path / "model.json"), 1, "top_mlp_fwd"),
                   pipeline=str(tmp_path / "pipeline.json"), batch_per_gpu=32)
    (timed,) = _kernel_timer(plan, "h100", "cpu", lambda *a: None, _TrainerSlot())()
    k = from_jsonable(KernelTiming, timed, "kernels")
    assert k.ms > 0 and k.rows == 32
    assert k.release.stage == "top_mlp_fwd" and k.release.batch_per_gpu == 32
    assert k.release.stages == tuple(s.value for s in TRAINING_STAGES)
    assert k.release.kernel_ms > 0 and min(k.release.step_ms) > 0


def test_a_source_first_kernel_is_timed_as_it_runs_and_scales_a_key_of_its_own(tmp_path):
    """A plan kernel with source_first (heavy's lists, each made by one ngram) is timed
    with it on, the profile says so, and the kernel scale it gives is the kernel's with
    it (":src"), not the same kernel without it, which a plan may also run."""
    from dataclasses import replace

    from corun.costmodel.machine import on_machine
    from corun.spec.machine import KernelTiming
    from corun.spec.serde import from_jsonable

    from corun.calibrate_cmd import _kernel_timer, _TrainerSlot
    from tests.workload_files import write_small

    _, pipe = write_small(tmp_path, "heavy-lean", "heavy-small", 32, 300)
    base = one_kernel_plan(pipe, str(tmp_path / "model.json"), 1, "top_mlp_fwd")
    plan = replace(base, kernels=(replace(base.kernels[0], source_first=True),),
                   pipeline=str(tmp_path / "pipeline.json"), batch_per_gpu=32)
    (timed,) = _kernel_timer(plan, "h100", "cpu", lambda *a: None, _TrainerSlot())()
    k = from_jsonable(KernelTiming, timed, "kernels")
    assert k.source_first and k.ms > 0
    hw = on_machine(hardware_preset("h100"), replace(profile(), kernels=(k,)))
    (key,) = hw.kernel_scale
    assert key.endswith(":warp:src")
    plain = on_machine(hardware_preset("h100"),
                       replace(profile(), kernels=(replace(k, source_first=False),)))
    assert set(plain.kernel_scale) == {key.removesuffix(":src")}
    # a profile that timed only the kernel without it scales the kernel with it as that
    # kernel, its bound, as the cost model answers it
    from corun.costmodel.workload import kernel_work
    from corun.sim.scenario import _kernel_scale

    plain_kw, src = (kernel_work(pipeline_preset("heavy-small"), "k", k.nodes, k.rows,
                                 k.blocks, k.threads_per_block, k.warp_rows,
                                 k.fixed_offsets, s) for s in (False, True))
    assert src.key == key and src.bound_key == plain_kw.key
    assert _kernel_scale(plain, src) == _kernel_scale(plain, plain_kw) != 1.0
    assert _kernel_scale(hw, src) != _kernel_scale(hw, plain_kw)  # its own where timed
    assert _kernel_scale(hardware_preset("h100"), src) == 1.0  # no profile: the model's


def test_a_model_whose_launch_waited_for_the_gpu_is_left_out_with_a_line(monkeypatch):
    """calibrate's `launches` piece keeps the models it could time; one whose step waited
    for the GPU in every try is named, and predicted at the host-run model's step."""
    from corun.backend import launch_count
    from corun.spec import model_preset

    from corun import calibrate_cmd

    def timed(model, device, *_):
        if model.name == "heavy-lean":
            raise RuntimeError("heavy-lean: no step was launched within the spin")
        return 2.5, 20

    monkeypatch.setattr(launch_count, "host_step_ms", timed)
    said: list[str] = []
    out = calibrate_cmd._launch_times(model_preset("criteo-kaggle"),
                                      calibrate_cmd._stage_pieces("heavy-lean:16384"),
                                      "cuda", said.append)
    assert out == {"criteo-kaggle": 2.5}
    assert said and "heavy-lean" in said[0] and "criteo-kaggle's" in said[0]
