"""The learned co-running model (CoRunModel), fitted on `corun profile` CSVs, and the
CostModel the simulator asks (LearnedCostModel).

Four targets, each learned on a log scale:
  kernel alone     kernel_alone_ms / roofline          from the kernel's features (the
                   roofline: its bytes at the copy ceiling or its integer work at the
                   issue rate, the larger, plus a floor: estimators.OverRoofline; where
                   the profile timed the same kernel at two or more other row counts, the
                   line through them answers instead: CoRunModel.kernel_alone_ms);
  kernel co-run    kernel_corun_ms / (kernel alone + stage alone ms)
                                                       from kernel and stage features;
  stage slowdown   stage_corun_ms / stage_alone_ms     from kernel and stage features;
  stage alone      stage_alone_ms                      from the stage's work counts (the
                   training step as the trainer runs it, host launch gaps included).
The two co-run targets learn from two kinds of row, told apart by a feature: the kernel
released at the stage's start, and the kernel already resident on the SMs when the stage
starts (`corun profile --resident`); a resident row's times count from the stage's start.

Beside this module: the features (features.py), the regressors as scikit-learn
estimators (estimators.py), held-out validation against two baselines (evaluation.py),
and the model file (model_file.py).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
from corun.costmodel import model_file
from corun.costmodel.features import (
    CORUN_TARGETS,
    GPU_PRESETS,
    design,
    fitted,
    gpu_of,
    lead_ms,
    num,
    preset_of,
    stage_only,
    stage_row,
    targets,
    work_row,
)
from corun.costmodel.graphs import GraphedStages, fit_savings, read_graphed
from corun.costmodel.held import floor_held
from corun.costmodel.interaction import SAVING_CSV
from corun.costmodel.profile_data import (
    PROFILE,
    data_files,
    data_hash,
    fit_rows,
    graphed_rows,
    is_resident,
    lookup_rows,
    read_profile,
)
from corun.costmodel.release_steps import ReleaseStep, rates, read_release_steps
from corun.costmodel.stage_room import ROOM_FILE, RoomKey, RoomKind, StageRoom, read_rooms
from corun.costmodel.types import CoRunEffect, CostModel, KernelWork, StageWork, WholeRun
from corun.spec import Hardware, Model, SpecError, hardware_preset
from corun.spec.findings import Finding, FindingKind, StageProvenance, finding
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

DATA_DIR = Path(__file__).resolve().parent / "data"
"""Fitted models per GPU kind: data/<preset>/model.pkl (from `corun fit`)."""
GRAPHED_CSV = "graphed-stages.csv"
"""Beside a model.pkl: stage times of the step replayed as CUDA graphs (graphs.py)."""


def interpolate_in_rows(points: Sequence[tuple[int, float]], rows: int) -> float | None:
    """A kernel's time at `rows` from its times at other row counts (sorted by rows):
    on the line between the two that bracket it; above them, on the line through the
    last two (never falling); below them, on the line through the first two, kept
    between the first time scaled by the rows and the first time itself (a kernel's
    fixed cost does not shrink). None with fewer than two points."""
    if len(points) < 2:
        return None
    xs = [float(r) for r, _ in points]
    ys = [ms for _, ms in points]
    if xs[0] <= rows <= xs[-1]:
        return float(np.interp(rows, xs, ys))
    if rows > xs[-1]:
        slope = max(0.0, (ys[-1] - ys[-2]) / (xs[-1] - xs[-2]))
        return ys[-1] + slope * (rows - xs[-1])
    line = ys[0] + (ys[1] - ys[0]) / (xs[1] - xs[0]) * (rows - xs[0])
    return min(ys[0], max(ys[0] * rows / xs[0], line))


def _stage_key(x: np.ndarray) -> tuple:
    """A stage's features as a lookup key (rounded: a CSV round trip keeps 6 digits)."""
    return tuple(float(f"{v:.6g}") for v in x)


