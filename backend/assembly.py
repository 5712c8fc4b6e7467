"""From preprocessed pools to the trainer's Batch, on the device, and its check there.

The model's inputs sit in the pools as columns: dense features in the float pool, each
table's ids (values + offsets, or one id per row) in the integer pools, with room left
after each list for its largest size. A Batch is table-major and gap-free, so building
it needs each table's id count: the offsets are stacked on the device, their last
entries copied to page-locked host memory, and the host reads them before the ids are
packed (`Assembler.offsets` then `Assembler.batch`). Everything else stays on device.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from corun.backend.check import MismatchError
from corun.backend.columns import ColumnData, equal
from corun.backend.pools import Layout
from corun.backend.trainer import Batch, row_bases
from corun.spec import Model, Pipeline


@dataclass(frozen=True)
class OutputMap:
    """Where each model input lives in the pools, in the model's table order."""

    rows: int
    dense_bases: tuple[int, ...]
    dense_features: tuple[str, ...]
    table_values: tuple[int, ...]
    table_offsets: tuple[int, ...]
    """Offsets base of a list table, -1 for one id per row."""
    table_capacity: tuple[int, ...]
    table_features: tuple[str, ...]
    row_base: tuple[int, ...]
    """First row of each table in the trainer's stacked embedding matrix."""


def output_map(layout: Layout, pipeline: Pipeline, model: Model,
               tables: Sequence[int] | None = None, dense: bool = True) -> OutputMap:
    """Where `tables` (indices into the model's tables; all by default) and, if `dense`,
    the dense features live in `layout`."""
    node_of = {s.table: s.node for s in pipeline.sparse_outputs}
    tables = range(len(model.tables)) if tables is None else tables
    feats = [node_of[model.tables[k].name] for k in tables]
    slots = [layout.slots[f] for f in feats]
    base = row_bases(model)
    dense_names = tuple(pipeline.dense_outputs) if dense else ()
    return OutputMap(layout.rows, tuple(layout.slots[d].values_base for d in dense_names),
                     dense_names, tuple(s.values_base for s in slots),
                     tuple(s.offsets_base for s in slots), tuple(s.capacity for s in slots),
                     tuple(feats), tuple(int(base[k]) for k in tables))


class Assembler:
    """Builds Batches from one pool set's torch views, on the caller's current stream,
    with a fixed number of gathers whatever the number of tables (host time matters:
    the executor's host thread also launches the training step)."""

    def __init__(self, omap: OutputMap, views: Mapping[str, torch.Tensor]) -> None:
        self.omap, self.views = omap, views
        device = views["i64"].device
        self.cuda = device.type == "cuda"
        rows, t = omap.rows, len(omap.row_base)
        self.arange = torch.arange(rows + 1, dtype=torch.int64, device=device)
        self.positions = torch.arange(max(sum(omap.table_capacity), 1), dtype=torch.int64,
                                      device=device)
        self.tables = torch.arange(t, dtype=torch.int64, device=device)
        offs_base = np.array(omap.table_offsets, np.int64)[:, None]
        index = np.where(offs_base >= 0, offs_base + np.arange(rows + 1), 0)
        self.offsets_index = torch.from_numpy(index).to(device)
        self.is_list = torch.from_numpy(offs_base >= 0).to(device)
        dense = np.array(omap.dense_bases, np.int64)[None, :] + np.arange(rows)[:, None]
        self.dense_index = torch.from_numpy(dense).to(device)
        self.values_base = torch.tensor(omap.table_values, dtype=torch.int64, device=device)
        self.row_base = torch.tensor(omap.row_base, dtype=torch.int64, device=device)
        self.totals = torch.zeros(t, dtype=torch.int64, pin_memory=self.cuda)

    def offsets(self) -> torch.Tensor:
        """[tables, rows + 1] per-table offsets; starts the copy of each table's id count
        into `totals` (host memory: wait for the stream before reading it)."""
        stacked = torch.where(self.is_list, self.views["offs"][self.offsets_index],
                              self.arange)
        self.totals.copy_(stacked[:, -1], non_blocking=True)
        return stacked

    def batch(self, stacked: torch.Tensor, labels: torch.Tensor) -> Batch:
        """The trainer's Batch, once `totals` holds this batch's id counts."""
        om = self.omap
        counts = self.totals.tolist()
        for t, (n, cap) in enumerate(zip(counts, om.table_capacity)):
            if not 0 <= n <= cap:  # corrupt offsets: never index with them
                raise MismatchError(om.table_features[t], -1, np.array([0, cap]),
                                    np.array([n]), "id count outside [0, capacity]")
        total = int(sum(counts))
        n = stacked[:, -1]
        ends = torch.cumsum(n, 0)
        starts = ends - n
        table = torch.repeat_interleave(self.tables, n, output_size=total)
        pos = self.positions[:total] + (self.values_base - starts)[table]
        ids = self.views["i64"][pos] + self.row_base[table]
        offsets = torch.cat([(stacked[:, :-1] + starts[:, None]).reshape(-1), ends[-1:]])
        dense = self.views["f32"][self.dense_index]
        return Batch(dense, ids, offsets, labels.clone())


