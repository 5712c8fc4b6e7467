"""Does hashing each id twice open heavy-lean's gap while the kernel still hides? (issue 6)

Eager heavy-lean at b32768 hid 79-92% of an 18.5% gap (`heavy_lean_batches_h200.md`):
its 5.3 ms embedding update leaves the whole-pipeline kernel room, but the kernel is too
short to put gpu-sequential 20% below ideal. A vocabulary lookup lengthened the kernel
with random reads, which contend with the update's atomics, and the gap widened while the
kernel stopped hiding (`vocab_lean_h200.md`). Here the kernel is lengthened by arithmetic
instead: the `heavy-rehash` preset is `heavy-small` with each trigram id hashed first
into a global id space (salt 0), then into the table's buckets (salt 1): two sigrid_hash
calls an id, in registers, no more memory traffic (spec.pipelines.heavy, `global_ids`).
Its first two runs read the pipeline from a file this script wrote, equal to the preset.

    python bench/rehash_probe.py --shapes bench/plans/rehash/heavy-lean-b32768 \
        -o bench/plans/rehash/heavy-lean-b32768-shapes --at interaction_bwd:198,...

writes a folder of a plan folder's chosen kernel at other stages and launch shapes, which
`corun tune` runs beside ideal and gpu-sequential (bench/rehash_session.sh).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corun.plan_dir import plan_file, prediction_file  # noqa: E402
from corun.tune_cmd import read_workload, variant_predictions  # noqa: E402
from corun.workload import resolve_hardware, resolve_model, resolve_pipeline  # noqa: E402
from spec import Plan, Prediction, load  # noqa: E402
from spec.serde import save  # noqa: E402


def shapes_folder(folder: Path, out: Path, shapes: list[tuple[str, int]]) -> None:
    """A copy of a one-kernel plan folder's chosen plan and its prediction, with that kernel
    released at each (stage, blocks) of `shapes` as plan-<N>.json, each predicted as `corun
    tune` predicts its launch variants (`corun.tune_cmd.variant_predictions`), so that
    `corun tune OUT` runs them beside ideal and gpu-sequential."""
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
    pipeline = resolve_pipeline(work.pipeline)
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
    ap.add_argument("--shapes", metavar="FOLDER", required=True,
                    help="a one-GPU plan folder whose chosen plan has one kernel")
    ap.add_argument("--at", required=True, help="STAGE:BLOCKS,... the kernel's releases")
    ap.add_argument("-o", "--out", required=True, help="the folder to write")
    args = ap.parse_args(argv)
    shapes = [(s.split(":")[0], int(s.split(":")[1])) for s in args.at.split(",") if s]
    shapes_folder(Path(args.shapes), Path(args.out), shapes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
