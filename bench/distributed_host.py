"""Where the distributed step's host time goes: rank 0's Python profile of
DistributedTrainer.step on replayed batches (no preprocessing), under torchrun.

    torchrun --standalone --nproc-per-node 2 bench/distributed_host.py --out $OUT
    torchrun --standalone --nproc-per-node 2 bench/distributed_host.py --dry-run --out /tmp/x

Writes distributed_host.json: the host step's median ms, the host time of each stage
(the clock's marks), and the functions with the most own time (cProfile, rank 0, the
timed steps only). On the GPU with NCCL; --dry-run on the CPU with gloo and tables cut
to 2,000 rows (checks the script).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import spec  # noqa: E402
from backend.distributed import DistributedTrainer, LocalBatch  # noqa: E402
from backend.trainer import row_bases  # noqa: E402
from corun.workload import shrink_tables  # noqa: E402
from costmodel.sharding import shard_tables  # noqa: E402
from spec.serde import write_atomic  # noqa: E402


class HostClock:
    """The trainer's clock marks, timed on the host only (what each stage's launches
    cost the host thread)."""

    def __init__(self) -> None:
        self.t = time.perf_counter()
        self.ms: dict[str, float] = {}

    def mark(self, stage) -> None:
        now = time.perf_counter()
        if stage is not None:
            self.ms[stage.value] = (now - self.t) * 1e3
        self.t = now


def local_batch(model: spec.Model, device: torch.device,
                rng: np.random.Generator) -> LocalBatch:
    """One id per table per row, as the Criteo pipelines give, in the stacked numbering."""
    b = model.batch_per_gpu
    base = row_bases(model)
    ids = [torch.from_numpy(rng.integers(0, t.rows, b) + rb).to(device)
           for t, rb in zip(model.tables, base)]
    lengths = [torch.ones(b, dtype=torch.int64, device=device) for _ in model.tables]
    dense = torch.from_numpy(rng.random((b, model.dense_features), np.float32)).to(device)
    labels = torch.from_numpy(rng.integers(0, 2, b).astype(np.float32)).to(device)
    return LocalBatch(dense, labels, ids, lengths)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="criteo-kaggle")
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--out", default=os.environ.get("OUT", "out/distributed_host"))
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    if args.model not in spec.MODEL_PRESETS:
        ap.error(f"--model = {args.model!r}: one of {', '.join(spec.MODEL_PRESETS)}")
    for name in ("batch", "steps"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} = {getattr(args, name)}: an integer >= 1")
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if args.dry_run:
        device = torch.device("cpu")
        args.steps, args.warmup = 3, 1
    else:
        device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}")
        torch.cuda.set_device(device)
    dist.init_process_group("gloo" if args.dry_run else "nccl")
    model = replace(spec.model_preset(args.model), batch_per_gpu=args.batch)
    if args.dry_run:
        model, _ = shrink_tables(model, spec.pipeline_preset("kaggle"), 2000)
    hw = spec.hardware_preset("h200", world)
    owner = shard_tables(model, hw).owner  # table name -> rank
    trainer = DistributedTrainer(model, [owner[t.name] for t in model.tables], device, 0)
    rng = np.random.default_rng(rank)
    batches = [local_batch(model, device, rng) for _ in range(4)]
    prof = cProfile.Profile()
    steps, stages = [], []
    for i in range(args.warmup + args.steps):
        timed = i >= args.warmup
        clock = HostClock()
        t0 = time.perf_counter()
        if timed and rank == 0:
            prof.enable()
        trainer.step(batches[i % len(batches)], clock)
        if timed and rank == 0:
            prof.disable()
        if timed:
            steps.append((time.perf_counter() - t0) * 1e3)
            stages.append(clock.ms)
    if device.type == "cuda":
        torch.cuda.synchronize()
    if rank == 0:
        st = pstats.Stats(prof)
        top = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:25]  # own time
        result = {
            "command": " ".join(["python", *sys.argv]), "world": world,
            "model": model.name, "batch_per_gpu": args.batch, "steps": args.steps,
            "host_step_median_ms": statistics.median(steps),
            "host_stage_median_ms": {s: statistics.median(x[s] for x in stages)
                                     for s in stages[0]},
            "own_time_ms_per_step": [
                {"function": f"{Path(f).name}:{line}:{name}", "calls_per_step": n / args.steps,
                 "own_ms": own * 1e3 / args.steps, "cumulative_ms": cum * 1e3 / args.steps}
                for (f, line, name), (_, n, own, cum, _) in top]}
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        write_atomic(out / "distributed_host.json", json.dumps(result, indent=1))
        print(json.dumps({k: v for k, v in result.items() if k != "own_time_ms_per_step"},
                         indent=1))
        for r in result["own_time_ms_per_step"][:15]:
            print(f"{r['own_ms']:7.3f} ms own {r['cumulative_ms']:7.3f} cum "
                  f"{r['calls_per_step']:5.1f}/step  {r['function']}")
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
