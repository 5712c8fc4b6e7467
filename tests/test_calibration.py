"""Calibration by a machine's measured ideal (costmodel/calibration.py, sim.calibrate,
--calibration): what it accepts, that the calibrated ideal predicts the measurement, and
that every other prediction moves by the same factor."""

import json
from dataclasses import replace

import pytest
from corun.costmodel.calibration import from_measurement, load_calibration, median_of
from corun.reports.rounds import record_iteration_ms
from corun.sim import Scenario, Strategy, StrategyKind, calibrate, simulate
from corun.spec import Measurement, SpecError, Spread
from corun.spec.serde import save

from corun import spec
from corun.cli import main


def measured_ideal(ms: float, batch: int = 4096, strategy: str = "ideal",
                   notes: tuple[str, ...] = ()) -> Measurement:
    return Measurement(strategy=strategy, model="criteo-kaggle", pipeline="kaggle",
                       hardware="NVIDIA H200", gpu_count=1, batch_per_gpu=batch,
                       iterations=10, warmup=2, iteration=Spread(ms, ms * 0.98, ms * 1.02),
                       throughput_samples_per_s=batch / ms * 1e3, stall_ms_per_iteration=0.0,
                       stages={}, kernels={}, checked_rows=0, versions={}, git_commit="x",
                       command="test", notes=notes)


def scenario(kind: StrategyKind, batch: int = 4096) -> Scenario:
    model = replace(spec.model_preset("criteo-kaggle"), batch_per_gpu=batch)
    return Scenario(spec.hardware_preset("h200", 1), model, spec.pipeline_preset("kaggle"),
                    Strategy(kind), iterations=8, warmup=2)


def test_the_ideal_calibrates_by_its_throughput_not_its_median_step():
    """An ideal with a few slow steps: its mean iteration, as its throughput counts it,
    is what the predictions are scaled to (they are compared by mean iteration too)."""
    m = replace(measured_ideal(4.0), throughput_samples_per_s=4096 / 4.4 * 1e3)
    assert from_measurement(m, "slow.json").ideal_ms == pytest.approx(4.4)
    with pytest.raises(SpecError, match="calibration.throughput_samples_per_s"):
        from_measurement(replace(m, throughput_samples_per_s=0.0), "zero.json")


def test_only_an_ideal_calibrates_and_graphed_ones_say_so():
    with pytest.raises(SpecError, match="calibration.strategy"):
        from_measurement(measured_ideal(4.0, strategy="gpu-sequential"), "x.json")
    graphed = from_measurement(measured_ideal(3.0, notes=(
        "the trainer's step replayed as CUDA graphs, one a stage",)), "g.json")
    assert graphed.cuda_graphs and graphed.ideal_ms == 3.0
    assert not from_measurement(measured_ideal(3.0), "e.json").cuda_graphs


def test_several_measurements_give_their_median_and_must_be_one_workload():
    cals = [from_measurement(measured_ideal(ms), f"r{i}.json")
            for i, ms in enumerate((4.0, 5.0, 4.2))]
    assert median_of(cals).ideal_ms == 4.2
    assert median_of(cals).source == "r0.json, r1.json, r2.json"
    other = from_measurement(measured_ideal(4.0, batch=8192), "b.json")
    with pytest.raises(SpecError, match="batch 8192"):
        median_of(cals + [other])


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(SpecError, match="--calibration"):
        load_calibration([tmp_path / "nope.json"])


def test_the_calibrated_ideal_predicts_the_measurement_and_all_else_scales_alike():
    """At batch 16384 the GPU paces the step, so the kernels' times count (the host's
    are checked by the command-line test, at 4096, where the host paces it)."""
    cal = from_measurement(measured_ideal(5.0, batch=16384), "ideal.json")
    ideal = scenario(StrategyKind.IDEAL, 16384)
    seq = scenario(StrategyKind.GPU_SEQUENTIAL, 16384)
    before = [simulate(s).prediction.mean_iteration_ms for s in (ideal, seq)]
    after = [simulate(calibrate(s, cal)).prediction.mean_iteration_ms for s in (ideal, seq)]
    assert after[0] == pytest.approx(5.0, rel=1e-6)
    factor = 5.0 / before[0]
    assert calibrate(seq, cal).time_scale == pytest.approx(factor)
    assert after[1] == pytest.approx(before[1] * factor, rel=1e-6)
    from corun.advice import shown

    assert any("calibrated: every duration x" in n
               for n in shown([simulate(calibrate(seq, cal)).prediction]))


def test_another_workload_s_ideal_is_refused():
    cal = from_measurement(measured_ideal(5.0, batch=8192), "ideal.json")
    with pytest.raises(SpecError, match="--calibration.*criteo-kaggle at batch 4096"):
        calibrate(scenario(StrategyKind.IDEAL), cal)
    with pytest.raises(SpecError, match="time_scale"):
        replace(scenario(StrategyKind.IDEAL), time_scale=0.0)


def test_plan_and_simulate_take_the_calibration(tmp_path, capsys):
    path = tmp_path / "ideal.json"
    save(measured_ideal(4.5), path)
    assert main(["simulate", "--strategy", "ideal", "--calibration", str(path),
                 "--iterations", "8", "--json", "--quiet"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert record_iteration_ms(doc) == pytest.approx(4.5, rel=1e-6)
    assert main(["plan", "--calibration", str(path), "--time-limit", "0.5",
                 "--iterations", "8", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "note: calibrated: every duration x" in out
    assert "ideal                       4.500" in out


def test_several_gpus_scale_their_collectives_too():
    """On two GPUs the all-to-alls and all-reduce scale with the rest: the calibrated
    ideal predicts the measurement, and a baseline moves by the same factor."""
    hw = spec.hardware_preset("h200", 2)
    model = replace(spec.model_preset("criteo-kaggle"), batch_per_gpu=4096)
    ideal = Scenario(hw, model, spec.pipeline_preset("kaggle"), Strategy(StrategyKind.IDEAL),
                     iterations=6, warmup=2, host_thread=False)  # the host would pace it
    seq = replace(ideal, strategy=Strategy(StrategyKind.GPU_SEQUENTIAL))
    cal = replace(from_measurement(measured_ideal(9.0), "x2.json"), gpu_count=2)
    before = simulate(seq).prediction.mean_iteration_ms
    assert simulate(calibrate(ideal, cal)).prediction.mean_iteration_ms == \
        pytest.approx(9.0, rel=1e-6)
    factor = calibrate(seq, cal).time_scale
    assert simulate(calibrate(seq, cal)).prediction.mean_iteration_ms == \
        pytest.approx(before * factor, rel=1e-6)
