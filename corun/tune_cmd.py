"""`corun tune`: run a plan folder's plans on this GPU in rounds and keep the fastest.

`corun plan --runners-up K --out DIR` writes the chosen plan and K runners-up: the best of
the next-best schedule, then plans within 5% of the choice that differ from it most
(planner/runners_up.py), all predicted within the cost model's error of each other, so
which one is fastest is for the GPU to say. Every round runs
each strategy once, in a turned order, in one process (one trainer, the same batches),
and shares are taken against the round's own ideal, so a host whose pace drifts between
rounds moves every strategy of a round alike. A round counts each strategy by its mean
iteration, as the throughput does (Measurement.mean_iteration_ms: every slow step
counted, where the median step counts none). The fastest plan by its median over the
rounds is written as tuned.json, with the measurements and a table of predicted against
measured ranks.

Where the chosen plan runs, so do variants of it in the decisions the cost model is least
sure of (`--variants`, `Variant`): other launch shapes, the other batch lead, the
assemblies on the other stream, its preprocessing on a cap of SMs, its ngram lists
computed source first, and, for a model with the fused embedding update, the update on
other grids. The simulator models none of the stream, cap and grid variants: their
predictions are the chosen plan's (a baseline's grid variants: the baseline's).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from functools import partial
from pathlib import Path

from corun.out_folder import out_folder
from corun.spec import SpecError
from corun.spec.plan import (
    CAP_SHARES,
    MAX_UPDATE_BLOCKS_PER_SM,
    TRAINER_UPDATE_BLOCKS_PER_SM,
    UPDATE_GRIDS,
    cap_sms,
)
from corun.workload import QUIET_HELP, add_run_arguments, int_list, require_seconds, seed

BASELINES = ("ideal", "gpu-sequential", "gpu-overlap")
MAX_ROUNDS = 50


class Variant(StrEnum):
    """A kind of variant of the chosen plan that `corun tune` runs beside it."""

    LAUNCH_STEPS = "launch-steps"
    LEAD = "lead"
    STREAM = "stream"
    CAP = "cap"
    SOURCE_FIRST = "source-first"
    GRID = "grid"

    @property
    def help(self) -> str:
        return {
            Variant.LAUNCH_STEPS: "every kernel's blocks times each of the search's launch "
            "steps (corun-x2, -x0.5, -x1.5, -x0.75)",
            Variant.LEAD: "its other batch lead (corun-ahead<N>)",
            Variant.STREAM: "its batches' assemblies the other way (corun-own or "
            "corun-behind)",
            Variant.CAP: "its preprocessing confined to each of --cap-sms SMs, and on "
            "every SM (corun-cap<N>, corun-uncapped; one GPU)",
            Variant.SOURCE_FIRST: "its lists made by one ngram computed once per element of "
            "the ngram's input (corun-src; FusedKernel.source_first)",
            Variant.GRID: "ideal, gpu-sequential, the choice and its cap variants with the "
            "fused embedding update on each of --update-grids (+ub<N>, -ub<N>)",
        }[self]


def parse_variants(text: str) -> frozenset[Variant]:
    """`--variants`: names from Variant, `all` or `none`."""
    if text == "all":
        return frozenset(Variant)
    if text == "none":
        return frozenset()
    allowed = ", ".join(v.value for v in Variant)
    out = set()
    for name in text.split(","):
        if name not in {v.value for v in Variant}:
            raise SpecError("--variants", name, f"all, none, or a list of {allowed}")
        out.add(Variant(name))
    return frozenset(out)


def add_arguments(p: argparse.ArgumentParser) -> None:
    from corun.backend.settings import RunSettings

    d = RunSettings()
    p.add_argument("plans", help="a plan folder written by `corun plan --out DIR` (best with "
                   "--runners-up K)")
    p.add_argument("--strategies", help="comma-separated: ideal, gpu-sequential, gpu-overlap "
                   "and the folder's plans (corun, corun-<N>, rap); default: ideal, "
                   "gpu-sequential, corun and every runner-up in the folder")
    p.add_argument("--rounds", type=int, default=3,
                   help=f"rounds of every strategy (1-{MAX_ROUNDS}; default 3)")
    p.add_argument("--model", help="model preset or file (default: the folder's, by name)")
    p.add_argument("--pipeline", help="pipeline preset or file (default: the folder's)")
    p.add_argument("--machine", metavar="MACHINE.json",
                   help="the machine profile the folder was planned with (`corun plan "
                   "--machine`): the chosen plan's variants are predicted for it too")
    add_run_arguments(p)
    p.add_argument("--variants", default="all", metavar="V[,V...]",
                   help="variants of the folder's chosen plan to run beside it, where the "
                   "model is least sure (default all; none for none): "
                   + "; ".join(f"{v.value}: {v.help}" for v in Variant))
    p.add_argument("--update-grids", metavar="N[,N...]",
                   help="those grids, in blocks an SM (default: "
                   + ",".join(map(str, UPDATE_GRIDS))
                   + f"; the trainer's own is {TRAINER_UPDATE_BLOCKS_PER_SM}; "
                   "spec.plan.UPDATE_GRIDS)")
    p.add_argument("--cap-sms", metavar="N[,N...]",
                   help="the caps of those variants, in SMs (default: three quarters and "
                   "half of the GPU's, rounded down to the green contexts' 8: 96,64 on an "
                   "H200; spec.plan.CAP_SHARES)")
    p.add_argument("--budget-s", type=float,
                   help="start no round after this many seconds (the rounds done count)")
    p.add_argument("--seed", type=seed, default=d.seed,
                   help="seed of the synthetic batches and the model's initial weights")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                   help="cpu runs the same steps on the host, untimed by CUDA (for checks)")
    p.add_argument("--out", type=out_folder, required=True,
                   help="output folder: tuned.json, tune.md, tune.json, one Measurement per "
                   "strategy (its median round, for `corun report`) and rounds/")
    p.add_argument("--quiet", action="store_true", help=QUIET_HELP)


@dataclass(frozen=True)
class Workload:
    """What the plan folder was planned for, from its chosen plan's prediction."""

    model: str
    pipeline: str
    batch: int
    gpu_count: int
    cuda_graphs: bool


