"""Which of the GPU's resources the heavy preprocessing kernel contends for beside
training: issue 6 asks where the heavy case's remaining gap goes.

A training step, alone and beside co-runners of about equal time alone, each released at
the opening of one training stage as the profiler and the executor release kernels:
  fused    the pipeline's whole-pipeline kernel at gpu-overlap's launch
  fused-rN the same compiled with at most N registers a thread (--register-caps): more
           of its warps fit on an SM
  alu      sigrid_hash chained in registers at the same launch: arithmetic like the fused
           kernel's without its memory traffic (one int64 written per thread)
  alu-thin the same on one block per SM, fewer of the SMs' warp slots taken
  stream   the fused kernel's bytes without its arithmetic (its raw ids read, two ids
           written for each), passes repeated until it takes the fused kernel's time
  stream1  one pass of `stream`: the fused kernel's bytes once
If `alu` hides where `stream` costs about what `fused` does, the memory system is what
they share; if `alu` costs as much, the SMs are (--launch-once lets Nsight Compute read
each one's counters alone). Every step is enqueued behind a GPU spin
(backend/profile.py), so the events time the GPU, not the host. A step's span runs from
its first stage's opening to the later of its end and the kernel's; the stretch is the
span less the plain step's (medians of --reps steps).

On the H200: python bench/contention_probe.py --out $OUT
             ncu --clock-control none ... python bench/contention_probe.py --out $OUT
               --launch-once 417,5   (bench/kernel_ab_session.sh PART=ncu)
Locally:     python bench/contention_probe.py --dry-run --out /tmp/x
             (CPU and the CUDA simulator, tables cut to 2,000 rows: checks the script)
Writes contention_<model>.json atomically once every batch has been measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

if "--dry-run" in sys.argv:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402

from backend.executor import versions  # noqa: E402
from backend.profile import KernelSpec, Profiler  # noqa: E402
from backend.scalar import division_magic, sigrid_hash_magic  # noqa: E402
from backend.trainer import TRAINING_STAGES  # noqa: E402
from corun.workload import (  # noqa: E402
    resolve_hardware,
    resolve_model,
    resolve_pipeline,
    shrink_tables,
)
from sim.strategy import default_launch  # noqa: E402
from spec import Shape  # noqa: E402
from spec.model import HEAVY_TABLE_ROWS  # noqa: E402
from spec.serde import write_atomic  # noqa: E402

ALU_MAX_VALUE = HEAVY_TABLE_ROWS
"""The modulus heavy's hashes reduce by."""
CALIBRATION_START = {"alu": 16, "stream": 1}
"""First guess of iterations (alu) and passes (stream) before scaling to the target
(synthetic kernels are timed alone at --reps launches, scaled once, timed again)."""


@cuda.jit
def alu_kernel(out, iters, max_value, magic, shift):
    """Each thread hashes its index `iters` times in a chain and writes the result."""
    i = cuda.grid(1)
    if i < out.size:
        x = np.int64(i)
        for _ in range(iters):
            x = sigrid_hash_magic(x, 0, max_value, magic, shift)
        out[i] = x


@cuda.jit
def stream_kernel(src, dst, passes):
    """`passes` grid-stride sweeps: each reads src[i] and writes two ids for it."""
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for p in range(passes):
        i = start
        while i < src.size:
            v = src[i] + p
            dst[2 * i] = v
            dst[2 * i + 1] = v + 1
            i += stride


def alu_reference(n: int, iters: int, max_value: int) -> np.ndarray:
    """alu_kernel's output, computed on the host."""
    magic, shift = division_magic(max_value)
    out = np.empty(n, np.int64)
    for i in range(n):
        x = np.int64(i)
        for _ in range(iters):
            x = sigrid_hash_magic(x, 0, max_value, magic, shift)
        out[i] = x
    return out


def stream_reference(src: np.ndarray, passes: int) -> np.ndarray:
    """stream_kernel's output: the last pass's values."""
    dst = np.empty(2 * src.size, np.int64)
    dst[0::2] = src + passes - 1
    dst[1::2] = src + passes
    return dst


