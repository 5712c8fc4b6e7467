"""An experiment, adopted for graphed stages only: what if a training stage kept its pace
beside a co-running kernel, the kernel taking all of the delay the profile measured?
The simulator does this for stages replayed as CUDA graphs (sim/scenario.py `_effect`
says why), so "as is" below has it there; "stage keeps pace" extends it to eager stages,
where it helps RAP's plans and hurts the heavy runs, and is not adopted; "profiled rates"
is the simulator before the rule, every stage as the profile's rates have it.

Every executed case below is predicted again, as bench/repredict.py does, in each mode
(a co-run effect with stage factor s and kernel factor k becomes (1, k x s) where the
stage keeps its pace). Prints, per raw file, the mean absolute iteration-time error and
how many cases lie within 5%: all cases, RAP's plans, corun's plans, and the rest (ideal
left out of the last). Last, what the rule rests on: per run, how much RAP's kernels
stretched the optimizer stage they are released at, measured (RAP's median optimizer
stage less ideal's in the same command).

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
    "execute_graphs_run3.json", "execute_graphs_run4.json", "execute_graphs_run7.json")]


def summary(errors: list[float]) -> str:
    if not errors:
        return "-"
    return f"{statistics.mean(errors):.2f}% ({sum(e <= 5 for e in errors)} of {len(errors)})"


def optimizer_stretch(path: Path) -> list[float]:
    """Per RAP case of a raw file, its optimizer stage less ideal's (ms), same command."""
    from bench.render_execute import measured_cases

    ideal, out = {}, []
    for r in measured_cases(path)[0]:
        opt = r["measurement"]["stages"]["optimizer"]["median_ms"]
        if r["strategy"] == "ideal":
            ideal[(r["pipeline"], r["batch"])] = opt
        elif r["strategy"] == "rap" and (r["pipeline"], r["batch"]) in ideal:
            out.append(opt - ideal[(r["pipeline"], r["batch"])])
    return out


def main() -> int:
    real = scenario._effect

    def profiled(rates, work, priority, outlasts=True):
        return rates

    def stage_keeps_pace(rates, work, priority, outlasts=True):
        s, k = rates
        return 1.0, k * s

    for mode, effect in (("profiled rates", profiled), ("as is", real),
                         ("stage keeps pace", stage_keeps_pace)):
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
    for path in RAW:
        ms = sorted(optimizer_stretch(path))
        if ms:
            print(f"optimizer stretch {path.name:32} RAP's {len(ms)} cases: "
                  + ", ".join(f"{x:.3f}" for x in ms) + " ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
