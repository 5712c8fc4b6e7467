"""Choose the plan: corun's local search, RAP's heuristic, judged by the simulator."""

from corun.planner.judge import SimJudge
from corun.planner.rap import RapProposer
from corun.planner.runners_up import runners_up
from corun.planner.search import LocalSearch
from corun.planner.types import Judge, Judged, Proposer

__all__ = ["Judge", "Judged", "LocalSearch", "Proposer", "RapProposer", "SimJudge",
           "runners_up"]
