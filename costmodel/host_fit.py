"""Fitting the host-thread constants of costmodel/host.py to `corun execute` runs.

Each executed run records the host thread's time per iteration by piece (stage, step,
wait, finish, check; backend/executor.py). Three fits, each on the runs that show it:
  step_ms           median host step of `ideal` on the host-paced workloads, those whose
                    executed strategies never waited for the GPU (host wait < 0.1 ms in
                    every one): there the step's host time is its launches alone;
  kernel_launch_ms  least squares through zero of (a strategy's host step - its
                    workload's ideal host step) against its fused-kernel host launches,
                    over the host-paced runs (calibrate takes the launches as the
                    executor timed them, where it did: launch_fit);
  batch_fixed_ms,   a line of staging + assembly + check (stage + finish - wait + check)
  batch_ms_per_mb   against the batch's output MB, over every non-ideal GPU run (flat at
                    the median where the line falls with size or the sizes span less
                    than MIN_MB_SPAN);
  launch_share      each stage's share of ideal's step launches on the host-paced
                    workloads (the median, scaled to sum to 1): when the GPU may begin
                    each stage;
  workers_ms,       (apart, `workers_ms`) what host workers cost the launching thread:
  distributed_workers_ms  plans on the host CPU over ideal's iteration, less the batch cost;
  distributed_*     the same five from the runs of more than one GPU, apart from the
                    one-GPU runs: the distributed step (all-to-alls, gradient
                    all-reduce) and the per-table form the distributed trainer takes
                    each batch in cost the host more than one GPU's.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import numpy as np
from corun.costmodel.host import HostCosts, kernel_launches, output_mb
from corun.spec import SpecError
from corun.spec.hardware import HostTimes
from corun.spec.serde import read_stored_text

from corun import spec

IDLE_WAIT_MS = 0.1
"""A workload is host-paced when none of its strategies' host waited longer for the GPU."""

MIN_MB_SPAN = 10.0
"""The batch cost is fitted as a line only over batches whose output sizes span at least
this ratio; over less the slope is mostly noise and is extrapolated far outside the sizes
seen (on 2 GPUs 1.9-3.9 MB gave 0.068 ms/MB, 23 ms at heavy b16384's 345 MB, where
one GPU's whole batch costs 0.3 ms): flat at the median instead."""


MIN_GRAPH_STEP_MS = 0.01
"""The least graphed host step a calibration reports (nine graph launches and their marks
cannot take less)."""


def runs(paths: list[Path]) -> list[dict]:
    """The rows of every run in these files (lists of Measurement records)."""
    return [row for path in paths for row in rows_of(json.loads(read_stored_text(path)), path.name)]


def rows_of(cases: list[dict], source: str) -> list[dict]:
    """One row per measured GPU case of one command: workload, fused-kernel host
    launches, output MB, host pieces (median ms)."""
    out = []
    for r in cases:
        m = r.get("measurement")
        if not m or r["strategy"].startswith("cpu"):
            continue
        pipe = spec.pipeline_preset(r["pipeline"])
        kernels = [spec.FusedKernel(**{**k, "nodes": tuple(k["nodes"])})
                   for k in (m.get("plan") or {}).get("kernels", [])]
        out.append({"source": source, "pipeline": r["pipeline"], "model": m.get("model"),
                    "batch": r["batch"],
                    "strategy": r["strategy"], "gpus": m.get("gpu_count", 1),
                    "launches": kernel_launches(kernels, pipe),
                    "host_nodes": len((m.get("plan") or {}).get("cpu_nodes") or ()),
                    "repeat": r.get("repeat", 0),
                    "owner_share": owner_share((m.get("plan") or {}), pipe),
                    "output_mb": output_mb(pipe, r["batch"]),
                    "host": {k: v["median_ms"] for k, v in m["host"].items()},
                    "iteration_ms": m["iteration"]["median_ms"]})
    return out


