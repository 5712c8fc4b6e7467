"""The learned model's features: a profile row (or a simulated kernel and stage) as the
numbers its estimators read, normalised by the GPU's ceilings so a fit on one GPU kind can
be applied, with less trust, to another; and its targets."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from corun.costmodel.profile_data import (
    is_resident,
)
from corun.costmodel.types import KernelWork, StageWork
from corun.spec import GpuKind, Hardware, OpKind, hardware_preset

TARGETS = ("kernel_alone", "kernel_corun", "stage_slowdown", "stage_alone")
CORUN_TARGETS = ("kernel_corun", "stage_slowdown")
STAGES = ("emb_fwd", "bottom_mlp_fwd", "interaction_fwd", "top_mlp_fwd", "top_mlp_bwd",
          "interaction_bwd", "bottom_mlp_bwd", "emb_bwd", "optimizer")
GPU_PRESETS = ("h200", "h100", "a100", "v100")


def preset_of(name: str) -> str:
    """The hardware preset of a GPU name as torch or a preset spells it ("NVIDIA H200",
    "H200"); profiles taken on the CPU (tests) count as the H200."""
    from corun.spec.hardware import preset_of_device

    return "h200" if name == "cpu" else preset_of_device(name, "gpu")


def gpu_of(name: str) -> GpuKind:
    return hardware_preset(preset_of(name), 1).gpu


def num(r: dict, k: str, default: float = 0.0) -> float:
    v = r.get(k, "")
    return float(v) if v not in ("", None) else default


KERNEL_BYTES_US_COLUMN = 0
"""Where kernel_features puts log1p of the kernel's bytes at the copy ceiling, in us."""
KERNEL_OPS_US_COLUMN = 1
"""Where kernel_features puts log1p of its integer work at the issue rate, in us."""
KERNEL_FLOOR_US = 6.0
"""The least device time a kernel takes, in us: the back-to-back launch gap on Hopper
that costmodel.analytic.STAGE_KERNEL_LAUNCH_MS states."""


def kernel_features(r: dict) -> list[float]:
    g = gpu_of(r["gpu"])
    nodes = max(num(r, "nodes"), 1.0)
    slots = g.sm_count * g.max_threads_per_sm
    return [
        np.log1p(num(r, "kernel_bytes") / g.copy_bytes_per_s * 1e6),  # us at full bandwidth
        np.log1p(num(r, "int_ops") / g.int32_ops_per_s * 1e6),  # us at full issue rate
        np.log1p(num(r, "elements") / max(num(r, "rows"), 1.0)),  # elements per row
        num(r, "blocks") * num(r, "threads") / slots,  # waves of resident threads
        num(r, "threads") / 1024, num(r, "registers", 40) / 255, num(r, "occupancy", 0.5),
        num(r, "chains"), nodes, num(r, "has_lists"),
        *(num(r, f"op_{op.value}") / nodes for op in OpKind),
        num(r, "warp_rows"),  # long lists a warp per row (profiles before it: a thread)
        # rows each thread walks in turn: a thin launch's blocks run long and, beside a
        # stage that holds the SMs, wait for it (kaggle b16384's whole pipeline in 66
        # blocks at the optimizer: 0.15 ms co-run predicted without it, 0.64 with it,
        # 0.715 measured)
        np.log1p(num(r, "rows") * num(r, "chains")
                 / max(num(r, "blocks") * num(r, "threads"), 1.0)),
    ]


STAGE_ALONE_COLUMN = 2
"""Where stage_features puts the stage's standalone time."""
STAGE_ONEHOT_COLUMN = 4
"""Where the stage one-hot starts in `stage_only`'s columns (after bytes, FLOPs,
parallelism, kernels)."""
LOOKUP_STAGES = ("emb_bwd", "optimizer")
"""Stages whose time follows the id count (StageWork.lookups), each its own feature (and
the fused update's emb_bwd a third: its cost per id is another)."""
FEATURES_VERSION = "13"
"""Bumped when the features or estimators change: a model saved under another is refitted."""


