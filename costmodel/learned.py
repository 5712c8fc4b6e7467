"""Learned co-running estimators, fitted on `corun profile` CSVs (scikit-learn's contract).

Four targets, each a gradient-boosted regressor on a log scale:
  kernel alone     kernel_alone_ms                     from the kernel's features (where
                   the profile timed the same kernel at two or more other row counts, the
                   line through them answers instead: CoRunModel.kernel_alone_ms);
  kernel co-run    kernel_corun_ms / (kernel alone + stage alone ms)
                                                       from kernel and stage features;
  stage slowdown   stage_corun_ms / stage_alone_ms     from kernel and stage features;
  stage alone      stage_alone_ms                      from the stage's work counts (the
                   training step as the trainer runs it, host launch gaps included).
The two co-run targets learn from two kinds of row, told apart by a feature: the kernel
released at the stage's start, and the kernel already resident on the SMs when the stage
starts (`corun profile --resident`; the simulator asks for these where a kernel runs on
from an earlier stage); a resident row's times count from the stage's start (its lead,
the kernel's time alone before, taken off).
Features are normalised by the GPU's ceilings (bytes over its copy bandwidth, operations
over its integer throughput, blocks over its resident slots), so a model fitted on one
GPU kind can be applied, with less trust, to another.

Validation holds out whole model/batch combinations and whole kernel feature sets, and
compares with two baselines fitted on the same training rows: the analytic estimator
(one fitted scale per target) and a RAP-style model (one linear term per op type on
[count, fused columns, average width]; kernels run at standalone speed; each stage has
a fixed capacity of kernel time it hides).
"""

from __future__ import annotations

import functools
import gzip
import json
import pickle
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
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
from corun.spec import GpuKind, Hardware, Model, OpKind, SpecError, hardware_preset

TARGETS = ("kernel_alone", "kernel_corun", "stage_slowdown", "stage_alone")
CORUN_TARGETS = ("kernel_corun", "stage_slowdown")
STAGES = ("emb_fwd", "bottom_mlp_fwd", "interaction_fwd", "top_mlp_fwd", "top_mlp_bwd",
          "interaction_bwd", "bottom_mlp_bwd", "emb_bwd", "optimizer")
GPU_PRESETS = ("h200", "h100", "a100", "v100")
DATA_DIR = Path(__file__).resolve().parent / "data"
"""Fitted models per GPU kind: data/<preset>/model.pkl (from `corun fit`)."""
GRAPHED_CSV = "graphed-stages.csv"
"""Beside a model.pkl: stage times of the step replayed as CUDA graphs (graphs.py)."""


def preset_of(name: str) -> str:
    """The hardware preset of a GPU name as torch or a preset spells it ("NVIDIA H200",
    "H200"); profiles taken on the CPU (tests) count as the H200."""
    if name == "cpu":
        return "h200"
    for preset in GPU_PRESETS:
        if preset.upper() in name.upper():
            return preset
    raise SpecError("gpu", name, f"a GPU with a preset ({', '.join(GPU_PRESETS)})")


def gpu_of(name: str) -> GpuKind:
    return hardware_preset(preset_of(name), 1).gpu


def _f(r: dict, k: str, default: float = 0.0) -> float:
    v = r.get(k, "")
    return float(v) if v not in ("", None) else default


def kernel_features(r: dict) -> list[float]:
    g = gpu_of(r["gpu"])
    nodes = max(_f(r, "nodes"), 1.0)
    slots = g.sm_count * g.max_threads_per_sm
    return [
        np.log1p(_f(r, "kernel_bytes") / g.copy_bytes_per_s * 1e6),  # us at full bandwidth
        np.log1p(_f(r, "int_ops") / g.int32_ops_per_s * 1e6),  # us at full issue rate
        np.log1p(_f(r, "elements") / max(_f(r, "rows"), 1.0)),  # elements per row
        _f(r, "blocks") * _f(r, "threads") / slots,  # waves of resident threads
        _f(r, "threads") / 1024, _f(r, "registers", 40) / 255, _f(r, "occupancy", 0.5),
        _f(r, "chains"), nodes, _f(r, "has_lists"),
        *(_f(r, f"op_{op.value}") / nodes for op in OpKind),
        _f(r, "warp_rows"),  # long lists a warp per row (profiles before it: a thread)
        # rows each thread walks in turn: a thin launch's blocks run long and, beside a
        # stage that holds the SMs, wait for it (kaggle b16384's whole pipeline in 66
        # blocks at the optimizer: 0.15 ms co-run predicted without it, 0.64 with it,
        # 0.715 measured)
        np.log1p(_f(r, "rows") * _f(r, "chains") / max(_f(r, "blocks") * _f(r, "threads"), 1.0)),
    ]


STAGE_ALONE_COLUMN = 2
"""Where stage_features puts the stage's standalone time."""
STAGE_ONEHOT_COLUMN = 4
"""Where the stage one-hot starts in `stage_only`'s columns (after bytes, FLOPs,
parallelism, kernels)."""
LOOKUP_STAGES = ("emb_bwd", "optimizer")
"""Stages whose time follows the id count (StageWork.lookups), each its own feature (and
the fused update's emb_bwd a third: its cost per id is another)."""
FEATURES_VERSION = "12"
"""Bumped when the features or estimators change: a model saved under another is refitted."""


