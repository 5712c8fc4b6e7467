"""One batch ahead against two, measured side by side: every executed command that ran
the same plan at both leads (Plan.batches_ahead 1 and 2, nothing else different), each
pair's measured and predicted iteration times (the prediction as `corun plan` simulates
today), to say how far the simulator's choice between the two leads can be trusted.
Also the tuning runs (`corun tune`'s rounds under bench/results/raw/tune_*/).

    python bench/ahead_pairs.py [-o bench/results/ahead_pairs.md]

A pair is one command's two cases (execute_gpu.py: the median over its rounds of each
case's median iteration; corun tune: the median rounds it kept). Positive "two ahead
faster" means the two-ahead plan measured (or was predicted) faster.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_execute import graphed, measured_cases, measured_scenario  # noqa: E402
from bench.repredict import every_raw  # noqa: E402
from spec.measurement import notes_say_timed_checked  # noqa: E402
from spec.serde import read_stored_text, stored_glob, stored_name, write_atomic  # noqa: E402

RAW_DIR = ROOT / "bench/results/raw"


def _plan(m: dict):
    """The plan a Measurement ran; None for a baseline, or for a plan with fields today's
    Plan no longer has (session 36's dynamic kernels)."""
    import spec
    from spec.serde import from_jsonable

    try:
        return from_jsonable(spec.Plan, m["plan"], "plan") if m.get("plan") else None
    except spec.SpecError:
        return None


PLAN_SUFFIXES = re.compile(r"ahead2|high|low|warp|thread|b\d+")
"""execute_gpu.py's strategy suffixes the plan itself records (Plan.batches_ahead,
training_priority_high, FusedKernel.warp_rows and blocks); the others change how it ran."""


HOST_WORKERS = re.compile(r"w\d+")
"""execute_gpu.py's "+w<N>": the plan's host part on N worker processes."""


def run_suffixes(strategy: str) -> tuple[str, ...]:
    """A strategy's suffixes that change how its plan ran (a pair must share them)."""
    return tuple(sorted(x for x in strategy.split("+")[1:] if not PLAN_SUFFIXES.fullmatch(x)))


def _pairs_of(cases: list[tuple[str, dict]], source: str) -> list[dict]:
    """Pairs among one command's (strategy, measurement) cases: the same plan, workload,
    trainer and run settings at lead 1 and at lead 2; each strategy's median over its
    rounds. Cases run on host workers ("+w<N>") are left out: the prediction here
    simulates the plan alone."""
    by_key: dict[tuple, list[dict]] = {}
    plans = {}
    for strategy, m in cases:
        suffixes = run_suffixes(strategy)
        plan = _plan(m)
        if plan is None or not plan.kernels or any(HOST_WORKERS.fullmatch(x) for x in suffixes):
            continue
        workload = (m["model"], m["pipeline"], m["batch_per_gpu"], graphed(m),
                    notes_say_timed_checked(m.get("notes", ())), suffixes)
        by_key.setdefault((workload, strategy), []).append(m)
        plans[workload, strategy] = plan
    medians = {}
    for key, ms in by_key.items():
        times = sorted(m["iteration"]["median_ms"] for m in ms)
        lower_middle = times[(len(times) - 1) // 2]
        middle = next(m for m in ms if m["iteration"]["median_ms"] == lower_middle)
        medians[key] = (statistics.median(times), middle, len(times))
    out = []
    for (workload, s1), (t1, m1, n1) in medians.items():
        if plans[workload, s1].batches_ahead != 1:
            continue
        twin = replace(plans[workload, s1], batches_ahead=2)
        for (w2, s2), (t2, m2, n2) in medians.items():
            if w2 == workload and plans[w2, s2] == twin:
                out.append({"source": source, "model": m1["model"], "pipeline": m1["pipeline"],
                            "batch": m1["batch_per_gpu"], "one_ahead": s1, "two_ahead": s2,
                            "rounds": min(n1, n2), "m1": m1, "m2": m2,
                            "measured_ms": (t1, t2)})
    return out


def every_pair() -> list[dict]:
    pairs = []
    for path in every_raw():
        cases, _ = measured_cases(path)
        pairs += _pairs_of([(r["strategy"], r["measurement"]) for r in cases],
                           stored_name(path))
    for folder in sorted(p for p in RAW_DIR.glob("tune_*") if p.is_dir()):
        cases = []
        for f in stored_glob(folder, "*.json"):
            if f.name in ("tune.json", "tuned.json"):
                continue
            m = json.loads(read_stored_text(f))
            if isinstance(m, dict) and "iteration" in m:
                cases.append((f.stem, m))
        pairs += _pairs_of(cases, folder.name)
    return pairs


def predict(pairs: list[dict]) -> None:
    from sim import simulate_steady

    for p in pairs:
        p["predicted_ms"] = tuple(
            simulate_steady(measured_scenario(m, "plan")).prediction.iteration_time_ms
            for m in (p["m1"], p["m2"]))


def render(pairs: list[dict], command: str) -> str:
    lines = ["# One batch ahead against two, side by side", "",
             f"Made by `{command}` (`bench/ahead_pairs.py` says how pairs are found). "
             "\"Two ahead faster\": one ahead's iteration over two ahead's, less 1, in %.", "",
             "| run | workload | batch | one ahead | two ahead | rounds | measured ms (1 / 2) "
             "| two ahead faster, measured | predicted |",
             "|---|---|---|---|---|---:|---|---:|---:|"]
    for p in sorted(pairs, key=lambda p: (p["model"], p["batch"], p["source"])):
        (a, b), (pa, pb) = p["measured_ms"], p["predicted_ms"]
        lines.append(f"| {p['source']} | {p['model']} / {p['pipeline']} | {p['batch']} | "
                     f"{p['one_ahead']} | {p['two_ahead']} | {p['rounds']} | "
                     f"{a:.3f} / {b:.3f} | {100 * (a / b - 1):+.1f}% | "
                     f"{100 * (pa / pb - 1):+.1f}% |")
    meas = [p["measured_ms"][0] / p["measured_ms"][1] - 1 for p in pairs]
    pred = [p["predicted_ms"][0] / p["predicted_ms"][1] - 1 for p in pairs]
    wrong = [(m, q) for m, q in zip(meas, pred) if (m > 0) != (q > 0)]
    lines += ["", f"{len(pairs)} pairs: two ahead measured faster in "
              f"{sum(m > 0 for m in meas)}, predicted faster in {sum(q > 0 for q in pred)}; "
              f"the sign wrong in {len(wrong)}. Where one ahead was predicted faster by "
              "less than 1.5%: two ahead measured faster in "
              f"{sum(m > 0 for m, q in zip(meas, pred) if -0.015 < q <= 0)} of "
              f"{sum(-0.015 < q <= 0 for q in pred)}; by 1.5% or more: in "
              f"{sum(m > 0 for m, q in zip(meas, pred) if q <= -0.015)} of "
              f"{sum(q <= -0.015 for q in pred)}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", dest="out", type=Path, help="write the report here too")
    args = ap.parse_args(argv)
    pairs = every_pair()
    predict(pairs)
    command = " ".join(["python bench/ahead_pairs.py", *(argv if argv is not None
                                                         else sys.argv[1:])])
    text = render(pairs, command)
    if args.out:
        write_atomic(args.out, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
