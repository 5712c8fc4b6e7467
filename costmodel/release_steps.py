"""Whole profiled steps that released a kernel at a stage: every stage's time in them and
the kernel's time from its release, for the kernels a profile timed that way
(`corun profile` records them in step_stage_ms).

Rates composed stage by stage from pairs missed how a kernel carried into later stages
behaves: on the H200, heavy-lean's whole pipeline in 198 blocks released at
interaction_bwd of the graphed step left bottom_mlp_bwd at 0.083 ms and emb_bwd at its
pace in the profiled step (0.097 ms and no slowdown in the executed plan), where the
pair of the same kernel resident before bottom_mlp_bwd took it to 0.34-0.53 ms. A plan's kernel
that such a step measured takes its rates from the step itself (`rates`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from corun.costmodel.types import CoRunEffect
from corun.spec import SpecError


@dataclass(frozen=True)
class ReleaseStep:
    """One kernel released at one stage: the step's stage times beside it (ms, in step
    order), the same stages alone, and the kernel's time alone and from its release."""

    stage_ms: tuple[float, ...]
    alone_ms: tuple[float, ...]
    kernel_alone_ms: float
    kernel_ms: float


def parse_steps(text: str) -> dict[str, float]:
    """step_stage_ms ("stage=ms ...") as a dict; a SpecError naming the column otherwise."""
    try:
        return {k: float(v) for k, v in (x.split("=") for x in text.split())}
    except ValueError:
        raise SpecError("step_stage_ms", text[:80], "stage=ms pairs separated by spaces, "
                        "as corun profile writes them") from None


def format_steps(stage_ms: dict[str, float]) -> str:
    """step_stage_ms as `corun profile` writes it (the inverse of `parse_steps`)."""
    return " ".join(f"{stage}={ms:.5f}" for stage, ms in stage_ms.items())


def read_release_steps(rows: Sequence[dict], key) -> dict[tuple, ReleaseStep]:
    """ReleaseStep by key(row, step_rows): the releasing stage's row and the rows of the
    same GPU, model, batch and kernel at every stage of its step, in step order (each
    stage's time alone comes from them), from profile rows that recorded their steps."""
    by_group: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        by_group.setdefault((r["gpu"], r["model"], r["batch"], r["kernel"]), {})[r["stage"]] = r
    out = {}
    for r in rows:
        if not r.get("step_stage_ms"):
            continue
        steps = parse_steps(r["step_stage_ms"])
        mine = by_group[(r["gpu"], r["model"], r["batch"], r["kernel"])]
        if set(steps) != set(mine):
            continue  # a row whose kernel was not profiled at every stage
        step_rows = [mine[s] for s in steps]
        out[key(r, step_rows)] = ReleaseStep(
            tuple(steps.values()), tuple(float(x["stage_alone_ms"]) for x in step_rows),
            float(r["kernel_alone_ms"]), float(r["kernel_corun_ms"]))
    return out


def rates(step: ReleaseStep, release: int,
          speed_ups: bool = False) -> list[tuple[float, float]]:
    """(stage factor, kernel factor) at every stage position from `release` on: the
    kernel at the one rate that ends it when the step measured, from its release over
    the stages after, then alone past the step's end; each stage slowed by its measured
    delay over the part of it the kernel ran beside, as the simulator applies a stage
    factor only while the kernel runs. Spread over the whole stage, the delay of a stage
    the kernel ended inside was lost in part: heavy-lean b8192's pipeline in 396 blocks
    released at interaction_bwd ended 0.6 ms into the 1.18 ms update, which it slowed by
    0.05 ms. A stage that ran faster beside the kernel is never sped up, unless
    `speed_ups`: then by the ratio of its whole times. That is for a step timed on the
    machine predicted, whose executed plans ran as fast: on an H100, heavy-lean b32768's
    emb_bwd took 0.85 of its time alone beside a kernel, and that plan ran faster than
    the step without preprocessing."""
    span = step.stage_ms[release:]
    total = sum(span)
    # the step from the release on as one stage: the kernel's factor of a whole run
    kernel = CoRunEffect.from_whole_run(step.kernel_alone_ms, step.kernel_ms, total,
                                        total).kernel_factor
    out, start = [], 0.0
    for ms, alone in zip(span, step.alone_ms[release:]):
        beside = min(max(step.kernel_ms - start, 0.0), ms)  # the kernel's time in it
        stage = CoRunEffect.from_whole_run(step.kernel_alone_ms, beside, alone,
                                           ms).stage_factor if alone > 0 else 1.0
        if speed_ups and beside > 0 and 0 < ms < alone:
            stage = ms / alone
        out.append((stage, kernel))
        start += ms
    return out