def stage_features(r: dict, alone_ms: float | None = None) -> list[float]:
    """The stage's work normalised by the GPU, its standalone time (measured, or
    `alone_ms` when given), and which stage it is."""
    g = gpu_of(r["gpu"])
    alone = _f(r, "stage_alone_ms") if alone_ms is None else alone_ms
    ids = np.log1p(stage_lookups(r) * 1e-3)
    fused = stage_fused(r)
    return [
        np.log1p(_f(r, "stage_bytes") / g.copy_bytes_per_s * 1e6),
        np.log1p(_f(r, "stage_flops") / (g.int32_ops_per_s * 2) * 1e6),
        np.log1p(alone * 1e3),
        _f(r, "stage_parallelism") / (g.sm_count * g.max_threads_per_sm),
        _f(r, "stage_kernels"),
        *(float(r["stage"] == s) for s in STAGES),
        *(ids * (r["stage"] == s) * (1.0 - fused) for s in LOOKUP_STAGES),
        ids * fused, fused,
        *stage_shape(r),
        stage_bag_kernel(r),
        np.log1p(stage_table_bytes(r) / g.l2_bytes),
        stage_hot_row(r),
    ]


def _stage_column(r: dict, column: str) -> float:
    """A derived stage column of a profile row: the row's own value, or, for profiles
    taken before the column existed (they name a preset model), what costmodel.workload
    gives that preset on one GPU (_preset_stage); 0 when neither is known."""
    if r.get(column) not in (None, ""):
        return float(r[column])
    return _preset_stage(r.get("model", ""), int(r.get("batch", 0)), r["stage"]).get(
        column, 0.0)


def stage_lookups(r: dict) -> float:
    """Ids the stage updates one by one (StageWork.lookups)."""
    return _stage_column(r, "stage_lookups")


def stage_fused(r: dict) -> float:
    """1.0 for the fused update's emb_bwd (StageWork.fused_update)."""
    return _stage_column(r, "stage_fused_update")


def stage_bag_kernel(r: dict) -> float:
    """1.0 for the bag kernel's emb_fwd (StageWork.bag_kernel)."""
    return _stage_column(r, "stage_bag_kernel")


def stage_hot_row(r: dict) -> float:
    """1.0 for the hot-row fused update's emb_bwd (StageWork.hot_row_update)."""
    return _stage_column(r, "stage_hot_row")


def stage_table_bytes(r: dict) -> float:
    """The tables' bytes a stage reads or updates (StageWork.table_bytes)."""
    return _stage_column(r, "stage_table_bytes")


SHAPE_COLUMNS = ("stage_embedding_dim", "stage_feature_count", "stage_cross_network")


def stage_shape(r: dict) -> list[float]:
    """log embedding dim, log feature count, cross network (StageWork's model shape);
    from the preset model for profiles taken before these columns existed, zeros when
    neither is known."""
    known = r if all(r.get(c) not in (None, "") for c in SHAPE_COLUMNS) else \
        _preset_stage(r.get("model", ""), int(r.get("batch", 0)), r["stage"])
    dim, count, cross = (float(known.get(c, 0.0)) for c in SHAPE_COLUMNS)
    return [np.log(max(dim, 1.0)), np.log(max(count, 1.0)), cross]


@functools.cache
def _preset_stage(model: str, batch: int, stage: str) -> dict[str, float]:
    """The profile's stage columns of a preset model at `batch` on one GPU, from the
    same costmodel.workload the simulator asks with ({} for a model that is not a
    preset: such rows are from tests; real profiles of model files carry the columns)."""
    from dataclasses import replace

    from corun.costmodel.workload import stage_work
    from corun.spec import MODEL_PRESETS, Stage
    from corun.spec.sharding import shard_tables

    m = MODEL_PRESETS.get(model)
    if m is None or batch < 1:
        return {}
    m = replace(m, batch_per_gpu=batch)
    hw = hardware_preset("h200", 1)
    work = stage_work(m, hw, shard_tables(m, hw), 0).get(Stage(stage))
    return stage_row(work) if work is not None else {}


def stage_only(rows: Sequence[dict]) -> np.ndarray:
    """Stage features without the standalone time (to predict that time)."""
    x = np.array([stage_features(r, 0.0) for r in rows])
    return np.delete(x, STAGE_ALONE_COLUMN, axis=1)


def lead_ms(r: dict) -> float:
    """The row's kernel time before its stage started (0 for a kernel released with it)."""
    return _f(r, "kernel_lead_ms")


def fitted(r: dict) -> bool:
    """Whether a row is fitted on: every profile row, and a resident row whose kernel
    had real work left when the stage started (more than three leads of its time alone:
    a shorter one had all but ended alone)."""
    return not is_resident(r) or _f(r, "kernel_alone_ms") > 3 * lead_ms(r)


