"""Does a vocabulary lookup open the heavy case's gap? A probe on the H200 (issue 6).

`heavy` writes each id after streaming work only (about 13 ps an id at batch 16384),
against the training step's ~120 ps an id looked up, so gpu-sequential stays 10-13% below
ideal. Production pipelines often map hashed ids through a vocabulary (OPS.md's mapid:
a bucket's row in the table, the rare buckets to row 0), a random read per id, as the
embedding lookup is. This probe builds `heavy-vocab`: `heavy` hashed into VOCAB_BUCKETS
buckets, then mapid through one vocabulary drawn with a seeded generator (each feature
its own copy: 26 x 8 MB, four times the L2), then firstx(100), beside heavy-fused; and
runs ideal, gpu-sequential, gpu-overlap and the whole pipeline in one kernel released at
each stage, in rounds:

    python bench/vocab_probe.py --out $OUT [--repeats 2] [--batches 16384]
    python bench/vocab_probe.py --out /tmp/x --dry-run      # the CPU, tables cut

It registers the pipeline and a matrix in bench/execute_gpu.py's tables and runs its
main(); the record is `execute_vocab.json`, rendered by bench/render_repeats.py.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import spec  # noqa: E402
from bench import execute_gpu  # noqa: E402
from spec.model import HEAVY_TABLE_ROWS  # noqa: E402
from spec.pipeline import OpKind, OpNode, Pipeline  # noqa: E402
from spec.pipelines import heavy  # noqa: E402

VOCAB_BUCKETS = 1 << 20
"""Hash buckets the vocabulary maps (a million: production vocabularies hold millions)."""
VOCAB_SEED = 2026


def vocabulary(buckets: int, rows: int, seed: int = VOCAB_SEED) -> list[int]:
    """Each bucket's table row: a uniform draw in [0, rows) (explicit generator)."""
    return np.random.default_rng(seed).integers(0, rows, buckets).tolist()


def heavy_vocab(buckets: int = VOCAB_BUCKETS, rows: int = HEAVY_TABLE_ROWS) -> Pipeline:
    """`heavy` with each feature's hash widened to `buckets` and mapped to one of `rows`
    table rows through one shared vocabulary (mapid) before firstx."""
    base = heavy("heavy-vocab", rows=buckets)
    vocab = vocabulary(buckets, rows)
    nodes: list[OpNode] = []
    for n in base.nodes:
        if n.op is OpKind.FIRSTX:  # hash -> mapid -> firstx
            mapped = n.input.replace("hash_", "vocab_")
            nodes.append(OpNode(mapped, OpKind.MAPID, n.input, {"map": vocab}))
            nodes.append(OpNode(n.name, n.op, mapped, n.params))
        else:
            nodes.append(n)
    return Pipeline(base.name, base.inputs, tuple(nodes), base.dense_outputs,
                    base.sparse_outputs)


STAGES = ("emb_fwd", "interaction_bwd", "bottom_mlp_bwd", "emb_bwd")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeats", default="2")
    ap.add_argument("--batches", default="16384")
    ap.add_argument("--budget-s", default="420")
    ap.add_argument("--strategies")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    small = (4096, 2000) if args.dry_run else ()  # the dry run cuts tables to 2,000 rows
    spec.PIPELINE_PRESETS["heavy-vocab"] = functools.cache(  # 5 s to check
        functools.partial(heavy_vocab, *small))
    spec.DEFAULT_MODEL_FOR["heavy-vocab"] = "heavy-fused"
    execute_gpu.MATRICES["vocab"] = [("heavy-vocab", (8192, 16384, 32768), (
        "ideal", "gpu-sequential", "gpu-overlap", *(f"at:{s}" for s in STAGES)))]
    execute_gpu.MATRIX_MODEL["vocab"] = "heavy-fused"
    return execute_gpu.main(
        ["--matrix", "vocab", "--out", args.out, "--repeats", args.repeats, "--batches",
         args.batches, "--budget-s", args.budget_s]
        + (["--strategies", args.strategies] if args.strategies else [])
        + (["--dry-run"] if args.dry_run else []))


if __name__ == "__main__":
    raise SystemExit(main())
