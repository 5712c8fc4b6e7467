"""CoRunEffect.from_whole_run: the rates the simulator applies while a kernel and a stage
overlap, from the whole times a profiled pair measures."""

import pytest
from corun.costmodel.types import MAX_OVERLAP_FACTOR, CoRunEffect


def replay(effect: CoRunEffect, kernel_alone_ms: float, stage_alone_ms: float
           ) -> tuple[float, float]:
    """(kernel end, stage end) when both start at 0 and each progresses at 1/factor of
    its standalone rate while both run, at its standalone rate alone (sim/engine.py)."""
    k_rate, s_rate = 1 / effect.kernel_factor, 1 / effect.stage_factor
    k_end, s_end = kernel_alone_ms / k_rate, stage_alone_ms / s_rate
    if k_end <= s_end:  # the stage finishes alone
        return k_end, k_end + stage_alone_ms - k_end * s_rate
    return s_end + kernel_alone_ms - s_end * k_rate, s_end


# (kernel alone, kernel co-run, stage alone, stage co-run) ms, measured on the H200
# (costmodel/data/h200/profile-heavy-fused-plans.csv, heavy-fused b16384, and profile.csv)
PAIRS = [
    (0.545, 0.584, 1.500, 1.939),  # 48-node kernel at interaction_bwd: the stage 4x slower
    (1.174, 2.694, 1.735, 2.570),  # the whole pipeline at emb_fwd: it outlasts the stage
    (0.294, 0.331, 1.500, 1.671),
    (0.032, 0.034, 0.783, 0.790),
]


@pytest.mark.parametrize("ka, kc, sa, sc", PAIRS)
def test_the_rates_replay_to_the_measured_whole_times(ka, kc, sa, sc):
    e = CoRunEffect.from_whole_run(ka, kc, sa, sc)
    k_end, s_end = replay(e, ka, sa)
    assert k_end == pytest.approx(kc, rel=1e-9)
    assert s_end == pytest.approx(sc, rel=1e-9)


def test_whole_time_ratios_would_spread_the_delay_over_the_whole_stage():
    # the ratios of whole times, applied while overlapping, lose 70% of the delay here
    ka, kc, sa, sc = PAIRS[0]
    naive = CoRunEffect(sc / sa, kc / ka)
    assert replay(naive, ka, sa)[1] < sa + 0.35 * (sc - sa)
    assert CoRunEffect.from_whole_run(ka, kc, sa, sc).stage_factor == pytest.approx(
        0.584 / (0.584 - 0.439))


def test_a_kernel_queued_behind_the_stage_makes_no_progress_beside_it():
    # a 0.26 ms kernel released at heavy-fused's emb_bwd ends after the whole stage
    e = CoRunEffect.from_whole_run(0.260, 5.971 + 0.2, 5.797, 5.797)
    assert e.kernel_factor == MAX_OVERLAP_FACTOR
    assert e.stage_factor == 1.0


def test_a_stage_delayed_by_more_than_the_overlap_stops_while_the_kernel_runs():
    e = CoRunEffect.from_whole_run(0.007, 0.010, 1.500, 1.600)
    assert e.stage_factor == MAX_OVERLAP_FACTOR


def test_a_pair_without_interference_has_unit_factors():
    e = CoRunEffect.from_whole_run(0.2, 0.2, 1.0, 0.99)
    assert (e.stage_factor, e.kernel_factor) == (1.0, 1.0)


def whole_runs(factors: list[float], stage_ms: list[float], kernel_alone_ms: float
               ) -> list[tuple[float, float, float, float]]:
    """What a profile times for a kernel released at each stage's start, when it moves
    at 1/factor of its standalone rate beside each stage and alone after the last."""
    runs = []
    for i in range(len(stage_ms)):
        left, t = kernel_alone_ms, 0.0
        for f, c in zip(factors[i:], stage_ms[i:]):
            if left <= c / f:
                t, left = t + left * f, 0.0
                break
            left, t = left - c / f, t + c
        runs.append((kernel_alone_ms, t + left, 0.5 * stage_ms[i], stage_ms[i]))
    return runs


def test_kernel_factors_come_from_the_stages_after_not_an_idle_gpu():
    """A kernel that outlasts a 0.1 ms stage runs on beside the next one, not alone:
    read stage by stage, the pair at that stage says the kernel stalled there (it ended
    later than it would have alone after the stage); read together, the runs give back
    the rates that made them."""
    from corun.costmodel.types import kernel_factors_through

    factors, stage_ms = [4.0, 1.0, 2.0], [1.0, 0.1, 1.0]
    runs = whole_runs(factors, stage_ms, 1.0)
    assert CoRunEffect.from_whole_run(*runs[1]).kernel_factor == MAX_OVERLAP_FACTOR
    assert kernel_factors_through(runs) == pytest.approx(factors, rel=1e-6)
    ends_early = whole_runs([1.5, 1.0, 2.0], [1.0, 0.1, 1.0], 0.5)  # within stage 0
    assert kernel_factors_through(ends_early)[0] == pytest.approx(1.5)
