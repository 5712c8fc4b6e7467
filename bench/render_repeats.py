"""Strategies measured in several rounds of one command (bench/execute_gpu.py --repeats R),
against the predictions they were chosen on: per workload and strategy, the median over
the rounds of its mean iteration (its timed span over its iterations, as the throughput
counts it: reports.rounds.record_iteration_ms) and its range, the share of each round's
own ideal, how often the strategy was the round's fastest, gpu-sequential's gap to ideal
and the share of it each strategy recovers (both per round, then the median), and the
predicted mean iteration (bench/render_plans.predicted_ms) with its error against that
median. One run's time moves by several percent with the host's pace on the heavy case;
rounds show by how much.

    python bench/render_repeats.py [RAW.json ...] [--pool] [-o OUT.md]

--pool takes the files as one run's rounds (several calls on one machine, back to back).

By default: bench/results/heavy_rounds_h200.md from the heavy runs of 2026-11-30 (RAW).
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import spec  # noqa: E402
from bench.render_execute import render_main  # noqa: E402
from bench.render_plans import predicted_ms  # noqa: E402
from reports.rounds import SEQUENTIAL, is_ideal, record_iteration_ms, round_stats  # noqa: E402
from spec.serde import read_stored_text  # noqa: E402


def shown(path: Path | str) -> str:
    """A path as the tables name it: from the repository root where it lies inside."""
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def rounds_of(raw: list[Path], pool: bool = False) -> dict[tuple, dict[int, dict[str, dict]]]:
    """{(sources, pipeline, model, batch): {round: {strategy: case}}} of the measured cases
    (a file without rounds is one round): each file its own source, or pooled, all files
    one, and file i's round r is round (i, r)."""
    out: dict[tuple, dict] = {}
    for i, path in enumerate(raw):
        sources = tuple(map(str, raw)) if pool else (str(path),)
        for c in json.loads(read_stored_text(path)):
            if c.get("measurement"):
                key = (sources, c["pipeline"], c["measurement"]["model"], c["batch"])
                out.setdefault(key, {}).setdefault((i, c.get("repeat", 0)), {})[
                    c["strategy"]] = c
    return out


def summarise(rounds: dict[int, dict[str, dict]]) -> list[dict]:
    """One row per strategy of one workload, over the rounds that measured it and ideal
    (reports.rounds.round_stats), with its predicted iteration and the run's command."""
    ms = {r: {s: record_iteration_ms(c["measurement"]) for s, c in cases.items()}
          for r, cases in rounds.items() if "ideal" in cases}
    out = []
    for st in round_stats(ms):
        case = next(cases[st.strategy] for cases in rounds.values() if st.strategy in cases)
        predicted, note = predicted_ms(case)
        out.append({**asdict(st), "note": note, "predicted_ms": predicted,
                    "error_pct": 100 * (predicted - st.median_ms) / st.median_ms,
                    "command": case["measurement"]["command"]})
    return out


def stretch_table(rounds: dict[int, dict[str, dict]]) -> list[str]:
    """Where each strategy's time goes: every training stage's median over rounds less
    ideal's, and its kernels' spans (first launch to last end, ms), in markdown."""
    def med(strategy: str, part: str, name: str) -> float | None:
        v = [c[strategy]["measurement"][part][name]["median_ms"] for c in rounds.values()
             if strategy in c and name in c[strategy]["measurement"][part]]
        return statistics.median(v) if v else None

    names = list(dict.fromkeys(s for cases in rounds.values() for s in cases))
    if "ideal" not in names:
        return []
    first = next(c["ideal"] for c in rounds.values() if "ideal" in c)
    stages = list(first["measurement"]["stages"])
    out = ["| strategy | " + " | ".join(stages) + " | kernels ms |",
           "|---|" + "---:|" * (len(stages) + 1),
           "| ideal (ms) | " + " | ".join(f"{med('ideal', 'stages', x):.3f}" for x in stages)
           + " | - |"]
    for s in names:
        if s == "ideal":
            continue
        cells = []
        for x in stages:
            v, base = med(s, "stages", x), med("ideal", "stages", x)
            cells.append("-" if v is None else f"{v - base:+.3f}")
        kernels = next(c[s]["measurement"]["kernels"] for c in rounds.values() if s in c)
        spans = ", ".join(f"{med(s, 'kernels', k):.2f}" for k in kernels) or "-"
        out.append(f"| {s} | " + " | ".join(cells) + f" | {spans} |")
    return out


