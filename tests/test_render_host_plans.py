"""bench/render_host_plans.py: plans that preprocess on the host CPU against gpu-sequential
of the same run, workload and round."""

import json

import pytest

from bench.render_host_plans import main, pairs


def case(strategy: str, ms: float, rnd: int, cpu_nodes: int, batch: int = 4096,
         gpus: int = 1, step_ms: float | None = 3.7) -> dict:
    m = {"pipeline": "kaggle", "model": "criteo-kaggle", "gpu_count": gpus,
         "iteration": {"median_ms": ms},
         "plan": {"kernels": [], "cpu_nodes": [f"n{i}" for i in range(cpu_nodes)]},
         "host": {"step": {"median_ms": step_ms}} if step_ms is not None else {}}
    return {"pipeline": "kaggle", "batch": batch, "strategy": strategy, "repeat": rnd,
            "measurement": m}


RAW = [case("gpu-sequential", 4.0, 0, 0), case("corun", 3.6, 0, 105, step_ms=3.4),
       case("gpu-sequential", 4.2, 1, 0), case("corun", 4.62, 1, 105),
       case("cpu:16", 3.5, 1, 105),  # a baseline, not a plan
       case("corun-2", 4.4, 2, 102),  # round 2 ran no gpu-sequential
       case("gpu-sequential", 4.0, 0, 0, batch=8192), case("corun", 4.0, 0, 0, batch=8192),
       case("gpu-sequential", 7.0, 0, 0, gpus=2), case("corun", 6.0, 0, 105, gpus=2)]


def test_only_host_plans_beside_gpu_sequential_of_their_round_are_paired(tmp_path):
    path = tmp_path / "execute_x.json"
    path.write_text(json.dumps(RAW))
    rows = pairs([path])
    assert [(r["gpus"], r["round"], r["strategy"]) for r in rows] == [
        (1, 0, "corun"), (1, 1, "corun"), (2, 0, "corun")]  # each beside its own GPU count
    assert [r["plan_ms"] / r["sequential_ms"] for r in rows] == pytest.approx(
        [0.9, 1.1, 6 / 7])
    assert (rows[0]["plan_step_ms"], rows[0]["sequential_step_ms"]) == (3.4, 3.7)


def test_the_command_line_writes_the_summary(tmp_path):
    path, out = tmp_path / "execute_x.json", tmp_path / "h.md"
    path.write_text(json.dumps(RAW))
    assert main([str(path), "-o", str(out)]) == 0
    text = out.read_text()
    assert "One GPU, batch 4096: 2 rounds, ratio median 1.000, range 0.900-1.100" in text
    assert "faster by more than 1% in 1, slower by more than 1% in 1" in text
    assert "Several GPUs, batch 4096: 1 rounds, ratio median 0.857" in text
    assert "Several GPUs (2), every batch: 1 rounds" in text
    with pytest.raises(SystemExit):
        main([str(tmp_path / "missing.json"), "-o", str(out)])