def owner_share(plan: dict, pipe: spec.Pipeline) -> float:
    """The share of a plan's sparse features (one table each) that their table's owner
    preprocesses over the global batch (0 for a baseline or a plan without owners)."""
    mapping = plan.get("feature_mapping") or {}
    owners = sum(mapping.get(s.node) == spec.Mapping.OWNER.value
                 for s in pipe.sparse_outputs)
    return owners / len(pipe.sparse_outputs) if pipe.sparse_outputs else 0.0


def batch_host_ms(r: dict) -> float:
    """A row's host time for its batch: staging, assembly and check, less the waits for
    the GPU inside them."""
    h = r["host"]
    return h["stage"] + h["finish"] - h["wait"] + h["check"]


LAUNCH = "launch:"
"""The executor's host piece per stage: the host's time from that stage's mark to the
next, its launches (backend/trainer.Clock.host_stage_ms)."""


def launch_marks(r: dict) -> dict[str, float]:
    """A row's host time per stage mark (ms by stage name; empty where not recorded)."""
    return {k[len(LAUNCH):]: v for k, v in r["host"].items() if k.startswith(LAUNCH)}


def launch_shares(paced: list[dict]) -> dict[str, float]:
    """Each stage's share of the host's step launches: the median over host-paced ideal
    runs (where the host never waits for the GPU inside the step, so a stage's host time
    is its launches alone), scaled to sum to 1. Empty where no run recorded them."""
    per: dict[str, list[float]] = {}
    for r in paced:
        marks = launch_marks(r)
        total = sum(marks.values())
        for stage, ms in marks.items():
            per.setdefault(stage, []).append(ms / total if total > 0 else 0.0)
    med = {s: statistics.median(v) for s, v in per.items()}
    total = sum(med.values())
    return {s: round(v / total, 3) for s, v in med.items()} if total > 0 else {}


def workload(r: dict) -> tuple:
    """The workload of one command a row measured: run file, pipeline, batch."""
    return r["source"], r["pipeline"], r["batch"]


def paced_ideals(rows: list[dict]) -> list[dict]:
    """The `ideal` rows of the host-paced workloads: those whose other strategies' host
    never waited for the GPU longer than IDLE_WAIT_MS."""
    ideal = {workload(r): r for r in rows if r["strategy"] == "ideal"}
    waits: dict = {}
    for r in rows:
        if r["strategy"] != "ideal":
            waits[workload(r)] = max(waits.get(workload(r), 0.0), r["host"]["wait"])
    return [ideal[k] for k, w in waits.items() if w < IDLE_WAIT_MS and k in ideal]


BLOCKED_SHARE = 0.5
"""An ideal step where one stage took more of the host's launch time than this blocked
inside that stage for the GPU (heavy b4096 and b16384, GPU-paced: 0.51-0.63 at
top_mlp_fwd; host-paced steps: at most 0.27), so it shows where the GPU was, not what
the launches cost."""


def launch_shares_by_model(rows: list[dict]) -> dict[str, dict]:
    """launch_shares for each model apart, from its one-GPU ideal steps that did not
    block for the GPU (BLOCKED_SHARE), and how many each used: a model's step launches
    its own mix of kernels (heavy-fused's fused embedding update costs the host more at
    emb_bwd than kaggle's)."""
    def blocked(r: dict) -> bool:
        marks = launch_marks(r).values()
        return not marks or max(marks) > BLOCKED_SHARE * sum(marks)

    ideal = [r for r in rows if r["strategy"] == "ideal" and r.get("gpus", 1) == 1
             and r.get("model") and not blocked(r)]
    out = {}
    for model in sorted({r["model"] for r in ideal}):
        mine = [r for r in ideal if r["model"] == model]
        out[model] = {"launch_share": launch_shares(mine), "used": len(mine)}
    return out


