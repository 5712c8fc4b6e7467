"""The sliced embedding update (EmbeddingUpdate.SLICED_SGD) against the plain fused one
on the same batch: time and agreement, at several block sizes and chunk counts.

On the H200: python bench/sliced_update.py --out $OUT
Locally:     python bench/sliced_update.py --dry-run --out /tmp/x   (CPU: index_add_ for both)

For each model and batch, on one preprocessed batch of the model's pipeline (Numba CPU
pipeline, zipf 1.1) and a random bag gradient:
  fused      backend.embedding_sgd.bag_sgd_ (its default grid: 4 blocks an SM)
  sliced     sliced_sgd_ at --threads x chunks (the default chunks, half, twice)
Medians of CUDA-event times over --iters updates after --warmup; each update's result
is compared, from the same starting table, with index_add_'s (largest difference
against the largest change). Written atomically as JSON once every case has run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from backend.embedding_sgd import (  # noqa: E402
    bag_sgd_,
    bag_sgd_index_add_,
    sliced_sgd_,
    sliced_shape,
)
from backend.trainer import DLRM  # noqa: E402
from bench.embedding_update import batch_list, model_cases, timed  # noqa: E402
from bench.trainer_gpu import make_batches  # noqa: E402
from corun.workload import int_list  # noqa: E402
from spec.serde import write_atomic  # noqa: E402


def agreement(update, weight: torch.Tensor, want: torch.Tensor, start: torch.Tensor) -> float:
    """Largest |update's result - want| over the largest |want - start|."""
    weight.copy_(start)
    update()
    change = (want - start).abs().max().item()
    return (weight - want).abs().max().item() / max(change, 1e-30)


def measure(model, pipeline, device: torch.device, threads: list[int], warmup: int,
            iters: int, rng: np.random.Generator, zipf_a: float) -> dict:
    batch = make_batches(model, pipeline, 1, rng, zipf_a)[0].to(device)
    net = DLRM(model, seed=0, device=device).to(device)
    w, lr = net.embedding.detach(), model.learning_rate
    grad = torch.randn(batch.offsets.numel() - 1, model.embedding_dim, device=device) * 1e-3
    start = w.clone()
    want = w.clone()
    bag_sgd_index_add_(want, batch.ids, batch.offsets, grad, lr)
    rows = tuple(t.rows for t in model.tables)
    slices, default_chunks = (1, 1) if device.type != "cuda" else sliced_shape(
        rows, model.embedding_dim, model.batch_per_gpu, device)
    cases = {"fused": lambda: bag_sgd_(w, batch.ids, batch.offsets, grad, lr)}
    for th in threads:
        for chunks in sorted({max(1, default_chunks // 2), default_chunks, 2 * default_chunks}):
            cases[f"sliced t{th} c{chunks}"] = (
                lambda th=th, chunks=chunks: sliced_sgd_(w, batch.ids, batch.offsets, grad, lr,
                                                         net.row_bounds, slices, chunks, th))
    rows = []
    for name, fn in cases.items():
        ms = timed(fn, device, warmup, iters)
        rows.append({"case": name, "ms": round(ms, 4),
                     "relative_error": agreement(fn, w, want, start)})
    hottest = max(torch.bincount(batch.ids[batch.offsets[t * b]:batch.offsets[(t + 1) * b]]
                                 ).max().item() / max(int(batch.offsets[(t + 1) * b]
                                                          - batch.offsets[t * b]), 1)
                  for b in [model.batch_per_gpu] for t in range(len(model.tables)))
    return {"model": model.name, "pipeline": pipeline.name, "batch": model.batch_per_gpu,
            "zipf_a": zipf_a, "hottest_row_share": round(hottest, 4),
            "ids": batch.ids.numel(), "bags": batch.offsets.numel() - 1, "slices": slices,
            "default_chunks": default_chunks, "cases": rows}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="heavy-lean,heavy-sliced")
    p.add_argument("--batches", default="8192,16384")
    p.add_argument("--threads", default="128,256,512", help="sliced blocks' threads")
    p.add_argument("--zipf", default="1.1", help="raw ids' zipf exponents (<= 1: uniform)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--dry-run", action="store_true", help="CPU, tiny tables and batch")
    p.add_argument("--out", default="out/sliced_update")
    args = p.parse_args(argv)
    threads = int_list(args.threads, "--threads")
    if args.dry_run:
        threads, args.warmup, args.iters = [4], 0, 1
    device = torch.device("cpu" if args.dry_run else "cuda")
    rng = np.random.default_rng(0)
    rows = []
    for m, pipeline in model_cases(args.models, batch_list(p, args.batches), args.dry_run,
                                   fallback="heavy-small"):
        for a in (float(x) for x in args.zipf.split(",")):
            row = measure(m, pipeline, device, threads, args.warmup, args.iters, rng, a)
            print(json.dumps(row), flush=True)
            rows.append(row)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "sliced_update.json", json.dumps(
        {"device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu",
         "command": " ".join(["python", *sys.argv]), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
