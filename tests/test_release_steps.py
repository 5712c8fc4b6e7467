"""costmodel/release_steps.py: a profiled step that released a kernel, read back as the
rates the simulator applies from the release on."""

import pytest
from corun.costmodel.release_steps import (
    ReleaseStep,
    format_steps,
    parse_steps,
    rates,
    read_release_steps,
)
from corun.costmodel.types import MAX_OVERLAP_FACTOR


def test_rates_end_the_kernel_when_the_step_measured():
    step = ReleaseStep(stage_ms=(1.0, 2.0, 1.0), alone_ms=(1.0, 1.0, 1.25),
                       kernel_alone_ms=1.0, kernel_ms=2.5)
    r = rates(step, 1)
    assert [s for s, _ in r] == [2.0, 1.0]  # slowed 2x; never sped up (1.0 < 1.25)
    assert {k for _, k in r} == {2.5}  # 1 ms of work over the 2.5 ms it took
    late = ReleaseStep((1.0, 1.0), (1.0, 1.0), kernel_alone_ms=1.0, kernel_ms=1.5)
    assert rates(late, 1) == [(1.0, pytest.approx(2.0))]  # 0.5 ms left alone after 1 ms
    stalled = ReleaseStep((1.0, 1.0), (1.0, 1.0), kernel_alone_ms=1.0, kernel_ms=2.5)
    assert rates(stalled, 1) == [(1.0, MAX_OVERLAP_FACTOR)]  # all its work after the step


def test_a_stage_timed_faster_beside_the_kernel_speeds_up_only_when_asked():
    """The last stage took 1.0 ms beside the kernel and 1.25 alone: kept at 1.0 by default
    (the cost model's steps); with speed_ups (a machine's own step) at 1.0 / 1.25 of its
    time alone, and the stages it slowed as before."""
    step = ReleaseStep(stage_ms=(1.0, 2.0, 1.0), alone_ms=(1.0, 1.0, 1.25),
                       kernel_alone_ms=1.0, kernel_ms=2.5)
    assert [s for s, _ in rates(step, 1, speed_ups=True)] == pytest.approx([2.0, 0.8])
    after = ReleaseStep(stage_ms=(1.0, 2.0, 1.0), alone_ms=(1.0, 1.0, 1.25),
                        kernel_alone_ms=1.0, kernel_ms=2.0)  # ended before the last stage
    assert [s for s, _ in rates(after, 1, speed_ups=True)] == [2.0, 1.0]


def test_a_stage_the_kernel_ended_inside_is_slowed_only_while_beside_it():
    """The kernel ends 0.6 ms into a 1.2 ms stage it delayed by 0.05 ms (alone 1.15): the
    delay accrued over 0.6 ms, so the stage runs at 0.6 / 0.55 while the kernel does (the
    simulator applies the factor only then), not at 1.2 / 1.15 over the whole stage."""
    step = ReleaseStep(stage_ms=(0.1, 0.2, 1.2, 0.01), alone_ms=(0.1, 0.1, 1.15, 0.01),
                       kernel_alone_ms=0.3, kernel_ms=0.8)
    r = rates(step, 1)
    assert [s for s, _ in r] == pytest.approx([2.0, 0.6 / 0.55, 1.0])
    # the whole measured delay comes back where the kernel runs 0.6 ms into the stage
    assert 0.6 * (1 - 1 / r[1][0]) == pytest.approx(0.05)


def test_a_torn_step_column_names_itself():
    from corun.costmodel.release_steps import parse_steps
    from corun.spec import SpecError

    assert parse_steps("a=1.5 b=2") == {"a": 1.5, "b": 2.0}
    for bad in ("a=1.5 b", "a=x", "a=1=2"):
        with pytest.raises(SpecError, match="step_stage_ms"):
            parse_steps(bad)


