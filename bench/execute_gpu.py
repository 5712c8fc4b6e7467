"""Strategies executed on the GPU beside the DLRM trainer, each as a ratio to `ideal`
measured in the same command (issue 4), and planned strategies next to the baselines
(issue 6: plan files made by `corun plan`, under bench/plans/, with the predictions
they were chosen on; bench/plans/make.sh remakes them).

On the H200:  python bench/execute_gpu.py --matrix baselines --out $OUT
              python bench/execute_gpu.py --matrix plans --out $OUT
              python bench/execute_gpu.py --matrix assembly --out $OUT
              python bench/execute_gpu.py --matrix bound --out $OUT
              python bench/execute_gpu.py --matrix heavy --out $OUT
              python bench/execute_gpu.py --matrix heavy-stages --out $OUT
              python bench/execute_gpu.py --matrix heavy-small --out $OUT
              python bench/execute_gpu.py --matrix heavy-lean --out $OUT
              python bench/execute_gpu.py --matrix heavy-mlp --out $OUT
              python bench/execute_gpu.py --matrix graphs --out $OUT
              python bench/execute_gpu.py --matrix graphs-stages --out $OUT
On 4 H200s:   NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \
              torchrun --standalone --nproc-per-node 4 bench/execute_gpu.py \
              --matrix multigpu --out $OUT
Locally:      python bench/execute_gpu.py --matrix baselines --dry-run --out /tmp/x
              (CPU, tables cut to 2,000 rows, a few iterations: checks the script)

All Measurements of a command go into one file, `execute_<matrix>.json` (a list,
rewritten atomically after every case so a lost machine keeps what finished); a case
that fails is recorded with its error and the rest go on. One trainer per model is
reused across strategies and batches (building a 100 GB table set takes seconds).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
import traceback
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import spec  # noqa: E402
from backend import driver  # noqa: E402
from backend.codegen import MAX_UNROLL  # noqa: E402
from backend.executor import Executor  # noqa: E402
from backend.graphed import make_trainer  # noqa: E402
from backend.settings import MAX_RELEASE_OFFSET_MS, REGISTER_CAPS, RunSettings  # noqa: E402
from bench.render_execute import (  # noqa: E402
    plan_file,
    release_offset_ms,
    suffix_number,
    update_blocks_per_sm,
)
from corun.workload import add_check_arguments, int_list, shrink_tables  # noqa: E402
from reports.rounds import turned_order  # noqa: E402
from sim.strategy import (  # noqa: E402
    StrategyKind,
    default_launch,
    host_workers_per_gpu,
    parse_strategy,
    strategy_plan,
)
from spec.serde import dumps, write_atomic  # noqa: E402

PLANS = Path(__file__).resolve().parent / "plans"
BASELINES = ("ideal", "gpu-sequential", "gpu-overlap", "cpu:16")
SMALL_TABLE_LABELS = ("ideal", "gpu-sequential", "gpu-overlap", *(
    f"at:{s}" for s in ("emb_fwd", "interaction_bwd", "bottom_mlp_bwd", "emb_bwd",
                        "optimizer")), "corun")
"""The heavy-small pipeline's matrices (heavy-small, heavy-lean): the baselines, the one
kernel at each stage that could hide it, and corun's plan."""
MATRICES = {
    # (pipeline, batches, strategies: baseline names or plan files under bench/plans/)
    "baselines": [(p, (4096, 8192), BASELINES) for p in ("kaggle", "terabyte", "multihot")]
    + [("kaggle", (4096,), ("gpu-overlap-nocheck",))],
    "plans": [("heavy", (4096,), ("ideal", "gpu-sequential", "gpu-overlap", "rap", "corun"))]
    + [(p, (4096, 8192, 16384), ("ideal", "gpu-sequential", "rap", "corun"))
       for p in ("kaggle", "terabyte")]
    + [(p, (4096, 8192), ("ideal", "gpu-sequential", "rap", "corun"))
       for p in ("wide-2x", "wide-4x")],
    # each batch's assembly enqueued after its last kernel (the default) against after
    # the step's launches ("+late", runs 1-10), where the host waited for it
    "assembly": [("heavy", (4096,), ("ideal", "gpu-sequential", "gpu-sequential+late",
                                     "corun", "corun+late"))]
    + [(p, (8192,), ("ideal", "gpu-sequential", "gpu-sequential+late", "corun", "corun+late",
                     "rap", "rap+late")) for p in ("kaggle", "wide-2x")],
    # the heavy pipeline beside the cheapest model per id we have: the heavy model with
    # dense embedding gradients (no sparse update), how large preprocessing can get
    # against training (issue 6)
    "bound": [("heavy", (4096, 8192), ("ideal", "gpu-sequential", "gpu-overlap"))],
    # the heavy pipeline beside the heavy model trained with the fused embedding update
    # (model heavy-fused, plans under bench/plans/heavy-fused-b<batch>/): issue 6's heavy
    # case
    "heavy": [("heavy", (8192, 16384, 32768), ("ideal", "gpu-sequential", "gpu-overlap",
                                                "rap", "corun"))],
    # the same, the whole pipeline in one kernel released at one training stage
    # ("at:<stage>", the training stream above it), and corun's plan beside them: which
    # stage absorbs it ("optimizer":
    # the kernel's blocks reach the GPU before the next step's emb_fwd; with "+ahead2"
    # only, or the next step waits for it)
    "heavy-stages": [("heavy", (8192, 16384), ("ideal", "gpu-sequential", *(
        f"at:{s}" for s in ("emb_fwd", "top_mlp_fwd", "top_mlp_bwd", "interaction_bwd",
                            "bottom_mlp_bwd", "emb_bwd", "optimizer")), "corun"))],
    # the heavy pipeline hashed into 10k buckets beside heavy-fused with tables of 10k rows
    # (model heavy-small: its tables fit in the L2): a faster step beside the same
    # preprocessing, the one kernel at each stage that could hide it
    "heavy-small": [("heavy-small", (8192, 16384), SMALL_TABLE_LABELS)],
    # the same beside heavy-lean: heavy-small with the bag kernel's forward, a step
    # cheaper per id looked up (issue 6's heavy case)
    "heavy-lean": [("heavy-small", (8192, 16384, 24576, 32768), SMALL_TABLE_LABELS)],
    # heavy-rehash (heavy-small's lists with more arithmetic an id) beside heavy-lean, eager:
    # issue 6's heavy case (bench/rehash_session.sh ran it through corun execute); plans
    # under bench/plans/rehash/heavy-lean-b<batch>/
    "heavy-rehash": [("heavy-rehash", (16384, 32768),
                      SMALL_TABLE_LABELS + ("at:top_mlp_fwd", "at:top_mlp_bwd"))],
    # heavy-lean's step replayed as CUDA graphs between its two embedding kernels
    # (backend/graphed.py), where the host no longer paces it; plans under
    # bench/plans/graphs/heavy-lean-b<batch>/ (none at b32768, measured for its ideal's
    # stage times, costmodel/data/h200/graphed-stages.csv: plan labels record an error there)
    "heavy-lean-graphs": [("heavy-small", (8192, 12288, 16384, 24576, 32768),
                           SMALL_TABLE_LABELS + ("at:top_mlp_fwd", "at:top_mlp_bwd"))],
    # heavy-short (heavy-small's outputs from 36 32-bit raw ids a list) beside
    # heavy-hot (heavy-lean with the hot-row update), graphed: a faster step beside
    # the same preprocessing, a host link that keeps up; plans under
    # bench/plans/graphs/heavy-short-b<batch>/
    "heavy-short-graphs": [("heavy-short", (8192, 16384, 24576, 32768),
                            SMALL_TABLE_LABELS + ("at:top_mlp_fwd", "at:top_mlp_bwd"))],
    # heavy preprocessing (heavy-20: the heavy pipeline keeping 20 ids per list) beside
    # a model whose step is mostly dense maths (heavy-mlp), the one kernel at each stage
    "heavy-mlp": [("heavy-20", (16384, 32768), ("ideal", "gpu-sequential", "gpu-overlap", *(
        f"at:{s}" for s in ("top_mlp_fwd", "top_mlp_bwd", "interaction_bwd",
                            "bottom_mlp_bwd", "emb_bwd"))))],
    # the trainer's step replayed as CUDA graphs (Model.cuda_graphs), eager ideal beside
    # it; plans under bench/plans/graphs/
    "graphs": [(p, (4096, 8192), ("ideal+eager", "ideal", "gpu-sequential", "rap", "corun"))
               for p in ("kaggle", "terabyte", "wide-2x", "wide-4x")],
    # whether 16 host workers keep up with the graphed step (the simulator says so)
    "graphs-cpu": [(p, (4096,), ("ideal", "cpu:16")) for p in ("kaggle", "terabyte")],
    # the graphed step's stage times, to fit the cost model's graph correction
    # (costmodel/graphs.py)
    "graphs-stages": [(p, (2048, 4096, 8192, 16384), ("ideal",))
                      for p in ("kaggle", "terabyte", "wide-2x", "wide-4x")],
    # under torchrun on 4 GPUs (issue 8); corun-gpu: corun's best plan with preprocessing
    # on the GPUs, corun-owner: the same (or corun's, where it has kernels) owner-mapped
    "multigpu": [(p, (4096, 8192), ("ideal", "gpu-sequential", "rap", "corun", "corun-gpu",
                                    "corun-owner")) for p in ("kaggle", "terabyte")],
    # each model's eager ideal where the host paces it (small batches): the host's step by
    # model, beside criteo-kaggle's on the same host (bench/fit_host.py --step-scales);
    # --model runs one model in place of the pipelines' own (heavy-fused, heavy-lean)
    "host-steps": [(p, (2048, 4096), ("ideal",)) for p in (
        "kaggle", "terabyte", "wide-2x", "wide-4x", "multihot", "heavy", "heavy-small",
        "heavy-20")],
}


