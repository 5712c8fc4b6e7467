"""The reference pipelines of ../shared/OPS.md, built as `Pipeline` values."""

from __future__ import annotations

from typing import Any

from corun.spec.errors import SpecError
from corun.spec.model import (
    BUCKET_TABLE_ROWS,
    HEAVY_SMALL_TABLE_ROWS,
    HEAVY_TABLE_ROWS,
    KAGGLE_ROWS,
    MLPERF_MULTI_HOT,
    MLPERF_ROWS,
    TERABYTE_ROWS,
)
from corun.spec.pipeline import Column, DType, OpKind, OpNode, Pipeline, Shape, SparseOutput

EPS = 1e-5


def _dense(k: int) -> Column:
    # Criteo's integer features arrive as float32 (RAP's loader casts; not an op node).
    return Column(f"int_{k}", DType.FLOAT32, Shape.SCALAR, nullable=True)


def _sparse(k: int, mean_length: float = 1.0, dtype: DType = DType.INT64) -> Column:
    return Column(f"cat_{k}", dtype, Shape.LIST, nullable=True, mean_length=mean_length)


def _criteo_sparse(k: int) -> Column:
    """A Criteo categorical feature: one id, or null (an empty field in the file)."""
    return Column(f"cat_{k}", DType.INT64, Shape.LIST, nullable=True, length_range=(1, 1))


class _Builder:
    """Collects nodes; `add` returns the new node's name so chains read top-down."""

    def __init__(self) -> None:
        self.nodes: list[OpNode] = []

    def add(self, name: str, op: OpKind, src: str, **params: Any) -> str:
        self.nodes.append(OpNode(name, op, src, params))
        return name


def criteo(name: str, rows: tuple[int, ...]) -> Pipeline:
    """`kaggle` / `terabyte`: 105 nodes with 26 tables (OPS.md); fewer `rows`, fewer features."""
    b = _Builder()
    fill_int = [b.add(f"fill_int_{k}", OpKind.FILL_NULL, f"int_{k}", value=0) for k in range(13)]
    fill_cat = [b.add(f"fill_cat_{k}", OpKind.FILL_NULL, f"cat_{k}", value=0)
                for k in range(len(rows))]
    bucket = b.add("bucket_int_0", OpKind.BUCKETIZE, fill_int[0], borders=[0.5, 1.0, 1.5])
    sparse = []
    for k, r in enumerate(rows):
        h = b.add(f"hash_cat_{k}", OpKind.SIGRID_HASH, fill_cat[k], salt=0, max_value=r)
        sparse.append(SparseOutput(b.add(f"first_cat_{k}", OpKind.FIRSTX, h, x=1), f"cat_{k}"))
    sparse.append(SparseOutput(bucket, "int_0_bucket"))
    dense = [b.add(f"logit_int_{k}", OpKind.LOGIT, fill_int[k], eps=EPS) for k in range(13)]
    inputs = (tuple(_dense(k) for k in range(13))
              + tuple(_criteo_sparse(k) for k in range(len(rows))))
    return Pipeline(name, inputs, tuple(b.nodes), tuple(dense), tuple(sparse))


def wide(name: str, dense_count: int, sparse_count: int) -> Pipeline:
    """`wide-2x` / `wide-4x`: blocks of the RAP artifact's synthetic ops (OPS.md)."""
    b = _Builder()
    dense = []
    for k in range(dense_count):
        f = b.add(f"fill_int_{k}", OpKind.FILL_NULL, f"int_{k}", value=0)
        if k % 2 == 0:
            dense.append(b.add(f"logit_int_{k}", OpKind.LOGIT, f, eps=EPS))
        else:
            dense.append(b.add(f"boxcox_int_{k}", OpKind.BOXCOX, f, **{"lambda": EPS}))
    sparse = []
    for k in range(sparse_count):
        f = b.add(f"fill_cat_{k}", OpKind.FILL_NULL, f"cat_{k}", value=0)
        kind = k % 4
        if kind == 0:
            f = b.add(f"onehot_cat_{k}", OpKind.ONEHOT, f, low=0, high=16, num_classes=5)
        elif kind == 1:
            f = b.add(f"hash_cat_{k}", OpKind.SIGRID_HASH, f, salt=0, max_value=BUCKET_TABLE_ROWS)
        elif kind == 2:
            f = b.add(f"clamp_cat_{k}", OpKind.CLAMP_LIST, f, lo=0, hi=16)
        else:
            f = b.add(f"onehot_cat_{k}", OpKind.ONEHOT, f, low=0, high=16, num_classes=8)
            f = b.add(f"ngram_cat_{k}", OpKind.NGRAM, f, n=4)
        sparse.append(SparseOutput(b.add(f"first_cat_{k}", OpKind.FIRSTX, f, x=1), f"cat_{k}"))
    inputs = (tuple(_dense(k) for k in range(dense_count))
              + tuple(_criteo_sparse(k) for k in range(sparse_count)))
    return Pipeline(name, inputs, tuple(b.nodes), tuple(dense), tuple(sparse))


