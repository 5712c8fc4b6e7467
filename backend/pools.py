"""Typed memory pools holding every column of a batch, addressed by descriptors.

Floats live in one float32 pool, integers (int32 widened) in one int64 pool, list
offsets in one int64 pool, validity in one uint8 pool. A column is three bases into
them. Output lists are given a capacity bound computed from the input sizes, so no
device-to-host read is needed before a kernel runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from corun.backend.chains import Chain
from corun.backend.columns import NP_DTYPE, ColumnData
from corun.spec import Column, OpKind, Pipeline, Shape


@dataclass(frozen=True)
class Slot:
    """Where one column lives in the pools."""

    is_float: bool
    is_list: bool
    values_base: int
    capacity: int
    offsets_base: int  # -1 for scalars
    valid_base: int  # -1 when non-null


def chain_capacity(chain: Chain, cols: Mapping[str, Column], rows: int, source_cap: int) -> int:
    """Upper bound on the values a chain writes for `rows` rows."""
    cap = source_cap
    for node in chain.nodes:
        p = node.params
        if node.op is OpKind.FILL_NULL and cols[node.input].shape is Shape.LIST:
            cap = cap + rows
        elif node.op is OpKind.FIRSTX:
            cap = min(cap, max(p["x"], 0) * rows)
        elif node.op is OpKind.NGRAM:
            cap = cap * p["n"]
        elif node.op is OpKind.ONEHOT:
            cap = p["num_classes"] * rows
    return cap if cols[chain.sink].shape is Shape.LIST else rows


class Layout:
    """Assigns pool ranges to columns; sources first, then each group's sinks in order."""

    def __init__(self, pipeline: Pipeline, rows: int) -> None:
        self.pipeline, self.rows = pipeline, rows
        self.slots: dict[str, Slot] = {}
        self.names: list[str] = []
        self.size = {"f32": 0, "i64": 0, "offs": 0, "valid": 0}

    def add(self, name: str, capacity: int) -> Slot:
        col = self.pipeline.columns[name]
        is_float = col.dtype.value == "float32"
        pool = "f32" if is_float else "i64"
        is_list = col.shape is Shape.LIST
        slot = Slot(is_float, is_list, self.size[pool], capacity,
                    self.size["offs"] if is_list else -1,
                    self.size["valid"] if col.nullable else -1)
        self.size[pool] += capacity
        if is_list:
            self.size["offs"] += self.rows + 1
        if col.nullable:
            self.size["valid"] += self.rows
        self.slots[name] = slot
        self.names.append(name)
        return slot

    def add_group(self, chains: Iterable[Chain]) -> None:
        cols = self.pipeline.columns
        for ch in chains:
            if ch.sink not in self.slots:
                self.add(ch.sink, chain_capacity(ch, cols, self.rows,
                                                 self.slots[ch.source].capacity))

    def descriptors(self) -> np.ndarray:
        d = np.array([(self.slots[n].values_base, self.slots[n].offsets_base,
                       self.slots[n].valid_base) for n in self.names], np.int64)
        return d.reshape(len(self.names), 3)

    def index(self, name: str) -> int:
        return self.names.index(name)


class HostPools:
    """The four pools as NumPy arrays, with pack/unpack by column name."""

    def __init__(self, layout: Layout, arrays: Mapping[str, np.ndarray] | None = None) -> None:
        """Fresh pools for the whole layout, or `arrays` given (e.g. staging buffers
        holding only the staged prefix)."""
        s = layout.size
        self.layout = layout
        if arrays is not None:
            self.f32, self.i64 = arrays["f32"], arrays["i64"]
            self.offs, self.valid = arrays["offs"], arrays["valid"]
            return
        self.f32 = np.zeros(max(s["f32"], 1), np.float32)
        self.i64 = np.zeros(max(s["i64"], 1), np.int64)
        self.offs = np.zeros(max(s["offs"], 1), np.int64)
        self.valid = np.ones(max(s["valid"], 1), np.uint8)

    def pack(self, name: str, data: ColumnData) -> None:
        slot = self.layout.slots[name]
        pool = self.f32 if slot.is_float else self.i64
        n = len(data.values)
        if n > slot.capacity:
            raise ValueError(f"column {name!r}: {n} values exceed its capacity {slot.capacity}")
        pool[slot.values_base : slot.values_base + n] = data.values
        if slot.is_list:
            self.offs[slot.offsets_base : slot.offsets_base + self.layout.rows + 1] = data.offsets
        if slot.valid_base >= 0:
            v = np.ones(self.layout.rows, np.uint8) if data.valid is None else data.valid
            self.valid[slot.valid_base : slot.valid_base + self.layout.rows] = v

    def unpack(self, name: str) -> ColumnData:
        slot = self.layout.slots[name]
        col = self.layout.pipeline.columns[name]
        pool = self.f32 if slot.is_float else self.i64
        rows = self.layout.rows
        if slot.is_list:
            off = self.offs[slot.offsets_base : slot.offsets_base + rows + 1].copy()
            vals = pool[slot.values_base : slot.values_base + off[-1]]
        else:
            off = None
            vals = pool[slot.values_base : slot.values_base + rows]
        return ColumnData(vals.astype(NP_DTYPE[col.dtype]), off)
