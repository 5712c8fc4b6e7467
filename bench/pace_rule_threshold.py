"""An experiment, not adopted: the graphed pace rule (sim/scenario.py `_effect`: a graphed
stage above the preprocessing stream keeps its pace, the kernel takes the delay) kept only
for kernels shorter than T ms alone; a longer kernel's profiled rates stand, as if its
blocks, taking the SMs first, held the stage. Every executed case predicted again as
bench/repredict.py --all does (T = 0: the simulator as it is):

    python bench/pace_rule_threshold.py 0.1 --rows-json ROWS.json -o OUT.md

Result (session 36, at fb07ecf, before the simulator took up the condition it does now,
a stage shorter than the kernel alone: bench/results/heavy_short_remade_h200.md): 1,403
of 4,453 cases within 5% at T = 0.1 and at 0.25, against 1,422 as it was.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sim.scenario as scenario  # noqa: E402
from bench import repredict  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    threshold_ms = float(argv.pop(0))
    real_effects, real_effect = scenario._effects, scenario._effect
    long_kernel = [False]

    def effects(cm, kw, works, hw, priority, release, outlasts):
        long_kernel[0] = cm.kernel_ms(kw, hw) >= threshold_ms
        try:
            return real_effects(cm, kw, works, hw, priority, release, outlasts)
        finally:
            long_kernel[0] = False

    def effect(profiled, work, priority, outlasts=True):
        return profiled if long_kernel[0] else real_effect(profiled, work, priority, outlasts)

    if threshold_ms > 0:
        scenario._effects, scenario._effect = effects, effect
    return repredict.main(["--all", *argv])


if __name__ == "__main__":
    raise SystemExit(main())
