"""The files of a plan folder (`corun plan --out DIR`), by strategy: its plan files and
each strategy's prediction, named in one place for the commands that write and read them
(`corun plan`, `corun tune`) and for the benchmarks."""

from __future__ import annotations

import re
from pathlib import Path

from corun.planner import HEURISTICS
from corun.spec.ranking import runner_up_label, runner_up_rank

PLAN_FILES = {"corun": "plan.json", **{h.name: f"plan-{h.name}.json" for h in HEURISTICS}}
"""The planner's choice and each published heuristic's plan (plan-rap.json); runners-up
are plan-<N>.json."""


SHARDING_PLAN_FILE = "sharding-plan.json"
"""The chosen plan's table placement as a TorchRec sharding plan (spec/formats.py)."""


def plan_file(strategy: str) -> str | None:
    """The plan file of a planned strategy ("corun", "corun-<N>" for N >= 2, "rap"), or
    None for a baseline."""
    rank = runner_up_rank(strategy)
    return f"plan-{rank}.json" if rank is not None else PLAN_FILES.get(strategy)


def plan_strategy(file_name: str) -> str | None:
    """The planned strategy whose plan a plan folder's file holds (plan_file's inverse):
    "corun" for plan.json, "corun-<N>" for plan-<N>.json, "rap" for plan-rap.json; None
    for any other name."""
    for strategy, name in PLAN_FILES.items():
        if name == file_name:
            return strategy
    m = re.fullmatch(r"plan-(\d+)\.json", file_name)
    return runner_up_label(int(m[1])) if m and int(m[1]) >= 2 else None


def prediction_file(strategy: str) -> str:
    return f"prediction-{strategy.replace(':', '-')}.json"


def trace_file(strategy: str) -> str:
    return f"trace-{strategy.replace(':', '-')}.json"


def planned_strategies(folder: Path) -> list[str]:
    """The planned strategies whose plan files are in `folder`: corun, its runners-up in
    rank order, then the heuristics' (rap)."""
    found = {s for p in folder.glob("plan*.json") if p.is_file()
             and (s := plan_strategy(p.name)) is not None}
    heuristics = {h.name for h in HEURISTICS}
    return sorted(found, key=lambda s: (s in heuristics, runner_up_rank(s) or 1))
