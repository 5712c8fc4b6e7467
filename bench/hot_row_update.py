"""The hot-row embedding update (EmbeddingUpdate.FUSED_SGD_HOT_ROW) against the plain
fused one on the same batch: time and agreement, with skewed and uniform raw ids.

On the H200: python bench/hot_row_update.py --out $OUT
Locally:     python bench/hot_row_update.py --dry-run --out /tmp/x   (CPU: index_add_ for both)

For each model, batch and --zipf exponent, on one preprocessed batch of the model's
pipeline (Numba CPU pipeline) and a random bag gradient:
  fused      backend.embedding_sgd.bag_sgd_ (its default grid: 4 blocks an SM)
  hot-row    the same with each table's sampled hot row counted per bag
Medians of CUDA-event times over --iters updates after --warmup; each update's result
is compared, from the same starting table, with index_add_'s (largest difference
against the largest change). Each batch's hottest row's share of its table's ids is
recorded. Written atomically as JSON once every case has run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from backend.embedding_sgd import bag_sgd_, bag_sgd_index_add_  # noqa: E402
from backend.trainer import DLRM  # noqa: E402
from bench.embedding_update import batch_list, model_cases, timed  # noqa: E402
from bench.trainer_gpu import make_batches  # noqa: E402
from spec.serde import write_atomic  # noqa: E402


def agreement(update, weight: torch.Tensor, want: torch.Tensor, start: torch.Tensor) -> float:
    """Largest |update's result - want| over the largest |want - start|."""
    weight.copy_(start)
    update()
    change = (want - start).abs().max().item()
    return (weight - want).abs().max().item() / max(change, 1e-30)


def hottest_share(ids: torch.Tensor, offsets: torch.Tensor, tables: int) -> float:
    """The largest share of a table's ids that one row holds (bags table-major)."""
    b = (offsets.numel() - 1) // tables
    shares = []
    for t in range(tables):
        x = ids[offsets[t * b]:offsets[(t + 1) * b]]
        shares.append(torch.bincount(x).max().item() / max(x.numel(), 1))
    return max(shares)


def measure(model, pipeline, device: torch.device, warmup: int, iters: int,
            rng: np.random.Generator, zipf_a: float) -> dict:
    batch = make_batches(model, pipeline, 1, rng, zipf_a)[0].to(device)
    net = DLRM(model, seed=0, device=device).to(device)
    w, lr, tables = net.embedding.detach(), model.learning_rate, len(model.tables)
    grad = torch.randn(batch.offsets.numel() - 1, model.embedding_dim, device=device) * 1e-3
    start = w.clone()
    want = w.clone()
    bag_sgd_index_add_(want, batch.ids, batch.offsets, grad, lr)
    cases = {"fused": lambda: bag_sgd_(w, batch.ids, batch.offsets, grad, lr),
             "hot-row": lambda: bag_sgd_(w, batch.ids, batch.offsets, grad, lr,
                                         hot_tables=tables)}
    rows = [{"case": name, "ms": round(timed(fn, device, warmup, iters), 4),
             "relative_error": agreement(fn, w, want, start)} for name, fn in cases.items()]
    return {"model": model.name, "pipeline": pipeline.name, "batch": model.batch_per_gpu,
            "zipf_a": zipf_a,
            "hottest_row_share": round(hottest_share(batch.ids, batch.offsets, tables), 4),
            "ids": batch.ids.numel(), "bags": batch.offsets.numel() - 1, "cases": rows}


def zipf_list(parser: argparse.ArgumentParser, text: str) -> list[float]:
    """--zipf as finite exponents > 0, or the parser's error naming the flag."""
    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not values or not all(0 < v < float("inf") for v in values):
        parser.error(f"--zipf = {text!r}: comma-separated numbers > 0 (<= 1: uniform ids)")
    return values


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="heavy-lean,heavy-hot")
    p.add_argument("--batches", default="8192,16384")
    p.add_argument("--zipf", default="1.1,1.0", help="raw ids' zipf exponents (<= 1: uniform)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--dry-run", action="store_true", help="CPU, tiny tables and batch")
    p.add_argument("--out", default="out/hot_row_update")
    args = p.parse_args(argv)
    exponents = zipf_list(p, args.zipf)
    if args.dry_run:
        args.warmup, args.iters = 0, 1
    device = torch.device("cpu" if args.dry_run else "cuda")
    rng = np.random.default_rng(0)
    rows = []
    for m, pipeline in model_cases(args.models, batch_list(p, args.batches), args.dry_run,
                                   fallback="heavy-small"):
        for a in exponents:
            row = measure(m, pipeline, device, args.warmup, args.iters, rng, a)
            print(json.dumps(row), flush=True)
            rows.append(row)
    write_atomic(Path(args.out) / "hot_row_update.json", json.dumps(
        {"device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu",
         "command": " ".join(["python", *sys.argv]), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
