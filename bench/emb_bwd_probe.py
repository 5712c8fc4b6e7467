"""Why the profiler and the executor time the same training stage apart: at heavy-fused
b16384 the profiler's plain steps put emb_bwd (the fused embedding update) at 3.21 ms
(median of its 22 rows, costmodel/data/h200/profile-capped-update.csv) where the
executor's ideal step takes 2.82-2.84 (bench/results/heavy_bmb_h200.md), so the learned
model prices every heavy-fused plan's emb_bwd 0.3 ms high. Each stage timed four ways,
which differ in one thing each:

  spin-same      the profiler's way: each step alone behind a GPU spin, one batch;
  spin-rotate    the same, the batches rotating (as the executor's distinct batches);
  b2b-same       steps back to back (as the executor's loop), one batch;
  b2b-rotate     back to back, rotating;
  stream         back to back, rotating, on a stream made as the executor makes ideal's
                 (a plan without kernels: training not above preprocessing);
  executor       the executor's own ideal (Executor, replay) on the same trainer.

On the H200: python bench/emb_bwd_probe.py --out $OUT
Locally:     python bench/emb_bwd_probe.py --dry-run --out /tmp/x   (CUDA simulator)
Writes emb_bwd_probe.json atomically.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

if "--dry-run" in sys.argv:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np  # noqa: E402

from backend.data import synthetic_inputs  # noqa: E402
from backend.reference import run_reference  # noqa: E402
from backend.runner import trainer_batch  # noqa: E402
from backend.streams import gpu_spin  # noqa: E402
from backend.trainer import TRAINING_STAGES, Clock  # noqa: E402
from bench.contention_probe import heavy_probe_parser, probe_record, probe_setup  # noqa: E402
from spec.serde import write_atomic  # noqa: E402

STAGE_NAMES = {st.value for st in TRAINING_STAGES}
MODES = ("spin-same", "spin-rotate", "b2b-same", "b2b-rotate", "stream", "executor")


def batches(prof, pipeline, model, count: int, seed: int) -> list:
    """`count` trainer batches drawn as the executor draws its distinct batches."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        raw = synthetic_inputs(pipeline, prof.rows, rng)
        labels = (rng.random(prof.rows) < 0.25).astype(np.float32)
        out.append(trainer_batch(pipeline, model, run_reference(pipeline, raw),
                                 labels).to(prof.device))
    return out


def executor_ideal(prof, pipeline, model, steps: int) -> dict[str, float]:
    """The executor's ideal on the profiler's trainer: each stage's median."""
    from backend.executor import Executor
    from backend.settings import RunSettings
    from spec import Plan

    plan = Plan(pipeline.name, model.name, 1, ())
    settings = RunSettings(iterations=steps, warmup=2, check=False)
    m = Executor(model, pipeline, plan, "ideal", settings, str(prof.device), True,
                 trainer=prof.trainer, say=lambda *a: None, hardware=prof.hw).run()
    return {k: v.median_ms for k, v in m.stages.items() if k in STAGE_NAMES}


def timed(prof, mode: str, pool: list, steps: int, spin_ms: float) -> dict[str, float]:
    """Each stage's median over `steps` steps (after two) in one mode."""
    if mode == "stream":
        from backend.streams import Streams

        S = Streams(prof.device, False)
        with S.use(S.train):
            return timed(prof, "b2b-rotate", pool, steps, spin_ms)
    clocks = []
    for i in range(steps + 2):
        batch = pool[i % len(pool)] if mode.endswith("rotate") else pool[0]
        if mode.startswith("spin"):
            prof._sync()
            if prof.S.cuda:
                gpu_spin(spin_ms)
        clock = Clock(prof.device)
        prof.trainer.step(batch, clock)
        clocks.append(clock)
    prof._sync()
    per = [c.stage_ms() for c in clocks[2:]]
    return {st.value: statistics.median(p[st] for p in per) for st in per[0]}


def main(argv: list[str] | None = None) -> int:
    ap = heavy_probe_parser(__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    t0 = time.time()
    batch = 64 if args.dry_run else args.batch
    hw, model, pipeline, prof, _, _ = probe_setup(args.model, args.pipeline, batch,
                                                  args.dry_run, print)
    pool = batches(prof, pipeline, model, 4, 0)
    steps = 3 if args.dry_run else args.steps
    spin = 0.0 if args.dry_run else 9.0
    rounds = []
    for r in range(args.rounds):
        for mode in MODES[r % 2:] + MODES[:r % 2]:  # the order turned each round
            stages = executor_ideal(prof, pipeline, model, steps) if mode == "executor" \
                else timed(prof, mode, pool, steps, spin)
            rounds.append({"round": r, "mode": mode, "stage_ms": stages})
            print(f"round {r} {mode:12s} emb_bwd {stages['emb_bwd']:.3f} ms, step "
                  f"{sum(stages.values()):.3f} ms", flush=True)
    record = probe_record("emb_bwd_probe.py", argv, args, [
        {"batch": batch, "steps": steps, "rounds": rounds}], t0)
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out / "emb_bwd_probe.json", json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
