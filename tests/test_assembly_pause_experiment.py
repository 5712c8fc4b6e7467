"""bench/assembly_pause_experiment.py: the variant it predicts beside the committed rule."""

from bench.assembly_pause_experiment import COMMITTED, pausing_assembly_run, summary
from sim.scenario import ASSEMBLY_HOLDS, KernelRun


def test_a_large_assembly_pauses_the_running_stage_and_a_small_one_does_not():
    last = KernelRun("k0", 3, 1.0, ((1.2, 1.5),) * 9, ((1.1, 1.3),) * 9)
    large = pausing_assembly_run(last, 500.0, True)
    assert large.effects == large.carried == (ASSEMBLY_HOLDS,) * 9
    assert COMMITTED(last, 500.0, True).effects == last.effects  # committed: kernel's rates
    small = pausing_assembly_run(last, 10.0, True)
    assert small == COMMITTED(last, 10.0, True)
    assert small.effects == last.effects and small.carried == last.carried


def test_summary_counts_cases_within_five_percent_and_commands_ranked_right():
    rs = [{"source": "r", "model": "heavy-lean", "batch": 1, "strategy": s,
           "measured_ms": m, "predicted_ms": p, "error_pct": 100 * (p - m) / m}
          for s, m, p in (("a", 10.0, 10.2), ("b", 11.0, 9.0), ("ideal", 9.0, 9.0))]
    text = summary(rs)
    assert text[0].startswith("all: 3 cases") and "2 within 5%" in text[0]
    assert "best the measured best in 0 of 1 commands" in text[0]
    assert text[1].startswith("heavy models: 3 cases")
