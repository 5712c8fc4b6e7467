"""`corun simulate`: predict one strategy or compare them all."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from corun.advice import shown
from corun.format import table
from corun.out_folder import out_file, out_folder
from corun.plan_dir import prediction_file, trace_file
from corun.progress import bar
from corun.sim import (
    EmbeddingComm,
    Scenario,
    SimResult,
    Strategy,
    StrategyKind,
    parse_strategy,
    simulate_steady,
)
from corun.spec import Hardware, Plan, Prediction, SpecError
from corun.spec.serde import dumps, load, save, write_atomic
from corun.workload import (
    EMBEDDING_COMM_HELP,
    GPUS_HELP,
    HARDWARE_HELP,
    HOST_CORES_HELP,
    INTERCONNECT_HELP,
    QUIET_HELP,
    SIM_SEED_HELP,
    add_calibration_argument,
    add_cuda_graphs_argument,
    add_no_traces_argument,
    calibrated,
    on_machine,
    plan_batch,
    resolve_hardware,
    resolve_model,
    resolve_pipeline,
    seed,
    wants_graphs,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="YAML/JSON file with any of these options")
    p.add_argument("--hardware", default="h200", help=HARDWARE_HELP + " (default: %(default)s)")
    p.add_argument("--gpus", type=int, default=1, help=GPUS_HELP + " (default: %(default)s)")
    p.add_argument("--interconnect", help=INTERCONNECT_HELP)
    p.add_argument("--host-cores", type=int, help=HOST_CORES_HELP)
    p.add_argument("--no-host-thread", dest="host_thread", action="store_false",
                   help="leave out the host thread that launches and feeds each GPU "
                   "(costmodel/host.py): the GPU side alone, as if launches were free")
    p.add_argument("--model", help="model preset or file (default: the --plan's, else "
                   "criteo-kaggle)")
    p.add_argument("--pipeline", help="pipeline preset or file (default: the --plan's, "
                   "else kaggle)")
    p.add_argument("--batch", type=int, help="batch per GPU (default: the --plan's, else "
                   "the model's)")
    add_cuda_graphs_argument(p)
    add_calibration_argument(p)
    p.add_argument("--strategy", default="all",
                   help="ideal, cpu:N, gpu-sequential, gpu-overlap, plan, or all")
    p.add_argument("--plan", help="Plan file (for --strategy plan, or added to all)")
    p.add_argument("--iterations", type=int, default=30,
                   help="simulated iterations (with host CPU work at least 60, "
                   "after at least 20 of warm-up; a plan whose kernels still slide "
                   "against the step, again after 24: sim.simulate_steady)")
    p.add_argument("--warmup", type=int, default=5,
                   help="simulated iterations before those measured (default: %(default)s)")
    p.add_argument("--seed", type=seed, default=0, help=SIM_SEED_HELP)
    p.add_argument("--jitter", type=float, default=0.0,
                   help="coefficient of variation of durations (0: deterministic times)")
    p.add_argument("--embedding-comm", default="collective", choices=["collective", "pgas"],
                   help=EMBEDDING_COMM_HELP)
    p.add_argument("--json", action="store_true", help="print Prediction JSON")
    p.add_argument("--trace", type=out_file, help="write the Chrome trace here (one strategy)")
    p.add_argument("--out", type=out_folder,
                   help="directory for predictions, traces and summary.md (replaced whole)")
    add_no_traces_argument(p)
    p.add_argument("--quiet", action="store_true", help=QUIET_HELP)


def strategies_for(text: str, hw: Hardware, plan: Plan | None) -> list[Strategy]:
    if text == "all":
        cores = hw.host_cpu_cores
        counts = sorted({max(1, cores // 4), max(1, cores // 2), cores})
        out = [Strategy(StrategyKind.IDEAL)] + [Strategy(StrategyKind.CPU, c) for c in counts]
        out += [Strategy(StrategyKind.GPU_SEQUENTIAL), Strategy(StrategyKind.GPU_OVERLAP)]
        if plan is not None:
            out.append(Strategy(StrategyKind.PLAN, plan=plan))
        return out
    if text == "plan":
        if plan is None:
            raise SpecError("--plan", None, "a Plan file when --strategy is plan")
        return [Strategy(StrategyKind.PLAN, plan=plan)]
    return [parse_strategy(text, hw)]


def comparison_table(preds: list[Prediction]) -> str:
    ideal = next((p for p in preds if p.strategy == "ideal"), None)
    rows = []
    for p in preds:
        pct = f"{100 * p.throughput_samples_per_s / ideal.throughput_samples_per_s:.1f}%" \
            if ideal else "-"
        rows.append([p.strategy, f"{p.mean_iteration_ms:.3f}", f"{p.throughput_samples_per_s:,.0f}",
                     pct, f"{p.stall_ms_per_iteration:.3f}",
                     f"{100 * min(p.gpu_utilisation):.0f}%"])
    return table(["strategy", "mean iteration ms", "samples/s", "of ideal", "stall ms",
                  "min GPU busy"], rows)


def print_caveats(preds: list[Prediction]) -> None:
    """The lines the predictions' findings show (corun.advice.shown)."""
    for line in shown(preds):
        print(line)