def stage_features(r: dict, alone_ms: float | None = None) -> list[float]:
    """The stage's work normalised by the GPU, its standalone time (measured, or
    `alone_ms` when given), and which stage it is."""
    g = gpu_of(r["gpu"])
    alone = num(r, "stage_alone_ms") if alone_ms is None else alone_ms
    ids = np.log1p(stage_lookups(r) * 1e-3)
    fused = stage_fused(r)
    return [
        np.log1p(num(r, "stage_bytes") / g.copy_bytes_per_s * 1e6),
        np.log1p(num(r, "stage_flops") / (g.int32_ops_per_s * 2) * 1e6),
        np.log1p(alone * 1e3),
        num(r, "stage_parallelism") / (g.sm_count * g.max_threads_per_sm),
        num(r, "stage_kernels"),
        *(float(r["stage"] == s) for s in STAGES),
        *(ids * (r["stage"] == s) * (1.0 - fused) for s in LOOKUP_STAGES),
        ids * fused, fused,
        *stage_shape(r),
        stage_bag_kernel(r),
        np.log1p(stage_table_bytes(r) / g.l2_bytes),
        stage_hot_row(r),
    ]


def _stage_column(r: dict, column: str) -> float:
    """A derived stage column of a profile row: the row's own value, or, for profiles
    taken before the column existed (they name a preset model), what costmodel.workload
    gives that preset on one GPU (_preset_stage); 0 when neither is known."""
    if r.get(column) not in (None, ""):
        return float(r[column])
    return _preset_stage(r.get("model", ""), int(r.get("batch", 0)), r["stage"]).get(
        column, 0.0)


def stage_lookups(r: dict) -> float:
    """Ids the stage updates one by one (StageWork.lookups)."""
    return _stage_column(r, "stage_lookups")


def stage_fused(r: dict) -> float:
    """1.0 for the fused update's emb_bwd (StageWork.fused_update)."""
    return _stage_column(r, "stage_fused_update")


def stage_bag_kernel(r: dict) -> float:
    """1.0 for the bag kernel's emb_fwd (StageWork.bag_kernel)."""
    return _stage_column(r, "stage_bag_kernel")


def stage_hot_row(r: dict) -> float:
    """1.0 for the hot-row fused update's emb_bwd (StageWork.hot_row_update)."""
    return _stage_column(r, "stage_hot_row")


def stage_table_bytes(r: dict) -> float:
    """The tables' bytes a stage reads or updates (StageWork.table_bytes)."""
    return _stage_column(r, "stage_table_bytes")


SHAPE_COLUMNS = ("stage_embedding_dim", "stage_feature_count", "stage_cross_network")


def stage_shape(r: dict) -> list[float]:
    """log embedding dim, log feature count, cross network (StageWork's model shape);
    from the preset model for profiles taken before these columns existed, zeros when
    neither is known."""
    known = r if all(r.get(c) not in (None, "") for c in SHAPE_COLUMNS) else \
        _preset_stage(r.get("model", ""), int(r.get("batch", 0)), r["stage"])
    dim, count, cross = (float(known.get(c, 0.0)) for c in SHAPE_COLUMNS)
    return [np.log(max(dim, 1.0)), np.log(max(count, 1.0)), cross]


@functools.cache
def _preset_stage(model: str, batch: int, stage: str) -> dict[str, float]:
    """The profile's stage columns of a preset model at `batch` on one GPU, from the
    same costmodel.workload the simulator asks with ({} for a model that is not a
    preset: such rows are from tests; real profiles of model files carry the columns)."""

    from corun.costmodel.workload import stage_work
    from corun.spec import MODEL_PRESETS, Stage
    from corun.spec.sharding import shard_tables

    m = MODEL_PRESETS.get(model)
    if m is None or batch < 1:
        return {}
    m = replace(m, batch_per_gpu=batch)
    hw = hardware_preset("h200", 1)
    work = stage_work(m, hw, shard_tables(m, hw), 0).get(Stage(stage))
    return stage_row(work) if work is not None else {}


def stage_only(rows: Sequence[dict]) -> np.ndarray:
    """Stage features without the standalone time (to predict that time)."""
    x = np.array([stage_features(r, 0.0) for r in rows])
    return np.delete(x, STAGE_ALONE_COLUMN, axis=1)


