"""Every case of executed runs predicted again by today's model, as `corun plan` simulates
a candidate (learned H200 model, host thread): the plan each case ran, not the one now in
bench/plans/. What a change to the cost model or the simulator does to the predictions
of measurements already made. Writes bench/results/repredict_h200.md from its default
runs; named runs or --all print, or go to -o OUT.md.

    python bench/repredict.py [RAW.json ...] [-o OUT.md]
    python bench/repredict.py --all [--rows-json ROWS.json] [--against OLD.json] -o OUT.md

--all takes every raw run under bench/results/raw/ and names those today's code can no
longer simulate (plans of pipelines since changed). --rows-json keeps the rows; --against
puts each run's error beside the rows another commit's code wrote for the same runs (run
this script there: `git worktree add /tmp/old COMMIT`, copy it in, `--rows-json`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_execute import (  # noqa: E402
    measured_cases,
    measured_scenario,
    publish,
    require_raw,
    run_name,
)
from bench.render_plans import unpredicted  # noqa: E402
from reports.rounds import record_iteration_ms  # noqa: E402
from spec.serde import (  # noqa: E402
    read_stored_text,
    stored_glob,
    stored_name,
    stored_path,
    write_atomic,
)

RAW_DIR = ROOT / "bench/results/raw"
RAW = [RAW_DIR / name for name in (
    "execute_plans_run12.json", "execute_heavy_run2.json", "execute_heavy_stages_run1.json")]
"""The 76 cases executed before the cost model took overlap rates and measured pairs."""
OUT = ROOT / "bench/results/repredict_h200.md"
CHANGED = 0.01
"""Points of error by which a case must move for --against to list its run."""


def every_raw() -> list[Path]:
    """Every executed run's raw file (bench/execute_gpu.py's output) and every `corun
    tune` run's summary, by name."""
    return stored_glob(RAW_DIR, "execute_*.json") + stored_glob(RAW_DIR, "tune_*/tune.json")


def rows(raw: list[Path], skipped: dict[str, str] | None = None) -> list[dict]:
    """One row per measured case the model predicts (not the variants it knows no way to:
    render_plans.unpredicted): its mean iteration measured and predicted, as the
    throughputs count them (since session 57; the median steps before). With `skipped`,
    a run today's code cannot simulate is named there with why, instead of stopping."""
    from sim import simulate_steady

    out = []
    for path in raw:
        try:
            mine = []
            for r in measured_cases(path)[0]:
                if unpredicted(r["strategy"]) is not None:
                    continue
                m = r["measurement"]
                sc = measured_scenario(m, r["strategy"])
                p = simulate_steady(sc).prediction.mean_iteration_ms
                ms = record_iteration_ms(m)
                mine.append({"source": run_name(path), "model": m["model"],
                             "batch": r["batch"], "strategy": r["strategy"],
                             "measured_ms": ms, "median_step_ms": m["iteration"]["median_ms"],
                             "predicted_ms": p, "error_pct": 100 * (p - ms) / ms})
        except Exception as e:  # noqa: BLE001 - any failure names the run
            if skipped is None:
                raise
            skipped[run_name(path)] = f"{type(e).__name__}: {str(e)[:120]}"
            continue
        out += mine
    return out


def summary(errs: list[float]) -> str:
    return (f"mean {statistics.mean(errs):.2f}%, median {statistics.median(errs):.2f}%, "
            f"{sum(e <= 5 for e in errs)} of {len(errs)} within 5%")


