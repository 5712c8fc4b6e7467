"""Step by step: when does the fused embedding update run in its slow mode? heavy-fused
b16384's emb_bwd takes about 2.87 or 3.03 ms, flipping between blocks of 15 plain steps
(bench/plain_drift_probe.py, bench/results/raw/drift_run1/). This times, in one process,
three series behind the profiler's GPU spin (so the GPU alone is timed):

  steps   plain steps (Profiler.step), each one's emb_bwd and the device addresses of the
          tensors the update reads that are allocated anew each step (the bags'
          gradient) or once (ids, offsets, the table);
  kernel  the update kernel alone (backend/embedding_sgd.bag_sgd_), again and again on
          one step's inputs: the same addresses every time; and four more series of it,
          each after a different piece of work (kernel_series says which);
  moved   plain steps, each with a tensor of a random size (0-64 MB) held across it, so
          the allocator hands the step's tensors other addresses.

If the modes persist over runs of steps in `kernel` too, the state is the GPU's, not
the addresses'; if they follow the gradient's address in `steps` and `moved`, it is the
placement.

    python bench/update_mode_probe.py [--steps N] -o OUT.json [--dry-run]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from backend.embedding_sgd import bag_sgd_  # noqa: E402
from backend.profile import KERNEL_SPIN_MS  # noqa: E402
from backend.streams import gpu_spin  # noqa: E402
from backend.trainer import Trainer  # noqa: E402
from bench.contention_probe import heavy_probe_parser, probe_record, probe_setup  # noqa: E402
from spec import Stage  # noqa: E402
from spec.serde import write_atomic  # noqa: E402

MAX_PAD_BYTES = 64 << 20


def runs(values: list[float], split_ms: float) -> list[int]:
    """Lengths of the runs of consecutive values on one side of `split_ms`."""
    out: list[int] = []
    side = None
    for v in values:
        s = v >= split_ms
        if s == side:
            out[-1] += 1
        else:
            out.append(1)
            side = s
    return out


def summary(values: list[float]) -> dict:
    """Median, the split between the modes (the mean of the two medians either side of
    the overall median), the share of steps below it, and the run lengths."""
    med = statistics.median(values)
    lo = [v for v in values if v < med] or [med]
    hi = [v for v in values if v >= med]
    split = (statistics.median(lo) + statistics.median(hi)) / 2
    r = runs(values, split)
    return {"median_ms": med, "p10_ms": float(np.percentile(values, 10)),
            "p90_ms": float(np.percentile(values, 90)), "split_ms": split,
            "fast_share": sum(v < split for v in values) / len(values),
            "runs": len(r), "longest_run": max(r), "mean_run": len(values) / len(r)}


def kernel_series(prof, steps: int) -> dict[str, list[dict]]:
    """The update alone on one step's inputs, behind a spin each time, after what each
    series names: nothing (`kernel`; a learning rate of 1e-9, so the table hardly
    changes), nothing with the model's learning rate (`kernel_lr`), a read of a buffer
    of 4x the L2 (`after_read`: the L2 left clean), a write of it (`after_write`: left
    full of other dirty lines), the step's embedding forward (`after_fwd`: the table's
    rows left in the L2)."""
    net, b = prof.trainer.net, prof.batch
    cuda = prof.S.cuda
    grad = torch.randn(b.offsets.numel() - 1, net.embedding.shape[1], device=prof.device)
    l2 = torch.cuda.get_device_properties(prof.device).L2_cache_size if cuda else 1 << 16
    buf = torch.empty(l2, dtype=torch.float32, device=prof.device)  # 4x the L2, in bytes
    lr = prof.trainer.spec.learning_rate
    before = {"kernel": (None, 1e-9), "kernel_lr": (None, lr),
              "after_read": (lambda: buf.sum(), 1e-9),
              "after_write": (lambda: buf.fill_(1.0), 1e-9),
              "after_fwd": (lambda: net.pool(b.ids, b.offsets), 1e-9)}
    out: dict[str, list[dict]] = {}
    for name, (work, rate) in before.items():
        times = []
        for _ in range(steps):
            if cuda:
                gpu_spin(KERNEL_SPIN_MS)
            if work is not None:
                work()
            if cuda:
                e0 = torch.cuda.Event(enable_timing=True)
                e1 = torch.cuda.Event(enable_timing=True)
                e0.record()
                bag_sgd_(net.embedding, b.ids, b.offsets, grad, rate)
                e1.record()
                torch.cuda.synchronize()
                ms = e0.elapsed_time(e1)
            else:
                c = time.perf_counter()
                bag_sgd_(net.embedding, b.ids, b.offsets, grad, rate)
                ms = (time.perf_counter() - c) * 1e3
            times.append({"ms": ms})
        out[name] = times
    return out


def main(argv: list[str] | None = None) -> int:
    ap = heavy_probe_parser(__doc__)
    ap.add_argument("--steps", type=int, default=300, help="steps in each series (>= 2)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--dry-run", action="store_true", help="on the CPU, batch 64, 4 steps")
    args = ap.parse_args(argv)
    if args.steps < 2:
        ap.error(f"--steps {args.steps}: an integer >= 2")
    steps = 4 if args.dry_run else args.steps
    batch = 64 if args.dry_run else args.batch
    rng = np.random.default_rng(args.seed)
    t0 = time.time()
    _, _, _, prof, _, _ = probe_setup(args.model, args.pipeline, batch, args.dry_run,
                                          lambda *a: None)
    seen: list[dict] = []
    real_backward = Trainer.embedding_backward

    def recording_backward(self, pooled, grad, ids, offsets):
        seen.append({"grad": grad.data_ptr(), "ids": ids.data_ptr(),
                     "offsets": offsets.data_ptr(),
                     "table": self.net.embedding.data_ptr()})
        real_backward(self, pooled, grad, ids, offsets)

    Trainer.embedding_backward = recording_backward
    try:
        series: dict[str, list[dict]] = {"steps": [], "moved": []}
        for _ in range(2):  # warm
            prof.step(None, None)
        for name in ("steps", "moved"):
            for _ in range(steps):
                pad = None
                if name == "moved":
                    nbytes = int(rng.integers(0, MAX_PAD_BYTES))
                    pad = torch.empty(nbytes, dtype=torch.uint8, device=prof.device)
                seen.clear()
                ms = prof.step(None, None).stage_ms[Stage.EMB_BWD]
                series[name].append({"emb_bwd_ms": ms, "pad_bytes": 0 if pad is None
                                     else pad.numel(), **seen[-1]})
                del pad
    finally:
        Trainer.embedding_backward = real_backward
    kernel = kernel_series(prof, steps)
    out = probe_record("update_mode_probe.py", argv, args, [], t0)
    out.update({"batch": batch, "device": torch.cuda.get_device_name() if prof.S.cuda
                else "cpu",
                "summary": {**{n: summary([s["emb_bwd_ms"] for s in series[n]])
                               for n in series},
                            **{n: summary([k["ms"] for k in ks]) for n, ks in kernel.items()}},
                **series, **kernel})
    write_atomic(Path(args.output), json.dumps(out, indent=1))
    for name, s in out["summary"].items():
        print(f"{name}: median {s['median_ms']:.3f} ms (p10 {s['p10_ms']:.3f}, p90 "
              f"{s['p90_ms']:.3f}), below {s['split_ms']:.3f}: {s['fast_share']:.0%}, "
              f"{s['runs']} runs, longest {s['longest_run']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
