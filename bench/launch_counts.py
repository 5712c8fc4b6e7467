"""Host launches of the eager training step, counted from the trainer: the PyTorch
operators each training stage dispatches, per model preset.

Run: python bench/launch_counts.py -o counts.json [--models criteo-kaggle,heavy-lean]
Builds each model's trainer on the CPU with its tables cut to a few rows (a count does
not depend on table size or on the ids), runs one step to warm it, then counts every
operator the next step dispatches between the trainer's stage marks. On a GPU each is
about one kernel launch from the host thread, the work that paces an eager step at
small batches (costmodel/host.py). Kernels the trainer launches through Numba (the bag
forward, the fused update) are not operators and are not counted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from corun.spec.provenance import git_commit
from corun.spec.serde import write_atomic

from corun import spec

MODELS = ("criteo-kaggle", "criteo-terabyte", "wide-2x", "wide-4x", "heavy-lean", "heavy-mlp",
          "mlperf-dcnv2")
TABLE_ROWS = 64
"""Rows each table keeps for counting."""


def stage_counts(model: spec.Model, batch: int, seed: int = 0) -> dict[str, int]:
    """Operators one eager step of `model` dispatches on the CPU, by training stage."""
    from corun.backend.trainer import Trainer, batch_from_tables, row_bases
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.n += 1
            return func(*args, **(kwargs or {}))

    class Marks:
        def __init__(self, count: Count) -> None:
            self.count, self.at = count, []

        def mark(self, stage) -> None:
            self.at.append((stage, self.count.n))

    small = dataclasses.replace(model, batch_per_gpu=batch, cuda_graphs=False, tables=tuple(
        dataclasses.replace(t, rows=min(t.rows, TABLE_ROWS)) for t in model.tables))
    rng = np.random.default_rng(seed)
    tables = [(rng.integers(0, t.rows, batch), np.arange(batch + 1)) for t in small.tables]
    b = batch_from_tables(rng.random((batch, small.dense_features), np.float32), tables,
                          row_bases(small), (rng.random(batch) < 0.5).astype(np.float32))
    trainer = Trainer(small, "cpu", seed)
    trainer.step(b)
    count = Count()
    marks = Marks(count)
    with count:
        trainer.step(b, marks)
    return {stage.value: n - m for (_, m), (stage, n) in zip(marks.at, marks.at[1:])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--batch", type=int, default=64, help="rows of the counted step")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args(argv)
    if args.batch < 1:
        ap.error(f"--batch = {args.batch}: an integer >= 1")
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in spec.MODEL_PRESETS]
    if unknown:
        ap.error(f"--models: {', '.join(unknown)}: model presets are "
                 f"{', '.join(spec.MODEL_PRESETS)}")
    import torch

    counts = {m: stage_counts(spec.model_preset(m), args.batch) for m in names}
    out = {"bench": "launch_counts", "git_commit": git_commit(), "torch": torch.__version__,
           "batch": args.batch, "models": counts}
    write_atomic(args.output, json.dumps(out, indent=1))
    for m, c in counts.items():
        print(f"{m}: {sum(c.values())} operators a step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