def _stage_times(rows: Sequence[dict]) -> tuple[list[dict], np.ndarray, np.ndarray]:
    """Each (GPU, model, batch, stage)'s first row, its features and its time alone (the
    profile repeats a stage for every kernel beside it)."""
    keys: dict[tuple, tuple[dict, float]] = {}
    for r, v in zip(rows, targets(rows)["stage_alone"]):
        keys.setdefault((r["gpu"], r["model"], r["batch"], r["stage"]), (r, v))
    first = [r for r, _ in keys.values()]
    return first, stage_only(first), np.maximum([v for _, v in keys.values()], 1e-4)


class CoRunModel(BaseEstimator):
    """The four fitted estimators and the profile's measured times. `predict` returns
    kernel alone ms, kernel co-run ms, the stage slowdown factor and stage alone ms for
    profile-like rows (measured columns unused).

    scikit-learn's estimator contract, for a model whose samples are profile rows: X is a
    sequence of row dicts that carry their targets (features.targets), so y is unused;
    `__init__` stores the seed, `fit` sets the learned attributes (ending in `_`) and
    returns self, `predict` checks it was fitted; `clone` and `get_params` work.

    - `estimators_`: the regressors by target (costmodel.estimators).
    - `stage_measured_`: stage alone ms by stage features, for every stage the training
      rows timed: a profiled model and batch is answered with its measurement, not the
      power law, which fits all models at once.
    - `stage_looked_up_`: stage alone ms by (pipeline, stage features) from the lookup rows
      (costmodel.profile_data.LOOKUP_DIR), profiled training on their kernels' pipeline:
      they answer only a step that trains on that pipeline (StageWork.trains_on).
    - `pair_measured_`: (kernel alone, kernel co-run, stage alone, stage co-run) ms by
      (GPU, kernel name, stage features, resident) for every pair the rows measured. The
      simulator asks about a plan's kernels by their profile names
      (costmodel.workload.kernel_key), so a pair `corun profile --plans` profiled is
      answered with its measurement, not the trees' fit of it.
    - `kernel_measured_`: kernel alone ms by (GPU, kernel name, rows)."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def fit(self, X: Sequence[dict], y=None, *, lookup: Sequence[dict] = (),  # noqa: N803
            alone: Sequence[dict] = ()) -> CoRunModel:
        """The estimators learn from the profile rows `X` (their targets are columns of
        theirs; `y` is unused); the measured stage, pair and kernel times
        come from `X`, then from `lookup` where `X` did not time them
        (costmodel.profile_data.LOOKUP_DIR: rows looked up, not learned from), and the
        kernels' times alone also from `alone` (the graphed profiles,
        profile_data.graphed_rows: a kernel timed alone runs as it does whatever the
        training step is; their pairs are another step's). Without them, heavy-rehash's
        whole pipeline in 99 blocks at b16384, timed only at b32768 in the lookup rows,
        was put at 1.78 ms alone by the trees against 2.94 measured, and graphed
        heavy-lean b16384's plan releasing it at interaction_bwd was predicted 3.44 ms
        against 4.66 measured."""
        from corun.costmodel.estimators import (  # sklearn: 1 s
            kernel_alone_regressor,
            kernel_regressor,
            stage_regressor,
        )

        rows = [r for r in X if fitted(r)]
        lookup = [r for r in lookup if fitted(r)]
        xk, xks = design(rows)
        y = targets(rows)
        self.estimators_ = {t: kernel_regressor(self.seed) for t in CORUN_TARGETS}
        self.estimators_["kernel_alone"] = kernel_alone_regressor(self.seed)
        self.estimators_["stage_alone"] = stage_regressor()
        self.estimators_["kernel_alone"].fit(xk, np.maximum(y["kernel_alone"], 1e-4))
        for t in ("kernel_corun", "stage_slowdown"):
            self.estimators_[t].fit(xks, np.maximum(y[t], 1e-3))
        _, x, stage_y = _stage_times(rows)
        self.estimators_["stage_alone"].fit(x, stage_y)
        self.stage_measured_ = {_stage_key(xi): float(v) for xi, v in zip(x, stage_y)}
        self.stage_looked_up_: dict[tuple[str, tuple], float] = {}
        if lookup:
            for r, xi, v in zip(*_stage_times(lookup)):
                self.stage_looked_up_.setdefault((r["pipeline"], _stage_key(xi)), float(v))
        self.pair_measured_: dict[tuple, tuple[float, float, float, float]] = {}
        self.kernel_measured_: dict[tuple, float] = {}
        for r, xi in zip([*rows, *floor_held(lookup)], stage_only([*rows, *lookup])):
            lead = lead_ms(r)
            times = (num(r, "kernel_alone_ms") - lead, num(r, "kernel_corun_ms") - lead,
                     num(r, "stage_alone_ms"), num(r, "stage_corun_ms"))
            gpu = gpu_of(r["gpu"]).name
            self.pair_measured_.setdefault((gpu, r["kernel"], _stage_key(xi), is_resident(r)),
                                          times)
            if not is_resident(r):
                self.kernel_measured_.setdefault((gpu, r["kernel"], int(num(r, "rows"))),
                                                times[0])
        for r in alone:
            if not is_resident(r):
                self.kernel_measured_.setdefault(
                    (gpu_of(r["gpu"]).name, r["kernel"], int(num(r, "rows"))),
                    num(r, "kernel_alone_ms"))
        return self

    def kernel_alone_ms(self, gpu: str, kernel: str, rows: int) -> float | None:
        """The kernel's time alone where the profile timed it at `rows`; else, where it
        timed the same kernel (same nodes and launch shape) at two or more other row
        counts, read off the line through the nearest ones (`interpolate_in_rows`); else
        None. At a fixed launch shape the time follows the rows almost on a line
        (heavy-small's whole pipeline, 1056 blocks a warp a row: 0.288 / 0.557 / 0.803
        ms at 8192 / 16384 / 24576 rows), where the trees put b12288 at 1.035 ms against
        0.407 measured."""
        exact = self.kernel_measured_.get((gpu, kernel, rows))
        if exact is not None:
            return exact
        return interpolate_in_rows(self.kernel_timed(gpu, kernel), rows)

    def kernel_timed(self, gpu: str, kernel: str) -> list[tuple[int, float]]:
        """(rows, ms alone) wherever the profile timed this kernel on this GPU kind, by rows."""
        return sorted((r, ms) for (g, k, r), ms in self.kernel_measured_.items()
                      if g == gpu and k == kernel)

    def stage_timed(self, key: tuple, trains_on: str = "") -> float | None:
        """A stage's alone ms where a profile timed it: the fitted rows' for any pipeline,
        else the lookup rows' for a step that trains on their pipeline; else None."""
        timed = self.stage_measured_.get(key)
        if timed is None:
            timed = self.stage_looked_up_.get((trains_on, key))
        return timed

    def predict_stage_ms(self, rows: Sequence[dict]) -> np.ndarray:
        """`rows` may name the pipeline the step trains on (`trains_on`, stage_query's)."""
        check_is_fitted(self)
        x = stage_only(rows)
        out = self.estimators_["stage_alone"].predict(x)
        for i, (r, xi) in enumerate(zip(rows, x)):
            timed = self.stage_timed(_stage_key(xi), r.get("trains_on", ""))
            if timed is not None:
                out[i] = timed
        return out

    def predict(self, rows: Sequence[dict],
                alone_ms: Sequence[float | None] = ()) -> dict[str, np.ndarray]:
        """`alone_ms`: the kernel's time alone for each row where known otherwise (the
        profile's, or `kernel_alone_ms`'s), in place of the trees'."""
        check_is_fitted(self)
        xk, xks = design(rows)
        alone = self.estimators_["kernel_alone"].predict(xk)
        for i, ms in enumerate(alone_ms):
            if ms is not None:
                alone[i] = ms
        stage = self.predict_stage_ms(rows)
        # the kernel's standalone time is predicted; the stage's is the row's (measured
        # in validation, so each target's error stays its own; the simulator's rows
        # carry the predicted one); a resident row's kernel from the stage's start
        left = np.maximum(alone - np.array([lead_ms(r) for r in rows]), 1e-4)
        xks[:, -1] = np.log(left)
        return {"kernel_alone": alone,
                "kernel_corun": (left + np.array([num(r, "stage_alone_ms") for r in rows]))
                * self.estimators_["kernel_corun"].predict(xks),
                "stage_slowdown": self.estimators_["stage_slowdown"].predict(xks),
                "stage_alone": stage}


