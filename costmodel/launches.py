"""Each model's host launches in one eager training step: the cost model's table.

The model presets' counts are counted from the trainer (`python bench/launch_counts.py -o
costmodel/data/launch_counts.json`, backend/launch_count.py) and kept here, so the cost
model reads them without torch. A model that is no preset is counted by the command that
plans or simulates it and registered (`register`), since counting builds the trainer.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from corun.spec.launches import StepLaunches

COUNTS_FILE = Path(__file__).parent / "data" / "launch_counts.json"

_registered: dict[str, StepLaunches] = {}


@functools.cache
def preset_launches() -> dict[str, StepLaunches]:
    """The model presets' counted launches (COUNTS_FILE)."""
    doc = json.loads(COUNTS_FILE.read_text())
    return {name: StepLaunches(name, c["operators"], c.get("kernels", {}))
            for name, c in doc["models"].items()}


def register(launches: StepLaunches) -> None:
    """Use these counts for `launches.model` (a model counted by the caller)."""
    _registered[launches.model] = launches


def step_launches(model: str) -> StepLaunches | None:
    """The counted launches of `model`'s eager step (None: neither a counted preset nor
    registered)."""
    return _registered.get(model) or preset_launches().get(model)
