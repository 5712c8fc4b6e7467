"""Pipeline: a DAG of preprocessing operator nodes over named columns (../shared/OPS.md).

Each node reads one column (a raw input or another node's output) and writes one.
Validation happens here, when a pipeline is built, never inside a kernel: parameters in
OPS.md's ranges, no cycles, no op but fill_null that can see a null, every result used.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from corun.spec.errors import SpecError, require


class OpKind(enum.Enum):
    FILL_NULL = "fill_null"
    CAST = "cast"
    SIGRID_HASH = "sigrid_hash"
    BUCKETIZE = "bucketize"
    LOGIT = "logit"
    BOXCOX = "boxcox"
    CLAMP = "clamp"
    CLAMP_LIST = "clamp_list"
    FIRSTX = "firstx"
    ONEHOT = "onehot"
    NGRAM = "ngram"
    MAPID = "mapid"


class DType(enum.Enum):
    FLOAT32 = "float32"
    INT32 = "int32"
    INT64 = "int64"

    @property
    def itemsize(self) -> int:
        return 4 if self is not DType.INT64 else 8

    @property
    def is_int(self) -> bool:
        return self is not DType.FLOAT32


class Shape(enum.Enum):
    SCALAR = "scalar"
    LIST = "list"


Histogram = tuple[tuple[int, float], ...]
"""List lengths and their shares of rows: ((length, share), ...), lengths rising, shares
summing to 1."""


def histogram(pairs: Any, field: str) -> Histogram:
    """`pairs` ((length, weight) with integer lengths >= 0 and weights > 0) as a Histogram,
    lengths merged and sorted, weights scaled to shares; errors name `field`."""
    merged: dict[int, float] = {}
    require(isinstance(pairs, list | tuple) and len(pairs) > 0, field, pairs,
            "a non-empty list of [length, weight] pairs")
    for i, pair in enumerate(pairs):
        ok = isinstance(pair, list | tuple) and len(pair) == 2
        require(ok, f"{field}[{i}]", pair, "a [length, weight] pair")
        length, weight = pair
        require(isinstance(length, int) and not isinstance(length, bool) and
                0 <= length <= 1 << 24, f"{field}[{i}][0]", length,
                "a list length: an integer in [0, 16777216]")
        require(isinstance(weight, int | float) and not isinstance(weight, bool) and
                math.isfinite(weight) and weight > 0, f"{field}[{i}][1]", weight,
                "a weight: a finite number > 0")
        merged[length] = merged.get(length, 0.0) + float(weight)
    total = sum(merged.values())
    return tuple((k, merged[k] / total) for k in sorted(merged))


def histogram_mean(h: Histogram) -> float:
    return sum(length * share for length, share in h)


@dataclass(frozen=True)
class Column:
    """A column's type. `mean_length` is the mean list length (1 for scalars). A list
    column may say how its lengths spread: `length_range` [min, max] (every length between
    equally often) or `length_histogram` ([length, weight] pairs); `mean_length` then
    follows from it (left out, or equal to it). They are the lengths its non-null rows may
    have: data is checked against them (backend ColumnData.check), synthetic data draws
    lengths from them, and a node's output lengths follow them exactly through firstx,
    ngram and onehot. Where they fix a list's length (Pipeline.fixed_lengths), kernels
    write its offsets without a scan."""

    name: str
    dtype: DType
    shape: Shape
    nullable: bool = True
    mean_length: float = 1.0
    length_range: tuple[int, int] | None = None
    length_histogram: Histogram = ()

    def __post_init__(self) -> None:
        require(bool(self.name), "name", self.name, "a non-empty string")
        require(self.mean_length >= 0 and math.isfinite(self.mean_length), "mean_length",
                self.mean_length, "a finite number >= 0")
        require(self.shape is Shape.LIST or self.mean_length == 1.0, "mean_length",
                self.mean_length, "1 for a scalar column")
        if self.length_range is None and not self.length_histogram:
            return
        require(self.shape is Shape.LIST, "length_histogram" if self.length_histogram else
                "length_range", self.length_range or self.length_histogram,
                "only on a list column")
        require(self.length_range is None or not self.length_histogram, "length_range",
                self.length_range, "left out where length_histogram is given (one or the "
                "other)")
        if self.length_range is not None:
            r = self.length_range
            ok = isinstance(r, list | tuple) and len(r) == 2 and all(
                isinstance(x, int) and not isinstance(x, bool) for x in r)
            require(ok and 0 <= r[0] <= r[1] <= 1 << 24, "length_range", r,
                    "[min, max]: integers with 0 <= min <= max <= 16777216")
            h = tuple((k, 1.0 / (r[1] - r[0] + 1)) for k in range(r[0], r[1] + 1))
        else:
            h = histogram(self.length_histogram, "length_histogram")
        mean = histogram_mean(h)
        if self.mean_length == 1.0 and abs(mean - 1.0) > 1e-9:  # left out: it follows
            object.__setattr__(self, "mean_length", mean)
        require(abs(self.mean_length - mean) <= 1e-9 * max(1.0, mean), "mean_length",
                self.mean_length, f"the mean of its lengths, {mean:g} (or left out)")
        if self.length_range is not None:  # kept as given: a saved column reads back
            object.__setattr__(self, "length_range", tuple(self.length_range))
        else:
            object.__setattr__(self, "length_histogram", h)

    @property
    def spread(self) -> Histogram:
        """Its lengths' histogram, from `length_range` or `length_histogram`; empty where
        the column gives only its mean."""
        if self.length_range is None:
            return self.length_histogram
        lo, hi = self.length_range
        return tuple((k, 1.0 / (hi - lo + 1)) for k in range(lo, hi + 1))

    def bytes_per_row(self) -> float:
        """Bytes one row occupies: values, plus an int64 offset for lists, plus validity."""
        b = self.dtype.itemsize * self.mean_length
        if self.shape is Shape.LIST:
            b += 8
        return b + (1 / 8 if self.nullable else 0)


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _num(params: Mapping[str, Any], key: str, where: str) -> float:
    v = params.get(key)
    require(isinstance(v, int | float) and not isinstance(v, bool), f"{where}.{key}", v,
            "a number")
    return float(v)


def _int(params: Mapping[str, Any], key: str, where: str, lo: int = INT64_MIN,
         hi: int = INT64_MAX, allowed: str | None = None) -> int:
    v = params.get(key)
    ok = isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi
    require(ok, f"{where}.{key}", v, allowed or f"an integer in [{lo}, {hi}]")
    return int(v)  # type: ignore[arg-type]


# Parameter names per op, for the unknown-parameter check.
OP_PARAMS: dict[OpKind, tuple[str, ...]] = {
    OpKind.FILL_NULL: ("value",),
    OpKind.CAST: ("to",),
    OpKind.SIGRID_HASH: ("salt", "max_value"),
    OpKind.BUCKETIZE: ("borders",),
    OpKind.LOGIT: ("eps",),
    OpKind.BOXCOX: ("lambda",),
    OpKind.CLAMP: ("lo", "hi"),
    OpKind.CLAMP_LIST: ("lo", "hi"),
    OpKind.FIRSTX: ("x",),
    OpKind.ONEHOT: ("low", "high", "num_classes"),
    OpKind.NGRAM: ("n",),
    OpKind.MAPID: ("map",),
}


def check_params(op: OpKind, params: Mapping[str, Any], where: str) -> None:
    """OPS.md's parameter ranges; `where` is the path used in errors."""
    unknown = sorted(set(params) - set(OP_PARAMS[op]))
    require(not unknown, f"{where}.{unknown[0] if unknown else ''}", None,
            f"not a parameter of {op.value}; its parameters: {', '.join(OP_PARAMS[op])}")
    if op is OpKind.FILL_NULL:
        _num(params, "value", where)
    elif op is OpKind.CAST:
        to = params.get("to")
        require(to in ("float32", "int64"), f"{where}.to", to, "'float32' or 'int64'")
    elif op is OpKind.SIGRID_HASH:
        _int(params, "salt", where)
        _int(params, "max_value", where, 1, INT64_MAX, "an integer >= 1 (max_value must be > 0)")
    elif op is OpKind.BUCKETIZE:
        b = params.get("borders")
        require(isinstance(b, list | tuple) and len(b) > 0, f"{where}.borders", b,
                "a non-empty list of numbers")
        for i, x in enumerate(b):  # type: ignore[arg-type]
            require(isinstance(x, int | float) and not isinstance(x, bool) and x == x,
                    f"{where}.borders[{i}]", x, "a number (not NaN)")
        for i in range(1, len(b)):  # type: ignore[arg-type]
            require(b[i] >= b[i - 1], f"{where}.borders[{i}]", b[i],  # type: ignore[index]
                    f"non-decreasing: >= borders[{i - 1}] = {b[i - 1]}")  # type: ignore[index]
    elif op is OpKind.LOGIT:
        eps = _num(params, "eps", where)
        require(0 < eps < 0.5, f"{where}.eps", params["eps"], "a number in (0, 0.5)")
    elif op is OpKind.BOXCOX:
        lam = _num(params, "lambda", where)
        require(math.isfinite(lam), f"{where}.lambda", lam, "a finite number")
    elif op in (OpKind.CLAMP, OpKind.CLAMP_LIST):
        lo, hi = _num(params, "lo", where), _num(params, "hi", where)
        if op is OpKind.CLAMP_LIST:
            require(lo <= hi, f"{where}.lo", params["lo"], f"<= hi = {params['hi']}")
    elif op is OpKind.FIRSTX:
        _int(params, "x", where, INT32_MIN, INT32_MAX)
    elif op is OpKind.ONEHOT:
        low, high = _num(params, "low", where), _num(params, "high", where)
        require(low < high, f"{where}.low", params["low"], f"< high = {params['high']}")
        _int(params, "num_classes", where, 1, 1 << 20)
    elif op is OpKind.NGRAM:
        _int(params, "n", where, 1, 1 << 16, "an integer >= 1 (n <= 0 is an error)")
    elif op is OpKind.MAPID:
        m = params.get("map")
        require(isinstance(m, list | tuple) and len(m) > 0, f"{where}.map", m,
                "a non-empty list of int64")
        for i, x in enumerate(m):  # type: ignore[arg-type]
            require(isinstance(x, int) and not isinstance(x, bool) and INT64_MIN <= x <= INT64_MAX,
                    f"{where}.map[{i}]", x, "an int64")