HOST_PACED_GROWTH = 1.3
"""A model's ideal step is host-paced at both of two batches, one twice the other, when
the larger batch's step took less than this many times the smaller's (a GPU-paced step
nearly doubles: wide-4x 4.3 -> 7.9 ms, heavy 3.4 -> 6.9, mlperf-dcnv2 14.4 -> 28.3 at
b2048 -> b4096 on the H200; host-paced ones moved -24% to +8%)."""


def step_scales(rows: list[dict], base: str = "criteo-kaggle") -> dict[str, dict]:
    """Each model's eager ideal host step over `base`'s (measured, not in the model: see
    costmodel/host.py's docstring), from one-GPU ideal rows at two batches, one twice the
    other: the median over all its rows over the
    median of `base`'s, for the models host-paced at both (HOST_PACED_GROWTH); the others
    are named and left out."""
    ideal = [r for r in rows if r["strategy"] == "ideal" and r.get("gpus", 1) == 1
             and r.get("model")]
    by: dict[str, dict[int, list[float]]] = {}
    for r in ideal:
        by.setdefault(r["model"], {}).setdefault(r["batch"], []).append(r["host"]["step"])
    if base not in by:
        raise SpecError("raw", sorted(by), f"ideal rows of {base} to scale the others by")
    out: dict[str, dict] = {}
    for model, steps in sorted(by.items()):
        batches = sorted(steps)
        if len(batches) != 2 or batches[1] != 2 * batches[0]:
            raise SpecError("raw", {model: batches}, "ideal rows at two batches, one twice "
                            "the other, for every model")
        growth = statistics.median(steps[batches[1]]) / statistics.median(steps[batches[0]])
        every = steps[batches[0]] + steps[batches[1]]
        out[model] = {"steps_ms": [round(x, 3) for x in every],
                      "growth": round(growth, 3), "host_paced": growth < HOST_PACED_GROWTH}
    if not out[base]["host_paced"]:
        raise SpecError("raw", base, "its ideal host-paced at both batches")
    base_ms = statistics.median(out[base]["steps_ms"])
    for v in out.values():
        if v["host_paced"]:
            v["scale"] = round(statistics.median(v["steps_ms"]) / base_ms, 2)
    return out


def workers_ms(rows: list[dict], batch_fixed_ms: float, several: bool = True) -> dict:
    """workers_ms (one GPU) or distributed_workers_ms (`several`): over the runs of that
    GPU count, each plan with op nodes on the host CPU against its command's (and
    round's) ideal, the median of the iteration it added, less `batch_fixed_ms` (its
    batch's staging and check, modelled apart): host-paced, the rest is what the
    workers cost the launching thread."""
    def mine(r: dict) -> bool:
        return (r.get("gpus", 1) > 1) == several

    ideal = {(r["source"], r["pipeline"], r["batch"], r["repeat"]): r["iteration_ms"]
             for r in rows if r["strategy"] == "ideal" and mine(r)}
    added = [r["iteration_ms"] - ideal[k] for r in rows if r["host_nodes"] and mine(r)
             and (k := (r["source"], r["pipeline"], r["batch"], r["repeat"])) in ideal]
    if not added:
        raise SpecError("runs", len(rows), f"runs of {'several GPUs' if several else 'one GPU'}"
                        " with a plan on the host CPU beside its ideal")
    name = "distributed_workers_ms" if several else "workers_ms"
    return {name: round(statistics.median(added) - batch_fixed_ms, 3),
            "used": len(added), "added_ms": [round(min(added), 3), round(max(added), 3)],
            "added_median_ms": round(statistics.median(added), 3)}


OWNER_BASES = ("corun-gpu", "corun")
"""What an owner-mapped plan (`corun-owner`) is paired with in its command and round:
the same GPU plan without owners."""


