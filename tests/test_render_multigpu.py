"""bench/render_multigpu.py: each 4-GPU case next to its prediction, shares of the same
run's ideal, the collectives, and PGAS predicted for ideal only."""

import json

import pytest

from bench.render_multigpu import main, rows


def case(strategy: str, median_ms: float, step_ms: float) -> dict:
    stages = {"input_a2a": 1.5, "emb_a2a_fwd": 0.6, "emb_a2a_bwd": 0.4, "grad_allreduce": 0.2}
    m = {"pipeline": "kaggle", "model": "criteo-kaggle", "batch_per_gpu": 4096, "gpu_count": 4,
         "plan": None,
         "iteration": {"median_ms": median_ms, "p90_ms": median_ms * 1.1},
         "throughput_samples_per_s": 4 * 4096e3 / median_ms,
         "stages": {k: {"median_ms": v} for k, v in stages.items()},
         "host": {"step": {"median_ms": step_ms}},
         "command": "python bench/execute_gpu.py --matrix multigpu",
         "git_commit": "abc1234def"}
    return {"pipeline": "kaggle", "batch": 4096, "strategy": strategy, "measurement": m}


def test_rows_predict_and_compare(tmp_path):
    raw = [case("ideal", 7.0, 6.9), case("gpu-sequential", 8.0, 7.5),
           {"pipeline": "kaggle", "batch": 4096, "strategy": "rap", "error": "x"}]
    path = tmp_path / "raw.json"
    path.write_text(json.dumps(raw))
    rs = rows([path])
    assert [r["strategy"] for r in rs] == ["ideal", "gpu-sequential"]  # rap failed
    ideal, seq = rs
    assert seq["of_ideal_pct"] == pytest.approx(87.5)
    assert seq["error_pct"] == pytest.approx(100 * (seq["predicted_ms"] - 8.0) / 8.0)
    assert seq["predicted_ms"] > ideal["predicted_ms"]  # the kernel and batch host time
    assert "pgas_ms" in ideal and "pgas_ms" not in seq
    # calibrated: the prediction scaled by ideal's measured over predicted time
    assert "calibrated_ms" not in ideal
    assert seq["calibrated_ms"] == pytest.approx(
        seq["predicted_ms"] * 7.0 / ideal["predicted_ms"])
    assert ideal["comm"]["input_a2a"] == 1.5 and ideal["comm_pred"]["input_a2a"] > 0
    out = tmp_path / "m.md"
    assert main([str(path), "-o", str(out)]) == 0
    text = out.read_text()
    assert "| kaggle b4096 x4 | gpu-sequential | 8.000 (8.80) | 87.5% / 87.5% |" in text
    # a raw file other than the one the constants were fitted on: every row held out
    assert "were not fitted on (held out): mean" in text and "in sample" not in text
    assert "Calibrated on each command's ideal (the other strategies only): mean" in text
    assert text.count("| kaggle b4096 x4 | 1.000 ms |") == 1  # PGAS: ideal's row only


def test_a_missing_raw_file_is_named(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main([str(tmp_path / "none.json"), "-o", str(tmp_path / "m.md")])
    assert e.value.code == 2
    assert "none.json" in capsys.readouterr().err
    assert not (tmp_path / "m.md").exists()
