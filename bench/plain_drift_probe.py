"""Does the profiler's plain step drift within a process? `corun profile` times each
model's plain step once, first (Profiler.plain_stage_ms: PLAIN_REPS steps after two warm
ones), and every co-run pair later. In one process of 2026-12-01 that first plain emb_bwd
took 3.03 ms and nearly every co-run step after it 2.81-2.91, in the next process 2.86
and 2.80-3.01 (bench/update_state_session.sh). This times blocks of plain steps, behind
the same GPU spin, from the start of a process on, to see whether the first block differs
from the later ones.

    python bench/plain_drift_probe.py [--model M --pipeline P --batch B] [--blocks N]
        [--steps S] -o OUT.json [--dry-run]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backend.profile import Profiler  # noqa: E402
from backend.trainer import TRAINING_STAGES  # noqa: E402
from bench.contention_probe import heavy_probe_parser  # noqa: E402
from corun.workload import resolve_model  # noqa: E402
from spec import hardware_preset, pipeline_preset  # noqa: E402
from spec.serde import write_atomic  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = heavy_probe_parser(__doc__)
    ap.add_argument("--blocks", type=int, default=8, help="blocks of plain steps (>= 1)")
    ap.add_argument("--steps", type=int, default=15, help="steps a block (>= 1)")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--dry-run", action="store_true", help="on the CPU, batch 64")
    args = ap.parse_args(argv)
    if args.blocks < 1 or args.steps < 1:
        ap.error(f"--blocks {args.blocks} and --steps {args.steps}: each an integer >= 1")
    batch = 64 if args.dry_run else args.batch
    model = resolve_model(args.model, batch)
    t0 = time.time()
    prof = Profiler(model, pipeline_preset(args.pipeline), hardware_preset("h200", 1),
                    "cpu" if args.dry_run else "cuda", say=lambda *a: None)
    blocks = []
    for b in range(args.blocks):
        steps = [prof.step(None, None).stage_ms for _ in range(args.steps)]
        medians = {st.value: statistics.median(s[st] for s in steps) for st in TRAINING_STAGES}
        blocks.append({"block": b, "seconds": round(time.time() - t0, 2), "stage_ms": medians})
        print(f"block {b} ({time.time() - t0:.1f} s): emb_bwd {medians['emb_bwd']:.3f} ms, "
              f"step {sum(medians.values()):.3f} ms", flush=True)
    out = {"command": " ".join(["python", *sys.argv]), "model": model.name,
           "batch": batch, "steps_per_block": args.steps, "blocks": blocks}
    write_atomic(Path(args.output), json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