def read_workload(folder: Path) -> Workload:
    from corun.plan_dir import plan_file, prediction_file
    from corun.spec import Plan, Prediction, load

    plan_path, pred_path = folder / plan_file("corun"), folder / prediction_file("corun")
    for path in (plan_path, pred_path):
        if not path.is_file():
            raise SpecError("plans", str(folder), f"a folder written by `corun plan --out` "
                            f"(it has no {path.name})")
    pred, plan = load(Prediction, pred_path), load(Plan, plan_path)
    return Workload(pred.model, pred.pipeline, pred.batch_per_gpu, pred.gpu_count,
                    plan.cuda_graphs)


def require_named_specs(args: argparse.Namespace, work: Workload) -> None:
    """The folder names its model and pipeline; where a name is not a preset (a spec made
    in code or loaded from a file when the folder was planned), the file must be given."""
    from corun import spec

    for flag, given, name, presets in (("--model", args.model, work.model, spec.MODEL_PRESETS),
                                       ("--pipeline", args.pipeline, work.pipeline,
                                        spec.PIPELINE_PRESETS)):
        if given is None and name not in presets:
            what = flag.removeprefix("--")
            raise SpecError(flag, None, f"a {what} file (.json or .yaml): the folder's {what} "
                            f"{name!r} is not a preset")


def choose_strategies(text: str | None, planned: list[str]) -> list[str]:
    """The strategies to run, in the order given; each a baseline or a plan in the folder."""
    if text is None:
        from corun.planner import HEURISTICS

        heuristics = {h.name for h in HEURISTICS}
        return ["ideal", "gpu-sequential"] + [s for s in planned if s not in heuristics]
    names = [s.strip() for s in text.split(",") if s.strip()]
    allowed = list(BASELINES) + planned
    for s in names:
        if s not in allowed:
            raise SpecError("--strategies", s, f"one of {', '.join(allowed)}")
    if len(set(names)) != len(names):
        raise SpecError("--strategies", text, "each strategy once")
    if not any(s != "ideal" for s in names):
        raise SpecError("--strategies", text, "at least one strategy besides ideal")
    return names


