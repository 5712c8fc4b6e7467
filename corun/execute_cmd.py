"""`corun execute`: run a plan (or a baseline strategy) beside training and measure it."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from corun.out_folder import out_file
from corun.spec import SpecError
from corun.workload import QUIET_HELP, add_cuda_graphs_argument, add_run_arguments, seed


def add_arguments(p: argparse.ArgumentParser) -> None:
    from corun.backend.settings import RunSettings

    d = RunSettings()
    p.add_argument("plan", nargs="?", help="a Plan file (from corun plan); or give --strategy")
    p.add_argument("--strategy", help="ideal, gpu-sequential, gpu-overlap or cpu:N")
    p.add_argument("--label", help="the strategy's name in the measurement (default: the "
                   "strategy a plan folder's file holds, as its prediction names it: corun "
                   "for plan.json, corun-N for plan-N.json, rap for plan-rap.json; else "
                   "the file's stem; or the strategy)")
    p.add_argument("--model", help="model preset or file (default: the plan's model)")
    p.add_argument("--pipeline", help="pipeline preset or file (default: the plan's)")
    p.add_argument("--batch", type=int, help="batch per GPU (default: the plan's, else the "
                   "model's)")
    add_cuda_graphs_argument(p)
    add_run_arguments(p)
    p.add_argument("--host-cores", type=int,
                   help="host CPU cores (default: the hardware preset's, 16 per GPU)")
    p.add_argument("--no-batch-graphs", dest="batch_graphs", action="store_false",
                   help="issue each batch's staging copies, kernel launches and assembly "
                   "call by call (by default they are captured once and replayed as CUDA "
                   "graphs)")
    p.add_argument("--assembly-stream", choices=["own", "behind"],
                   help="each batch's assembly on a stream of its own (own) or queued "
                   "behind the preprocessing kernels on theirs (behind); by default as "
                   "the plan says (Plan.assembly_stream: behind unless `corun tune` "
                   "measured its own stream faster)")
    p.add_argument("--preprocess-sm-cap", type=int, metavar="N",
                   help="the preprocessing stream confined to N SMs (a CUDA green context; "
                   "one GPU) while training keeps every SM, so a kernel ready between two "
                   "training kernels cannot take the SMs the next one needs; 0: every SM "
                   "(default: as the plan says, Plan.preprocess_sm_cap; a cap issues the "
                   "batches call by call, as --no-batch-graphs)")
    p.add_argument("--update-blocks-per-sm", type=int, metavar="N",
                   help="the fused embedding update on N blocks an SM, 0: a thread per bag "
                   "and column (default: as the plan says, Plan.update_blocks_per_sm, whose "
                   "0 is the trainer's 4; models with the fused update only; the cost "
                   "model's stage times were profiled on the trainer's: heavy-lean b32768's "
                   "ideal ran 16%% faster on 16)")
    p.add_argument("--feed-thread", action="store_true",
                   help="an experiment: each step's batch work (build, check and stage the "
                   "batches around it) on a second host thread during the step's backward "
                   "(by default the thread that launches the step does it after the step; "
                   "on the H200 the second thread measured no faster)")
    p.add_argument("--data", help="Criteo-format TSV input (default: synthetic)")
    p.add_argument("--seed", type=seed, default=d.seed,
                   help="seed of the synthetic batches and the model's initial weights")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                   help="cpu runs the same steps on the host, untimed by CUDA (for checks)")
    p.add_argument("-o", "--output", type=out_file, required=True,
                   help="the Measurement JSON to write")
    p.add_argument("--quiet", action="store_true", help=QUIET_HELP)


def build(args: argparse.Namespace):
    """The Executor the arguments describe (no device work yet)."""
    from corun.backend.executor import Executor
    from corun.backend.settings import RunSettings
    from corun.cli import command_line, progress
    from corun.plan_dir import plan_strategy
    from corun.sim.strategy import StrategyKind, host_workers_per_gpu, parse_strategy, strategy_plan
    from corun.spec import Plan, load
    from corun.workload import (
        plan_batch,
        resolve_hardware,
        resolve_model,
        resolve_pipeline,
        wants_graphs,
    )

    if args.data is not None:  # its first line parses before the trainer is built
        from corun.backend.data import DataError, read_criteo

        try:
            next(iter(read_criteo(args.data, chunk_rows=1)))
        except DataError as e:
            raise SpecError("--data", str(e), "a Criteo-format TSV file of well-formed "
                            "lines") from None
    if (args.plan is None) == (args.strategy is None):
        raise SpecError("plan", args.plan, "either a plan file or --strategy, not both")
    plan = load(Plan, args.plan) if args.plan else None
    model = resolve_model(args.model or (plan.model if plan else None) or "criteo-kaggle",
                          plan_batch(args, plan), wants_graphs(args, plan))
    pipeline = resolve_pipeline(args.pipeline or (plan.pipeline if plan else None) or "kaggle")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    hw = resolve_hardware(args.hardware, world, None, args.host_cores)
    strategy = None
    if plan is None:
        strategy = parse_strategy(args.strategy, hw)
        plan = strategy_plan(strategy, pipeline, model.name, hw, model)
        label = args.label or strategy.label
        replay = strategy.kind is StrategyKind.IDEAL
    else:
        label = args.label or plan_strategy(Path(args.plan).name) or Path(args.plan).stem
        replay = False
    settings = RunSettings(args.iterations, args.warmup, args.distinct_batches,
                           args.check, args.seed, args.data,
                           host_workers_per_gpu(strategy, hw),
                           preprocess_graphs=args.batch_graphs,
                           feed_thread=args.feed_thread, check_timed=args.check_timed,
                           assembly_stream=None if args.assembly_stream is None
                           else args.assembly_stream == "own",
                           preprocess_sm_cap=args.preprocess_sm_cap,
                           update_blocks_per_sm=args.update_blocks_per_sm)
    rank = int(os.environ.get("RANK", "0"))
    quiet = args.quiet or rank != 0
    say = progress(quiet)
    device = args.device
    if device == "cuda" and world > 1:
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    command = command_line()
    return Executor(model, pipeline, plan, label, settings, device, replay, command, say,
                    hardware=hw, iterations_done=iteration_bar(quiet))


def iteration_bar(quiet: bool):
    """An `Executor.iterations_done` that moves a progress bar with the time left (on a
    terminal only: corun.progress); it is told at each tenth of the iterations, between
    steps, so the bar costs the timed loop nothing more."""
    from corun.progress import bar

    shown = None

    def done(n: int, total: int) -> None:
        nonlocal shown
        if shown is None:
            shown = bar(total, "iterations", quiet, "it")
        shown.update(n - shown.n)
        shown.refresh()  # ten calls a run: each shows
        if n >= total:
            shown.close()

    return done


def run(args: argparse.Namespace) -> int:
    """One process, or one rank of a `torchrun` launch (WORLD_SIZE > 1: NCCL on GPUs,
    gloo with --device cpu); rank 0 writes the Measurement."""
    import torch
    import torch.distributed as dist

    if args.device == "cuda" and not torch.cuda.is_available():
        raise SpecError("--device", "cuda", "a machine with a CUDA GPU (or --device cpu to "
                        "run the same steps on the host, for a check)")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1 and not dist.is_initialized():
        if args.device == "cuda":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("nccl" if args.device == "cuda" else "gloo")
    code = 1
    try:
        code = _execute(args)
        return code
    finally:
        if world > 1 and dist.is_initialized():
            if code == 0:  # gloo aborted a rank (SIGABRT) whose peer closed first
                dist.barrier()  # not after a failure: the peer may sit in a collective
            dist.destroy_process_group()


def _execute(args: argparse.Namespace) -> int:
    from corun.backend.check import MismatchError
    from corun.backend.data import DataError
    from corun.backend.faults import ExecuteError
    from corun.spec.serde import save

    executor = build(args)
    try:
        m = executor.run()
    except DataError as e:
        raise SpecError("--data", str(e), "well-formed Criteo lines") from None
    except KeyboardInterrupt:
        print(f"corun: interrupted; no measurement written ({args.output} untouched)",
              file=sys.stderr)
        return 130
    except (ExecuteError, MismatchError) as e:
        print(f"corun: error: {e}; no measurement written", file=sys.stderr)
        return 1
    if executor.rank != 0:
        return 0
    save(m, args.output)
    stall = m.stall_ms_per_iteration
    print(f"{m.strategy}: {m.model}/{m.pipeline}, batch {m.batch_per_gpu} x {m.gpu_count} "
          f"GPU(s), {m.hardware}: iteration {m.iteration.median_ms:.3f} ms median (p10 "
          f"{m.iteration.p10_ms:.3f}, p90 {m.iteration.p90_ms:.3f}), "
          f"{m.throughput_samples_per_s:,.0f} samples/s, stall {stall:.3f} ms/iteration, "
          f"{m.checked_rows} rows checked -> {args.output}")
    return 0
