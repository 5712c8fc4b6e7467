"""`corun whatif`: plan every point of a hardware x interconnect x GPUs x batch grid, in
parallel."""

from __future__ import annotations

import argparse
import csv
import io
import os
from dataclasses import asdict, dataclass, replace

from corun.out_folder import out_folder
from corun.reports.whatif import MAX_CORES
from corun.spec import SpecError
from corun.workload import MODEL_HELP, PIPELINE_HELP, QUIET_HELP


@dataclass(frozen=True)
class Point:
    hardware: str
    interconnect: str
    """The GPUs' link inside a node (a spec.LINKS key; by default the hardware's NVLink)."""
    gpus: int
    batch: int
    ideal_samples_per_s: float
    planned_samples_per_s: float
    of_ideal: float
    cpu_cores_to_match: int | None
    """Smallest cpu:N whose throughput reaches the plan's; None where no cpu:N up to
    MAX_CORES does (an empty cell in the CSV, `none` in the table)."""
    plan: str
    """What corun's plan does, in a few words (plan_summary)."""
    converged: bool = True
    """Whether the search converged within --time-limit, or within RERUN_FACTOR times it
    where it was run again (LocalSearch.converged)."""
    gpu_ms: float = 0.0
    """Ideal's training stages on GPU 0, each alone, summed (ms an iteration)."""
    link_ms: float = 0.0
    """Ideal's collectives on GPU 0, summed (ms an iteration)."""
    host_ms: float = 0.0
    """Ideal's host thread, its launches (ms an iteration)."""
    paced_by: str = ""
    """What sets ideal's pace: host, gpu or link (`pace`)."""
    stage_ms: str = ""
    """Ideal's stages alone, `stage=ms` separated by spaces."""
    footing: str = ""
    """What the plan's predicted times stand on (`footing`): `measured`, or how its
    training stages and its kernels were not."""


def footing(findings) -> str:
    """`measured` where the cost model timed every training stage and fused kernel of a
    prediction on this GPU kind; else what it did instead: `profile <file>` (a machine
    profile's measurements applied), `carried from <kind>` (times of another GPU kind),
    `stages <how>` (StageProvenance) and `kernels <untimed>/<all> untimed`, joined by
    `; `."""
    from corun.spec.findings import FindingKind

    parts = []
    for f in findings:
        if f.kind is FindingKind.MACHINE_PROFILE:
            parts.append(f"profile {f['machine'].split(' (')[0]}")
        elif f.kind is FindingKind.TIMES_CARRIED:
            parts.append(f"carried from {f['source']}")
        elif f.kind is FindingKind.STAGES_UNTIMED:
            parts.append(f"stages {f.facts['how']}")
        elif f.kind is FindingKind.KERNELS_UNTIMED:
            parts.append(f"kernels {f.facts['untimed']}/{f.facts['kernels']} untimed")
    return "; ".join(parts) or "measured"


RERUN_FACTOR = 4
"""A point whose search stopped at its time limit is searched once more with this many
times the limit; still unconverged, it is marked in every output."""


def pace(host_ms: float, gpu_ms: float, link_ms: float) -> str:
    """host where the host thread's launches outlast the GPU's work and the collectives
    together; else link where the collectives outlast the compute; else gpu."""
    if host_ms >= gpu_ms + link_ms:
        return "host"
    return "link" if link_ms >= gpu_ms else "gpu"


def plan_summary(plan) -> str:
    """'3 GPU kernels (1 owner-mapped), 12 nodes on the host CPU', 'all on the host CPU',
    or '1 GPU kernel on 96 SMs' (Plan.preprocess_sm_cap)."""
    owned = sum(k.gpu is not None for k in plan.kernels)
    parts = []
    if plan.kernels:
        parts.append(f"{len(plan.kernels)} GPU kernel{'s' if len(plan.kernels) > 1 else ''}"
                     + (f" ({owned} owner-mapped)" if owned else "")
                     + (f" on {plan.preprocess_sm_cap} SMs" if plan.preprocess_sm_cap else ""))
    if plan.cpu_nodes:
        parts.append("all on the host CPU" if not plan.kernels
                     else f"{len(plan.cpu_nodes)} nodes on the host CPU")
    return ", ".join(parts)


