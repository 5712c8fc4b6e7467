"""The learned model's regressors, as scikit-learn estimators."""

from __future__ import annotations

import numpy as np
from corun.costmodel.features import STAGE_ONEHOT_COLUMN, STAGES
from sklearn.base import BaseEstimator, RegressorMixin


def kernel_regressor(seed: int):
    """A kernel or co-run target: gradient-boosted trees on log y (scikit-learn's own)."""
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.ensemble import HistGradientBoostingRegressor

    return TransformedTargetRegressor(
        HistGradientBoostingRegressor(max_iter=300, learning_rate=0.08, random_state=seed),
        func=np.log, inverse_func=np.exp)


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
