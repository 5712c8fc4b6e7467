"""What the trainer's dot interaction costs on the GPU, against the way it took before.

Until 2026-12-01 the trainer's DotInteraction kept the strict lower triangle of the
pairwise dot products by advanced indexing, `z[:, rows, cols]`, as the reference DLRMs
do (facebookresearch/dlrm's interact_features, TorchRec's InteractionArch). Its backward
is `index_put_` with accumulate, which PyTorch runs on CUDA by its deterministic path,
sorting the indices and then `indexing_backward_kernel` (pytorch/pytorch#171381
describes that path). The trainer now gathers the same products from the flattened
matrix with index_select, whose backward is index_add_ (each gradient element written
once, so no sort). Each case is timed both ways:

  index   advanced indexing (IndexDotInteraction, here: the trainer's way before);
  flat    the trainer's DotInteraction.

Forward outputs and input gradients are compared (they must be equal), and the index
backward's CUDA kernels are listed by time (torch.profiler), to name what it spends.
`--cases profiled` times every interaction shape and batch the H200 profile holds (alone,
timed from the host: small cases carry launch time; costmodel/interaction.py takes its
savings from stage times measured inside the step instead).

On the H200: python bench/interaction_probe.py [--cases profiled] --out $OUT
Locally:     python bench/interaction_probe.py --dry-run --out /tmp/x   (CPU, small sizes)
Writes interaction_probe.json atomically; `--render JSON -o MD` writes its table.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import spec  # noqa: E402
from backend.trainer import DotInteraction  # noqa: E402
from costmodel.interaction import PROFILED_SHAPES  # noqa: E402
from spec.serde import write_atomic, write_or_print  # noqa: E402

CASES = (("criteo-kaggle", 8192), ("criteo-kaggle", 16384), ("heavy-fused", 16384),
         ("wide-2x", 8192), ("wide-4x", 8192))
"""(model preset, batch): the dot-interaction models the plans and profiles use."""


class IndexDotInteraction(nn.Module):
    """DotInteraction's output, the lower triangle taken by advanced indexing (the
    trainer's way until 2026-12-01, and the reference DLRMs')."""

    def __init__(self, features: int) -> None:
        super().__init__()
        rows, cols = torch.tril_indices(features, features, offset=-1)
        self.register_buffer("rows", rows, persistent=False)
        self.register_buffer("cols", cols, persistent=False)

    def forward(self, bottom: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        x = torch.cat([bottom.unsqueeze(1), emb], dim=1)  # [B, F, d]
        z = torch.bmm(x, x.transpose(1, 2))
        return torch.cat([bottom, z[:, self.rows, self.cols]], dim=1)


def _timer(device: torch.device):
    """(start, stop -> ms) on CUDA events, or the host clock on the CPU."""
    if device.type == "cuda":
        def start():
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            return e

        def stop(e0) -> float:
            e1 = torch.cuda.Event(enable_timing=True)
            e1.record()
            e1.synchronize()
            return e0.elapsed_time(e1)
        return start, stop
    return time.perf_counter, lambda t0: (time.perf_counter() - t0) * 1e3


def time_module(module: nn.Module, bottom: torch.Tensor, emb: torch.Tensor, reps: int,
                warmup: int) -> dict:
    """Median forward and backward ms over `reps`, and the last (output, input grads)."""
    start, stop = _timer(bottom.device)
    fwd, bwd = [], []
    for r in range(warmup + reps):
        b = bottom.detach().requires_grad_()
        e = emb.detach().requires_grad_()
        t0 = start()
        out = module(b, e)
        f_ms = stop(t0)
        grad = torch.ones_like(out)
        t0 = start()
        out.backward(grad)
        b_ms = stop(t0)
        if r >= warmup:
            fwd.append(f_ms)
            bwd.append(b_ms)
    return {"fwd_ms": statistics.median(fwd), "bwd_ms": statistics.median(bwd),
            "tensors": (out.detach(), b.grad, e.grad)}


def backward_kernels(module: nn.Module, bottom: torch.Tensor, emb: torch.Tensor,
                     top: int = 6) -> list[dict]:
    """The CUDA kernels of one backward, most time first (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile

    b = bottom.detach().requires_grad_()
    e = emb.detach().requires_grad_()
    out = module(b, e)
    grad = torch.ones_like(out)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        out.backward(grad)
        torch.cuda.synchronize()
    rows = [{"kernel": ev.key[:120], "calls": ev.count,
             "ms": ev.device_time_total / 1e3} for ev in prof.key_averages()
            if ev.device_time_total > 0]
    return sorted(rows, key=lambda r: -r["ms"])[:top]


def probe(model_name: str, batch: int, device: torch.device, reps: int, warmup: int,
          seed: int) -> dict:
    model = spec.model_preset(model_name)
    gen = torch.Generator(device).manual_seed(seed)
    tables, d = model.features - 1, model.embedding_dim
    bottom = torch.rand(batch, d, device=device, generator=gen)
    emb = torch.rand(batch, tables, d, device=device, generator=gen)
    ways = {"index": IndexDotInteraction(model.features).to(device),
            "flat": DotInteraction(model.features).to(device)}
    timed = {k: time_module(m, bottom, emb, reps, warmup) for k, m in ways.items()}
    ref, alt = timed["index"].pop("tensors"), timed["flat"].pop("tensors")
    record = {"model": model_name, "batch": batch, "features": model.features, "dim": d,
              **{k: v for k, v in timed.items()},
              "equal": all(torch.equal(a, b) for a, b in zip(ref, alt))}
    if device.type == "cuda":
        record["index_backward_kernels"] = backward_kernels(ways["index"], bottom, emb)
    return record


def render(doc: dict, source: str) -> str:
    """A markdown table of one probe record: both ways' times and the backward's
    largest kernel."""
    lines = ["# The dot interaction's cost on the GPU: advanced indexing against a flat gather",
             "", f"Made by `python bench/interaction_probe.py --render {source}` from "
             f"`{doc['command']}` ({doc['device']}, torch {doc['torch']}); medians of the "
             "probe's repetitions, each pass timed by CUDA events recorded around it (so a pass "
             "whose kernels run faster than the host launches them counts its launches: the "
             "small cases, on a slow host). *index*: the lower triangle "
             "by advanced indexing (the trainer's DotInteraction until 2026-12-01); *flat*: "
             "the same products by index_select on the flattened matrix (the trainer's "
             "since). Equal: outputs and both input gradients bit for bit.", "",
             "| model | batch | F | d | forward ms index / flat | backward ms index / flat "
             "| backward speed-up | equal | index backward's largest kernel |",
             "|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for c in doc["cases"]:
        kernels = c.get("index_backward_kernels")  # none on the CPU
        largest = "-" if not kernels else "`{}` {:.3f} ms".format(re.match(
            r"(?:void )?([\w:]+)", kernels[0]["kernel"].replace("(anonymous namespace)::", "")
        ).group(1), kernels[0]["ms"])
        lines.append(
            f"| {c['model']} | {c['batch']} | {c['features']} | {c['dim']} | "
            f"{c['index']['fwd_ms']:.3f} / {c['flat']['fwd_ms']:.3f} | "
            f"{c['index']['bwd_ms']:.3f} / {c['flat']['bwd_ms']:.3f} | "
            f"{c['index']['bwd_ms'] / c['flat']['bwd_ms']:.2f}x | {c['equal']} | "
            f"{largest} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--render", metavar="JSON", help="write the table of a record instead")
    ap.add_argument("-o", "--output", help="with --render: the markdown file")
    ap.add_argument("--out")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cases", choices=("plans", "profiled"), default="plans",
                    help="plans: the models and batches the plans run (CASES); profiled: "
                         "every interaction shape and batch the H200 profile holds")
    ap.add_argument("--dry-run", action="store_true", help="CPU, batches of 64")
    args = ap.parse_args(argv)
    if args.render:
        text = render(json.loads(Path(args.render).read_text()), args.render)
        write_or_print(text, args.output)
        return 0
    if not args.out:
        raise SystemExit("--out is required (or --render)")
    if args.reps < 1 or args.warmup < 0:
        raise SystemExit("--reps must be at least 1 and --warmup at least 0")
    device = torch.device("cpu" if args.dry_run else "cuda")
    chosen = CASES if args.cases == "plans" else PROFILED_SHAPES
    cases = list(dict.fromkeys((m, 64 if args.dry_run else b) for m, b in chosen))
    records = []
    for model_name, batch in cases:
        r = probe(model_name, batch, device, args.reps, args.warmup, args.seed)
        records.append(r)
        print(f"{model_name} b{batch} F={r['features']} d={r['dim']}: forward "
              f"{r['index']['fwd_ms']:.3f} / {r['flat']['fwd_ms']:.3f} ms, backward "
              f"{r['index']['bwd_ms']:.3f} / {r['flat']['bwd_ms']:.3f} ms (index / flat), "
              f"equal {r['equal']}", flush=True)
        for k in r.get("index_backward_kernels", []):
            print(f"    {k['ms']:8.3f} ms x{k['calls']}  {k['kernel'][:90]}")
    doc = {"command": " ".join(["python", "bench/interaction_probe.py", *(argv or sys.argv[1:])]),
           "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
           "torch": torch.__version__, "dry_run": args.dry_run, "cases": records}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "interaction_probe.json", json.dumps(doc, indent=1))
    print(f"wrote {out / 'interaction_probe.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