class LearnedCostModel(CostModel):
    """The simulator's cost model where a fitted model exists for the GPU: stage times,
    kernel times and co-run effects as the profile measured them where it did, learned
    elsewhere; host-CPU times from the analytic model. The profile's whole-run times
    become the rates the simulator applies while kernel and stage overlap
    (CoRunEffect.from_whole_run)."""

    def __init__(self, model: CoRunModel, meta: dict,
                 profiled: dict[tuple[str, ...], set[int]] | None = None,
                 graphed_rows: Sequence[dict] = (),
                 release_steps: dict[tuple, ReleaseStep] | None = None,
                 rooms: dict[RoomKey, StageRoom] | None = None) -> None:
        """`profiled`: (GPU, model) -> the batches its profile timed, (GPU, model, pipeline)
        -> those its lookup rows timed (`profiled_batches`, for `caveat`);
        `graphed_rows`: a graphed-stages.csv's rows (costmodel/graphs.py);
        `release_steps`: the profiled steps that released a kernel (`release_steps_in`);
        `rooms`: the stages whose room in time a probe measured (stage-room.json)."""
        from corun.costmodel.analytic import AnalyticCostModel

        self.model, self.meta = model, meta
        self.profiled = profiled or {}
        self.graphs = graphed_stages(model, graphed_rows)
        self.release_steps = release_steps or {}
        self.rooms = rooms or {}
        self.fallback = AnalyticCostModel()
        self._memo: dict[tuple, object] = {}
        """Answers by argument: the planner asks about the same kernels and stages for
        many candidate plans, and one scikit-learn call costs about a millisecond."""
        self.name = f"learned (data {meta['data_sha256'][:10]}, {meta['rows']} rows)"

    def _cached(self, key: tuple, compute):
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def stage_ms(self, work: StageWork, hw: Hardware) -> float:
        return self._cached(("stage", work, hw.gpu.name), lambda: self._stage_ms(work, hw))

    def kernel_ms(self, work: KernelWork, hw: Hardware) -> float:
        return self._cached(("kernel", work, hw.gpu.name), lambda: self._kernel_ms(work, hw))

    def corun(self, kernel: KernelWork, stage: StageWork, hw: Hardware,
              training_priority_high: bool) -> CoRunEffect:
        return self._cached(("corun", kernel, stage, hw.gpu.name, training_priority_high),
                            lambda: self._corun(kernel, stage, hw))

    def _stage_ms(self, work: StageWork, hw: Hardware) -> float:
        if work.graphed:
            eager = self.stage_ms(replace(work, graphed=False), hw)
            return self.graphs.stage_ms(work.stage.value, graph_key(hw.gpu.name, work), eager)
        return float(self.model.predict_stage_ms([stage_query(hw.gpu.name, work)])[0])

    def _kernel_ms(self, work: KernelWork, hw: Hardware) -> float:
        known = self.timed_ms(work, hw)
        if known is not None:
            return known
        return float(self.model.predict([work_row(work, None, 0.0, hw)])["kernel_alone"][0])

    def timed_ms(self, work: KernelWork, hw: Hardware) -> float | None:
        """The kernel's time alone where a profile timed it (CoRunModel.kernel_alone_ms),
        else where it timed the kernel that bounds it (KernelWork.bound_key), a closer
        answer than the trees', which were fitted on kernels without source_first (its
        pairs with the training stages likewise: `_pair_timed`)."""
        for key in work.timing_keys:
            known = self.model.kernel_alone_ms(hw.gpu.name, key, work.rows)
            if known is not None:
                return known
        return None

    def whole_run(self, kernel: KernelWork, stage: StageWork, hw: Hardware,
                  resident: bool = False) -> WholeRun:
        return self.whole_runs(kernel, [stage], hw, resident)[0]

    def whole_runs(self, kernel: KernelWork, stages: Sequence[StageWork], hw: Hardware,
                   resident: bool = False) -> list[WholeRun]:
        """`whole_run` beside each stage, the ones not yet asked predicted in one call:
        a scikit-learn call costs about a millisecond however many rows it has, and the
        simulator asks about a kernel beside every stage of the step at once (one-GPU
        kaggle's search, the same 403 plans: 3.63 s asked one by one, 1.30 s batched)."""
        keys = [("whole", kernel, stage, hw.gpu.name, resident) for stage in stages]
        missing = list(dict.fromkeys(key for key in keys if key not in self._memo))
        runs = self._whole_runs(kernel, [key[2] for key in missing], hw, resident)
        self._memo.update(zip(missing, runs))
        return [self._memo[key] for key in keys]

    def _whole_runs(self, kernel: KernelWork, stages: Sequence[StageWork], hw: Hardware,
                    resident: bool) -> list[WholeRun]:
        """The measured pair where the profile timed it (or the kernel that bounds it,
        KernelWork.bound_key, where it timed that one), else the model's prediction (the
        predicted ones in one call)."""
        out: list[WholeRun | None] = [self._pair_timed(kernel, stage, hw, resident)
                                      for stage in stages]
        todo = [i for i, run in enumerate(out) if run is None]
        if todo:
            alone = [self.stage_ms(stages[i], hw) for i in todo]
            rows = [work_row(kernel, stages[i], ms, hw) for i, ms in zip(todo, alone)]
            if resident:
                for row in rows:
                    row["kernel_lead_ms"] = 0.0
            p = self.model.predict(rows, [self.kernel_ms(kernel, hw)] * len(rows))
            for j, (i, ms) in enumerate(zip(todo, alone)):
                out[i] = (float(p["kernel_alone"][j]), float(p["kernel_corun"][j]), ms,
                          ms * max(1.0, float(p["stage_slowdown"][j])))
        return out  # type: ignore[return-value]

    def _pair_timed(self, kernel: KernelWork, stage: StageWork, hw: Hardware,
                    resident: bool) -> WholeRun | None:
        """The kernel's measured pair with `stage`, else its bounding kernel's, else None."""
        for key in kernel.timing_keys:
            run = self.model.pair_measured_.get(
                (hw.gpu.name, key, stage_key(hw.gpu.name, stage), resident))
            if run is not None:
                return run
        return None

    def release_rates(self, kernel: KernelWork, works: Sequence[StageWork], hw: Hardware,
                      release: int) -> list[tuple[float, float]] | None:
        if not self.release_steps:
            return None
        step = self.release_steps.get(plan_release_key(kernel, works, hw, release))
        return None if step is None else rates(step, release)

    def stage_room(self, model: str, batch: int, stage: str, graphed: bool, hw: Hardware,
                   kind: RoomKind) -> StageRoom | None:
        return self.rooms.get((hw.gpu.name, model, batch, stage, graphed, kind))

    def _corun(self, kernel: KernelWork, stage: StageWork, hw: Hardware) -> CoRunEffect:
        return CoRunEffect.from_whole_run(*self.whole_run(kernel, stage, hw))

    def cpu_batch_ms(self, kernel: KernelWork) -> float:
        return self.fallback.cpu_batch_ms(kernel)

    def untimed_kernels(self, kernels: Sequence[KernelWork], hw: Hardware) -> Finding | None:
        """The kernels whose time alone is the trees' (`_kernel_ms`: neither timed at their
        rows nor read off two other row counts)."""
        untimed = [k for k in kernels if self.timed_ms(k, hw) is None]
        if not untimed:
            return None
        facts: dict = {"untimed": len(untimed), "kernels": len(kernels), "gpu": hw.gpu.name}
        err = self.meta.get("heldout", {}).get("learned", {}).get("kernel_alone", {})
        if err:
            facts["heldout_mape_pct"] = err["mape_pct"]
        return finding(FindingKind.KERNELS_UNTIMED, **facts)

    def untimed_stages(self, model: Model, stages: Sequence[StageWork],
                       hw: Hardware) -> Finding | None:
        """Which training stages no profile timed on this GPU, and where their times come
        from instead (StageProvenance). Asked once per simulated plan, so memoised."""
        return self._cached(("untimed", model, tuple(stages), hw.gpu.name),
                            lambda: self._untimed(model, stages, hw))

    def _untimed(self, model: Model, stages: Sequence[StageWork],
                 hw: Hardware) -> Finding | None:
        if model.cuda_graphs and all(graph_key(hw.gpu.name, w) in self.graphs.measured
                                     for w in stages):
            return None  # the graphed step was timed at this batch
        new = [w for w in stages
               if self.model.stage_timed(stage_key(hw.gpu.name, w), w.trains_on) is None]
        trains_on = stages[0].trains_on if stages else ""
        batches = sorted(set().union(*(
            self.profiled.get((hw.gpu.name, name), set())
            | self.profiled.get((hw.gpu.name, name, trains_on), set())
            for name in same_model_names(model, {k[1] for k in self.profiled}))))
        facts: dict = {"model": model.name, "gpu": hw.gpu.name, "batch": model.batch_per_gpu,
                       "batches": ", ".join(map(str, batches)), "untimed": len(new),
                       "stages": len(stages), "graphed": int(model.cuda_graphs)}
        err = self.meta.get("heldout", {}).get("learned", {}).get("stage_alone", {})
        if err:
            facts["heldout_mape_pct"] = err["mape_pct"]
        if not new and (batches or not self.profiled):
            return finding(FindingKind.STAGES_UNTIMED,
                           how=StageProvenance.GRAPHED_FROM_EAGER.value,
                           **facts) if model.cuda_graphs else None
        if not new:  # every stage matches another model's profiled one, feature for feature
            how = StageProvenance.BORROWED
        elif not batches:
            how = StageProvenance.NEVER_PROFILED
        elif batches[0] <= model.batch_per_gpu <= batches[-1]:
            how = StageProvenance.INTERPOLATED
        else:
            how = StageProvenance.EXTRAPOLATED
        return finding(FindingKind.STAGES_UNTIMED, how=how.value, **facts)