def multihot() -> Pipeline:
    """`multihot`: MLPerf DLRM-DCNv2's synthetic multi-hot inputs (OPS.md)."""
    b = _Builder()
    dense = []
    for k in range(13):
        f = b.add(f"fill_int_{k}", OpKind.FILL_NULL, f"int_{k}", value=0)
        dense.append(b.add(f"boxcox_int_{k}", OpKind.BOXCOX, f, **{"lambda": 0.0}))
    sparse = []
    for k, (rows, hot) in enumerate(zip(MLPERF_ROWS, MLPERF_MULTI_HOT)):
        f = b.add(f"fill_cat_{k}", OpKind.FILL_NULL, f"cat_{k}", value=0)
        h = b.add(f"hash_cat_{k}", OpKind.SIGRID_HASH, f, salt=0, max_value=rows)
        sparse.append(SparseOutput(b.add(f"first_cat_{k}", OpKind.FIRSTX, h, x=hot), f"cat_{k}"))
    inputs = (tuple(_dense(k) for k in range(13))
              + tuple(_sparse(k, 2.0 * hot) for k, hot in enumerate(MLPERF_MULTI_HOT)))
    return Pipeline("multihot", inputs, tuple(b.nodes), tuple(dense), tuple(sparse))


HEAVY_LIST_LENGTH, HEAVY_NGRAM, HEAVY_FIRSTX = 50, 3, 100
GLOBAL_IDS = 1 << 40
"""`heavy-rehash`'s first hash range: a global id space, as a feature store keys ids before
a table's bucketing."""
SHORT_LIST_LENGTH = 36
"""`heavy-short`'s raw lists: the fewest ids whose trigrams still fill firstx's 100."""


def heavy(name: str = "heavy", first: int = HEAVY_FIRSTX, rows: int = HEAVY_TABLE_ROWS,
          length: int = HEAVY_LIST_LENGTH, id_dtype: DType = DType.INT64,
          global_ids: int | None = None) -> Pipeline:
    """`heavy`: a production-like pipeline beside a fast model (the heavy case).
    26 raw id lists of `length` (50) ids -> fill_null -> ngram(3) (144 ids) ->
    sigrid_hash into `rows` buckets -> firstx(`first`: 100); 13 dense -> fill_null ->
    logit. Not from OPS.md: sized so that, in simulation, preprocessing costs about a
    third of an iteration of the `heavy` model. `heavy-20` keeps 20 ids of each list: the
    same preprocessing, a fifth of the lookups; `heavy-small` hashes into 10k buckets, for
    the `heavy-small` model's small tables; `heavy-short` does too, from lists of 36
    32-bit ids (Criteo's raw ids are 32-bit hashes; sigrid_hash widens them): the same
    100 ids a list out from 0.38x the raw bytes, so the host link outpaces a faster step.
    With `global_ids`, each id is hashed first into that many global ids (salt 0), then
    into the table's `rows` buckets (salt 1): `heavy-rehash`, twice the hashing an id and
    no more memory traffic."""
    b = _Builder()
    dense = []
    for k in range(13):
        f = b.add(f"fill_int_{k}", OpKind.FILL_NULL, f"int_{k}", value=0)
        dense.append(b.add(f"logit_int_{k}", OpKind.LOGIT, f, eps=EPS))
    sparse = []
    for k in range(26):
        f = b.add(f"fill_cat_{k}", OpKind.FILL_NULL, f"cat_{k}", value=0)
        g = b.add(f"ngram_cat_{k}", OpKind.NGRAM, f, n=HEAVY_NGRAM)
        h = b.add(f"hash_cat_{k}", OpKind.SIGRID_HASH, g, salt=0,
                  max_value=global_ids or rows)
        if global_ids:
            h = b.add(f"rehash_cat_{k}", OpKind.SIGRID_HASH, h, salt=1, max_value=rows)
        sparse.append(SparseOutput(b.add(f"first_cat_{k}", OpKind.FIRSTX, h, x=first),
                                   f"cat_{k}"))
    inputs = tuple(_dense(k) for k in range(13)) + tuple(
        _sparse(k, float(length), id_dtype) for k in range(26))
    return Pipeline(name, inputs, tuple(b.nodes), tuple(dense), tuple(sparse))


PIPELINE_PRESETS = {
    "kaggle": lambda: criteo("kaggle", KAGGLE_ROWS),
    "terabyte": lambda: criteo("terabyte", TERABYTE_ROWS),
    "wide-2x": lambda: wide("wide-2x", 26, 52),
    "wide-4x": lambda: wide("wide-4x", 52, 104),
    "multihot": multihot,
    "heavy": heavy,
    "heavy-20": lambda: heavy("heavy-20", 20),
    "heavy-small": lambda: heavy("heavy-small", rows=HEAVY_SMALL_TABLE_ROWS),
    "heavy-short": lambda: heavy("heavy-short", rows=HEAVY_SMALL_TABLE_ROWS,
                                 length=SHORT_LIST_LENGTH, id_dtype=DType.INT32),
    "heavy-rehash": lambda: heavy("heavy-rehash", rows=HEAVY_SMALL_TABLE_ROWS,
                                  global_ids=GLOBAL_IDS),
}

DEFAULT_MODEL_FOR = {"kaggle": "criteo-kaggle", "terabyte": "criteo-terabyte",
                     "wide-2x": "wide-2x", "wide-4x": "wide-4x", "multihot": "mlperf-dcnv2",
                     "heavy": "heavy", "heavy-20": "heavy-mlp",
                     "heavy-small": "heavy-small", "heavy-short": "heavy-hot",
                     "heavy-rehash": "heavy-lean"}


def pipeline_preset(name: str) -> Pipeline:
    if name not in PIPELINE_PRESETS:
        raise SpecError("pipeline", name, f"one of {', '.join(PIPELINE_PRESETS)}")
    return PIPELINE_PRESETS[name]()