MODEL_CHANGES = {"bound": {"sparse_gradients": False}, "graphs": {"cuda_graphs": True},
                 "graphs-stages": {"cuda_graphs": True}, "graphs-cpu": {"cuda_graphs": True},
                 "heavy-lean-graphs": {"cuda_graphs": True},
                 "heavy-short-graphs": {"cuda_graphs": True}}
"""Fields a matrix changes in its pipelines' default models."""
MATRIX_MODEL = {"heavy": "heavy-fused", "heavy-stages": "heavy-fused",
                "heavy-lean": "heavy-lean", "heavy-lean-graphs": "heavy-lean",
                "heavy-rehash": "heavy-lean"}
"""A matrix's model where it is not its pipelines' default (spec.DEFAULT_MODEL_FOR); its
plans are under bench/plans/<model>-b<batch>/."""
PLAN_FOLDER = {"graphs": "graphs", "graphs-cpu": "graphs", "heavy-lean-graphs": "graphs",
               "heavy-short-graphs": "graphs", "heavy-rehash": "rehash"}
"""A matrix whose plans are under bench/plans/<folder>/<pipeline>-b<batch>/."""


def cases_for(labels: tuple[str, ...], strategies: str | None) -> list[str]:
    """The strategies a matrix entry runs: its labels, or those that --strategies names,
    which may add variants of a label: "<label>+ahead2" (the plan two batches ahead,
    Plan.batches_ahead), "<label>+w<N>" (N host workers), "<label>+late" (the assembly
    after the step's launches) and the other suffixes of run_case; and where the entry
    runs corun's plan, its runners-up "corun-<N>" (corun plan --runners-up); where it runs
    the one kernel at a stage ("at:<stage>"), the pipeline in two kernels ("two:...",
    two_kernel_plan)."""
    if not strategies:
        return list(labels)
    order = strategies.split(",")
    variants = [x for x in order if x not in labels and (
        x.split("+")[0] in labels and "+" in x  # a label's variant
        or x.startswith("two:") and any(y.startswith("at:") for y in labels)
        or "corun" in labels and x.split("+")[0].startswith("corun-")
        and plan_file(x.split("+")[0]) is not None)]  # a runner-up of corun's plan
    return [x for x in labels if x in order] + list(dict.fromkeys(variants))


