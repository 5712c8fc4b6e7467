"""Rounds of strategies (reports/rounds.py): the turned order and the per-round shares."""

import pytest
from corun.reports.rounds import round_stats, turned_order


def test_repeated_rounds_turn_their_order():
    assert turned_order(["ideal", "a", "b"], 1) == [(0, "ideal"), (0, "a"), (0, "b")]
    assert turned_order(["ideal", "a", "b"], 3) == [
        (0, "ideal"), (0, "a"), (0, "b"), (1, "a"), (1, "b"), (1, "ideal"),
        (2, "b"), (2, "ideal"), (2, "a")]
    assert turned_order([], 4) == []


def test_shares_and_recovery_are_taken_within_each_round():
    # round 1's host is 10% slower: every strategy moves alike, the shares do not
    times = {0: {"ideal": 10.0, "gpu-sequential": 12.0, "plan": 10.5},
             1: {"ideal": 11.0, "gpu-sequential": 13.2, "plan": 11.55}}
    by = {s.strategy: s for s in round_stats(times)}
    assert [s.strategy for s in round_stats(times)] == ["ideal", "gpu-sequential", "plan"]
    plan = by["plan"]
    assert plan.rounds == 2 and plan.min_ms == 10.5 and plan.max_ms == 11.55
    assert plan.median_ms == pytest.approx(11.025)
    assert plan.of_ideal_pct == pytest.approx(100 * 10 / 10.5)
    assert plan.of_ideal_min_pct == pytest.approx(plan.of_ideal_max_pct)
    assert plan.recovered_pct == pytest.approx(75.0)
    assert plan.wins == 2 and by["gpu-sequential"].wins == 0 and by["ideal"].wins is None
    assert by["gpu-sequential"].recovered_pct == pytest.approx(0.0)


def test_without_ideal_or_a_gap_there_is_no_share_or_recovery():
    no_ideal = round_stats({0: {"gpu-sequential": 12.0, "plan": 11.0}})
    assert all(s.of_ideal_pct is None and s.recovered_pct is None for s in no_ideal)
    assert {s.strategy: s.wins for s in no_ideal} == {"gpu-sequential": 0, "plan": 1}
    # gpu-sequential as fast as ideal: no gap to recover
    flat = round_stats({0: {"ideal": 10.0, "gpu-sequential": 10.0, "plan": 10.2}})
    assert all(s.recovered_pct is None for s in flat)


def test_a_variant_of_ideal_is_never_a_rounds_fastest():
    # ideal's step run another way (e.g. "+upd92": the update on SMs of its own) has no
    # preprocessing to hide: the plan is still the round's fastest strategy
    stats = round_stats({0: {"ideal": 10.0, "ideal+upd92": 9.8, "gpu-sequential": 12.0,
                             "plan": 10.5}})
    wins = {s.strategy: s.wins for s in stats}
    assert wins == {"ideal": None, "ideal+upd92": None, "gpu-sequential": 0, "plan": 1}
    assert next(s for s in stats if s.strategy == "ideal+upd92").recovered_pct == \
        pytest.approx(110.0)


def test_a_strategy_on_another_update_grid_recovers_against_that_grid_s_baselines():
    """"-ub<N>" (tune) and "+ub<N>" (bench) rows take their gap from ideal and
    gpu-sequential on the same grid where the round ran both, else from the defaults'."""
    from corun.reports.rounds import update_grid

    assert [update_grid(s) for s in ("corun-cap64-ub16", "corun+cap64+ub16", "ideal+ub8",
                                     "corun", "corun-2", "corun+uncapped")] == [
        16, 16, 8, None, None, None]
    t = {"ideal": 7.0, "gpu-sequential": 9.0, "corun": 6.8, "ideal+ub16": 5.9,
         "gpu-sequential+ub16": 7.9, "corun-cap64-ub16": 6.7}
    by = {s.strategy: s for s in round_stats({0: t})}
    assert by["corun"].recovered_pct == pytest.approx(110.0)
    assert by["corun-cap64-ub16"].recovered_pct == pytest.approx(60.0)  # not 115%
    assert by["corun-cap64-ub16"].of_ideal_pct == pytest.approx(100 * 7.0 / 6.7)
    no_grid_seq = {k: v for k, v in t.items() if k != "gpu-sequential+ub16"}
    by = {s.strategy: s for s in round_stats({0: no_grid_seq})}
    assert by["corun-cap64-ub16"].recovered_pct == pytest.approx(115.0)  # the defaults'
