"""Models in, placements out, in the formats of the TorchRec ecosystem.

In: a TorchRec-style model (its `EmbeddingBagConfig` tables and the DLRM's arch sizes)
and MLPerf DLRM-DCNv2's reference command line (torchrec_dlrm's flags, as the MLPerf
training reference publishes its run). Out: a table placement as a TorchRec sharding plan,
per table `ParameterSharding`'s fields (sharding type, compute kernel, ranks, and the one
shard's metadata), which reads back to the same owners.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from corun.spec.errors import SpecError, require
from corun.spec.model import EmbeddingUpdate, Interaction, Model, Optimizer, Table

MLPERF_SUFFIXES = (".sh", ".txt", ".args")
"""A model file with one of these suffixes is a torchrec_dlrm command line."""


def model_document(doc: Any, source: str) -> Model | None:
    """The Model of a document in an ecosystem format, by its keys: TorchRec-style
    (`embedding_bag_configs`) or MLPerf's flags (`num_embeddings_per_feature`); None
    for any other document (corun's own model format)."""
    if not isinstance(doc, dict):
        return None
    name = Path(source).stem if source else "model"
    if "embedding_bag_configs" in doc:
        return model_from_torchrec(doc, name)
    if "num_embeddings_per_feature" in doc:
        return model_from_mlperf(doc, name)
    return None


def _ints(value: Any, field: str) -> tuple[int, ...]:
    """A list of integers, or a comma-separated string of them (as flags give them)."""
    items = value.split(",") if isinstance(value, str) else value
    try:
        out = tuple(int(x) for x in items)
    except (TypeError, ValueError):
        raise SpecError(field, value, "integers, as a list or comma-separated") from None
    require(len(out) >= 1, field, value, "at least one integer")
    return out


def model_from_torchrec(doc: dict, name: str = "torchrec-model") -> Model:
    """A Model from a TorchRec-style description: `embedding_bag_configs` (each with
    `name`, `num_embeddings`, `embedding_dim`, and optionally `feature_names` and
    `pooling_factor`, the mean ids a sample looks up, 1 if absent), `dense_in_features`,
    `dense_arch_layer_sizes`, `over_arch_layer_sizes` (ending in 1), and optionally
    `interaction` (dot or dcn), `dcn_num_layers`, `dcn_low_rank_dim`, `batch_size` and
    `optimizer` (sgd, adagrad, rowwise_adagrad). Unknown keys are an error naming them."""
    known = {"embedding_bag_configs", "dense_in_features", "dense_arch_layer_sizes",
             "over_arch_layer_sizes", "interaction", "dcn_num_layers", "dcn_low_rank_dim",
             "batch_size", "optimizer", "learning_rate", "name"}
    extra = sorted(set(doc) - known)
    require(not extra, "model", extra,
            f"keys of a TorchRec-style model ({', '.join(sorted(known))})")
    configs = doc.get("embedding_bag_configs")
    require(isinstance(configs, list) and configs, "embedding_bag_configs", configs,
            "a list of tables")
    tables = []
    for i, c in enumerate(configs):
        f = f"embedding_bag_configs[{i}]"
        require(isinstance(c, dict), f, c, "a mapping")
        for key in ("name", "num_embeddings", "embedding_dim"):
            require(key in c, f"{f}.{key}", None, "given")
        odd = sorted(set(c) - {"name", "num_embeddings", "embedding_dim", "feature_names",
                               "pooling", "pooling_factor"})
        require(not odd, f, odd, "name, num_embeddings, embedding_dim, feature_names, "
                "pooling, pooling_factor")
        require(c.get("pooling", "SUM") in ("SUM", "MEAN", "sum", "mean"), f"{f}.pooling",
                c.get("pooling"), "SUM or MEAN (a pooled bag, as an EmbeddingBag)")
        tables.append(Table(str(c["name"]), c["num_embeddings"], c["embedding_dim"],
                            float(c.get("pooling_factor", 1.0))))
    interaction = str(doc.get("interaction", "dot")).lower()
    require(interaction in ("dot", "dcn"), "interaction", interaction, "dot or dcn")
    optimizer = str(doc.get("optimizer", "sgd")).lower().replace("_", "-")
    require(optimizer in {o.value for o in Optimizer}, "optimizer", optimizer,
            ", ".join(o.value for o in Optimizer))
    require("dense_in_features" in doc, "dense_in_features", None, "given")
    return Model(name=str(doc.get("name", name)), dense_features=doc["dense_in_features"],
                 tables=tuple(tables),
                 bottom_mlp=_ints(doc.get("dense_arch_layer_sizes"), "dense_arch_layer_sizes"),
                 top_mlp=_ints(doc.get("over_arch_layer_sizes"), "over_arch_layer_sizes"),
                 interaction=Interaction.DCN_V2 if interaction == "dcn" else Interaction.DOT,
                 dcn_layers=doc.get("dcn_num_layers", 3),
                 dcn_low_rank=doc.get("dcn_low_rank_dim", 512),
                 optimizer=Optimizer(optimizer),
                 learning_rate=float(doc.get("learning_rate", 0.01)),
                 batch_per_gpu=doc.get("batch_size", 4096))


MLPERF_FLAGS = {"embedding_dim", "dense_arch_layer_sizes", "over_arch_layer_sizes",
                "num_embeddings_per_feature", "interaction_type", "dcn_num_layers",
                "dcn_low_rank_dim", "multi_hot_sizes", "batch_size", "learning_rate",
                "adagrad"}
"""The torchrec_dlrm flags that shape the model; its other flags (data paths, epochs,
validation) are read past."""


def mlperf_flags(text: str) -> dict[str, Any]:
    """The model's flags from a torchrec_dlrm command line (`--flag value`, `--flag=value`,
    a bare `--adagrad`), the other flags left out."""
    out: dict[str, Any] = {}
    words = shlex.split(text, comments=True)
    i = 0
    while i < len(words):
        w = words[i]
        i += 1
        if not w.startswith("--"):
            continue
        key, eq, value = w[2:].partition("=")
        if not eq:
            if i < len(words) and not words[i].startswith("--"):
                value, i = words[i], i + 1
            else:
                value = True
        if key in MLPERF_FLAGS:
            out[key] = value
    return out


def model_from_mlperf(flags: dict[str, Any], name: str = "mlperf-dlrm") -> Model:
    """A Model from MLPerf DLRM-DCNv2's torchrec_dlrm flags (`mlperf_flags`, or a document
    of them): tables `cat_k` of `num_embeddings_per_feature`, each looking up its
    `multi_hot_sizes` ids a sample (1 where absent), 13 dense features as in Criteo,
    `--adagrad` as the reference's row-wise Adagrad. `batch_size` is the reference's
    global batch: `--batch` gives the batch per GPU."""
    extra = sorted(set(flags) - MLPERF_FLAGS)
    require(not extra, "mlperf flags", extra, ", ".join(sorted(MLPERF_FLAGS)))
    rows = _ints(flags.get("num_embeddings_per_feature"), "num_embeddings_per_feature")
    hot = _ints(flags["multi_hot_sizes"], "multi_hot_sizes") if "multi_hot_sizes" in flags \
        else (1,) * len(rows)
    require(len(hot) == len(rows), "multi_hot_sizes", len(hot),
            f"one size per table ({len(rows)}, as num_embeddings_per_feature)")
    dim = int(flags.get("embedding_dim", 128))
    interaction = str(flags.get("interaction_type", "dot")).lower()
    require(interaction in ("dot", "dcn", "original"), "interaction_type", interaction,
            "dot, dcn or original")
    adagrad = flags.get("adagrad") in (True, "true", "True", "1")
    return Model(name=name, dense_features=13,
                 tables=tuple(Table(f"cat_{k}", r, dim, float(h))
                              for k, (r, h) in enumerate(zip(rows, hot))),
                 bottom_mlp=_ints(flags.get("dense_arch_layer_sizes", "512,256,128"),
                                  "dense_arch_layer_sizes"),
                 top_mlp=_ints(flags.get("over_arch_layer_sizes", "1024,1024,512,256,1"),
                               "over_arch_layer_sizes"),
                 interaction=Interaction.DCN_V2 if interaction == "dcn" else Interaction.DOT,
                 dcn_layers=int(flags.get("dcn_num_layers", 3)),
                 dcn_low_rank=int(flags.get("dcn_low_rank_dim", 512)),
                 optimizer=Optimizer.ROWWISE_ADAGRAD if adagrad else Optimizer.SGD,
                 learning_rate=float(flags.get("learning_rate", 0.01)),
                 batch_per_gpu=int(flags.get("batch_size", 4096)))


COMPUTE_KERNEL = {EmbeddingUpdate.AUTOGRAD: "dense", EmbeddingUpdate.FUSED_SGD: "fused",
                  EmbeddingUpdate.FUSED_SGD_HOT_ROW: "fused"}
"""TorchRec's compute kernel nearest each embedding update: gradients through autograd,
then the optimizer (`dense`), or the update fused into the backward (`fused`)."""
MODULE = "sparse_arch.embedding_bag_collection"
"""Where TorchRec's DLRM keeps its EmbeddingBagCollection, the plan's module path."""


def torchrec_sharding_plan(model: Model, owner: dict[str, int]) -> dict:
    """The placement `owner` (table -> GPU) as a TorchRec sharding plan: per table,
    table-wise on its owner's rank, one shard of the whole table there."""
    missing = sorted(t.name for t in model.tables if t.name not in owner)
    require(not missing, "owner", missing, "a GPU for every table of the model")
    kernel = COMPUTE_KERNEL[model.embedding_update]
    return {"plan": {MODULE: {t.name: {
        "sharding_type": "table_wise", "compute_kernel": kernel, "ranks": [owner[t.name]],
        "sharding_spec": {"shards": [{"shard_offsets": [0, 0],
                                      "shard_sizes": [t.rows, t.dim],
                                      "placement": f"rank:{owner[t.name]}/cuda:"
                                                   f"{owner[t.name]}"}]}}
        for t in model.tables}}}


def owners_from_torchrec_plan(doc: dict, model: Model) -> dict[str, int]:
    """Table -> GPU from a TorchRec sharding plan of `model`'s tables: table-wise, one
    rank each (other sharding types are not corun's placements: an error names them)."""
    plan = doc.get("plan") if isinstance(doc, dict) else None
    require(isinstance(plan, dict) and len(plan) == 1, "plan", None if plan is None else
            sorted(plan), "one module's tables")
    (module, tables), = plan.items()
    names = {t.name for t in model.tables}
    require(set(tables) == names, f"plan.{module}", sorted(set(tables) ^ names),
            f"exactly the model's {len(names)} tables")
    owner = {}
    for name, ps in tables.items():
        f = f"plan.{module}.{name}"
        require(ps.get("sharding_type") == "table_wise", f"{f}.sharding_type",
                ps.get("sharding_type"), "table_wise (a table whole on one GPU)")
        ranks = ps.get("ranks")
        require(isinstance(ranks, list) and len(ranks) == 1 and isinstance(ranks[0], int)
                and ranks[0] >= 0, f"{f}.ranks", ranks, "one rank, an integer >= 0")
        owner[name] = ranks[0]
    return owner
