"""bench/early_stall.py: each round's stall before the step's first stages, less ideal's."""

import json

from bench.early_stall import main
from spec import Stage


def case(strategy: str, repeat: int, busy_ms: float, bottom_ms: float) -> dict:
    stages = {s.value: {"median_ms": 0.1} for s in Stage}
    stages[Stage.BOTTOM_MLP_FWD.value] = {"median_ms": bottom_ms}
    stages["assemble"] = {"median_ms": 5.0}  # not a training stage: left out
    return {"pipeline": "p", "batch": 8, "strategy": strategy, "repeat": repeat,
            "measurement": {"model": "m", "stages": stages,
                            "per_iteration": {"busy": [busy_ms, busy_ms, busy_ms]}}}


def test_each_rounds_stall_is_the_busy_time_before_the_stages_plus_bottom_mlp_fwd(
        tmp_path, capsys):
    n = len(Stage)
    raw = [case("ideal", 0, 0.1 * n + 0.01, 0.1), case("x", 0, 0.1 * n + 0.21, 0.15),
           case("ideal", 1, 0.1 * n + 0.01, 0.1), case("x", 1, 0.1 * n + 0.11, 0.1)]
    path = tmp_path / "raw.json"
    path.write_text(json.dumps(raw))
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    # round 0: (0.21 - 0.05) before + 0.15 - (0.01 + 0.1) = 0.20; round 1: 0.10
    assert "median +0.150 ms; rounds +0.200 +0.100" in out
