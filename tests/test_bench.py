"""The benchmarks under bench/: each answers --help, and the matrix names its workloads."""

from __future__ import annotations

import importlib

import pytest
from corun.spec import SpecError

BENCHMARKS = ["ops_gpu", "trainer_gpu", "execute_matrix", "plan_speed", "sim_speed", "criteo_read",
              "milp_gap"]


@pytest.mark.parametrize("name", BENCHMARKS)
def test_every_benchmark_answers_help_and_writes_one_file(name, capsys):
    mod = importlib.import_module(f"bench.{name}")
    with pytest.raises(SystemExit) as done:
        mod.main(["--help"])
    assert done.value.code == 0
    assert "-o OUTPUT, --output OUTPUT" in capsys.readouterr().out


def test_the_matrix_selects_workloads_by_name():
    from bench.execute_matrix import MATRICES, selected

    assert selected("single-gpu", None) == MATRICES["single-gpu"]
    (w,) = selected("single-gpu", "heavy-lean-heavy-rehash-b32768-graphs")
    assert (w.model, w.pipeline, w.batch, w.cuda_graphs) == ("heavy-lean", "heavy-rehash",
                                                             32768, True)
    with pytest.raises(SpecError, match="--workloads = 'kaggle-b3'"):
        selected("single-gpu", "kaggle-b4096,kaggle-b3")
