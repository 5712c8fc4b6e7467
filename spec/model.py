"""Model: a DLRM's shape (tables, MLPs, interaction, optimizer, batch) and the presets.

Preset numbers are facts from the RAP artifact and the MLPerf DLRM-DCNv2 reference
(../shared/OPS.md, "Reference pipelines").
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from corun.spec.errors import SpecError, require, require_int_range, require_positive
from corun.spec.hardware import Precision


class Interaction(enum.Enum):
    DOT = "dot"
    DCN_V2 = "dcn-v2"


class Optimizer(enum.Enum):
    SGD = "sgd"
    ADAGRAD = "adagrad"
    ROWWISE_ADAGRAD = "rowwise-adagrad"


class EmbeddingUpdate(enum.Enum):
    """How the trainer turns the pooled embeddings' gradient into a table update.

    AUTOGRAD: PyTorch's `embedding_bag` backward, then the optimizer's update (any
    optimizer; the sparse backward gathers each id's bag gradient: 5.0 of the heavy
    model's 6.2 ms at batch 4096 on the H200).
    FUSED_SGD: one kernel adds -lr x each bag's gradient to its ids' rows (atomics, no
    sort, no per-id gradient), as FBGEMM's table-batched embeddings fuse backward and
    optimizer; SGD only.
    FUSED_SGD_HOT_ROW: the same, with each table's most frequent row (sampled each step)
    counted per bag and added once: skewed ids serialize their atomics on that row
    (backend/embedding_sgd.py)."""

    AUTOGRAD = "autograd"
    FUSED_SGD = "fused-sgd"
    FUSED_SGD_HOT_ROW = "fused-sgd-hot-row"

    @property
    def fused(self) -> bool:
        """Whether one kernel of ours does the backward and the SGD update together."""
        return self is not EmbeddingUpdate.AUTOGRAD


class EmbeddingForward(enum.Enum):
    """How the trainer sum-pools each bag's rows.

    PYTORCH: `F.embedding_bag`, which gives a bag 64 threads over its columns (56 of them
    idle at dim 8). BAG_KERNEL: a thread per (bag, column), several ids in flight
    (backend/embedding_fwd.py): on the H200 3.2-3.5x faster at dim 8 (heavy-small
    b16384: 0.47 against 1.63 ms), 1.3x at dim 128;
    needs the fused update, as it keeps no autograd graph."""

    PYTORCH = "pytorch"
    BAG_KERNEL = "bag-kernel"


@dataclass(frozen=True)
class Table:
    """One embedding table; `pooling` is the mean number of ids looked up per sample."""

    name: str
    rows: int
    dim: int
    pooling: float = 1.0

    def __post_init__(self) -> None:
        require(bool(self.name), "name", self.name, "a non-empty string")
        require_int_range("rows", self.rows, 1)
        require_int_range("dim", self.dim, 1, 65536)
        require_positive("pooling", self.pooling)


MAX_BATCH_PER_GPU = 1 << 24
"""The largest batch per GPU a model or a plan may name."""


@dataclass(frozen=True)
class Model:
    """A DLRM. Dense features go through the bottom MLP, sparse ones through tables."""

    name: str
    dense_features: int
    tables: tuple[Table, ...]
    bottom_mlp: tuple[int, ...]
    top_mlp: tuple[int, ...]
    interaction: Interaction = Interaction.DOT
    dcn_layers: int = 3
    dcn_low_rank: int = 512
    optimizer: Optimizer = Optimizer.SGD
    learning_rate: float = 0.01
    batch_per_gpu: int = 4096
    precision: Precision = Precision.FP32
    sparse_gradients: bool = True
    embedding_update: EmbeddingUpdate = EmbeddingUpdate.AUTOGRAD
    embedding_forward: EmbeddingForward = EmbeddingForward.PYTORCH
    cuda_graphs: bool = False
    """Replay each training stage as a CUDA graph captured once (backend/graphed.py):
    the host launches nine graphs a step instead of ~190 kernels. One GPU and SGD; with
    PyTorch's embedding backward a fixed id count per batch, with the bag kernels
    (fused-sgd and bag-kernel) any: their two stages are one kernel each, launched
    between the graphs on the batch's own ids."""

    def __post_init__(self) -> None:
        require_int_range("dense_features", self.dense_features, 1)
        require(len(self.tables) >= 1, "tables", len(self.tables), "at least one table")
        names = [t.name for t in self.tables]
        dup = sorted({n for n in names if names.count(n) > 1})
        require(not dup, "tables", dup, "unique table names")
        dims = {t.dim for t in self.tables}
        require(len(dims) == 1, "tables", sorted(dims), "one embedding dim shared by all tables")
        for f in ("bottom_mlp", "top_mlp"):
            layers = getattr(self, f)
            require(len(layers) >= 1, f, layers, "at least one layer")
            for i, w in enumerate(layers):
                require_int_range(f"{f}[{i}]", w, 1)
        require(self.bottom_mlp[-1] == self.embedding_dim, "bottom_mlp[-1]", self.bottom_mlp[-1],
                f"equal to the embedding dim {self.embedding_dim} (its output joins the "
                "embeddings in the interaction)")
        require(self.top_mlp[-1] == 1, "top_mlp[-1]", self.top_mlp[-1], "1 (one logit per sample)")
        require_int_range("dcn_layers", self.dcn_layers, 1, 64)
        require_int_range("dcn_low_rank", self.dcn_low_rank, 1)
        require(0 < self.learning_rate < 100, "learning_rate", self.learning_rate,
                "a number in (0, 100)")
        require_int_range("batch_per_gpu", self.batch_per_gpu, 1, MAX_BATCH_PER_GPU)
        if self.embedding_update.fused:
            require(self.optimizer is Optimizer.SGD, "optimizer", self.optimizer.value,
                    f"sgd when embedding_update is {self.embedding_update.value} (the fused "
                    "kernel applies SGD)")
        if self.embedding_forward is EmbeddingForward.BAG_KERNEL:
            require(self.embedding_update.fused, "embedding_update",
                    self.embedding_update.value, "fused-sgd or fused-sgd-hot-row "
                    "when embedding_forward is bag-kernel (the bag kernel keeps no autograd "
                    "graph)")
        if self.cuda_graphs:
            require(self.optimizer is Optimizer.SGD, "optimizer", self.optimizer.value,
                    "sgd when cuda_graphs is on (Adagrad's sparse update reads a size back "
                    "to the host, which a captured graph cannot)")
            require(self.embedding_update is EmbeddingUpdate.AUTOGRAD
                    or self.embedding_forward is EmbeddingForward.BAG_KERNEL,
                    "embedding_update", self.embedding_update.value, "autograd when "
                    "cuda_graphs is on, unless embedding_forward is bag-kernel (the fused "
                    "update beside PyTorch's forward is not graphed)")

    def check_gpu_count(self, gpus: int) -> None:
        """The graphed step is one process's: refused on several GPUs."""
        if self.cuda_graphs and gpus > 1:
            raise SpecError("model.cuda_graphs", True, "off on several GPUs (the graphed "
                            "step is one process's)")

    @property
    def reads_ids_by_offsets(self) -> bool:
        """Whether the embedding stages read a batch's ids only where its offsets point:
        the bag kernels (the forward and the fused update) do, so a batch may hand them
        a buffer longer than its ids (`waits_for_id_counts`)."""
        return self.embedding_forward is EmbeddingForward.BAG_KERNEL

    def waits_for_id_counts(self, gpus: int) -> bool:
        """Whether the host must read a batch's id count before it launches the step
        that trains on it: on several GPUs (the ids are split by table for the
        all-to-all), or where the embedding stages do not read ids by their offsets. The
        executor and the simulator's host thread both follow it."""
        return gpus > 1 or not self.reads_ids_by_offsets

    @property
    def embedding_dim(self) -> int:
        return self.tables[0].dim

    @property
    def features(self) -> int:
        """Vectors entering the interaction: one per table plus the bottom MLP's."""
        return len(self.tables) + 1

    @property
    def interaction_out(self) -> int:
        """Width of the top MLP's input."""
        d = self.embedding_dim
        if self.interaction is Interaction.DOT:
            f = self.features
            return d + f * (f - 1) // 2
        return self.features * d

    def table(self, name: str) -> Table:
        for t in self.tables:
            if t.name == name:
                return t
        raise SpecError("table", name, f"one of the model's tables ({len(self.tables)})")


KAGGLE_ROWS = (1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593,
               3194, 27, 14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572)
TERABYTE_ROWS = (45833188, 36746, 17245, 7413, 20243, 3, 7114, 1441, 62, 29275261, 1572176,
                 345138, 10, 2209, 11267, 128, 4, 974, 14, 48937457, 11316796, 40094537, 452104,
                 12606, 104, 35)
MLPERF_ROWS = (40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000, 3067956,
               405282, 10, 2209, 11938, 155, 4, 976, 14, 40000000, 40000000, 40000000, 590152,
               12973, 108, 36)
MLPERF_MULTI_HOT = (3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10,
                    3, 1, 1)
BUCKET_TABLE_ROWS = 65536
"""The bucketize feature's table and the wide pipelines' tables (OPS.md)."""
DIM = 128


def _criteo(name: str, rows: tuple[int, ...], top: tuple[int, ...]) -> Model:
    tables = tuple(Table(f"cat_{k}", r, DIM) for k, r in enumerate(rows))
    tables += (Table("int_0_bucket", BUCKET_TABLE_ROWS, DIM),)
    return Model(name=name, dense_features=13, tables=tables, bottom_mlp=(512, 256, 128),
                 top_mlp=top)


def _wide(name: str, dense: int, sparse: int) -> Model:
    tables = tuple(Table(f"cat_{k}", BUCKET_TABLE_ROWS, DIM) for k in range(sparse))
    return Model(name=name, dense_features=dense, tables=tables, bottom_mlp=(512, 256, 128),
                 top_mlp=(1024, 1024, 512, 256, 1))


def _mlperf() -> Model:
    # Embeddings use row-wise Adagrad, as the MLPerf reference (TorchRec/FBGEMM) does;
    # full Adagrad state would double the 105 GB of tables and not fit one H200.
    tables = tuple(Table(f"cat_{k}", r, DIM, float(h))
                   for k, (r, h) in enumerate(zip(MLPERF_ROWS, MLPERF_MULTI_HOT)))
    return Model(name="mlperf-dcnv2", dense_features=13, tables=tables,
                 bottom_mlp=(512, 256, 128), top_mlp=(1024, 1024, 512, 256, 1),
                 interaction=Interaction.DCN_V2, dcn_layers=3, dcn_low_rank=512,
                 optimizer=Optimizer.ROWWISE_ADAGRAD, learning_rate=0.005)


HEAVY_TABLE_ROWS = 100_000
HEAVY_SMALL_TABLE_ROWS = 10_000


def _heavy(name: str = "heavy", rows: int = HEAVY_TABLE_ROWS, dim: int = 8) -> Model:
    """A fast model for the `heavy` pipeline: 26 tables of `rows` rows x dim `dim` (100k x
    8), 100 ids per sample per table, tiny MLPs (the heavy case; not from OPS.md)."""
    tables = tuple(Table(f"cat_{k}", rows, dim, 100.0) for k in range(26))
    return Model(name=name, dense_features=13, tables=tables, bottom_mlp=(64, dim),
                 top_mlp=(64, 1))


def _heavy_fused() -> Model:
    """`heavy` trained with the fused embedding update (EmbeddingUpdate.FUSED_SGD): the
    same maths, without PyTorch's per-id gradient gather, so preprocessing is a larger
    share of a step (the heavy case)."""
    return replace(_heavy(), name="heavy-fused", embedding_update=EmbeddingUpdate.FUSED_SGD)


def _heavy_small() -> Model:
    """`heavy-fused` with tables of HEAVY_SMALL_TABLE_ROWS rows (8.3 MB in all, inside an
    H200's L2): a faster step beside the same preprocessing (pipeline `heavy-small`)."""
    return replace(_heavy("heavy-small", HEAVY_SMALL_TABLE_ROWS),
                   embedding_update=EmbeddingUpdate.FUSED_SGD)


def _heavy_lean() -> Model:
    """`heavy-small` with the bag kernel's forward (EmbeddingForward.BAG_KERNEL): both
    embedding stages in kernels of our own, as FBGEMM's table-batched embeddings are, so
    a step costs less per id looked up and the same preprocessing is a larger share of it
    (the heavy case; pipeline `heavy-small`)."""
    return replace(_heavy_small(), name="heavy-lean",
                   embedding_forward=EmbeddingForward.BAG_KERNEL)


def _heavy_hot() -> Model:
    """`heavy-lean` with the hot-row update (EmbeddingUpdate.FUSED_SGD_HOT_ROW): a faster
    step on skewed ids, beside the `heavy-short` pipeline (the heavy case)."""
    return replace(_heavy_lean(), name="heavy-hot",
                   embedding_update=EmbeddingUpdate.FUSED_SGD_HOT_ROW)


def _heavy_mlp() -> Model:
    """A model for `heavy-20` whose step is mostly dense maths: 26 tables of 100k rows x
    dim 32, 20 ids per sample per table, fused embedding update, a wide top MLP in bf16
    (the heavy case: preprocessing beside stages that leave memory idle)."""
    tables = tuple(Table(f"cat_{k}", HEAVY_TABLE_ROWS, 32, 20.0) for k in range(26))
    return Model(name="heavy-mlp", dense_features=13, tables=tables, bottom_mlp=(256, 32),
                 top_mlp=(2048, 2048, 1024, 1), precision=Precision.BF16,
                 embedding_update=EmbeddingUpdate.FUSED_SGD)


MODEL_PRESETS: dict[str, Model] = {
    "criteo-kaggle": _criteo("criteo-kaggle", KAGGLE_ROWS, (1024, 1024, 512, 1)),
    "criteo-terabyte": _criteo("criteo-terabyte", TERABYTE_ROWS, (1024, 1024, 512, 256, 1)),
    "wide-2x": _wide("wide-2x", 26, 52),
    "wide-4x": _wide("wide-4x", 52, 104),
    "mlperf-dcnv2": _mlperf(),
    "heavy": _heavy(),
    "heavy-fused": _heavy_fused(),
    "heavy-mlp": _heavy_mlp(),
    "heavy-small": _heavy_small(),
    "heavy-lean": _heavy_lean(),
    "heavy-hot": _heavy_hot(),
}


def model_preset(name: str) -> Model:
    if name not in MODEL_PRESETS:
        raise SpecError("model", name, f"one of {', '.join(MODEL_PRESETS)}")
    return MODEL_PRESETS[name]
