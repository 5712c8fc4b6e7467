"""`corun calibrate`: measure this machine's GPU ceilings and host-thread costs in a few
minutes and write them as a machine profile (spec.machine.MachineProfile), which
`corun plan --machine` and `corun simulate --machine` then predict with.

The host costs come from the trainer's own steps, timed by the executor as `corun
execute` times them: `ideal` (the step's launches alone), gpu-sequential and a
one-kernel plan (a fused kernel's launches, timed around each launch, and a batch's
staging, assembly and check), and
gpu-sequential replayed as CUDA graphs (its host step, less its kernel's launches, is the
graphed step's: a graphed `ideal` replays ready batches and blocks for the GPU inside its
step); costmodel/host_fit.py fits them as it fits the reference host's. With `--plans`,
each fused kernel of the plans is timed alone and in its plan's eager step, released at
its stage, so the plans' kernels are predicted at this machine's pace, and beside that
step at its measured rates (costmodel/machine.py). Each piece is kept as soon as it is
measured, so a calibration cut short resumes where it stopped."""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from corun.out_folder import out_file
from corun.spec import SpecError
from corun.workload import QUIET_HELP

HOST_RUNS = ("ideal", "gpu-sequential", "one-kernel", "gpu-sequential-graphed")
"""The trainer runs each host round makes (in a turned order, round by round)."""
KERNEL_REPS = 11
"""Times each plan kernel is timed alone, and its step with it released at its stage; the
medians are kept."""


def pieces(rounds: int, stages: Iterable[str], plans: Iterable[str] = ()) -> list[str]:
    """What a calibration measures, in order (the resume file keeps them by these names):
    the ceilings, `host:ROUND:RUN` for each round's runs, `launches` (each model's step
    as the host launches it), `stages:MODEL:BATCH` for each model and batch whose stages
    it times, then `kernels:PLAN` for each plan file whose kernels it times."""
    host = [f"host:{r}:{HOST_RUNS[(i + r) % len(HOST_RUNS)]}"
            for r in range(1, rounds + 1) for i in range(len(HOST_RUNS))]
    return ["copy", "gemm", *host, "launches", *stages, *plans]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", type=out_file, required=True,
                   help="the machine profile JSON to write (OUTPUT.partial.json keeps the "
                   "pieces measured so far, and a run cut short resumes from it)")
    p.add_argument("--model", default="criteo-kaggle",
                   help="the model whose steps time the host (its step must be host-paced "
                   "here: the default is, on H100 and H200 hosts)")
    p.add_argument("--pipeline", default="kaggle",
                   help="the pipeline of the host runs' plans (default: %(default)s)")
    p.add_argument("--batch", type=int, default=4096,
                   help="the host runs' batch a GPU (default: %(default)s)")
    p.add_argument("--stages", default="criteo-kaggle:4096,criteo-kaggle:16384",
                   help="MODEL:BATCH,... whose training stages to time alone (their "
                   "default pipelines' batches); the simulator scales each stage by the "
                   "measured over its predicted time. '' times none")
    p.add_argument("--plans", default="",
                   help="comma-separated one-GPU plan files (corun plan's plan-*.json): "
                   "each of their fused kernels is timed alone at the plan's batch and "
                   "in the plan's eager step, released at its stage, and the simulator "
                   "predicts those kernels at this machine's pace and, in that step, at "
                   "its measured co-run rates")
    p.add_argument("--rounds", type=int, default=3,
                   help="host rounds: each runs the four trainer runs once, in a turned "
                   "order; the host costs are fitted on all of them (a lent host's pace "
                   "drifts from run to run)")
    p.add_argument("--iterations", type=int, default=150,
                   help="timed steps of each trainer run (default: %(default)s)")
    p.add_argument("--warmup", type=int, default=30,
                   help="untimed steps before them (default: %(default)s)")
    p.add_argument("--device", default="cuda",
                   help="the CUDA GPU to profile, e.g. cuda:1 (default: %(default)s)")
    p.add_argument("--quiet", action="store_true", help=QUIET_HELP)


def _partial_path(out: Path) -> Path:
    return out.with_name(out.name + ".partial.json")