def same_model_names(model: Model, names: set[str]) -> set[str]:
    """`model`'s name and each of `names` that is a model preset of the same work (its
    tables, MLPs, interaction and optimizer; any name, batch, step mode and learning
    rate): a profile of the preset times a renamed copy of it as well, so that their
    findings agree."""
    from corun.spec.model import MODEL_PRESETS

    same = {model.name}
    for name in names - same:
        preset = MODEL_PRESETS.get(name)
        if preset is not None and replace(
                model, name=name, batch_per_gpu=preset.batch_per_gpu,
                cuda_graphs=preset.cuda_graphs, learning_rate=preset.learning_rate) == preset:
            same.add(name)
    return same


def stage_query(gpu: str, work: StageWork) -> dict:
    """A stage the simulator asks about on GPU `gpu`, as a profile-like row (with the
    pipeline it trains on, which picks looked-up stage times: CoRunModel.stage_timed)."""
    return {"gpu": gpu, "stage": work.stage.value, "trains_on": work.trains_on,
            **stage_row(work)}


def stage_key(gpu: str, work: StageWork) -> tuple:
    """A stage's profile features as a lookup key (CoRunModel.stage_measured_'s)."""
    return _stage_key(stage_only([stage_query(gpu, work)])[0])


@functools.lru_cache(maxsize=4096)
def step_key(gpu: str, works: tuple[StageWork, ...]) -> tuple:
    """A whole step's stages as a lookup key (every stage's stage_key, in step order): a
    release step is the step of one model, and two models can share a releasing stage's
    features (heavy-lean's and heavy-hot's interaction_bwd) but not every stage's."""
    return tuple(stage_key(gpu, w) for w in works)