def say(*a) -> None:
    if os.environ.get("RANK", "0") == "0":
        print(*a, flush=True)


def plan_dir(matrix: str, pipe_name: str, batch: int, gpus: int) -> Path:
    """Where a matrix's plan files for one workload are:
    bench/plans/[x<N>/][<PLAN_FOLDER>/]<pipeline or MATRIX_MODEL>-b<batch>/."""
    folder = pipe_name if matrix not in MATRIX_MODEL else MATRIX_MODEL[matrix]
    if matrix in PLAN_FOLDER:
        folder = f"{PLAN_FOLDER[matrix]}/{folder}"
    return (PLANS if gpus == 1 else PLANS / f"x{gpus}") / f"{folder}-b{batch}"


def same_plan_as(label: str, earlier: list[str], directory: Path) -> str | None:
    """The first of `earlier` labels whose plan file holds the very plan `label`'s does
    (plain plan labels only): on several GPUs the planner's choice can be its GPU plan and
    its owner-mapped form at once, and measuring one plan three times wastes the call."""
    def plan(x: str) -> spec.Plan | None:
        path = directory / plan_file(x) if "+" not in x and plan_file(x) else None
        return spec.load(spec.Plan, path) if path is not None and path.exists() else None

    mine = plan(label)
    return None if mine is None else next((x for x in earlier if plan(x) == mine), None)


