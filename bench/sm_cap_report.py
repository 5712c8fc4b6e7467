"""The preprocessing stream confined to some SMs while training keeps every SM
(RunSettings.preprocess_sm_cap): heavy-rehash's choices on the H200.

Renders the session-57 runs (bench/sm_cap_session.sh, one lent H200) from their records
under bench/results/raw:

    python bench/sm_cap_report.py -o bench/results/sm_cap_h200.md

Run 20: eager b32768's choice in two rounds (the second in the reverse order), beside
ideal and gpu-sequential, on every SM with its batch graphs (the default) and without,
and confined to 64, 96 and 112 SMs; then graphed b16384's choice once, behind the kernels
and with its assemblies on their own stream, and confined to 64 and 96 SMs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.assembly_stream_report import execute_rows, records  # noqa: E402
from reports.rounds import record_iteration_ms  # noqa: E402
from spec.serde import write_or_print  # noqa: E402

RAW = Path(__file__).resolve().parent / "results" / "raw"
EAGER = RAW / "sm_cap_run20"
GRAPHED = RAW / "sm_cap_graphed_run20"
PLANS = Path(__file__).resolve().parent / "plans" / "rehash"
STAGES = ("emb_fwd", "top_mlp_bwd", "interaction_bwd", "bottom_mlp_bwd", "emb_bwd")
"""The stages shown: interaction_bwd is where the plan's kernel is released eagerly and
held the next GEMM (run 19); emb_bwd, where the capped runs beat ideal itself."""
WAYS = ("corun", "corun+calls", "corun+own", "corun+cap64", "corun+cap96", "corun+cap112")


def recovery_rows(docs: dict[str, dict], rounds: list[str], predicted: dict[str, float]
                  ) -> list[str]:
    """Per way of running the choice, each round's mean iteration and the share of that
    round's gpu-sequential gap to ideal it recovered, the median over rounds, and the
    prediction of the plan (its folder's prediction-corun.json, which knows no cap) with
    its error against that median."""
    out = ["| strategy | " + " | ".join(f"round {r.strip('-r') or r}: ms/iteration "
                                        "(recovered)" for r in rounds)
           + " | median ms/iteration | predicted ms/iteration | error |",
           "|---|" + "---:|" * (len(rounds) + 3)]
    for way in ("ideal", "gpu-sequential", *WAYS):
        cells, ms_all = [], []
        for r in rounds:
            doc = docs.get(f"{way}{r}")
            if doc is None:
                cells.append("-")
                continue
            ms = record_iteration_ms(doc)
            ideal, seq = (record_iteration_ms(docs[f"{s}{r}"])
                          for s in ("ideal", "gpu-sequential"))
            ms_all.append(ms)
            cells.append(f"{ms:.3f}" + ("" if way in ("ideal", "gpu-sequential") else
                                        f" ({100 * (seq - ms) / (seq - ideal):.0f}%)"))
        if not ms_all:
            continue
        mid = statistics.median(ms_all)
        p = predicted.get(way.split("+")[0] if way.startswith("corun") else way)
        out.append(f"| {way} | " + " | ".join(cells) + f" | {mid:.3f} | "
                   + ("-" if p is None else f"{p:.3f} | {100 * (p - mid) / mid:+.1f}%")
                   + (" |" if p is not None else " | - |"))
    return out


def predictions(folder: str) -> dict[str, float]:
    """The folder's predicted mean iterations of ideal, gpu-sequential and corun."""
    return {s: record_iteration_ms(json.loads((PLANS / folder / f"prediction-{s}.json")
                                              .read_text()))
            for s in ("ideal", "gpu-sequential", "corun")}


def render() -> str:
    eager, graphed = records(EAGER), records(GRAPHED)
    e_rows = [(f"{w}-r{r}", f"ideal-r{r}") for r in (1, 2)
              for w in ("ideal", "gpu-sequential", *WAYS) if f"{w}-r{r}" in eager]
    g_rows = [(f"{w}-r1", "ideal-r1") for w in ("ideal", "gpu-sequential", *WAYS)
              if f"{w}-r1" in graphed]
    lines = [
        "# The preprocessing stream confined to some SMs, training on every SM (H200)", "",
        "Made by `python bench/sm_cap_report.py -o bench/results/sm_cap_h200.md` from the "
        "records of run 20 (session 57, one lent H200). `corun execute "
        "--preprocess-sm-cap N` (RunSettings.preprocess_sm_cap) puts the preprocessing "
        "stream, with the batches' assemblies, in a CUDA green context of N SMs "
        "(backend/sm_split.py; the driver rounds up to 8) and leaves the training stream "
        "an ordinary one, free to use every SM; a green context's stream cannot replay the "
        "batch graphs, so its batches are issued call by call (`+calls` is the choice so "
        "on every SM). Recovered: the share of the same round's gpu-sequential gap to "
        "ideal; every time is a mean iteration, as the throughput counts it.", "",
        "## Eager heavy-rehash b32768's choice (two rounds)", "",
        "`PART=eager bash bench/sm_cap_session.sh` at 1a23d900 (round 1: ideal, "
        "gpu-sequential, the choice, +calls, +cap64, +cap96, +cap112), then `PART=eager "
        "WAYS=graphs CAPS=\"64 96 112\" REVERSE=1 SUFFIX=-r2` at 486403dc (round 2, the "
        "reverse order); bench/plans/rehash/heavy-lean-b32768 (the whole pipeline in 198 "
        "blocks at interaction_bwd, two batches ahead), 300 timed iterations after 20.", "",
        *recovery_rows(eager, ["-r1", "-r2"], predictions("heavy-lean-b32768")), "",
        "Each run, against its round's ideal (stages: median less ideal's, ms; slow "
        "steps: over 1.2x ideal's median step):", "",
        *execute_rows(eager, e_rows, STAGES), "",
        "## Graphed heavy-rehash b16384's choice (one round)", "",
        "`PART=eager PLAN_FILE=bench/plans/rehash/heavy-lean-b16384-graphs/plan.json "
        "BATCH=16384 STEP_FLAGS=--cuda-graphs WAYS=\"graphs own\" CAPS=\"64 96\" SUFFIX=-g "
        "bash bench/sm_cap_session.sh` at 60334ff2 (its records renamed -r1 here): the "
        "choice (132 blocks at bottom_mlp_fwd, two ahead) behind the kernels (its plan's "
        "default), with its assemblies on their own stream (what `corun tune` kept in run "
        "18), and confined to 64 and 96 SMs (its assemblies then behind the kernels, on "
        "those SMs).", "",
        *recovery_rows(graphed, ["-r1"], predictions("heavy-lean-b16384-graphs")), "",
        "Each run (stages: median less ideal's, ms):", "",
        *execute_rows(graphed, g_rows, STAGES),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", help="write the report here (default: print it)")
    args = ap.parse_args(argv)
    write_or_print(render(), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