def ranking(rs: list[dict]) -> dict[tuple, tuple[bool, float, str, str]]:
    """Per command (run, model, batch) with two or more strategies besides ideal: whether
    the one predicted fastest (median over its rounds) was the measured fastest, its
    regret in %, and the two strategies' names."""
    by: dict[tuple, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for r in rs:
        if r["strategy"] != "ideal":
            by[r["source"], r["model"], r["batch"]][r["strategy"]].append(
                (r["measured_ms"], r["predicted_ms"]))
    out = {}
    for key, strategies in by.items():
        if len(strategies) < 2:
            continue
        med = {s: (statistics.median(m for m, _ in v), statistics.median(p for _, p in v))
               for s, v in strategies.items()}
        best_p = min(med, key=lambda s: med[s][1])
        best_m = min(med, key=lambda s: med[s][0])
        out[key] = (best_p == best_m, 100 * (med[best_p][0] / med[best_m][0] - 1),
                    best_p, best_m)
    return out


def compare_ways(ways: dict[str, list[dict]], column: str, then: str,
                 moved_columns: tuple[str, str]) -> list[str]:
    """Markdown: the same cases predicted two ways (`rows` under each), by model the
    errors and the commands ranked right (the ways' names under `column`), then the
    commands whose predicted best moved between the first way and the second (`then`
    says which is which in the caption, `moved_columns` heads their columns)."""
    ranks = {name: ranking(rs) for name, rs in ways.items()}
    lines = [f"| model | {column} | iteration-time error | commands ranked right | "
             "mean regret |", "|---|---|---|---:|---:|"]
    models = sorted({r["model"] for rs in ways.values() for r in rs})
    for model in [None, *models]:
        for name, rs in ways.items():
            mine = [r for r in rs if model is None or r["model"] == model]
            rk = [v for k, v in ranks[name].items() if model is None or k[1] == model]
            if not mine:
                continue
            regret = f"{statistics.mean(v[1] for v in rk):.2f}%" if rk else "-"
            lines.append(f"| {model or 'all'} | {name} | "
                         f"{summary([abs(r['error_pct']) for r in mine])} | "
                         f"{sum(v[0] for v in rk)} of {len(rk)} | {regret} |")
    a, b = (ranks[n] for n in ways)
    moved = sorted(k for k in a if a[k][:2] != b.get(k, a[k])[:2])
    lines += ["", f"Commands whose predicted best moved ({len(moved)}): predicted best "
              f"(regret){then}; the measured best.", "",
              f"| run | model | batch | {moved_columns[0]} | {moved_columns[1]} | "
              "measured best |",
              "|---|---|---:|---|---|---|"]
    lines += [f"| {k[0]} | {k[1]} | {k[2]} | {a[k][2]} ({a[k][1]:.1f}%) | "
              f"{b[k][2]} ({b[k][1]:.1f}%) | {a[k][3]} |" for k in moved]
    return lines


def _median_step(r: dict) -> float:
    """A row's measured median step, which tells repeated cases of a run apart: rows
    written before session 57 hold it as their measured_ms."""
    return round(r.get("median_step_ms", r["measured_ms"]), 6)


def against_table(rs: list[dict], old: list[dict]) -> list[str]:
    """Per run: the error of the rows `old` holds for the same cases, then today's."""
    key = [(r["source"], r["strategy"], r["batch"], _median_step(r)) for r in rs]
    before: dict[tuple, list[dict]] = {}
    for r in old:
        k = (stored_name(r["source"]), r["strategy"], r["batch"], _median_step(r))
        before.setdefault(k, []).append(r)
    pairs = [(b.pop(0), r) for k, r in zip(key, rs) if (b := before.get(k))]
    by_run: dict[str, list[tuple[float, float]]] = {}
    for b, r in pairs:
        by_run.setdefault(r["source"], []).append((abs(b["error_pct"]), abs(r["error_pct"])))
    lines = ["| run | cases | earlier: mean error (within 5%) | today | change |",
             "|---|---:|---:|---:|---:|"]
    same = [run for run, v in by_run.items() if all(abs(x - y) < CHANGED for x, y in v)]
    for run, v in by_run.items():
        if run in same:
            continue
        a, b = [x for x, _ in v], [y for _, y in v]
        lines.append(f"| {run} | {len(v)} | {statistics.mean(a):.2f}% ({sum(e <= 5 for e in a)}) "
                     f"| {statistics.mean(b):.2f}% ({sum(e <= 5 for e in b)}) | "
                     f"{statistics.mean(b) - statistics.mean(a):+.2f} |")
    a = [x for v in by_run.values() for x, _ in v]
    b = [y for v in by_run.values() for _, y in v]
    return [f"Against the earlier rows ({len(pairs)} cases in both): earlier {summary(a)}; "
            f"today {summary(b)}. The runs where a case moved by {CHANGED} points or more "
            f"({len(by_run) - len(same)} of {len(by_run)}):", ""] + lines + [""]


def render(rs: list[dict], raw: list[Path], command: str, skipped: dict[str, str],
           old: list[dict] | None = None) -> str:
    from sim.simulate import git_commit

    errs = [abs(r["error_pct"]) for r in rs]
    lines = ["# Executed cases, predicted again by today's model", "",
             f"Made by `{command}` at commit {git_commit()}.", "",
             f"Iteration-time error: {summary(errs)}. Each case's mean iteration, measured "
             "and predicted, as the throughputs count them (every slow step counted; "
             "before session 57 the median steps were compared).", ""]
    by_model: dict[str, list[float]] = {}
    for r in rs:
        by_model.setdefault(r["model"], []).append(abs(r["error_pct"]))
    lines += ["By model:", ""] + [f"- {m}: {summary(e)}" for m, e in sorted(
        by_model.items(), key=lambda me: -len(me[1]))] + [""]
    if skipped:
        lines += [f"Not simulated today ({len(skipped)} runs):", ""]
        lines += [f"- {name}: {why}" for name, why in skipped.items()] + [""]
    if old is not None:
        lines += against_table(rs, old)
    lines += ["| run | model | batch | strategy | measured ms/iteration | median step ms | "
              "predicted ms/iteration | error |",
              "|---|---|---:|---|---:|---:|---:|---:|"]
    lines += [f"| {r['source']} | {r['model']} | {r['batch']} | {r['strategy']} | "
              f"{r['measured_ms']:.3f} | {_median_step(r):.3f} | {r['predicted_ms']:.3f} | "
              f"{r['error_pct']:+.1f}% |" for r in rs]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("raw", nargs="*", type=Path,
                    help="default: " + ", ".join(p.name for p in RAW))
    ap.add_argument("--all", action="store_true", help="every raw run under bench/results/raw")
    ap.add_argument("-o", "--out", type=Path,
                    help=f"default: {OUT.name} with the default runs, else print only")
    ap.add_argument("--rows-json", type=Path, help="also write the rows here")
    ap.add_argument("--against", type=Path, help="rows another commit wrote (--rows-json)")
    args = ap.parse_args(argv)
    if args.all and args.raw:
        ap.error("raw: give run files or --all, not both")
    require_raw(ap, args.raw)
    if args.against is not None and not stored_path(args.against).is_file():
        ap.error(f"--against = {str(args.against)!r}: a rows file --rows-json wrote")
    raw = every_raw() if args.all else (args.raw or RAW)
    from bench.vocab_probe import registered

    skipped: dict[str, str] = {}
    with registered():  # its runs' pipelines (heavy-small-vocab, heavy-vocab): no presets
        rs = rows(raw, skipped if args.all else None)
    old = json.loads(read_stored_text(args.against)) if args.against else None
    command = " ".join(["python bench/repredict.py", *(argv if argv is not None
                                                        else sys.argv[1:])])
    if args.rows_json:
        write_atomic(args.rows_json, json.dumps(rs, indent=0))
    text = render(rs, raw, command, skipped, old)
    publish(text, args.out, bool(args.raw) or args.all, OUT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