def plan_release_key(kernel: KernelWork, works: Sequence[StageWork], hw: Hardware,
                     release: int) -> tuple:
    """A plan's kernel released at stage position `release` of the step `works`, as
    `release_step_key` keys a profiled one."""
    return (hw.gpu.name, kernel.key, works[release].graphed,
            step_key(hw.gpu.name, tuple(works)), release)


def release_step_key(row: dict, step: Sequence[dict], graphed: bool) -> tuple:
    """A profiled release step's key, from the releasing stage's row and the step's rows
    in order: (GPU kind, kernel, graphed, every stage's features in step order, the
    releasing stage's position)."""
    return (gpu_of(row["gpu"]).name, row["kernel"], graphed,
            tuple(_stage_key(x) for x in stage_only(step)),
            [x["stage"] for x in step].index(row["stage"]))


def graph_key(gpu: str, work: StageWork) -> tuple:
    """A stage's key among graphed stage times: the GPU kind and its profile features."""
    return gpu_of(gpu).name, stage_key(gpu, work)


def preset_stages(model_name: str, batch: int) -> dict[str, StageWork]:
    """A model preset's stages at `batch` on one GPU (what a graphed-stages.csv row
    names), by stage name."""
    from corun.costmodel.workload import stage_work
    from corun.spec import model_preset
    from corun.spec.sharding import shard_tables

    model = replace(model_preset(model_name), batch_per_gpu=batch)
    hw = hardware_preset("h200", 1)
    return {s.value: w for s, w in stage_work(model, hw, shard_tables(model, hw), 0).items()}