def run(args: argparse.Namespace) -> int:
    from corun.cli import progress, warn

    hw = on_machine(resolve_hardware(args.hardware, args.gpus, args.interconnect,
                                     args.host_cores), args.machine, warn)
    plan = load(Plan, args.plan) if args.plan else None
    model = resolve_model(args.model or (plan.model if plan else "criteo-kaggle"),
                          plan_batch(args, plan), wants_graphs(args, plan))
    pipeline = resolve_pipeline(args.pipeline or (plan.pipeline if plan else "kaggle"))
    strategies = strategies_for(args.strategy, hw, plan)
    if args.trace and len(strategies) > 1:
        raise SpecError("--trace", args.trace, "one strategy (use --out DIR for all)")
    say = progress(args.quiet)
    base = calibrated(Scenario(hw, model, pipeline, strategies[0], iterations=args.iterations,
                               warmup=args.warmup, seed=args.seed, jitter_cv=args.jitter,
                               embedding_comm=EmbeddingComm(args.embedding_comm),
                               host_thread=args.host_thread), args.calibration, say)
    results: list[SimResult] = []
    with bar(len(strategies), "strategies simulated", args.quiet, "strategy") as shown:
        for s in strategies:
            results.append(simulate_steady(replace(base, strategy=s)))
            shown.update(1)
    preds = [r.prediction for r in results]
    if args.trace:
        results[0].write_trace(args.trace)
    if args.out:
        from corun.cli import command_line
        from corun.out_folder import staged_folder

        with staged_folder(args.out, command_line()) as out:
            write_outputs(out, results, traces=not args.no_traces)
    if args.json:
        docs = [dumps(p) for p in preds]
        print(json.dumps(docs[0] if len(docs) == 1 else docs, indent=1))
    else:
        print(f"{model.name} / {pipeline.name} on {hw.gpu_count} x {hw.gpu.name}, batch "
              f"{model.batch_per_gpu} per GPU, cost model {results[0].compiled.cost_model}")
        print(comparison_table(preds))
        print_caveats(preds)
    return 0


def write_outputs(out: Path, results: list[SimResult], extra: Sequence[str] = (),
                  traces: bool = True) -> None:
    """Each strategy's prediction and (with `traces`) its timeline, and summary.md: the
    comparison, its caveats and the `extra` lines, into `out` (a staged folder: an
    earlier run's files are not carried into it)."""
    out.mkdir(parents=True, exist_ok=True)
    for r in results:
        save(r.prediction, out / prediction_file(r.prediction.strategy))
        if traces:
            r.write_trace(out / trace_file(r.prediction.strategy))
    preds = [r.prediction for r in results]
    p0 = preds[0]
    text = (f"# Predicted strategies: {p0.model} / {p0.pipeline} on {p0.gpu_count} x "
            f"{p0.hardware}\n\nBatch {p0.batch_per_gpu} per GPU; cost model "
            f"{p0.provenance.cost_model}; commit {p0.provenance.git_commit}; "
            f"{p0.iterations} simulated iterations.\n\n```\n{comparison_table(preds)}\n```\n\n"
            + "".join(f"{c}\n\n" for c in [*shown(preds), *extra])
            + ("Open a `trace-*.json` in https://ui.perfetto.dev or chrome://tracing.\n"
               if traces else ""))
    write_atomic(out / "summary.md", text)