def run(args: argparse.Namespace) -> int:
    import os

    import torch

    from corun.plan_dir import planned_strategies
    from corun.workload import require_run_length

    if not 1 <= args.rounds <= MAX_ROUNDS:
        raise SpecError("--rounds", args.rounds, f"an integer in [1, {MAX_ROUNDS}]")
    if args.budget_s is not None:
        require_seconds("--budget-s", args.budget_s)
    require_run_length(args)
    folder = Path(args.plans)
    if not folder.is_dir():
        raise SpecError("plans", args.plans, "a folder written by `corun plan --out DIR`")
    work = read_workload(folder)
    if work.gpu_count != 1 or int(os.environ.get("WORLD_SIZE", "1")) != 1:
        raise SpecError("plans", f"{folder} ({work.gpu_count} GPUs)",
                        "a one-GPU plan folder, run as one process (on N GPUs, measure each "
                        "plan with `torchrun ... corun execute`)")
    require_named_specs(args, work)
    strategies = choose_strategies(args.strategies, planned_strategies(folder))
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SpecError("--device", "cuda", "a machine with a CUDA GPU (or --device cpu to "
                        "run the same steps on the host, for a check)")
    return _tune(args, folder, work, strategies)


def _tune(args, folder: Path, work: Workload, strategies: list[str]) -> int:
    from corun.backend.check import MismatchError
    from corun.backend.executor import Executor
    from corun.backend.faults import ExecuteError
    from corun.backend.settings import RunSettings
    from corun.cli import command_line, progress, warn
    from corun.plan_dir import plan_file, prediction_file
    from corun.progress import bar
    from corun.reports.rounds import turned_order
    from corun.sim.strategy import StrategyKind, host_workers_per_gpu, parse_strategy, strategy_plan
    from corun.spec import Plan, load
    from corun.spec.serde import save
    from corun.workload import on_machine, resolve_hardware, resolve_model, resolve_pipeline

    say = progress(args.quiet)
    model = resolve_model(args.model or work.model, work.batch, work.cuda_graphs)
    pipeline = resolve_pipeline(args.pipeline or work.pipeline)
    hw = on_machine(resolve_hardware(args.hardware, 1, None, None), args.machine, warn)
    plans, kinds = {}, {}
    for s in strategies:
        if s in BASELINES:
            kinds[s] = parse_strategy(s, hw)
            plans[s] = strategy_plan(kinds[s], pipeline, model.name, hw)
        else:
            kinds[s] = None
            plans[s] = load(Plan, folder / plan_file(s))
    predicted = {}
    wanted = parse_variants(args.variants)
    if "corun" in strategies and wanted - {Variant.GRID}:
        chosen = plans["corun"]
        variants = launch_variants(chosen, plans.values(), pipeline) \
            if Variant.LAUNCH_STEPS in wanted else {}
        sms = hw.gpu.sm_count
        caps = tuple(cap_sms(sms, share) for share in CAP_SHARES) if args.cap_sms is None \
            else tuple(int_list(args.cap_sms, "--cap-sms"))
        for cap in caps:
            if not 8 <= cap <= sms - 8:
                raise SpecError("--cap-sms", cap, f"integers in [8, {sms - 8}] on the "
                                f"{hw.gpu.name}'s {sms} SMs (training keeps at least 8)")
        capped = cap_variant_runs(Variant.CAP in wanted, args.device, say)
        for run_it, variant in ((Variant.LEAD in wanted, lead_variant),
                                (Variant.STREAM in wanted, stream_variant),
                                (capped, partial(cap_variants, caps=caps)),
                                (Variant.SOURCE_FIRST in wanted,
                                 partial(source_first_variant, pipeline=pipeline))):
            if run_it:
                variants.update(variant(chosen, [*plans.values(), *variants.values()]))
        plans.update(variants)
        kinds.update(dict.fromkeys(variants))
        strategies = strategies + list(variants)
        say(f"predicting {len(variants)} variant(s) of the chosen plan ...")
        predicted = variant_predictions(folder, chosen, variants, hw, model, pipeline)
    grids = update_grids(args)
    if grids and Variant.GRID in wanted and model.embedding_update.fused:
        # ideal, gpu-sequential, the choice and its cap variants (not its other variants)
        gridded = grid_variants({s: plans[s] for s in strategies if s in BASELINES[:2]
                                 or s == "corun" or s in cap_names(strategies)}, grids)
        for name, (base, plan) in gridded.items():
            plans[name], kinds[name] = plan, kinds[base]
            predicted[name] = grid_prediction(folder, base, name, predicted)
        strategies = strategies + list(gridded)
    base = RunSettings(args.iterations, args.warmup, args.distinct_batches, args.check,
                       args.seed, check_timed=args.check_timed)  # checked before any write
    out = Path(args.out)
    (out / "rounds").mkdir(parents=True, exist_ok=True)
    command = command_line()
    trainer, inputs = None, {}
    measured: dict[int, dict] = {}
    t_start = time.perf_counter()
    say(f"tuning {model.name}/{pipeline.name} b{model.batch_per_gpu}: "
        f"{', '.join(strategies)}, {args.rounds} round(s)")
    runs = bar(len(strategies) * args.rounds, "runs", args.quiet, "run")
    for rnd, s in turned_order(strategies, args.rounds):
        if rnd not in measured:
            if args.budget_s is not None and time.perf_counter() - t_start > args.budget_s:
                say(f"--budget-s {args.budget_s:g} spent: {rnd} round(s) done")
                break
            measured[rnd] = {}
        settings = replace(base, cpu_workers=host_workers_per_gpu(kinds[s], hw))
        ex = Executor(model, pipeline, plans[s], s, settings, args.device,
                      kinds[s] is not None and kinds[s].kind is StrategyKind.IDEAL,
                      command, say, trainer=trainer, hardware=hw, inputs=inputs)
        try:
            m = ex.run()
        except (ExecuteError, MismatchError) as e:
            runs.close()
            print(f"corun: error: {s} in round {rnd + 1}: {e}; the rounds before it are in "
                  f"{out / 'rounds'}, no summary written", file=sys.stderr)
            return 1
        trainer = ex.trainer
        save(m, out / "rounds" / f"{s}-r{rnd + 1}.json")
        measured[rnd][s] = m
        runs.update(1)
        say(f"  round {rnd + 1}: {s} {m.mean_iteration_ms:.3f} ms an iteration "
            f"(median step {m.iteration.median_ms:.3f})")
    runs.close()
    complete = {r: ms for r, ms in measured.items() if len(ms) == len(strategies)}
    if not complete:
        print(f"corun: error: no round completed within --budget-s {args.budget_s:g}; "
              f"the measurements taken are in {out / 'rounds'}", file=sys.stderr)
        return 1
    summary = summarise(complete, folder, strategies, predicted)
    for s in strategies:  # each median round beside its prediction: `corun report OUT`
        save(median_round(complete, s), out / f"{s}.json")
        pred = strategy_prediction(folder, s, predicted)
        if pred is not None:
            save(pred, out / prediction_file(s))
    winner = summary["measured_best"]
    tuned = out / "tuned.json"
    save(plans[winner], tuned)
    write_summary(out, summary, command)
    print(render(summary))
    print(f"tuned plan: {winner} -> {tuned}")
    return 0