def graphed_stages(model: CoRunModel, rows: Sequence[dict]) -> GraphedStages:
    """Measured graphed stage times by key, and each stage's saving against the profile's
    eager time (fitted here, on the stages the profile also timed)."""
    times: dict[tuple[str, tuple], list[float]] = {}
    stages: dict[tuple[str, int], dict[str, StageWork]] = {}
    for r in rows:
        case = (r["model"], int(r["batch"]))
        if case not in stages:
            stages[case] = preset_stages(*case)
        work = stages[case][r["stage"]]
        times.setdefault((r["stage"], graph_key(r["gpu"], work)), []).append(
            float(r["graphed_ms"]))
    # models whose stages have the same features (kaggle's and terabyte's embedding
    # stages: the same ids and bytes) share one key: their mean answers for both
    by_stage = {k: float(np.mean(v)) for k, v in times.items()}
    savings = fit_savings(by_stage, lambda key: model.stage_measured_.get(key[1]))
    return GraphedStages({key: ms for (_, key), ms in by_stage.items()}, savings)


def profiled_batches(folder: Path) -> dict[tuple[str, ...], set[int]]:
    """(GPU kind name, model name) -> the batches the fitted profiles under `folder`
    timed; (GPU kind name, model name, pipeline) -> those its lookup rows timed, training
    on that pipeline (CoRunModel.stage_looked_up_)."""
    out: dict[tuple[str, ...], set[int]] = {}
    for r in read_profile(folder, corrected=False):  # batches only: no stage time read
        out.setdefault((gpu_of(r["gpu"]).name, r["model"]), set()).add(int(r["batch"]))
    for r in lookup_rows(folder, PROFILE, corrected=False):
        out.setdefault((gpu_of(r["gpu"]).name, r["model"], r["pipeline"]), set()).add(
            int(r["batch"]))
    return out


