"""Feature groups: N like features of a pipeline document declared once.

A pipeline document (JSON or YAML) may hold `feature_groups` beside or instead of its
`inputs`, `nodes` and outputs. Each group names `count` features `<prefix>_<k>` (k from
0), each an input column of the group's type, the group's chain of ops, and its last node
a dense output or a sparse one feeding table `<prefix>_<k>`:

    feature_groups:
      - {prefix: ad, count: 200,
         input: {dtype: int64, shape: list, nullable: true, length_range: [20, 60]},
         ops: [{op: fill_null, params: {value: 0}},
               {op: sigrid_hash, params: {salt: 0, max_value: 100000}},
               {op: firstx, params: {x: 50}}],
         output: sparse}

Nodes are named `<prefix>_<k>_<op>` (with the op's position where an op comes twice). The
group is expanded before the pipeline is built, so every check a pipeline has applies.
"""

from __future__ import annotations

from corun.spec.errors import require

GROUP_KEYS = ("prefix", "count", "input", "ops", "output")
MAX_GROUP_FEATURES = 100_000
"""The most features one feature group may declare."""


def expand_feature_groups(doc: dict) -> dict:
    """`doc` with its `feature_groups` written out as inputs, nodes and outputs (a copy;
    a document without them is returned as it is)."""
    groups = doc.get("feature_groups")
    if groups is None:
        return doc
    require(isinstance(groups, list) and groups, "feature_groups", groups,
            "a non-empty list of groups")
    out = {k: v for k, v in doc.items() if k != "feature_groups"}
    for key in ("inputs", "nodes", "dense_outputs", "sparse_outputs"):
        out[key] = list(doc.get(key, []))
    for g, group in enumerate(groups):
        where = f"feature_groups[{g}]"
        require(isinstance(group, dict), where, group, "a mapping")
        odd = sorted(set(group) - set(GROUP_KEYS))
        require(not odd, f"{where}.{odd[0] if odd else ''}", None,
                f"not a key of a feature group; its keys: {', '.join(GROUP_KEYS)}")
        prefix, count = group.get("prefix"), group.get("count")
        require(isinstance(prefix, str) and prefix.isidentifier(), f"{where}.prefix", prefix,
                "a name of letters, digits and _ (not starting with a digit)")
        require(isinstance(count, int) and not isinstance(count, bool)
                and 1 <= count <= MAX_GROUP_FEATURES, f"{where}.count", count,
                f"an integer in [1, {MAX_GROUP_FEATURES}]")
        column, ops = group.get("input"), group.get("ops")
        require(isinstance(column, dict) and "name" not in column, f"{where}.input", column,
                "a column's type (dtype, shape, ...), without a name: each feature's is "
                "<prefix>_<k>")
        require(isinstance(ops, list) and ops, f"{where}.ops", ops,
                "a non-empty list of {op, params}")
        for i, op in enumerate(ops):
            require(isinstance(op, dict) and set(op) <= {"op", "params"} and "op" in op,
                    f"{where}.ops[{i}]", op, "{op, params}")
        kinds = [op["op"] for op in ops]
        output = group.get("output")
        require(output in ("dense", "sparse"), f"{where}.output", output, "dense or sparse")
        for k in range(count):
            feature = f"{prefix}_{k}"
            out["inputs"].append({"name": feature, **column})
            source = feature
            for i, op in enumerate(ops):
                twice = kinds.count(op["op"]) > 1
                name = f"{feature}_{op['op']}{i if twice else ''}"
                out["nodes"].append({"name": name, "op": op["op"], "input": source,
                                     "params": op.get("params", {})})
                source = name
            if output == "dense":
                out["dense_outputs"].append(source)
            else:
                out["sparse_outputs"].append({"node": source, "table": feature})
    return out
