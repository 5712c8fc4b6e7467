"""Split a group of op nodes into chains: source column -> nodes -> sink column.

A sink is a node of the group whose output is needed outside it (a pipeline output or
an input of a node in another group); it is written to device memory. Nodes inside a
chain stay in registers. A node on two chains' paths (fill_int_0 feeding both logit and
bucketize) is recomputed in each: cheaper than a round trip through memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from corun.spec import Column, OpKind, OpNode, Pipeline, Shape, SpecError
from corun.spec.pipeline import WARP_ROW_MIN_LENGTH, sources_once


@dataclass(frozen=True)
class Chain:
    source: str
    nodes: tuple[OpNode, ...]
    sink: str

    def work(self, cols: dict[str, Column]) -> float:
        """Relative work per row: values touched per op (for sizing its share of blocks)."""
        return sum(max(cols[n.input].mean_length, cols[n.name].mean_length, 1.0)
                   for n in self.nodes)

    def signature(self, cols: dict[str, Column], warp_rows: bool = False,
                  fixed_length: int | None = None, short_lanes: int = 1,
                  source_first: bool = False) -> tuple:
        """What the generated code depends on: types, op kinds, the lanes a row's list
        values are split over (row_lanes), for a list sink whose offsets the values
        kernel writes its `fixed_length`, and whether its values are computed once per
        ngram input element (`source_first`, where the chain has one ngram and no onehot,
        whose value depends on its position); never parameter values."""
        src = cols[self.source]
        ops = tuple((n.op.value, n.params.get("to")) if n.op is OpKind.CAST else n.op.value
                    for n in self.nodes)
        sink = cols[self.sink]
        sources = (source_first and sink.shape is Shape.LIST
                   and sources_once(n.op for n in self.nodes))
        return (src.dtype.value, src.shape.value, src.nullable, ops, sink.dtype.value,
                sink.shape.value, row_lanes(sink, warp_rows, short_lanes), fixed_length,
                sources)


def row_lanes(sink: Column, warp_rows: bool, short_lanes: int) -> int:
    """Lanes of a warp that share one row of a list sink, each taking every lanes-th
    value, so that neighbouring lanes load and store neighbouring values: 32 (a warp)
    for lists of at least WARP_ROW_MIN_LENGTH values on average with `warp_rows`;
    shorter lists up to `short_lanes`, the largest power of two no longer than their
    mean; 1 (a thread per row) for every other sink."""
    if sink.shape is not Shape.LIST:
        return 1
    if warp_rows and sink.mean_length >= WARP_ROW_MIN_LENGTH:
        return 32
    lanes = 1
    while lanes * 2 <= min(short_lanes, sink.mean_length):
        lanes *= 2
    return lanes


def sinks_of(pipeline: Pipeline, group: Iterable[str]) -> list[str]:
    return pipeline.sinks(group)


def chains_of(pipeline: Pipeline, group: Iterable[str]) -> list[Chain]:
    group = list(group)
    for n in group:
        if n not in pipeline.node_by_name:
            raise SpecError("group", n, f"a node of pipeline {pipeline.name!r}")
    chains = []
    for sink in sinks_of(pipeline, group):
        path = [pipeline.node_by_name[n] for n in pipeline.chain_nodes(group, sink)]
        chains.append(Chain(path[0].input, tuple(path), sink))
    return chains
