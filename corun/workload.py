"""Resolve what the user named (presets, files, config) into spec values."""

from __future__ import annotations

import argparse
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from corun.spec import (
    Hardware,
    Model,
    Pipeline,
    Plan,
    SpecError,
    hardware_preset,
    model_preset,
    pipeline_preset,
)
from corun.spec.serde import from_jsonable, loads, read_document

CONFIG_KEYS = ("hardware", "gpus", "interconnect", "host_cores", "model", "pipeline", "batch",
               "strategy", "plan", "iterations", "warmup", "seed", "jitter", "embedding_comm",
               "cuda_graphs")


def require_seconds(field: str, value: float) -> None:
    """A command's time budget (--time-limit, --budget-s): a SpecError naming `field`
    unless it is a finite number above 0."""
    if not (math.isfinite(value) and value > 0):
        raise SpecError(field, value, "a finite number of seconds > 0")


def require_run_length(args: argparse.Namespace) -> None:
    """--iterations and --distinct-batches at least 1, --warmup at least 0, where the
    command has them, checked before any work (tune checks them before its folder)."""
    for name, lo in (("iterations", 1), ("warmup", 0), ("distinct_batches", 1)):
        value = getattr(args, name, None)
        if value is not None and value < lo:
            raise SpecError(f"--{name.replace('_', '-')}", value, f"an integer >= {lo}")


SEED_MAX = 2**32 - 1
"""numpy's seeds are unsigned 32-bit integers."""


HARDWARE_HELP = "GPU kind: a preset (v100, a100, h100, h200; `corun presets`) or a file"
GPUS_HELP = "GPUs of one node, data parallel"
INTERCONNECT_HELP = ("the link between the node's GPUs: a preset (nvlink4, pcie5, ...; "
                     "default: the hardware's own)")
HOST_CORES_HELP = "host CPU cores for preprocessing workers (default: 16 a GPU)"
MODEL_HELP = "DLRM model: a preset (`corun presets`) or a file"
PIPELINE_HELP = "preprocessing pipeline: a preset (`corun presets`) or a file"
BATCH_HELP = "samples a GPU trains on each step (default: the model's)"
SIM_SEED_HELP = "seed of the simulator's random draws (--jitter): one seed, one result"
EMBEDDING_COMM_HELP = ("how embedding rows move between GPUs: all-to-all collectives, or "
                       "one-sided puts issued during the lookup (pgas)")
QUIET_HELP = "no progress lines"


def seed(text: str) -> int:
    """argparse type of --seed: an integer in [0, SEED_MAX], else an error naming it."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"--seed = {text!r}: an integer in [0, {SEED_MAX}]")
    return value


def int_list(text: str, field: str) -> list[int]:
    """A comma-separated list of integers >= 1 (GPU counts, batch sizes, block counts), or
    a SpecError naming `field`."""
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        raise SpecError(field, text, "a comma-separated list of integers") from None
    if any(v < 1 for v in values):
        raise SpecError(field, text, "integers >= 1")
    return values


def read_config(path: str) -> dict[str, Any]:
    """A YAML/JSON mapping of the CLI's options; unknown keys are errors."""
    doc = read_document(path)
    if not isinstance(doc, dict):
        raise SpecError(path, type(doc).__name__, "a mapping of options")
    for k in doc:
        if k not in CONFIG_KEYS:
            raise SpecError(f"{path}: {k}", doc[k], f"one of {', '.join(CONFIG_KEYS)}")
    return doc


def _spec_value(cls: type, value: Any, preset: Any, what: str,
                prepare: Any = None) -> Any:
    """A preset name, a path to a saved spec file, or an inline mapping. `prepare(doc,
    source)` sees the document first (source: its path, '' inline) and gives the
    document to build from, or a `cls` value made from another format."""
    if isinstance(value, dict):
        doc, source = value, ""
    elif isinstance(value, str) and Path(value).suffix in (".json", ".yaml", ".yml"):
        doc, source = read_document(value), value
    else:
        return preset(value)
    if prepare is not None:
        doc = prepare(doc, source)
        if isinstance(doc, cls):
            return doc
    return loads(cls, doc, source) if source else from_jsonable(cls, doc, what)


def _model_value(value: Any) -> Model:
    """A model preset, corun's model file or mapping, a TorchRec-style model, MLPerf's
    torchrec_dlrm flags as a document, or its command line in a .sh/.txt/.args file
    (spec/formats.py)."""
    from corun.spec.formats import (
        MLPERF_SUFFIXES,
        mlperf_flags,
        model_document,
        model_from_mlperf,
    )

    if isinstance(value, str) and Path(value).suffix in MLPERF_SUFFIXES:
        try:
            text = Path(value).read_text()
        except OSError as e:
            raise SpecError("model", value, f"a readable file ({e.strerror})") from None
        return model_from_mlperf(mlperf_flags(text), Path(value).stem)
    return _spec_value(Model, value, model_preset, "model",
                       lambda doc, source: model_document(doc, source) or doc)


def resolve_hardware(name: Any, gpus: int, interconnect: str | None,
                     host_cores: int | None) -> Hardware:
    if isinstance(name, str) and Path(name).suffix not in (".json", ".yaml", ".yml"):
        return hardware_preset(name, gpus, host_cores, interconnect)
    hw = _spec_value(Hardware, name, None, "hardware")
    return hw.with_gpus(gpus) if gpus != hw.gpu_count else hw


def add_no_traces_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-traces", action="store_true",
                   help="with --out: no trace-*.json timelines, and an earlier run's "
                        "for the strategies written removed (`corun simulate --plan P "
                        "--strategy plan --trace T` draws one when wanted)")