def design(rows: Sequence[dict]) -> tuple[np.ndarray, np.ndarray]:
    """(kernel features, kernel + stage features + resident + log kernel-alone time
    from the stage's start)."""
    k = np.array([kernel_features(r) for r in rows])
    s = np.array([stage_features(r) for r in rows])
    resident = np.array([float(is_resident(r)) for r in rows])[:, None]
    alone = np.log([max(_f(r, "kernel_alone_ms") - lead_ms(r), 1e-4) for r in rows])[:, None]
    return k, np.hstack([k, s, resident, alone])


def targets(rows: Sequence[dict]) -> dict[str, np.ndarray]:
    ka = np.array([_f(r, "kernel_alone_ms") for r in rows])
    lead = np.array([lead_ms(r) for r in rows])
    kc = np.array([_f(r, "kernel_corun_ms") for r in rows])
    sa = np.array([_f(r, "stage_alone_ms") for r in rows])
    sc = np.array([_f(r, "stage_corun_ms") for r in rows])
    # a co-run kernel waits for SMs the stage holds: its latency scales with both times
    # (a resident row's kernel from the stage's start: its work alone before taken off)
    return {"kernel_alone": ka,
            "kernel_corun": np.maximum(kc - lead, 1e-4) / np.maximum(ka - lead + sa, 1e-6),
            "stage_slowdown": sc / np.maximum(sa, 1e-6), "stage_alone": sa}


def _regressor(seed: int):
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.ensemble import HistGradientBoostingRegressor

    return TransformedTargetRegressor(
        HistGradientBoostingRegressor(max_iter=300, learning_rate=0.08, random_state=seed),
        func=np.log, inverse_func=np.exp)


def _stage_regressor():
    return PerStageRidge()


class PerStageRidge:
    """Stage alone time: one log-log ridge model of the normalised work per training
    stage. Stage times come from few model/batch combinations, and a new model or batch
    lies outside them: trees cannot extrapolate, a power law of bytes, FLOPs and ids can.
    Each stage gets its own exponents (emb_bwd follows its ids, the MLPs their FLOPs):
    with the same features one shared model held out at 24.6-27.1% MAPE, one per stage
    at 12.2-14.9% (three splits of the profile, `corun fit --seed N`). A stage seen fewer than
    4 times falls back to the shared model."""

    def __init__(self) -> None:
        self.shared = self._ridge()
        self.by_stage: dict[int, object] = {}

    @staticmethod
    def _ridge():
        from sklearn.compose import TransformedTargetRegressor
        from sklearn.linear_model import RidgeCV

        return TransformedTargetRegressor(RidgeCV(alphas=(1e-3, 1e-2, 1e-1, 1.0, 10.0)),
                                          func=np.log, inverse_func=np.exp)

    @staticmethod
    def _stage_of(x: np.ndarray) -> np.ndarray:
        onehot = x[:, STAGE_ONEHOT_COLUMN:STAGE_ONEHOT_COLUMN + len(STAGES)]
        return np.where(onehot.any(axis=1), onehot.argmax(axis=1), -1)

    def fit(self, x: np.ndarray, y: np.ndarray) -> PerStageRidge:
        self.shared.fit(x, y)
        stage = self._stage_of(x)
        for s in set(stage.tolist()) - {-1}:
            if (stage == s).sum() >= 4:
                self.by_stage[s] = self._ridge().fit(x[stage == s], y[stage == s])
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        out = self.shared.predict(x)
        stage = self._stage_of(x)
        for s, model in self.by_stage.items():
            if (stage == s).any():
                out[stage == s] = model.predict(x[stage == s])
        return out


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