def _limit_threads(threads: int) -> None:
    """Worker initializer: `threads` OpenMP/BLAS threads per worker process. The learned
    model's scikit-learn predictions are OpenMP loops; with a pool of cores-many threads
    in each of `--jobs` workers the spinning threads took the cores from each other
    (`corun whatif --hardware h200,a100 --gpus 1,2 --batch 4096 --jobs 2` on 2 cores:
    10-12 s, 3.6 s with one thread each), and on the slower CI machine a point ran past
    --time-limit and returned a worse plan."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hardware", default="h100,h200,a100",
                   help="GPU kinds to compare, comma-separated presets or files "
                   "(default: %(default)s)")
    p.add_argument("--interconnect", default="",
                   help="links inside a node to compare, e.g. nvlink4,pcie5 (default: each "
                   "hardware's own NVLink; `corun presets` lists them)")
    p.add_argument("--gpus", default="1,2,4,8",
                   help="GPU counts of one node to compare (default: %(default)s)")
    p.add_argument("--batch", default="4096,8192",
                   help="batches a GPU to compare (default: %(default)s)")
    p.add_argument("--model", default="criteo-kaggle", help=MODEL_HELP + " (default: %(default)s)")
    p.add_argument("--pipeline", default="kaggle", help=PIPELINE_HELP + " (default: %(default)s)")
    p.add_argument("--time-limit", type=float, default=2.0, help="planning seconds per point")
    p.add_argument("--machine", metavar="MACHINE.json",
                   help="a machine profile from `corun calibrate`: the points of its GPU "
                   "kind are predicted for that machine (its ceilings, host costs and "
                   "timed stages and kernels), the other kinds' from their presets")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="points planned side by side, a process each (default: this "
                   "machine's cores)")
    p.add_argument("--out", type=out_folder, default="out/whatif", help="output directory")
    p.add_argument("--quiet", action="store_true", help=QUIET_HELP)


def link_key(hw) -> str:
    """The spec.LINKS key of the hardware's link inside a node."""
    from corun.spec import LINKS

    return next(k for k, v in LINKS.items() if v == hw.intra_node)


def point_hardware(hw_name: str, gpus: int, interconnect: str | None,
                   machine: str | None):
    """A point's hardware: the preset, as the machine profile at `machine` where the
    profile is of this GPU kind."""
    from pathlib import Path

    from corun.costmodel.machine import on_machine
    from corun.spec import hardware_preset
    from corun.spec.machine import MachineProfile
    from corun.spec.serde import load

    hw = hardware_preset(hw_name, gpus, intra_node=interconnect)
    profile = load(MachineProfile, machine) if machine else None
    if profile is not None and profile.gpu_preset == hw_name:
        return on_machine(hw, profile, name=Path(machine).name)
    return hw


def plan_point(hw_name: str, gpus: int, batch: int, model_name: str, pipe_name: str,
               time_limit: float, interconnect: str | None = None,
               machine: str | None = None) -> Point:
    from corun.planner import LocalSearch, SimJudge
    from corun.planner.sm_cap import with_sm_cap
    from corun.sim import Scenario, Strategy, StrategyKind, simulate
    from corun.sim.scenario import CPU_ITERATIONS, CPU_WARMUP
    from corun.workload import resolve_model, resolve_pipeline

    hw = point_hardware(hw_name, gpus, interconnect, machine)
    model = resolve_model(model_name, batch)
    # every point as long as sim.steady_state runs CPU work: ideal, plan and cpu:N alike
    sc = Scenario(hw, model, resolve_pipeline(pipe_name), Strategy(StrategyKind.IDEAL),
                  iterations=CPU_ITERATIONS, warmup=CPU_WARMUP)
    base = simulate(sc, commit="whatif")
    ideal = base.prediction.throughput_samples_per_s
    g0 = base.compiled.gpus[0]
    gpu_ms, link_ms = sum(g0.stage_ms), sum(g0.comm_ms)
    stage_ms = " ".join(f"{s.stage}={s.standalone_ms:.3f}" for s in base.prediction.stages)
    search = LocalSearch()
    judge = SimJudge(sc)
    found = search.propose(judge, time_limit)
    if not search.converged:
        search = LocalSearch()
        found = search.propose(judge, RERUN_FACTOR * time_limit)
    plan = with_sm_cap(judge, found.plan)  # as `corun plan`
    chosen = simulate(replace(sc, strategy=Strategy(StrategyKind.PLAN, plan=plan)),
                      commit="whatif").prediction
    planned = chosen.throughput_samples_per_s

    def cpu(n: int) -> float:
        s = replace(sc, hardware=replace(hw, host_cpu_cores=n),
                    strategy=Strategy(StrategyKind.CPU, cpu_workers=n))
        return simulate(s, commit="whatif").prediction.throughput_samples_per_s

    lo, hi = 0, 1  # cpu(lo) < planned <= cpu(hi), found by doubling then bisection
    while hi <= MAX_CORES and cpu(hi) < planned * (1 - 1e-9):
        lo, hi = hi, hi * 2
    need: int | None = None
    if hi <= MAX_CORES:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if cpu(mid) >= planned * (1 - 1e-9):
                hi = mid
            else:
                lo = mid
        need = hi
    return Point(hw_name, link_key(hw), gpus, batch, ideal, planned, planned / ideal, need,
                 plan_summary(plan), search.converged, gpu_ms, link_ms, g0.host_ms,
                 pace(g0.host_ms, gpu_ms, link_ms), stage_ms, footing(chosen.findings))