class Synthetic:
    """A synthetic co-runner on the profiler's preprocessing stream, with the knob
    (alu: iterations, stream: passes) that sets its time alone."""

    def __init__(self, kind: str, prof: Profiler, blocks: int, threads: int,
                 raw_ids: int) -> None:
        self.kind, self.prof, self.blocks, self.threads = kind, prof, blocks, threads
        self.knob = CALIBRATION_START[kind]
        self.magic, self.shift = division_magic(ALU_MAX_VALUE)
        if kind == "alu":
            self.out = self._array(np.zeros(blocks * threads, np.int64))
        else:
            ids = np.random.default_rng(0).integers(0, 1 << 40, raw_ids, dtype=np.int64)
            self.src = self._array(ids)
            self.dst = self._array(np.zeros(2 * raw_ids, np.int64))

    def _array(self, host: np.ndarray):
        return cuda.to_device(host) if self.prof.S.cuda else host

    def launch(self) -> None:
        S = self.prof.S
        stream = S.numba(S.pre) if S.cuda else 0
        if self.kind == "alu":
            alu_kernel[self.blocks, self.threads, stream](
                self.out, self.knob, ALU_MAX_VALUE, self.magic, self.shift)
        else:
            stream_kernel[self.blocks, self.threads, stream](self.src, self.dst, self.knob)

    def _host(self, a, n: int) -> np.ndarray:
        """The first `n` values of array `a`, on the host (only those are copied)."""
        return a[:n].copy_to_host() if self.prof.S.cuda else a[:n]

    def output_matches(self, first: int = 64) -> bool:
        """Whether the first outputs equal the host reference's (after any launch)."""
        if self.kind == "alu":
            got = self._host(self.out, first)
            want = alu_reference(got.size, self.knob, ALU_MAX_VALUE)
        else:
            got = self._host(self.dst, first)
            want = stream_reference(self._host(self.src, first // 2), self.knob)
        return bool(np.array_equal(got, want))

    def calibrate(self, target_ms: float, reps: int) -> float:
        """Scale the knob so the kernel alone takes about `target_ms` (at least one
        iteration or pass); returns its time alone then."""
        self.launch()
        alone = self.prof.kernel_alone_ms(self.launch, reps)
        if alone > 0:
            self.knob = max(1, round(self.knob * target_ms / alone))
        self.launch()
        return self.prof.kernel_alone_ms(self.launch, reps)


def measure(prof: Profiler, launch: Callable[[], None] | None, reps: int,
            stages=TRAINING_STAGES) -> dict:
    """Median span, kernel time and each stage's time per release stage of `stages` (one
    entry, "plain", without a kernel)."""
    releases = [None] if launch is None else list(stages)
    out = {}
    for stage in releases:
        steps = [prof.step(stage, launch) for _ in range(reps + 1)][1:]
        out[stage.value if stage else "plain"] = {
            "span_ms": statistics.median(t.span_ms for t in steps),
            "kernel_ms": statistics.median(t.kernel_ms for t in steps),
            "stage_ms": {st.value: statistics.median(t.stage_ms.get(st, 0.0) for t in steps)
                         for st in TRAINING_STAGES},
            "host_ahead": sum(t.host_ahead for t in steps) / reps,
        }
    return out


def probe_setup(model_name: str, pipeline_name: str, batch: int, dry_run: bool, say):
    """(hardware, model, pipeline, profiler, blocks, threads) for one batch: the H200, tables
    cut to 2,000 rows and a tiny launch on a dry run (the CPU and the CUDA simulator)."""
    hw = resolve_hardware("h200", 1, None, None)
    model, pipeline = resolve_model(model_name, batch), resolve_pipeline(pipeline_name)
    if dry_run:
        model, pipeline = shrink_tables(model, pipeline, 2000)
    prof = Profiler(model, pipeline, hw, "cuda" if not dry_run else "cpu", say=say)
    blocks, threads = (4, 32) if dry_run else default_launch(hw)
    return hw, model, pipeline, prof, blocks, threads


def whole_pipeline(pipeline, blocks: int, threads: int) -> KernelSpec:
    """Every output of the pipeline in one fused kernel, as gpu-overlap launches it."""
    outputs = list(pipeline.dense_outputs) + [o.node for o in pipeline.sparse_outputs]
    return KernelSpec(pipeline, tuple(outputs), blocks, threads)


def raw_id_count(pipeline, rows: int) -> int:
    """The raw list ids of `rows` rows (the synthetic stream's size)."""
    return int(sum(rows * c.mean_length for c in pipeline.inputs if c.shape is Shape.LIST))


def add_stretch(by_release: dict, plain_span_ms: float, alone_ms: float) -> None:
    """Each release's stretch of the step over the plain span, and its share of the
    co-runner's time alone (None for a zero time)."""
    for row in by_release.values():
        row["stretch_ms"] = row["span_ms"] - plain_span_ms
        row["stretch_per_alone"] = row["stretch_ms"] / alone_ms if alone_ms > 0 else None


def probe_record(script: str, argv: list[str] | None, args, batches: list[dict],
                 t0: float) -> dict:
    """A probe run's JSON: its command, workload, versions, commit and batches."""
    return {"command": f"python bench/{script} " + " ".join(
        argv if argv is not None else sys.argv[1:]),
        "model": args.model, "pipeline": args.pipeline, "versions": versions(),
        "commit": os.environ.get("CORUN_GIT_COMMIT", ""),
        "dry_run": getattr(args, "dry_run", False),  # a GPU-only probe has none
        "batches": batches, "seconds": time.time() - t0}


def probe_batch(model_name: str, pipeline_name: str, batch: int, reps: int,
                dry_run: bool, say, register_caps: tuple[int, ...] = ()) -> dict:
    """One batch size: the co-runners built and timed alone (synthetic ones scaled to
    the fused kernel's time), the plain step, then every co-runner at every release."""
    hw, model, pipeline, prof, blocks, threads = probe_setup(
        model_name, pipeline_name, batch, dry_run, say)
    fused_spec = whole_pipeline(pipeline, blocks, threads)
    group, fused = prof.launcher(fused_spec)
    fused()  # compile and warm
    fused_alone = prof.kernel_alone_ms(fused, reps)
    raw_ids = raw_id_count(pipeline, model.batch_per_gpu)
    kernels: dict[str, dict] = {"fused": {"alone_ms": fused_alone, "launch": fused,
                                          "blocks": group.grid(), "threads": threads,
                                          "registers": group.registers_per_thread()}}
    for cap in register_caps:
        capped, launch = prof.launcher(replace(fused_spec, max_registers=cap))
        launch()  # compile and warm
        kernels[f"fused-r{cap}"] = {"alone_ms": prof.kernel_alone_ms(launch, reps),
                                    "launch": launch, "blocks": capped.grid(),
                                    "threads": threads,
                                    "registers": capped.registers_per_thread()}
    if dry_run:
        raw_ids = min(raw_ids, 512)
    thin = 1 if dry_run else hw.gpu.sm_count
    for name, kind, n_blocks in (("alu", "alu", blocks), ("alu-thin", "alu", thin),
                                 ("stream", "stream", blocks)):
        syn = Synthetic(kind, prof, n_blocks, threads, raw_ids)
        alone = syn.calibrate(fused_alone, reps) if not dry_run else 0.0
        kernels[name] = {"alone_ms": alone, "launch": syn.launch, "knob": syn.knob,
                         "blocks": n_blocks, "threads": threads, "synthetic": syn}
    one = Synthetic("stream", prof, blocks, threads, raw_ids)
    one.launch()
    kernels["stream1"] = {"alone_ms": prof.kernel_alone_ms(one.launch, reps),
                          "launch": one.launch, "knob": 1, "blocks": blocks,
                          "threads": threads, "synthetic": one}
    say(f"batch {batch}: alone " + ", ".join(f"{k} {v['alone_ms']:.3f} ms"
                                             for k, v in kernels.items()))
    plain = measure(prof, None, reps)["plain"]
    result = {"batch": batch, "raw_ids": raw_ids, "plain": plain, "kernels": {}}
    for name, k in kernels.items():
        by_stage = measure(prof, k["launch"], reps)
        add_stretch(by_stage, plain["span_ms"], k["alone_ms"])
        result["kernels"][name] = {key: v for key, v in k.items()
                                   if key not in ("launch", "synthetic")}
        result["kernels"][name]["by_release"] = by_stage
        if "synthetic" in k:
            result["kernels"][name]["output_matches_reference"] = \
                k["synthetic"].output_matches()
        best = min(by_stage, key=lambda s: by_stage[s]["stretch_ms"])
        say(f"  {name}: alone {k['alone_ms']:.3f} ms; stretch at emb_fwd "
            f"{by_stage['emb_fwd']['stretch_ms']:+.3f} ms, least at {best} "
            f"{by_stage[best]['stretch_ms']:+.3f} ms (plain span {plain['span_ms']:.3f})")
    return result


def launch_once(model_name: str, pipeline_name: str, batch: int, alu_iters: int,
                stream_passes: int) -> None:
    """The fused kernel, `alu` and `stream` launched once each and nothing else timed:
    for a hardware-counter profiler (ncu) to read them alone, without replaying the
    probe's hundreds of launches."""
    hw = resolve_hardware("h200", 1, None, None)
    model, pipeline = resolve_model(model_name, batch), resolve_pipeline(pipeline_name)
    prof = Profiler(model, pipeline, hw, "cuda")
    blocks, threads = default_launch(hw)
    _, fused = prof.launcher(whole_pipeline(pipeline, blocks, threads))
    raw_ids = raw_id_count(pipeline, batch)
    alu = Synthetic("alu", prof, blocks, threads, raw_ids)
    stream = Synthetic("stream", prof, blocks, threads, raw_ids)
    alu.knob, stream.knob = alu_iters, stream_passes
    for launch in (fused, alu.launch, stream.launch):
        launch()
    cuda.synchronize()


def int_list(text: str, flag: str, lo: int, hi: int) -> tuple[int, ...]:
    """Comma-separated integers in [lo, hi], or an exit naming `flag` and the range."""
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        values = ()
    if not values or any(not lo <= v <= hi for v in values):
        raise SystemExit(f"{flag}: {text!r} is not a comma-separated list of integers "
                         f"in [{lo}, {hi}]")
    return values


def heavy_probe_parser(doc: str, batch: bool = True) -> argparse.ArgumentParser:
    """A probe's command line with the heavy case's workload: --model (heavy-fused),
    --pipeline (heavy) and, with `batch`, --batch (16384); a probe of several batches
    adds its own --batches."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="heavy-fused")
    ap.add_argument("--pipeline", default="heavy")
    if batch:
        ap.add_argument("--batch", type=int, default=16384)
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = heavy_probe_parser(__doc__, batch=False)
    ap.add_argument("--batches", default="16384,8192")
    ap.add_argument("--reps", type=int, default=12, help="steps per release stage (>= 1)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--register-caps", default="",
                    help="also the fused kernel compiled with at most this many registers "
                    "a thread, e.g. 32,40 (co-runners fused-r32, ...)")
    ap.add_argument("--launch-once", metavar="ALU_ITERS,STREAM_PASSES",
                    help="launch the fused kernel, alu and stream once each at the first "
                    "batch size and stop (for ncu); e.g. 417,5, run 1's knobs at 16384")
    args = ap.parse_args(argv)
    batches = int_list(args.batches, "--batches", 1, 1 << 24)
    caps = int_list(args.register_caps, "--register-caps", 16, 255) \
        if args.register_caps else ()
    if args.launch_once:
        knobs = int_list(args.launch_once, "--launch-once", 1, 1 << 20)
        if len(knobs) != 2:
            raise SystemExit(f"--launch-once: {args.launch_once} is not two integers "
                             "ALU_ITERS,STREAM_PASSES")
        launch_once(args.model, args.pipeline, batches[0], *knobs)
        return 0
    if args.reps < 1:
        raise SystemExit(f"--reps: {args.reps} is not an integer >= 1")
    if not args.dry_run and not cuda.is_available():
        raise SystemExit("no CUDA GPU: run on the H200, or pass --dry-run")
    say = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731
    t0 = time.time()
    if args.dry_run:
        batches, args.reps = [64], 1
    results = probe_record("contention_probe.py", argv, args, [
        probe_batch(args.model, args.pipeline, b, args.reps, args.dry_run, say, caps)
        for b in batches], t0)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / f"contention_{args.model}.json", json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
