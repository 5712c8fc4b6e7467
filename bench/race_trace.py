"""Who wins the SMs, step by step: a profiler trace of a co-run (bench/kernel_timeline.py)
read for the race between the plan's long kernel and the training kernels around it.

For each of the last timed steps: when the plan's longest kernel started, which training
kernel had started last before it and which one started next, how long that next one
waited and ran, against its median over the steps. A step whose next training kernel ran
many times its median lost the race: the plan's blocks took the SMs first.

    python bench/race_trace.py TRACE [--steps 40] [-o OUT.md]

TRACE: a `<strategy>.trace.json(.xz)` that kernel_timeline.py wrote. Session 56:
bench/results/raw/race_trace_run19/corun.trace.json.xz, eager heavy-rehash b32768's choice
(bench/results/race_trace_h200.md).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.kernel_timeline import kernels, training_steps, training_stream  # noqa: E402
from spec.serde import stored_path, write_or_print  # noqa: E402

LOST = 3.0
"""The next training kernel lost the race where it ran this many times its median."""


def races(ks: list[dict], steps: int) -> list[dict]:
    """One row a step: the plan's longest kernel in it, against the training kernels
    started just before (`before`) and just after (`after`) it, by index in the step."""
    train = training_stream(ks)
    own = training_steps(ks, steps)
    others = [k for k in ks if k["stream"] != train]
    median = [statistics.median(s[j]["dur"] for s in own) for j in range(len(own[0]))]
    rows = []
    for step in own:
        t0, t1 = step[0]["ts"], step[-1]["ts"] + step[-1]["dur"]
        inside = [k for k in others if t0 <= k["ts"] < t1]
        if not inside:
            continue
        plan = max(inside, key=lambda k: k["dur"])
        after = next((j for j, k in enumerate(step) if k["ts"] > plan["ts"]), None)
        if after is None or after == 0:
            continue
        before = step[after - 1]
        rows.append({
            "start_us": plan["ts"] - t0, "plan_us": plan["dur"], "before": after - 1,
            "before_end_us": plan["ts"] - (before["ts"] + before["dur"]), "after": after,
            "after_wait_us": step[after]["ts"] - plan["ts"],
            "after_us": step[after]["dur"], "after_median_us": median[after],
            "lost": step[after]["dur"] > LOST * median[after],
            "name": step[after]["name"]})
    return rows


def render(rows: list[dict], trace: str, captured: str | None = None) -> str:
    lost = [r for r in rows if r["lost"]]
    won = [r for r in rows if not r["lost"]]

    def med(rs: list[dict], key: str) -> str:
        if not rs:
            return "-"
        vs = [r[key] for r in rs]
        return f"{statistics.median(vs):.0f} ({min(vs):.0f} to {max(vs):.0f})"

    lines = [
        f"# Who wins the SMs, step by step ({trace})", "",
        f"Made by `python bench/race_trace.py {trace}`. Per timed step: the plan's longest "
        "kernel's start (us after the step's first training kernel), the training kernel "
        "that started last before it (#, and how long after that kernel's end the plan's "
        "began: negative while it ran), and the one that started next (#, its wait after "
        "the plan's start, its time and its median over the steps). Lost: the next "
        f"training kernel ran over {LOST:g}x its median."
        + (f" The trace was captured by `{captured}`." if captured else ""), "",
        f"{len(lost)} of {len(rows)} steps lost the race. Medians, lost / won: the plan's "
        f"kernel started {med(lost, 'start_us')} / {med(won, 'start_us')} us into the step "
        f"and ran {med(lost, 'plan_us')} / {med(won, 'plan_us')} us; it began "
        f"{med(lost, 'before_end_us')} / {med(won, 'before_end_us')} us after the training "
        "kernel before it ended.", "",
        "| step | plan starts us | plan us | before # | after its end us | after # | "
        "waits us | runs us | median us | lost |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for i, r in enumerate(rows):
        lines.append(f"| {i} | {r['start_us']:.0f} | {r['plan_us']:.0f} | {r['before']} | "
                     f"{r['before_end_us']:+.0f} | {r['after']} | {r['after_wait_us']:.0f} | "
                     f"{r['after_us']:.0f} | {r['after_median_us']:.0f} | "
                     f"{'lost' if r['lost'] else ''} |")
    names = dict.fromkeys((r["after"], r["name"][:70]) for r in rows)
    lines += ["", "Training kernels named above: " + "; ".join(
        f"#{j} `{n}`" for j, n in names) + ".", ""]
    return "\n".join(lines)


def captured_by(trace: Path) -> str | None:
    """The command kernel_timeline.py's timeline.md beside the trace names, if any."""
    timeline = trace.parent / "timeline.md"
    if not timeline.is_file():
        return None
    text = timeline.read_text()
    start = text.find("`python ")
    return None if start < 0 else text[start + 1:text.index("`", start + 1)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--steps", type=int, default=40, help="last timed steps read")
    ap.add_argument("-o", "--out", type=Path)
    args = ap.parse_args(argv)
    if args.steps < 1:
        ap.error(f"--steps {args.steps}: an integer >= 1")
    if not stored_path(args.trace).is_file():
        ap.error(f"trace {args.trace}: no such file (a <strategy>.trace.json(.xz) that "
                 "bench/kernel_timeline.py wrote)")
    shown = str(args.trace.resolve().relative_to(ROOT)) \
        if args.trace.resolve().is_relative_to(ROOT) else str(args.trace)
    text = render(races(kernels(args.trace), args.steps), shown, captured_by(args.trace))
    write_or_print(text, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
