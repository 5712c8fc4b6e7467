"""bench/render_plans.py: each executed case next to the prediction its plan was chosen
on, a model other than its pipeline's default read from its own plan folder, and a case
without a prediction file (a stage sweep's "at:<stage>") predicted by the simulator."""

import json

import pytest

from bench.render_plans import main, plan_folder, rows
from reports.rounds import record_iteration_ms


def case(strategy: str, median_ms: float, plan: dict | None = None,
         mean_ms: float | None = None) -> dict:
    """A measured case; `mean_ms`: its mean iteration where slow steps part it from the
    median step."""
    m = {"pipeline": "heavy", "model": "heavy-fused", "batch_per_gpu": 8192, "gpu_count": 1,
         "plan": plan, "iteration": {"median_ms": median_ms, "p90_ms": median_ms * 1.1},
         "throughput_samples_per_s": 8192e3 / (mean_ms or median_ms),
         "host": {"step": {"median_ms": 3.5}},
         "command": "python bench/execute_gpu.py --matrix heavy-stages"}
    return {"pipeline": "heavy", "batch": 8192, "strategy": strategy, "measurement": m}


def test_heavy_fused_rows_and_a_stage_sweep_case(tmp_path):
    import spec
    from spec.serde import to_jsonable

    assert plan_folder("heavy", "heavy-fused", 8192).name == "heavy-fused-b8192"
    assert plan_folder("heavy", "heavy", 4096).name == "heavy-b4096"
    x4 = plan_folder("kaggle", "criteo-kaggle", 8192, gpus=4)
    assert (x4.parent.name, x4.name) == ("x4", "kaggle-b8192")
    at_emb_fwd = spec.one_kernel_plan(spec.pipeline_preset("heavy"), "heavy-fused", 1,
                                      "emb_fwd", 1056, 256)
    raw = [case("ideal", 4.0), case("gpu-sequential", 4.8),
           case("at:emb_fwd", 4.6, to_jsonable(at_emb_fwd), mean_ms=4.9)]
    path = tmp_path / "raw.json"
    path.write_text(json.dumps(raw))
    ideal, seq, at = rows([path])
    filed = json.loads((plan_folder("heavy", "heavy-fused", 8192)
                        / "prediction-gpu-sequential.json").read_text())
    assert seq["predicted_ms"] == pytest.approx(record_iteration_ms(filed)) and seq["note"] == ""
    assert seq["of_ideal_pct"] == pytest.approx(100 * 4.0 / 4.8)
    assert at["note"] == " (predicted here)" and at["predicted_ms"] > ideal["predicted_ms"]
    assert at["measured_ms"] == pytest.approx(4.9) and at["median_step_ms"] == 4.6
    assert at["error_pct"] == pytest.approx(100 * (at["predicted_ms"] - 4.9) / 4.9)
    out = tmp_path / "p.md"
    assert main([str(path), "-o", str(out)]) == 0
    text = out.read_text()
    assert "| heavy / heavy-fused b8192 | at:emb_fwd (predicted here) | 4.900 | 4.600 (5.06) | " \
        "87.0% / 81.6% |" in text
    assert "| heavy / heavy-fused b8192 | at:emb_fwd (87.0%) |" in text  # the measured best


def test_a_graphed_run_reads_the_graphs_plans_and_predicts_its_eager_variant_eagerly(tmp_path):
    note = "the trainer's step replayed as CUDA graphs, one a stage (backend/graphed.py)"

    def kaggle(strategy: str, median_ms: float, graphed: bool) -> dict:
        m = {"pipeline": "kaggle", "model": "criteo-kaggle", "batch_per_gpu": 4096,
             "gpu_count": 1, "plan": {"pipeline": "kaggle", "model": "criteo-kaggle",
                                      "gpu_count": 1, "kernels": []},
             "iteration": {"median_ms": median_ms, "p90_ms": median_ms},
             "throughput_samples_per_s": 4096e3 / median_ms, "host": {},
             "notes": [note] if graphed else [], "command": "python bench/execute_gpu.py"}
        return {"pipeline": "kaggle", "batch": 4096, "strategy": strategy, "measurement": m}

    assert plan_folder("kaggle", "criteo-kaggle", 4096, graphs=True).parent.name == "graphs"
    path = tmp_path / "raw.json"
    path.write_text(json.dumps([kaggle("ideal+eager", 4.0, False),
                                kaggle("ideal", 2.6, True)]))
    eager, ideal = rows([path])
    filed = json.loads((plan_folder("kaggle", "criteo-kaggle", 4096, graphs=True)
                        / "prediction-ideal.json").read_text())
    assert ideal["predicted_ms"] == pytest.approx(record_iteration_ms(filed))
    assert ideal["note"] == ""
    assert eager["note"] == " (predicted here)"
    assert eager["predicted_ms"] > 1.3 * ideal["predicted_ms"]  # the host paces it eagerly
    assert eager["of_ideal_pct"] == pytest.approx(100 * 2.6 / 4.0)


def test_an_unrolled_kernel_is_not_predicted(tmp_path):
    """"+u<N>" (RunSettings.values_unroll) and "+r<N>" (values_max_registers) run kernels
    the cost model never profiled: the render says so instead of predicting the plan as
    if they were the plain kernel; "+u1" is the plain kernel."""
    import math

    import spec
    from bench.render_plans import predicted_ms
    from spec.serde import to_jsonable

    plan = to_jsonable(spec.one_kernel_plan(spec.pipeline_preset("heavy"), "heavy-fused", 1,
                                            "emb_fwd", 1056, 256))
    ms, note = predicted_ms(case("at:emb_fwd+u2", 4.9, plan))
    assert math.isnan(ms) and note == " (not predicted: the values kernel unrolled)"
    ms, note = predicted_ms(case("at:emb_fwd+u1", 4.6, plan))
    assert ms > 0 and note == " (predicted here)"
    ms, note = predicted_ms(case("at:emb_fwd+r32", 4.6, plan))  # registers capped
    assert math.isnan(ms) and note == " (not predicted: the values kernel's registers capped)"
    ms, note = predicted_ms(case("at:emb_fwd+off1.4", 4.6, plan))  # released 1.4 ms in
    assert math.isnan(ms) and note == " (not predicted: released after an offset into its stage)"
