"""Judge plans with the simulator, caching by the plan's content."""

from __future__ import annotations

from dataclasses import replace

from costmodel import CostModel
from costmodel.learned import cost_model_for
from planner.types import Judge, Judged
from sim import Scenario, Strategy, StrategyKind, simulate, steady_state
from spec import Plan
from spec.serde import to_jsonable


def plan_key(plan: Plan) -> str:
    return repr(to_jsonable(plan))


class SimJudge(Judge):
    """Simulates `scenario` with the plan as its strategy (few iterations, no jitter)."""

    def __init__(self, scenario: Scenario, cost_model: CostModel | None = None,
                 iterations: int = 6, warmup: int = 2) -> None:
        self.scenario = replace(scenario, iterations=iterations, warmup=warmup, jitter_cv=0.0)
        self.cost_model = cost_model or cost_model_for(scenario.hardware)
        self.cache: dict[str, Judged] = {}
        self.evaluations = 0

    def judge(self, plan: Plan) -> Judged:
        key = plan_key(plan)
        if key not in self.cache:
            # plans with CPU work run longer (sim.steady_state)
            sc = steady_state(replace(self.scenario,
                                      strategy=Strategy(StrategyKind.PLAN, plan=plan)))
            p = simulate(sc, self.cost_model, commit="planner").prediction
            self.cache[key] = Judged(plan, p.throughput_samples_per_s, p.iteration_time_ms)
            self.evaluations += 1
        return self.cache[key]
