"""What the trainer's embedding backward and update cost per id, against cheaper ways to
do the same SGD step: the question behind issue 6's heavy case (can a trainer cheaper per
id than PyTorch's `embedding_bag` backward make preprocessing a large share of a step?).

On the H200: python bench/embedding_update.py --out $OUT
Locally:     python bench/embedding_update.py --dry-run   (tiny batch, CPU, host clock)

For each model and batch, on the same preprocessed batch (Numba CPU pipeline, zipf 1.1):
  forward        F.embedding_bag over the stacked tables (the trainer's emb_fwd)
  autograd       backward through it (sparse or dense gradient, as the trainer does it)
                 and the trainer's update (emb_bwd + the embedding part of optimizer)
  index_add      the same SGD step without autograd: each id's bag gradient gathered
                 (index_select) and added to its row (index_add_: atomics, no sort)
  fused          the trainer's EmbeddingUpdate.FUSED_SGD (backend/embedding_sgd.py): each
                 bag's gradient added to its ids' rows in one kernel, nothing gathered
and torch.profiler's kernel list for one autograd step (where its time goes). Medians of
CUDA-event times over --iters steps after --warmup; written atomically as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import spec  # noqa: E402
from backend.embedding_sgd import bag_sgd_, bag_sgd_index_add_  # noqa: E402
from backend.trainer import Trainer  # noqa: E402
from bench.trainer_gpu import make_batches  # noqa: E402
from corun.workload import int_list, shrink_tables  # noqa: E402
from spec.pipelines import DEFAULT_MODEL_FOR  # noqa: E402


def timed(fn, device: torch.device, warmup: int, iters: int) -> float:
    """Median milliseconds of `fn()` (CUDA events on a GPU, host clock on the CPU)."""
    import time

    out = []
    for i in range(warmup + iters):
        if device.type == "cuda":
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            ms = a.elapsed_time(b)
        else:
            t0 = time.perf_counter()
            fn()
            ms = (time.perf_counter() - t0) * 1e3
        if i >= warmup:
            out.append(ms)
    return statistics.median(out)


def batch_list(parser: argparse.ArgumentParser, text: str) -> list[int]:
    """--batches as integers >= 1, or the parser's error naming the flag."""
    try:
        return int_list(text, "--batches")
    except spec.SpecError as e:
        parser.error(str(e))


def model_cases(models: str, batches: list[int], dry_run: bool,
                fallback: str | None = None):
    """(model at each batch, its pipeline) for comma-separated model presets: the
    pipeline whose default model it is (`fallback` for a model none names; without one,
    a KeyError), at each of `batches`; a dry run takes batch 64 and tables cut to 1,000
    rows."""
    pipeline_of = {v: k for k, v in DEFAULT_MODEL_FOR.items()}
    for name in models.split(","):
        base = spec.model_preset(name)
        pipe = pipeline_of[name] if fallback is None else pipeline_of.get(name, fallback)
        for b in ([64] if dry_run else batches):
            m, pipeline = replace(base, batch_per_gpu=b), spec.pipeline_preset(pipe)
            yield shrink_tables(m, pipeline, 1000) if dry_run else (m, pipeline)


def measure(model: spec.Model, pipeline: spec.Pipeline, device: torch.device, warmup: int,
            iters: int, rng: np.random.Generator) -> dict:
    batch = make_batches(model, pipeline, 1, rng)[0].to(device)
    trainer = Trainer(model, device)
    net = trainer.net
    w, lr = net.embedding, model.learning_rate
    n_ids, n_bags = batch.ids.numel(), batch.offsets.numel() - 1
    grad = torch.randn(n_bags, model.embedding_dim, device=device) * 1e-3

    def forward():
        return net.pool(batch.ids, batch.offsets)

    def autograd_step():
        out = net.pool(batch.ids, batch.offsets)
        out.backward(grad)
        trainer._update_embedding()

    def index_add_step():
        bag_sgd_index_add_(w, batch.ids, batch.offsets, grad, lr)

    def fused_step():
        bag_sgd_(w, batch.ids, batch.offsets, grad, lr)

    fwd = timed(forward, device, warmup, iters)
    both = timed(autograd_step, device, warmup, iters)
    gathered = timed(index_add_step, device, warmup, iters)
    fused = timed(fused_step, device, warmup, iters)
    kernels = []
    if device.type == "cuda":
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            autograd_step()
            torch.cuda.synchronize()
        for e in sorted(prof.key_averages(), key=lambda e: -e.device_time_total)[:12]:
            kernels.append({"name": e.key[:120], "calls": e.count,
                            "ms": round(e.device_time_total / 1e3, 4)})
    ps = 1e9 / n_ids  # ms -> ps per id
    return {"model": model.name, "batch": model.batch_per_gpu, "ids": n_ids,
            "sparse_gradients": model.sparse_gradients,
            "forward_ms": round(fwd, 4), "autograd_fwd_bwd_update_ms": round(both, 4),
            "autograd_bwd_update_ms": round(both - fwd, 4),
            "index_add_update_ms": round(gathered, 4), "fused_update_ms": round(fused, 4),
            "ps_per_id": {"forward": round(fwd * ps, 1),
                          "autograd_bwd_update": round((both - fwd) * ps, 1),
                          "index_add_update": round(gathered * ps, 1),
                          "fused_update": round(fused * ps, 1)},
            "autograd_kernels": kernels}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="heavy,criteo-kaggle")
    p.add_argument("--batches", default="4096,16384")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--dry-run", action="store_true", help="CPU, tiny tables and batch")
    p.add_argument("--out", default="out/embedding_update")
    args = p.parse_args(argv)
    device = torch.device("cpu" if args.dry_run else "cuda")
    rng = np.random.default_rng(0)
    rows = []
    batches = batch_list(p, args.batches)
    for m, pipeline in model_cases(args.models, batches, args.dry_run):
        for sparse in (True, False):
            row = measure(replace(m, sparse_gradients=sparse), pipeline, device,
                          args.warmup, args.iters, rng)
            print(json.dumps({k: v for k, v in row.items() if k != "autograd_kernels"}),
                  flush=True)
            rows.append(row)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "embedding_update.json.tmp"
    tmp.write_text(json.dumps({"device": str(torch.cuda.get_device_name(0)
                                             if device.type == "cuda" else "cpu"),
                               "command": " ".join(sys.argv), "rows": rows}, indent=1))
    os.replace(tmp, out / "embedding_update.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
