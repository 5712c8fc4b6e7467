"""What corun tells the user under its tables: notes, hints and cautions, written here
from facts the planner and the simulator return (they return data, not sentences: the
simulator's are Prediction.findings). Each function returns one line, or None where it
has nothing to say."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
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
from corun.spec import Model, Plan, Prediction
from corun.spec.findings import Finding, FindingKind, Level, StageProvenance
from corun.spec.plan import TRAINER_UPDATE_BLOCKS_PER_SM, UPDATE_GRIDS

CAUTION, HINT, NOTE = (f"{level.value}: " for level in (Level.CAUTION, Level.HINT, Level.NOTE))
"""How a line of each level starts."""


def _host_thread(f: Finding) -> str:
    return f"host thread {f.number('host_ms'):.2f} ms per iteration ({f['source']})"


def _cpu_oversubscribed(f: Finding) -> str:
    return (f"{f.number('workers'):.0f} CPU workers on a host of {f.number('cores'):.0f} "
            "cores: predicted as if each had a core of its own")


def _calibrated(f: Finding) -> str:
    return (f"calibrated: every duration x{f.number('scale'):.3f}, the machine's measured "
            "ideal over the predicted (sim.calibrate)")


def _stages_untimed(f: Finding) -> str:
    model, gpu, batch = f["model"], f["gpu"], int(f.number("batch"))
    how = StageProvenance(f["how"])
    graphed = ("the graphed step was not timed at this batch, so each stage is its eager "
               "time less the stage's fitted saving") if f.number("graphed") else ""
    if how is StageProvenance.GRAPHED_FROM_EAGER:
        return graphed
    tail = "; " + graphed if graphed else ""
    measure = "`corun profile` then `corun fit` measure them"
    if how is StageProvenance.BORROWED:
        return (f"{model} was never profiled on {gpu}: its training stages take the times "
                "of another model's profiled stages with the same features (work, model "
                "shape, the tables' bytes), which leave out whatever else sets a stage's "
                f"speed; {measure}" + tail)
    held = (f"held-out error {f.number('heldout_mape_pct'):.0f}% on model-batch pairs not "
            "fitted" if "heldout_mape_pct" in f.facts else "no held-out error on record")
    if how is StageProvenance.NEVER_PROFILED:
        return (f"{model} was never profiled on {gpu}: its training stages' times are "
                f"extrapolated ({held}); {measure}" + tail)
    said = f"interpolated ({held})" if how is StageProvenance.INTERPOLATED else (
        f"extrapolated past the profiled batches ({held}); `corun profile --models {model} "
        f"--batches {batch} --out DIR` then `corun fit` measure them")
    return (f"{model} was profiled on {gpu} at batch {f['batches']}, not {batch}: "
            f"{f.number('untimed'):.0f} of {f.number('stages'):.0f} training stages' times "
            f"are {said}" + tail)


def _kernels_untimed(f: Finding) -> str:
    held = (f"held-out error {f.number('heldout_mape_pct'):.0f}% on kernels not fitted"
            if "heldout_mape_pct" in f.facts else "no held-out error on record")
    return (f"{f.number('untimed'):.0f} of {f.number('kernels'):.0f} fused kernels' times "
            f"alone were never timed on {f['gpu']}: the learned model's ({held}); `corun "
            "calibrate --plans PLAN.json` times them on this machine (`corun profile "
            "--plans` then `corun fit`, beside every stage too)")


def _host_paces_eager(f: Finding) -> str:
    host_ms = f.number("host_ms")
    band = ""
    if "lent_low" in f.facts:  # the reference host
        low, high = f.number("lent_low"), f.number("lent_high")
        band = (f"; lent H200 hosts' pace differs (10th-90th percentile {low:g}x-{high:g}x "
                f"their median), {host_ms * low:.2f}-{host_ms * high:.2f} ms here, and the "
                "eager times above with it: `corun calibrate` measures this host")
    elif "round_low" in f.facts:  # a machine profile that kept its rounds
        low, high = f.number("round_low"), f.number("round_high")
        band = (f"; this host's eager step moved between its calibration rounds "
                f"({low:.2f}x-{high:.2f}x their median), {host_ms * low:.2f}-"
                f"{host_ms * high:.2f} ms here, and the eager times above with it")
    return (f"the host thread paces this step ({host_ms:.2f} ms of launches "
            f"against {f.number('gpu_ms'):.2f} ms of GPU work){band}; --cuda-graphs replays it as "
            "CUDA graphs (one GPU; a fixed id count per batch unless the model has the bag "
            "kernels): on the H200, ideal ran faster that way at kaggle and terabyte b4096")


def _racing_kernel(f: Finding) -> str:
    cap = int(f.number("cap_sms"))
    return (f"kernel {f['kernel']} ({f.number('blocks'):.0f} blocks, "
            f"{f.number('alone_ms'):.1f} ms alone) can "
            "take every SM where it becomes ready between two of the eager step's training "
            "kernels and hold the next one, which the simulator does not model; confined "
            f"to {cap} SMs (`corun execute --preprocess-sm-cap {cap}`, "
            "Plan.preprocess_sm_cap, as `corun plan` caps such a plan) eager heavy "
            "choices on the H200 recovered more of gpu-sequential's gap than on every SM")


def _host_link_bound(f: Finding) -> str:
    h2d_ms, gpu_ms = f.number("h2d_ms"), f.number("gpu_ms")
    return (f"copying each batch's raw inputs over the host link takes {h2d_ms:.2f} ms, "
            f"{100 * h2d_ms / gpu_ms:.0f}% of the step's {gpu_ms:.2f} ms of GPU work: no "
            "plan that preprocesses on the GPU runs faster than that copy (fewer or narrower "
            "raw inputs lower it)")


def _owner_mapped(f: Finding) -> str:
    host = ""
    if "host_saved_ms" in f.facts:
        host = (f", and {f.number('host_saved_ms'):.2f} ms less of the host's launches for "
                f"it against {f.number('owner_lane_ms'):.2f} ms more for the owners' batch "
                "lane, costmodel/host.py")
    return (f"{f.number('tables'):.0f} of {f.number('of_tables'):.0f} tables are "
            "preprocessed by their owner GPU over the global batch, so their ids skip the "
            f"input all-to-all (predicted {f.number('row_wise_ms'):.3f} -> "
            f"{f.number('input_a2a_ms'):.3f} ms a step{host}) and their raw columns are "
            "copied to the owner from the host instead; ideal (batches ready on each GPU, "
            "row-wise) pays the whole all-to-all, so such a plan can exceed it")


def _sm_cap_bound(f: Finding) -> str:
    cap, sms, bound = f.number("sm_cap"), f.number("sm_count"), f.number("max_stage_slowdown")
    if not bound:
        return (f"the plan confines its preprocessing to {cap:.0f} SMs "
                f"(Plan.preprocess_sm_cap), which leaves training too few of the {sms:.0f}: "
                "it runs, and is predicted, on every SM")
    return (f"the plan confines its preprocessing to {cap:.0f} of {sms:.0f} SMs "
            "(Plan.preprocess_sm_cap): simulated as training keeping the rest to itself, so "
            f"a stage slows at most {bound:.2f}x beside it and the kernel gives up what the "
            "stage gains; the kernels' pace alone on fewer SMs and the race for the SMs "
            "that the cap prevents are not simulated")


def _update_grid_not_simulated(f: Finding) -> str:
    return (f"the plan runs the fused embedding update on {f.number('blocks_per_sm'):.0f} "
            "blocks an SM (Plan.update_blocks_per_sm), which is not simulated: the stage "
            f"times are the default grid's ({f.number('default'):.0f} an SM), and another "
            "grid can run the update much faster or slower")


def _grid_variant(f: Finding) -> str:
    return (f"{f['variant']} runs the fused embedding update on another grid than the "
            f"default, which is not simulated: predicted as {f['base']}")


def _not_settled(f: Finding) -> str:
    return (f"the plan had not settled after {f.number('warmup'):.0f} warm-up iterations "
            f"(its kernels slid against the step): predicted after "
            f"{f.number('settle_warmup'):.0f}, where the first run's median iteration was "
            f"{f.number('first_ms'):.3f} ms")


def _times_carried(f: Finding) -> str:
    return (f"no cost model was fitted on {f['gpu']}: every stage and kernel time is "
            f"{f['source']}'s, carried by the two GPUs' ceilings (copy "
            f"{f.number('copy_tb_s'):.2f} against {f.number('source_copy_tb_s'):.2f} TB/s, "
            "peak FLOP/s, SMs x clock)" + ("; the machine profile's timed stages and kernels "
                                            "are scaled to its measurements"
                                            if float(f.facts.get("profiled", 0)) else
                                            "; `corun calibrate` measures this machine"))


def _machine_profile(f: Finding) -> str:
    coruns = int(f.number("coruns")) if "coruns" in f.facts else 0
    return (f"predicted for the machine profile {f['machine']}: its measured ceilings and "
            f"host costs, and {int(f.number('stages'))} training stages and "
            f"{int(f.number('kernels'))} fused kernels scaled to its timings"
            + (f", {coruns} kernels' co-runs as it timed them in their steps" if coruns
               else "") + " (--machine)")


RENDERERS: dict[FindingKind, Callable[[Finding], str]] = {
    FindingKind.HOST_THREAD: _host_thread,
    FindingKind.CPU_OVERSUBSCRIBED: _cpu_oversubscribed,
    FindingKind.CALIBRATED: _calibrated,
    FindingKind.STAGES_UNTIMED: _stages_untimed,
    FindingKind.KERNELS_UNTIMED: _kernels_untimed,
    FindingKind.HOST_PACES_EAGER: _host_paces_eager,
    FindingKind.RACING_KERNEL: _racing_kernel,
    FindingKind.HOST_LINK_BOUND: _host_link_bound,
    FindingKind.OWNER_MAPPED: _owner_mapped,
    FindingKind.SM_CAP_BOUND: _sm_cap_bound,
    FindingKind.UPDATE_GRID_NOT_SIMULATED: _update_grid_not_simulated,
    FindingKind.GRID_VARIANT: _grid_variant,
    FindingKind.NOT_SETTLED: _not_settled,
    FindingKind.TIMES_CARRIED: _times_carried,
    FindingKind.MACHINE_PROFILE: _machine_profile,
}
"""One line's text for each kind of finding (a new kind adds its renderer here)."""


