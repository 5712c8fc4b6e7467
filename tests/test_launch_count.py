"""The eager step's host launches, counted from the trainer: the committed counts, the
Numba kernels the trainer's CPU code stands in for, and bad counts refused."""

import dataclasses
import json
from pathlib import Path

import pytest
from corun.backend.launch_count import kernel_stand_in, step_launches
from corun.spec import SpecError, model_preset
from corun.spec.launches import StepLaunches

COUNTS = Path(__file__).resolve().parents[1] / "validation" / "benchmarks" \
    / "launch_counts-cpu.json"


@pytest.mark.parametrize("model", ["criteo-kaggle", "heavy-hot"])
def test_the_committed_counts_are_the_trainer_s_today(model):
    """docs/results.md renders these counts (rewrite the file with bench/launch_counts.py
    where this fails)."""
    table = json.loads(COUNTS.read_text())["models"][model]
    now = step_launches(model_preset(model))
    assert (now.operators, now.kernels) == (table["operators"], table["kernels"])


def test_numba_kernels_count_as_launches_not_as_their_cpu_stand_ins():
    """heavy-hot's bag forward is one kernel, its fused update two (hot rows sampled,
    then the update); heavy-fused keeps torch's forward and one update kernel; heavy's
    autograd update counts operators only. The stand-in's own operators are not
    counted: heavy-fused's embedding backward dispatches fewer than heavy's."""
    hot, fused, plain = (step_launches(model_preset(m))
                         for m in ("heavy-hot", "heavy-fused", "heavy"))
    assert hot.kernels == {"emb_fwd": 1, "emb_bwd": 2}
    assert fused.kernels == {"emb_bwd": 1}
    assert plain.kernels == {} and plain.kernel_count == 0
    assert fused.operators["emb_bwd"] < plain.operators["emb_bwd"]


def test_a_stand_in_outside_a_count_changes_nothing():
    with kernel_stand_in(2):
        pass
    assert step_launches(model_preset("heavy-fused")).kernels == {"emb_bwd": 1}


def test_counts_are_the_same_at_any_batch_or_table_size():
    kaggle = model_preset("criteo-kaggle")
    bigger = dataclasses.replace(kaggle, tables=tuple(
        dataclasses.replace(t, rows=t.rows // 2 + 1) for t in kaggle.tables))
    assert step_launches(bigger, batch=16) == step_launches(kaggle, batch=32)


@pytest.mark.parametrize("operators, kernels, field", [
    ({"emb_fwd": 3, "no_stage": 1}, {}, "operators.no_stage"),
    ({"emb_fwd": -1}, {}, "operators.emb_fwd"),
    ({"emb_fwd": 3}, {"emb_bwd": 1.5}, "kernels.emb_bwd"),
    ({"emb_fwd": 0}, {}, "operators"),
])
def test_bad_counts_name_their_field(operators, kernels, field):
    with pytest.raises(SpecError) as e:
        StepLaunches("m", operators, kernels)
    assert e.value.field == field
