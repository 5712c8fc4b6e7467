"""Held-out validation of the learned model against two baselines fitted on the same rows.

Validation holds out whole model/batch combinations and whole kernel feature sets, and
compares with the analytic estimator (one fitted scale per target) and a RAP-style model
(one linear term per op type on [count, fused columns, average width]; kernels run at
standalone speed; each stage has a fixed capacity of kernel time it hides)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from corun.costmodel.features import (
    CORUN_TARGETS,
    STAGES,
    TARGETS,
    fitted,
    lead_ms,
    num,
    preset_of,
    targets,
)
from corun.costmodel.learned import CoRunModel
from corun.costmodel.profile_data import (
    is_resident,
)
from corun.costmodel.types import KernelWork, StageWork
from corun.spec import OpKind, SpecError, hardware_preset


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
            hid = [num(r, "kernel_alone_ms") for r, f in zip(rows, y["stage_slowdown"])
                   if r["stage"] == s and f <= 1.02]
            self.capacity[s] = max(hid, default=0.0)
        self.stage_ms = {s: float(np.median([num(r, "stage_alone_ms") for r in rows
                                             if r["stage"] == s] or [0.0])) for s in STAGES}
        return self

    @staticmethod
    def _x(rows: Sequence[dict]) -> np.ndarray:
        out = []
        for r in rows:
            width = num(r, "elements") / max(num(r, "rows"), 1.0)
            counts = [num(r, f"op_{op.value}") for op in OpKind]
            out.append(counts + [c * num(r, "chains") for c in counts] +
                       [c * width for c in counts])
        return np.array(out)

    def predict(self, rows: Sequence[dict]) -> dict[str, np.ndarray]:
        alone = np.maximum(self.lin.predict(self._x(rows)), 1e-4)
        over = np.array([max(0.0, a - self.capacity.get(r["stage"], 0.0)) /
                         max(num(r, "stage_alone_ms"), 1e-6) for a, r in zip(alone, rows)])
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
            ops = tuple(op for op in OpKind if num(r, f"op_{op.value}") > 0)
            kw = KernelWork(r["kernel"], int(num(r, "rows")), num(r, "elements"),
                            num(r, "int_ops"), num(r, "kernel_bytes"), ops,
                            int(num(r, "blocks")), int(num(r, "threads")),
                            int(num(r, "registers", 40)), int(num(r, "nodes")))
            sw = StageWork(Stage(r["stage"]), num(r, "stage_flops"), num(r, "stage_bytes"),
                           Precision.FP32, int(num(r, "stage_kernels")),
                           num(r, "stage_parallelism"))
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
            "kernel_corun": np.array([num(r, "kernel_corun_ms") - lead_ms(r) for r in rows]),
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