class CoRunModel:
    """The four fitted estimators. `predict` returns kernel alone ms, kernel co-run ms,
    the stage slowdown factor and stage alone ms for profile-like rows (measured
    columns unused)."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.estimators = {t: _regressor(seed) for t in TARGETS if t != "stage_alone"}
        self.estimators["stage_alone"] = _stage_regressor()
        self.stage_measured: dict[tuple, float] = {}
        """Stage alone ms by stage features, for every stage the training rows timed: a
        profiled model and batch is answered with its measurement. The power law fits
        all models at once and had put criteo-kaggle b16384's ideal step 7.7% under
        its measurement; with the profile's stage times, 0.3% over it."""
        self.stage_looked_up: dict[tuple[str, tuple], float] = {}
        """Stage alone ms by (pipeline, stage features) from the lookup rows
        (costmodel.profile_data.LOOKUP_DIR), which are profiled training on their kernels'
        pipeline (`corun profile --train-pipeline P --pipelines P`): they answer only a
        step that trains on that pipeline (StageWork.trains_on). Answering every pipeline,
        heavy-rehash's put eager heavy-lean b32768 beside heavy-small at 6.78 ms ideal
        against 7.26-7.32 measured."""
        self.pair_measured: dict[tuple, tuple[float, float, float, float]] = {}
        """(kernel alone, kernel co-run, stage alone, stage co-run) ms by (GPU, kernel
        name, stage features) for every pair the training rows measured; below, kernel
        alone ms by (GPU, kernel name, rows). The simulator asks about a plan's kernels
        by their profile names (costmodel.workload.kernel_key), so a pair that
        `corun profile --plans` profiled is answered with its measurement, not the
        trees' fit of it."""
        self.kernel_measured: dict[tuple, float] = {}

    def fit(self, rows: Sequence[dict], lookup: Sequence[dict] = (),
            alone: Sequence[dict] = ()) -> CoRunModel:
        """The estimators learn from `rows`; the measured stage, pair and kernel times
        come from `rows`, then from `lookup` where `rows` did not time them
        (costmodel.profile_data.LOOKUP_DIR: rows looked up, not learned from), and the
        kernels' times alone also from `alone` (the graphed profiles,
        profile_data.graphed_rows: a kernel timed alone runs as it does whatever the
        training step is; their pairs are another step's). Without them, heavy-rehash's
        whole pipeline in 99 blocks at b16384, timed only at b32768 in the lookup rows,
        was put at 1.78 ms alone by the trees against 2.94 measured, and graphed
        heavy-lean b16384's plan releasing it at interaction_bwd was predicted 3.44 ms
        against 4.66 measured."""
        rows = [r for r in rows if fitted(r)]
        lookup = [r for r in lookup if fitted(r)]
        xk, xks = design(rows)
        y = targets(rows)
        self.estimators["kernel_alone"].fit(xk, np.maximum(y["kernel_alone"], 1e-4))
        for t in ("kernel_corun", "stage_slowdown"):
            self.estimators[t].fit(xks, np.maximum(y[t], 1e-3))
        _, x, stage_y = _stage_times(rows)
        self.estimators["stage_alone"].fit(x, stage_y)
        self.stage_measured = {_stage_key(xi): float(v) for xi, v in zip(x, stage_y)}
        self.stage_looked_up = {}
        if lookup:
            for r, xi, v in zip(*_stage_times(lookup)):
                self.stage_looked_up.setdefault((r["pipeline"], _stage_key(xi)), float(v))
        for r, xi in zip([*rows, *floor_held(lookup)], stage_only([*rows, *lookup])):
            lead = lead_ms(r)
            times = (_f(r, "kernel_alone_ms") - lead, _f(r, "kernel_corun_ms") - lead,
                     _f(r, "stage_alone_ms"), _f(r, "stage_corun_ms"))
            gpu = gpu_of(r["gpu"]).name
            self.pair_measured.setdefault((gpu, r["kernel"], _stage_key(xi), is_resident(r)),
                                          times)
            if not is_resident(r):
                self.kernel_measured.setdefault((gpu, r["kernel"], int(_f(r, "rows"))),
                                                times[0])
        for r in alone:
            if not is_resident(r):
                self.kernel_measured.setdefault(
                    (gpu_of(r["gpu"]).name, r["kernel"], int(_f(r, "rows"))),
                    _f(r, "kernel_alone_ms"))
        return self

    def kernel_alone_ms(self, gpu: str, kernel: str, rows: int) -> float | None:
        """The kernel's time alone where the profile timed it at `rows`; else, where it
        timed the same kernel (same nodes and launch shape) at two or more other row
        counts, read off the line through the nearest ones (`interpolate_in_rows`); else
        None. At a fixed launch shape the time follows the rows almost on a line
        (heavy-small's whole pipeline, 1056 blocks a warp a row: 0.288 / 0.557 / 0.803
        ms at 8192 / 16384 / 24576 rows), where the trees put b12288 at 1.035 ms against
        0.407 measured."""
        exact = self.kernel_measured.get((gpu, kernel, rows))
        if exact is not None:
            return exact
        return interpolate_in_rows(self.kernel_timed(gpu, kernel), rows)

    def kernel_timed(self, gpu: str, kernel: str) -> list[tuple[int, float]]:
        """(rows, ms alone) wherever the profile timed this kernel on this GPU kind, by rows."""
        return sorted((r, ms) for (g, k, r), ms in self.kernel_measured.items()
                      if g == gpu and k == kernel)

    def stage_timed(self, key: tuple, trains_on: str = "") -> float | None:
        """A stage's alone ms where a profile timed it: the fitted rows' for any pipeline,
        else the lookup rows' for a step that trains on their pipeline; else None."""
        timed = self.stage_measured.get(key)
        if timed is None:
            timed = self.stage_looked_up.get((trains_on, key))
        return timed

    def predict_stage_ms(self, rows: Sequence[dict]) -> np.ndarray:
        """`rows` may name the pipeline the step trains on (`trains_on`, stage_query's)."""
        x = stage_only(rows)
        out = self.estimators["stage_alone"].predict(x)
        for i, (r, xi) in enumerate(zip(rows, x)):
            timed = self.stage_timed(_stage_key(xi), r.get("trains_on", ""))
            if timed is not None:
                out[i] = timed
        return out

    def predict(self, rows: Sequence[dict],
                alone_ms: Sequence[float | None] = ()) -> dict[str, np.ndarray]:
        """`alone_ms`: the kernel's time alone for each row where known otherwise (the
        profile's, or `kernel_alone_ms`'s), in place of the trees'."""
        xk, xks = design(rows)
        alone = self.estimators["kernel_alone"].predict(xk)
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
                "kernel_corun": (left + np.array([_f(r, "stage_alone_ms") for r in rows]))
                * self.estimators["kernel_corun"].predict(xks),
                "stage_slowdown": self.estimators["stage_slowdown"].predict(xks),
                "stage_alone": stage}


