"""NumPy reference of every operator (../shared/OPS.md), written independently of the
Numba kernels so that it can judge them. Vectorised where NumPy allows; clarity first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from corun.backend.columns import ColumnData
from corun.spec import OpKind, Pipeline

U = np.uint64


def _twang(k: np.ndarray) -> np.ndarray:
    k = (~k) + (k << U(21))
    k ^= k >> U(24)
    k = k + (k << U(3)) + (k << U(8))
    k ^= k >> U(14)
    k = k + (k << U(2)) + (k << U(4))
    k ^= k >> U(28)
    return k + (k << U(31))


def sigrid_hash_ref(x: np.ndarray, salt: int, max_value: int) -> np.ndarray:
    if max_value == 1:
        return np.zeros(len(x), np.int64)
    kmul = U(0x9DDFEA08EB382D69)
    with np.errstate(over="ignore"):
        lower = _twang(x.astype(np.int64).view(U))
        upper = np.full(len(x), np.int64(salt)).view(U)
        a = (lower ^ upper) * kmul
        a ^= a >> U(47)
        b = (upper ^ a) * kmul
        b ^= b >> U(47)
        h = (b * kmul).view(np.int64)
    return np.mod(h, np.int64(max_value))  # floor-mod, as Python's %


def bucketize_ref(v: np.ndarray, borders: list[float]) -> np.ndarray:
    b = np.asarray(borders, np.float64)
    n = len(b)
    x = v.astype(np.float64)
    i = np.searchsorted(b, x, side="left")  # first index with b[i] >= x
    nxt = b[np.minimum(i + 1, n - 1)]
    out = np.where(i >= n - 1, i, np.where(x < nxt, i, i + 1))
    return np.where(np.isnan(x), 1 if n >= 2 else 0, out).astype(np.int32)


def logit_ref(v: np.ndarray, eps: float) -> np.ndarray:
    e = np.float32(eps)
    t = v.astype(np.float32)
    t = np.where(t < e, e, t)
    t = np.where(t > np.float32(1) - e, np.float32(1) - e, t)
    r = (t / (np.float32(1) - t)).astype(np.float32)
    return np.log(r.astype(np.float64)).astype(np.float32)


def boxcox_ref(v: np.ndarray, lam: float) -> np.ndarray:
    v = v.astype(np.float32)
    pos = v > 0
    safe = np.where(pos, v, np.float32(1)).astype(np.float64)
    if lam == 0:
        out = np.log(safe).astype(np.float32)
    else:
        lam32 = np.float32(lam)
        p = np.power(safe, np.float64(lam32)).astype(np.float32)
        out = ((p - np.float32(1)) / lam32).astype(np.float32)
    return np.where(pos, out, v)


def clamp_ref(v: np.ndarray, lo: float, hi: float) -> np.ndarray:
    lo_, hi_ = np.asarray(lo).astype(v.dtype), np.asarray(hi).astype(v.dtype)
    a = np.where(v < lo_, lo_, v)
    return np.where(a > hi_, hi_, a).astype(v.dtype)


def onehot_class_ref(v: np.ndarray, low: float, high: float, c: int) -> np.ndarray:
    step = np.float32((np.float32(high) - np.float32(low)) / np.float32(c))
    with np.errstate(over="ignore"):  # a float32 quotient may overflow to inf, as on the
        # GPU; inf (and NaN) fall outside [0, c) and so into class 0
        q = ((v.astype(np.float32) - np.float32(low)) / step).astype(np.float32)
    ok = (q >= 0) & (q < c)
    return np.where(ok, np.trunc(np.where(ok, q, 0)), 0).astype(np.int64)


def cast_ref(v: np.ndarray, to: str) -> np.ndarray:
    if to == "float32":
        return v.astype(np.float32)
    if v.dtype.kind != "f":
        return v.astype(np.int64)
    x = v.astype(np.float64)
    r = np.where(np.isnan(x), 0, np.sign(x) * np.floor(np.abs(x) + 0.5))
    limit = 9.2233720368547758e18  # 2^63: beyond it the cast saturates
    inside = np.clip(r, -limit / 2, limit / 2).astype(np.int64)
    out = np.where(r >= limit, np.iinfo(np.int64).max, inside)
    out = np.where(r <= -limit, np.iinfo(np.int64).min, out)
    big = (np.abs(r) > limit / 2) & (np.abs(r) < limit)  # exact in float64, cast separately
    out[big] = [int(x) for x in r[big]]
    return out.astype(np.int64)


def _gather(off: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Indices of the first lengths[r] values of each row r."""
    starts = np.repeat(off[:-1], lengths)
    within = np.arange(int(lengths.sum())) - np.repeat(_from_lengths(lengths)[:-1], lengths)
    return (starts + within).astype(np.int64)