def output_column(op: OpKind, params: Mapping[str, Any], src: Column, name: str,
                  where: str) -> Column:
    """The type a node writes, given the column it reads; type errors name `where`."""
    if op is not OpKind.FILL_NULL:
        require(not src.nullable, f"{where}.input", src.name,
                f"a column without nulls: {op.value} is null-propagating; put fill_null first")
    dtype, shape, length = src.dtype, src.shape, src.mean_length
    lengths = src.spread

    def need(ok: bool, allowed: str) -> None:
        require(ok, f"{where}.input", f"{src.name} ({src.dtype.value} {src.shape.value})",
                f"{allowed} for {op.value}")

    if op is OpKind.FILL_NULL:
        value = params["value"]
        if dtype.is_int:
            lo, hi = (INT32_MIN, INT32_MAX) if dtype is DType.INT32 else (INT64_MIN, INT64_MAX)
            require(float(value).is_integer() and lo <= value <= hi, f"{where}.params.value", value,
                    f"castable to {dtype.value}: an integer in [{lo}, {hi}]")
    elif op is OpKind.CAST:
        dtype = DType(params["to"])
    elif op is OpKind.SIGRID_HASH:
        need(dtype.is_int, "an int32 or int64 column")
        dtype = DType.INT64
    elif op is OpKind.BUCKETIZE:
        dtype = DType.INT32
    elif op in (OpKind.LOGIT, OpKind.BOXCOX):
        need(dtype is DType.FLOAT32, "a float32 column")
    elif op in (OpKind.CLAMP, OpKind.CLAMP_LIST):
        if op is OpKind.CLAMP:
            need(shape is Shape.SCALAR, "a scalar column (clamp_list is the list form)")
        else:
            need(shape is Shape.LIST, "a list column (clamp is the scalar form)")
        if dtype.is_int:  # the output keeps the column's type: a bound between two
            # integers would have no one answer (OPS.md is silent)
            for key in ("lo", "hi"):
                require(float(params[key]).is_integer(), f"{where}.params.{key}", params[key],
                        f"an integer: {src.name} is {dtype.value} and clamp keeps its type")
    elif op is OpKind.FIRSTX:
        need(shape is Shape.LIST, "a list column")
        x = max(params["x"], 0)
        length = min(float(x), length)
        lengths = tuple((min(k, x), w) for k, w in lengths)
    elif op is OpKind.ONEHOT:
        dtype, shape, length = DType.INT64, Shape.LIST, float(params["num_classes"])
        lengths = ((params["num_classes"], 1.0),) if lengths else ()
    elif op is OpKind.NGRAM:
        need(shape is Shape.LIST, "a list column")
        n = params["n"]
        length = (length - n + 1) * n if length >= n else length
        lengths = tuple(((k - n + 1) * n if k >= n else k, w) for k, w in lengths)
    elif op is OpKind.MAPID:
        need(shape is Shape.LIST and dtype is DType.INT64, "an int64 list column")
    if lengths:  # the exact mean of the output lengths, not the op of the mean
        h = histogram(lengths, where)
        return Column(name, dtype, shape, nullable=False, mean_length=histogram_mean(h),
                      length_histogram=h)
    return Column(name, dtype, shape, nullable=False, mean_length=length)