def lead_ms(r: dict) -> float:
    """The row's kernel time before its stage started (0 for a kernel released with it)."""
    return num(r, "kernel_lead_ms")


def fitted(r: dict) -> bool:
    """Whether a row is fitted on: every profile row, and a resident row whose kernel
    had real work left when the stage started (more than three leads of its time alone:
    a shorter one had all but ended alone)."""
    return not is_resident(r) or num(r, "kernel_alone_ms") > 3 * lead_ms(r)


def design(rows: Sequence[dict]) -> tuple[np.ndarray, np.ndarray]:
    """(kernel features, kernel + stage features + resident + log kernel-alone time
    from the stage's start)."""
    k = np.array([kernel_features(r) for r in rows])
    s = np.array([stage_features(r) for r in rows])
    resident = np.array([float(is_resident(r)) for r in rows])[:, None]
    alone = np.log([max(num(r, "kernel_alone_ms") - lead_ms(r), 1e-4) for r in rows])[:, None]
    return k, np.hstack([k, s, resident, alone])


def targets(rows: Sequence[dict]) -> dict[str, np.ndarray]:
    ka = np.array([num(r, "kernel_alone_ms") for r in rows])
    lead = np.array([lead_ms(r) for r in rows])
    kc = np.array([num(r, "kernel_corun_ms") for r in rows])
    sa = np.array([num(r, "stage_alone_ms") for r in rows])
    sc = np.array([num(r, "stage_corun_ms") for r in rows])
    # a co-run kernel waits for SMs the stage holds: its latency scales with both times
    # (a resident row's kernel from the stage's start: its work alone before taken off)
    return {"kernel_alone": ka,
            "kernel_corun": np.maximum(kc - lead, 1e-4) / np.maximum(ka - lead + sa, 1e-6),
            "stage_slowdown": sc / np.maximum(sa, 1e-6), "stage_alone": sa}


def stage_row(stage: StageWork | None) -> dict[str, float]:
    """A StageWork as the profile's stage columns (zeros without a stage): one mapping
    for the profiler's CSV rows and the rows the simulator asks about."""
    if stage is None:
        return dict.fromkeys(("stage_flops", "stage_bytes", "stage_kernels",
                              "stage_parallelism", "stage_lookups", *SHAPE_COLUMNS,
                              "stage_fused_update", "stage_bag_kernel",
                              "stage_table_bytes", "stage_hot_row"), 0.0)
    return {"stage_flops": stage.flops, "stage_bytes": stage.hbm_bytes,
            "stage_kernels": stage.kernels, "stage_parallelism": stage.parallelism,
            "stage_lookups": stage.lookups, "stage_fused_update": float(stage.fused_update),
            "stage_bag_kernel": float(stage.bag_kernel),
            "stage_table_bytes": float(stage.table_bytes),
            "stage_hot_row": float(stage.hot_row_update),
            **dict(zip(SHAPE_COLUMNS, (float(stage.embedding_dim), float(stage.feature_count),
                                       float(stage.cross_network))))}


def work_row(kernel: KernelWork, stage: StageWork | None, stage_alone_ms: float,
             hw: Hardware) -> dict:
    """A profile-like row for a kernel (and a stage) the simulator asks about."""
    counts = dict(kernel.op_counts)
    regs = kernel.registers_per_thread
    row = {"gpu": hw.gpu.name, "kernel": kernel.name, "rows": kernel.rows,
           "elements": kernel.elements, "int_ops": kernel.int_ops,
           "kernel_bytes": kernel.hbm_bytes, "blocks": kernel.blocks,
           "threads": kernel.threads_per_block, "registers": regs,
           "occupancy": hw.gpu.occupancy(kernel.blocks, kernel.threads_per_block, regs),
           "chains": kernel.chains, "nodes": kernel.node_count,
           "has_lists": int(kernel.has_lists), "warp_rows": int(kernel.warp_rows),
           **{f"op_{op.value}": counts.get(op, 0) for op in OpKind},
           "stage": stage.stage.value if stage else STAGES[0], **stage_row(stage),
           "stage_alone_ms": stage_alone_ms, "kernel_alone_ms": 0.0}
    return {k: str(v) if k in ("gpu", "kernel", "stage") else v for k, v in row.items()}