class RapStyleModel:
    """RAP's kind of model: kernel latency linear per op type in [count, fused columns,
    average width]; co-run = standalone; each stage hides a fixed kernel time and takes
    its profiled time (here: the training rows' median for that stage)."""

    def fit(self, rows: Sequence[dict]) -> RapStyleModel:
        from sklearn.linear_model import LinearRegression

        y = targets(rows)
        self.lin = LinearRegression(positive=True).fit(self._x(rows), y["kernel_alone"])
        self.capacity: dict[str, float] = {}
        for s in STAGES:
            hid = [_f(r, "kernel_alone_ms") for r, f in zip(rows, y["stage_slowdown"])
                   if r["stage"] == s and f <= 1.02]
            self.capacity[s] = max(hid, default=0.0)
        self.stage_ms = {s: float(np.median([_f(r, "stage_alone_ms") for r in rows
                                             if r["stage"] == s] or [0.0])) for s in STAGES}
        return self

    @staticmethod
    def _x(rows: Sequence[dict]) -> np.ndarray:
        out = []
        for r in rows:
            width = _f(r, "elements") / max(_f(r, "rows"), 1.0)
            counts = [_f(r, f"op_{op.value}") for op in OpKind]
            out.append(counts + [c * _f(r, "chains") for c in counts] +
                       [c * width for c in counts])
        return np.array(out)

    def predict(self, rows: Sequence[dict]) -> dict[str, np.ndarray]:
        alone = np.maximum(self.lin.predict(self._x(rows)), 1e-4)
        over = np.array([max(0.0, a - self.capacity.get(r["stage"], 0.0)) /
                         max(_f(r, "stage_alone_ms"), 1e-6) for a, r in zip(alone, rows)])
        stage = np.array([self.stage_ms.get(r["stage"], 0.0) for r in rows])
        return {"kernel_alone": alone, "kernel_corun": alone, "stage_slowdown": 1 + over,
                "stage_alone": stage}


class AnalyticModel:
    """The foundation's analytic estimator, with one scale per target fitted on the
    training rows (the median of measured over predicted)."""

    def fit(self, rows: Sequence[dict]) -> AnalyticModel:
        raw, y = self._raw(rows), targets(rows)
        y["kernel_corun"] = measured(rows)["kernel_corun"] / np.maximum(y["kernel_alone"],
                                                                        1e-9)  # its factor
        self.scale = {t: float(np.median(y[t] / np.maximum(raw[t], 1e-9))) for t in TARGETS}
        return self

    @staticmethod
    def _raw(rows: Sequence[dict]) -> dict[str, np.ndarray]:
        from corun.costmodel.analytic import AnalyticCostModel
        from corun.spec import Precision, Stage

        cm = AnalyticCostModel()
        out = {t: [] for t in TARGETS}
        for r in rows:
            hw = hardware_preset(preset_of(r["gpu"]), 1)
            ops = tuple(op for op in OpKind if _f(r, f"op_{op.value}") > 0)
            kw = KernelWork(r["kernel"], int(_f(r, "rows")), _f(r, "elements"),
                            _f(r, "int_ops"), _f(r, "kernel_bytes"), ops, int(_f(r, "blocks")),
                            int(_f(r, "threads")), int(_f(r, "registers", 40)),
                            int(_f(r, "nodes")))
            sw = StageWork(Stage(r["stage"]), _f(r, "stage_flops"), _f(r, "stage_bytes"),
                           Precision.FP32, int(_f(r, "stage_kernels")),
                           _f(r, "stage_parallelism"))
            effect = cm.corun(kw, sw, hw, True)
            out["kernel_alone"].append(cm.kernel_ms(kw, hw))
            out["kernel_corun"].append(effect.kernel_factor)
            out["stage_slowdown"].append(effect.stage_factor)
            out["stage_alone"].append(cm.stage_ms(sw, hw))
        return {t: np.array(v) for t, v in out.items()}

    def predict(self, rows: Sequence[dict]) -> dict[str, np.ndarray]:
        raw = self._raw(rows)
        alone = raw["kernel_alone"] * self.scale["kernel_alone"]
        return {"kernel_alone": alone,
                "kernel_corun": alone * raw["kernel_corun"] * self.scale["kernel_corun"],
                "stage_slowdown": raw["stage_slowdown"] * self.scale["stage_slowdown"],
                "stage_alone": raw["stage_alone"] * self.scale["stage_alone"]}


def measured(rows: Sequence[dict]) -> dict[str, np.ndarray]:
    """The targets as times (a resident row's kernel co-run from its stage's start)."""
    y = targets(rows)
    return {"kernel_alone": y["kernel_alone"],
            "kernel_corun": np.array([_f(r, "kernel_corun_ms") - lead_ms(r) for r in rows]),
            "stage_slowdown": y["stage_slowdown"], "stage_alone": y["stage_alone"]}


