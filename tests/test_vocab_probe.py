"""bench/vocab_probe.py: the heavy pipeline with a vocabulary lookup, built and run on the
CPU (a dry run of two strategies, checked against the reference), then rendered."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from bench.vocab_probe import heavy_vocab, vocabulary
from spec.pipeline import OpKind

ROOT = Path(__file__).resolve().parent.parent


def test_each_feature_maps_its_hash_through_the_vocabulary_before_firstx():
    p = heavy_vocab(buckets=64, rows=10)
    by_name = {n.name: n for n in p.nodes}
    for out in p.sparse_outputs:
        first = by_name[out.node]
        vocab = by_name[first.input]
        assert (first.op, vocab.op, by_name[vocab.input].op) == (
            OpKind.FIRSTX, OpKind.MAPID, OpKind.SIGRID_HASH)
        assert by_name[vocab.input].params["max_value"] == 64
        assert p.int_ranges[out.node] == (0, 9)  # the vocabulary's rows, not the buckets
    assert sum(n.op is OpKind.MAPID for n in p.nodes) == 26


def test_the_vocabulary_is_drawn_from_its_seed():
    a, b = vocabulary(1000, 7, seed=1), vocabulary(1000, 7, seed=1)
    assert a == b and a != vocabulary(1000, 7, seed=2)
    assert min(a) == 0 and max(a) == 6 and len(set(a)) == 7
    assert np.array(a).dtype == np.int64


def test_dry_run_executes_and_renders(tmp_path):
    subprocess.run([sys.executable, "bench/vocab_probe.py", "--dry-run", "--out", str(tmp_path),
                    "--repeats", "1", "--batches", "512", "--strategies",
                    "ideal,gpu-sequential"], check=True, cwd=ROOT, capture_output=True)
    record = json.loads((tmp_path / "execute_vocab.json").read_text())
    assert [c["strategy"] for c in record] == ["ideal", "gpu-sequential"]
    assert all("measurement" in c for c in record), [c.get("error") for c in record]
    report = tmp_path / "vocab.md"
    subprocess.run([sys.executable, "bench/vocab_probe.py", "--render",
                    str(tmp_path / "execute_vocab.json"), "--dry-run", "-o", str(report)],
                   check=True, cwd=ROOT, capture_output=True)
    text = report.read_text()
    assert "python bench/vocab_probe.py --render" in text and "heavy-vocab, batch 512" in text
    made_by = text.split("Made by `")[1].split("`")[0]  # a command that remakes the report
    assert made_by.endswith(f"-o {report}") and "--pool" not in made_by


def test_the_lean_matrix_runs_heavy_small_vocab_beside_graphed_heavy_lean():
    import spec
    from bench import execute_gpu, render_plans, vocab_probe

    before = dict(spec.PIPELINE_PRESETS), dict(execute_gpu.MATRICES)
    with vocab_probe.registered(dry_run=True):
        (pipe, batches, labels), = execute_gpu.MATRICES["vocab-lean"]
        assert pipe == "heavy-small-vocab"
        assert spec.DEFAULT_MODEL_FOR[pipe] == "heavy-lean"
        assert execute_gpu.MODEL_CHANGES["vocab-lean"] == {"cuda_graphs": True}
        # the plans are where the renderer looks for a graphed workload's predictions
        assert execute_gpu.plan_dir("vocab-lean", pipe, 32768, 1) == render_plans.plan_folder(
            pipe, "heavy-lean", 32768, graphs=True)
        assert labels[:2] == ("ideal", "gpu-sequential")
        p = spec.pipeline_preset("heavy-small-vocab")
        assert p.name == "heavy-small-vocab"
        assert {p.int_ranges[o.node] for o in p.sparse_outputs} == {(0, 1999)}  # cut rows
    # the registries as they were, for the tests after this one (tests/test_spec_io.py)
    assert (dict(spec.PIPELINE_PRESETS), dict(execute_gpu.MATRICES)) == before
