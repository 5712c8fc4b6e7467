"""bench/small_batch_steps_experiment.py: per command, the plan predicted best against the
one measured best, each by its medians over the command's rounds; the profiled steps and
kernels read back from the committed raw profile."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.small_batch_steps_experiment import commands, kernels_alone, profiled_steps  # noqa: E402


def test_commands_put_the_predicted_best_beside_the_measured_best():
    def row(source, strategy, predicted, measured):
        return {"source": source, "batch": 8192, "strategy": strategy,
                "predicted_ms": predicted, "measured_ms": measured}

    rs = [row("a", "ideal", 1.0, 1.0), row("a", "x", 1.5, 2.0), row("a", "x", 1.7, 2.2),
          row("a", "x", 1.6, 2.1), row("a", "y", 1.8, 1.9), row("b", "x", 1.0, 1.0)]
    assert commands(rs) == [("a", 8192, "x", 1.6, 2.1, "y", 1.9)]  # b: one plan only


def test_the_raw_profile_reads_back_as_steps_and_kernels_alone():
    steps, alone = profiled_steps(), kernels_alone()
    # 9 launch widths x 2 row mappings x 2 batches, released at each of 9 stages
    assert len(steps) == 324 and len(alone) == 36
    assert all(0.2 < ms < 1.2 for ms in alone.values())
