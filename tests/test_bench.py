"""The benchmarks under bench/: each answers --help, the matrix names its workloads, and the
Criteo reading and launch counting benchmarks run end to end on small work."""

from __future__ import annotations

import importlib
import json
import re

import numpy as np
import pytest
from corun.spec import SpecError

BENCHMARKS = ["ops_gpu", "trainer_gpu", "execute_matrix", "plan_speed", "sim_speed", "criteo_read",
              "milp_gap", "launch_counts", "collective_stages"]


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


def test_the_criteo_read_benchmark_reads_every_row_and_times_each_stage(tmp_path):
    pytest.importorskip("pyarrow")
    from bench.criteo_read import main

    out = tmp_path / "read.json"
    assert main(["--rows", "3000", "--python-rows", "500", "--repeats", "1",
                 "--work", str(tmp_path), "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert (doc["arrow"]["rows"], doc["python"]["rows"]) == (3000, 500)
    assert doc["arrow_stages"]["convert_rows"] == 3000
    assert doc["arrow_stages"]["parse_rows_per_s"] > 0 < doc["arrow_stages"]["convert_rows_per_s"]


def test_launch_counts_follow_the_model_s_layers(tmp_path):
    """criteo-terabyte's top MLP has one layer more than criteo-kaggle's, its bottom MLP
    and interaction the same: more operators at the top MLP's stages, the same at the
    others, and no Numba kernel in either; a name that is no model preset is refused, and
    so is timing the host without a GPU."""
    from corun.backend.trainer import TRAINING_STAGES

    from bench.launch_counts import main

    out = tmp_path / "counts.json"
    assert main(["--models", "criteo-kaggle,criteo-terabyte", "-o", str(out)]) == 0
    kaggle, terabyte = (json.loads(out.read_text())["models"][m]
                        for m in ("criteo-kaggle", "criteo-terabyte"))
    assert list(kaggle["operators"]) == [s.value for s in TRAINING_STAGES]
    assert kaggle["kernels"] == terabyte["kernels"] == {}
    kaggle, terabyte = kaggle["operators"], terabyte["operators"]
    for stage in ("emb_fwd", "bottom_mlp_fwd", "interaction_fwd", "interaction_bwd",
                  "bottom_mlp_bwd", "emb_bwd"):
        assert kaggle[stage] == terabyte[stage] > 0, stage
    assert terabyte["top_mlp_fwd"] > kaggle["top_mlp_fwd"]
    assert terabyte["top_mlp_bwd"] > kaggle["top_mlp_bwd"]
    with pytest.raises(SystemExit):
        main(["--models", "no-such-model", "-o", str(out)])
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(SystemExit):
            main(["--models", "criteo-kaggle", "--host-reps", "3", "-o", str(out)])


def test_collective_stages_keep_several_gpu_ideal_runs(tmp_path):
    """Only ideal runs on several GPUs count; each stage is the median over runs of their
    10th percentiles and medians; compressed record lists read as plain ones; a file
    with no such run is refused."""
    import lzma

    from bench.collective_stages import main

    def run(strategy, gpus, p10, median):
        stages = {"grad_allreduce": {"p10_ms": p10, "median_ms": median},
                  "emb_fwd": {"p10_ms": 9.0, "median_ms": 9.0}}
        return {"measurement": {"strategy": strategy, "gpu_count": gpus, "model": "m",
                                "batch_per_gpu": 8192, "hardware": "NVIDIA H200",
                                "stages": stages}}

    runs = [run("ideal", 2, 0.1, 0.2), run("ideal", 2, 0.3, 0.4), run("ideal", 2, 0.2, 0.9),
            run("corun", 2, 5.0, 5.0), run("ideal", 1, 5.0, 5.0)]
    path = tmp_path / "runs.json.xz"
    with lzma.open(path, "wt") as f:
        json.dump(runs, f)
    out = tmp_path / "c.json"
    assert main([str(path), "--hardware", "h200", "-o", str(out)]) == 0
    (row,) = json.loads(out.read_text())["stages"]
    assert (row["gpus"], row["stage"], row["runs"]) == (2, "grad_allreduce", 3)
    assert (row["p10_ms"], row["median_ms"]) == (0.2, 0.4)
    empty = tmp_path / "none.json"
    empty.write_text(json.dumps(runs[3:]))
    with pytest.raises(SystemExit):
        main([str(empty), "--hardware", "h200", "-o", str(tmp_path / "x.json")])
    with pytest.raises(SystemExit):
        main([str(path), "--hardware", "h999", "-o", str(tmp_path / "x.json")])
    assert not (tmp_path / "x.json").exists()


def _poisoned(col, keep):
    """`col` with every value past the first keep[row] of its row changed (to another
    onehot class of [0, 16) in 4, and another id)."""
    from corun.backend.columns import ColumnData

    position = np.arange(len(col.values)) - np.repeat(col.offsets[:-1], np.diff(col.offsets))
    past = position >= np.repeat(keep, np.diff(col.offsets))
    v = col.values
    other = np.where((v >= 0) & (v < 16), (v + 4) % 16, 5)
    return ColumnData(np.where(past, other, v), col.offsets, col.valid)


def test_the_kernel_benchmark_counts_list_values_only_as_far_as_the_outputs_need_them():
    from corun.backend.columns import equal
    from corun.backend.data import synthetic_inputs
    from corun.backend.runner import run_numpy
    from corun.spec import Column, DType, OpKind, OpNode, Pipeline, Shape, SparseOutput

    from bench.ops_gpu import list_values_needed, nbytes, needed_bytes

    lists = tuple(Column(f"c{k}", DType.INT64, Shape.LIST, nullable=k < 2, mean_length=6.0)
                  for k in range(3))
    nodes = (OpNode("f0", OpKind.FILL_NULL, "c0", {"value": 0}),
             OpNode("h0", OpKind.SIGRID_HASH, "f0", {"salt": 0, "max_value": 100}),
             OpNode("x0", OpKind.FIRSTX, "h0", {"x": 2}),
             OpNode("f1", OpKind.FILL_NULL, "c1", {"value": 0}),
             OpNode("g1", OpKind.NGRAM, "f1", {"n": 3}),
             OpNode("x1", OpKind.FIRSTX, "g1", {"x": 4}),
             OpNode("o2", OpKind.ONEHOT, "c2", {"low": 0, "high": 16, "num_classes": 4}),
             OpNode("g2", OpKind.NGRAM, "o2", {"n": 2}),
             OpNode("x2", OpKind.FIRSTX, "g2", {"x": 3}))
    p = Pipeline("prefixes", lists, nodes, (),
                 tuple(SparseOutput(f"x{k}", f"t{k}") for k in range(3)))
    inp = synthetic_inputs(p, 400, np.random.default_rng(7), vary_lengths=True)
    outputs = [f"x{k}" for k in range(3)]

    def same(got) -> bool:
        return all(equal(want[n], got[n])[0] for n in outputs)

    want = run_numpy(p, inp)
    needed = list_values_needed(p, inp)
    assert set(needed) == {"c0", "c1", "c2"}
    cut = {k: _poisoned(c, needed[k]) for k, c in inp.items()}
    assert same(run_numpy(p, cut))
    for k in needed:  # one value fewer in any row that needs some changes an output
        rows = np.flatnonzero(needed[k] > 0)[:5]
        assert len(rows)
        for r in rows:
            short = needed[k].copy()
            short[r] -= 1
            assert not same(run_numpy(p, {**cut, k: _poisoned(inp[k], short)}))
    whole = nbytes(inp, [c.name for c in lists]) + nbytes(want, outputs)
    assert needed_bytes(p, inp, want, outputs) == whole - 8 * sum(
        len(inp[k].values) - int(needed[k].sum()) for k in needed)


def test_the_hash_rate_checks_each_kernel_against_pythons_hash(tmp_path):
    """`--only hash` under the CUDA simulator: a copy, one hash an id and HASH_CHAIN in
    turn, with each multiply-high, every output equal to Python's sigrid_hash."""
    from bench.ops_gpu import HASH_CHAIN, main

    out = tmp_path / "hash.json"
    assert main(["--dry-run", "--only", "hash", "-o", str(out)]) == 0
    rates = [r for r in json.loads(out.read_text()) if r["kind"] == "hash-rate"]
    assert [(r["kernel"], r["multiply_high"], r["hashes"] // r["ids"]) for r in rates] == [
        ("copy", "-", 0), ("hash", "device", 1), ("hash", "halves", 1),
        (f"hash-x{HASH_CHAIN}", "device", HASH_CHAIN),
        (f"hash-x{HASH_CHAIN}", "halves", HASH_CHAIN)]
    assert all(r["mismatches"] == [] for r in rates)


def test_the_launch_shape_sweep_checks_each_variant_at_each_shape(tmp_path):
    """`--only shapes` under the CUDA simulator (--dry-run: one tiny shape): a record per
    pipeline and variant, each compared with the reference; a bad variant is refused
    before any work."""
    from bench.ops_gpu import main, variant_knobs

    assert variant_knobs("fused-src-lanes8-r32") == {"source_first": True, "short_lanes": 8,
                                                     "max_registers": 32}
    out = tmp_path / "shapes.json"
    assert main(["--dry-run", "--only", "shapes", "--shape-pipelines", "kaggle,terabyte",
                 "--shape-variants", "fused,fused-u2-r32", "--shape-rows", "40",
                 "-o", str(out)]) == 0
    shapes = [r for r in json.loads(out.read_text()) if r["kind"] == "launch-shape"]
    assert [(r["pipeline"], r["variant"], r["rows"]) for r in shapes] == [
        ("kaggle", "fused", 40), ("kaggle", "fused-u2-r32", 40), ("terabyte", "fused", 40),
        ("terabyte", "fused-u2-r32", 40)]
    assert all(r["mismatches"] == [] for r in shapes)
    refused = [(["--shape-variants", "fused-r32x"], "fused-r32x"),
               (["--shape-variants", "fused-u9-r32"], "'fused-u9-r32': unroll 9 is not in 1..8"),
               (["--shape-variants", "fused,fused-lanes3"],
                "'fused-lanes3': lanes 3 is not one of 1, 2, 4"),
               (["--shape-blocks", "1056,0"], "--shape-blocks: '0' is not a block count"),
               (["--shape-rows", "0"], "--shape-rows: 0 is not a row count")]
    for flags, says in refused:
        with pytest.raises(SystemExit, match=re.escape(says)):
            main(["--dry-run", "--only", "shapes", *flags, "-o", str(tmp_path / "no.json")])
    assert not (tmp_path / "no.json").exists()
