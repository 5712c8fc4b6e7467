"""An experiment, adopted for graphed stages only: what if a training stage kept its pace
beside a co-running kernel, the kernel taking all of the delay the profile measured?
The simulator does this for stages replayed as CUDA graphs (sim/scenario.py `_effect`
says why), so "as is" below has it there; "stage keeps pace" extends it to eager stages,
where it helps RAP's plans and hurts the heavy runs, and is not adopted.

Every executed case below is predicted again, as bench/repredict.py does, once with the
simulator as it is and once with each co-run effect (stage factor s, kernel factor k)
replaced by (1, k x s). Prints, per raw file, the mean absolute iteration-time error and
how many cases lie within 5%: all cases, RAP's plans, corun's plans, and the rest (ideal
left out of the last).

    python bench/stage_pace_experiment.py > bench/results/stage_pace_experiment.txt
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sim.scenario as scenario  # noqa: E402
from bench.repredict import rows  # noqa: E402

RAW = [ROOT / "bench/results/raw" / n for n in (
    "execute_plans_run12.json", "execute_heavy_run2.json", "execute_heavy_stages_run1.json",
    "execute_plans_run15.json", "execute_plans_run16.json", "execute_heavy_run9.json",
    "execute_graphs_run3.json", "execute_graphs_run4.json")]


def summary(errors: list[float]) -> str:
    if not errors:
        return "-"
    return f"{statistics.mean(errors):.2f}% ({sum(e <= 5 for e in errors)} of {len(errors)})"


def main() -> int:
    real = scenario._effect

    def stage_keeps_pace(cm, kw, work, hw, priority):
        s, k = real(cm, kw, work, hw, priority)
        return 1.0, k * s

    for mode, effect in (("as is", real), ("stage keeps pace", stage_keeps_pace)):
        scenario._effect = effect
        for path in RAW:
            rs = rows([path])

            def errs(keep, rs=rs):
                return [abs(r["error_pct"]) for r in rs if keep(r["strategy"])]

            print(f"{mode:16} {path.name:32} all {summary(errs(lambda s: True))}; rap "
                  f"{summary(errs(lambda s: s.startswith('rap')))}; corun "
                  f"{summary(errs(lambda s: s.startswith('corun')))}; other "
                  f"{summary(errs(lambda s: not s.startswith(('rap', 'corun', 'ideal'))))}",
                  flush=True)
    scenario._effect = real
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
