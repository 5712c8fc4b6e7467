"""Where the embedding table lands, against what the fused update's step costs: one
`ideal` run of heavy-fused b16384 per process, the trainer built one of several ways, the
table's device address printed beside each training stage's median. The tune run of
2026-12-01 (bench/results/tune_h200.md) measured emb_bwd at 3.02 ms when the executor
built the trainer and 2.83 when bench/execute_gpu.py built it first.

    python bench/placement_probe.py VARIANT [--model M --pipeline P --batch B] -o OUT.json

VARIANT: executor (the Executor builds the trainer, as `corun execute` does), first (the
trainer built before the Executor, as bench/execute_gpu.py does), pad<MB> (MB of device
memory taken before the trainer is built first).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import spec  # noqa: E402
from backend.executor import Executor  # noqa: E402
from backend.graphed import make_trainer  # noqa: E402
from backend.settings import RunSettings  # noqa: E402
from bench.contention_probe import heavy_probe_parser  # noqa: E402
from corun.workload import resolve_model  # noqa: E402
from sim.strategy import parse_strategy, strategy_plan  # noqa: E402
from spec.serde import write_atomic  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = heavy_probe_parser(__doc__)
    ap.add_argument("variant")
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args(argv)
    model = resolve_model(args.model, args.batch)
    pipeline = spec.pipeline_preset(args.pipeline)
    hw = spec.hardware_preset("h200", 1)
    plan = strategy_plan(parse_strategy("ideal", hw), pipeline, model.name, hw)
    pad = None
    trainer = None
    if args.variant.startswith("pad"):
        pad = torch.empty(int(args.variant[3:]) << 20, dtype=torch.uint8, device="cuda")
    if args.variant != "executor":
        trainer = make_trainer(model, "cuda", 0)
    ex = Executor(model, pipeline, plan, "ideal", RunSettings(args.iterations, 20), "cuda",
                  True, command=" ".join(["python", *sys.argv]), say=lambda *a: None,
                  trainer=trainer, hardware=hw)
    m = ex.run()
    ptr = ex.trainer.net.embedding.data_ptr()
    out = {"variant": args.variant, "embedding_ptr": hex(ptr),
           "ptr_mod_2mb": ptr % (2 << 20), "pad_mb": 0 if pad is None else pad.numel() >> 20,
           "iteration_ms": m.iteration.median_ms,
           "stages_ms": {k: v.median_ms for k, v in m.stages.items()}}
    write_atomic(Path(args.output), json.dumps(out, indent=1))
    print(f"{args.variant}: {m.iteration.median_ms:.3f} ms, emb_bwd "
          f"{m.stages['emb_bwd'].median_ms:.3f}, emb_fwd {m.stages['emb_fwd'].median_ms:.3f}, "
          f"table at {hex(ptr)} ({ptr % (2 << 20)} past 2 MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
