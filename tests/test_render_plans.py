"""bench/render_plans.py: each executed case next to the prediction its plan was chosen
on, a model other than its pipeline's default read from its own plan folder, and a case
without a prediction file (a stage sweep's "at:<stage>") predicted by the simulator."""

import json

import pytest

from bench.render_plans import main, plan_folder, rows


def case(strategy: str, median_ms: float, plan: dict | None = None) -> dict:
    m = {"pipeline": "heavy", "model": "heavy-fused", "batch_per_gpu": 8192, "gpu_count": 1,
         "plan": plan, "iteration": {"median_ms": median_ms, "p90_ms": median_ms * 1.1},
         "throughput_samples_per_s": 8192e3 / median_ms,
         "host": {"step": {"median_ms": 3.5}},
         "command": "python bench/execute_gpu.py --matrix heavy-stages"}
    return {"pipeline": "heavy", "batch": 8192, "strategy": strategy, "measurement": m}


def test_heavy_fused_rows_and_a_stage_sweep_case(tmp_path):
    import spec
    from spec.serde import to_jsonable

    assert plan_folder("heavy", "heavy-fused", 8192).name == "heavy-fused-b8192"
    assert plan_folder("heavy", "heavy", 4096).name == "heavy-b4096"
    at_emb_fwd = spec.one_kernel_plan(spec.pipeline_preset("heavy"), "heavy-fused", 1,
                                      "emb_fwd", 1056, 256)
    raw = [case("ideal", 4.0), case("gpu-sequential", 4.8),
           case("at:emb_fwd", 4.6, to_jsonable(at_emb_fwd))]
    path = tmp_path / "raw.json"
    path.write_text(json.dumps(raw))
    ideal, seq, at = rows([path])
    filed = json.loads((plan_folder("heavy", "heavy-fused", 8192)
                        / "prediction-gpu-sequential.json").read_text())
    assert seq["predicted_ms"] == filed["iteration_time_ms"] and seq["note"] == ""
    assert seq["of_ideal_pct"] == pytest.approx(100 * 4.0 / 4.8)
    assert at["note"] == " (predicted here)" and at["predicted_ms"] > ideal["predicted_ms"]
    out = tmp_path / "p.md"
    assert main([str(path), "-o", str(out)]) == 0
    text = out.read_text()
    assert "| heavy / heavy-fused b8192 | at:emb_fwd (predicted here) | 4.600 (5.06) | " \
        "87.0% / 87.0% |" in text
    assert "| heavy / heavy-fused b8192 | at:emb_fwd (87.0%) |" in text  # the measured best