def cost_model_for(hw: Hardware) -> CostModel:
    """The learned model fitted for this GPU kind (costmodel/data/<preset>/model.pkl);
    else one fitted on another kind, its times carried to this one by the two kinds'
    ceilings (costmodel/carried.py: a what-if for a GPU nobody profiled, which its name
    and a finding say); else the analytic estimator."""
    from corun.costmodel.analytic import AnalyticCostModel
    from corun.costmodel.carried import CarriedCostModel

    try:
        own = preset_of(hw.gpu.name)
    except SpecError:
        own = None
    for preset in ([own] if own else []) + [p for p in GPU_PRESETS if p != own]:
        path = DATA_DIR / preset / "model.pkl"
        if path.exists():
            learned = _learned(path)
            return learned if preset == own else CarriedCostModel(
                learned, hardware_preset(preset, 1).gpu)
    return AnalyticCostModel()


def release_steps_in(folder: Path) -> dict[tuple, ReleaseStep]:
    """The profiled steps that released a kernel, from the eager and the graphed profiles
    under `folder`, by `release_step_key`: how LearnedCostModel.release_rates looks a
    plan's kernel up (`plan_release_key`). The looked-up and graphed rows pass through
    costmodel/held.py's floor (the fitted ones are taken as measured)."""
    out = {}
    eager = read_profile(folder) + floor_held(lookup_rows(folder, PROFILE))
    for graphed, rows in ((False, eager), (True, floor_held(graphed_rows(folder)))):
        out.update(read_release_steps(
            rows, lambda r, step, g=graphed: release_step_key(r, step, g)))
    return out


