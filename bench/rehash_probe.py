"""Does hashing each id twice open heavy-lean's gap while the kernel still hides? (issue 6)

Eager heavy-lean at b32768 hid 79-92% of an 18.5% gap (`heavy_lean_batches_h200.md`):
its 5.3 ms embedding update leaves the whole-pipeline kernel room, but the kernel is too
short to put gpu-sequential 20% below ideal. A vocabulary lookup lengthened the kernel
with random reads, which contend with the update's atomics, and the gap widened while the
kernel stopped hiding (`vocab_lean_h200.md`). Here the kernel is lengthened by arithmetic
instead: `heavy-rehash` is `heavy-small` with each trigram id hashed first into a global
id space of GLOBAL_IDS (salt 0), then into the table's HEAVY_SMALL_TABLE_ROWS buckets
(salt 1): two sigrid_hash calls an id, in registers, no more memory traffic.

    python bench/rehash_probe.py -o bench/plans/rehash/heavy-rehash.json

writes the pipeline file that `corun plan --pipeline FILE` and `corun tune --pipeline
FILE` read (the plan folders under bench/plans/rehash/ were made from it, their commands
in bench/rehash_session.sh).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spec.model import HEAVY_SMALL_TABLE_ROWS  # noqa: E402
from spec.pipeline import OpKind, OpNode, Pipeline  # noqa: E402
from spec.pipelines import heavy  # noqa: E402
from spec.serde import save  # noqa: E402

GLOBAL_IDS = 1 << 40
"""The first hash's range: a global id space, as a feature store keys ids before a
table's bucketing."""


def heavy_rehash(name: str = "heavy-rehash") -> Pipeline:
    """`heavy-small` with a second sigrid_hash between the first and firstx."""
    base = heavy(name, rows=GLOBAL_IDS)
    nodes: list[OpNode] = []
    for n in base.nodes:
        if n.op is OpKind.FIRSTX:  # hash -> rehash -> firstx
            rehashed = n.input.replace("hash_", "rehash_")
            nodes.append(OpNode(rehashed, OpKind.SIGRID_HASH, n.input,
                                {"salt": 1, "max_value": HEAVY_SMALL_TABLE_ROWS}))
            nodes.append(OpNode(n.name, n.op, rehashed, n.params))
        else:
            nodes.append(n)
    return Pipeline(base.name, base.inputs, tuple(nodes), base.dense_outputs,
                    base.sparse_outputs)


def shapes_folder(folder: Path, out: Path, shapes: list[tuple[str, int]]) -> None:
    """A copy of a one-kernel plan folder's chosen plan and its prediction, with that kernel
    released at each (stage, blocks) of `shapes` as plan-<N>.json, each predicted as `corun
    tune` predicts its launch variants (`corun.tune_cmd.variant_predictions`), so that
    `corun tune OUT` runs them beside ideal and gpu-sequential."""
    import shutil
    from dataclasses import replace

    from corun.plan_dir import plan_file, prediction_file
    from corun.tune_cmd import read_workload, variant_predictions
    from corun.workload import resolve_hardware, resolve_model
    from spec import Plan, Prediction, load
    from spec.serde import load as load_spec

    work = read_workload(folder)
    chosen = load(Plan, folder / plan_file("corun"))
    if len(chosen.kernels) != 1:
        raise SystemExit(f"{folder}: the chosen plan has {len(chosen.kernels)} kernels, not one")
    out.mkdir(parents=True, exist_ok=True)
    for name in (plan_file("corun"), prediction_file("corun")):
        shutil.copy(folder / name, out / name)
    variants = {f"corun-{i}": replace(chosen, kernels=(replace(chosen.kernels[0], stage=stage,
                                                                blocks=blocks),))
                for i, (stage, blocks) in enumerate(shapes, 2)}
    model = resolve_model(work.model, work.batch, work.cuda_graphs)
    pipeline = load_spec(Pipeline, folder.parent / f"{work.pipeline}.json")
    hw = resolve_hardware("h200", 1, None, None)  # tune's default
    predicted = variant_predictions(folder, chosen, variants, hw, model, pipeline)
    base = load(Prediction, folder / prediction_file("corun"))
    for name, plan in variants.items():
        save(plan, out / plan_file(name))
        save(replace(base, strategy=name, iteration_time_ms=predicted[name],
                     throughput_samples_per_s=1e3 * base.batch_per_gpu / predicted[name]),
             out / prediction_file(name))
        print(f"{name}: {plan.kernels[0].stage} {plan.kernels[0].blocks} blocks, "
              f"predicted {predicted[name]:.3f} ms")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", required=True,
                    help="the pipeline file to write (.json); with --shapes, the folder")
    ap.add_argument("--shapes", metavar="FOLDER",
                    help="write a folder of FOLDER's chosen kernel at --at's stages and blocks")
    ap.add_argument("--at", default="", help="STAGE:BLOCKS,... (with --shapes)")
    args = ap.parse_args(argv)
    if args.shapes:
        shapes = [(s.split(":")[0], int(s.split(":")[1])) for s in args.at.split(",") if s]
        shapes_folder(Path(args.shapes), Path(args.out), shapes)
    else:
        save(heavy_rehash(), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
