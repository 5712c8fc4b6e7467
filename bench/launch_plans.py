"""Write one-kernel plans of a pipeline (the whole pipeline in one fused kernel, as the
baselines and the planner's first candidates launch it) at several launch shapes and
both row mappings, for `corun profile --plans`: the learned model then looks those
kernels up instead of extrapolating to them (costmodel.learned: measured pairs).

    python bench/launch_plans.py --pipeline heavy --model heavy-fused \
        --blocks 132,264,528,1056,2112 --out /tmp/launch-plans
prints the comma-separated plan files."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import spec
from corun.workload import int_list
from spec import SpecError
from spec.serde import save


def launch_plans(pipeline: str, model: str, blocks: list[int], threads: int,
                 out: Path) -> list[Path]:
    """One plan file per (blocks, warp_rows), named <pipeline>-<blocks>x<threads>-<mapping>."""
    p = spec.pipeline_preset(pipeline)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for b in blocks:
        base = spec.one_kernel_plan(p, model, 1, spec.BEFORE_ITERATION, b, threads)
        for warp in (True, False):
            plan = replace(base, kernels=tuple(replace(k, warp_rows=warp)
                                               for k in base.kernels))
            path = out / f"{pipeline}-{b}x{threads}-{'warp' if warp else 'thread'}.json"
            save(plan, path)
            paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pipeline", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--blocks", default="132,264,528,1056,2112")
    ap.add_argument("--threads", type=int, default=256)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    try:
        blocks = int_list(a.blocks, "--blocks")
    except SpecError as e:
        ap.error(str(e))
    paths = launch_plans(a.pipeline, a.model, blocks, a.threads, a.out)
    print(",".join(str(x) for x in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
