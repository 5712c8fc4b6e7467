"""The planner's SM cap: confine a plan's preprocessing stream to some of the GPU's SMs
where one of its kernels can race the training stages for them.

The simulator does not model the race (sim.scenario.racing_kernel), and of the cap only
the SMs it leaves training (sim.scenario.stage_slowdown_bound), so the search cannot
weigh it: the cap is a rule applied to the plans it returns, from what the
H200 measured: four eager choices with such a kernel recovered more of gpu-sequential's
gap confined to 96 or 64 SMs than on every SM in 8 of 9 commands (spec.plan.CAP_SHARES).
Held out, tunes of plans it had capped: a cap beat every SM in 4 of 5. `corun tune` measures
the plan at the other shares and on every SM and keeps the fastest.
"""

from __future__ import annotations

from dataclasses import replace

from corun.planner.judge import SimJudge
from corun.sim.scenario import compile_scenario, racing_kernel
from corun.sim.strategy import Strategy, StrategyKind
from corun.spec import FusedKernel, Plan
from corun.spec.plan import default_cap_sms


def racing(judge: SimJudge, plan: Plan) -> tuple[FusedKernel, float] | None:
    """The plan's kernel that can race the training stages for the SMs, with its alone
    ms, as the judge's scenario compiles it (sim.scenario.racing_kernel), or None."""
    sc = replace(judge.scenario, strategy=Strategy(StrategyKind.PLAN, plan=plan, name="corun"))
    return racing_kernel(sc, plan, compile_scenario(sc, judge.cost_model).gpus[0])


def with_sm_cap(judge: SimJudge, plan: Plan) -> Plan:
    """`plan` confined to `default_cap_sms` SMs (Plan.preprocess_sm_cap) where it has a
    racing kernel and no cap yet; else `plan` unchanged."""
    if plan.preprocess_sm_cap or racing(judge, plan) is None:
        return plan
    return replace(plan, preprocess_sm_cap=default_cap_sms(judge.scenario.hardware.gpu.sm_count))


