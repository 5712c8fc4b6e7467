"""Strategies against their twins of the same round: a strategy's median iteration over
the same strategy's with a suffix ("+core", "+calls") run in the same round and process,
and, from bench/host_breakdown.py's runs, each host call's median time both ways. The
body of bench/render_driver.py and bench/render_calls.py, which say what the twin is.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_execute import measured_cases, render_main  # noqa: E402
from spec.serde import read_stored_text, stored_glob  # noqa: E402

RAW = ROOT / "bench/results/raw"


@dataclass(frozen=True)
class Twins:
    """What a report compares: the default (`name`; `short` in tables) against the
    `suffix` twin."""

    suffix: str
    short: str
    name: str
    title: str
    note: str
    calls: tuple[str, ...]


def pairs(raw: list[Path], twins: Twins) -> list[dict]:
    """Every (run, pipeline, batch, round, strategy) that ran beside its twin."""
    out = []
    for path in raw:
        cases = measured_cases(path)[0]
        ms = {(r["pipeline"], r["batch"], r.get("repeat", 0), r["strategy"]):
              r["measurement"]["iteration"]["median_ms"] for r in cases}
        commit = next((r["measurement"].get("git_commit") for r in cases), None) or "-"
        for (p, b, rnd, s), twin in ms.items():
            base = s.removesuffix(twins.suffix)
            if s.endswith(twins.suffix) and (p, b, rnd, base) in ms:
                out.append({"run": path.name, "commit": commit[:7], "pipeline": p,
                            "batch": b, "round": rnd, "strategy": base,
                            "ms": ms[(p, b, rnd, base)], "twin_ms": twin})
    return out


def breakdown_rows(files: list[Path], twins: Twins) -> list[str]:
    """A table per host_breakdown file: each call's median ms, default / twin."""
    lines = []
    for path in files:
        data = json.loads(read_stored_text(path))
        cases = {r["strategy"]: r["calls"] for r in data["results"]}
        both = [s for s in cases if s + twins.suffix in cases]
        if not both:
            continue
        lines += ["", f"`{data['command']}` ({path.name}): median host ms of one call, "
                  f"{twins.short} / {twins.suffix}, and calls per step", "",
                  "| call | " + " | ".join(both) + " |", "|---|" + "---:|" * len(both)]
        for call in twins.calls:
            cells = []
            for s in both:
                a, b = cases[s].get(call), cases[s + twins.suffix].get(call)
                cells.append("-" if a is None and b is None else
                             f"{_ms(a)} / {_ms(b)} "
                             f"(x{(a or b)['calls_per_step']:g})")
            lines.append(f"| {call} | " + " | ".join(cells) + " |")
    return lines


def _ms(call: dict | None) -> str:
    return "-" if call is None else f"{call['median_ms']:.4f}"


def render(rows: list[dict], runs: list[str], breakdowns: list[Path], twins: Twins,
           script: str) -> str:
    t = twins.suffix
    lines = [f"# {twins.title}", "", f"Made by `python {script}` from {len(runs)} runs "
             f"with \"{t}\" cases and {len(breakdowns)} host breakdowns. Ratio: a "
             f"strategy's median iteration {twins.name} over the same strategy's with "
             f"\"{t}\" in the same round and process (below 1: {twins.short} is faster). "
             + twins.note, ""]
    if rows:
        ratios = [r["ms"] / r["twin_ms"] for r in rows]
        lines.append(f"{len(ratios)} paired rounds: ratio median "
                     f"{statistics.median(ratios):.3f}, range {min(ratios):.3f}-"
                     f"{max(ratios):.3f}; {twins.short} faster in "
                     f"{sum(x < 1 for x in ratios)}, by more than 1% in "
                     f"{sum(x < 0.99 for x in ratios)}; slower by more than 1% in "
                     f"{sum(x > 1.01 for x in ratios)}.")
        lines += ["", "| run | commit | pipeline | batch | round | strategy | "
                  f"{twins.short} ms | {t} ms | ratio |",
                  "|---|---|---|---:|---:|---|---:|---:|---:|"]
        lines += [f"| {r['run']} | {r['commit']} | {r['pipeline']} | {r['batch']} | "
                  f"{r['round']} | {r['strategy']} | {r['ms']:.3f} | {r['twin_ms']:.3f} | "
                  f"{r['ms'] / r['twin_ms']:.3f} |" for r in rows]
    else:
        lines.append(f"No round ran a strategy beside its \"{t}\" twin.")
    return "\n".join(lines + breakdown_rows(breakdowns, twins)) + "\n"


def render_files(files: list[Path], twins: Twins, script: str) -> str:
    """The report over execute files and host breakdowns, told apart by their content;
    files without a twin add nothing."""
    docs = {p: json.loads(read_stored_text(p)) for p in files}
    for p, doc in docs.items():
        if not isinstance(doc, list) and not (isinstance(doc, dict) and "results" in doc):
            raise SystemExit(f"raw = {str(p)!r}: neither a list of cases (bench/"
                             "execute_gpu.py) nor an object with \"results\" "
                             "(bench/host_breakdown.py)")
    breakdowns = [p for p in files if isinstance(docs[p], dict) and any(
        r["strategy"] + twins.suffix in {x["strategy"] for x in docs[p]["results"]}
        for r in docs[p]["results"])]
    rows = pairs([p for p in files if isinstance(docs[p], list)], twins)
    return render(rows, sorted({r["run"] for r in rows}), breakdowns, twins, script)


def twins_main(argv: list[str] | None, doc: str, twins: Twins, out: Path, script: str) -> int:
    """The command line of a twins report: RAW.json ... (by default every execute and
    host breakdown file under bench/results/raw) and -o OUT.md."""
    default = stored_glob(RAW, "execute_*.json") + stored_glob(RAW, "host_breakdown_*.json")
    return render_main(argv, doc, default, out, "bench/execute_gpu.py's or "
                       "bench/host_breakdown.py's raw output",
                       lambda files: render_files(files, twins, script))
