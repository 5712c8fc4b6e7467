"""Host launches of the eager training step, counted from the trainer: the PyTorch
operators each training stage dispatches and the kernels it launches through Numba, per
model preset (backend/launch_count.py).

Run: python bench/launch_counts.py -o counts.json [--models criteo-kaggle,heavy-lean]
[--host-reps 40, on a GPU: also each model's host launch of the step, timed]
The committed counts are validation/benchmarks/launch_counts-cpu.json (a test recounts
two models). On a GPU each operator is about one kernel launch from the host thread,
the work that paces an eager step at small batches (costmodel/host.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corun.spec.provenance import git_commit
from corun.spec.serde import write_atomic

from corun import spec

HOST_BATCH = 2048
"""Rows of each step whose host launch is timed (small: the GPU's work never paces it)."""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(spec.MODEL_PRESETS))
    ap.add_argument("--batch", type=int, default=64, help="rows of the counted step")
    ap.add_argument("--host-reps", type=int, default=0,
                    help="also time the host's launch of each model's eager step on this "
                    "machine's GPU over this many steps (0: count only, on the CPU)")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args(argv)
    if args.batch < 1:
        ap.error(f"--batch = {args.batch}: an integer >= 1")
    if args.host_reps < 0:
        ap.error(f"--host-reps = {args.host_reps}: an integer >= 0")
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in spec.MODEL_PRESETS]
    if unknown:
        ap.error(f"--models: {', '.join(unknown)}: model presets are "
                 f"{', '.join(spec.MODEL_PRESETS)}")
    import torch
    from corun.backend.launch_count import step_launches

    if args.host_reps and not torch.cuda.is_available():
        ap.error(f"--host-reps = {args.host_reps}: times the host's launches on a GPU; "
                 "this machine has none (0: count only)")

    counts = [step_launches(spec.model_preset(m), args.batch) for m in names]
    out = {"bench": "launch_counts", "git_commit": git_commit(), "torch": torch.__version__,
           "batch": args.batch, "models": {c.model: {"operators": c.operators,
                                                     "kernels": c.kernels} for c in counts}}
    if args.host_reps:
        from corun.backend.launch_count import host_step_ms

        out["gpu"] = torch.cuda.get_device_name()
        out["host_batch"] = HOST_BATCH
        for m in names:
            ms, n = host_step_ms(spec.model_preset(m), "cuda", HOST_BATCH, args.host_reps)
            out["models"][m].update(host_step_ms=round(ms, 4), host_steps=n)
            print(f"{m}: host step {ms:.3f} ms (median of {n})", flush=True)
    write_atomic(args.output, json.dumps(out, indent=1))
    for c in counts:
        print(f"{c.model}: {c.operator_count} operators and {c.kernel_count} Numba "
              "kernels a step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
