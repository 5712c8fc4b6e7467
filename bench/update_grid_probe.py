"""Whether a training kernel that leaves room on the SMs lets preprocessing hide beside
it: the fused embedding update (heavy-fused's emb_bwd, 61% of its b16384 step) launched
with its grid capped, so it strides over its bags with fewer blocks (issue 6).

The contention probe (bench/contention_probe.py) found that beside emb_bwd every
co-runner costs the step its full time: the update's ~13,000 blocks queue on the
higher-priority training stream, so the preprocessing kernel's blocks wait for the SMs
until the update's last block is placed. With at most N blocks per SM the update's grid
fits on the GPU at once and leaves warp slots free. For each cap this measures the
plain step (the update's own time at that cap) and, released at each stage of
--stages, the pipeline's fused kernel (at gpu-overlap's launch and at one block per SM)
and `alu` (arithmetic of the fused kernel's time, no memory traffic): each one's
stretch of the step, as the contention probe reports it.

On the H200: python bench/update_grid_probe.py --out $OUT
Locally:     python bench/update_grid_probe.py --dry-run --out /tmp/x   (CUDA simulator)
Writes update_grid_<model>.json atomically once every batch has been measured.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

if "--dry-run" in sys.argv:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

from numba import cuda  # noqa: E402

from bench.contention_probe import (  # noqa: E402
    Synthetic,
    add_stretch,
    heavy_probe_parser,
    int_list,
    measure,
    probe_record,
    probe_setup,
    raw_id_count,
    whole_pipeline,
)
from corun.workload import resolve_model  # noqa: E402
from spec import EmbeddingUpdate, Stage  # noqa: E402
from spec.serde import write_atomic  # noqa: E402

DEFAULT_STAGES = "emb_fwd,interaction_bwd,emb_bwd"


def probe_batch(model_name: str, pipeline_name: str, batch: int, caps: tuple[int, ...],
                stages: tuple[Stage, ...], reps: int, dry_run: bool, say) -> dict:
    """One batch: the co-runners built and timed alone, then per update cap the plain
    step and every co-runner at every stage of `stages`."""
    hw, _, pipeline, prof, blocks, threads = probe_setup(
        model_name, pipeline_name, batch, dry_run, say)
    sms = 1 if dry_run else hw.gpu.sm_count
    kernels: dict[str, dict] = {}
    for name, n_blocks in (("fused", blocks), ("fused-thin", sms)):
        group, launch = prof.launcher(whole_pipeline(pipeline, n_blocks, threads))
        launch()  # compile and warm
        kernels[name] = {"launch": launch, "blocks": group.grid(), "threads": threads,
                         "alone_ms": prof.kernel_alone_ms(launch, reps)}
    raw_ids = raw_id_count(pipeline, batch)
    alu = Synthetic("alu", prof, blocks, threads, min(raw_ids, 512) if dry_run else raw_ids)
    alone = alu.calibrate(kernels["fused"]["alone_ms"], reps) if not dry_run else 0.0
    kernels["alu"] = {"launch": alu.launch, "blocks": blocks, "threads": threads,
                      "alone_ms": alone, "knob": alu.knob}
    say(f"batch {batch}: alone " + ", ".join(f"{k} {v['alone_ms']:.3f} ms"
                                             for k, v in kernels.items()))
    by_cap = []
    for cap in caps:
        prof.trainer.update_max_blocks = cap * sms
        measure(prof, None, 1)  # warm the capped update
        plain = measure(prof, None, reps)["plain"]
        row = {"blocks_per_sm": cap, "max_blocks": cap * sms, "plain": plain, "kernels": {}}
        for name, k in kernels.items():
            by_stage = measure(prof, k["launch"], reps, stages)
            add_stretch(by_stage, plain["span_ms"], k["alone_ms"])
            row["kernels"][name] = by_stage
            say(f"  cap {cap}/SM: emb_bwd alone {plain['stage_ms']['emb_bwd']:.3f} ms, span "
                f"{plain['span_ms']:.3f}; {name}: " + ", ".join(
                    f"{st} {r['stretch_ms']:+.3f}" for st, r in by_stage.items()))
        by_cap.append(row)
    prof.trainer.update_max_blocks = None
    return {"batch": batch, "raw_ids": raw_ids,
            "output_matches_reference": alu.output_matches(),
            "kernels": {k: {key: v for key, v in d.items() if key != "launch"}
                        for k, d in kernels.items()},
            "by_cap": by_cap}


def main(argv: list[str] | None = None) -> int:
    ap = heavy_probe_parser(__doc__, batch=False)
    ap.add_argument("--batches", default="16384,8192")
    ap.add_argument("--caps", default="0,8,4,2,1",
                    help="the update's blocks per SM to try (0: one thread per bag and "
                    "column, as before embedding_sgd.UPDATE_BLOCKS_PER_SM)")
    ap.add_argument("--stages", default=DEFAULT_STAGES, help="release stages")
    ap.add_argument("--reps", type=int, default=12, help="steps per measurement (>= 1)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    batches = int_list(args.batches, "--batches", 1, 1 << 24)
    caps = int_list(args.caps, "--caps", 0, 64)
    names = {s.value: s for s in Stage}
    stages = tuple(names[x] for x in args.stages.split(",") if x in names)
    if len(stages) != len(args.stages.split(",")):
        raise SystemExit(f"--stages: {args.stages!r} names a stage that is not one of "
                         f"{', '.join(names)}")
    if args.reps < 1:
        raise SystemExit(f"--reps: {args.reps} is not an integer >= 1")
    if resolve_model(args.model, None).embedding_update is not EmbeddingUpdate.FUSED_SGD:
        raise SystemExit(f"--model: {args.model} does not train with the fused embedding "
                         "update (embedding_update fused-sgd), whose grid this caps")
    if not args.dry_run and not cuda.is_available():
        raise SystemExit("no CUDA GPU: run on the H200, or pass --dry-run")
    say = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731
    t0 = time.time()
    if args.dry_run:
        batches, args.reps = (64,), 1
    results = probe_record("update_grid_probe.py", argv, args, [
        probe_batch(args.model, args.pipeline, b, caps, stages, args.reps, args.dry_run, say)
        for b in batches], t0)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / f"update_grid_{args.model}.json", json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
