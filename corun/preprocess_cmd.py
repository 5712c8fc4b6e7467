"""`corun preprocess`: run a pipeline over Criteo-format or synthetic data, checked."""

from __future__ import annotations

import argparse
import io
import sys
import time

import numpy as np

from corun.out_folder import out_file
from corun.spec import SpecError
from corun.spec.serde import write_atomic
from corun.workload import resolve_pipeline, seed


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pipeline", default="kaggle", help="pipeline preset or file")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--input", help="Criteo-format TSV (Kaggle train.txt, Terabyte day_N)")
    src.add_argument("--synthetic", type=int, metavar="ROWS", help="generated rows")
    p.add_argument("--engine", default="numba", choices=["numpy", "numba", "cuda"],
                   help="what runs the operators: the NumPy reference, Numba on the CPU, "
                   "or the fused kernels on a CUDA GPU (default: %(default)s)")
    p.add_argument("--chunk-rows", type=int, default=65536,
                   help="rows read and preprocessed at a time (default: %(default)s)")
    p.add_argument("--skip-bad-lines", action="store_true",
                   help="count and skip malformed lines instead of stopping")
    p.add_argument("--check-rows", type=int, default=1000,
                   help="rows of every chunk recomputed by the reference (0: none)")
    p.add_argument("--seed", type=seed, default=0,
                   help="seed of the --synthetic rows and of the rows checked")
    p.add_argument("-o", "--output", type=out_file, help="write the trainer inputs (.npz) here")
    p.add_argument("--quiet", action="store_true", help="no per-chunk lines")


def _chunks(args, pipeline, stats):
    from corun.backend.data import inputs_of, read_criteo, synthetic_inputs

    if args.input:
        for chunk in read_criteo(args.input, args.chunk_rows, args.skip_bad_lines, stats):
            yield inputs_of(chunk, pipeline)
        return
    rng = np.random.default_rng(args.seed)
    left = args.synthetic
    while left > 0:
        n = min(left, args.chunk_rows)
        yield synthetic_inputs(pipeline, n, rng)
        left -= n


def _engine(name: str, pipeline):
    """A function chunk -> outputs for the chosen engine."""
    from corun.backend.fusion import FusedGroup
    from corun.backend.runner import PipelineProgram, run_numpy

    if name == "numpy":
        return lambda inputs: run_numpy(pipeline, inputs)
    groups = [FusedGroup(pipeline, pipeline.order, "all")]
    if name == "numba":
        return lambda inputs: PipelineProgram(pipeline, groups, inputs).run_cpu()
    from numba import config, cuda

    if config.ENABLE_CUDASIM:  # the CUDA simulator: a small launch, host pools
        small = [FusedGroup(pipeline, pipeline.order, "all", blocks=2, threads_per_block=32)]
        return lambda inputs: PipelineProgram(pipeline, small, inputs).run_cuda_simulated()
    if not cuda.is_available():
        raise SpecError("--engine", "cuda", "numpy or numba: no CUDA GPU is available here")

    def run(inputs):
        dev = PipelineProgram(pipeline, groups, inputs).to_device()
        dev.run()
        return dev.outputs()

    return run


def run(args: argparse.Namespace) -> int:
    from corun.backend.check import MismatchError, check_sample
    from corun.backend.data import DataError, ReadStats
    from corun.backend.runner import trainer_inputs

    if args.chunk_rows < 1:
        raise SpecError("--chunk-rows", args.chunk_rows, "an integer >= 1")
    if args.synthetic is not None and args.synthetic < 1:
        raise SpecError("--synthetic", args.synthetic, "an integer >= 1")
    if args.check_rows < 0:
        raise SpecError("--check-rows", args.check_rows, "an integer >= 0")
    pipeline = resolve_pipeline(args.pipeline)
    engine = _engine(args.engine, pipeline)
    stats = ReadStats()
    rng = np.random.default_rng(args.seed + 1)
    rows = checked = chunks = 0
    dense, sparse = [], {}
    t0 = time.perf_counter()
    try:
        for inputs in _chunks(args, pipeline, stats):
            out = engine(inputs)
            if args.check_rows:
                checked += check_sample(pipeline, inputs, out, rng, args.check_rows)
            if args.output:
                ti = trainer_inputs(pipeline, out)
                dense.append(ti.dense)
                for t, c in ti.sparse.items():
                    sparse.setdefault(t, []).append(c)
            chunks += 1
            rows += next(iter(inputs.values())).rows
            if not args.quiet:
                print(f"\rchunk {chunks}: {rows:,} rows", end="", file=sys.stderr, flush=True)
    except DataError as e:
        raise SpecError("--input", str(e), "well-formed Criteo lines (or --skip-bad-lines)") \
            from None
    except MismatchError as e:
        print(f"\ncorun: error: output differs from the reference: {e}", file=sys.stderr)
        return 3
    seconds = time.perf_counter() - t0
    if not args.quiet:
        print(file=sys.stderr)
    print(f"{pipeline.name}: {rows:,} rows in {chunks} chunk(s), engine {args.engine}, "
          f"{seconds:.2f} s ({rows / max(seconds, 1e-9):,.0f} rows/s incl. checks); "
          f"{checked:,} rows checked against the reference, all equal")
    if stats.skipped:
        print(f"skipped {stats.skipped} malformed line(s) of {stats.lines}; first: "
              f"{stats.first_errors[0]}")
    if args.output:
        _save(args.output, pipeline, dense, sparse)
        print(f"wrote {args.output}")
    return 0


def _save(path: str, pipeline, dense, sparse) -> None:
    arrays = {"dense": np.concatenate(dense) if dense else np.zeros((0, 0), np.float32)}
    for table, parts in sparse.items():
        values = np.concatenate([p.values for p in parts])
        offsets = [np.zeros(1, np.int64)]
        base = 0
        for p in parts:
            offsets.append(p.offsets[1:] + base)
            base += int(p.offsets[-1])
        arrays[f"{table}.values"] = values
        arrays[f"{table}.offsets"] = np.concatenate(offsets)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    write_atomic(path, buf.getvalue())