def render(raw: list[Path], pool: bool = False, command: str | None = None) -> str:
    """The report; `command` is the one that made it, where not this script's own."""
    command = command or (f"python bench/render_repeats.py {' '.join(map(shown, raw))}"
                          f"{' --pool' if pool else ''}")
    lines = ["# Strategies in rounds on the H200: measured against predicted", "",
             f"Made by `{command}`. "
             "Each round runs every strategy once, in a turned order, and shares and "
             "recoveries are against that round's ideal and gpu-sequential, then the "
             "median over rounds (min-max in brackets). ms/iteration: a round's timed span "
             "over its iterations, as the throughput counts it (every slow step counted, "
             "where a median step counts none). Recovered: the share of "
             "gpu-sequential's gap to ideal a strategy closes. Predicted: the prediction "
             "file of the plan that ran, as committed now under bench/plans/ (the model "
             "of today, not of the run), or simulated here where noted. Below each table: "
             "each training stage's median over rounds less ideal's, in ms, and the "
             "kernels' spans from launch to end (stretched by what runs beside them).", ""]
    for (sources, pipeline, model, batch), rounds in rounds_of(raw, pool).items():
        rows = summarise(rounds)
        if not rows:
            continue
        name = pipeline if model == spec.DEFAULT_MODEL_FOR.get(pipeline) else \
            f"{pipeline} / {model}"
        commands = dict.fromkeys(c["measurement"]["command"] for cases in rounds.values()
                                 for c in cases.values())
        lines += [f"## {name}, batch {batch} ({' + '.join(map(shown, sources))})", "",
                  *(x for c in commands for x in (f"`{c}`", "")),
                  "| strategy | rounds | ms/iteration (min-max) | of ideal (min-max) | "
                  "fastest in rounds | recovered | predicted ms | error |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in rows:
            rec = "-" if r["recovered_pct"] is None or r["strategy"] in ("ideal", SEQUENTIAL) \
                else f"{r['recovered_pct']:.0f}%"
            lines.append(
                f"| {r['strategy']}{r['note']} | {r['rounds']} | {r['median_ms']:.3f} "
                f"({r['min_ms']:.3f}-{r['max_ms']:.3f}) | {r['of_ideal_pct']:.1f}% "
                f"({r['of_ideal_min_pct']:.1f}-{r['of_ideal_max_pct']:.1f}) | "
                f"{'-' if r['wins'] is None else r['wins']} | {rec} | "
                + ("- | - |" if math.isnan(r["predicted_ms"])
                   else f"{r['predicted_ms']:.3f} | {r['error_pct']:+.1f}% |"))
        lines += ["", *stretch_table(rounds)]
        by = {r["strategy"]: r for r in rows}
        best = min((r for r in rows if not is_ideal(r["strategy"])),
                   key=lambda r: r["median_ms"], default=None)
        facts = []
        if SEQUENTIAL in by:
            facts.append(f"gpu-sequential {100 - by[SEQUENTIAL]['of_ideal_pct']:.1f}% below "
                         "ideal (median of rounds)")
        if best is not None:
            facts.append(f"measured best: {best['strategy']}")
        if "corun" in by:
            ranked = sorted((r for r in rows if not is_ideal(r["strategy"])
                             and not math.isnan(r["predicted_ms"])),
                            key=lambda r: r["predicted_ms"])
            tied = [r["strategy"] for r in ranked
                    if r["predicted_ms"] - ranked[0]["predicted_ms"] < 5e-4]
            facts.append("predicted best: " + (tied[0] if len(tied) == 1 else
                                                 " = ".join(tied) + " (tied)"))
        errs = [abs(r["error_pct"]) for r in rows if not math.isnan(r["error_pct"])]
        facts.append(f"{sum(e <= 5 for e in errs)} of {len(errs)} predicted within 5%")
        lines += ["", "; ".join(facts) + ".", ""]
    return "\n".join(lines) + "\n"


RAW = [ROOT / f"bench/results/raw/execute_heavy_{name}_run1.json" for name in (
    "repeats_b8192", "repeats_b16384", "runners_b16384", "priority_b8192", "priority_b16384",
    "early_b8192", "early_b16384", "grid_b8192", "grid_b16384", "launch")]
"""The heavy runs of 2026-11-30 (bash bench/repeats_session.sh; the runners-up's command
is in its table; priority_session.sh, early_session.sh, grid_probe.sh,
launch_session.sh), in the order they make their case."""


def main(argv: list[str] | None = None) -> int:
    return render_main(argv, __doc__, RAW, ROOT / "bench/results/heavy_rounds_h200.md",
                       "a bench/execute_gpu.py --repeats output", render,
                       {"--pool": "take the files as one run's rounds (calls on one machine, "
                                  "back to back)"})


if __name__ == "__main__":
    sys.exit(main())
