"""SimPy discrete-event model of DLRM training iterations with input preprocessing."""

from corun.sim.scenario import Compiled, EmbeddingComm, Scenario, compile_scenario, steady_state
from corun.sim.simulate import SimResult, calibrate, simulate, simulate_steady
from corun.sim.strategy import Strategy, StrategyKind, parse_strategy, strategy_plan

__all__ = ["Compiled", "EmbeddingComm", "Scenario", "SimResult", "Strategy", "StrategyKind",
           "calibrate", "compile_scenario", "parse_strategy", "simulate", "simulate_steady",
           "steady_state", "strategy_plan"]
