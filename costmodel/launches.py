"""Each model's host launches in one eager training step: the cost model's table.

The model presets' counts are counted from the trainer (`python bench/launch_counts.py -o
costmodel/data/launch_counts.json`, backend/launch_count.py) and kept here, so the cost
model reads them without torch. A model answers with its preset's counts only where it
has every part the launches follow as the preset has it (`LAUNCH_FIELDS`); tables and
batch sizes launch the same kernels.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from corun.spec import MODEL_PRESETS, Model
from corun.spec.launches import StepLaunches

COUNTS_FILE = Path(__file__).parent / "data" / "launch_counts.json"

LAUNCH_FIELDS = ("bottom_mlp", "top_mlp", "interaction", "dcn_layers", "dcn_low_rank",
                 "optimizer", "precision", "sparse_gradients", "embedding_update",
                 "embedding_forward")
"""The parts of a model its eager step's launches follow (the MLPs' layers, the
interaction, the optimizer, the embedding's forward and update kernels)."""


@functools.cache
def preset_launches() -> dict[str, StepLaunches]:
    """The model presets' counted launches (COUNTS_FILE)."""
    doc = json.loads(COUNTS_FILE.read_text())
    return {name: StepLaunches(name, c["operators"], c.get("kernels", {}))
            for name, c in doc["models"].items()}


def step_launches(model: Model) -> StepLaunches | None:
    """The counted launches of `model`'s eager step: its preset's, where it launches as
    that preset does (None: no preset of its name, or one that launches otherwise)."""
    preset = MODEL_PRESETS.get(model.name)
    if preset is None or any(getattr(model, f) != getattr(preset, f) for f in LAUNCH_FIELDS):
        return None
    return preset_launches().get(model.name)
