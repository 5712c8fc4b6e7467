"""costmodel/release_steps.py: a profiled step that released a kernel, read back as the
rates the simulator applies from the release on."""

import pytest

from costmodel.release_steps import ReleaseStep, rates, read_release_steps
from costmodel.types import MAX_OVERLAP_FACTOR


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


def test_release_steps_need_every_stage_of_the_kernel():
    def row(stage, steps=""):
        return {"gpu": "NVIDIA H200", "model": "m", "batch": "8", "kernel": "k",
                "stage": stage, "stage_alone_ms": "1.0", "kernel_alone_ms": "0.5",
                "kernel_corun_ms": "1.5", "step_stage_ms": steps}

    rows = [row("a", "a=1.5 b=2.0"), row("b", "a=1.0 b=3.0")]
    got = read_release_steps(rows, lambda r: r["stage"])
    assert got["a"] == ReleaseStep((1.5, 2.0), (1.0, 1.0), 0.5, 1.5)
    assert rates(got["b"], 1)[0][0] == 3.0
    assert read_release_steps(rows[:1], lambda r: r["stage"]) == {}  # b was not profiled