def output_range(op: OpKind, params: Mapping[str, Any], src: tuple[int, int] | None
                 ) -> tuple[int, int] | None:
    """The least and greatest integer a node can write, given its input's (None: a float
    column). An embedding table must hold every id its feature can produce."""
    if op is OpKind.SIGRID_HASH:
        return 0, int(params["max_value"]) - 1
    if op is OpKind.BUCKETIZE:
        return 0, len(params["borders"])
    if op is OpKind.ONEHOT:
        return 0, 1
    if op is OpKind.MAPID:  # an id outside the map gives 0
        return min(0, *params["map"]), max(0, *params["map"])
    if op is OpKind.CAST:
        return None if params["to"] == "float32" else src or (INT64_MIN, INT64_MAX)
    if src is None or op in (OpKind.LOGIT, OpKind.BOXCOX):
        return None
    if op is OpKind.FILL_NULL:
        value = int(params["value"])
        return min(src[0], value), max(src[1], value)
    if op in (OpKind.CLAMP, OpKind.CLAMP_LIST):  # monotone: the ends map to the ends
        lo, hi = int(params["lo"]), int(params["hi"])

        def clamp(v: int) -> int:
            a = lo if v < lo else v
            return hi if a > hi else a
        return clamp(src[0]), clamp(src[1])
    return src  # firstx, ngram: values pass through


