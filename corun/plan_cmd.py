"""`corun plan`: search the plan, compare it with every strategy, write plan and report."""

from __future__ import annotations

import argparse
import json
import time

from corun.out_folder import out_file, out_folder
from corun.spec import SpecError
from corun.workload import (
    BATCH_HELP,
    EMBEDDING_COMM_HELP,
    GPUS_HELP,
    HARDWARE_HELP,
    HOST_CORES_HELP,
    INTERCONNECT_HELP,
    MODEL_HELP,
    PIPELINE_HELP,
    QUIET_HELP,
    SIM_SEED_HELP,
    add_calibration_argument,
    add_cuda_graphs_argument,
    add_no_traces_argument,
    seed,
)

MAX_RUNNERS_UP = 8
"""Runners-up `corun plan` predicts at most (each one more full simulation)."""
HOST_PACED_STALL = 0.01
"""Ideal's predicted stall, as a share of its iteration, above which the host thread sets
the step's pace (the GPU waits for launches): the eager Criteo-like steps at b4096 stall
about a third of theirs, the graphed ones none."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="YAML/JSON file with any of these options")
    p.add_argument("--hardware", default="h200", help=HARDWARE_HELP + " (default: %(default)s)")
    p.add_argument("--gpus", type=int, default=1, help=GPUS_HELP + " (default: %(default)s)")
    p.add_argument("--interconnect", help=INTERCONNECT_HELP)
    p.add_argument("--host-cores", type=int, help=HOST_CORES_HELP)
    p.add_argument("--no-host-thread", dest="host_thread", action="store_false",
                   help="leave out the host thread that launches and feeds each GPU "
                   "(costmodel/host.py): the GPU side alone, as if launches were free")
    p.add_argument("--model", default="criteo-kaggle", help=MODEL_HELP + " (default: %(default)s)")
    p.add_argument("--pipeline", default="kaggle", help=PIPELINE_HELP + " (default: %(default)s)")
    p.add_argument("--batch", type=int, help=BATCH_HELP)
    add_cuda_graphs_argument(p)
    add_calibration_argument(p)
    p.add_argument("--time-limit", type=float, default=5.0, help="search seconds")
    p.add_argument("--iterations", type=int, default=30,
                   help="simulated iterations (with host CPU work at least 60, "
                   "after at least 20 of warm-up; a plan whose kernels still slide "
                   "against the step, again after 24: sim.simulate_steady)")
    p.add_argument("--seed", type=seed, default=0, help=SIM_SEED_HELP)
    p.add_argument("--embedding-comm", default="collective", choices=["collective", "pgas"],
                   help=EMBEDDING_COMM_HELP)
    p.add_argument("-o", "--output", type=out_file, help="write the chosen Plan here")
    p.add_argument("--out", type=out_folder, help="directory for plan.json (corun's), "
                   "plan-rap.json, predictions, traces and summary.md (replaced whole)")
    p.add_argument("--no-sm-cap", dest="sm_cap", action="store_false",
                   help="leave every plan's preprocessing on every SM: by default a plan "
                   "with a kernel that can race the eager step's training kernels for the "
                   "SMs is confined to three quarters of them (planner/sm_cap.py)")
    p.add_argument("--runners-up", type=int, default=0, metavar="K",
                   help="also predict and write (--out: plan-2.json ...) K plans to measure "
                        "beside the chosen one: the next-best schedule's best, then the "
                        "plans within 5%% of the choice most unlike those already picked "
                        "(planner/runners_up.py)")
    add_no_traces_argument(p)
    p.add_argument("--trace", type=out_file, help="write the chosen plan's Chrome trace here")
    p.add_argument("--json", action="store_true", help="print the Predictions as JSON")
    p.add_argument("--quiet", action="store_true", help=QUIET_HELP)


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from corun.advice import (
        gpu_side_note,
        host_plan_caution,
        launch_shape_note,
        lead_note,
        near_tie,
        sm_cap_note,
        time_limit_note,
        update_grid_note,
    )
    from corun.cli import command_line, progress, warn
    from corun.costmodel import shard_tables
    from corun.format import table
    from corun.out_folder import staged_folder
    from corun.plan_dir import SHARDING_PLAN_FILE, plan_file, runner_up_label
    from corun.planner import HEURISTICS, Judged, LocalSearch, SimJudge, runners_up
    from corun.planner.sm_cap import with_sm_cap
    from corun.progress import bar, time_bar
    from corun.sim import EmbeddingComm, Scenario, Strategy, StrategyKind, simulate_steady
    from corun.simulate_cmd import (
        comparison_table,
        print_caveats,
        strategies_for,
        write_outputs,
    )
    from corun.spec.formats import torchrec_sharding_plan
    from corun.spec.serde import dumps, save, write_atomic
    from corun.workload import (
        calibrated,
        on_machine,
        require_seconds,
        resolve_hardware,
        resolve_model,
        resolve_pipeline,
    )

    require_seconds("--time-limit", args.time_limit)
    if not 0 <= args.runners_up <= MAX_RUNNERS_UP:
        raise SpecError("--runners-up", args.runners_up,
                        f"an integer in [0, {MAX_RUNNERS_UP}]")
    hw = on_machine(resolve_hardware(args.hardware, args.gpus, args.interconnect,
                                     args.host_cores), args.machine, warn)
    model = resolve_model(args.model, args.batch, args.cuda_graphs)
    pipeline = resolve_pipeline(args.pipeline)
    base = Scenario(hw, model, pipeline, Strategy(StrategyKind.IDEAL),
                    iterations=args.iterations, seed=args.seed,
                    embedding_comm=EmbeddingComm(args.embedding_comm),
                    host_thread=args.host_thread)
    say = progress(args.quiet)
    base = calibrated(base, args.calibration, say)
    judge = SimJudge(base)

    say(f"planning {model.name}/{pipeline.name} on {hw.gpu_count} x {hw.gpu.name} "
        f"(time limit {args.time_limit:g} s) ...")
    heuristics = [(h, h().propose(judge, args.time_limit)) for h in HEURISTICS]
    # the bar runs over the time limit: the search stops there at the latest
    with time_bar(args.time_limit, "plan search", args.quiet) as shown:
        started = time.perf_counter()

        def progress(evals, best):
            shown.n = min(args.time_limit, time.perf_counter() - started)
            shown.set_postfix_str(f"{evals} plans, best {best.throughput_samples_per_s:,.0f} "
                                  f"samples/s, {len(best.plan.kernels)} kernels")

        search = LocalSearch(progress)
        chosen = search.propose(judge, args.time_limit)
    say(f"searched {judge.evaluations} plans "
        f"({'converged' if search.converged else 'stopped at the time limit'})")
    limit_note = time_limit_note(search.converged, judge.evaluations, args.time_limit)
    others = runners_up(judge.cache.values(), chosen.plan, args.runners_up)
    if args.sm_cap:  # a rule the simulator cannot weigh: planner/sm_cap.py
        chosen, *others = (replace(j, plan=with_sm_cap(judge, j.plan))
                           for j in (chosen, *others))
    strategies = strategies_for("all", hw, None)
    strategies += [Strategy(StrategyKind.PLAN, plan=j.plan, name=h.name,
                            caps_racing_kernels=h.caps_racing_kernels) for h, j in heuristics]
    strategies += [Strategy(StrategyKind.PLAN, plan=chosen.plan, name=LocalSearch.name)]
    strategies += [Strategy(StrategyKind.PLAN, plan=j.plan, name=runner_up_label(i))
                   for i, j in enumerate(others, start=2)]
    chosen_at = len(strategies) - len(others) - 1
    results = []
    with bar(len(strategies), "strategies simulated", args.quiet, "strategy") as shown:
        for s in strategies:
            results.append(simulate_steady(replace(base, strategy=s)))
            shown.update(1)
    preds = [r.prediction for r in results]

    graphed = graphs_whatif(base, chosen.plan, preds, say)
    capped = sm_cap_note(judge, chosen.plan)  # why the plan is capped, where it is
    grid = update_grid_note(model, chosen.plan, hw.gpu_count)
    extra = [line for line in (graphed, capped, grid) if line]

    def stamp(plan):  # a plan file says the batch and the step (graphed or not) it is for
        return replace(plan, cuda_graphs=model.cuda_graphs, batch_per_gpu=model.batch_per_gpu)

    if args.output:
        save(stamp(chosen.plan), args.output)
    if args.out:
        with staged_folder(args.out, command_line()) as out:
            write_outputs(out, results, extra, traces=not args.no_traces)
            save(stamp(chosen.plan), out / plan_file("corun"))
            for h, j in heuristics:
                save(stamp(j.plan), out / plan_file(h.name))
            for i, j in enumerate(others, start=2):
                save(stamp(j.plan), out / plan_file(runner_up_label(i)))
            # the chosen plan's table placement, for TorchRec's DistributedModelParallel
            owner = shard_tables(model, hw, chosen.plan.table_owner or None).owner
            write_atomic(out / SHARDING_PLAN_FILE,
                         json.dumps(torchrec_sharding_plan(model, owner), indent=1))
    if args.trace:
        results[chosen_at].write_trace(args.trace)
    if args.json:
        print(json.dumps([dumps(p) for p in preds], indent=1))
        return 0
    print(f"{model.name} / {pipeline.name} on {hw.gpu_count} x {hw.gpu.name}, batch "
          f"{model.batch_per_gpu} per GPU, cost model {results[0].compiled.cost_model}")
    print(comparison_table(preds))
    print_caveats(preds)
    for line in extra:
        print(line)
    if limit_note:
        print(limit_note)
    shown = {p.strategy: p.throughput_samples_per_s for p in preds}
    tune = f"corun tune {args.out}" if args.out else "corun tune DIR (plan with --out DIR)"
    if others:  # the runner-up as the table shows it, beside the chosen plan
        caution = near_tie(Judged(chosen.plan, shown["corun"], 0.0),
                           Judged(others[0].plan, shown["corun-2"], 0.0))
        if caution:
            print(caution + f"; `{tune}` runs them in rounds on the GPU and keeps the fastest")
        runner_up = others[0].plan
    else:  # both as the search judged them (its shorter simulations)
        nearest = runners_up(judge.cache.values(), chosen.plan, 1)
        caution = nearest and near_tie(judge.judge(chosen.plan), nearest[0])
        if caution:
            print(caution + "; --runners-up K --out DIR writes it as plan-2.json for `corun "
                  "tune DIR`")
        runner_up = nearest[0].plan if nearest else None
    note = runner_up and gpu_side_note(judge, judge.judge(chosen.plan), judge.judge(runner_up))
    if note:
        print(note)
    host_caution = host_plan_caution(chosen.plan)
    if host_caution:
        print(host_caution)
    ahead = lead_note(judge, judge.judge(chosen.plan))
    if ahead:
        print(ahead)
    ideal = next((p for p in preds if p.strategy == "ideal"), None)
    launch_note = ideal and launch_shape_note(
        chosen.plan, 100 * (1 - shown["corun"] / shown["ideal"]),
        host_paced=ideal.stall_ms_per_iteration > HOST_PACED_STALL * ideal.iteration_time_ms)
    if launch_note:
        print(f"{launch_note}: `{tune}`")
    kt = {k.kernel: k for k in preds[chosen_at].kernels}

    def alone(k) -> str:  # on several GPUs predictions name kernels gpu<g>/<name>
        key = k.name if hw.gpu_count == 1 else f"gpu{k.gpu or 0}/{k.name}"
        return f"{kt[key].standalone_ms:.3f}" if key in kt else "-"

    rows = [[k.name, k.stage, len(k.nodes), k.blocks, k.threads_per_block, alone(k)]
            for k in chosen.plan.kernels]
    plan = chosen.plan
    owners = sum(1 for v in plan.feature_mapping.values() if v.value == "owner")
    print(f"\nchosen plan (corun): {len(plan.kernels)} fused kernel(s), "
          f"{len(plan.cpu_nodes)} of {len(pipeline.nodes)} op nodes on the host CPU, "
          f"{owners} feature(s) preprocessed by their table's owner GPU, training stream "
          f"{'above' if plan.training_priority_high else 'at the same priority as'} "
          f"preprocessing, each batch preprocessed {plan.batches_ahead} iteration(s) ahead "
          "of its step" + (f", on {plan.preprocess_sm_cap} of the GPU's {hw.gpu.sm_count} SMs"
                           if plan.preprocess_sm_cap else ""))
    if rows:
        print(table(["kernel", "released at", "op nodes", "blocks", "threads", "alone ms"],
                    rows))
    return 0


def graphs_whatif(base, plan, preds, say) -> str | None:
    """Where the host thread paces the eager step and the trainer could replay it as CUDA
    graphs (the `hint:` under the table), ideal and the chosen plan simulated with the
    graphed step: what --cuda-graphs would give, on this plan (no second search)."""
    from dataclasses import replace

    from corun.advice import graphed_whatif_note
    from corun.sim import Strategy, StrategyKind, simulate_steady
    from corun.spec.findings import FindingKind, find

    if not any(find(p.findings, FindingKind.HOST_PACES_EAGER) for p in preds):
        return None
    say("what-if: ideal and the chosen plan with the step replayed as CUDA graphs ...")
    graphed = replace(base, model=replace(base.model, cuda_graphs=True))
    ideal, mine = (simulate_steady(replace(graphed, strategy=s)).prediction for s in (
        Strategy(StrategyKind.IDEAL), Strategy(StrategyKind.PLAN, plan=plan, name="corun")))
    eager = next(p for p in preds if p.strategy == "ideal")
    return graphed_whatif_note(ideal, mine, eager)
