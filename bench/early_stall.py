"""How long each round's step stalled at its start, beside what preprocessing left on the
GPU: the training stream's busy time before its first stage mark (where the graphed step
copies the batch into its inputs) plus bottom_mlp_fwd, less ideal's in the same round.
The basis of the simulator's assembly hold (sim/scenario.py, ASSEMBLY_HOLDS).

    python bench/early_stall.py RAW.json[.gz] ... [--pool]

Prints, per workload and strategy, each round's stall (ms) and their median.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_repeats import rounds_of  # noqa: E402
from spec import Stage  # noqa: E402

TRAINING = {s.value for s in Stage}


def early_ms(case: dict) -> float:
    """Busy time before the first stage mark (the median busy time less the stages'
    medians) plus bottom_mlp_fwd's median, ms."""
    m = case["measurement"]
    stages = {k: v["median_ms"] for k, v in m["stages"].items() if k in TRAINING}
    before = statistics.median(m["per_iteration"]["busy"]) - sum(stages.values())
    return before + stages[Stage.BOTTOM_MLP_FWD.value]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", nargs="+", type=Path)
    ap.add_argument("--pool", action="store_true", help="the files as one run's rounds")
    args = ap.parse_args(argv)
    for (_, pipeline, model, batch), rounds in rounds_of(args.raw, args.pool).items():
        print(f"{model} / {pipeline} b{batch}")
        base = {r: early_ms(c["ideal"]) for r, c in rounds.items() if "ideal" in c}
        names = dict.fromkeys(s for c in rounds.values() for s in c if s != "ideal")
        for s in names:
            xs = [early_ms(c[s]) - base[r] for r, c in rounds.items() if s in c and r in base]
            if xs:
                print(f"  {s:40s} median {statistics.median(xs):+.3f} ms; rounds "
                      + " ".join(f"{x:+.3f}" for x in xs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