def launch_variants(chosen, taken, pipeline) -> dict:
    """The chosen plan with every kernel's blocks times each of the search's launch steps
    (planner.search.LAUNCH_STEPS), at least a block per chain of the kernel (as
    Plan.check_pipeline asks), by name (corun-x<step>), leaving out any plan already
    run. The launch shape is what the learned cost model is least sure of (held-out error
    of a kernel's co-run time 22-62% over three splits, costmodel/data/h200/README.md): on
    graphed heavy-lean b16384 the chosen 396 blocks at interaction_bwd recovered 74-77% of
    gpu-sequential's gap on three H200s and the same kernel in 198 blocks 81-84%,
    predicted 0.12 ms behind it; `corun tune` kept that
    x0.5 in three runs, the fastest in 9 of 9 rounds, so the variants run by default."""
    from corun.planner.search import LAUNCH_STEPS

    out, seen = {}, list(taken)
    for step in LAUNCH_STEPS:
        plan = replace(chosen, kernels=tuple(
            replace(k, blocks=max(len(pipeline.sinks(k.nodes)), 1, int(k.blocks * step)))
            for k in chosen.kernels))
        if plan not in seen:
            out[f"corun-x{step:g}"] = plan
            seen.append(plan)
    return out


def lead_variant(chosen, taken) -> dict:
    """The chosen plan with its other batch lead (Plan.batches_ahead: 2 for 1, 1 for 2),
    by name (corun-ahead<N>), unless it has no kernel on the GPU or that plan already
    runs. Graphed heavy-short b16384: the
    planner chose the pipeline in 1056 blocks at emb_bwd one batch ahead, predicted 0.025
    ms ahead of the same kernel two ahead; side by side two ahead measured 5.7% faster
    (42% of gpu-sequential's gap recovered against 23%), and no variant `corun tune` ran
    then had that lead. The simulator's account of a kernel carried into the next step
    is where it is least sure between the two."""
    if not chosen.kernels:
        return {}
    ahead = 3 - chosen.batches_ahead
    plan = replace(chosen, batches_ahead=ahead)
    return {} if plan in list(taken) else {f"corun-ahead{ahead}": plan}


