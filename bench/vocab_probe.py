"""Does a vocabulary lookup open the heavy case's gap? A probe on the H200 (issue 6).

`heavy` writes each id after streaming work only (about 13 ps an id at batch 16384),
against the training step's ~120 ps an id looked up, so gpu-sequential stays 10-13% below
ideal. Production pipelines often map hashed ids through a vocabulary (OPS.md's mapid:
each bucket's row in the table), a random read per id, as the embedding lookup is. This
probe builds `heavy-vocab`: `heavy` hashed into VOCAB_BUCKETS buckets, then mapid through
one vocabulary drawn uniformly with a seeded generator (the fused kernel holds a copy per
feature: 26 x 8 MB, four times the L2), then firstx(100), beside heavy-fused; and runs
ideal, gpu-sequential, gpu-overlap and the whole pipeline in one kernel released at each
stage, in rounds:

    python bench/vocab_probe.py --out $OUT [--repeats 2] [--batches 16384]
    python bench/vocab_probe.py --out /tmp/x --dry-run      # the CPU, tables cut
    python bench/vocab_probe.py --render RAW.json[.gz] ... [-o REPORT.md]
    python bench/vocab_probe.py --plan --batches 32768   # the vocab-lean matrix's plans

It registers the pipeline and a matrix in bench/execute_gpu.py's tables and runs its
main(); the record is `execute_vocab.json`, rendered (--render) by
bench/render_repeats.py with the pipeline registered there too.

Measured (2026-12-01, commit b9e98d2, 3 rounds at b16384, bench/results/vocab_probe_h200.md):
the vocabulary adds 0.11 ms to the kernel alone (0.66 against heavy's 0.55; about 2.6
ps an id), gpu-sequential 14.4% below ideal (heavy: 12.7%), and the best stage for the
one kernel, bottom_mlp_bwd in 1056 blocks, recovers 46%. It does not open the gap to 20%.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import spec  # noqa: E402
from bench import execute_gpu, render_repeats  # noqa: E402
from bench.render_execute import publish  # noqa: E402
from corun.workload import int_list  # noqa: E402
from spec.model import HEAVY_SMALL_TABLE_ROWS, HEAVY_TABLE_ROWS  # noqa: E402
from spec.pipeline import OpKind, OpNode, Pipeline  # noqa: E402
from spec.pipelines import heavy  # noqa: E402

VOCAB_BUCKETS = 1 << 20
"""Hash buckets the vocabulary maps (a million: production vocabularies hold millions)."""
VOCAB_SEED = 2026


def vocabulary(buckets: int, rows: int, seed: int = VOCAB_SEED) -> list[int]:
    """Each bucket's table row: a uniform draw in [0, rows) (explicit generator)."""
    return np.random.default_rng(seed).integers(0, rows, buckets).tolist()


def heavy_vocab(buckets: int = VOCAB_BUCKETS, rows: int = HEAVY_TABLE_ROWS,
                name: str = "heavy-vocab") -> Pipeline:
    """`heavy` with each feature's hash widened to `buckets` and mapped to one of `rows`
    table rows through one shared vocabulary (mapid) before firstx."""
    base = heavy(name, rows=buckets)
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


LEAN_LABELS = ("ideal", "gpu-sequential", "at:interaction_bwd", "at:emb_bwd",
               "at:bottom_mlp_bwd", "corun", "corun-2", "corun-3", "corun-4")
"""The lean matrix: the baselines, the one kernel at the three stages where it hid best
beside heavy-lean's plain update (heavy_batches_h200.md, heavy_short_h200.md, and
heavy_lean_batches_h200.md at b32768), run with their launch shapes ("+b198+ahead2", ...)
through --strategies; and the planner's choice and runners-up, where `--plan` made them
(bench/plans/graphs/heavy-small-vocab-b<batch>/, where bench/render_plans.py looks for a
graphed workload's plans)."""
LEAN_BATCHES = (8192, 16384, 32768)


