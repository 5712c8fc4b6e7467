"""A stage taken as held by a kernel released with it wherever a launch of the same kernel
in fewer blocks held it in the profile.

On the H200 a long fused kernel released with a GEMM-heavy stage either waits for the
stage or takes the SMs first and holds it for most of its own run, and which one happens
changes from step to step near a launch size. A profile row's
median can then fall on the unheld side where a smaller launch's row was held:
graphed heavy-lean b32768 beside heavy-rehash's whole pipeline held interaction_bwd
5.9x at 264 blocks, 1.5x at 297 and 2.2x at 396, 4.8-5.0x at 528-1584
(costmodel/data/h200/graphed-profile-heavy-rehash.csv). Executed, the plans releasing it
there in 297, 445 and 594 blocks were all held, +1.5-1.7 ms, as eager 297 and 396 had been (run
7). More blocks leave a stage no more room, so such a row is taken at the held level of the
nearest smaller launch (`floor_held`).

Applied to the rows the model looks up as measured without fitting them (the lookup
folder and the graphed profiles: whole-pipeline sweeps of 11-13 launch sizes in 15 steps
a pair), not to the fitted profiles: there, at b8192, short stages held by a small launch
were profiled and executed unheld beside larger ones, and floored the executed heavy-lean
b8192-b16384 cases came out worse.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from corun.costmodel.profile_data import is_resident
from corun.costmodel.release_steps import format_steps, parse_steps

HELD_RATIO = 3.0
"""A stage beside a kernel is held where it took at least this many times its time alone:
in heavy-rehash's profiles a stage beside a kernel was either within 1.0-2.5x of it or
3.2-23x (costmodel/data/h200/lookup/profile-heavy-rehash.csv and the graphed one)."""

_LAUNCH = re.compile(r"^(?P<head>.+):(?P<blocks>\d+)x(?P<threads>\d+)(?P<tail>(:warp)?)$")


def _launch(kernel: str) -> tuple[str, int] | None:
    """(the kernel's name with its block count left out, its block count), or None for
    a name that is not costmodel.workload.kernel_key's."""
    m = _LAUNCH.match(kernel)
    if m is None:
        return None
    return f"{m['head']}:*x{m['threads']}{m['tail']}", int(m["blocks"])


def _ratio(r: dict) -> float:
    return float(r["stage_corun_ms"]) / max(float(r["stage_alone_ms"]), 1e-9)


def floor_held(rows: Sequence[dict]) -> list[dict]:
    """`rows` with every row whose stage was not held (under HELD_RATIO) where the same
    kernel in fewer blocks, beside the same stage (same GPU, model, batch, launched or
    resident), held it taken at the held ratio of the nearest such launch: its
    stage_corun_ms and, in its step_stage_ms, its own stage's time. Other rows are
    returned as they are; changed ones are copies."""
    groups: dict[tuple, list[tuple[int, dict]]] = {}
    for r in rows:
        launch = _launch(r.get("kernel", ""))
        if launch is not None:
            key = (r["gpu"], r["model"], r["batch"], r["stage"], launch[0], is_resident(r))
            groups.setdefault(key, []).append((launch[1], r))
    floors: dict[int, float] = {}
    for members in groups.values():
        held_ratio = None
        for _, r in sorted(members, key=lambda m: m[0]):
            ratio = _ratio(r)
            if ratio >= HELD_RATIO:
                held_ratio = ratio
            elif held_ratio is not None:
                floors[id(r)] = held_ratio
    return [_held(r, floors[id(r)]) if id(r) in floors else r for r in rows]


def _held(r: dict, ratio: float) -> dict:
    """A copy of row `r` with its stage at `ratio` times its time alone."""
    held_ms = ratio * float(r["stage_alone_ms"])
    out = {**r, "stage_corun_ms": repr(held_ms)}
    if r.get("step_stage_ms"):
        steps = parse_steps(r["step_stage_ms"])
        steps[r["stage"]] = held_ms
        out["step_stage_ms"] = format_steps(steps)
    return out