@dataclass(frozen=True)
class OpNode:
    """One operator applied to one column; its output column is named after the node."""

    name: str
    op: OpKind
    input: str
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        require(bool(self.name), "name", self.name, "a non-empty string")
        check_params(self.op, self.params, "params")


@dataclass(frozen=True)
class SparseOutput:
    """A node whose output feeds the embedding table `table`."""

    node: str
    table: str


def sources_once(ops) -> bool:
    """Whether a chain with these op kinds, writing a list, can compute each element of
    its ngram's input once and store it in every window that holds it
    (FusedKernel.source_first): exactly one ngram, and no onehot, whose value depends on
    its position."""
    ops = list(ops)
    return ops.count(OpKind.NGRAM) == 1 and OpKind.ONEHOT not in ops


WARP_ROW_MIN_LENGTH = 16.0
"""A kernel with FusedKernel.warp_rows writes list outputs of at least this many values a
row on average a warp per row, lanes striding over the values, so loads and stores
coalesce; shorter ones a thread per row, as every output without it. On the H200, by
the longest list anywhere in the chain (threshold 4), it made multihot 1.8x and wide-2x
8.7x slower, lanes idle over short outputs; by
the output at 16, timed beside a thread per row in one run (bench/ops_gpu.py): heavy 1.72-1.76x and
multihot 1.51-1.65x faster at 65,536 rows and up, both checked against the reference."""


