"""The host-constant fits (costmodel/host_fit.py) recover the constants that generated
executor-like runs, and say which runs they used."""

import numpy as np
import pytest
from corun.costmodel.host import kernel_launches, output_mb
from corun.costmodel.host_fit import MIN_MB_SPAN, fit, launch_shares_by_model, rows_of
from corun.sim.strategy import parse_strategy, strategy_plan
from corun.spec import SpecError

from corun import spec

STEP, LAUNCH, FIXED, PER_MB = 4.1, 0.09, 0.4, 0.003
SHARE = {"emb_fwd": 0.1, "top_mlp_fwd": 0.2, "top_mlp_bwd": 0.4, "emb_bwd": 0.3}
BLOCKED = {"emb_fwd": 0.05, "top_mlp_fwd": 0.8, "top_mlp_bwd": 0.1, "emb_bwd": 0.05}
"""A GPU-paced host's profile: it blocks inside one stage, waiting for the GPU."""


def case(pipeline: str, batch: int, strategy: str, wait: float, rng,
         constants: tuple[float, float, float, float] = (STEP, LAUNCH, FIXED, PER_MB),
         gpus: int = 1) -> dict:
    """A measured case whose host pieces follow the constants (step, launch, fixed,
    per MB), with a little noise."""
    step, launch, fixed, per_mb = constants
    hw = spec.hardware_preset("h200", 1)
    pipe = spec.pipeline_preset(pipeline)
    if strategy == "ideal":
        shares = BLOCKED if wait > 0.1 else SHARE
        host = {"step": {"median_ms": step + rng.normal(0, 0.01)}}
        host.update({f"launch:{s}": {"median_ms": step * x + rng.normal(0, 0.002)}
                     for s, x in shares.items()})
        return {"pipeline": pipeline, "batch": batch, "strategy": strategy, "measurement": {
            "plan": None, "iteration": {"median_ms": step}, "gpu_count": gpus,
            "model": spec.DEFAULT_MODEL_FOR[pipeline], "host": host}}
    plan = strategy_plan(parse_strategy(strategy, hw), pipe, "criteo-kaggle", hw)
    n = kernel_launches(plan.kernels, pipe)
    batch_ms = fixed + per_mb * output_mb(pipe, batch)
    host = {"step": step + launch * n + rng.normal(0, 0.01), "wait": wait,
            "stage": 0.1, "finish": batch_ms - 0.1 + wait, "check": 0.0}
    kernels = [{**k.__dict__, "nodes": list(k.nodes)} for k in plan.kernels]
    return {"pipeline": pipeline, "batch": batch, "strategy": strategy, "measurement": {
        "plan": {"kernels": kernels}, "iteration": {"median_ms": sum(host.values())},
        "gpu_count": gpus, "host": {k: {"median_ms": v} for k, v in host.items()}}}


def test_fit_recovers_the_constants():
    rng = np.random.default_rng(0)
    cases = []
    for pipeline, batch, wait in (("kaggle", 4096, 0.02), ("heavy", 4096, 0.03),
                                  ("kaggle", 8192, 0.8)):  # the last: GPU-paced
        cases += [case(pipeline, batch, s, wait, rng)
                  for s in ("ideal", "gpu-sequential", "gpu-overlap")]
    got = fit(rows_of(cases, "run"))
    assert got["step_ms"] == pytest.approx(STEP, abs=0.03)
    assert got["kernel_launch_ms"] == pytest.approx(LAUNCH, abs=0.02)
    assert got["batch_fixed_ms"] == pytest.approx(FIXED, abs=1e-6)
    assert got["batch_ms_per_mb"] == pytest.approx(PER_MB, abs=1e-6)
    assert got["launch_share"] == pytest.approx(SHARE, abs=0.01)
    assert sum(got["launch_share"].values()) == pytest.approx(1, abs=0.002)
    # GPU-paced b8192 left out of the step, the launches and the shares
    assert got["used"] == {"step": 2, "launch": 4, "batch": 6, "launch_share": 2}