def owner_ms(rows: list[dict]) -> dict:
    """distributed_owner_a2a_ms and distributed_owner_lane_ms: over every round that ran an
    owner-mapped plan beside the same plan without owners (OWNER_BASES, on GPUs only),
    the median of the host time the input all-to-all's launches saved (the `launch:
    input_a2a` piece, per unit of owner share) and of the batch host time the owners'
    lane added (its staging, assembly and check)."""
    by = {((r["source"], r["pipeline"], r["batch"], r["repeat"]), r["strategy"]): r
          for r in rows if r.get("gpus", 1) > 1}
    saved, added = [], []
    for (k, strategy), r in by.items():
        if strategy != "corun-owner" or r["owner_share"] <= 0:
            continue
        base = next((by[(k, b)] for b in OWNER_BASES if (k, b) in by
                     and not by[(k, b)]["host_nodes"] and not by[(k, b)]["owner_share"]),
                    None)
        if base is None or LAUNCH + "input_a2a" not in r["host"]:
            continue
        saved.append((base["host"][LAUNCH + "input_a2a"] - r["host"][LAUNCH + "input_a2a"])
                     / r["owner_share"])
        added.append(batch_host_ms(r) - batch_host_ms(base))
    if not saved:
        raise SpecError("runs", len(rows), "rounds of several GPUs with corun-owner beside "
                        f"one of {', '.join(OWNER_BASES)} as a GPU plan")
    return {"distributed_owner_a2a_ms": round(statistics.median(saved), 3),
            "distributed_owner_lane_ms": round(statistics.median(added), 3),
            "used": len(saved), "saved_ms": [round(min(saved), 3), round(max(saved), 3)],
            "added_ms": [round(min(added), 3), round(max(added), 3)]}


class LaunchSource(Enum):
    """Where a profile's fused-kernel launch cost came from."""

    TIMED = "timed"
    """The executor's own clock around each kernel's launch (its `kernels` host piece)."""
    FITTED = "fitted"
    """The slope of plans' host steps over their ideal's against their launches."""
    REFERENCE = "reference"
    """The reference host's, scaled by this host's step: neither of the above holds."""


@dataclass(frozen=True)
class LaunchFit:
    """A fused kernel's host launch cost as calibrate takes it from its rounds, and the
    fit that checks it: the least-squares slope of a plan's host step over its ideal's
    against its launches, that slope's standard error, and whether the host's drift
    between runs hid it."""

    ms: float
    """The cost the profile keeps (`source` says which)."""
    source: LaunchSource
    timed_ms: float | None
    """The launches as the executor timed them, per launch (None: runs without the piece)."""
    fitted_ms: float
    stderr_ms: float
    ceiling_ms: float
    """The most a launch can cost: a graphed run's whole host step over its launches."""
    hidden: bool
    """The slope is hidden by the host's drift."""


def launch_fit(pairs: list[tuple[int, float]], graphed: list[tuple[int, float]],
               step_ms: float, timed_ms: float | None = None) -> LaunchFit:
    """The launch cost: as the executor timed it (`timed_ms`) where the runs recorded it,
    else the slope of the (launches, host step less its round's ideal's) pairs, unless the
    host's drift hides it: the slope not above zero, not twice its standard error, or
    above what the (launches, host step) of graphed runs allows (a lent host's pace
    drifts between runs by more than a few launches cost); then the reference host's,
    scaled by this host's step."""
    fitted, stderr = _slope_through_origin(pairs)
    ceiling = min((step / n for n, step in graphed if n > 0), default=math.inf)
    hidden = fitted <= 0 or stderr > fitted / 2 or fitted > ceiling
    if timed_ms is not None:
        ms, source = timed_ms, LaunchSource.TIMED
    elif not hidden:
        ms, source = fitted, LaunchSource.FITTED
    else:
        reference = HostCosts()
        ms = reference.kernel_launch_ms * step_ms / reference.step_ms
        source = LaunchSource.REFERENCE
    return LaunchFit(ms, source, timed_ms, fitted, stderr, ceiling, hidden)