def test_release_steps_need_every_stage_of_the_kernel():
    def row(stage, steps=""):
        return {"gpu": "NVIDIA H200", "model": "m", "batch": "8", "kernel": "k",
                "stage": stage, "stage_alone_ms": "1.0", "kernel_alone_ms": "0.5",
                "kernel_corun_ms": "1.5", "step_stage_ms": steps}

    rows = [row("a", "a=1.5 b=2.0"), row("b", "a=1.0 b=3.0")]
    got = read_release_steps(rows, lambda r, step: r["stage"])
    assert got["a"] == ReleaseStep((1.5, 2.0), (1.0, 1.0), 0.5, 1.5)
    # b's step: the kernel ran 1.5 ms of the 3.0 ms stage, which it delayed by 2.0 ms
    assert rates(got["b"], 1)[0][0] == MAX_OVERLAP_FACTOR
    assert read_release_steps(rows[:1], lambda r, step: r["stage"]) == {}  # b not profiled


def test_the_learned_model_looks_up_a_plans_kernel_by_its_whole_step(tmp_path):
    """release_steps_in reads the steps of graphed and eager profiles; release_rates
    answers a kernel whose release the profile measured, for graphed stages only from
    the graphed profile, and None for another stage, kernel or step."""
    import csv
    from dataclasses import replace

    from corun.costmodel import learned
    from corun.costmodel.learned import stage_row
    from corun.costmodel.workload import stage_work
    from corun.spec.sharding import shard_tables

    from corun import spec
    from corun.profiling import STEP_COLUMNS

    model = spec.model_preset("criteo-kaggle")
    hw = spec.hardware_preset("h200", 1)
    works = list(stage_work(model, hw, shard_tables(model, hw), 0).values())
    names = [w.stage.value for w in works]
    steps = " ".join(f"{n}={0.2 + 0.1 * i:.3f}" for i, n in enumerate(names))
    rows = [{**dict.fromkeys(STEP_COLUMNS, "0"), "gpu": "NVIDIA H200", "model": model.name,
             "batch": str(model.batch_per_gpu), "kernel": "k", "stage": n, **stage_row(w),
             "stage_alone_ms": "0.1", "kernel_alone_ms": "0.5", "kernel_corun_ms": "1.0",
             "measured_utc": "x", "step_stage_ms": steps if n == names[2] else ""}
            for n, w in zip(names, works)]
    with (tmp_path / "graphed-profile.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=STEP_COLUMNS)
        w.writeheader()
        w.writerows(rows)
    found = learned.release_steps_in(tmp_path)
    assert len(found) == 1 and next(iter(found))[2] is True  # graphed
    cm = learned.LearnedCostModel(learned.CoRunModel(0), {"data_sha256": "0" * 12,
                                                         "rows": 0}, release_steps=found)
    graphed = [replace(w, graphed=True) for w in works]
    kernel = type("K", (), {"key": "k"})()
    got = cm.release_rates(kernel, graphed, hw, 2)
    assert got is not None and len(got) == len(works) - 2
    assert got[0][0] == pytest.approx(0.4 / 0.1)  # the releasing stage, 0.4 ms of 0.1
    assert cm.release_rates(kernel, works, hw, 2) is None  # eager: not measured
    assert cm.release_rates(kernel, graphed, hw, 3) is None
    # another model whose releasing stage is the same but whose update is not: its step
    # was not measured (heavy-lean's interaction_bwd took heavy-hot's step before)
    other = [replace(w, lookups=2 * w.lookups + 1) if w.stage.value == "emb_bwd" else w
             for w in graphed]
    assert cm.release_rates(kernel, other, hw, 2) is None


def test_format_steps_writes_what_parse_steps_reads():
    steps = {"emb_fwd": 0.891234567, "interaction_bwd": 2.314016, "optimizer": 0.00982}
    text = format_steps(steps)
    assert text == "emb_fwd=0.89123 interaction_bwd=2.31402 optimizer=0.00982"
    assert parse_steps(text) == pytest.approx(steps, abs=1e-5)
