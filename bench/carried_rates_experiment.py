"""An experiment, not adopted: a kernel carried into the next step's stages (the stages up
to the one that released it) simulated at its rates when started with each stage, not at
the resident rates the profile measured with the kernel launched 0.01 ms before the stage
(sim/scenario.py `_effects`). Why it was tried: on graphed heavy-short b16384 the
whole-pipeline kernel two batches ahead, carried into emb_fwd, is simulated nearly
stopped there (kernel factor 34.7) and then holding the small stages after it, where on
the H200 it ended about 0.2 ms into emb_fwd (bench/results/heavy_short_remade_h200.md,
part 3). Every executed case predicted again, as bench/repredict.py --all does:

    python bench/carried_rates_experiment.py --rows-json ROWS.json -o OUT.md

Result (session 37, at c997909): 1,435 of 4,467 cases within 5% against 1,437 as it is;
heavy-hot two ahead 21 of 38 against 20, heavy-fused 193 of 1,058 against 195. The
started rates are no better an account of a kernel's tail than the resident ones: both
were measured with the kernel's whole grid still to run.
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
    real = scenario._effects

    def effects(cm, kw, works, hw, priority, release, outlasts):
        started, carried = real(cm, kw, works, hw, priority, release, outlasts)
        if release < 0:
            return started, carried
        return started, started[:release + 1] + carried[release + 1:]

    scenario._effects = effects
    return repredict.main(["--all", *argv])


if __name__ == "__main__":
    raise SystemExit(main())
