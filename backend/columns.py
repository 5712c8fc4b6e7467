"""Host column data: scalar or list (values + int64 offsets), with an optional validity mask.

The list layout is Arrow's / Velox's / TorchRec KeyedJaggedTensor's: row r's values are
values[offsets[r]:offsets[r+1]]. A null list row stores no values (length 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from corun.spec import Column, DType, Shape, SpecError

NP_DTYPE = {DType.FLOAT32: np.float32, DType.INT32: np.int32, DType.INT64: np.int64}


@dataclass(frozen=True, eq=False)
class ColumnData:
    values: np.ndarray
    offsets: np.ndarray | None = None
    valid: np.ndarray | None = None
    """bool per row; None means no nulls."""

    @property
    def rows(self) -> int:
        return len(self.offsets) - 1 if self.offsets is not None else len(self.values)

    @property
    def is_list(self) -> bool:
        return self.offsets is not None

    def lengths(self) -> np.ndarray:
        assert self.offsets is not None
        return np.diff(self.offsets)

    def row(self, r: int) -> np.ndarray:
        if self.offsets is None:
            return self.values[r : r + 1]
        return self.values[self.offsets[r] : self.offsets[r + 1]]

    def check(self, col: Column, name: str) -> None:
        """This data has `col`'s type; a clear error otherwise."""
        want = NP_DTYPE[col.dtype]
        if self.values.dtype != want:
            raise TypeError(f"column {name!r}: values are {self.values.dtype}, expected "
                            f"{np.dtype(want)}")
        if (col.shape is Shape.LIST) != self.is_list:
            raise TypeError(f"column {name!r}: expected a {col.shape.value} column")
        if self.valid is not None and not col.nullable:
            raise TypeError(f"column {name!r} carries a validity mask but is declared non-null")
        if self.is_list and (col.length_range is not None or col.length_histogram):
            self._check_lengths(col, name)

    def _check_lengths(self, col: Column, name: str) -> None:
        """Every non-null row has a length the column declares (Column.spread): kernels
        rely on it where it fixes the length (Pipeline.fixed_lengths)."""
        lengths = np.diff(self.offsets)
        if col.length_range is not None:
            lo, hi = col.length_range
            bad = (lengths < lo) | (lengths > hi)
            allowed = f"within its length_range [{lo}, {hi}]"
        else:
            declared = np.array(sorted(k for k, _ in col.spread), np.int64)
            bad = ~np.isin(lengths, declared)
            allowed = f"one of its length_histogram's lengths {declared.tolist()}"
        if self.valid is not None:
            bad &= self.valid.astype(bool)
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            raise SpecError(f"column {name!r} row {r}: length", int(lengths[r]),
                            f"{allowed} ({int(bad.sum())} rows are not)")


def equal(a: ColumnData, b: ColumnData, max_ulp: int = 1) -> tuple[bool, int]:
    """Same offsets, identical integers, floats within `max_ulp` (NaN == NaN).
    Returns (equal, first differing row or -1)."""
    if a.is_list != b.is_list:
        return False, 0
    if a.is_list:
        if len(a.offsets) != len(b.offsets) or not np.array_equal(a.offsets, b.offsets):
            bad = np.nonzero(a.offsets[: len(b.offsets)] != b.offsets[: len(a.offsets)])[0]
            return False, int(bad[0]) - 1 if len(bad) and bad[0] > 0 else 0
    if a.values.shape != b.values.shape:
        return False, 0
    if a.values.dtype.kind == "f":
        x, y = a.values.astype(np.float32), b.values.astype(np.float32)
        both_nan = np.isnan(x) & np.isnan(y)
        xi = x.view(np.int32).astype(np.int64)
        yi = y.view(np.int32).astype(np.int64)
        # map to a monotone integer line so ulp distance is a difference
        xi = np.where(xi < 0, -(xi & 0x7FFFFFFF), xi)
        yi = np.where(yi < 0, -(yi & 0x7FFFFFFF), yi)
        bad_el = ~both_nan & (np.abs(xi - yi) > max_ulp)
    else:
        bad_el = a.values != b.values
    if not bad_el.any():
        return True, -1
    el = int(np.nonzero(bad_el)[0][0])
    row = el if not a.is_list else int(np.searchsorted(a.offsets, el, side="right") - 1)
    return False, row


def take_rows(col: ColumnData, rows: np.ndarray) -> ColumnData:
    """The given rows of a column, in that order (for sampled checks)."""
    valid = None if col.valid is None else col.valid[rows]
    if col.offsets is None:
        return ColumnData(col.values[rows], None, valid)
    lengths = col.offsets[rows + 1] - col.offsets[rows]
    off = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(lengths, out=off[1:])
    starts = np.repeat(col.offsets[rows], lengths)
    within = np.arange(int(off[-1])) - np.repeat(off[:-1], lengths)
    return ColumnData(col.values[starts + within], off, valid)
