"""Times carried from the GPU kind a model was fitted on to another (costmodel/carried.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from corun.costmodel.analytic import AnalyticCostModel
from corun.costmodel.carried import CarriedCostModel, carry_ms, split_ms
from corun.costmodel.workload import kernel_work, stage_work
from corun.spec import Precision, hardware_preset, model_preset, pipeline_preset
from corun.spec.findings import FindingKind
from corun.spec.sharding import shard_tables

H200, H100, A100, V100 = (hardware_preset(k, 1).gpu for k in ("h200", "h100", "a100", "v100"))


def test_a_time_splits_into_bytes_then_flops_then_the_rest():
    bytes_ms = 1e9 / H200.copy_bytes_per_s * 1e3
    p = split_ms(2.0, H200, 1e9)
    assert p.memory_ms == pytest.approx(bytes_ms) and p.math_ms == 0
    assert p.rest_ms == pytest.approx(2.0 - bytes_ms)
    # bytes that would take longer than the time itself bound all of it
    assert split_ms(0.1, H200, 1e9) == split_ms(0.1, H200, 1e12)
    assert split_ms(0.1, H200, 1e12).memory_ms == 0.1
    flops_ms = 1e12 / H200.peak_flops_per_s(Precision.BF16) * 1e3
    p = split_ms(5.0, H200, 1e9, 1e12, Precision.BF16)
    assert p.math_ms == pytest.approx(flops_ms)
    assert p.memory_ms + p.math_ms + p.rest_ms == pytest.approx(5.0)


def test_only_what_the_bytes_bound_changes_between_kinds_of_the_same_sms_and_clock():
    """An H100 has an H200's SMs, clock and peak FLOP/s, and less copy bandwidth: a time
    its bytes do not bound stays, the part they bound grows by the copy ratio."""
    assert H100.int32_ops_per_s == H200.int32_ops_per_s
    assert carry_ms(2.0, H200, H100, 0.0) == pytest.approx(2.0)
    memory = 1e9 / H200.copy_bytes_per_s * 1e3
    assert carry_ms(2.0, H200, H100, 1e9) == pytest.approx(
        2.0 + memory * (H200.copy_bytes_per_s / H100.copy_bytes_per_s - 1))
    assert carry_ms(2.0, H200, H200, 1e9, 1e12, Precision.BF16) == pytest.approx(2.0)


@pytest.mark.parametrize("nbytes,flops", [(0.0, 0.0), (1e8, 0.0), (1e9, 1e12), (1e12, 1e15)])
def test_a_kind_no_faster_in_any_ceiling_is_never_predicted_faster(nbytes, flops):
    order = [V100, A100, H100, H200]
    times = [carry_ms(3.0, H200, g, nbytes, flops, Precision.FP32) for g in order]
    assert times == sorted(times, reverse=True)
    assert times[-1] == pytest.approx(3.0)


def test_the_carried_model_asks_the_fitted_kind_and_carries_its_answers():
    h100, h200 = hardware_preset("h100", 1), hardware_preset("h200", 1)
    inner = AnalyticCostModel()
    cm = CarriedCostModel(inner, H200)
    model = replace(model_preset("criteo-kaggle"), batch_per_gpu=8192)
    works = stage_work(model, h200, shard_tables(model, h200), 0)
    for work in works.values():
        assert cm.stage_ms(work, h100) == pytest.approx(
            carry_ms(inner.stage_ms(work, h200), H200, H100, work.hbm_bytes, work.flops,
                     work.precision))
        assert cm.stage_ms(work, h100) >= inner.stage_ms(work, h200)
    pipe = pipeline_preset("kaggle")
    kw = kernel_work(pipe, "k", [n.name for n in pipe.nodes], 8192, 264, 256)
    assert cm.kernel_ms(kw, h100) == pytest.approx(
        carry_ms(inner.kernel_ms(kw, h200), H200, H100, kw.hbm_bytes))
    stage = works[next(iter(works))]
    assert cm.corun(kw, stage, h100, True) == inner.corun(kw, stage, h200, True)
    f = cm.carried(h100)
    assert f.kind is FindingKind.TIMES_CARRIED and f.facts["source"] == H200.name
    assert AnalyticCostModel().carried(h100) is None


def test_whole_runs_keep_the_fitted_kinds_slowdowns():
    class Pairs(AnalyticCostModel):
        def whole_runs(self, kernel, stages, hw, resident=False):
            assert hw.gpu is H200
            return [(1.0, 1.5, 2.0, 2.4), None][:len(stages)]

    h100 = hardware_preset("h100", 1)
    model = replace(model_preset("criteo-kaggle"), batch_per_gpu=8192)
    stages = list(stage_work(model, h100, shard_tables(model, h100), 0).values())[:2]
    pipe = pipeline_preset("kaggle")
    kw = kernel_work(pipe, "k", [n.name for n in pipe.nodes], 8192, 264, 256)
    (k, kc, s, sc), missing = CarriedCostModel(Pairs(), H200).whole_runs(kw, stages, h100)
    assert missing is None
    assert k >= 1.0 and s >= 2.0
    assert kc / k == pytest.approx(1.5) and sc / s == pytest.approx(1.2)