def run(args: argparse.Namespace) -> int:
    from corun.cli import command_line
    from corun.costmodel import shard_tables
    from corun.out_folder import staged_folder
    from corun.pools import process_pool
    from corun.progress import bar
    from corun.reports.whatif import heatmaps, markdown
    from corun.spec import GPU_KINDS, LINKS, hardware_preset
    from corun.spec.serde import write_atomic
    from corun.workload import int_list, require_seconds, resolve_model

    kinds = args.hardware.split(",")
    for k in kinds:
        if k not in GPU_KINDS:
            raise SpecError("--hardware", k, f"one of {', '.join(GPU_KINDS)}")
    links: list[str | None] = args.interconnect.split(",") if args.interconnect else [None]
    for link in links:
        if link is not None and link not in LINKS:
            raise SpecError("--interconnect", link, f"one of {', '.join(LINKS)}")
    gpus, batches = int_list(args.gpus, "--gpus"), int_list(args.batch, "--batch")
    if args.jobs < 1:
        raise SpecError("--jobs", args.jobs, "an integer >= 1")
    require_seconds("--time-limit", args.time_limit)
    if args.machine:
        _check_machine(args.machine, kinds)
    model = resolve_model(args.model, batches[0])
    for k in kinds:  # fail fast on a model that cannot fit, before the workers start
        for g in gpus:
            shard_tables(model, hardware_preset(k, g))
    grid = [(k, link, g, b) for k in kinds for link in links for g in gpus for b in batches]
    points: list[Point] = []
    # spawned, not forked: a fork of a process whose OpenMP threads (scikit-learn's
    # gradient boosting in the learned cost model) have run can hang in the child
    threads = max(1, (os.cpu_count() or 1) // args.jobs)
    with process_pool(args.jobs, _limit_threads, (threads,)) as pool:
        futures = [pool.submit(plan_point, k, g, b, args.model, args.pipeline,
                               args.time_limit, link, args.machine)
                   for k, link, g, b in grid]
        with bar(len(grid), "what-if points", args.quiet, "point") as shown:
            for f in futures:
                points.append(f.result())
                shown.update(1)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(asdict(points[0])))
    w.writeheader()
    w.writerows(asdict(p) for p in points)
    text = markdown(points, args.model, args.pipeline)
    with staged_folder(args.out, command_line()) as out:
        write_atomic(out / "whatif.csv", buf.getvalue())
        write_atomic(out / "whatif.md", text)
        heatmaps(points, out, args.model, args.pipeline)
    print(text)
    return 0


def _check_machine(path: str, kinds: list[str]) -> None:
    """A profile of a GPU kind the grid has, read before the workers start; a profile of
    another corun version is used with a warning that names it."""
    from corun.cli import warn
    from corun.spec.machine import MachineProfile
    from corun.spec.provenance import corun_version
    from corun.spec.serde import load

    profile = load(MachineProfile, path)
    if profile.gpu_preset not in kinds:
        raise SpecError("--machine", path, f"a profile of a GPU kind the grid has "
                        f"({', '.join(kinds)}; this one is {profile.gpu_preset}'s)")
    stale = profile.stale_for(corun_version())
    if stale:
        warn(f"{path}: {stale}")
