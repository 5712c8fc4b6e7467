"""Room inside one training stage, by how far into it a kernel starts (issue 6's heavy
case). The simulator gives a kernel one rate for a whole stage; on graphed heavy-lean
b16384 the batch's assembly ran faster than alone when it started in the embedding
update's last ~0.4 ms and at 2.1x alone in its middle (bench/results/
assembly_hold_experiment.md). This probe times a small fused kernel released
`offset` ms after the stage opens (the preprocessing stream spins that long first), and
the whole pipeline in 198 and 396 blocks the same way, against their times alone; on the
GPU also the batch's assembly (backend/device_assembly.py, uncompared, as the executor
times it) over the 198-block kernel's outputs, the kernel that starts partway into the
update in the executed plans (`assembly`: its own room, costmodel/stage_room.py).

    python bench/stage_offset_probe.py --out OUT.json [--model heavy-lean --batch 16384
        --stage emb_bwd --offsets 0,0.5,1,1.5,1.8,2.0,2.2 --reps 11]

On the CPU (`--dry-run`, small tables) it runs the same steps without timing anything.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import spec  # noqa: E402
from backend.profile import KernelSpec, Profiler  # noqa: E402
from backend.streams import gpu_spin  # noqa: E402
from backend.trainer import TRAINING_STAGES  # noqa: E402
from bench.execute_gpu import shrink_tables  # noqa: E402
from costmodel.stage_room import ASSEMBLY_ROWS  # noqa: E402
from spec import Stage  # noqa: E402
from spec.serde import write_atomic  # noqa: E402

SMALL_FEATURES = 2
"""Sparse features in the small kernel: short enough alone (a few hundredths of a ms at
b16384) to time the room at one point of the stage."""


def kernels(pipeline: spec.Pipeline) -> list[KernelSpec]:
    """The small kernel (SMALL_FEATURES sparse features, 132 blocks) and the whole
    pipeline in 198 and 396 blocks, a warp a row."""
    small = tuple(o.node for o in pipeline.sparse_outputs[:SMALL_FEATURES])
    whole = tuple(pipeline.order)
    return [KernelSpec(pipeline, small, 132, 256),
            KernelSpec(pipeline, (), 198, 256, whole),
            KernelSpec(pipeline, (), 396, 256, whole)]


def assembly_launch(prof: Profiler, whole: KernelSpec, model: spec.Model,
                    pipeline: spec.Pipeline) -> tuple[str, int, object]:
    """(name, blocks, launch) of the batch's assembly over `whole`'s outputs, on the
    preprocessing stream: its starts kernel, then the plain (uncompared) assembly."""
    import torch

    from backend.assembly import output_map
    from backend.device_assembly import DeviceAssembler

    _, state = prof._state(whole)
    stream = prof.S.numba(prof.S.pre)
    with prof.S.use(prof.S.pre):
        state.launch(0, stream)  # the outputs it assembles
    prof._sync()
    asm = DeviceAssembler(output_map(state.program.layout, pipeline, model), state.pools, [],
                          torch.device("cuda"))
    grid = asm.plain_launch.grid
    blocks = grid[0] * grid[1] if isinstance(grid, tuple) else int(grid)

    def launch() -> None:
        with prof.S.use(prof.S.pre):
            asm.starts_launch(stream)
            asm.plain_launch(stream)

    return ASSEMBLY_ROWS, blocks, launch


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="heavy-lean")
    ap.add_argument("--pipeline", default="heavy-small")
    ap.add_argument("--batch", type=int, default=16384)
    ap.add_argument("--stage", default="emb_bwd", choices=[s.value for s in TRAINING_STAGES])
    ap.add_argument("--offsets", default="0,0.5,1,1.5,1.8,2.0,2.2",
                    help="ms after the stage opens, comma-separated, each >= 0")
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--eager", action="store_true", help="the step launched kernel by "
                    "kernel (default: replayed as CUDA graphs)")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    if args.model not in spec.MODEL_PRESETS:
        ap.error(f"--model {args.model}: one of {', '.join(spec.MODEL_PRESETS)}")
    if args.pipeline not in spec.PIPELINE_PRESETS:
        ap.error(f"--pipeline {args.pipeline}: one of {', '.join(spec.PIPELINE_PRESETS)}")
    for name in ("batch", "reps"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} {getattr(args, name)}: an integer >= 1")
    try:
        offsets = [float(x) for x in args.offsets.split(",")]
    except ValueError:
        ap.error(f"--offsets {args.offsets}: ms, comma-separated numbers >= 0")
    if any(x < 0 for x in offsets):
        ap.error(f"--offsets {args.offsets}: ms, comma-separated numbers >= 0")
    model = replace(spec.model_preset(args.model), batch_per_gpu=args.batch,
                    cuda_graphs=not args.eager and not args.dry_run)
    pipeline = spec.pipeline_preset(args.pipeline)
    if args.dry_run:
        model, pipeline = shrink_tables(model, pipeline, 2000)
        args.reps, offsets = 1, offsets[:2]
    hw = spec.hardware_preset("h200", 1)
    device = "cpu" if args.dry_run else "cuda:0"
    t0 = time.time()
    prof = Profiler(model, pipeline, hw, device, say=lambda *a: print(*a, flush=True))
    stage = Stage(args.stage)
    S = prof.S
    rows = []
    specs = kernels(pipeline)
    launches = [(ks.name, ks.blocks, prof.launcher(ks)[1]) for ks in specs]
    if S.cuda:  # the assembly of the 198-block kernel's outputs
        launches.append(assembly_launch(prof, specs[1], model, pipeline))
    for name, blocks, launch in launches:
        launch()  # compile and warm
        prof._sync()
        alone = prof.kernel_alone_ms(launch, args.reps)
        for offset in offsets:
            spans, stage_ms = [], []
            for _ in range(args.reps):
                marks = []

                def delayed(offset=offset, marks=marks, launch=launch) -> None:
                    with S.use(S.pre):
                        if S.cuda and offset > 0:
                            gpu_spin(offset)
                        marks.append(S.event(S.pre))
                        launch()
                        marks.append(S.event(S.pre))

                t = prof.step(stage, delayed)
                spans.append(S.ms(*marks))
                stage_ms.append(t.stage_ms[stage])
            rows.append({"kernel": name, "blocks": blocks, "offset_ms": offset,
                         "kernel_alone_ms": alone,
                         "kernel_ms": statistics.median(spans),
                         "stage_ms": statistics.median(stage_ms),
                         "stage_alone_ms": prof.plain_stage_ms[stage]})
            r = rows[-1]
            print(f"{name} offset {offset:.2f}: kernel {r['kernel_ms']:.3f} ms "
                  f"(alone {alone:.3f}), {args.stage} {r['stage_ms']:.3f} "
                  f"(alone {r['stage_alone_ms']:.3f})", flush=True)
    out = {"command": " ".join(["python", "bench/stage_offset_probe.py", *(argv or sys.argv[1:])]),
           "model": model.name, "pipeline": pipeline.name, "batch": args.batch,
           "stage": args.stage, "graphed": model.cuda_graphs, "reps": args.reps,
           "rows": rows, "seconds": round(time.time() - t0, 1)}
    write_atomic(args.out, json.dumps(out, indent=1))
    print(f"wrote {args.out} ({out['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
