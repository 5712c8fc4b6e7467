"""Units of planning: independent node sets, and what a kernel over some of them costs."""

from __future__ import annotations

from corun.spec import Pipeline


def units_of(pipeline: Pipeline) -> list[tuple[str, ...]]:
    """Weakly connected components of the node graph, each in topological order."""
    parent = {n.name: n.name for n in pipeline.nodes}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for n in pipeline.nodes:
        if n.input in parent:
            parent[find(n.name)] = find(n.input)
    groups: dict[str, list[str]] = {}
    for name in pipeline.order:
        groups.setdefault(find(name), []).append(name)
    return [tuple(g) for g in groups.values()]
