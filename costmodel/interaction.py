"""The dot interaction's stages in profiles timed before the trainer gathered its
triangle flat: what the change saves, taken off those rows.

Before PROFILED_BEFORE the trainer's DotInteraction (backend/trainer.py) kept the strict lower
triangle by advanced indexing, whose backward sorts; every profile row then timed
interaction_fwd and interaction_bwd that way. SAVING_CSV beside the profile holds, for
each interaction shape (features F, dim d) and batch, the stage's time inside the step
before and after the change, from ideal runs of both trainers on the H200. read_profile takes
each row's saving, before less after, off its stage times (alone and beside a kernel: what a
co-runner adds is left as measured); rows measured from INDEX_UNTIL on were timed the flat way
and are left alone. A batch not timed takes the saving of the nearest ones, linear in the batch
between them and in proportion to it beyond.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

SAVING_CSV = "interaction-saving.csv"
COLUMNS = ("gpu", "features", "dim", "batch", "stage", "index_ms", "flat_ms", "source")
"""SAVING_CSV: a GPU's name, the interaction's F and d, the batch, the stage
(interaction_fwd / interaction_bwd), its median ms in the step before the change and
after, and the records they came from."""

INDEX_UNTIL = "2026-12-01T11:30:00Z"
"""Profile rows measured before this (UTC, ISO 8601) timed the advanced-indexing
interaction: the last such row in costmodel/data/h200 is of 2026-12-01T06:11:04Z; the
trainer changed at commit 2297eb6 (2026-12-01T11:11:44Z)."""

STAGES = ("interaction_fwd", "interaction_bwd")

PROFILED_SHAPES = tuple(
    [("criteo-kaggle", b) for b in (2048, 8192, 16384)]  # F 28, d 128 (terabyte's too)
    + [("heavy", b) for b in (4096, 8192, 16384, 32768)]  # F 27, d 8 (heavy-fused's)
    + [("wide-2x", b) for b in (2048, 8192, 16384)]  # F 53
    + [("wide-4x", b) for b in (2048, 8192)])  # F 105
"""(model preset, batch): one model for each dot-interaction shape the H200 profile
holds, at each batch it holds (mlperf-dcnv2's DCN-v2 interaction has no triangle)."""

Shape = tuple[str, int, int, str]
"""(GPU name, F, d, stage)."""


def read_savings(path: Path) -> dict[Shape, list[tuple[int, float]]]:
    """SAVING_CSV's savings by shape: (batch, index less flat ms), by batch (none if the
    file does not exist)."""
    by_batch: dict[Shape, dict[int, list[float]]] = {}
    if not path.exists():
        return {}
    with path.open(newline="") as fh:
        for r in csv.DictReader(fh):
            key = (r["gpu"], int(r["features"]), int(r["dim"]), r["stage"])
            by_batch.setdefault(key, {}).setdefault(int(r["batch"]), []).append(
                float(r["index_ms"]) - float(r["flat_ms"]))
    # models of one shape (criteo-kaggle's and criteo-terabyte's) timed at one batch: the mean
    return {k: sorted((b, sum(v) / len(v)) for b, v in d.items()) for k, d in by_batch.items()}


def saving_at(points: Sequence[tuple[int, float]], batch: int) -> float:
    """The saving at `batch` from (batch, saving) points sorted by batch: linear between
    two, in proportion to the batch beyond the ends."""
    if batch <= points[0][0]:
        return points[0][1] * batch / points[0][0]
    if batch >= points[-1][0]:
        return points[-1][1] * batch / points[-1][0]
    for (b0, s0), (b1, s1) in zip(points, points[1:]):
        if b0 <= batch <= b1:
            return s0 + (s1 - s0) * (batch - b0) / (b1 - b0)
    raise AssertionError("unreachable: points sorted by batch")


def correct_rows(rows: list[dict[str, str]], savings: dict[Shape, list[tuple[int, float]]]
                 ) -> list[dict[str, str]]:
    """`rows` with the saving taken off the interaction stages of those timed the index
    way (copies; other rows as they are). A row whose model is not a preset, or whose
    shape SAVING_CSV does not hold, is left as measured."""
    if not savings:
        return rows
    from corun.spec import Interaction, SpecError, model_preset

    shapes: dict[str, tuple[int, int] | None] = {}
    out = []
    for r in rows:
        if r["stage"] not in STAGES or r.get("measured_utc", "") >= INDEX_UNTIL:
            out.append(r)
            continue
        if r["model"] not in shapes:
            try:
                m = model_preset(r["model"])
                shapes[r["model"]] = ((m.features, m.embedding_dim)
                                      if m.interaction is Interaction.DOT else None)
            except SpecError:
                shapes[r["model"]] = None
        shape = shapes[r["model"]]
        points = savings.get((r["gpu"], *shape, r["stage"])) if shape else None
        if not points:
            out.append(r)
            continue
        s = saving_at(points, int(r["batch"]))
        out.append({**r, **{k: repr(max(float(r[k]) - s, FLOOR * float(r[k])))
                            for k in ("stage_alone_ms", "stage_corun_ms") if r.get(k)}})
    return out


FLOOR = 0.1
"""A corrected stage keeps at least this share of its measured time (the largest saving
measured, wide-4x b8192's backward, left 24%)."""