def add_cuda_graphs_argument(p: argparse.ArgumentParser) -> None:
    """`--cuda-graphs`, as plan, simulate and execute take it."""
    p.add_argument("--cuda-graphs", action="store_true",
                   help="the trainer replays each training stage as a CUDA graph (one GPU; "
                   "SGD; a fixed id count per batch unless the model has the bag kernels): a "
                   "host launch a stage, not a kernel "
                   "(a plan made with --cuda-graphs says so itself)")


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    """What execute and tune take alike: the hardware preset for the baselines, the run's
    length (backend.settings.RunSettings' defaults) and what it checks."""
    from corun.backend.settings import RunSettings

    d = RunSettings()
    p.add_argument("--hardware", default="h200",
                   help="hardware preset: the baselines' launch shape and host cores")
    p.add_argument("--iterations", type=int, default=d.iterations,
                   help="timed training steps (default: %(default)s)")
    p.add_argument("--warmup", type=int, default=d.warmup,
                   help="untimed steps first (default: %(default)s)")
    p.add_argument("--distinct-batches", type=int, default=d.distinct_batches,
                   help="raw batches generated (or read) once and cycled; each is "
                   "preprocessed again whenever it comes (default: %(default)s)")
    add_check_arguments(p)


def add_check_arguments(p: argparse.ArgumentParser) -> None:
    """`--no-check` and `--check-timed`, as execute and tune take them
    (backend.settings.RunSettings.check, check_timed)."""
    p.add_argument("--no-check", dest="check", action="store_false",
                   help="do not compare the preprocessed batches with the NumPy reference "
                   "(by default every row of the warmup's batches is, on the GPU, each "
                   "distinct batch at least once)")
    p.add_argument("--check-timed", action="store_true",
                   help="compare the timed iterations' batches too (their assembly then "
                   "reads the reference: slower than a production run, and than `corun "
                   "plan` predicts)")


def add_calibration_argument(p: argparse.ArgumentParser) -> None:
    """`--machine` and `--calibration`, as plan and simulate take them."""
    p.add_argument("--machine", metavar="MACHINE.json",
                   help="a machine profile from `corun calibrate` on the machine the plan "
                   "will run on: its measured copy and GEMM ceilings, host-thread costs and "
                   "stage times replace the preset's and the fitted host's (a profile of "
                   "another GPU kind is an error)")
    p.add_argument("--calibration", nargs="+", metavar="IDEAL.json",
                   help="measurement(s) of ideal on the machine (corun execute --strategy "
                   "ideal -o IDEAL.json, same model, batch and GPU count; several: their "
                   "median): every predicted duration is scaled by the measured ideal "
                   "over the predicted one (costmodel/calibration.py)")


def on_machine(hw: Hardware, path: str | None, warn=None) -> Hardware:
    """`hw` with the machine profile at `path` applied (unchanged without one); `warn`
    is told where the profile was measured with another corun version than this one."""
    if not path:
        return hw
    from corun.costmodel.machine import on_machine as applied
    from corun.spec.machine import MachineProfile
    from corun.spec.provenance import corun_version

    profile = loads(MachineProfile, read_document(path), path)
    stale = profile.stale_for(corun_version())
    if stale and warn is not None:
        warn(f"{path}: {stale}")
    return applied(hw, profile, name=Path(path).name)


def calibrated(base: Any, paths: list[str] | None, say=None) -> Any:
    """The Scenario `base` calibrated by the measurements at `paths` (unchanged without)."""
    if not paths:
        return base
    from corun.costmodel.calibration import load_calibration
    from corun.sim import calibrate

    cal = load_calibration(paths)
    out = calibrate(base, cal)
    if say is not None:
        say(f"calibrated by {cal.source}: ideal measured {cal.ideal_ms:.3f} ms, every "
            f"duration x{out.time_scale:.3f}")
    return out


def wants_graphs(args: argparse.Namespace, plan: Plan | None) -> bool:
    """--cuda-graphs given, or the plan given was made for the graphed step."""
    return bool(args.cuda_graphs) or (plan is not None and plan.cuda_graphs)


def plan_batch(args: argparse.Namespace, plan: Plan | None) -> int | None:
    """--batch if given, else the batch the plan given was made for (None: the model's)."""
    if args.batch is not None:
        return args.batch
    return plan.batch_per_gpu if plan is not None else None


def resolve_model(name: Any, batch: int | None, cuda_graphs: bool = False) -> Model:
    """The named model, at `batch` if given, with its step replayed as CUDA graphs if
    `cuda_graphs` (a model file may also say so itself)."""
    model = _model_value(name)
    if batch is not None:
        model = replace(model, batch_per_gpu=batch)
    return replace(model, cuda_graphs=True) if cuda_graphs else model


def resolve_pipeline(name: Any) -> Pipeline:
    """A pipeline preset, or a pipeline file or mapping, its feature groups written out
    (spec/feature_groups.py)."""
    from corun.spec.feature_groups import expand_feature_groups

    return _spec_value(Pipeline, name, pipeline_preset, "pipeline",
                       lambda doc, source: expand_feature_groups(doc)
                       if isinstance(doc, dict) else doc)


def shrink_tables(model: Model, pipeline: Pipeline, max_rows: int) -> tuple[Model, Pipeline]:
    """The same model and pipeline with every table capped at `max_rows` rows and every
    hash bounded to match (for CPU checks and dry runs of GPU-sized presets)."""
    from corun.spec import OpKind

    small = replace(model, tables=tuple(replace(t, rows=min(t.rows, max_rows))
                                        for t in model.tables))
    nodes = tuple(replace(n, params={**n.params, "max_value": min(n.params["max_value"],
                                                                   max_rows)})
                  if n.op is OpKind.SIGRID_HASH else n for n in pipeline.nodes)
    return small, replace(pipeline, nodes=nodes)