def _resume(partial: Path, key: dict, say) -> tuple[dict, dict]:
    """The pieces a run with the same `key` (device, code, workload) already measured,
    and the seconds each took; a resume file of another key is set aside with a line
    that says why."""
    if not partial.exists():
        return {}, {}
    try:
        doc = json.loads(partial.read_text())
    except (OSError, ValueError):
        say(f"{partial}: unreadable, starting afresh")
        return {}, {}
    if doc.get("key") != key:
        say(f"{partial}: measured for {doc.get('key')}, not {key}: starting afresh")
        return {}, {}
    done = doc.get("pieces", {})
    say(f"resuming: {len(done)} pieces measured ({', '.join(done)})")
    return done, doc.get("seconds", {})


def run(args: argparse.Namespace) -> int:
    import torch

    from corun.cli import command_line, progress, warn
    from corun.costmodel.host_fit import LaunchSource
    from corun.spec.hardware import preset_of_device
    from corun.spec.provenance import git_commit
    from corun.spec.serde import save, to_jsonable, write_atomic
    from corun.spec.validation import plan_id
    from corun.workload import resolve_model, resolve_pipeline

    say = progress(args.quiet)
    stages = _stage_pieces(args.stages)
    plans = _plan_pieces(args.plans, say)
    for name in ("iterations", "warmup", "rounds", "batch"):
        if getattr(args, name) < 1:
            raise SpecError(f"--{name}", getattr(args, name), "an integer >= 1")
    model = resolve_model(args.model, args.batch)
    if not torch.cuda.is_available() or not args.device.startswith("cuda"):
        raise SpecError("--device", args.device, "a CUDA GPU of this machine (a profile "
                        "describes the machine it was measured on)")
    pipeline = resolve_pipeline(args.pipeline)
    device = torch.device(args.device)
    name = torch.cuda.get_device_name(device)
    preset = preset_of_device(name, "device")
    out = Path(args.output)
    partial = _partial_path(out)
    key = {"device": name, "commit": git_commit(), "model": model.name,
           "pipeline": pipeline.name, "batch": args.batch, "iterations": args.iterations,
           "warmup": args.warmup, "rounds": args.rounds, "stages": list(stages),
           "plans": {piece: plan_id(to_jsonable(plan)) for piece, plan in plans.items()}}
    done, seconds = _resume(partial, key, say)
    measure = _measurers(args, model, pipeline, preset, device, command_line(), say)
    trainers = _TrainerSlot()
    measure.update({p: _stage_timer(m, b, preset, device, say, trainers)
                    for p, (m, b) in stages.items()})
    measure.update({p: _kernel_timer(plan, preset, device, say, trainers)
                    for p, plan in plans.items()})
    for piece in pieces(args.rounds, stages, plans):
        if piece in done:
            continue
        say(f"calibrate: {piece} ...")
        t0 = time.perf_counter()
        done[piece] = measure[piece]()
        seconds[piece] = time.perf_counter() - t0
        write_atomic(partial, json.dumps({"key": key, "pieces": done, "seconds": seconds},
                                         indent=1))
    profile, launch = _profile(done, name, model, args.batch, args.rounds)
    profile = replace(profile, measured_s=sum(seconds.values()))
    save(profile, out)
    partial.unlink(missing_ok=True)
    h = profile.host
    print(f"{name}: copy {profile.copy_bytes_per_s / 1e12:.2f} TB/s, bf16 GEMM "
          f"{profile.gemm_bf16_flops_per_s / 1e12:.0f} TFLOP/s; host step {h.step_ms:.3f} ms "
          f"eager, {h.graph_step_ms:.3f} ms graphed, {h.kernel_launch_ms:.3f} ms a kernel "
          f"launch ({launch.source.value}; the plans' steps give {launch.fitted_ms:.3f} "
          f"+- {launch.stderr_ms:.3f}), {h.plan_step_ms:.3f} ms more a plan's step, "
          f"{h.batch_fixed_ms:.3f} ms a batch ({h.measured_on}; eager step "
          f"{_spread(h)}); "
          f"{len(profile.stages)} stage and {len(profile.kernels)} kernel timings in "
          f"{profile.measured_s:.0f} s -> {out}")
    if launch.source is LaunchSource.REFERENCE:
        warn(f"the fused-kernel launch cost fitted to {launch.fitted_ms:.3f} ms, standard "
             f"error {launch.stderr_ms:.3f} ms, at most {launch.ceiling_ms:.3f} ms by the "
             "graphed runs: the host's pace drifted between the runs more than a launch "
             f"costs, so the profile keeps {launch.ms:.3f} ms, the reference host's scaled "
             "by this host's step (more --rounds give the fit more runs)")
    if h.step_spread_pct > HOST_SPREAD_WARN_PCT:
        warn(f"this host's eager step moved {h.step_spread_pct:.0f}% between the rounds "
             f"({_band(h)}): predictions of "
             "host-paced eager steps here (small batches) can be no surer than that; plan "
             "with --cuda-graphs, or calibrate again when the host is quiet")
    print(f"plan with it: corun plan --hardware {preset} --machine {out}", file=sys.stderr)
    return 0