def test_launch_shares_by_model_leave_out_steps_that_blocked():
    """Each model's shares come from its own ideal steps; a step that blocked for the GPU
    inside one stage (over BLOCKED_SHARE of it) says where the GPU was, and is left out."""
    rng = np.random.default_rng(2)
    cases = [case(p, b, "ideal", w, rng) for p, b, w in (
        ("kaggle", 4096, 0.0), ("kaggle", 8192, 0.8), ("heavy", 4096, 0.0))]
    got = launch_shares_by_model(rows_of(cases, "run"))
    assert set(got) == {"criteo-kaggle", "heavy"}
    assert got["criteo-kaggle"]["used"] == 1  # the blocked b8192 step left out
    assert got["criteo-kaggle"]["launch_share"] == pytest.approx(SHARE, abs=0.01)
    assert launch_shares_by_model(rows_of(cases[1:2], "run")) == {}


def test_no_host_paced_workload_is_an_error():
    rng = np.random.default_rng(1)
    cases = [case("kaggle", 8192, s, 0.8, rng) for s in ("ideal", "gpu-sequential")]
    with pytest.raises(SpecError, match="host-paced"):
        fit(rows_of(cases, "run"))


def test_distributed_constants_are_fitted_apart_from_the_one_gpu_ones():
    rng = np.random.default_rng(2)
    one = [case(p, 4096, s, 0.02, rng) for p in ("kaggle", "heavy")
           for s in ("ideal", "gpu-sequential")]
    four_gpus = (7.3, 0.2, 1.0, 0.01)  # what the distributed trainer's host spends
    four = [case(p, b, s, 0.02, rng, four_gpus, gpus=4) for p in ("kaggle", "heavy")
            for b in (4096, 8192) for s in ("ideal", "gpu-sequential", "gpu-overlap")]
    both = fit(rows_of(one, "one") + rows_of(four, "four"))
    alone = fit(rows_of(one, "one"))
    assert both["distributed_step_ms"] == pytest.approx(7.3, abs=0.03)
    assert both["distributed_kernel_launch_ms"] == pytest.approx(0.2, abs=0.02)
    assert both["distributed_batch_fixed_ms"] == pytest.approx(1.0, abs=1e-6)
    assert both["distributed_batch_ms_per_mb"] == pytest.approx(0.01, abs=1e-6)
    assert both["used"]["distributed_step"] == 4
    lo, hi = both["ranges"]["distributed_ideal_step_ms"]
    assert 7.2 < lo <= hi < 7.4
    for k in ("step_ms", "kernel_launch_ms", "batch_fixed_ms", "batch_ms_per_mb"):
        assert both[k] == alone[k]  # the 4-GPU rows leave the one-GPU constants alone
    assert "distributed_step_ms" not in alone


def test_batch_cost_falling_with_size_is_fitted_flat():
    """A line through batch cost against MB that falls (noise across runs, no real growth)
    is not a cost model: the batch costs the median, whatever its size."""
    rng = np.random.default_rng(3)
    cases = []
    for pipeline, batch in (("kaggle", 4096), ("heavy", 4096)):
        cases += [case(pipeline, batch, s, 0.02, rng) for s in ("ideal", "gpu-sequential")]
    rows = rows_of(cases, "run")
    small, large = sorted((r for r in rows if r["strategy"] != "ideal"),
                          key=lambda r: r["output_mb"])
    small["host"]["finish"] += 0.5  # the smaller batch took longer
    got = fit(rows)
    assert got["batch_ms_per_mb"] == 0.0
    costs = [r["host"]["stage"] + r["host"]["finish"] - r["host"]["wait"] for r in (small, large)]
    assert got["batch_fixed_ms"] == pytest.approx(np.median(costs))


def test_batch_cost_over_too_narrow_a_span_of_sizes_is_fitted_flat():
    """kaggle at 4096 and 8192 only (2x the MB): a slope from there would be extrapolated
    to heavy's hundreds of MB; the batch costs the median instead."""
    rng = np.random.default_rng(4)
    cases = [case("kaggle", b, s, 0.02, rng) for b in (4096, 8192)
             for s in ("ideal", "gpu-sequential", "gpu-overlap")]
    rows = rows_of(cases, "run")
    mbs = sorted({r["output_mb"] for r in rows})
    assert mbs[-1] < MIN_MB_SPAN * mbs[0]
    got = fit(rows)
    assert got["batch_ms_per_mb"] == 0.0
    costs = [r["host"]["stage"] + r["host"]["finish"] - r["host"]["wait"] + r["host"]["check"]
             for r in rows if r["strategy"] != "ideal"]
    assert got["batch_fixed_ms"] == pytest.approx(np.median(costs))


