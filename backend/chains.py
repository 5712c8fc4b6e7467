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
from corun.spec.pipeline import WARP_ROW_MIN_LENGTH


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
                  fixed_length: int | None = None) -> tuple:
        """What the generated code depends on: types, op kinds, the thread mapping
        (with `warp_rows`, a warp per row for long list sinks:
        spec.pipeline.WARP_ROW_MIN_LENGTH) and, for a list sink whose offsets the values
        kernel writes, its `fixed_length`; never parameter values."""
        src = cols[self.source]
        ops = tuple((n.op.value, n.params.get("to")) if n.op is OpKind.CAST else n.op.value
                    for n in self.nodes)
        sink = cols[self.sink]
        long_sink = (warp_rows and sink.shape is Shape.LIST
                     and sink.mean_length >= WARP_ROW_MIN_LENGTH)
        mapping = "warp" if long_sink else "thread"
        return (src.dtype.value, src.shape.value, src.nullable, ops, sink.dtype.value,
                sink.shape.value, mapping, fixed_length)


def sinks_of(pipeline: Pipeline, group: Iterable[str]) -> list[str]:
    return pipeline.sinks(group)


def chains_of(pipeline: Pipeline, group: Iterable[str]) -> list[Chain]:
    group = list(group)
    inside = set(group)
    for n in group:
        if n not in pipeline.node_by_name:
            raise SpecError("group", n, f"a node of pipeline {pipeline.name!r}")
    chains = []
    for sink in sinks_of(pipeline, group):
        path = []
        cur = sink
        while cur in inside:
            node = pipeline.node_by_name[cur]
            path.append(node)
            cur = node.input
        chains.append(Chain(cur, tuple(reversed(path)), sink))
    return chains