def stream_variant(chosen, taken) -> dict:
    """The chosen plan with its batches' assemblies the other way (Plan.assembly_stream),
    by name (corun-own, corun-behind), unless it has no kernel on the GPU, confines its
    preprocessing to some SMs (the assemblies then stay on the kernels' stream and its
    SMs, backend/streams.py: the variant would run the chosen plan again) or that plan
    already runs. Which way is faster turns on whether an assembly runs into the next
    step, which the simulator does not model: graphed heavy-rehash b16384's choice ran
    3.71-3.73 ms an iteration on a stream of its own and 4.22-4.35 behind, the graphed
    Criteo-like plans 0.6-0.7% slower on their own."""
    if not chosen.kernels or chosen.preprocess_sm_cap:
        return {}
    plan = replace(chosen, assembly_stream=not chosen.assembly_stream)
    name = "corun-own" if plan.assembly_stream else "corun-behind"
    return {} if plan in list(taken) else {name: plan}


def source_first_variant(chosen, taken, pipeline) -> dict:
    """The chosen plan with every kernel's source_first on (FusedKernel.source_first),
    by name (corun-src), unless none of its kernels writes a list made by one ngram
    (Pipeline.source_first_sinks), it is on already or that plan already runs. The
    cost model's kernel timings are of kernels without it, which bound the time of one
    with it from above (KernelWork.bound_key), so which is faster beside training is for
    the GPU to say."""
    if not any(pipeline.source_first_sinks(k.nodes) for k in chosen.kernels):
        return {}
    plan = replace(chosen, kernels=tuple(replace(k, source_first=True)
                                         for k in chosen.kernels))
    return {} if plan == chosen or plan in list(taken) else {"corun-src": plan}


def cap_variant_runs(wanted: bool, device: str, say) -> bool:
    """Whether tune runs the cap variant: asked for, and on a GPU whose driver makes green
    contexts (backend/sm_split.py); where it cannot, it is left out, and `say` says why.
    On the CPU it runs as the plan on every SM would (there are no SMs to confine)."""
    if not wanted or device == "cpu":
        return wanted
    from corun.backend.sm_split import green_contexts_supported

    if green_contexts_supported():
        return True
    say("the cap variant is left out: this machine's CUDA driver cannot make green "
        "contexts (12.4 or later, with cuda-bindings)")
    return False


