"""Check preprocessed output against the NumPy reference on a random sample of rows."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from corun.backend.columns import ColumnData, equal, take_rows
from corun.backend.reference import run_reference
from corun.spec import Pipeline


class MismatchError(RuntimeError):
    """A preprocessed value differs from the reference: names the feature and the row."""

    def __init__(self, feature: str, row: int, want: np.ndarray, got: np.ndarray,
                 what: str = "") -> None:
        self.feature, self.row = feature, row
        where = f"row {row}" if row >= 0 else "the whole batch"
        super().__init__(f"feature {feature!r}, {where}: {what + ': ' if what else ''}"
                         f"reference {want.tolist()}, got {got.tolist()}")


def check_sample(pipeline: Pipeline, inputs: Mapping[str, ColumnData],
                 outputs: Mapping[str, ColumnData], rng: np.random.Generator,
                 rows: int) -> int:
    """Recompute `rows` random rows with the reference and compare every pipeline output
    present in `outputs`; raise MismatchError on the first difference. Returns rows
    checked."""
    total = next(iter(inputs.values())).rows
    pick = np.sort(rng.choice(total, min(rows, total), replace=False))
    sub = {c.name: take_rows(inputs[c.name], pick) for c in pipeline.inputs}
    ref = run_reference(pipeline, sub)
    names = list(pipeline.dense_outputs) + [s.node for s in pipeline.sparse_outputs]
    for name in names:
        if name not in outputs:
            continue
        got = take_rows(outputs[name], pick)
        ok, i = equal(ref[name], got)
        if not ok:
            i = max(i, 0)
            raise MismatchError(name, int(pick[i]), ref[name].row(i), got.row(i))
    return len(pick)