def test_workers_ms_is_what_host_plans_add_over_ideal_less_the_batch():
    """distributed_workers_ms: the median over several-GPU host plans of their iteration
    over the same command's (and round's) ideal, less the batch cost; one-GPU runs and
    plans with kernels only are left out."""
    from corun.costmodel.host_fit import workers_ms

    def row(strategy, it, host_nodes, gpus=2, repeat=0, source="run"):
        return {"source": source, "pipeline": "kaggle", "batch": 4096, "strategy": strategy,
                "gpus": gpus, "host_nodes": host_nodes, "repeat": repeat, "iteration_ms": it}

    rows = [row("ideal", 6.0, 0), row("corun", 7.0, 105),
            row("ideal", 6.2, 0, repeat=1), row("corun", 7.6, 105, repeat=1),
            row("ideal", 5.0, 0, source="b"), row("corun", 5.9, 105, source="b"),
            row("corun-gpu", 9.0, 0),  # kernels only: not a host plan
            row("ideal", 3.0, 0, gpus=1, source="one"), row("corun", 9.0, 105, gpus=1,
                                                            source="one")]
    got = workers_ms(rows, 0.35)
    assert got["used"] == 3  # 1.0, 1.4 and 0.9 ms over ideal
    assert got["added_median_ms"] == pytest.approx(1.0)
    assert got["distributed_workers_ms"] == pytest.approx(0.65)
    with pytest.raises(SpecError, match="plan on the host"):
        workers_ms(rows[-2:], 0.35)


def test_owner_ms_pairs_each_owner_round_with_the_same_plan_without_owners():
    """distributed_owner_a2a_ms: the input all-to-all's host launches saved per unit of
    owner share, and distributed_owner_lane_ms: the batch host time the owners' lane
    adds; each owner round against the GPU plan of its command and round, an all-CPU
    `corun` never its base, one GPU left out."""
    from corun.costmodel.host_fit import owner_ms

    def row(strategy, a2a, batch, share=0.0, host_nodes=0, repeat=0, gpus=2):
        return {"source": "run", "pipeline": "kaggle", "batch": 4096, "strategy": strategy,
                "gpus": gpus, "host_nodes": host_nodes, "repeat": repeat,
                "owner_share": share,
                "host": {"launch:input_a2a": a2a, "stage": 0.1, "finish": batch - 0.1,
                         "wait": 0.0, "check": 0.0}}

    rows = [row("corun", 1.7, 0.5, host_nodes=105), row("corun-gpu", 1.6, 0.3),
            row("corun-owner", 1.2, 0.4, share=0.5),      # saved 0.4 / 0.5, added 0.1
            row("corun", 1.5, 0.3, repeat=1),             # a GPU plan: the base
            row("corun-owner", 1.2, 0.5, share=1.0, repeat=1),  # saved 0.3, added 0.2
            row("corun-owner", 0.2, 0.9, share=1.0, repeat=2),  # no base in its round
            row("corun-owner", 0.2, 0.9, share=1.0, gpus=1, repeat=1)]
    got = owner_ms(rows)
    assert got["used"] == 2
    assert got["distributed_owner_a2a_ms"] == pytest.approx((0.8 + 0.3) / 2)
    assert got["distributed_owner_lane_ms"] == pytest.approx(0.15)
    with pytest.raises(SpecError, match="corun-owner"):
        owner_ms(rows[:1])