def cap_variants(chosen, taken, caps: tuple[int, ...]) -> dict:
    """The chosen plan with its preprocessing confined to each of `caps` SMs
    (Plan.preprocess_sm_cap) and on every SM, less the way it already runs, by name
    (corun-cap<N>, corun-uncapped), unless it has no kernel on the GPU, runs on several
    GPUs, or that plan already runs. Whether a kernel that becomes ready between two
    training kernels takes the SMs the next one needs is a race the simulator does not
    model, and which cap is fastest differed between workloads (spec.plan.CAP_SHARES)."""
    if not chosen.kernels or chosen.gpu_count > 1:
        return {}
    out, seen = {}, list(taken)
    for cap in (*caps, 0):
        plan = replace(chosen, preprocess_sm_cap=cap)
        if cap != chosen.preprocess_sm_cap and plan not in seen:
            out[f"corun-cap{cap}" if cap else "corun-uncapped"] = plan
            seen.append(plan)
    return out


def update_grids(args: argparse.Namespace) -> tuple[int, ...]:
    """The fused update's grids the grid variants run on (--update-grids, else
    UPDATE_GRIDS), each checked against the range Plan.update_blocks_per_sm takes."""
    grids = UPDATE_GRIDS if args.update_grids is None else tuple(
        int_list(args.update_grids, "--update-grids"))
    for n in grids:
        if not 1 <= n <= MAX_UPDATE_BLOCKS_PER_SM:
            raise SpecError("--update-grids", n,
                            f"integers in [1, {MAX_UPDATE_BLOCKS_PER_SM}] (blocks an SM)")
    return grids


def cap_names(strategies: list[str]) -> list[str]:
    """The cap variants among `strategies` (cap_variants' names)."""
    return [s for s in strategies if s.startswith("corun-cap") or s == "corun-uncapped"]


def grid_variants(plans: dict, grids: tuple[int, ...]) -> dict:
    """Each of `plans` (name -> Plan) with the fused embedding update on each of `grids`
    blocks an SM (Plan.update_blocks_per_sm), as name -> (its base's name, plan):
    "<baseline>+ub<N>" for ideal and gpu-sequential (ideal's variant, like ideal, never
    counts as a round's fastest), "<plan>-ub<N>" for the others, less those already on
    that grid. On heavy-lean beside heavy-rehash b32768 the update ran 1.1 ms faster on
    16 blocks an SM than on the trainer's 4; eager, the capped choice's preprocessing then
    found no room (on 64 SMs 60% of that grid's gap), while graphed the choice on every SM
    recovered 82-84% and tune kept it."""
    out = {}
    for n in grids:
        for name, plan in plans.items():
            if plan.update_blocks_per_sm != n:
                out[f"{name}+ub{n}" if name in BASELINES else f"{name}-ub{n}"] = (
                    name, replace(plan, update_blocks_per_sm=n))
    return out


def grid_prediction(folder: Path, base: str, name: str, predicted: dict):
    """A grid variant's Prediction: its base strategy's (the folder's file or a variant's
    in `predicted`) under the variant's name, with a caution: the simulator does not
    model the grid."""
    from corun.spec.findings import FindingKind, finding

    p = strategy_prediction(folder, base, predicted)
    if p is None:
        return None
    return replace(p, strategy=name, findings=(
        *p.findings, finding(FindingKind.GRID_VARIANT, variant=name, base=base)))


def variant_predictions(folder: Path, chosen, variants: dict, hw, model, pipeline) -> dict:
    """Each variant's Prediction (named as the variant), simulated as `corun simulate`
    would and scaled by the folder's prediction for its `chosen` plan over the same
    simulation of it (a folder planned with --calibration or other settings keeps its
    scale; the scale is taken between mean iterations, as tune compares)."""
    from corun.plan_dir import prediction_file
    from corun.sim import Scenario, Strategy, StrategyKind, simulate_steady
    from corun.spec import Prediction, load

    def simulated(plan) -> Prediction:
        sc = Scenario(hw, model, pipeline, Strategy(StrategyKind.PLAN, plan=plan))
        return simulate_steady(sc).prediction

    scale = (load(Prediction, folder / prediction_file("corun")).mean_iteration_ms
             / simulated(chosen).mean_iteration_ms)
    out = {}
    for name, plan in variants.items():
        p = simulated(plan)
        out[name] = replace(p, strategy=name, iteration_time_ms=scale * p.iteration_time_ms,
                            throughput_samples_per_s=p.throughput_samples_per_s / scale)
    return out


