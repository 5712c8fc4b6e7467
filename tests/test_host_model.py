"""The eager step's host time follows the model as the machine's own host launched each
model's step (corun calibrate)."""

import dataclasses

import pytest
from corun.costmodel.host import H200_HOST
from corun.sim import Scenario, simulate_steady
from corun.sim.strategy import Strategy, StrategyKind
from corun.spec import hardware_preset, model_preset, pipeline_preset
from corun.spec.hardware import HostTimes

TIMES = HostTimes(step_ms=4.0, graph_step_ms=0.4, kernel_launch_ms=0.05,
                  batch_fixed_ms=0.3, measured_on="criteo-kaggle b4096, 3 rounds",
                  model_launch_ms={"criteo-kaggle": 2.0, "heavy-lean": 1.5})


def test_a_host_that_launched_the_model_scales_its_step_by_that_launch():
    host = H200_HOST.measured(TIMES, "test")
    assert host.step_models == ("criteo-kaggle",)
    assert host.for_model(model_preset("criteo-kaggle")).step_ms == pytest.approx(4.0)
    lean = host.for_model(model_preset("heavy-lean"))
    assert lean.step_ms == pytest.approx(3.0)
    assert lean.graph_step_ms == host.graph_step_ms
    assert lean.distributed_step_ms == host.distributed_step_ms


def test_a_model_the_host_did_not_launch_keeps_the_host_s_step():
    host = H200_HOST.measured(TIMES, "test")
    assert host.for_model(model_preset("wide-4x")) is host
    assert H200_HOST.for_model(model_preset("heavy-lean")) is H200_HOST
    other = dataclasses.replace(TIMES, measured_on="heavy-fused b4096")
    assert H200_HOST.measured(other, "test").for_model(model_preset("heavy-lean")).step_ms \
        == TIMES.step_ms  # the step's own model was not launched apart


def test_the_simulated_host_paced_step_is_the_model_s_own():
    """ideal at a small batch, where the host paces the step: heavy-lean's predicted step
    on a machine whose host launched it in 3/4 of kaggle's time is 3/4 of kaggle's."""
    hw = dataclasses.replace(hardware_preset("h100"), host=TIMES)

    def ideal(model: str, pipeline: str) -> float:
        m = dataclasses.replace(model_preset(model), batch_per_gpu=1024)
        sc = Scenario(hw, m, pipeline_preset(pipeline), Strategy(StrategyKind.IDEAL))
        return simulate_steady(sc).prediction.iteration_time_ms

    assert ideal("criteo-kaggle", "kaggle") == pytest.approx(4.0, rel=0.02)
    assert ideal("heavy-lean", "heavy-rehash") == pytest.approx(3.0, rel=0.02)
