"""`corun profile`: measure fused kernels co-running with training stages, to a CSV."""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

from corun.out_folder import out_folder
from corun.spec import SpecError
from corun.workload import QUIET_HELP, seed

MODELS = "criteo-kaggle,criteo-terabyte,wide-2x,wide-4x"
KERNEL_PIPELINES = "kaggle,terabyte,wide-2x,multihot,heavy"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=out_folder, required=True,
                   help="directory of profile.csv (appended to)")
    p.add_argument("--budget-minutes", type=float, default=9.0,
                   help="start no new kernel after this long (the run is resumable)")
    p.add_argument("--models", default=MODELS, help="model presets or files")
    p.add_argument("--batches", default="2048,4096,8192,16384",
                   help="batches a GPU each model trains at (default: %(default)s)")
    p.add_argument("--train-pipeline", help="the pipeline whose outputs the trainer reads "
                   "(default: each model's preset pipeline)")
    p.add_argument("--pipelines", default=KERNEL_PIPELINES,
                   help="pipelines the kernels are drawn from")
    p.add_argument("--shapes", type=int, default=15, help="feature sets sampled")
    p.add_argument("--plans", help="comma-separated plan files: each of their kernels is "
                   "profiled too, as the plan launches it (0 --shapes: only these)")
    p.add_argument("--launches", type=int, default=4, help="launch shapes per feature set")
    p.add_argument("--mappings", default="thread,warp",
                   help="thread mappings per launch shape: thread, warp or both "
                   "(FusedKernel.warp_rows; one where the kernel writes no long list)")
    p.add_argument("--reps", type=int, default=3, help="step pairs per measurement")
    p.add_argument("--resident", action="store_true",
                   help="release each kernel just before its stage starts, so its blocks "
                   "are on the SMs when the stage's work begins (a kernel carried into a "
                   "later stage), into DIR/resident.csv")
    p.add_argument("--cuda-graphs", action="store_true",
                   help="train with the step replayed as CUDA graphs, a stage each, as "
                   "corun execute --cuda-graphs does (one GPU; into DIR/graphed-*.csv)")
    p.add_argument("--lead-ms", type=float,
                   help="with --resident: how long the kernel runs alone before the stage "
                   "starts, in (0, 5] ms (default: corun.profiling.LEAD_MS; longer: a kernel "
                   "part done, as one carried from an earlier stage is)")
    p.add_argument("--hardware", default="h200",
                   help="the preset of the GPU profiled: its ceilings and SMs give the "
                   "rows' stage work and occupancy features (default: %(default)s)")
    p.add_argument("--seed", type=seed, default=0,
                   help="seed of the sampled kernels and their synthetic batches")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                   help="where to measure (cpu: the sweep on this machine's CPU, to try it "
                   "out: its times are the CPU's)")
    p.add_argument("--shard", default="0/1", help="I/N: profile every N-th kernel feature "
                   "set from the I-th, into DIR/profile-IofN.csv (one process per GPU; "
                   "corun fit reads the directory)")
    p.add_argument("--quiet", action="store_true", help=QUIET_HELP)


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    import numpy as np

    from corun.cli import progress
    from corun.costmodel.profile_data import (
        GRAPHED,
        LEAD_ASKED,
        PROFILE,
        RESIDENT,
        done_keys,
        profile_files,
        row_key,
        shard_file,
    )
    from corun.profiling import (
        LEAD_MS,
        Profiler,
        append_rows,
        appendable_header,
        drop_torn_row,
        plan_kernels,
        sample_kernels,
    )
    from corun.progress import bar
    from corun.spec import DEFAULT_MODEL_FOR, EmbeddingForward, Plan, load
    from corun.workload import resolve_hardware, resolve_model, resolve_pipeline

    say = progress(args.quiet)
    if not (math.isfinite(args.budget_minutes) and args.budget_minutes >= 0):
        raise SpecError("--budget-minutes", args.budget_minutes,
                        "a finite number of minutes >= 0 (0: stop before the first kernel)")
    for name, lo in (("shapes", 0 if args.plans else 1), ("launches", 1), ("reps", 1)):
        if getattr(args, name) < lo:
            raise SpecError(f"--{name}", getattr(args, name), f"an integer >= {lo}")
    mappings = args.mappings.split(",")
    if not mappings or any(m not in ("thread", "warp") for m in mappings):
        raise SpecError("--mappings", args.mappings, "thread, warp or thread,warp")
    shard, shards = _shard(args.shard)
    hw = resolve_hardware(args.hardware, 1, None, None)
    pipelines = [resolve_pipeline(p) for p in args.pipelines.split(",")]
    specs = sample_kernels(pipelines, args.shapes, args.launches,
                           np.random.default_rng(args.seed),
                           tuple(dict.fromkeys(m == "warp" for m in mappings))
                           ) if args.shapes else []
    for path_text in (args.plans.split(",") if args.plans else []):
        plan = load(Plan, path_text)
        specs += plan_kernels(plan, resolve_pipeline(plan.pipeline))
    pipeline_for = {m: p for p, m in DEFAULT_MODEL_FOR.items()}
    models = {m: resolve_model(m, None) for m in args.models.split(",")}
    train_for = {}  # each model's training pipeline, checked to feed it before any work
    for model_name, model in models.items():
        train = resolve_pipeline(args.train_pipeline or pipeline_for.get(model.name, "kaggle"))
        try:
            train.check_model(model)
        except SpecError as e:
            raise SpecError("--train-pipeline", train.name, f"a pipeline that feeds model "
                            f"{model.name!r} ({e})") from None
        train_for[model_name] = train
    out = Path(args.out)  # made once every input has been read
    out.mkdir(parents=True, exist_ok=True)
    kind = (GRAPHED if args.cuda_graphs else "") + (RESIDENT if args.resident else PROFILE)
    if args.lead_ms is not None and not (args.resident and 0 < args.lead_ms <= 5):
        raise SpecError("--lead-ms", args.lead_ms, "milliseconds in (0, 5], with --resident")
    lead_ms = (args.lead_ms or LEAD_MS) if args.resident else 0.0
    lead_key = (f"{lead_ms:g}",) if args.resident else ()
    path = shard_file(out, shard, shards, kind)
    bag = any(m.embedding_forward is EmbeddingForward.BAG_KERNEL for m in models.values())
    for csv_file in profile_files(out, kind):  # a run killed mid-row: that row again
        torn = drop_torn_row(csv_file)
        if torn is not None:
            say(f"{csv_file}: dropped a torn last row ({len(torn)} characters) left by an "
                "interrupted run; it is measured again")
    appendable_header(path, any(s.warp for s in specs), bag)  # refused before any GPU time
    done = done_keys(out, kind)
    index = {}  # node set -> its position in the sample: shards split whole sets
    for s in specs:
        index.setdefault((s.pipeline.name, s.nodes), len(index))
    specs = [s for s in specs if index[(s.pipeline.name, s.nodes)] % shards == shard]
    gpu = _gpu_name(args.device)
    stages = _stage_names()
    t0, written = time.time(), 0
    for model_name in args.models.split(","):
        trainer = None
        for b in (int(x) for x in args.batches.split(",")):
            model = resolve_model(model_name, b)
            if args.cuda_graphs:
                model = replace(model, cuda_graphs=True)  # refused where it cannot be
            todo = [s for s in specs if any((gpu, model.name, str(b), s.name, st, *lead_key)
                                            not in done for st in stages)]
            if not todo:
                continue
            prof = Profiler(model, train_for[model_name], hw, args.device, args.seed, say,
                            trainer)
            trainer = prof.trainer
            with bar(len(todo), f"{model.name} b{b} kernels", args.quiet,
                     "kernel") as shown:
                for spec in todo:
                    if time.time() - t0 > 60 * args.budget_minutes:
                        say(f"time budget spent after {written} pairs: run again to go on")
                        return 0
                    rows = [{**r, **({LEAD_ASKED: lead_key[0]} if lead_key else {})}
                            for r in prof.profile(spec, args.reps, lead_ms)]
                    append_rows(path, rows)
                    done |= {row_key(r) for r in rows}
                    written += len(rows)
                    shown.update(1)
                    say(f"{model.name} b{b} {spec.name}: {len(rows)} pairs "
                        f"({written} this run, {time.time() - t0:.0f} s)")
    say(f"profile complete ({written} pairs this run): {path}")
    return 0


def _shard(text: str) -> tuple[int, int]:
    """"I/N" -> (I, N), with 0 <= I < N."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        i, n = -1, 0
    if not 0 <= i < n:
        raise SpecError("--shard", text, "I/N with integers 0 <= I < N, e.g. 0/4")
    return i, n


def _gpu_name(device: str) -> str:
    import torch

    if device == "cpu":
        return "cpu"
    if not torch.cuda.is_available():
        raise SpecError("--device", device, "a machine with a CUDA GPU (or --device cpu)")
    return torch.cuda.get_device_name()


def _stage_names() -> list[str]:
    from corun.backend.trainer import TRAINING_STAGES

    return [s.value for s in TRAINING_STAGES]
