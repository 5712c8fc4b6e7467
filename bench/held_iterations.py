"""How often a plan's step lost most of gpu-sequential's gap: per executed case, the share
of its timed iterations slower than halfway from ideal's median to gpu-sequential's
(both from the same command and batch). A kernel that co-runs well shows few such
iterations; one that holds the stage it is released at shows many (the training stream
waits for it, so the iteration is about as slow as running it first), and one slowed
beside a long stage (emb_bwd) about half. On graphed heavy-lean two batches ahead at
interaction_bwd, 396 blocks did so in 2-55% of the iterations of a case at b16384
(median 6%, 27 cases) and 86-94% at b8192; 198 and 264 blocks in 1-16% at b16384 and
9-22% (198) at b8192; 528 blocks in 99% (bench/results/heavy_batches_h200.md). Runs
made since 2026-12-02 also keep each kernel's span beside each iteration
(Measurement.per_iteration, `span_<kernel>`), which says it directly: a held step's kernel
spans about its time alone.

    python bench/held_iterations.py [RAW.json[.gz] ...] [--model heavy-lean]

Default: every raw run under bench/results/raw/. Prints, per (batch, what ran: the step
graphed or eager, each kernel's release stage and blocks, and how many batches ahead),
the median share over its cases, their min-max and how many cases there were.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_execute import graphed  # noqa: E402
from bench.repredict import every_raw  # noqa: E402
from spec.serde import read_stored_text  # noqa: E402

SEQUENTIAL = "gpu-sequential"


def what_ran(case: dict) -> str:
    """A case's plan in a few words: the step graphed or eager, each kernel's release
    stage / blocks, batches ahead; a baseline by its name."""
    step = "graphed" if graphed(case["measurement"]) else "eager"
    plan = case["measurement"].get("plan") or {}
    kernels = plan.get("kernels") or []
    if case["strategy"].split("+")[0] in ("ideal", SEQUENTIAL) or not kernels:
        return f"{step}: {case['strategy']}"
    shapes = ", ".join(f"{k.get('stage') or 'before'}/{k['blocks']}" for k in kernels)
    return f"{step}: {shapes}, {plan.get('batches_ahead', 1)} ahead"


def held_shares(path: Path, model: str) -> dict[tuple[int, str], list[float]]:
    """Each case's share of held iterations in one raw run, by (batch, what ran)."""
    cases = [r for r in json.loads(read_stored_text(path)) if r.get("measurement")
             and r["measurement"]["model"] == model]
    out: dict[tuple[int, str], list[float]] = {}
    for batch in sorted({r["batch"] for r in cases}):
        mine = [r for r in cases if r["batch"] == batch]
        base = {s: statistics.median(r["measurement"]["iteration"]["median_ms"]
                                     for r in mine if r["strategy"] == s)
                for s in ("ideal", SEQUENTIAL) if any(r["strategy"] == s for r in mine)}
        if len(base) < 2 or base[SEQUENTIAL] <= base["ideal"]:
            continue
        cut = (base["ideal"] + base[SEQUENTIAL]) / 2
        for r in mine:
            its = r["measurement"]["per_iteration"]["iteration"]
            share = sum(x > cut for x in its) / len(its)
            out.setdefault((batch, what_ran(r)), []).append(share)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", nargs="*", type=Path)
    ap.add_argument("--model", default="heavy-lean")
    args = ap.parse_args(argv)
    found: dict[tuple[int, str], list[float]] = {}
    for path in args.raw or every_raw():
        for key, shares in held_shares(path, args.model).items():
            found.setdefault(key, []).extend(shares)
    if not found:
        print(f"no case of model {args.model} with ideal and {SEQUENTIAL} beside it")
        return 1
    print(f"{'batch':>6}  {'what ran':60s}  held (median, min-max, cases)")
    for (batch, what), shares in sorted(found.items()):
        print(f"{batch:6d}  {what:60s}  {statistics.median(shares):5.0%} "
              f"({min(shares):.0%}-{max(shares):.0%}, {len(shares)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