HOST_SPREAD_WARN_PCT = 5.0
"""Rounds' eager host steps further apart than this are warned of: the validation
tables' bar for a prediction (within 5%)."""


def _band(h) -> str:
    """The rounds' fastest and slowest eager host step, in ms (two rounds or more)."""
    low, high = h.round_band_ms
    return f"{low:.3f}-{high:.3f} ms"


def _spread(h) -> str:
    """The rounds' eager host steps, as the profile keeps them, in a few words."""
    if h.round_band_ms is None:
        return "timed in one round"
    return f"{_band(h)} over {len(h.round_step_ms)} rounds, {h.step_spread_pct:.0f}% apart"


def _measurers(args, model, pipeline, preset: str, device, command: str, say) -> dict:
    """One function a piece, each returning what it measured as plain data."""
    from corun.backend.ceilings import copy_bytes_per_s, gemm_bf16_flops_per_s
    from corun.backend.executor import Executor
    from corun.backend.settings import RunSettings
    from corun.sim.strategy import StrategyKind, parse_strategy, strategy_plan
    from corun.spec import hardware_preset, one_kernel_plan
    from corun.spec.serde import to_jsonable

    hw = hardware_preset(preset)
    settings = RunSettings(args.iterations, args.warmup)
    inputs: dict = {}

    def execute(strategy: str, graphs: bool = False) -> dict:
        m = replace(model, cuda_graphs=graphs)
        if strategy == "one-kernel":
            plan, replay = one_kernel_plan(pipeline, m.name, 1, "emb_fwd"), False
        else:
            s = parse_strategy(strategy, hw)
            plan, replay = strategy_plan(s, pipeline, m.name, hw), s.kind is StrategyKind.IDEAL
        run = Executor(m, pipeline, plan, strategy, settings, device, replay, command, say,
                       hardware=hw, inputs=inputs).run()
        return to_jsonable(run)

    runs = {"ideal": lambda: execute("ideal"),
            "gpu-sequential": lambda: execute("gpu-sequential"),
            "one-kernel": lambda: execute("one-kernel"),
            "gpu-sequential-graphed": lambda: execute("gpu-sequential", graphs=True)}
    out = {"copy": lambda: copy_bytes_per_s(device),
           "gemm": lambda: gemm_bf16_flops_per_s(device),
           "launches": lambda: _launch_times(model, _stage_pieces(args.stages), device,
                                             say)}
    for piece in pieces(args.rounds, {}):
        if piece.startswith("host:"):
            out[piece] = runs[piece.rsplit(":", 1)[1]]
    return out


def _launch_times(model, stages: dict[str, tuple[str, int]], device, say) -> dict[str, float]:
    """The host's launch of one eager step of the host-run `model` and of each model whose
    stages are timed, behind a GPU spin (ms by model name); a model whose step waited for
    the GPU in every try is left out with a line that says so."""
    from corun.backend.launch_count import host_step_ms
    from corun.spec import model_preset

    models = {model.name: model, **{m: model_preset(m) for m, _ in stages.values()}}
    out = {}
    for name, m in models.items():
        try:
            out[name] = round(host_step_ms(m, str(device))[0], 4)
        except RuntimeError as e:
            say(f"launches: {e}; its step is predicted at {model.name}'s")
    return out