def split(rows: Sequence[dict], fraction: float, seed: int) -> tuple[list[dict], list[dict]]:
    """Training rows, and held-out rows: every row of a held-out model/batch
    combination or of a held-out kernel feature set (all its launch shapes)."""
    rng = np.random.default_rng(seed)
    combos = sorted({(r["model"], r["batch"]) for r in rows})
    shapes = sorted({r["kernel"].rsplit(":", 1)[0] for r in rows})
    k_c = max(1, round(fraction * len(combos))) if len(combos) > 1 else 0
    k_s = max(1, round(fraction * len(shapes))) if len(shapes) > 1 else 0
    held_c = {combos[i] for i in rng.choice(len(combos), k_c, replace=False)}
    held_s = {shapes[i] for i in rng.choice(len(shapes), k_s, replace=False)}
    train, test = [], []
    for r in rows:
        out = (r["model"], r["batch"]) in held_c or r["kernel"].rsplit(":", 1)[0] in held_s
        (test if out else train).append(r)
    if not train or not test:
        raise SpecError("profile rows", len(rows), "at least two model/batch combinations "
                        "or two kernel feature sets, so some can be held out")
    return train, test


@dataclass(frozen=True)
class Score:
    mape_pct: float
    within_10pct: float


def score(pred: np.ndarray, true: np.ndarray) -> Score:
    rel = np.abs(pred - true) / np.maximum(np.abs(true), 1e-9)
    return Score(float(100 * rel.mean()), float((rel <= 0.10).mean()))


def evaluate(rows: Sequence[dict], fraction: float = 0.25,
             seed: int = 0) -> tuple[CoRunModel, dict[str, dict[str, Score]], list[dict], dict]:
    """Fit the learned model and both baselines on the training split; score all three
    on the held-out rows. Returns the learned model, scores by model and target, the
    held-out rows and the learned model's held-out predictions. Where resident rows are
    held out, "learned, resident rows" scores the learned model's co-run targets on
    them alone."""
    train, test = split([r for r in rows if fitted(r)], fraction, seed)
    truth = measured(test)
    models = {"learned": CoRunModel(seed), "analytic": AnalyticModel(),
              "rap-style": RapStyleModel()}
    # a stage's time alone does not depend on the kernel: it is scored on the model/batch
    # combinations held out, which the training rows never timed
    trained = {(r["model"], r["batch"]) for r in train}
    unseen = np.array([(r["model"], r["batch"]) not in trained for r in test])
    if not unseen.any():  # every combination trained on: score the rows there are
        unseen[:] = True
    scores, preds = {}, {}
    for name, m in models.items():
        m.fit(train)
        preds[name] = m.predict(test)
        scores[name] = {t: score(np.asarray(preds[name][t])[unseen], truth[t][unseen])
                        if t == "stage_alone" else score(preds[name][t], truth[t])
                        for t in TARGETS}
    resident = np.array([is_resident(r) for r in test])
    if resident.any():
        scores["learned, resident rows"] = {
            t: score(np.asarray(preds["learned"][t])[resident], truth[t][resident])
            for t in CORUN_TARGETS}
    return models["learned"], scores, test, preds["learned"]


def library_versions() -> dict[str, str]:
    import sklearn

    return {"scikit-learn": sklearn.__version__, "numpy": np.__version__,
            "corun-features": FEATURES_VERSION}


GZIP_MAGIC = b"\x1f\x8b"


def save_model(model: CoRunModel, path: str | Path, meta: dict) -> None:
    """The model and its metadata, pickled and gzipped (the H200 model: 5.1 MB as a plain
    pickle, 1.3 MB gzipped; the checkout sent to the GPU machine is capped at 64 MiB), the
    gzip header's time left at 0 so that one fit writes the same bytes twice."""
    from corun.spec.serde import write_atomic

    write_atomic(path, gzip.compress(pickle.dumps({"model": model, "meta": meta}), mtime=0))


def load_model(path: str | Path, data: str | Path | None = None) -> tuple[CoRunModel, dict]:
    """A saved model (gzipped, or a plain pickle as written before); an error if it was
    fitted with other library versions, or on other data than `data` (when given) — never
    silently used."""
    raw = Path(path).read_bytes()
    blob = pickle.loads(gzip.decompress(raw) if raw[:2] == GZIP_MAGIC else raw)
    meta = blob["meta"]
    here = library_versions()
    for lib in sorted(set(meta["versions"]) | set(here)):
        v = meta["versions"].get(lib)
        if here.get(lib) != v:
            raise SpecError(f"{path}: {lib}", v, f"the version installed here ({here.get(lib)}):"
                            " refit with corun fit")
    if data is not None and meta["data_sha256"] != data_hash(data):
        raise SpecError(f"{path}: data_sha256", meta["data_sha256"][:12],
                        f"the hash of {data} ({data_hash(data)[:12]}): refit with corun fit")
    return blob["model"], meta


