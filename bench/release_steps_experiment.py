"""Offline: the plans `corun tune` measured on graphed heavy-lean b16384 (runs 1-4 under
bench/results/raw/tune_heavy_lean_graphs_run<N>/), predicted three ways against what each
run measured (rank correlation, the predicted best's regret, mean error, cases within 5%):
with the release steps' measured rates (as committed), without them
(`LearnedCostModel.release_rates` answering None), and with them at the release stage only,
the learned carried rates after it (`sim.scenario._effects`).

    python bench/release_steps_experiment.py

Results: bench/results/tune_launch_steps_h200.md, run 4.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import costmodel.learned as learned  # noqa: E402
import sim.scenario as scenario  # noqa: E402
from bench.render_plans import measured_scenario  # noqa: E402
from sim import simulate_steady  # noqa: E402
from spec.serde import read_stored_text, stored_glob  # noqa: E402

RAW = ROOT / "bench" / "results" / "raw"
SKIP = {"tune", "tuned", "ideal", "gpu-sequential"}
COMMITTED_RATES, COMMITTED_EFFECTS = learned.LearnedCostModel.release_rates, scenario._effects


def plan_runs(run: Path) -> list[tuple[str, dict]]:
    """(strategy, measurement) of each plan a tune run kept a measurement of."""
    out = []
    for f in stored_glob(run, "*.json"):
        name = f.name.removesuffix(".json")
        m = json.loads(read_stored_text(f))
        if name not in SKIP and "iteration" in m:
            out.append((name, m))
    return out


def summary(cases: list[tuple[str, dict]]) -> str:
    names = [n for n, _ in cases]
    measured = [m["iteration"]["median_ms"] for _, m in cases]
    predicted = [simulate_steady(measured_scenario(m, "corun")).prediction.iteration_time_ms
                 for _, m in cases]
    rho = spearmanr(measured, predicted).correlation
    best_p = predicted.index(min(predicted))
    regret = (measured[best_p] / min(measured) - 1) * 100
    errors = [abs(p / m - 1) * 100 for p, m in zip(predicted, measured)]
    return (f"{len(cases)} plans, rank correlation {rho:.2f}, measured best "
            f"{names[measured.index(min(measured))]}, predicted best {names[best_p]} "
            f"(+{regret:.1f}%), mean error {sum(errors) / len(errors):.1f}%, within 5% "
            f"{sum(e <= 5 for e in errors)}")


def release_stage_only(cm, kw, works, hw, priority, release, outlasts):
    """`sim.scenario._effects` as committed at the release stage, the learned carried rates
    (`_rated_effects`) after it."""
    started, _ = COMMITTED_EFFECTS(cm, kw, works, hw, priority, release, outlasts)
    return started, scenario._rated_effects(cm, kw, works, hw, priority, outlasts)[1]


def main() -> int:
    runs = sorted(RAW.glob("tune_heavy_lean_graphs_run*"))
    for variant in ("as committed", "without the release steps", "release stage only"):
        learned.LearnedCostModel.release_rates = COMMITTED_RATES
        scenario._effects = COMMITTED_EFFECTS
        if variant == "without the release steps":
            learned.LearnedCostModel.release_rates = lambda self, *a, **k: None
        elif variant == "release stage only":
            scenario._effects = release_stage_only
        print(f"== {variant}")
        for run in runs:
            print(f"{run.name}: {summary(plan_runs(run))}")
    learned.LearnedCostModel.release_rates, scenario._effects = COMMITTED_RATES, COMMITTED_EFFECTS
    return 0


if __name__ == "__main__":
    sys.exit(main())