def _stage_pieces(text: str) -> dict[str, tuple[str, int]]:
    """`--stages` as pieces: {'stages:MODEL:BATCH': (MODEL, BATCH)}; an error names a bad
    item (a model must have a pipeline preset of its own to train on)."""
    from corun.spec import DEFAULT_MODEL_FOR

    models = sorted(set(DEFAULT_MODEL_FOR.values()))
    out = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        name, _, batch = item.rpartition(":")
        if name not in models or not batch.isdigit() or int(batch) < 1:
            raise SpecError("--stages", item, f"MODEL:BATCH with MODEL one of "
                            f"{', '.join(models)} and BATCH an integer >= 1")
        out[f"stages:{name}:{int(batch)}"] = (name, int(batch))
    return out


def _plan_pieces(text: str, say) -> dict:
    """`--plans` as pieces: {'kernels:PATH': Plan}; a plan with no fused kernel (all on
    the host CPU) is passed over with a line that says so; an error names a file that is
    not a one-GPU plan of a pipeline and model this corun has presets of."""
    from corun.spec import Plan
    from corun.spec.serde import load
    from corun.workload import resolve_model, resolve_pipeline

    out = {}
    for path in filter(None, (x.strip() for x in text.split(","))):
        try:
            plan = load(Plan, path)
        except SpecError as e:
            raise SpecError("--plans", path, f"a plan file (corun plan's plan-*.json): {e}") \
                from None
        if plan.gpu_count != 1:
            raise SpecError("--plans", path, "a one-GPU plan (corun times its kernels on "
                            "this machine's one GPU)")
        if not plan.kernels:
            say(f"{path}: no fused kernel to time (the plan runs on the host CPU)")
            continue
        resolve_model(plan.model, plan.batch_per_gpu)
        resolve_pipeline(plan.pipeline)
        out[f"kernels:{path}"] = plan
    return out


class _TrainerSlot:
    """The last trainer built, reused by the next piece of the same model at any batch
    (the profiler has it capture each batch size afresh; a model's tables take seconds
    to build, and one at a time keeps GPU memory for one)."""

    def __init__(self) -> None:
        self.model, self.trainer = None, None

    def profiler(self, model, pipeline, preset: str, device, say):
        from corun.profiling import Profiler
        from corun.spec import hardware_preset

        reuse = self.trainer if self.model == model.name else None
        if reuse is None:
            self.trainer = None  # freed before the next model's tables are built
        prof = Profiler(model, pipeline, hardware_preset(preset), str(device), say=say,
                        trainer=reuse)
        self.model, self.trainer = model.name, prof.trainer
        return prof


def _stage_timer(model_name: str, batch: int, preset: str, device, say, trainers):
    """A function timing the eager trainer's stages alone for one model and batch (the
    profiler's plain steps: the whole step enqueued before the GPU begins it)."""

    def time_stages() -> dict:
        from corun.spec import DEFAULT_MODEL_FOR, model_preset, pipeline_preset

        model = replace(model_preset(model_name), batch_per_gpu=batch)
        pipeline = next(p for p, m in DEFAULT_MODEL_FOR.items() if m == model_name)
        prof = trainers.profiler(model, pipeline_preset(pipeline), preset, device, say)
        return {"pipeline": pipeline,
                "stage_ms": {s.value: ms for s, ms in prof.plain_stage_ms.items()}}

    return time_stages