def timed_launch_ms(rows: list[dict]) -> float | None:
    """A fused kernel's host launch cost as the executor timed it: the median over eager
    plan runs of their kernels' launch time a batch (the `kernels` host piece) over their
    launches. None where no run recorded the piece."""
    xs = [r["host"]["kernels"] / r["launches"] for r in rows
          if r["strategy"] != "ideal" and r["launches"] > 0 and "kernels" in r["host"]]
    return statistics.median(xs) if xs else None


def plan_step_ms(rows: list[dict], paced: list[dict]) -> float:
    """What an eager plan's step costs the host beyond ideal's and its kernels' launches:
    the median over plan runs with timed launches (the `kernels` host piece) next to a
    host-paced ideal (`paced`) of (host step - ideal's - the launches), not below 0; 0
    where no run timed its launches."""
    xs = [over - r["host"]["kernels"] for r, over in _over_ideal(rows, paced)
          if "kernels" in r["host"]]
    return max(0.0, statistics.median(xs)) if xs else 0.0


def _slope_through_origin(pairs: list[tuple[int, float]]) -> tuple[float, float]:
    """The least-squares slope of y on x through the origin over (x, y) pairs, and its
    standard error (0 and inf where no x is above zero; inf from one pair)."""
    x, y = np.array([p[0] for p in pairs], float), np.array([p[1] for p in pairs], float)
    if not x.any():
        return 0.0, math.inf
    slope = float(x @ y / (x @ x))
    if len(x) < 2:
        return slope, math.inf
    return slope, math.sqrt(float(np.sum((y - slope * x) ** 2)) / (len(x) - 1) / (x @ x))


def _over_ideal(rows: list[dict], paced: list[dict]) -> list[tuple[dict, float]]:
    """(run, host step less its workload's ideal's) of every plan run whose ideal is
    host-paced (in `paced`)."""
    ideal = {workload(r): r for r in rows if r["strategy"] == "ideal"}
    return [(r, r["host"]["step"] - ideal[workload(r)]["host"]["step"])
            for r in rows if r["strategy"] != "ideal" and ideal.get(workload(r)) in paced]


def _launch_pairs(rows: list[dict], paced: list[dict]) -> list[tuple[int, float]]:
    """(launches, host step less its workload's host-paced ideal's) of every plan run."""
    return [(r["launches"], over) for r, over in _over_ideal(rows, paced)]


def host_times(rounds: list[list[dict]], graphed: list[dict],
               measured_on: str) -> tuple[HostTimes, LaunchFit]:
    """A host's measured costs (spec.hardware.HostTimes) from one GPU's runs of one
    workload in rounds, as `corun calibrate` takes them: per round, eager `ideal` and
    plans with fused kernels (as rows_of reads them; each round its own workload to the
    fit); and plans with fused kernels run as CUDA graphs (`graphed`: the median of
    their host steps less their kernels' launches is the graphed step's). The launch
    cost's fit comes with them, for the caller to say where it was hidden."""
    rows = [row for i, cases in enumerate(rounds, 1)
            for row in rows_of(cases, f"calibrate-round-{i}")]
    f = fit_pieces(rows)
    graphed_rows = rows_of(graphed, "calibrate")
    paced = paced_ideals(rows)
    launch = launch_fit(_launch_pairs(rows, paced),
                        [(g["launches"], g["host"]["step"]) for g in graphed_rows],
                        f["step_ms"], timed_launch_ms(rows))
    steps = [g["host"]["step"] - launch.ms * g["launches"] for g in graphed_rows]
    graph_step_ms = max(statistics.median(steps), MIN_GRAPH_STEP_MS)
    plan_ms = plan_step_ms(rows, paced) if launch.source is LaunchSource.TIMED else 0.0
    return HostTimes(f["step_ms"], graph_step_ms, launch.ms, f["batch_fixed_ms"],
                     f["launch_share"], measured_on, plan_ms,
                     tuple(float(r["host"]["step"]) for r in paced)), launch


