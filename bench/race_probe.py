"""Step by step, whether a training stage is held by a fused kernel released with it:
the co-run profile's row is the median of a few steps (3 for the heavy-rehash lookup
rows), and some pairs are bimodal. Eager heavy-lean b32768 beside heavy-rehash's whole
kernel in 396 blocks at interaction_bwd measured that stage 2.00 ms median in `corun
tune` (10th percentile 0.865, 90th 2.07; rehash_h200.md, run 5), where the profile's
row says 0.862 ms, so the plan was predicted 16% fast.

For each block count and stage, --reps steps release the pipeline's whole kernel (a warp
a row, as the planner launches it) at the stage's opening, in each mode:
  spin      as `corun profile` times a pair: the step enqueued behind a GPU spin, so the
            host is ahead and every kernel of the stage is queued before it starts
  paced     no spin: the GPU runs the step while the host enqueues it
  resident  as `corun profile --resident`: the kernel released LEAD_MS before the stage
Each step's time of every stage, the kernel's time and whether the host was ahead are
kept, so the report counts the held steps (the stage over its time alone by HELD_MS).

On the H200: python bench/race_probe.py --out $OUT [--blocks 198,264,396] [--reps 21]
Locally:     python bench/race_probe.py --dry-run --out /tmp/x   (CPU, tables cut)
Report:      python bench/race_probe.py --render RACE.json [--steps TUNE.json.gz ...] -o MD
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

if "--dry-run" in sys.argv:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

from backend.profile import LEAD_MS, STEP_SPIN_MS, KernelSpec  # noqa: E402
from backend.trainer import TRAINING_STAGES  # noqa: E402
from bench.contention_probe import probe_record, probe_setup  # noqa: E402
from corun.workload import int_list  # noqa: E402
from spec import SpecError, Stage  # noqa: E402
from spec.serde import read_stored_text, write_atomic, write_or_print  # noqa: E402

MODES = {"spin": (0.0, STEP_SPIN_MS), "paced": (0.0, 0.0), "resident": (LEAD_MS, STEP_SPIN_MS)}
"""Mode -> (lead ms, spin ms) of Profiler.step."""
HELD_MS = 0.3
"""A step's stage counts as held where it took this much longer than alone. The pairs in
question take a few distinct times step by step: within ~0.15 ms of alone, or 0.45 ms
and 1.6-2 ms over it (interaction_bwd beside 396 blocks: 0.56, 0.86 and 2.03 ms;
race_h200.md), so a held count says how often the stage lost, not by how much."""
STAGES = "top_mlp_bwd,interaction_bwd,bottom_mlp_bwd"
OUT_NAME = "race.json"


def probe(model: str, pipeline: str, batch: int, blocks: list[int], stages: list[Stage],
          modes: list[str], reps: int, dry_run: bool, say) -> dict:
    """Plain steps in each mode, then every (blocks, mode, stage) for `reps` steps."""
    _, _, p, prof, _, threads = probe_setup(model, pipeline, batch, dry_run, say)
    plain = {}
    for mode in modes:
        steps = [prof.step(None, None, spin_ms=MODES[mode][1]) for _ in range(reps + 2)][2:]
        plain[mode] = [{s.value: ms for s, ms in t.stage_ms.items()} for t in steps]
    cells = []
    for b in blocks:
        group, launch = prof.launcher(KernelSpec(p, (), b, threads, tuple(p.order)))
        launch()  # compile and warm
        alone = prof.kernel_alone_ms(launch, reps)
        say(f"{b} blocks asked, {group.grid()} launched: {alone:.3f} ms alone")
        for mode in modes:
            lead, spin = MODES[mode]
            for stage in stages:
                steps = [prof.step(stage, launch, lead, spin) for _ in range(reps)]
                cells.append({
                    "blocks_asked": b, "blocks": group.grid(), "threads": threads,
                    "mode": mode, "stage": stage.value, "kernel_alone_ms": alone,
                    "stage_ms": [{s.value: ms for s, ms in t.stage_ms.items()} for t in steps],
                    "kernel_ms": [t.kernel_ms for t in steps],
                    "host_ahead": [bool(t.host_ahead) for t in steps]})
    return {"batch": batch, "plain": plain, "cells": cells}


def parse_cells(blocks: str, stages: str, modes: str
                ) -> tuple[list[int], list[Stage], list[str]]:
    """--blocks, --stages and --modes as lists, or a SpecError naming the one at fault."""
    names = [s.value for s in TRAINING_STAGES]  # one GPU's
    wrong = [s for s in stages.split(",") if s not in names]
    if wrong:
        raise SpecError("--stages", stages, f"training stages from {', '.join(names)}")
    wrong = [m for m in modes.split(",") if m not in MODES]
    if wrong:
        raise SpecError("--modes", modes, f"some of {', '.join(MODES)}, comma-separated")
    return int_list(blocks, "--blocks"), [Stage(s) for s in stages.split(",")], \
        modes.split(",")


def held(xs: list[float], alone_ms: float) -> int:
    return sum(x > alone_ms + HELD_MS for x in xs)


def render(doc: dict, steps: list[dict]) -> str:
    """Markdown: each cell's stage times (min, median, max), its held steps, the kernel's
    median; then the executed steps of plans with one kernel (`steps`: corun tune records)."""
    b = doc["batches"][0]
    alone = {mode: {s.value: statistics.median(t[s.value] for t in ts)
                    for s in TRAINING_STAGES} for mode, ts in b["plain"].items()}
    lines = [f"# Held step by step: {doc['model']} beside {doc['pipeline']}'s kernel", "",
             f"Made by `{doc['command']}` at {doc.get('commit') or 'an unknown commit'}: "
             f"{doc['model']} b{b['batch']} beside {doc['pipeline']}'s whole kernel. "
             f"Held: the stage over its median alone by more than {HELD_MS} ms.", "",
             "| mode | blocks (launched) | stage | alone ms | stage ms min / median / max "
             "| held steps | kernel ms median | host ahead |",
             "|---|---:|---|---:|---:|---:|---:|---:|"]
    for c in b["cells"]:
        a = alone[c["mode"]][c["stage"]]
        xs = [t[c["stage"]] for t in c["stage_ms"]]
        lines.append(
            f"| {c['mode']} | {c['blocks_asked']} ({c['blocks']}) | {c['stage']} | {a:.3f} | "
            f"{min(xs):.3f} / {statistics.median(xs):.3f} / {max(xs):.3f} | "
            f"{held(xs, a)} of {len(xs)} | {statistics.median(c['kernel_ms']):.2f} | "
            f"{sum(c['host_ahead'])} of {len(xs)} |")
    if steps:
        lines += ["", "Executed (`corun tune`, 300 steps a round): each plan's kernel and "
                  "the stage it is released at, that stage's 10th percentile, median and "
                  "90th percentile over the steps.", "",
                  "| run | strategy | kernel | stage ms p10 / median / p90 | ideal's median |",
                  "|---|---|---|---:|---:|"]
        for row in steps:
            lines.append(f"| {row['run']} | {row['strategy']} | {row['kernel']} | "
                         f"{row['p10']:.3f} / {row['median']:.3f} / {row['p90']:.3f} | "
                         f"{row['ideal']:.3f} |")
    return "\n".join(lines) + "\n"


def executed_steps(paths: list[Path]) -> list[dict]:
    """Per executed plan with one kernel released at a training stage, that stage's
    spread (the first round's record of each strategy)."""
    from bench.render_execute import measured_cases, run_name

    out = []
    for path in paths:
        cases = measured_cases(path)[0]
        ideal = {r["batch"]: r["measurement"]["stages"] for r in cases
                 if r["strategy"] == "ideal"}
        seen = set()
        for r in cases:
            m = r["measurement"]
            kernels = (m.get("plan") or {}).get("kernels") or []
            if r["strategy"] in seen or len(kernels) != 1 or \
                    kernels[0]["stage"] not in m["stages"]:
                continue
            seen.add(r["strategy"])
            k = kernels[0]
            s = m["stages"][k["stage"]]
            out.append({"run": run_name(path), "strategy": r["strategy"],
                        "kernel": f"{k['blocks']} at {k['stage']}, "
                                  f"{m['plan'].get('batches_ahead', 1)} ahead",
                        "p10": s["p10_ms"], "median": s["median_ms"], "p90": s["p90_ms"],
                        "ideal": ideal.get(r["batch"], {}).get(k["stage"], {}).get(
                            "median_ms", float("nan"))})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="heavy-lean")
    ap.add_argument("--pipeline", default="heavy-rehash")
    ap.add_argument("--batch", type=int, default=32768)
    ap.add_argument("--blocks", default="198,264,396")
    ap.add_argument("--stages", default=STAGES)
    ap.add_argument("--modes", default="spin,paced,resident")
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("--out", help="directory of race.json")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--render", type=Path, help="a race.json to report on")
    ap.add_argument("--steps", type=Path, nargs="*", default=[],
                    help="with --render: corun tune records to put beside it")
    ap.add_argument("-o", type=Path, help="with --render: the Markdown file")
    args = ap.parse_args(argv)
    if args.render:
        text = render(json.loads(read_stored_text(args.render)), executed_steps(args.steps))
        write_or_print(text, args.o)
        return 0
    if not args.out:
        ap.error("--out is required (or --render)")
    try:
        blocks, stages, modes = parse_cells(args.blocks, args.stages, args.modes)
        if args.reps < 1:
            raise SpecError("--reps", args.reps, "an integer >= 1")
        if args.batch < 1:
            raise SpecError("--batch", args.batch, "an integer >= 1")
    except SpecError as e:
        ap.error(str(e))
    if args.dry_run:  # the CPU and the CUDA simulator: a tiny batch, launch and count
        args.batch, blocks, args.reps = 64, [4], 2
    say = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731
    t0 = time.time()
    doc = probe_record("race_probe.py", argv, args, [probe(
        args.model, args.pipeline, args.batch, blocks, stages, modes, args.reps,
        args.dry_run, say)], t0)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / OUT_NAME, json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