TWO_KERNELS = "two:<stage A>/<blocks A>/<features in A>/<stage B>/<blocks B>"


def two_kernel_plan(label: str, pipeline: spec.Pipeline, model: str, gpu_count: int,
                    threads: int) -> spec.Plan:
    """The pipeline in two kernels (label TWO_KERNELS): the dense features and the first
    k sparse features' nodes released at stage A, the other sparse features' at stage B,
    the training stream first. Asked: does a kernel small enough to end within the
    graphed embedding forward, which a kernel beside it does not slow (heavy-hot's
    profile, at every width), take part of the pipeline off the stage that slows beside
    it? On the H200, no split beat the one kernel (bench/results/two_kernels_h200.md)."""
    parts = label.removeprefix("two:").split("/")
    try:
        stage_a, blocks_a, k, stage_b, blocks_b = parts
        blocks_a, k, blocks_b = int(blocks_a), int(k), int(blocks_b)
    except ValueError:
        raise spec.SpecError("strategy", label, TWO_KERNELS) from None
    sparse = pipeline.sparse_outputs
    if not 1 <= k < len(sparse):
        raise spec.SpecError("strategy", label, f"{TWO_KERNELS}, features in A in "
                             f"1..{len(sparse) - 1}")
    owner = pipeline.feature_of()
    first = {s.node for s in sparse[:k]} | set(pipeline.dense_outputs)
    a = tuple(n for n in pipeline.order if owner[n] in first)
    b = tuple(n for n in pipeline.order if owner[n] not in first)
    kernels = (spec.FusedKernel("a", a, stage_a, blocks_a, threads),
               spec.FusedKernel("b", b, stage_b, blocks_b, threads))
    return spec.Plan(pipeline.name, model, gpu_count, kernels, training_priority_high=True)


