"""Where a co-run costs training its time, kernel by kernel: each strategy run by `corun
execute` under PyTorch's profiler (CUPTI: every kernel of the process, the Numba kernels
too), then each training-stream kernel of the timed steps set beside the same kernel of
the first strategy's steps (the trainer's kernels come in the same order every step): its
duration, and the training stream's idle gap before it. A stage that a kernel released
earlier holds shows up as longer kernels (they share the SMs) or longer gaps (they wait
for a slot, or for the host).

    python bench/kernel_timeline.py PLAN_DIR --strategies ideal,corun,corun-3 --out OUT
        [--iterations 60 --warmup 20]
    python bench/kernel_timeline.py PLAN_DIR --strategies ... --out OUT --traces

Writes OUT/<strategy>.trace.json.xz (the profiler's trace) and OUT/timeline.md (per
training kernel of the step, in order: median duration and gap per strategy); --traces
renders traces already in OUT.
"""

from __future__ import annotations

import argparse
import json
import lzma
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spec.serde import read_stored_bytes, stored_path  # noqa: E402


def capture(folder: Path, strategy: str, iterations: int, warmup: int, out: Path) -> Path:
    """Run one strategy of a plan folder under the profiler; the trace's path."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from corun.execute_cmd import add_arguments, build
    from corun.plan_dir import plan_file

    p = argparse.ArgumentParser()
    add_arguments(p)
    argv = ["-o", str(out / f"{strategy}.json"), "--iterations", str(iterations),
            "--warmup", str(warmup), "--quiet"]
    if strategy in ("ideal", "gpu-sequential"):
        plan = json.loads((folder / "plan.json").read_text())
        argv += ["--strategy", strategy, "--model", plan["model"], "--pipeline",
                 plan["pipeline"], "--batch", str(plan["batch_per_gpu"])]
        if plan.get("cuda_graphs"):
            argv.append("--cuda-graphs")
    else:
        argv.insert(0, str(folder / plan_file(strategy)))
    executor = build(p.parse_args(argv))
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        m = executor.run()
    torch.cuda.synchronize()
    raw = out / f"{strategy}.trace.json"
    prof.export_chrome_trace(str(raw))
    path = out / f"{strategy}.trace.json.xz"
    path.write_bytes(lzma.compress(raw.read_bytes(), preset=9))
    raw.unlink()
    print(f"{strategy}: {m.iteration.median_ms:.3f} ms median under the profiler -> {path}")
    return path


def kernels(trace: Path) -> list[dict]:
    """The trace's kernels: name, stream, start and duration (us), grid (as CUPTI gives
    it, or None), by start."""
    events = json.loads(read_stored_bytes(trace))["traceEvents"]
    ks = [{"name": e["name"], "stream": e["args"].get("stream"), "ts": float(e["ts"]),
           "dur": float(e["dur"]), "grid": e["args"].get("grid")}
          for e in events if e.get("cat") == "kernel"]
    return sorted(ks, key=lambda k: k["ts"])


def training_stream(ks: list[dict]):
    """The stream with the most kernels: the trainer's."""
    counts: dict = {}
    for k in ks:
        counts[k["stream"]] = counts.get(k["stream"], 0) + 1
    return max(counts, key=counts.get)