def stage_row(stage: StageWork | None) -> dict[str, float]:
    """A StageWork as the profile's stage columns (zeros without a stage): one mapping
    for the profiler's CSV rows and the rows the simulator asks about."""
    if stage is None:
        return dict.fromkeys(("stage_flops", "stage_bytes", "stage_kernels",
                              "stage_parallelism", "stage_lookups", *SHAPE_COLUMNS,
                              "stage_fused_update", "stage_bag_kernel",
                              "stage_table_bytes", "stage_hot_row"), 0.0)
    return {"stage_flops": stage.flops, "stage_bytes": stage.hbm_bytes,
            "stage_kernels": stage.kernels, "stage_parallelism": stage.parallelism,
            "stage_lookups": stage.lookups, "stage_fused_update": float(stage.fused_update),
            "stage_bag_kernel": float(stage.bag_kernel),
            "stage_table_bytes": float(stage.table_bytes),
            "stage_hot_row": float(stage.hot_row_update),
            **dict(zip(SHAPE_COLUMNS, (float(stage.embedding_dim), float(stage.feature_count),
                                       float(stage.cross_network))))}


def work_row(kernel: KernelWork, stage: StageWork | None, stage_alone_ms: float,
             hw: Hardware) -> dict:
    """A profile-like row for a kernel (and a stage) the simulator asks about."""
    counts = dict(kernel.op_counts)
    regs = kernel.registers_per_thread
    row = {"gpu": hw.gpu.name, "kernel": kernel.name, "rows": kernel.rows,
           "elements": kernel.elements, "int_ops": kernel.int_ops,
           "kernel_bytes": kernel.hbm_bytes, "blocks": kernel.blocks,
           "threads": kernel.threads_per_block, "registers": regs,
           "occupancy": hw.gpu.occupancy(kernel.blocks, kernel.threads_per_block, regs),
           "chains": kernel.chains, "nodes": kernel.node_count,
           "has_lists": int(kernel.has_lists), "warp_rows": int(kernel.warp_rows),
           **{f"op_{op.value}": counts.get(op, 0) for op in OpKind},
           "stage": stage.stage.value if stage else STAGES[0], **stage_row(stage),
           "stage_alone_ms": stage_alone_ms, "kernel_alone_ms": 0.0}
    return {k: str(v) if k in ("gpu", "kernel", "stage") else v for k, v in row.items()}