def table_pieces(batch: Batch, counts: Sequence[int]
                 ) -> tuple[list[torch.Tensor], torch.Tensor]:
    """A table-major batch split per table, as the distributed trainer takes it: views of
    its ids (rows of the stacked matrix of all tables, unchanged: no launch per table) and
    its bag lengths as one [tables, rows] tensor (`counts`: ids per table, on the host)."""
    pieces = torch.split(batch.ids, list(counts))
    return list(pieces), torch.diff(batch.offsets).view(len(counts), -1)


@dataclass
class HostBatch:
    """A Batch's preprocessed tensors in host memory (references, and naming a mismatch)."""

    dense: np.ndarray
    ids: np.ndarray
    offsets: np.ndarray

    @classmethod
    def of(cls, batch: Batch) -> HostBatch:
        return cls(batch.dense.cpu().numpy(), batch.ids.cpu().numpy(),
                   batch.offsets.cpu().numpy())


def differs(got: Batch, want: tuple[torch.Tensor, torch.Tensor, torch.Tensor]
            ) -> torch.Tensor:
    """One-element bool tensor on the batch's device: whether any value of `got` differs
    from the reference (dense, ids, offsets) under `backend.columns.equal`'s rule
    (integers exactly, floats within 1 ulp, NaN equal to NaN). No host synchronisation:
    the whole batch is compared where it lives and only this flag need come back."""
    dense, ids, offsets = want
    if got.dense.shape != dense.shape or got.ids.shape != ids.shape or \
            got.offsets.shape != offsets.shape:
        return torch.ones(1, dtype=torch.bool, device=got.ids.device)
    bad = (got.ids != ids).any() | (got.offsets != offsets).any()
    a, b = got.dense.contiguous(), dense
    ia, ib = (x.view(torch.int32).to(torch.int64) for x in (a, b))
    ia, ib = (torch.where(x < 0, -(x & 0x7FFFFFFF), x) for x in (ia, ib))  # monotone line
    far = ((ia - ib).abs() > 1) & ~(torch.isnan(a) & torch.isnan(b))
    return (bad | far.any()).reshape(1)


def check_batch_rows(omap: OutputMap, got: HostBatch, want: HostBatch,
                     rows: np.ndarray) -> int:
    """Compare the given rows of every dense feature and every table's bag (all tables
    at once); raise MismatchError naming the first differing feature and row. Returns
    rows checked."""
    nd = got.dense.shape[1]
    ok, i = equal(ColumnData(want.dense[rows].ravel()), ColumnData(got.dense[rows].ravel()))
    if not ok:
        r, j = int(rows[max(i, 0) // nd]), max(i, 0) % nd
        raise MismatchError(omap.dense_features[j], r, want.dense[r, j : j + 1],
                            got.dense[r, j : j + 1])
    bags = (np.arange(len(omap.table_features))[:, None] * omap.rows + rows).ravel()
    ok, i = equal(_bags(want, bags), _bags(got, bags))
    if not ok:
        t, k = divmod(max(i, 0), len(rows))
        bag = int(bags[max(i, 0)])
        raise MismatchError(omap.table_features[t], int(rows[k]),
                            want.ids[want.offsets[bag] : want.offsets[bag + 1]],
                            got.ids[got.offsets[bag] : got.offsets[bag + 1]])
    return len(rows)


def _bags(batch: HostBatch, bags: np.ndarray) -> ColumnData:
    """The given bags of a table-major batch as one list column."""
    starts, ends = batch.offsets[bags], batch.offsets[bags + 1]
    lengths = ends - starts
    off = np.zeros(len(bags) + 1, np.int64)
    np.cumsum(lengths, out=off[1:])
    idx = np.repeat(starts - off[:-1], lengths) + np.arange(int(off[-1]))
    return ColumnData(batch.ids[idx], off)