def fit(rows: list[dict]) -> dict:
    """The constants (as HostCosts names them), how many runs each used, and the ranges
    they came from. One-GPU runs give the one-GPU constants; runs of more than one GPU,
    fitted the same way apart from them, the distributed_* ones (where there are any)."""
    multi = [r for r in rows if r.get("gpus", 1) > 1]
    single = [r for r in rows if r.get("gpus", 1) == 1]
    out = fit_pieces(single) if single else {"used": {}, "ranges": {}}
    if multi:
        d = fit_pieces(multi)
        for k in ("step_ms", "kernel_launch_ms", "batch_fixed_ms", "batch_ms_per_mb",
                  "launch_share"):
            out[f"distributed_{k}"] = d[k]
        out["used"].update({f"distributed_{k}": n for k, n in d["used"].items()})
        out["ranges"].update({f"distributed_{k}": v for k, v in d["ranges"].items()})
    return out


def fit_pieces(rows: list[dict]) -> dict:
    """step_ms, kernel_launch_ms, batch_fixed_ms, batch_ms_per_mb from runs of one GPU
    count (`fit` calls it for one GPU and, apart, for several)."""
    paced = paced_ideals(rows)
    if not paced:
        raise SpecError("runs", len(rows), "at least one workload measured next to its "
                        "ideal whose strategies never waited for the GPU (host-paced)")
    step_ms = statistics.median(r["host"]["step"] for r in paced)
    pairs = _launch_pairs(rows, paced)
    launch_ms, _ = _slope_through_origin(pairs)
    mb, batch = [], []
    for r in rows:
        if r["strategy"] != "ideal":
            mb.append(r["output_mb"])
            batch.append(batch_host_ms(r))
    slope, fixed = 0.0, statistics.median(batch)  # flat: too narrow a span to tell
    if max(mb) >= MIN_MB_SPAN * min(mb):
        slope, fixed = np.polyfit(mb, batch, 1)
        if slope < 0:  # no measurable growth with size: the median, flat
            slope, fixed = 0.0, statistics.median(batch)
    shares = launch_shares(paced)
    return {"step_ms": step_ms, "kernel_launch_ms": launch_ms,
            "batch_fixed_ms": float(fixed), "batch_ms_per_mb": float(slope),
            "launch_share": shares,
            "used": {"step": len(paced), "launch": len(pairs), "batch": len(mb),
                     "launch_share": sum(bool(launch_marks(r)) for r in paced)},
            "ranges": {"ideal_step_ms": [min(r["host"]["step"] for r in paced),
                                         max(r["host"]["step"] for r in paced)],
                       "batch_ms": [min(batch), max(batch)],
                       "batch_mb": [min(mb), max(mb)]}}


SPREAD_MODELS = ("criteo-kaggle", "criteo-terabyte")
"""The host-paced workloads whose eager ideal steps give the spread of lent hosts' pace
(at SPREAD_BATCH on one H200; costmodel/host.py HOST_STEP_SPREAD)."""
SPREAD_BATCH = 4096


def host_step_spread(cases) -> tuple[float, float]:
    """The 10th and 90th percentiles over commands of ideal's eager step (each command's
    median) on one H200 at the SPREAD_MODELS' SPREAD_BATCH, over their median: how far
    lent hosts' pace lies from the typical one. `cases`: spec.validation.MeasuredCase."""
    per_command: dict[tuple[str, str], list[float]] = {}
    for c in cases:
        if (c.strategy == "ideal" and c.gpus == 1 and not c.cuda_graphs
                and c.batch_per_gpu == SPREAD_BATCH and c.model in SPREAD_MODELS
                and "H200" in c.machine):
            per_command.setdefault((c.source, c.model), []).append(c.mean_iteration_ms)
    steps = [statistics.median(v) for v in per_command.values()]
    if len(steps) < 10:
        raise SpecError("cases", len(steps), "host-paced H200 commands: at least 10")
    mid = statistics.median(steps)
    low, high = np.percentile(steps, [10, 90])
    return float(low / mid), float(high / mid)