def register(dry_run: bool = False) -> None:
    """`heavy-vocab` as a pipeline preset beside heavy-fused, and the matrix `vocab`;
    `heavy-small-vocab` (heavy-small's hash widened to VOCAB_BUCKETS and mapped to its 10k
    rows) beside heavy-lean, the step as CUDA graphs, and the matrix `vocab-lean`: whether
    the vocabulary widens heavy-lean's 18-20% gap past 20% while the kernel still hides
    beside its 2.3 ms embedding update."""
    buckets = 4096 if dry_run else VOCAB_BUCKETS  # the dry run cuts tables to 2,000 rows
    rows, small_rows = (2000, 2000) if dry_run else (HEAVY_TABLE_ROWS, HEAVY_SMALL_TABLE_ROWS)
    spec.PIPELINE_PRESETS["heavy-vocab"] = functools.cache(  # 5 s to check
        functools.partial(heavy_vocab, buckets, rows))
    spec.PIPELINE_PRESETS["heavy-small-vocab"] = functools.cache(
        functools.partial(heavy_vocab, buckets, small_rows, "heavy-small-vocab"))
    spec.DEFAULT_MODEL_FOR["heavy-vocab"] = "heavy-fused"
    spec.DEFAULT_MODEL_FOR["heavy-small-vocab"] = "heavy-lean"
    execute_gpu.MATRICES["vocab"] = [("heavy-vocab", (8192, 16384, 32768), (
        "ideal", "gpu-sequential", "gpu-overlap", *(f"at:{s}" for s in STAGES)))]
    execute_gpu.MATRIX_MODEL["vocab"] = "heavy-fused"
    execute_gpu.MATRICES["vocab-lean"] = [("heavy-small-vocab", LEAN_BATCHES, LEAN_LABELS)]
    execute_gpu.MODEL_CHANGES["vocab-lean"] = {"cuda_graphs": True}
    execute_gpu.PLAN_FOLDER["vocab-lean"] = "graphs"


@contextlib.contextmanager
def registered(dry_run: bool = False):
    """`register` for the length of a with-block, every table it adds to restored after:
    for a caller in a longer-lived process (bench/repredict.py, the tests)."""
    tables = (spec.PIPELINE_PRESETS, spec.DEFAULT_MODEL_FOR, execute_gpu.MATRICES,
              execute_gpu.MATRIX_MODEL, execute_gpu.MODEL_CHANGES, execute_gpu.PLAN_FOLDER)
    saved = [dict(t) for t in tables]
    register(dry_run)
    try:
        yield
    finally:
        for table, before in zip(tables, saved):
            table.clear()
            table.update(before)


def make_plans(batches: list[int], runners_up: int = 3) -> int:
    """`corun plan` for heavy-small-vocab beside graphed heavy-lean at each batch, into
    the folder the vocab-lean matrix reads its plan labels from (a 30 s limit: at b32768
    this 2-core machine's search stopped at the default 5 s after 220-300 plans)."""
    from corun.cli import main as corun_main

    for b in batches:
        folder = execute_gpu.plan_dir("vocab-lean", "heavy-small-vocab", b, 1)
        rc = corun_main(["plan", "--hardware", "h200", "--model", "heavy-lean", "--pipeline",
                         "heavy-small-vocab", "--batch", str(b), "--cuda-graphs",
                         "--runners-up", str(runners_up), "--time-limit", "30",
                         "--no-traces", "--out",
                         str(folder)])
        if rc:
            return rc
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--render", nargs="+", metavar="RAW", help="render these records")
    ap.add_argument("-o", dest="report", help="the report --render writes")
    ap.add_argument("--out")
    ap.add_argument("--matrix", choices=("vocab", "vocab-lean"), default="vocab")
    ap.add_argument("--repeats", default="2")
    ap.add_argument("--batches", default="16384")
    ap.add_argument("--budget-s", default="420")
    ap.add_argument("--strategies")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--plan", action="store_true", help="make the vocab-lean matrix's plans "
                    "at --batches (the CPU; bench/plans/graphs/heavy-small-vocab-b<batch>/)")
    args = ap.parse_args(argv)
    register(args.dry_run)
    if args.plan:
        try:
            batches = int_list(args.batches, "--batches")
        except spec.SpecError as e:
            ap.error(str(e))
        return make_plans(batches)
    if args.render:
        raw = [Path(x) for x in args.render]
        missing = [x for x in raw if not x.exists()]
        if missing:
            ap.error(f"--render {missing[0]}: no such file (an execute_vocab.json record)")
        files = " ".join(map(render_repeats.shown, raw))
        command = f"python bench/vocab_probe.py --render {files}" + (
            f" -o {args.report}" if args.report else "")
        text = render_repeats.render(raw, pool=True, command=command)
        report = Path(args.report) if args.report else None
        publish(text, report, named=True, default_out=report)
        return 0
    if not args.out:
        ap.error("--out DIR is needed to run (or --render RAW to render)")
    return execute_gpu.main(
        ["--matrix", args.matrix, "--out", args.out, "--repeats", args.repeats, "--batches",
         args.batches, "--budget-s", args.budget_s]
        + (["--strategies", args.strategies] if args.strategies else [])
        + (["--dry-run"] if args.dry_run else []))


if __name__ == "__main__":
    raise SystemExit(main())