def case_plan(label: str, pipeline: spec.Pipeline, model: spec.Model, directory: Path, hw):
    """(the Plan a matrix label runs, its Strategy or None): a baseline by name, "at:<stage>"
    (the baselines' one kernel released at that stage, the training stream first), or a
    plan file in `directory` (plan_dir)."""
    if label.startswith("two:"):
        return two_kernel_plan(label, pipeline, model.name, hw.gpu_count,
                               default_launch(hw)[1]), None
    if label.startswith("at:"):
        blocks, threads = default_launch(hw)
        plan = spec.one_kernel_plan(pipeline, model.name, hw.gpu_count,
                                    label.removeprefix("at:"), blocks, threads)
        return replace(plan, training_priority_high=True), None
    if plan_file(label) is not None:
        return spec.load(spec.Plan, directory / plan_file(label)), None
    strategy = parse_strategy(label, hw)
    return strategy_plan(strategy, pipeline, model.name, hw), strategy


def run_case(pipe_name: str, batch: int, label: str, args, trainers: dict, hw,
             inputs: dict) -> dict:
    model_name = args.model or MATRIX_MODEL.get(args.matrix, spec.DEFAULT_MODEL_FOR[pipe_name])
    model = replace(spec.model_preset(model_name), batch_per_gpu=batch,
                    **MODEL_CHANGES.get(args.matrix, {}))
    pipeline = spec.pipeline_preset(pipe_name)
    if args.dry_run:  # CPU: no CUDA graphs there
        model, pipeline = shrink_tables(model, pipeline, 2000)
        model = replace(model, cuda_graphs=False)
    check = args.check
    base, *suffixes = label.split("+")  # "+late": the assembly after the step's launches;
    # "+ahead2": two batches ahead; "+w<N>": N host worker processes; "+eager": the step
    # launched kernel by kernel (not as CUDA graphs); "+sm<N>": preprocessing on N SMs of
    # its own, training on the rest; "+cap<N>": preprocessing confined to N SMs, training
    # on every SM (RunSettings.preprocess_sm_cap); "+upd<N>": the fused embedding update
    # on N SMs of its own, preprocessing on the rest, training's other stages on every
    # SM; "+warp" /
    # "+thread": the kernels' long list outputs a warp per row / a thread per row
    # (FusedKernel.warp_rows); "+b<N>": every kernel launched
    # with N blocks; "+high" / "+low": the training stream above preprocessing / level
    # with it (Plan.training_priority_high); "+pre": the preprocessing stream above
    # training (RunSettings.preprocess_first); "+core": each batch's copies through
    # PyTorch and its kernels launched through cuda.core, not the driver
    # (backend/driver.py); "+calls": each batch's copies, launches and assembly as calls
    # one by one, not replayed as CUDA graphs (RunSettings.preprocess_graphs); "+uncapped":
    # the fused embedding update with one thread per bag and column, not
    # embedding_sgd.UPDATE_BLOCKS_PER_SM blocks an SM (one GPU), "+ub<N>" on N blocks an
    # SM (N >= 1; both RunSettings.update_blocks_per_sm); "+rowgrid": the batch's
    # assembly kernel on a thread a row, not about ASSEMBLY_IDS_PER_THREAD ids a thread;
    # "+ipt<N>": about N ids a thread (RunSettings.assembly_ids_per_thread);
    # "+u<N>": each fused values kernel computes N list elements a thread side by side
    # (RunSettings.values_unroll); "+r<N>": each fused values kernel compiled with at most N
    # registers a thread (RunSettings.values_max_registers); "+off<ms>": each kernel
    # launched <ms> after its releasing stage opens (RunSettings.release_offset_ms);
    # "+feed": each step's batch work on a second host thread during the step's backward
    # (RunSettings.feed_thread); "+inline": on the launching thread after the step (the
    # default since the feed thread measured no better; feed_thread_session.sh run 1 ran
    # with the feed thread as the default, "+inline" as the variant); "+own" / "+behind":
    # the batches' assemblies on a stream of their own / queued behind the kernels on
    # theirs (RunSettings.assembly_stream; neither: as the plan says)
    driver.use = "core" not in suffixes
    if "eager" in suffixes:
        model = replace(model, cuda_graphs=False)
    if base == "gpu-overlap-nocheck":  # what the per-batch check costs the host
        base, check = "gpu-overlap", False
    if "nocheck" in suffixes:  # "+nocheck": the batches not compared with the reference
        check = False
    # "+checked": the timed batches compared too (RunSettings.check_timed), as before
    check_timed = args.check_timed or "checked" in suffixes
    plan, strategy = case_plan(base, pipeline, model,
                               plan_dir(args.matrix, pipe_name, batch, hw.gpu_count), hw)
    if "ahead2" in suffixes:
        plan = replace(plan, batches_ahead=2)
    for priority, high in (("high", True), ("low", False)):
        if priority in suffixes:
            plan = replace(plan, training_priority_high=high)
    for mapping, warp in (("warp", True), ("thread", False)):  # FusedKernel.warp_rows
        if mapping in suffixes:
            plan = replace(plan, kernels=tuple(replace(k, warp_rows=warp) for k in plan.kernels))
    workers, pre_sms, update_sms, pre_cap = host_workers_per_gpu(strategy, hw), 0, 0, 0
    ids_per_thread = 0 if "rowgrid" in suffixes else RunSettings.assembly_ids_per_thread
    for x in suffixes:
        if x.startswith("b") and x[1:].isdigit():
            plan = replace(plan, kernels=tuple(replace(k, blocks=int(x[1:]))
                                               for k in plan.kernels))
        if x.startswith("w") and x[1:].isdigit():
            workers = int(x[1:])
        if x.startswith("sm") and x[2:].isdigit():  # RunSettings.preprocess_sms
            pre_sms = int(x[2:])
        if x.startswith("upd") and x[3:].isdigit():  # RunSettings.update_sms
            update_sms = int(x[3:])
        if x.startswith("cap") and x[3:].isdigit():  # RunSettings.preprocess_sm_cap
            pre_cap = int(x[3:])
        if x.startswith("ipt") and x[3:].isdigit():
            ids_per_thread = int(x[3:])
    assembly_stream = True if "own" in suffixes else False if "behind" in suffixes else None
    update_grid = 0 if "uncapped" in suffixes else update_blocks_per_sm(suffixes)
    settings = RunSettings(args.iterations, args.warmup, args.distinct_batches, check,
                           0, None, workers, early_assembly="late" not in suffixes,
                           preprocess_sms=pre_sms, update_sms=update_sms,
                           preprocess_sm_cap=pre_cap,
                           preprocess_first="pre" in suffixes,
                           preprocess_graphs="calls" not in suffixes,
                           feed_thread="feed" in suffixes and "inline" not in suffixes,
                           assembly_ids_per_thread=ids_per_thread, check_timed=check_timed,
                           values_unroll=suffix_number(suffixes, "u", RunSettings.values_unroll),
                           values_max_registers=suffix_number(
                               suffixes, "r", RunSettings.values_max_registers),
                           release_offset_ms=release_offset_ms(suffixes) or 0.0,
                           assembly_stream=assembly_stream,
                           update_blocks_per_sm=update_grid)
    device = "cpu" if args.dry_run else f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    key = (model.name, model.cuda_graphs)
    if hw.gpu_count > 1:  # each plan shards (and owner-maps) its own way: build per case
        trainers.clear()
    elif key not in trainers:
        trainers.clear()
        gc.collect()
        if device != "cpu":
            torch.cuda.empty_cache()
        trainers[key] = make_trainer(model, device, 0)
    replay = strategy is not None and strategy.kind is StrategyKind.IDEAL
    ex = Executor(model, pipeline, plan, label, settings, device, replay,
                  command=" ".join(["python", *sys.argv]), trainer=trainers.get(key),
                  say=say, hardware=hw, inputs=inputs)
    return dumps(ex.run())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--matrix", choices=sorted(MATRICES), required=True)
    ap.add_argument("--out", default=os.environ.get("OUT", "out/execute"))
    ap.add_argument("--only", help="comma-separated pipelines to run")
    ap.add_argument("--batches", help="comma-separated batch sizes to run (the matrix's; a "
                    "--dry-run takes any)")
    ap.add_argument("--strategies", help="comma-separated strategies to run")
    ap.add_argument("--model", help="a model preset to train in place of the matrix's (with "
                    "--only its pipeline; the plans are still the matrix's)")
    d = RunSettings()
    ap.add_argument("--iterations", type=int, default=d.iterations)
    ap.add_argument("--warmup", type=int, default=d.warmup)
    ap.add_argument("--distinct-batches", type=int, default=d.distinct_batches)
    add_check_arguments(ap)
    ap.add_argument("--repeats", type=int, default=1,
                    help="rounds of every case (records then carry their round, 'repeat')")
    ap.add_argument("--budget-s", type=float, default=540.0,
                    help="start no case after this many seconds")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error(f"--repeats {args.repeats}: an integer >= 1")
    if args.model and args.model not in spec.MODEL_PRESETS:
        ap.error(f"--model {args.model}: one of {', '.join(spec.MODEL_PRESETS)}")
    keep_b = None  # the matrix's batches to run (all: None)
    if args.batches:
        try:
            keep_b = set(int_list(args.batches, "--batches"))
        except spec.SpecError as e:
            ap.error(str(e))
        listed = {b for _, batches, _ in MATRICES[args.matrix] for b in batches}
        if not args.dry_run and not keep_b & listed:  # a typo, not an empty run
            ap.error(f"--batches {args.batches}: none of --matrix {args.matrix}'s batches "
                     f"({', '.join(map(str, sorted(listed)))}); a --dry-run takes any")
    if args.strategies:  # a name that matches no case is a typo, not an empty run
        entries = MATRICES[args.matrix]
        known = {x for _, _, labels in entries for x in cases_for(labels, args.strategies)}
        unknown = [x for x in args.strategies.split(",") if x not in known]
        if unknown:
            names = dict.fromkeys(x for _, _, labels in entries for x in labels)
            ap.error(f"--strategies {unknown[0]}: not a label of --matrix {args.matrix} "
                     f"({', '.join(names)}), a variant of one (<label>+<suffix>) or a "
                     "runner-up corun-<N>")
        bad = [x for x in args.strategies.split(",") for u in x.split("+")[1:]
               if u.startswith("ub") and (update_blocks_per_sm([u]) or 0) < 1]
        if bad:
            ap.error(f"--strategies {bad[0]}: +ub<N> takes N, the embedding update's blocks "
                     "an SM, an integer >= 1")
        both = [x for x in args.strategies.split(",") if {"own", "behind"} <= set(x.split("+"))]
        if both:
            ap.error(f"--strategies {both[0]}: +own or +behind (the batches' assemblies on "
                     "a stream of their own or behind the kernels), not both")
        for prefix, (lo, hi), what in (
                ("u", (1, MAX_UNROLL), "the ids a thread of each fused values kernel "
                 "computes side by side"),
                ("r", REGISTER_CAPS, "the registers a thread of each fused values kernel")):
            given = {x: suffix_number(x.split("+")[1:], prefix)
                     for x in args.strategies.split(",")}
            bad = [x for x, n in given.items() if n is not None and not lo <= n <= hi]
            if bad:
                ap.error(f"--strategies {bad[0]}: +{prefix}<N> takes N, {what}, an integer in "
                         f"{lo}..{hi}")
        bad = [x for x in args.strategies.split(",")
               if (off := release_offset_ms(x.split("+")[1:])) is None
               or not 0 <= off <= MAX_RELEASE_OFFSET_MS]
        if bad:
            ap.error(f"--strategies {bad[0]}: +off<ms> takes ms, how long the preprocessing "
                     "stream waits after the releasing stage opens, a number in "
                     f"0..{MAX_RELEASE_OFFSET_MS:g}")
        for x in args.strategies.split(","):
            if x.startswith("two:"):
                try:
                    for pipe_name, _, _ in entries:
                        two_kernel_plan(x.split("+")[0], spec.pipeline_preset(pipe_name),
                                        "unused", 1, 256)
                except spec.SpecError as e:
                    ap.error(f"--strategies {x}: {e}")
    if args.dry_run:
        args.iterations, args.warmup, args.distinct_batches = 4, 1, 1
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:  # torchrun: NCCL on GPUs (gloo for a dry run)
        import torch.distributed as dist

        if not args.dry_run:
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("gloo" if args.dry_run else "nccl")
    hw = spec.hardware_preset("h200", world)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"execute_{args.matrix}.json"
    results: list[dict] = []
    trainers: dict = {}
    inputs: dict = {}  # raw batches and references, made once per batch size (Executor)
    t_start = time.time()
    only = set(args.only.split(",")) if args.only else None
    for pipe_name, batches, labels in MATRICES[args.matrix]:
        if only and pipe_name not in only:
            continue
        # a dry run checks the code path at the batches asked for (small ones are quick
        # on the CPU); plan labels need a plan folder at that batch
        for b in sorted(keep_b) if args.dry_run and keep_b else batches:
            if keep_b and b not in keep_b:
                continue
            cases = cases_for(labels, args.strategies)
            folder = plan_dir(args.matrix, pipe_name, b, world)
            same = {x: same_plan_as(x, cases[:i], folder) for i, x in enumerate(cases)}
            inputs.clear()  # the batches of the last batch size are not read again
            for rnd, label in turned_order(cases, args.repeats):
                case = {"pipeline": pipe_name, "batch": b, "strategy": label,
                        **({"repeat": rnd} if args.repeats > 1 else {})}
                go = [time.time() - t_start <= args.budget_s]
                if world > 1:  # every rank takes the same decision
                    dist.broadcast_object_list(go, src=0)
                if not go[0] or same[label]:
                    results.append({**case, "error": f"skipped: the same plan as {same[label]}"
                                    if same[label] else "skipped: time budget spent"})
                    if rank == 0:  # the file lists every case of the matrix, run or not
                        write_atomic(path, json.dumps(results, indent=1))
                    continue
                t0 = time.time()
                say(f"=== {pipe_name} b{b} {label}"
                    + (f" (round {rnd + 1}/{args.repeats})" if args.repeats > 1 else ""))
                try:
                    results.append({**case, "measurement": run_case(
                        pipe_name, b, label, args, trainers, hw, inputs)})
                except Exception as e:  # record it and go on with the next case
                    traceback.print_exc()
                    results.append({**case, "error": f"{type(e).__name__}: {e}"})
                results[-1]["seconds"] = round(time.time() - t0, 1)
                if rank == 0:
                    write_atomic(path, json.dumps(results, indent=1))
                m = results[-1].get("measurement")
                if m:
                    say(f"    {m['iteration']['median_ms']:.3f} ms, "
                        f"{m['throughput_samples_per_s']:,.0f} samples/s, stall "
                        f"{m['stall_ms_per_iteration']:.3f} ms ({results[-1]['seconds']} s); "
                        "host ms " + ", ".join(f"{k} {v['median_ms']:.2f}"
                                               for k, v in m["host"].items() if ":" not in k))
    say(f"wrote {path} ({time.time() - t_start:.0f} s)")
    if world > 1:
        dist.barrier()  # every rank done with its collectives before the group goes
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
