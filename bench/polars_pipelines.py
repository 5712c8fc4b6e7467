"""The reference pipelines written in polars expressions: the CPU dataframe baseline.

polars is what a user would reach for on a many-core host; it runs on every core. No
dataframe library has Velox's sigrid_hash, so it is written here with polars' wrapping
UInt64 arithmetic (shifts as multiplications and divisions by powers of two) and checked
bit-exact against our reference. Covers `kaggle`, `terabyte` and `multihot`: every op their
chains use.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl
import pyarrow as pa

from backend.columns import ColumnData
from spec import OpKind, Pipeline, Shape

U = pl.UInt64
SUPPORTED = {OpKind.FILL_NULL, OpKind.SIGRID_HASH, OpKind.FIRSTX, OpKind.LOGIT, OpKind.BOXCOX,
             OpKind.BUCKETIZE}


def _shl(e: pl.Expr, k: int) -> pl.Expr:
    return e * pl.lit(1 << k, U)


def _shr(e: pl.Expr, k: int) -> pl.Expr:
    return e // pl.lit(1 << k, U)


def sigrid_stages(lf: pl.LazyFrame, salt: int) -> pl.LazyFrame:
    """Column `h` = sigrid_hash(`x`, salt, `m`): one stage per step, so no subexpression
    is duplicated (an expression referring to `k` twice doubles at every step)."""
    k = pl.col("k")
    steps = [
        pl.col("x").cast(U, wrap_numerical=True),
        (k ^ pl.lit(2**64 - 1, U)) + _shl(k, 21),
        k ^ _shr(k, 24),
        k + _shl(k, 3) + _shl(k, 8),
        k ^ _shr(k, 14),
        k + _shl(k, 2) + _shl(k, 4),
        k ^ _shr(k, 28),
        k + _shl(k, 31),
    ]
    for step in steps:
        lf = lf.with_columns(step.alias("k"))
    kmul, upper = pl.lit(0x9DDFEA08EB382D69, U), pl.lit(salt % 2**64, U)
    lf = lf.with_columns(((k ^ upper) * kmul).alias("k"))
    lf = lf.with_columns((k ^ _shr(k, 47)).alias("k"))
    lf = lf.with_columns(((upper ^ k) * kmul).alias("k"))
    lf = lf.with_columns((k ^ _shr(k, 47)).alias("k"))
    h = (k * kmul).cast(pl.Int64, wrap_numerical=True)
    # polars' % on signed ints is a floor-mod, like Python's; m == 1 gives 0 as it should
    return lf.with_columns((h % pl.col("m")).alias("h"))


def _op(node, e: pl.Expr, is_list: bool) -> pl.Expr:
    p = node.params
    if node.op is OpKind.FILL_NULL:
        if is_list:
            return pl.when(e.is_null()).then(pl.lit([p["value"]], pl.List(pl.Int64))).otherwise(e)
        return e.fill_null(p["value"])
    if node.op is OpKind.FIRSTX:
        return e.list.head(max(p["x"], 0))
    if node.op is OpKind.LOGIT:
        eps = np.float32(p["eps"])
        t = e.clip(eps, np.float32(1) - eps)
        return (t / (pl.lit(np.float32(1)) - t)).cast(pl.Float64).log().cast(pl.Float32)
    if node.op is OpKind.BOXCOX:
        lam = p["lambda"]
        pos = e > 0
        if lam == 0:
            val = e.cast(pl.Float64).log().cast(pl.Float32)
        else:
            lam32 = np.float32(lam)
            pw = e.cast(pl.Float64).pow(float(lam32)).cast(pl.Float32)
            val = ((pw - pl.lit(np.float32(1))) / pl.lit(lam32)).cast(pl.Float32)
        return pl.when(pos).then(val).otherwise(e)
    if node.op is OpKind.BUCKETIZE:
        b = p["borders"]
        if any(b[i] >= b[i + 1] for i in range(len(b) - 1)):
            raise NotImplementedError("polars baseline: strictly increasing borders only")
        below = pl.sum_horizontal([(e.cast(pl.Float64) > x).cast(pl.Int32) for x in b])
        nan = pl.lit(1 if len(b) >= 2 else 0, pl.Int32)
        return pl.when(e.cast(pl.Float64).is_nan()).then(nan).otherwise(below).cast(pl.Int32)
    raise NotImplementedError(f"polars baseline: {node.op.value}")


def supports(pipeline: Pipeline) -> bool:
    """Dense chains of supported ops; sparse chains fill_null -> sigrid_hash -> firstx."""
    if not all(n.op in SUPPORTED for n in pipeline.nodes):
        return False
    for s in pipeline.sparse_outputs:
        chain = _chain(pipeline, s.node)
        if [n.op for n in chain] not in ([OpKind.FILL_NULL, OpKind.SIGRID_HASH, OpKind.FIRSTX],
                                         [OpKind.FILL_NULL, OpKind.BUCKETIZE]):
            return False
    return True


def _chain(pipeline: Pipeline, out: str) -> list:
    chain = []
    cur = out
    while cur in pipeline.node_by_name:
        chain.append(pipeline.node_by_name[cur])
        cur = pipeline.node_by_name[cur].input
    return list(reversed(chain))


def run(pipeline: Pipeline, df: pl.DataFrame) -> pl.DataFrame:
    """Every pipeline output as a column of one DataFrame."""
    cols = pipeline.columns
    simple = []
    hashed = []
    for out in list(pipeline.dense_outputs) + [s.node for s in pipeline.sparse_outputs]:
        chain = _chain(pipeline, out)
        if any(n.op is OpKind.SIGRID_HASH for n in chain):
            hashed.append(chain)
            continue
        e = pl.col(chain[0].input)
        for node in chain:
            e = _op(node, e, cols[node.input].shape is Shape.LIST)
        simple.append(e.alias(out))
    result = df.select(simple)
    if not hashed:
        return result
    salts = {c[1].params["salt"] for c in hashed}
    assert len(salts) == 1, "polars baseline: one salt"
    filled = df.select([_op(c[0], pl.col(c[0].input), True).alias(c[-1].name) for c in hashed])
    lengths = filled.select([pl.col(c).list.len() for c in filled.columns])
    flat = pl.concat([filled[c].explode() for c in filled.columns])
    m = np.repeat([c[1].params["max_value"] for c in hashed],
                  [int(lengths[c].sum()) for c in filled.columns])
    h = sigrid_stages(pl.LazyFrame({"x": flat, "m": m}), salts.pop()).collect()["h"]
    start = 0
    out_cols = []
    for chain, name in zip(hashed, filled.columns):
        n = lengths[name].to_numpy()
        off = np.zeros(len(n) + 1, np.int32)
        np.cumsum(n, out=off[1:])
        values = h.slice(start, int(off[-1])).to_arrow()
        start += int(off[-1])
        lst = pl.from_arrow(pa.ListArray.from_arrays(pa.array(off), values)).alias(name)
        out_cols.append(lst.list.head(max(chain[2].params["x"], 0)))
    return result.with_columns(out_cols)


def frame(pipeline: Pipeline, inputs: Mapping[str, ColumnData]) -> pl.DataFrame:
    data = {}
    for c in pipeline.inputs:
        d = inputs[c.name]
        mask = None if d.valid is None else ~d.valid
        if d.offsets is None:
            data[c.name] = pl.from_arrow(pa.array(d.values, mask=mask))
        else:
            arr = pa.ListArray.from_arrays(pa.array(d.offsets.astype(np.int32)),
                                           pa.array(d.values),
                                           mask=None if mask is None else pa.array(mask))
            data[c.name] = pl.from_arrow(arr)
    return pl.DataFrame(data)


def to_columns(df: pl.DataFrame) -> dict[str, ColumnData]:
    out = {}
    for name in df.columns:
        arr = df[name].to_arrow()
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
            off = np.asarray(arr.offsets).astype(np.int64)
            vals = np.asarray(arr.values)
            out[name] = ColumnData(vals[off[0] : off[-1]], off - off[0])
        else:
            out[name] = ColumnData(np.asarray(arr))
    return out