_LOADED: dict[tuple, LearnedCostModel] = {}


def _learned(path: Path) -> LearnedCostModel:
    """One LearnedCostModel per state of the model file, its CSVs and the library
    versions: every simulate() asks for one, so it is loaded (and its data hashed) once
    and its memoised answers serve every later call."""
    files = [path, *data_files(path.parent)]
    files += [path.parent / f for f in (GRAPHED_CSV, SAVING_CSV, ROOM_FILE)
              if (path.parent / f).exists()]
    key = (str(path), tuple((f.name, f.stat().st_mtime_ns, f.stat().st_size)
                            for f in files),
           tuple(sorted(model_file.library_versions().items())))
    if key not in _LOADED:
        _LOADED[key] = LearnedCostModel(*_load_or_refit(path),
                                        profiled_batches(path.parent),
                                        read_graphed(path.parent / GRAPHED_CSV),
                                        release_steps_in(path.parent),
                                        read_rooms(path.parent / ROOM_FILE))
    return _LOADED[key]


def _load_or_refit(path: Path) -> tuple[CoRunModel, dict]:
    """The committed model; where it was fitted under other library versions or on other
    data than the CSVs beside it, a model refitted here on those CSVs (once: cached under
    spec.serde.cache_dir()), with a note on stderr. A pickled scikit-learn model is not
    trusted across versions."""
    import sys

    from corun.spec.serde import cache_dir

    try:
        return model_file.load_model(path, path.parent)
    except Exception as e:  # noqa: BLE001 -- under other versions unpickling itself may fail
        report = model_file.report_of(path)  # corun fit writes the meta beside the pickle
        meta = json.loads(report.read_text()) if report.exists() else {}
        digest = data_hash(path.parent)
        key = digest[:16] + "-" + "-".join(
            f"{k}{v}" for k, v in sorted(model_file.library_versions().items()))
        cached = cache_dir() / "models" / f"{path.parent.name}-{key}.pkl"
        if cached.exists():
            try:
                return model_file.load_model(cached, path.parent)
            except SpecError:
                pass  # a cached refit of an older corun: refitted again below
        print(f"corun: {e}; refitting on {path.parent} (once)", file=sys.stderr)
        rows = fit_rows(path.parent)
        model = CoRunModel(int(meta.get("seed", 0))).fit(
            rows, lookup=lookup_rows(path.parent), alone=graphed_rows(path.parent))
        meta = {**meta, "data_sha256": digest, "rows": len(rows),
                "versions": model_file.library_versions(), "refitted_from": str(path)}
        cached.parent.mkdir(parents=True, exist_ok=True)
        model_file.save_model(model, cached, meta)
        return model, meta
