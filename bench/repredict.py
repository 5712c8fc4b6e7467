"""Every case of executed runs predicted again by today's model, as `corun plan` simulates
a candidate (learned H200 model, host thread): the plan each case ran, not the one now in
bench/plans/. What a change to the cost model or the simulator does to the predictions
of measurements already made. Writes bench/results/repredict_h200.md.

    python bench/repredict.py [RAW.json ...] [-o OUT.md]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_execute import measured_cases, measured_scenario, render_main  # noqa: E402

RAW = [ROOT / "bench/results/raw" / name for name in (
    "execute_plans_run12.json", "execute_heavy_run2.json", "execute_heavy_stages_run1.json")]
"""The 76 cases executed before the cost model took overlap rates and measured pairs."""
OUT = ROOT / "bench/results/repredict_h200.md"


def rows(raw: list[Path]) -> list[dict]:
    from sim import simulate

    out = []
    for path in raw:
        for r in measured_cases(path)[0]:
            m = r["measurement"]
            p = simulate(measured_scenario(m, r["strategy"])).prediction.iteration_time_ms
            ms = m["iteration"]["median_ms"]
            out.append({"source": path.name, "model": m["model"], "batch": r["batch"],
                        "strategy": r["strategy"], "measured_ms": ms, "predicted_ms": p,
                        "error_pct": 100 * (p - ms) / ms})
    return out


def render(rs: list[dict], raw: list[Path]) -> str:
    from sim.simulate import git_commit

    errs = [abs(r["error_pct"]) for r in rs]
    lines = ["# Executed cases, predicted again by today's model", "",
             f"Made by `python bench/repredict.py {' '.join(p.name for p in raw)}` at "
             f"commit {git_commit()}.", "",
             f"Iteration-time error: mean {statistics.mean(errs):.2f}%, median "
             f"{statistics.median(errs):.2f}%, {sum(e <= 5 for e in errs)} of {len(errs)} "
             "within 5%.", "",
             "| run | model | batch | strategy | measured ms | predicted ms | error |",
             "|---|---|---:|---|---:|---:|---:|"]
    lines += [f"| {r['source']} | {r['model']} | {r['batch']} | {r['strategy']} | "
              f"{r['measured_ms']:.3f} | {r['predicted_ms']:.3f} | {r['error_pct']:+.1f}% |"
              for r in rs]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    return render_main(argv, __doc__, RAW, OUT, "an existing execute_*.json of "
                       "bench/execute_gpu.py", lambda raw: render(rows(raw), raw))


if __name__ == "__main__":
    raise SystemExit(main())
