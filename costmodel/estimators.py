"""The learned model's regressors, as scikit-learn estimators."""

from __future__ import annotations

import numpy as np
from corun.costmodel.features import (
    KERNEL_BYTES_US_COLUMN,
    KERNEL_FLOOR_US,
    KERNEL_OPS_US_COLUMN,
    STAGE_ONEHOT_COLUMN,
    STAGES,
)
from sklearn.base import BaseEstimator, RegressorMixin, clone


def kernel_regressor(seed: int):
    """A kernel or co-run target: gradient-boosted trees on log y (scikit-learn's own)."""
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.ensemble import HistGradientBoostingRegressor

    return TransformedTargetRegressor(
        HistGradientBoostingRegressor(max_iter=300, learning_rate=0.08, random_state=seed),
        func=np.log, inverse_func=np.exp)


def kernel_alone_regressor(seed: int) -> OverRoofline:
    """The kernel-alone target: the trees on the kernel's time over its roofline."""
    return OverRoofline(kernel_regressor(seed))


class OverRoofline(RegressorMixin, BaseEstimator):
    """A kernel's time as `inner` fitted on its ratio to the kernel's roofline: the larger
    of its bytes at the copy ceiling and its integer work at the issue rate, plus
    `floor_us` (the device's least time a kernel takes). Trees answer a kernel unlike
    any profiled with the ratio of its nearest profiled ones, not their time: RAP's
    one-op kernels stream more bytes for less work than any fused chain profiled, and
    on raw times the trees put them at 2.2-3x what `corun calibrate` timed on an H100
    (validation/machines/h100-g-1.json, heavy-rehash at 16384 rows).

    X's columns KERNEL_BYTES_US_COLUMN and KERNEL_OPS_US_COLUMN are log1p of those two
    roofline times in microseconds (features.kernel_features); y must be positive.
    scikit-learn's estimator contract holds as for PerStageRidge."""

    def __init__(self, inner, floor_us: float = KERNEL_FLOOR_US) -> None:
        self.inner = inner
        self.floor_us = floor_us

    def roofline_ms(self, x: np.ndarray) -> np.ndarray:
        us = np.maximum(np.expm1(x[:, KERNEL_BYTES_US_COLUMN]),
                        np.expm1(x[:, KERNEL_OPS_US_COLUMN]))
        return (np.maximum(us, 0.0) + self.floor_us) * 1e-3

    def fit(self, X, y) -> OverRoofline:  # noqa: N803 - scikit-learn's names
        from sklearn.utils.validation import check_X_y

        x, y = check_X_y(X, y, y_numeric=True)
        if (y <= 0).any():
            raise ValueError("OverRoofline: y must be positive (a time)")
        if not self.floor_us > 0:
            raise ValueError(f"OverRoofline: floor_us must be positive, not {self.floor_us}")
        self.n_features_in_ = x.shape[1]
        self.inner_ = clone(self.inner).fit(x, y / self.roofline_ms(x))
        return self

    def predict(self, X) -> np.ndarray:  # noqa: N803 - scikit-learn's names
        from sklearn.utils.validation import check_array, check_is_fitted

        check_is_fitted(self)
        x = check_array(X)
        return self.inner_.predict(x) * self.roofline_ms(x)


def stage_regressor() -> PerStageRidge:
    """The stage-alone target: a power law per stage (PerStageRidge)."""
    return PerStageRidge()


class PerStageRidge(RegressorMixin, BaseEstimator):
    """Stage alone time: one log-log ridge model of the normalised work per training
    stage. Stage times come from few model/batch combinations, and a new model or batch
    lies outside them: trees cannot extrapolate, a power law of bytes, FLOPs and ids can.
    Each stage gets its own exponents (emb_bwd follows its ids, the MLPs their FLOPs):
    with the same features one shared model held out at 24.6-27.1% MAPE, one per stage
    at 12.2-14.9% (three splits of the profile, `corun fit --seed N`). A stage seen fewer
    than `min_rows` times falls back to the shared model.

    scikit-learn's estimator contract: `__init__` stores the hyperparameters, `fit(X, y)`
    sets the learned attributes (ending in `_`) and returns self, `predict` checks it was
    fitted; so `clone`, `get_params` and pickling work. X's columns from `stage_column`
    on are the one-hot of the stage (features.stage_only); y must be positive."""

    def __init__(self, stage_column: int = STAGE_ONEHOT_COLUMN, stages: int = len(STAGES),
                 min_rows: int = 4, alphas: tuple[float, ...] = (1e-3, 1e-2, 1e-1, 1.0, 10.0)):
        self.stage_column = stage_column
        self.stages = stages
        self.min_rows = min_rows
        self.alphas = alphas

    def _ridge(self):
        from sklearn.compose import TransformedTargetRegressor
        from sklearn.linear_model import RidgeCV

        return TransformedTargetRegressor(RidgeCV(alphas=self.alphas), func=np.log,
                                          inverse_func=np.exp)

    def _stage_of(self, x: np.ndarray) -> np.ndarray:
        onehot = x[:, self.stage_column:self.stage_column + self.stages]
        return np.where(onehot.any(axis=1), onehot.argmax(axis=1), -1)

    def fit(self, X, y) -> PerStageRidge:  # noqa: N803 - scikit-learn's names
        from sklearn.utils.validation import check_X_y

        x, y = check_X_y(X, y, y_numeric=True)
        if (y <= 0).any():
            raise ValueError("PerStageRidge: y must be positive (it is fitted on log y)")
        self.n_features_in_ = x.shape[1]
        self.shared_ = self._ridge().fit(x, y)
        stage = self._stage_of(x)
        self.by_stage_ = {s: self._ridge().fit(x[stage == s], y[stage == s])
                          for s in sorted(set(stage.tolist()) - {-1})
                          if (stage == s).sum() >= self.min_rows}
        return self

    def predict(self, X) -> np.ndarray:  # noqa: N803 - scikit-learn's names
        from sklearn.utils.validation import check_array, check_is_fitted

        check_is_fitted(self)
        x = check_array(X)
        out = self.shared_.predict(x)
        stage = self._stage_of(x)
        for s, model in self.by_stage_.items():
            if (stage == s).any():
                out[stage == s] = model.predict(x[stage == s])
        return out