def median_round(rounds: dict[int, dict], strategy: str):
    """The strategy's Measurement from the round whose mean iteration is the median of
    its rounds (the lower middle one of an even count)."""
    ms = sorted((m[strategy].mean_iteration_ms, r) for r, m in rounds.items())
    return rounds[ms[(len(ms) - 1) // 2][1]][strategy]


def summarise(rounds: dict[int, dict], folder: Path, strategies: list[str],
              predicted: dict | None = None) -> dict:
    """Per strategy the rounds' statistics (reports.rounds) beside its predicted mean
    iteration, from its prediction in the folder (or in `predicted`, name -> Prediction,
    for plans the folder does not hold); the predicted and
    measured ranks of the strategies other than ideal; the measured fastest, and whether
    it is the one the planner chose."""
    from corun.reports.rounds import is_ideal, round_stats
    from corun.spec.ranking import predicted_rank_key

    stats = round_stats({r: {s: m[s].mean_iteration_ms for s in strategies}
                         for r, m in rounds.items()})
    rows = []
    for st in stats:
        p = strategy_prediction(folder, st.strategy, predicted)
        ms = None if p is None else p.mean_iteration_ms
        step = median_round(rounds, st.strategy).iteration.median_ms
        rows.append({**asdict(st), "median_step_ms": step, "predicted_ms": ms,
                     "error_pct": None if ms is None else 100 * (ms - st.median_ms) / st.median_ms})
    ranked = [r for r in rows if not is_ideal(r["strategy"])]
    by_measured = sorted(ranked, key=lambda r: r["median_ms"])
    by_predicted = sorted((r for r in ranked if r["predicted_ms"] is not None),
                          key=lambda r: predicted_rank_key(r["predicted_ms"], r["strategy"],
                                                           strategies))
    for i, r in enumerate(by_measured, 1):
        r["measured_rank"] = i
    for i, r in enumerate(by_predicted, 1):
        r["predicted_rank"] = i
    best = by_measured[0]
    first = by_predicted[0]["strategy"] if by_predicted else None
    m0 = next(iter(rounds.values()))[best["strategy"]]
    return {"model": m0.model, "pipeline": m0.pipeline, "batch": m0.batch_per_gpu,
            "hardware": m0.hardware, "rounds": len(rounds), "folder": str(folder),
            "rows": rows, "measured_best": best["strategy"], "predicted_best": first,
            "predicted_best_behind_pct": None if first is None else 100 * (
                next(r["median_ms"] for r in rows if r["strategy"] == first)
                / best["median_ms"] - 1)}


def strategy_prediction(folder: Path, strategy: str, predicted: dict | None):
    """A strategy's Prediction: the plan folder's file for it, else the variant's in
    `predicted` (name -> Prediction), else None."""
    from corun.plan_dir import prediction_file
    from corun.spec import Prediction, load

    path = folder / prediction_file(strategy)
    return load(Prediction, path) if path.is_file() else (predicted or {}).get(strategy)


def _pct(x: float | None, fmt: str = "{:.1f}%") -> str:
    return "-" if x is None else fmt.format(x)


def render(summary: dict) -> str:
    from corun.format import table
    from corun.reports.rounds import SEQUENTIAL, is_ideal

    rows = [[r["strategy"], r["rounds"],
             f"{r['median_ms']:.3f} ({r['min_ms']:.3f}-{r['max_ms']:.3f})",
             "-" if r.get("median_step_ms") is None else f"{r['median_step_ms']:.3f}",
             _pct(r["of_ideal_pct"]), "-" if r["wins"] is None else r["wins"],
             _pct(r["recovered_pct"], "{:.0f}%") if not is_ideal(r["strategy"])
             and r["strategy"] != SEQUENTIAL else "-",
             "-" if r["predicted_ms"] is None else f"{r['predicted_ms']:.3f}",
             _pct(r["error_pct"], "{:+.1f}%"), r.get("predicted_rank", "-"),
             r.get("measured_rank", "-")] for r in summary["rows"]]
    head = (f"{summary['model']} / {summary['pipeline']}, batch {summary['batch']}, "
            f"{summary['rounds']} round(s) on {summary['hardware']}")
    text = table(["strategy", "rounds", "ms/iteration (min-max)", "median step ms", "of ideal",
                  "fastest in",
                  "recovered", "predicted ms", "error", "predicted rank", "measured rank"],
                 rows)
    extra = [line for line in (tie_line(summary), faster_ideal_line(summary)) if line]
    return f"{head}\n{text}\n{verdict(summary)}" + "".join(f"\n{x}" for x in extra)


def faster_ideal_line(summary: dict) -> str | None:
    """Where a variant of ideal (the trainer run another way, such as its update on
    another grid) measured faster than ideal itself, say so: the table's shares of ideal
    are against ideal as the trainer runs by default (a row on another grid recovers
    against that grid's baselines, reports.rounds.gap_baselines)."""
    from corun.reports.rounds import IDEAL, is_ideal

    by = {r["strategy"]: r["median_ms"] for r in summary["rows"]}
    if IDEAL not in by:
        return None
    faster = sorted((ms, s) for s, ms in by.items() if is_ideal(s) and s != IDEAL
                    and ms < by[IDEAL])
    if not faster:
        return None
    ms, name = faster[0]
    return (f"{name} ran {100 * (1 - ms / by[IDEAL]):.1f}% faster than ideal: the shares of "
            "ideal above are against ideal as the trainer runs by default (a row on another "
            "update grid recovers against that grid's ideal and gpu-sequential)")


def tie_line(summary: dict) -> str | None:
    """Which strategies were predicted alike (spec.ranking.ALIKE_DIGITS), so that their
    predicted ranks are the planner's order, not the simulator's (a cap or an assembly
    stream it does not model, a host pace that ties plans)."""
    from corun.spec.ranking import ALIKE_DIGITS

    by_ms: dict[float, list[str]] = {}
    for r in summary["rows"]:
        if r.get("predicted_rank") is not None:
            by_ms.setdefault(round(r["predicted_ms"], ALIKE_DIGITS), []).append(r["strategy"])
    groups = [names for names in by_ms.values() if len(names) > 1]
    if not groups:
        return None
    return ("predicted alike, so ranked in the planner's order (its choice, its runners-up, "
            "then as run): " + "; ".join(", ".join(g) for g in groups))


def verdict(summary: dict) -> str:
    first, best = summary["predicted_best"], summary["measured_best"]
    if first is None:
        return f"measured fastest: {best} (no prediction in the folder to rank by)"
    if first == best:
        return f"the predicted fastest, {first}, was the measured fastest"
    chosen = (" (the planner's choice: it also weighs what the simulator is least sure of, "
              "such as a plan's batch lead)") if best == "corun" else ""
    return (f"the predicted fastest, {first}, measured {summary['predicted_best_behind_pct']:.2f}% "
            f"slower than the measured fastest, {best}{chosen}")


def write_summary(out: Path, summary: dict, command: str) -> None:
    import json

    from corun.spec.serde import write_atomic

    write_atomic(out / "tune.json", json.dumps({**summary, "command": command}, indent=1))
    write_atomic(out / "tune.md", f"# corun tune\n\n`{command}`\n\nEach round runs every "
                 "strategy once, in a turned order; shares and recoveries are against the "
                 "round's own ideal and gpu-sequential, then the median over rounds. "
                 "ms/iteration: each round's timed span over its iterations, as the "
                 "throughput counts it (its median over rounds, min-max); median step: "
                 "the median iteration of the median round. "
                 f"Predictions: {summary['folder']}.\n\n```\n{render(summary)}\n```\n")