def finding_line(f: Finding) -> str:
    """A finding as the line a user reads, its level first."""
    return f"{f.level.value}: {RENDERERS[f.kind](f)}"


def shown(preds: Iterable[Prediction]) -> list[str]:
    """The distinct lines the predictions' findings show under a table (every level but
    RECORD), in order. Where one kind of finding says different things for different
    strategies (1 of 1 kernels untimed for one plan, 5 of 5 for another), each line
    names the strategies it is about."""
    lines: dict[tuple, list[str]] = {}
    for p in preds:
        for f in p.findings:
            if f.level is not Level.RECORD:
                lines.setdefault((f.kind, finding_line(f)), []).append(p.strategy)
    kinds = Counter(kind for kind, _ in lines)
    out = []
    for (kind, line), strategies in lines.items():
        if kinds[kind] > 1:
            level, _, rest = line.partition(": ")
            line = f"{level}: {', '.join(dict.fromkeys(strategies))}: {rest}"
        out.append(line)
    return out


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


def graphed_whatif_note(ideal: Prediction, mine: Prediction, eager: Prediction) -> str:
    """What --cuda-graphs would give on the chosen plan (`ideal` and `mine` simulated with
    the graphed step), against the eager step's `ideal` (`eager`)."""
    return (NOTE + f"with --cuda-graphs (simulated on the chosen plan, not searched): ideal "
            f"{ideal.mean_iteration_ms:.3f} ms an iteration, the plan "
            f"{mine.mean_iteration_ms:.3f} ms, "
            f"{mine.throughput_samples_per_s / ideal.throughput_samples_per_s:.1%} of that "
            f"ideal and {mine.throughput_samples_per_s / eager.throughput_samples_per_s:.2f}x "
            "the eager ideal's samples/s; `corun plan --cuda-graphs` searches for that step")
