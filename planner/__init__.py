"""Choose the plan: corun's local search, RAP's heuristic, judged by the simulator."""

from corun.planner.judge import SimJudge
from corun.planner.rap import RapProposer
from corun.planner.runners_up import runners_up
from corun.planner.search import LocalSearch
from corun.planner.types import Judge, Judged, Proposer

HEURISTICS: tuple[type[Proposer], ...] = (RapProposer,)
"""Published heuristics: `corun plan` shows each one's plan beside its own search's, as the
strategy of its name, and writes it as plan-<name>.json. Register another one here."""

__all__ = ["HEURISTICS", "Judge", "Judged", "LocalSearch", "Proposer", "RapProposer",
           "SimJudge", "runners_up"]
