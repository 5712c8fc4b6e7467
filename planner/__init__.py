"""Choose the plan: corun's local search, RAP's heuristic, judged by the simulator."""

from planner.judge import SimJudge
from planner.rap import RapProposer
from planner.search import LocalSearch
from planner.types import Judge, Judged, Proposer

__all__ = ["Judge", "Judged", "LocalSearch", "Proposer", "RapProposer", "SimJudge"]