def test_owner_share_shortens_only_the_distributed_step_and_its_input_all_to_all():
    """What owners save comes off the input all-to-all's launches (when the GPU may begin
    the stages after it) and off the step, less the owners' lane; one GPU has no input
    all-to-all and is unchanged."""
    from corun.costmodel.host import H200_HOST
    from corun.spec import Stage

    h = H200_HOST
    base = h.iteration_ms(2, 4.0, True, gpus=2)
    owned = h.iteration_ms(2, 4.0, True, gpus=2, owner_share=0.5)
    assert base - owned == pytest.approx(0.5 * h.distributed_owner_a2a_ms
                                         - h.distributed_owner_lane_ms)
    assert h.iteration_ms(2, 4.0, True, gpus=1, owner_share=0.5) == \
        h.iteration_ms(2, 4.0, True, gpus=1)
    stages = [Stage.INPUT_A2A, Stage.EMB_FWD, Stage.OPTIMIZER]
    plain = h.launched_ms(stages, [0, 0, 0], 0, gpus=2)
    less = h.launched_ms(stages, [0, 0, 0], 0, gpus=2, owner_share=1.0)
    assert [a - b for a, b in zip(plain, less)] == pytest.approx(
        [h.distributed_owner_a2a_ms] * 3)


def test_a_measured_plan_step_lengthens_only_an_eager_plan_on_one_gpu():
    """A host whose plans' eager steps cost more than ideal's beyond their launches
    (HostTimes.plan_step_ms): one GPU's plan that stages batches pays it in its iteration
    and across its stages' launches; ideal, a graphed step and several GPUs do not."""
    from dataclasses import replace

    from corun.costmodel.host import H200_HOST
    from corun.spec import Stage
    from corun.spec.hardware import HostTimes

    times = HostTimes(step_ms=3.0, graph_step_ms=0.2, kernel_launch_ms=0.03,
                      batch_fixed_ms=0.1, plan_step_ms=0.25)
    h = H200_HOST.measured(times, "test")
    folded = H200_HOST.measured(replace(times, plan_step_ms=0.0), "test")
    assert h.iteration_ms(3, 2.0, True) - folded.iteration_ms(3, 2.0, True) == \
        pytest.approx(0.25)
    for kw in ({"batches": False}, {"batches": True, "graphs": True},
               {"batches": True, "gpus": 2}):
        assert h.iteration_ms(3, 2.0, **kw) == folded.iteration_ms(3, 2.0, **kw)
    stages = [Stage.EMB_FWD, Stage.TOP_MLP_FWD, Stage.OPTIMIZER]
    plan = h.launched_ms(stages, [1, 0, 0], 0, batches=True)
    assert plan[-1] - folded.launched_ms(stages, [1, 0, 0], 0, batches=True)[-1] == \
        pytest.approx(0.25)
    assert h.launched_ms(stages, [1, 0, 0], 0) == folded.launched_ms(stages, [1, 0, 0], 0)


def ideal_step_row(model: str, batch: int, step_ms: float) -> dict:
    """A one-GPU ideal row of the host-steps matrix, as rows_of writes it."""
    return {"source": "x", "pipeline": "kaggle", "model": model, "batch": batch,
            "strategy": "ideal", "gpus": 1, "host": {"step": step_ms}}


def test_step_scales_divide_each_host_paced_models_step_by_kaggles():
    """A model whose step stays put as the batch doubles is host-paced: its median step
    over criteo-kaggle's is its scale; one whose step doubles (GPU-paced) gets none."""
    from corun.costmodel.host_fit import step_scales

    rows = [ideal_step_row("criteo-kaggle", b, x) for b, x in
            ((2048, 3.6), (2048, 3.8), (4096, 3.7), (4096, 4.2))]
    rows += [ideal_step_row("heavy-fused", b, x) for b, x in
             ((2048, 2.9), (2048, 3.0), (4096, 2.7), (4096, 2.8))]
    rows += [ideal_step_row("wide-4x", b, x) for b, x in ((2048, 4.3), (4096, 7.9))]
    out = step_scales(rows)
    assert out["criteo-kaggle"]["scale"] == 1.0
    assert out["heavy-fused"]["scale"] == pytest.approx(2.85 / 3.75, abs=0.005)
    assert not out["wide-4x"]["host_paced"] and "scale" not in out["wide-4x"]


def test_step_scales_refuse_runs_without_kaggle_or_without_a_doubled_batch():
    from corun.costmodel.host_fit import step_scales

    with pytest.raises(SpecError, match="criteo-kaggle"):
        step_scales([ideal_step_row("heavy-fused", b, 3.0) for b in (2048, 4096)])
    with pytest.raises(SpecError, match="one twice the other"):
        step_scales([ideal_step_row("criteo-kaggle", b, 3.0) for b in (2048, 8192)])

