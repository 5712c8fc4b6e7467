"""Split a group of op nodes into chains: source column -> nodes -> sink column.

A sink is a node of the group whose output is needed outside it (a pipeline output or
an input of a node in another group); it is written to device memory. Nodes inside a
chain stay in registers. A node on two chains' paths (fill_int_0 feeding both logit and
bucketize) is recomputed in each: cheaper than a round trip through memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from spec import Column, OpKind, OpNode, Pipeline, Shape, SpecError

WARP_ROW_MIN_LENGTH = 16.0
"""With `warp_rows`, sinks whose lists hold at least this many values on average get a
warp per row, lanes striding over the output elements (coalesced); shorter ones, and
every sink without it, a thread per row. History on the H200: by the longest list
anywhere in the chain (threshold 4) it made multihot 1.8x and wide-2x 8.7x slower, lanes
idle over short sinks (bench/results/raw/ops_h200_run4.json); by the sink, threshold 16,
multihot still ran slower (62.7 vs 40.4 ms at 4M rows, run5 vs run3), so it was off; on
the heavy pipeline's 100-id sinks it made the kernel 1.75x faster alone (0.36 against
0.63 ms at batch 8192) and stretched emb_fwd beside it by 0.07 instead of 0.40 ms
(bench/results/raw/execute_heavy_warp_round1.json)."""


@dataclass(frozen=True)
class Chain:
    source: str
    nodes: tuple[OpNode, ...]
    sink: str

    def work(self, cols: dict[str, Column]) -> float:
        """Relative work per row: values touched per op (for sizing its share of blocks)."""
        return sum(max(cols[n.input].mean_length, cols[n.name].mean_length, 1.0)
                   for n in self.nodes)

    def signature(self, cols: dict[str, Column], warp_rows: bool = False) -> tuple:
        """What the generated code depends on: types, op kinds and the thread mapping,
        never parameter values."""
        src = cols[self.source]
        ops = tuple((n.op.value, n.params.get("to")) if n.op is OpKind.CAST else n.op.value
                    for n in self.nodes)
        sink = cols[self.sink]
        long_sink = (warp_rows and sink.shape is Shape.LIST
                     and sink.mean_length >= WARP_ROW_MIN_LENGTH)
        mapping = "warp" if long_sink else "thread"
        return (src.dtype.value, src.shape.value, src.nullable, ops, sink.dtype.value,
                sink.shape.value, mapping)


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
