"""Host time against GPU time of one training step, and of one fused-kernel launch.

The executor's H200 runs lost throughput to the host thread (bench/results/
execute_h200.md): each step's Python launches and the executor's own host work share
one thread. To model that, the two times must be measured apart. Method: a spin kernel
(`torch.cuda._sleep`) keeps the GPU busy while the host launches a whole step, so the
host time is the launching alone (no queue throttling) and the CUDA events around the
step, which start only when the spin ends, time the GPU alone. A step that synchronises
inside (row-wise Adagrad's coalesce) shows a host time as long as the spin: it is
flagged, not reported as launch cost.

Also, in the same run, what the executor's two host savings buy (issue 6): a fused
kernel launched with its arguments packed once (backend/launch.py: by the driver, and
through cuda.core) against Numba's own launch, and a batch assembled and checked by one
kernel (backend/device_assembly.py) against the PyTorch Assembler + `differs`; both
assemblies are compared for equality.

On the H200:  python bench/host_split.py --out $OUT
Locally:      python bench/host_split.py --dry-run     (CPU, tiny tables: host clock only)
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import spec  # noqa: E402
from backend import driver  # noqa: E402
from backend.assembly import Assembler, differs, output_map  # noqa: E402
from backend.data import synthetic_inputs  # noqa: E402
from backend.device_assembly import DeviceAssembler  # noqa: E402
from backend.fusion import FusedGroup  # noqa: E402
from backend.reference import run_reference  # noqa: E402
from backend.runner import PipelineProgram, trainer_batch  # noqa: E402
from backend.trainer import Trainer  # noqa: E402
from corun.workload import shrink_tables  # noqa: E402
from sim.simulate import git_commit  # noqa: E402
from spec.serde import write_atomic  # noqa: E402

CASES = [("kaggle", 4096), ("kaggle", 8192), ("terabyte", 8192), ("wide-2x", 8192),
         ("wide-4x", 8192), ("heavy", 4096), ("multihot", 4096)]
SPIN_CYCLES = 60_000_000  # ~30 ms at the H200's ~1.98 GHz: longer than any launch


def split_ms(fn, device, reps: int) -> dict:
    """Median host and GPU milliseconds of `fn()` launched behind a spin."""
    cuda = device.type == "cuda"
    host, gpu, synced = [], [], 0
    for _ in range(reps):
        if cuda:
            torch.cuda.synchronize()
            torch.cuda._sleep(SPIN_CYCLES)
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        if cuda:
            b.record()
            spin_left = not a.query()
            torch.cuda.synchronize()
            gpu.append(a.elapsed_time(b))
            synced += not spin_left
        host.append((t1 - t0) * 1e3)
    return {"host_ms": statistics.median(host),
            "gpu_ms": statistics.median(gpu) if gpu else None,
            "synchronised_reps": synced}


def assembly_ms(pipe, model, program, state, reps: int) -> dict:
    """Host ms of assembling and checking one batch, the PyTorch way and by one kernel
    (each half behind a spin: the enqueue before the id counts are read, and after),
    and whether both built the same batch with no difference flagged."""
    omap = output_map(program.layout, pipe, model)
    labels = torch.zeros(omap.rows, device="cuda")
    asm = Assembler(omap, state.views)
    want = asm.batch(asm.offsets(), labels)
    refs = [(want.dense.clone(), want.ids.clone(), want.offsets.clone())]
    flag = torch.zeros(1, dtype=torch.bool, pin_memory=True)
    kern = DeviceAssembler(omap, state.pools, refs, torch.device("cuda"))
    got: dict = {}

    def timed(first, second) -> float:
        torch.cuda.synchronize()
        ms = 0.0
        for part in (first, second):
            torch.cuda._sleep(SPIN_CYCLES)
            t0 = time.perf_counter()
            got["out"] = part()
            ms += (time.perf_counter() - t0) * 1e3
            torch.cuda.synchronize()
        return ms

    def torch_second():
        b = asm.batch(got["out"], labels)
        flag.copy_(differs(b, refs[0]), non_blocking=True)
        return b

    out = {}
    for name, first, second in (
            ("assembly_torch", asm.offsets, torch_second),
            ("assembly_kernel", lambda: kern.start(0, 0), kern.batch)):
        timed(first, second)  # warm: compiles the kernel
        out[name] = {"host_ms": statistics.median(timed(first, second) for _ in range(reps))}
    batch, _, bad = got["out"]
    out["assembly_equal"] = bool(not bad and not flag[0] and torch.equal(batch.ids, want.ids)
                                 and torch.equal(batch.offsets, want.offsets) and torch.equal(
                                     batch.dense.view(torch.int32), want.dense.view(torch.int32)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=os.environ.get("OUT", "out/host_split"))
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--only", help="comma-separated pipelines to run (default: all)")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    device = torch.device("cpu" if args.dry_run else "cuda")
    rng = np.random.default_rng(0)
    results = []
    only = set(args.only.split(",")) if args.only else None
    known = {name for name, _ in CASES}
    if only and not only <= known:
        ap.error(f"--only: {args.only!r} is not a comma-separated list of "
                 f"{', '.join(sorted(known))}")
    for pipe_name, batch in CASES:
        if only and pipe_name not in only:
            continue
        model = replace(spec.model_preset(spec.DEFAULT_MODEL_FOR[pipe_name]),
                        batch_per_gpu=64 if args.dry_run else batch)
        pipe = spec.pipeline_preset(pipe_name)
        if args.dry_run:
            model, pipe = shrink_tables(model, pipe, 2000)
        rows = model.batch_per_gpu
        raw = synthetic_inputs(pipe, rows, rng)
        b = trainer_batch(pipe, model, run_reference(pipe, raw),
                          np.zeros(rows, np.float32)).to(device)
        trainer = Trainer(model, device)
        for _ in range(5):
            trainer.step(b)
        step = split_ms(functools.partial(trainer.step, b), device, args.reps)
        group = FusedGroup(pipe, pipe.order, "all", 1056, 256)
        program = PipelineProgram(pipe, [group], raw)
        extra = {}
        if device.type == "cuda":
            state = program.to_device()
            state.launch(0)
            launch = split_ms(functools.partial(state.launch, 0), device, args.reps)
            extra["fused_launch_driver"] = all(b.driver for b in state._launches.values())
            driver.use = False
            extra["fused_launch_through_core"] = split_ms(functools.partial(
                state.launch, 0), device, args.reps)
            driver.use = True
            extra["fused_launch_through_numba"] = split_ms(functools.partial(
                state.launch, 0, through_numba=True), device, args.reps)
            extra.update(assembly_ms(pipe, model, program, state, args.reps))
        else:
            launch = split_ms(functools.partial(program.launch_on_host, 0, "cpu"), device,
                              args.reps)
        results.append({"pipeline": pipe_name, "model": model.name, "batch": rows,
                        "step": step, "fused_launch": launch, **extra})
        print(json.dumps(results[-1]), flush=True)
        del trainer
        if device.type == "cuda":
            torch.cuda.empty_cache()
    out = Path(args.out)
    write_atomic(out / "host_split.json", json.dumps(
        {"command": " ".join(["python", *sys.argv]), "git_commit": git_commit(),
         "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
         "torch": torch.__version__, "results": results}, indent=1))
    print(f"wrote {out / 'host_split.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
