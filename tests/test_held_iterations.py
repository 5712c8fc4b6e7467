"""bench/held_iterations.py: the share of a case's iterations slower than halfway from
ideal's median to gpu-sequential's, by what ran."""

import json

from bench.held_iterations import held_shares, main
from spec.measurement import GRAPHS_NOTE


def case(strategy: str, iterations: list[float], kernel: tuple | None = None,
         model: str = "m", graphed: bool = True) -> dict:
    plan = {"kernels": [{"stage": kernel[0], "blocks": kernel[1]}], "batches_ahead": 2} \
        if kernel else None
    notes = [GRAPHS_NOTE + ", one a stage"] if graphed else []
    return {"pipeline": "p", "batch": 8, "strategy": strategy,
            "measurement": {"model": model, "notes": notes, "plan": plan,
                            "iteration": {"median_ms": sorted(iterations)[len(iterations) // 2]},
                            "per_iteration": {"iteration": iterations}}}


def test_a_case_s_share_is_its_iterations_past_halfway_to_gpu_sequential(tmp_path, capsys):
    raw = [case("ideal", [1.0] * 4), case("gpu-sequential", [2.0] * 4),
           case("corun", [1.1, 1.9, 1.2, 1.8], ("interaction_bwd", 396)),  # cut: 1.5
           case("at:emb_fwd", [1.4, 1.45, 1.6, 1.3], ("emb_fwd", 132)),
           case("ideal", [5.0] * 4, model="other")]  # another model: left out
    path = tmp_path / "raw.json"
    path.write_text(json.dumps(raw))
    shares = held_shares(path, "m")
    assert shares[(8, "graphed: interaction_bwd/396, 2 ahead")] == [0.5]
    assert shares[(8, "graphed: emb_fwd/132, 2 ahead")] == [0.25]
    assert shares[(8, "graphed: ideal")] == [0.0]
    assert shares[(8, "graphed: gpu-sequential")] == [1.0]
    assert main([str(path), "--model", "m"]) == 0
    assert "graphed: interaction_bwd/396, 2 ahead" in capsys.readouterr().out
    assert main([str(path), "--model", "none"]) == 1  # no such model: said, not a table