@dataclass(frozen=True)
class Pipeline:
    """Raw input columns, operator nodes, and which results feed the model."""

    name: str
    inputs: tuple[Column, ...]
    nodes: tuple[OpNode, ...]
    dense_outputs: tuple[str, ...]
    sparse_outputs: tuple[SparseOutput, ...]

    def __post_init__(self) -> None:
        require(len(self.nodes) >= 1, "nodes", 0, "at least one node")
        names = [c.name for c in self.inputs] + [n.name for n in self.nodes]
        seen: set[str] = set()
        for n in names:
            require(n not in seen, "nodes", n, "unique column and node names")
            seen.add(n)
        _ = self.columns  # type inference: raises on cycles, unknown inputs, type errors
        self._check_outputs()

    @cached_property
    def node_by_name(self) -> dict[str, OpNode]:
        return {n.name: n for n in self.nodes}

    @cached_property
    def order(self) -> tuple[str, ...]:
        """Node names in a topological order (stable: ties keep declaration order)."""
        inputs = {c.name for c in self.inputs}
        for i, n in enumerate(self.nodes):
            require(n.input in inputs or n.input in self.node_by_name, f"nodes[{i}].input",
                    n.input, "a raw input column or another node's name")
        done: list[str] = []
        state: dict[str, int] = {}  # 1 = on the current path, 2 = done
        for start in self.nodes:
            path = []
            cur: str | None = start.name
            while cur is not None and cur in self.node_by_name and state.get(cur) != 2:
                if state.get(cur) == 1:
                    cycle = path[path.index(cur):] + [cur]
                    raise SpecError("nodes", " -> ".join(cycle), "an acyclic graph")
                state[cur] = 1
                path.append(cur)
                cur = self.node_by_name[cur].input
            for name in reversed(path):
                state[name] = 2
                done.append(name)
        return tuple(done)

    @cached_property
    def columns(self) -> dict[str, Column]:
        """Every column's type: raw inputs and each node's output."""
        cols = {c.name: c for c in self.inputs}
        index = {n.name: i for i, n in enumerate(self.nodes)}
        for name in self.order:
            node = self.node_by_name[name]
            cols[name] = output_column(node.op, node.params, cols[node.input], name,
                                       f"nodes[{index[name]}]")
        return cols

    @cached_property
    def int_ranges(self) -> dict[str, tuple[int, int] | None]:
        """Every column's least and greatest integer value (None for a float column): a
        raw integer input may hold any value of its type."""
        full = {DType.INT32: (INT32_MIN, INT32_MAX), DType.INT64: (INT64_MIN, INT64_MAX)}
        out = {c.name: full.get(c.dtype) for c in self.inputs}
        for name in self.order:
            node = self.node_by_name[name]
            out[name] = output_range(node.op, node.params, out[node.input])
        return out

    @cached_property
    def consumers(self) -> dict[str, tuple[str, ...]]:
        out: dict[str, list[str]] = {name: [] for name in self.columns}
        for n in self.nodes:
            out[n.input].append(n.name)
        return {k: tuple(v) for k, v in out.items()}

    def _check_outputs(self) -> None:
        cols = self.columns
        for i, d in enumerate(self.dense_outputs):
            require(d in self.node_by_name, f"dense_outputs[{i}]", d, "a node name")
            c = cols[d]
            require(c.dtype is DType.FLOAT32 and c.shape is Shape.SCALAR,
                    f"dense_outputs[{i}]", d, "a float32 scalar node")
        tables: set[str] = set()
        for i, s in enumerate(self.sparse_outputs):
            require(s.node in self.node_by_name, f"sparse_outputs[{i}].node", s.node, "a node name")
            require(cols[s.node].dtype.is_int, f"sparse_outputs[{i}].node", s.node,
                    "an integer node (embedding indices)")
            require(s.table not in tables, f"sparse_outputs[{i}].table", s.table,
                    "a table fed by one feature only")
            tables.add(s.table)
        used = set(self.dense_outputs) | {s.node for s in self.sparse_outputs}
        for i, n in enumerate(self.nodes):
            if self.consumers[n.name] or n.name in used:
                continue
            c = cols[n.name]
            if c.dtype.is_int:
                raise SpecError(f"nodes[{i}]", n.name,
                                "a sparse output that feeds a table: list it in sparse_outputs "
                                "or remove the node")
            raise SpecError(f"nodes[{i}]", n.name,
                            "a dense output that feeds the model: list it in dense_outputs "
                            "or remove the node")

    def sinks(self, group) -> list[str]:
        """Nodes of `group` whose output is needed outside it (a pipeline output or an
        input of a node elsewhere): what a fused kernel over `group` writes, one chain
        (and at least one block) each."""
        inside = set(group)
        outputs = set(self.dense_outputs) | {s.node for s in self.sparse_outputs}
        return [n for n in self.order if n in inside and
                (n in outputs or any(c not in inside for c in self.consumers[n]))]

    @cached_property
    def fixed_lengths(self) -> dict[str, int]:
        """List columns whose rows all have one length, by name: where the declared input
        lengths (Column.spread) or the ops fix it (onehot, firstx(0)). A nullable input is
        never fixed (a null row holds no values), but fill_null makes its null rows one
        value long: Criteo's lists of one id or null are one id long after it."""
        possible: dict[str, frozenset[int] | None] = {
            c.name: frozenset(k for k, _ in c.spread) or None
            for c in self.inputs if c.shape is Shape.LIST}
        cols = self.columns
        for name in self.order:
            node = self.node_by_name[name]
            src, p = possible.get(node.input), node.params
            if cols[name].shape is not Shape.LIST:
                continue
            if node.op is OpKind.ONEHOT:
                src = frozenset([p["num_classes"]])
            elif node.op is OpKind.FIRSTX:
                x = max(p["x"], 0)
                src = frozenset([0]) if x == 0 else (
                    None if src is None else frozenset(min(k, x) for k in src))
            elif node.op is OpKind.NGRAM and src is not None:
                n = p["n"]
                src = frozenset((k - n + 1) * n if k >= n else k for k in src)
            elif node.op is OpKind.FILL_NULL and src is not None and cols[node.input].nullable:
                src = src | {1}
            possible[name] = src
        return {name: next(iter(k)) for name, k in possible.items()
                if k is not None and len(k) == 1 and not cols[name].nullable}

    def list_sinks(self, group) -> list[str]:
        """Sinks of `group` that are lists: a kernel over it finds their offsets."""
        cols = self.columns
        return [n for n in self.sinks(group) if cols[n].shape is Shape.LIST]

    def offsets_fixed(self, group) -> bool:
        """Whether every list a kernel over `group` writes has a fixed length
        (fixed_lengths), and it writes some: its values kernel can then write their
        offsets itself, with no lengths kernel or scan (FusedKernel.fixed_offsets)."""
        lists = self.list_sinks(group)
        return bool(lists) and all(n in self.fixed_lengths for n in lists)

    def warp_sinks(self, group) -> list[str]:
        """Sinks of `group` a kernel with FusedKernel.warp_rows writes a warp per row:
        lists of at least WARP_ROW_MIN_LENGTH values on average."""
        cols = self.columns
        return [n for n in self.sinks(group) if cols[n].shape is Shape.LIST
                and cols[n].mean_length >= WARP_ROW_MIN_LENGTH]

    def chain_nodes(self, group, sink: str) -> list[str]:
        """The nodes of `group` on the path to `sink`, source first: what a fused
        kernel over `group` computes for it in registers."""
        inside, path, cur = set(group), [], sink
        while cur in inside:
            path.append(cur)
            cur = self.node_by_name[cur].input
        return path[::-1]

    def source_first_sinks(self, group) -> list[str]:
        """List sinks of `group` a kernel with FusedKernel.source_first computes once per
        element of their ngram's input (sources_once)."""
        return [n for n in self.list_sinks(group) if sources_once(
            self.node_by_name[m].op for m in self.chain_nodes(group, n))]

    def feature_of(self) -> dict[str, str]:
        """Node name -> the output (feature) it contributes to; dense features too."""
        owner: dict[str, str] = {}
        outputs = list(self.dense_outputs) + [s.node for s in self.sparse_outputs]
        for out in outputs:
            cur: str | None = out
            while cur in self.node_by_name and cur not in owner:
                owner[cur] = out
                cur = self.node_by_name[cur].input
        return owner

    def check_model(self, model: Any) -> None:
        """The pipeline feeds exactly `model`'s dense inputs and tables."""
        require(len(self.dense_outputs) == model.dense_features, "pipeline.dense_outputs",
                len(self.dense_outputs),
                f"{model.dense_features} dense features, as model {model.name!r} has")
        names = {t.name for t in model.tables}
        fed = {s.table for s in self.sparse_outputs}
        for i, s in enumerate(self.sparse_outputs):
            require(s.table in names, f"pipeline.sparse_outputs[{i}].table", s.table,
                    f"a table of model {model.name!r}")
        missing = sorted(names - fed)
        require(not missing, "pipeline.sparse_outputs", missing[:3],
                f"every table of model {model.name!r} fed by a feature ({len(missing)} are not)")
        rows = {t.name: t.rows for t in model.tables}
        for i, s in enumerate(self.sparse_outputs):  # an id past its table reads another
            # table's rows in the stacked embedding matrix, or past its end
            lo, hi = self.int_ranges[s.node] or (INT64_MIN, INT64_MAX)
            n = rows[s.table]
            require(0 <= lo and hi < n, f"pipeline.sparse_outputs[{i}]",
                    f"{s.node}: ids in [{lo}, {hi}]",
                    f"ids in [0, {n - 1}], the rows of table {s.table!r} of model "
                    f"{model.name!r}: end the feature with sigrid_hash (max_value <= {n}), "
                    "clamp_list or bucketize")