def period(names: list[str]) -> int:
    """The step's kernel count: the smallest period the tail of `names` repeats with."""
    tail = names[-2000:]
    for p in range(1, len(tail) // 3):
        if sum(a == b for a, b in zip(tail, tail[p:])) >= 0.98 * (len(tail) - p):
            return p
    raise SystemExit("the training stream's kernels do not repeat: no steps to compare")


def gap(a: dict, b: dict) -> float:
    """Idle time on the stream between kernel `a` and the next, `b` (us)."""
    return max(0.0, b["ts"] - a["ts"] - a["dur"])


def training_steps(ks: list[dict], count: int,
                   like: list[str] | None = None) -> list[list[dict]]:
    """The training stream's last `count` whole steps, each starting where its kernels'
    names line up best with `like` (another run's step), or without it after the step's
    longest idle gap (the host's work between steps)."""
    train = training_stream(ks)
    mine = [k for k in ks if k["stream"] == train]
    n = period([k["name"] for k in mine])
    tail = mine[-(count + 2) * n:]
    if like is not None:
        def matches(i: int) -> int:
            return sum(k["name"] == w for k, w in zip(tail[i:i + n], like))
        start = max(range(n), key=matches)
    else:
        gaps = [statistics.median(gap(tail[j - 1], tail[j])
                                  for j in range(i or n, len(tail), n)) for i in range(n)]
        start = max(range(n), key=gaps.__getitem__)
    return [tail[a:a + n] for a in range(start, len(tail) - n + 1, n)][-count:]


def table(steps: dict[str, list[list[dict]]], command: str) -> str:
    """timeline.md: per kernel of the step, median duration and gap per strategy."""
    names = list(steps)
    n = min(len(st[0]) for st in steps.values())
    lines = ["# Training kernels beside a co-run, kernel by kernel", "",
             f"`{command}`: the training stream's last whole steps of each run ({n} kernels "
             "a step); per kernel of the step, its median duration and the median idle gap "
             "before it on that stream (us).", "",
             "| # | kernel | " + " | ".join(f"{s} dur | {s} gap" for s in names) + " |",
             "|---:|---|" + "---:|---:|" * len(names)]
    totals = {s: [0.0, 0.0] for s in names}
    for i in range(n):
        row = []
        for s in names:
            d = statistics.median(st[i]["dur"] for st in steps[s])
            g = statistics.median(gap(st[i - 1], st[i]) for st in steps[s]) if i else 0.0
            totals[s][0] += d
            totals[s][1] += g
            row.append(f"{d:.1f} | {g:.1f}")
        name = steps[names[0]][0][i]["name"][:60].replace("|", "/")
        lines.append(f"| {i} | `{name}` | " + " | ".join(row) + " |")
    lines += ["", "Sums over the step (us): " + "; ".join(
        f"{s}: kernels {d:.0f}, gaps {g:.0f}" for s, (d, g) in totals.items()), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--strategies", default="ideal,corun")
    ap.add_argument("--iterations", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--steps", type=int, default=30, help="timed steps compared")
    ap.add_argument("--traces", action="store_true",
                    help="only render the traces already in --out")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    for name, low in (("iterations", 1), ("warmup", 0), ("steps", 1)):
        if getattr(args, name) < low:
            ap.error(f"--{name} {getattr(args, name)}: an integer >= {low}")
    names = args.strategies.split(",")
    if not args.traces:
        from corun.plan_dir import plan_file

        for s in names:
            f = plan_file(s)
            if s not in ("ideal", "gpu-sequential") and (f is None or
                                                          not (args.folder / f).is_file()):
                ap.error(f"strategies = {s!r}: ideal, gpu-sequential or a plan of "
                         f"{args.folder} (corun, corun-<N>, rap)")
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.traces:
        for s in names:
            capture(args.folder, s, args.iterations, args.warmup, args.out)
    missing = [s for s in names if not stored_path(args.out / f"{s}.trace.json").is_file()]
    if missing:
        ap.error(f"strategies = {missing[0]!r}: no {missing[0]}.trace.json(.xz) in {args.out} "
                 "(run without --traces to capture it)")
    steps = {names[0]: training_steps(kernels(args.out / f"{names[0]}.trace.json"),
                                      args.steps)}
    like = [k["name"] for k in steps[names[0]][0]]
    for s in names[1:]:
        steps[s] = training_steps(kernels(args.out / f"{s}.trace.json"), args.steps, like)
    command = (f"python bench/kernel_timeline.py {args.folder} --strategies "
               f"{args.strategies} --iterations {args.iterations} --warmup {args.warmup}")
    text = table(steps, command)
    (args.out / "timeline.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
