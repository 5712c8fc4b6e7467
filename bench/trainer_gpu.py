"""Our DLRM trainer against a straightforward PyTorch DLRM, `ideal` strategy (inputs
preprocessed ahead of time and replayed), with per-stage CUDA-event times.

On a GPU:  python bench/trainer_gpu.py -o trainer.json
Locally:   python bench/trainer_gpu.py --dry-run -o /tmp/trainer.json   (tiny tables, CPU)

For each model preset and batch: ours with the preset's optimizer, then ours and the
baseline (one nn.EmbeddingBag per table, plain autograd) both with SGD on the same
batches, so the two differ only in how they are built. Every run's Measurement
(spec/measurement.py) goes into the one JSON, rewritten atomically after each run; a
summary prints last.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from corun.backend.executor import spread, versions  # noqa: E402
from corun.backend.naive import NaiveTrainer  # noqa: E402
from corun.backend.runner import preprocessed_batches  # noqa: E402
from corun.backend.trainer import Batch, Clock, Trainer  # noqa: E402
from corun.spec.provenance import git_commit  # noqa: E402
from corun.spec.serde import dumps, write_atomic  # noqa: E402

from corun import spec  # noqa: E402
from corun.workload import shrink_tables  # noqa: E402

CASES = [("criteo-kaggle", "kaggle"), ("criteo-terabyte", "terabyte"),
         ("mlperf-dcnv2", "multihot")]


def time_steps(step, batches: list[Batch], device, warmup: int, iters: int, staged: bool):
    """Per-iteration times (ms) and, when `staged`, per-stage times."""
    times, stages = [], {}
    for i in range(warmup + iters):
        batch = batches[i % len(batches)]
        clock = Clock(device)
        clock.mark(None)
        if staged:
            step(batch, clock)
        else:
            step(batch)
        clock.mark(spec.Stage.OPTIMIZER)  # whole iteration for the unstaged baseline
        if device.type == "cuda":
            torch.cuda.synchronize()
        if i < warmup:
            continue
        marks = clock.marks
        first, last = marks[0][1], marks[-1][1]
        times.append(first.elapsed_time(last) if device.type == "cuda" else
                     (last - first) * 1e3)
        if staged:
            for s, ms in clock.stage_ms().items():
                stages.setdefault(s.value, []).append(ms)
    return times, stages


def measure(label, model, pipeline_name, step, batches, device, args, staged):
    times, stages = time_steps(step, batches, device, args.warmup, args.iterations, staged)
    it = spread(times)
    return spec.Measurement(
        strategy=label, model=model.name, pipeline=pipeline_name,
        hardware=torch.cuda.get_device_name() if device.type == "cuda" else platform.machine(),
        gpu_count=1, batch_per_gpu=model.batch_per_gpu, iterations=args.iterations,
        warmup=args.warmup, iteration=it,
        throughput_samples_per_s=model.batch_per_gpu / it.median_ms * 1e3,
        stall_ms_per_iteration=0.0, stages={k: spread(v) for k, v in stages.items()},
        kernels={}, checked_rows=0, versions=versions(), git_commit=git_commit(),
        command=" ".join(sys.argv))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", type=Path, required=True,
                    help="the JSON to write: every run's Measurement")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--batches", default="4096,8192")
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    args = ap.parse_args(argv)
    device = torch.device("cpu" if args.dry_run else "cuda")
    if args.dry_run:
        args.iterations, args.warmup, args.batches = 5, 2, "64"
    rng = np.random.default_rng(0)
    summary, runs_out = [], []
    for model_name, pipe_name in CASES:
        for b in (int(x) for x in args.batches.split(",")):
            model = replace(spec.model_preset(model_name), batch_per_gpu=b)
            pipeline = spec.pipeline_preset(pipe_name)
            if args.dry_run:  # tables of 5,000 rows, hashes bounded to match
                model, pipeline = shrink_tables(model, pipeline, 5000)
            batches = [x.to(device) for x in preprocessed_batches(model, pipeline, 4, rng)]
            runs = [("ideal", model, True)]
            sgd = replace(model, optimizer=spec.Optimizer.SGD)
            if model.optimizer is not spec.Optimizer.SGD:
                runs.append(("ideal-sgd", sgd, True))
            runs.append(("naive-sgd", sgd, False))
            for label, m, staged in runs:
                t0 = time.time()
                trainer = Trainer(m, device) if staged else NaiveTrainer(m, device,
                                                                         same_init=False)
                meas = measure(label, m, pipe_name, trainer.step, batches, device, args,
                               staged)
                runs_out.append({"model": model_name, "batch": b, "run": label,
                                 "measurement": dumps(meas)})
                write_atomic(args.output, json.dumps(runs_out, indent=1))
                summary.append((model_name, b, label, meas.iteration.median_ms,
                                meas.throughput_samples_per_s, time.time() - t0))
                print(summary[-1], flush=True)
                del trainer
                if device.type == "cuda":
                    torch.cuda.empty_cache()
    print(f"{'model':<16} {'batch':>5} {'run':<10} {'iter ms':>8} {'samples/s':>11}")
    for m, b, label, ms, tput, _ in summary:
        print(f"{m:<16} {b:>5} {label:<10} {ms:>8.3f} {tput:>11,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