def _from_lengths(lengths: np.ndarray) -> np.ndarray:
    off = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=off[1:])
    return off


def apply_op(op: OpKind, p: Mapping[str, Any], col: ColumnData) -> ColumnData:
    """One operator on one column."""
    v, off = col.values, col.offsets
    if op is OpKind.FILL_NULL:
        if col.valid is None:
            return ColumnData(v, off)
        fill = np.asarray(p["value"]).astype(v.dtype)
        if off is None:
            return ColumnData(np.where(col.valid, v, fill).astype(v.dtype))
        lengths = np.where(col.valid, np.diff(off), 1)
        new_off = _from_lengths(lengths)
        out = np.full(int(new_off[-1]), fill, v.dtype)
        keep = np.repeat(col.valid, lengths)
        out[keep] = v[_gather(off, np.where(col.valid, lengths, 0))]
        return ColumnData(out, new_off)
    elementwise = {
        OpKind.CAST: lambda x: cast_ref(x, p["to"]),
        OpKind.SIGRID_HASH: lambda x: sigrid_hash_ref(x, p["salt"], p["max_value"]),
        OpKind.BUCKETIZE: lambda x: bucketize_ref(x, p["borders"]),
        OpKind.LOGIT: lambda x: logit_ref(x, p["eps"]),
        OpKind.BOXCOX: lambda x: boxcox_ref(x, p["lambda"]),
        OpKind.CLAMP: lambda x: clamp_ref(x, p["lo"], p["hi"]),
        OpKind.CLAMP_LIST: lambda x: clamp_ref(x, p["lo"], p["hi"]),
        OpKind.MAPID: lambda x: mapid_ref(x, p["map"]),
    }
    if op in elementwise:
        return ColumnData(elementwise[op](v), off)
    if op is OpKind.FIRSTX:
        lengths = np.minimum(np.diff(off), max(p["x"], 0))
        return ColumnData(v[_gather(off, lengths)], _from_lengths(lengths))
    if op is OpKind.NGRAM:
        lengths = np.diff(off)
        m = np.minimum(p["n"], lengths)
        out_len = np.where(lengths > 0, (lengths - m + 1) * m, 0)
        new_off = _from_lengths(out_len)
        row = np.repeat(np.arange(len(lengths)), out_len)
        j = np.arange(new_off[-1]) - new_off[row]
        src = off[row] + j // m[row] + j % m[row]
        return ColumnData(v[src], new_off)
    if op is OpKind.ONEHOT:
        c = p["num_classes"]
        if off is None:
            first, present = v, np.ones(len(v), bool)
        else:
            present = np.diff(off) > 0
            first = v[np.minimum(off[:-1], max(len(v) - 1, 0))] if len(v) else np.zeros(
                len(off) - 1, v.dtype)
        k = np.where(present, onehot_class_ref(first, p["low"], p["high"], c), 0)
        out = np.zeros((len(k), c), np.int64)
        out[np.arange(len(k)), k] = 1
        return ColumnData(out.reshape(-1), np.arange(len(k) + 1, dtype=np.int64) * c)
    raise ValueError(f"unknown op {op}")


def mapid_ref(v: np.ndarray, table: list[int]) -> np.ndarray:
    t = np.asarray(table, np.int64)
    ok = (v >= 0) & (v < len(t))
    return np.where(ok, t[np.where(ok, v, 0)], 0).astype(np.int64)


def run_reference(pipeline: Pipeline, inputs: Mapping[str, ColumnData],
                  nodes: list[str] | None = None) -> dict[str, ColumnData]:
    """Every node's output (or those in `nodes` and what they need), in topological order."""
    cols: dict[str, ColumnData] = dict(inputs)
    for name in pipeline.order:
        node = pipeline.node_by_name[name]
        cols[name] = apply_op(node.op, node.params, cols[node.input])
    return cols if nodes is None else {n: cols[n] for n in nodes}
