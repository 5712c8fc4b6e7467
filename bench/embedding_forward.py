"""What the trainer's embedding forward costs per id: PyTorch's `embedding_bag` against
the bag kernel (backend/embedding_fwd.py), on the same preprocessed batch (issue 6's
heavy case: a step cheaper per id looked up makes preprocessing a larger share of it).

On the H200: python bench/embedding_forward.py --out $OUT
Locally:     python bench/embedding_forward.py --dry-run   (tiny batch, CPU, host clock)
Report:      python bench/embedding_forward.py --render RAW.json[.gz] ... -o REPORT.md

For each model and batch: the median of CUDA-event times over --iters calls after
--warmup for each way (one call between two events: the launch's host time included
where the GPU waits for it), the same --iters calls queued back to back (the GPU's time
a call and the host's; the kernel also launched through Numba's dispatcher each time, as
before backend.launch.TensorLaunch), and the largest difference of the two results (float sums in
another order). Written atomically as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from numba import cuda  # noqa: E402
from torch.nn import functional as F  # noqa: E402

import spec  # noqa: E402
from backend.embedding_fwd import bag_sum, bag_sum_kernel  # noqa: E402
from backend.embedding_sgd import THREADS_PER_BLOCK, blocks_for  # noqa: E402
from backend.trainer import Trainer  # noqa: E402
from bench.embedding_update import batch_list, model_cases, timed  # noqa: E402
from bench.trainer_gpu import make_batches  # noqa: E402
from sim.simulate import git_commit  # noqa: E402
from spec.serde import read_document, write_atomic  # noqa: E402


def back_to_back(fn, device: torch.device, n: int) -> dict:
    """`n` calls queued without a sync between them: the host's milliseconds per call
    (launching only) and the GPU's (CUDA events around all n, so the launches' host time
    is hidden where it is shorter than the kernel's)."""
    if device.type != "cuda":
        return {}
    fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    host = (time.perf_counter() - t0) * 1e3 / n
    b.record()
    b.synchronize()
    return {"host_ms": round(host, 4), "gpu_ms": round(a.elapsed_time(b) / n, 4)}


def measure(model: spec.Model, pipeline: spec.Pipeline, device: torch.device, warmup: int,
            iters: int, rng: np.random.Generator) -> dict:
    batch = make_batches(model, pipeline, 1, rng)[0].to(device)
    w = Trainer(model, device).net.embedding.detach()
    n_ids = batch.ids.numel()

    def pytorch():
        return F.embedding_bag(batch.ids, w, batch.offsets, mode="sum",
                               include_last_offset=True)

    def kernel():
        return bag_sum(w, batch.ids, batch.offsets)

    def kernel_numba():  # the same kernel, each launch through Numba's dispatcher
        out = torch.empty_like(ref)
        stream = cuda.external_stream(torch.cuda.current_stream().cuda_stream)
        bag_sum_kernel[blocks_for(*out.shape), THREADS_PER_BLOCK, stream](
            *(cuda.as_cuda_array(t) for t in (w, batch.ids, batch.offsets, out)))
        return out

    ref, got = pytorch(), kernel()
    diff = float((ref - got).abs().max())
    scale = float(ref.abs().max())
    t_torch = timed(pytorch, device, warmup, iters)
    t_kernel = timed(kernel, device, warmup, iters)
    ways = [("pytorch", pytorch), ("kernel", kernel)]
    if device.type == "cuda":
        ways.append(("kernel_numba_launch", kernel_numba))
    queued = {name: back_to_back(fn, device, iters) for name, fn in ways}
    ps = 1e9 / n_ids
    return {"model": model.name, "batch": model.batch_per_gpu, "ids": n_ids,
            "bags": batch.offsets.numel() - 1, "dim": model.embedding_dim,
            "pytorch_ms": round(t_torch, 4), "kernel_ms": round(t_kernel, 4),
            "speedup": round(t_torch / t_kernel, 3),
            "back_to_back": queued,
            "ps_per_id": {"pytorch": round(t_torch * ps, 1), "kernel": round(t_kernel * ps, 1)},
            "max_abs_diff": diff, "max_abs_value": scale}


def render(paths: list[Path]) -> str:
    """A markdown report of embedding_forward.json records, one table each."""
    lines = ["# The trainer's embedding forward on the H200: PyTorch's `embedding_bag` "
             "against the bag kernel", "",
             f"Made by `python bench/embedding_forward.py --render "
             f"{' '.join(str(p) for p in paths)}`. Per call: one call between two CUDA "
             "events (the GPU waits for a slow launch), then --iters calls queued back to "
             "back (GPU ms a call, and the host's ms to launch one; '-': not timed in that "
             "run). Before commit 533287e the bag kernel was launched through Numba's "
             "dispatcher on every call, since by one driver call (backend.launch."
             "TensorLaunch; 'via Numba' times the old way in the same run). The bag "
             "kernel's result differs from PyTorch's by at most the largest difference "
             "shown (float sums in another order).", ""]
    for path in paths:
        rec = read_document(path)
        lines += [f"## {path.name} ({rec['device']}, commit {rec.get('commit', '?')})", "",
                  f"`python {rec['command']}`", "",
                  "| model | batch | dim | ids | PyTorch ms | bag kernel ms | speedup | "
                  "queued GPU ms: PyTorch / kernel | host ms a launch: PyTorch / kernel "
                  "/ kernel via Numba | max diff |", "|---|---:|---:|---:|---:|---:|---:|"
                  "---:|---:|---:|"]
        for r in rec["rows"]:
            q = r.get("back_to_back", {})

            def ms(way, key, q=q):
                return f"{q[way][key]:.3f}" if q.get(way) else "-"
            lines.append(
                f"| {r['model']} | {r['batch']} | {r['dim']} | {r['ids']:,} | "
                f"{r['pytorch_ms']:.3f} | {r['kernel_ms']:.3f} | {r['speedup']:.2f}x | "
                f"{ms('pytorch', 'gpu_ms')} / {ms('kernel', 'gpu_ms')} | "
                f"{ms('pytorch', 'host_ms')} / {ms('kernel', 'host_ms')} / "
                f"{ms('kernel_numba_launch', 'host_ms')} | {r['max_abs_diff']:.1e} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="heavy-fused,heavy-small,criteo-kaggle",
                   help="model presets (a model no pipeline names takes `heavy`)")
    p.add_argument("--batches", default="8192,16384")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--dry-run", action="store_true", help="CPU, tiny tables and batch")
    p.add_argument("--out", default="out/embedding_forward")
    p.add_argument("--render", nargs="+", metavar="RAW", help="render these records")
    p.add_argument("-o", dest="report", help="the report --render writes")
    args = p.parse_args(argv)
    if args.render:
        text = render([Path(x) for x in args.render])
        if args.report:
            write_atomic(args.report, text)
        else:
            print(text)
        return 0
    device = torch.device("cpu" if args.dry_run else "cuda")
    rng = np.random.default_rng(0)
    rows = []
    batches = batch_list(p, args.batches)
    for m, pipeline in model_cases(args.models, batches, args.dry_run, "heavy"):
        row = measure(m, pipeline, device, args.warmup, args.iters, rng)
        print(json.dumps(row), flush=True)
        rows.append(row)
    device_name = torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu"
    write_atomic(Path(args.out) / "embedding_forward.json",
                 json.dumps({"device": device_name, "command": " ".join(sys.argv),
                             "commit": git_commit(),
                             "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