def _kernel_timer(plan, preset: str, device, say, trainers):
    """A function timing each fused kernel of a one-GPU plan alone at the plan's batch,
    launched as the executor launches it, behind a GPU spin so the host's launch is not
    timed (Profiler.kernel_alone_ms)."""

    def time_kernels() -> list[dict]:
        from corun.profiling import plan_kernels
        from corun.spec import BEFORE_ITERATION, Stage
        from corun.workload import resolve_model, resolve_pipeline

        model = resolve_model(plan.model, plan.batch_per_gpu)
        pipeline = resolve_pipeline(plan.pipeline)
        prof = trainers.profiler(model, pipeline, preset, device, say)
        out = []
        for k, spec in zip(plan.kernels, plan_kernels(plan, pipeline)):
            _, launch = prof.launcher(spec)
            launch()  # compile and warm
            ms = prof.kernel_alone_ms(launch, KERNEL_REPS)
            release = None if k.stage == BEFORE_ITERATION else \
                _release_step(prof, model, Stage(k.stage), launch, ms)
            say(f"  {spec.name} at {model.batch_per_gpu} rows: {ms:.3f} ms alone"
                + (f", {release['kernel_ms']:.3f} ms from its release at {k.stage}"
                   if release else ""))
            out.append({"pipeline": pipeline.name, "nodes": list(k.nodes),
                        "blocks": k.blocks, "threads_per_block": k.threads_per_block,
                        "warp_rows": k.warp_rows, "fixed_offsets": k.fixed_offsets,
                        "source_first": k.source_first,
                        "rows": model.batch_per_gpu, "ms": ms, "release": release})
        return out

    return time_kernels


def _release_step(prof, model, stage, launch, kernel_alone_ms: float) -> dict:
    """The eager step with the kernel released at `stage` as the executor releases it,
    KERNEL_REPS times after a warm one (Profiler.step): each stage's median time in it and
    alone, and the kernel's median time from its release to its end (ReleaseTiming)."""
    import statistics

    steps = [prof.step(stage, launch) for _ in range(KERNEL_REPS + 1)][1:]
    order = list(steps[0].stage_ms)
    return {"model": model.name, "batch_per_gpu": model.batch_per_gpu,
            "stage": stage.value, "stages": [s.value for s in order],
            "step_ms": [statistics.median(t.stage_ms[s] for t in steps) for s in order],
            "alone_ms": [prof.plain_stage_ms[s] for s in order],
            "kernel_alone_ms": kernel_alone_ms,
            "kernel_ms": statistics.median(t.kernel_ms for t in steps)}


def _profile(done: dict, device: str, model, batch: int, rounds: int):
    """The machine profile from the measured pieces, and its launch cost's fit: the host
    costs fitted over every round (each round its own workload to the fit, so its plans
    are compared with its own ideal)."""
    import platform

    import numba
    import torch

    from corun.costmodel.host_fit import host_times
    from corun.spec.machine import KernelTiming, MachineProfile, StageTiming
    from corun.spec.provenance import corun_version, git_commit, host_id
    from corun.spec.serde import from_jsonable

    def case(r: int, run: str) -> dict:
        m = done[f"host:{r}:{run}"]
        return {"strategy": run, "pipeline": m["pipeline"], "batch": batch,
                "round": r, "measurement": m}

    by_round = [[case(r, run) for run in HOST_RUNS[:3]] for r in range(1, rounds + 1)]
    graphed = [case(r, "gpu-sequential-graphed") for r in range(1, rounds + 1)]
    host, launch = host_times(by_round, graphed, f"{model.name} b{batch}, {rounds} rounds")
    host = replace(host, model_launch_ms={m: float(ms) for m, ms in
                                          done.get("launches", {}).items()})
    versions = {"torch": torch.__version__, "numba": numba.__version__,
                "cuda": str(torch.version.cuda), "host": platform.node(),
                "host_id": host_id()}
    stages = tuple(StageTiming(m, t["pipeline"], int(b), s, ms)
                   for piece, t in done.items() if piece.startswith("stages:")
                   for (m, b) in [piece.split(":")[1:]] for s, ms in t["stage_ms"].items())
    timed = {}  # a kernel two plans share: timed twice, kept once
    for piece, ks in done.items():
        if piece.startswith("kernels:"):
            for k in ks:
                t = from_jsonable(KernelTiming, k, "kernels")
                timed.setdefault((t.pipeline, t.nodes, t.blocks, t.threads_per_block,
                                  t.warp_rows, t.fixed_offsets, t.source_first, t.rows), t)
    return MachineProfile(device, float(done["copy"]), float(done["gemm"]), host,
                          corun_version(), git_commit(),
                          datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                          versions, stages, tuple(timed.values())), launch
