"""Choose the plan: corun's local search, RAP's heuristic, judged by the simulator."""

from planner.judge import SimJudge
from planner.rap import RapProposer
from planner.runners_up import runners_up
from planner.search import LocalSearch
from planner.types import Judge, Judged, Proposer

__all__ = ["Judge", "Judged", "LocalSearch", "Proposer", "RapProposer", "SimJudge",
           "runners_up"]
