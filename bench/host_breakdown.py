"""Where the host thread's time goes in an executed step, call by call.

The heavy case at batch 8192 is paced by the one host thread that launches the training
step and the preprocessing: a plan's step took 0.4-0.6 ms more host time than ideal's
(bench/results/raw/execute_heavy_chosen_b8192.json), more than its fused kernel's launch
(bench/results/raw/host_split_h200_run3.json). This wraps the executor's host-side calls
with a clock and runs bench/execute_gpu.py's cases, then reports each call's median host
time and how often a step makes it (inclusive: a call's time includes the wrapped calls
it makes).

On the H200:  python bench/host_breakdown.py --out $OUT -- --matrix heavy --batches 8192 \
                  --strategies ideal,gpu-sequential,corun-2 --iterations 200
Locally:      python bench/host_breakdown.py --out /tmp/x -- --matrix heavy --dry-run \
                  --batches 8192 --strategies corun
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backend import (  # noqa: E402
    batch_graphs,
    device_assembly,
    executor,
    lane,
    launch,
    runner,
    streams,
    trainer,
)
from bench import execute_gpu  # noqa: E402
from spec.serde import write_atomic  # noqa: E402

CALLS = [(executor.Executor, n) for n in ("_stage", "_release", "_launch", "_assemble",
                                          "_finish", "_check")] + [
    (lane.Lane, n) for n in ("stage", "launch", "assemble", "finish", "check")] + [
    (runner.DeviceState, "launch"), (runner, "scan_with")] + [
    (launch.BoundLaunch, "__call__"),
    (device_assembly.DeviceAssembler, "start"), (device_assembly.DeviceAssembler, "batch"),
    (batch_graphs.WorkGraphs, "run"), (batch_graphs._Graph, "launch"),
    (streams.Streams, "event"), (streams.Streams, "wait"), (streams.Streams, "sync"),
    (trainer.Trainer, "step")]
"""The host calls timed: (class or module, method or function). The list scan is
`runner.scan_with` (recorded as DeviceState._scan in the breakdowns committed so far)."""


def wrap_all(times: dict[str, list[float]]) -> None:
    """Replace every method (or module function) in CALLS by one that appends its host
    ms to `times`, under "Class.method" (or "module.function")."""
    for cls, name in CALLS:
        key = f"{cls.__name__.rsplit('.', 1)[-1]}.{name}"
        times[key] = []
        original = getattr(cls, name)

        def timed(*a, _f=original, _out=times[key], **k):
            t0 = time.perf_counter()
            try:
                return _f(*a, **k)
            finally:
                _out.append((time.perf_counter() - t0) * 1e3)

        functools.update_wrapper(timed, original)
        setattr(cls, name, timed)


def summary(times: dict[str, list[float]], steps: int) -> dict[str, dict]:
    """Per call: median ms, calls per step, ms per step (calls x mean)."""
    return {k: {"median_ms": round(statistics.median(v), 4),
                "calls_per_step": round(len(v) / steps, 2),
                "ms_per_step": round(sum(v) / steps, 4)}
            for k, v in times.items() if v}


def wrapper_args(doc: str, argv: list[str] | None) -> tuple[Path, list[str]]:
    """(--out, bench/execute_gpu.py's arguments after --) of a script that runs
    execute_gpu's cases with something wrapped around them."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("execute_args", nargs=argparse.REMAINDER,
                    help="after --: bench/execute_gpu.py's arguments")
    args = ap.parse_args(argv)
    return Path(args.out), [a for a in args.execute_args if a != "--"]


def main(argv: list[str] | None = None) -> int:
    out, rest = wrapper_args(__doc__, argv)
    times: dict[str, list[float]] = {}
    wrap_all(times)
    results = []
    run_case = execute_gpu.run_case

    def measured(pipe_name, batch, label, a, *more):
        for v in times.values():
            v.clear()
        out = run_case(pipe_name, batch, label, a, *more)
        steps = a.iterations + a.warmup
        results.append({"pipeline": pipe_name, "batch": batch, "strategy": label,
                        "iteration_median_ms": out["iteration"]["median_ms"],
                        "calls": summary(times, steps)})
        print(f"--- {pipe_name} b{batch} {label}: host ms per step (median ms x calls)")
        for k, v in sorted(results[-1]["calls"].items(), key=lambda kv: -kv[1]["ms_per_step"]):
            print(f"  {k:34s} {v['ms_per_step']:7.3f}  ({v['median_ms']:.4f} x "
                  f"{v['calls_per_step']})", flush=True)
        return out

    execute_gpu.run_case = measured
    rc = execute_gpu.main(rest + ["--out", str(out / "execute")])
    write_atomic(out / "host_breakdown.json", json.dumps(
        {"command": " ".join(["python", *sys.argv]), "results": results}, indent=1))
    print(f"wrote {out / 'host_breakdown.json'}")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