class LearnedCostModel(CostModel):
    """The simulator's cost model where a fitted model exists for the GPU: stage times,
    kernel times and co-run effects as the profile measured them where it did, learned
    elsewhere; host-CPU times from the analytic model. The profile's whole-run times
    become the rates the simulator applies while kernel and stage overlap
    (CoRunEffect.from_whole_run)."""

    def __init__(self, model: CoRunModel, meta: dict, fitted_on: str | None = None,
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
        self.name = f"learned (data {meta['data_sha256'][:10]}, {meta['rows']} rows"
        self.name += f", fitted on {fitted_on}, transferred)" if fitted_on else ")"

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
        known = self.model.kernel_alone_ms(hw.gpu.name, work.key, work.rows)
        if known is not None:
            return known
        return float(self.model.predict([work_row(work, None, 0.0, hw)])["kernel_alone"][0])

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
        """The measured pair where the profile timed it, else the model's prediction (the
        predicted ones in one call)."""
        out: list[WholeRun | None] = [
            self.model.pair_measured.get(
                (hw.gpu.name, kernel.key, stage_key(hw.gpu.name, stage), resident))
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

    def caveat(self, model: Model, stages: Sequence[StageWork], hw: Hardware) -> str | None:
        """Says which stages no profile timed on this GPU: at a batch the model was not
        profiled at the fit interpolates, or extrapolates past the profiled batches (and
        has been predicted 9% long there); for a model never profiled it extrapolates,
        and has been far off (heavy-mlp: its stages 72-113% slow), or borrows another model's
        stages whose features it shares. Asked once per simulated plan, so memoised."""
        return self._cached(("caveat", model, tuple(stages), hw.gpu.name),
                            lambda: self._caveat(model, stages, hw))

    def _caveat(self, model: Model, stages: Sequence[StageWork], hw: Hardware) -> str | None:
        if model.cuda_graphs and all(graph_key(hw.gpu.name, w) in self.graphs.measured
                                     for w in stages):
            return None  # the graphed step was timed at this batch
        new = [w for w in stages
               if self.model.stage_timed(stage_key(hw.gpu.name, w), w.trains_on) is None]
        graphed = ("the graphed step was not timed at this batch, so each stage is its eager "
                   "time less the stage's fitted saving"
                   if model.cuda_graphs else "")
        trains_on = stages[0].trains_on if stages else ""
        batches = sorted(self.profiled.get((hw.gpu.name, model.name), set())
                         | self.profiled.get((hw.gpu.name, model.name, trains_on), set()))
        if not new and (batches or not self.profiled):
            return graphed or None
        graphed = "; " + graphed if graphed else ""
        if not new:  # every stage matches another model's profiled one, feature for feature
            return (f"{model.name} was never profiled on {hw.gpu.name}: its training stages "
                    "take the times of another model's profiled stages with the same "
                    "features (work, model shape, the tables' bytes), which leave out "
                    "whatever else sets a stage's speed (before the tables' bytes were a "
                    "feature, heavy-small ran 11-12% faster than the heavy-fused rows it "
                    "matched); `corun profile` "
                    "then `corun fit` measure them" + graphed)
        err = self.meta.get("heldout", {}).get("learned", {}).get("stage_alone", {})
        held = f"held-out error {err['mape_pct']:.0f}% on model-batch pairs not fitted" \
            if err else "no held-out error on record"
        if batches:
            how = f"interpolated ({held})" if batches[0] <= model.batch_per_gpu <= batches[-1] \
                else (f"extrapolated past the profiled batches ({held}; heavy-lean's embedding "
                      "update at b32768, profiled to b24576: 5.79 ms predicted, 5.29 measured); "
                      "`corun profile --models "
                      f"{model.name} --batches {model.batch_per_gpu} --out DIR` then `corun "
                      "fit` measure them")
            return (f"{model.name} was profiled on {hw.gpu.name} at batch "
                    f"{', '.join(map(str, batches))}, not {model.batch_per_gpu}: {len(new)} "
                    f"of {len(stages)} training stages' times are {how}" + graphed)
        return (f"{model.name} was never profiled on {hw.gpu.name}: its training stages' "
                f"times are extrapolated ({held}; 72-113% on heavy-mlp, a model never "
                "profiled); `corun profile` then `corun "
                "fit` measure them" + graphed)


def stage_query(gpu: str, work: StageWork) -> dict:
    """A stage the simulator asks about on GPU `gpu`, as a profile-like row (with the
    pipeline it trains on, which picks looked-up stage times: CoRunModel.stage_timed)."""
    return {"gpu": gpu, "stage": work.stage.value, "trains_on": work.trains_on,
            **stage_row(work)}


def stage_key(gpu: str, work: StageWork) -> tuple:
    """A stage's profile features as a lookup key (CoRunModel.stage_measured's)."""
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
    savings = fit_savings(by_stage, lambda key: model.stage_measured.get(key[1]))
    return GraphedStages({key: ms for (_, key), ms in by_stage.items()}, savings)


def profiled_batches(folder: Path) -> dict[tuple[str, ...], set[int]]:
    """(GPU kind name, model name) -> the batches the fitted profiles under `folder`
    timed; (GPU kind name, model name, pipeline) -> those its lookup rows timed, training
    on that pipeline (CoRunModel.stage_looked_up)."""
    out: dict[tuple[str, ...], set[int]] = {}
    for r in read_profile(folder, corrected=False):  # batches only: no stage time read
        out.setdefault((gpu_of(r["gpu"]).name, r["model"]), set()).add(int(r["batch"]))
    for r in lookup_rows(folder, PROFILE, corrected=False):
        out.setdefault((gpu_of(r["gpu"]).name, r["model"], r["pipeline"]), set()).add(
            int(r["batch"]))
    return out


def cost_model_for(hw: Hardware) -> CostModel:
    """The learned model fitted for this GPU kind (costmodel/data/<preset>/model.pkl);
    else one fitted on another kind, applied through the GPU-normalised features (a
    what-if for a GPU nobody profiled: trust it less, its name says so); else the
    analytic estimator."""
    from corun.costmodel.analytic import AnalyticCostModel

    try:
        own = preset_of(hw.gpu.name)
    except SpecError:
        own = None
    for preset in ([own] if own else []) + [p for p in GPU_PRESETS if p != own]:
        path = DATA_DIR / preset / "model.pkl"
        if path.exists():
            return _learned(path, None if preset == own else preset)
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


def _learned(path: Path, fitted_on: str | None) -> LearnedCostModel:
    """One LearnedCostModel per state of the model file, its CSVs and the library
    versions: every simulate() asks for one, so it is loaded (and its data hashed) once
    and its memoised answers serve every later call."""
    files = [path, *data_files(path.parent)]
    files += [path.parent / f for f in (GRAPHED_CSV, SAVING_CSV, ROOM_FILE)
              if (path.parent / f).exists()]
    key = (str(path), fitted_on, tuple((f.name, f.stat().st_mtime_ns, f.stat().st_size)
                                       for f in files),
           tuple(sorted(library_versions().items())))
    if key not in _LOADED:
        _LOADED[key] = LearnedCostModel(*_load_or_refit(path), fitted_on,
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

    from corun.spec.serde import cache_dir, write_atomic

    try:
        return load_model(path, path.parent)
    except Exception as e:  # noqa: BLE001 -- under other versions unpickling itself may fail
        report = path.with_suffix(".json")  # corun fit writes the meta beside the pickle
        meta = json.loads(report.read_text()) if report.exists() else {}
        digest = data_hash(path.parent)
        key = digest[:16] + "-" + "-".join(
            f"{k}{v}" for k, v in sorted(library_versions().items()))
        cached = cache_dir() / "models" / f"{path.parent.name}-{key}.pkl"
        if cached.exists():
            return load_model(cached, path.parent)
        print(f"corun: {e}; refitting on {path.parent} (once)", file=sys.stderr)
        rows = fit_rows(path.parent)
        model = CoRunModel(int(meta.get("seed", 0))).fit(rows, lookup_rows(path.parent),
                                                         graphed_rows(path.parent))
        meta = {**meta, "data_sha256": digest, "rows": len(rows),
                "versions": library_versions(), "refitted_from": str(path)}
        cached.parent.mkdir(parents=True, exist_ok=True)
        save_model(model, cached, meta)
        write_atomic(cached.with_suffix(".json"), json.dumps(meta, indent=1))
        return model, meta
