"""What `corun plan` tells the user under its table: notes, hints and cautions, written
here from facts the planner and the simulator return (the planner returns data, not
sentences). Each function returns one line, or None where it has nothing to say."""

from __future__ import annotations

from dataclasses import replace

from corun.planner import SimJudge
from corun.planner.runners_up import NEAR_TIE_PCT, describe
from corun.planner.search import (
    AHEAD_MARGIN,
    LAUNCH_NOTE_BEHIND_PCT,
    LAUNCH_STEPS,
    TIE,
    wins_tie,
)
from corun.planner.sm_cap import racing
from corun.planner.types import Judge, Judged
from corun.sim.scenario import CAUTION, NOTE
from corun.spec import Model, Plan
from corun.spec.plan import TRAINER_UPDATE_BLOCKS_PER_SM, UPDATE_GRIDS


def time_limit_note(converged: bool, evaluations: int, time_limit_s: float) -> str | None:
    """Where the search stopped at its time limit before it converged
    (`LocalSearch.converged`): the plan then depends on the limit and on how busy the
    machine was."""
    if converged:
        return None
    return (CAUTION + f"the search stopped at its time limit ({time_limit_s:g} s, "
            f"{evaluations} plans simulated) before it converged: the chosen plan depends on "
            "the limit and on how busy this machine is; a longer --time-limit may find a "
            "better one")


def near_tie(chosen: Judged, other: Judged) -> str | None:
    """Where `other` (a runner-up) is predicted within NEAR_TIE_PCT of `chosen`: which one
    is faster is then for the GPU to say."""
    behind = 100 * (1 - other.throughput_samples_per_s / chosen.throughput_samples_per_s)
    if behind >= NEAR_TIE_PCT:
        return None
    return (CAUTION + f"the next-best schedule ({describe(other.plan)}) is predicted "
            f"{behind:.2f}% behind the chosen plan ({describe(chosen.plan)}), within the "
            f"simulator's median error measured on the H200 ({NEAR_TIE_PCT}%): measure "
            "both")


def gpu_side_note(judge: Judge, chosen: Judged, other: Judged) -> str | None:
    """Where the host thread paces `chosen` and `other` alike (a TIE) and the GPU side
    decided between them (LocalSearch's tie-break)."""
    a, b = judge.gpu_side_ms(chosen.plan), judge.gpu_side_ms(other.plan)
    if not wins_tie(judge, chosen, other) or a is None or b is None \
            or a >= b * (1 - TIE):
        return None  # not a tie, or the GPU side did not decide it
    return (NOTE + f"the host thread paces the chosen plan and the next-best alike; with it "
            f"left out the chosen plan takes {a:.3f} ms an iteration against {b:.3f} "
            "(the search breaks such ties on the GPU side; the host's pace moves with "
            "the machine)")


def host_plan_caution(plan: Plan) -> str | None:
    """For a plan that preprocesses on the host CPU: the host machine decides what it
    gains, which the validation data shows (docs/results.md)."""
    if not plan.cpu_nodes:
        return None
    return (CAUTION + f"the chosen plan runs {len(plan.cpu_nodes)} op nodes on the host CPU; "
            "on H200 machines such plans ran about as fast as gpu-sequential or slower, "
            "whatever their predicted gain: the host machine's pace decides (measure it "
            "with `corun tune`)")


def lead_note(judge: Judge, chosen: Judged) -> str | None:
    """Where the chosen plan is two batches ahead and the same plan one ahead is predicted
    faster, within AHEAD_MARGIN (`prefer_two_ahead` kept two ahead)."""
    if chosen.plan.batches_ahead != 2 or not chosen.plan.kernels:
        return None
    one = judge.judge(replace(chosen.plan, batches_ahead=1))
    if one.iteration_ms >= chosen.iteration_ms:
        return None
    return (NOTE + f"the same plan one batch ahead is predicted {one.iteration_ms:.3f} ms an "
            f"iteration against {chosen.iteration_ms:.3f}; the planner takes one ahead only "
            f"for a gain of {100 * AHEAD_MARGIN:g}% or more, since the step then waits for "
            "the kernels' tail, the part of a co-run the simulator is least sure of; "
            "`corun tune` runs it too")


def launch_shape_note(plan: Plan, behind_ideal_pct: float, host_paced: bool) -> str | None:
    """For a plan whose kernels co-run with training and are predicted to leave more than
    LAUNCH_NOTE_BEHIND_PCT of ideal where the GPU sets the pace (`host_paced`: ideal's own
    step waits for the host, which then decides the shortfall): their launch shape is what
    the learned cost model is least sure of, and `corun tune` measures the others."""
    if host_paced or behind_ideal_pct <= LAUNCH_NOTE_BEHIND_PCT or \
            not any(k.release is not None for k in plan.kernels):
        return None
    *first, last = [f"x{step:g}" for step in LAUNCH_STEPS]
    return (NOTE + f"the chosen plan is predicted {behind_ideal_pct:.1f}% behind ideal, its "
            "kernels beside training; their launch shape is what the learned cost model is "
            "least sure of (see `corun fit`'s held-out error of a kernel's co-run time), so "
            f"`corun tune` also runs the plan at {', '.join(first)} and {last} its blocks "
            "and keeps the fastest")


def sm_cap_note(judge: SimJudge, plan: Plan) -> str | None:
    """Why a capped plan is capped, for `corun plan` to print under the chosen plan."""
    found = plan.preprocess_sm_cap and racing(judge, plan)
    if not found:
        return None
    (k, alone_ms), sms = found, judge.scenario.hardware.gpu.sm_count
    return (NOTE + f"the plan confines its preprocessing to {plan.preprocess_sm_cap} of the "
            f"{sms} SMs (Plan.preprocess_sm_cap): kernel {k.name} ({k.blocks} blocks, "
            f"{alone_ms:.1f} ms alone) could otherwise take every SM between two training "
            "kernels and hold the next one, which the simulator does not model (eager heavy "
            "choices on the H200 recovered more of gpu-sequential's gap capped than on every "
            "SM); `corun tune` measures it at the other caps and uncapped, `corun execute "
            "--preprocess-sm-cap 0` runs it on every SM, `corun plan --no-sm-cap` leaves the "
            "cap out")


def update_grid_note(model: Model, plan: Plan, gpu_count: int) -> str | None:
    """Where the model's embedding update is the fused kernel and the chosen plan runs
    kernels beside it on one GPU: the update's grid is a co-run decision the planner
    leaves at the trainer's default (Plan.update_blocks_per_sm), which `corun tune`
    measures."""
    if not model.embedding_update.fused or not plan.kernels or gpu_count != 1:
        return None
    grids = ", ".join(map(str, UPDATE_GRIDS))
    return (NOTE + "the fused embedding update runs on the trainer's "
            f"{TRAINER_UPDATE_BLOCKS_PER_SM} blocks an SM, the grid its stage times were "
            "profiled on (Plan.update_blocks_per_sm = 0); more blocks can run the step "
            "faster alone and leave a kernel beside it less room: `corun tune` also runs "
            f"ideal and the plan on {grids} blocks an SM")
