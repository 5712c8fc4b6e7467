"""The validation dataset: every executed case, measured on hardware, beside what the model
predicts for it. Two CSV files and a plan store, read and written here only.

- `measured.csv`: one row per executed case (facts; rows are only ever added).
- `predicted.csv`: one row per case, the model's prediction at one code version (remade
  by `corun validate predict`).
- `plans.jsonl.gz`: the plans the cases ran, one JSON object a line, keyed by `plan_id`.
- `machines/NAME.json`: machine profiles (`corun calibrate`), and
  `predicted-on-machines.csv`: each case of a profile's GPU kind predicted with it.
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import hashlib
import io
import json
import math
from dataclasses import dataclass
from enum import Enum, StrEnum
from pathlib import Path

from corun.spec.errors import SpecError, require
from corun.spec.machine import MachineProfile
from corun.spec.serde import load, save, write_atomic

MEASURED_FILE = "measured.csv"
PREDICTED_FILE = "predicted.csv"
PLANS_FILE = "plans.jsonl.gz"
MACHINES_DIR = "machines"
ON_MACHINES_FILE = "predicted-on-machines.csv"


class PredictAs(StrEnum):
    """How the simulator is asked for a case: a baseline by its name, or the plan it ran."""

    IDEAL = "ideal"
    GPU_SEQUENTIAL = "gpu-sequential"
    PLAN = "plan"


@dataclass(frozen=True)
class MeasuredCase:
    """One strategy run once on hardware: what ran, on what, and how long it took."""

    case_id: str
    """`<source>#<n>`: the n-th case of its source record."""
    source: str
    """The record the case came from (one command on one machine)."""
    machine: str
    """The GPU as the run detected it, e.g. `NVIDIA H200`."""
    gpus: int
    model: str
    pipeline: str
    batch_per_gpu: int
    cuda_graphs: bool
    timed_check: bool
    """Whether the timed batches were compared with the reference (that costs host time)."""
    strategy: str
    """The label it ran under (`ideal`, `corun`, `corun-2`, `rap`, a tune variant, ...)."""
    predict_as: PredictAs
    plan_id: str
    """Key of the plan that ran in the plan store ("" for none)."""
    host_cpu_cores: int
    """Host cores the run's CPU preprocessing had (0: the machine's own)."""
    modelled: bool
    """Whether the simulator models how this case ran (not: a variant it has no notion of)."""
    iterations: int
    mean_iteration_ms: float
    """Timed span over the timed iterations, as the throughput counts it."""
    median_step_ms: float
    p10_step_ms: float
    p90_step_ms: float
    measured_commit: str
    measured_on: str
    """The day it was measured (ISO date; imported runs: their code's commit day)."""
    torch_version: str
    note: str = ""
    host_id: str = ""
    """The host's boot id where the run recorded one (spec.provenance.host_id): a machine
    profile measured on the same host predicts it as its own."""

    def __post_init__(self) -> None:
        require(bool(self.case_id), "case_id", self.case_id, "a non-empty case name")
        require(self.gpus >= 1, "gpus", self.gpus, "an integer >= 1")
        require(self.batch_per_gpu >= 1, "batch_per_gpu", self.batch_per_gpu, "an integer >= 1")
        for name in ("mean_iteration_ms", "median_step_ms", "p10_step_ms", "p90_step_ms"):
            v = getattr(self, name)
            require(math.isfinite(v) and v > 0, name, v, "a finite number > 0")

    @property
    def workload(self) -> str:
        """Model, pipeline, batch and step mode: what a user would call the workload."""
        mode = "graphed" if self.cuda_graphs else "eager"
        gpus = f" x{self.gpus}" if self.gpus > 1 else ""
        return f"{self.model}/{self.pipeline} b{self.batch_per_gpu} {mode}{gpus}"


@dataclass(frozen=True)
class PredictedCase:
    """The model's prediction for one measured case, at one code version."""

    case_id: str
    predicted_ms: float
    """Mean iteration predicted (nan where the case is not modelled or cannot be simulated)."""
    predicted_commit: str
    note: str = ""


@dataclass(frozen=True)
class MachinePrediction:
    """A case predicted with a machine profile of its GPU kind applied (MachineProfile)."""

    machine: str
    """The profile's name (its file in machines/, without .json)."""
    case_id: str
    predicted_ms: float
    predicted_commit: str
    note: str = ""


def _field_types(cls: type) -> dict[str, type]:
    hints = {f.name: f.type for f in dataclasses.fields(cls)}
    kinds = {"int": int, "float": float, "bool": bool, "str": str, "PredictAs": PredictAs}
    return {name: kinds[t] for name, t in hints.items()}


def _parse(cls: type, row: dict[str, str], where: str):
    types_ = _field_types(cls)
    missing = [k for k in types_ if k not in row and not _has_default(cls, k)]
    if missing:
        raise SpecError(f"{where}.{missing[0]}", None, "a column of the file")
    values = {}
    for name, tp in types_.items():
        if name not in row:
            continue
        text = row[name]
        try:
            if tp is bool:
                require(text in ("true", "false"), name, text, "true or false")
                values[name] = text == "true"
            else:
                values[name] = tp(text)
        except ValueError as e:
            if isinstance(e, SpecError):
                raise e.within(where) from None
            raise SpecError(f"{where}.{name}", text, f"a {tp.__name__}") from None
    try:
        return cls(**values)
    except SpecError as e:
        raise e.within(where) from None


def _has_default(cls: type, name: str) -> bool:
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    return f.default is not dataclasses.MISSING


def _format(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)  # shortest exact form
    return str(value)


def read_rows(cls: type, path: str | Path) -> list:
    """The rows of a dataset CSV as `cls` values; a bad cell names its line and column."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError("file", str(path), f"a readable UTF-8 CSV ({e})") from None
    reader = csv.DictReader(io.StringIO(text))
    return [_parse(cls, row, f"{path.name}:{i}") for i, row in enumerate(reader, start=2)]


def rows_text(rows: list) -> str:
    """Rows of one dataclass as CSV text, columns in field order."""
    if not rows:
        return ""
    names = [f.name for f in dataclasses.fields(rows[0])]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(names)
    for r in rows:
        w.writerow([_format(getattr(r, n)) for n in names])
    return out.getvalue()


def plan_id(plan_doc: dict | None) -> str:
    """A plan's key in the store: the first 16 hex digits of its canonical JSON's SHA-256."""
    if not plan_doc:
        return ""
    text = json.dumps(plan_doc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def read_plans(path: str | Path) -> dict[str, dict]:
    """The plan store: plan_id -> the plan as JSON data; each line's key is checked."""
    path = Path(path)
    if not path.exists():
        return {}
    plans = {}
    for i, line in enumerate(gzip.decompress(path.read_bytes()).decode().splitlines(), 1):
        doc = json.loads(line)
        key = plan_id(doc["plan"])
        require(key == doc["plan_id"], f"{path.name}:{i}.plan_id", doc["plan_id"],
                f"the plan's own key {key}")
        plans[key] = doc["plan"]
    return plans


def plans_bytes(plans: dict[str, dict]) -> bytes:
    """The plan store's bytes, sorted by key and gzipped without a time stamp (the same
    plans give the same bytes)."""
    text = "".join(json.dumps({"plan_id": k, "plan": plans[k]}, sort_keys=True,
                              separators=(",", ":")) + "\n" for k in sorted(plans))
    return gzip.compress(text.encode(), mtime=0)


@dataclass(frozen=True)
class Dataset:
    """The validation dataset of one folder, predictions joined where there are some."""

    measured: tuple[MeasuredCase, ...]
    predicted: dict[str, PredictedCase]
    plans: dict[str, dict]
    machines: dict[str, MachineProfile] = dataclasses.field(default_factory=dict)
    on_machines: dict[tuple[str, str], MachinePrediction] = dataclasses.field(
        default_factory=dict)
    """By (machine, case_id)."""

    @staticmethod
    def read(folder: str | Path) -> Dataset:
        folder = Path(folder)
        require((folder / MEASURED_FILE).is_file(), "validation folder", str(folder),
                f"a folder holding {MEASURED_FILE}")
        measured = tuple(read_rows(MeasuredCase, folder / MEASURED_FILE))
        pred_path = folder / PREDICTED_FILE
        predicted = ({p.case_id: p for p in read_rows(PredictedCase, pred_path)}
                     if pred_path.exists() else {})
        machines = {p.stem: load(MachineProfile, p)
                    for p in sorted((folder / MACHINES_DIR).glob("*.json"))}
        on_path = folder / ON_MACHINES_FILE
        on = ({(p.machine, p.case_id): p for p in read_rows(MachinePrediction, on_path)}
              if on_path.exists() else {})
        return Dataset(measured, predicted, read_plans(folder / PLANS_FILE), machines, on)

    def write(self, folder: str | Path) -> None:
        """Each file written atomically; the plans first, so no row names a missing plan."""
        folder = Path(folder)
        write_atomic(folder / PLANS_FILE, plans_bytes(self.plans))
        write_atomic(folder / MEASURED_FILE, rows_text(list(self.measured)))
        if self.predicted:
            ordered = [self.predicted[c.case_id] for c in self.measured
                       if c.case_id in self.predicted]
            write_atomic(folder / PREDICTED_FILE, rows_text(ordered))
        for name, profile in self.machines.items():
            save(profile, folder / MACHINES_DIR / f"{name}.json")
        if self.on_machines:
            order = {c.case_id: i for i, c in enumerate(self.measured)}
            rows = sorted(self.on_machines.values(),
                          key=lambda p: (p.machine, order.get(p.case_id, -1)))
            write_atomic(folder / ON_MACHINES_FILE, rows_text(rows))

    def error_pct(self, case: MeasuredCase, machine: str = "") -> float:
        """Predicted less measured mean iteration, in % of measured (nan: none predicted);
        with `machine`, the prediction made with that machine profile."""
        p = self.on_machines.get((machine, case.case_id)) if machine else \
            self.predicted.get(case.case_id)
        if p is None or math.isnan(p.predicted_ms):
            return math.nan
        return 100 * (p.predicted_ms - case.mean_iteration_ms) / case.mean_iteration_ms


def case_from_record(record: dict, source: str, index: int, measured_on: str,
                     note: str = "") -> tuple[MeasuredCase, dict | None]:
    """A Measurement's JSON as a dataset row, and the plan it ran (None for none).

    The simulator does not model a fused embedding update on another grid than the
    trainer's default, so such a case is kept but not `modelled`; `note` says why where
    the caller knows of another reason."""
    from corun.spec.measurement import (
        mean_iteration_ms,
        notes_say_graphed,
        notes_say_timed_checked,
    )

    strategy = record["strategy"]
    plan = record.get("plan") or None
    kind = {"ideal": PredictAs.IDEAL, "gpu-sequential": PredictAs.GPU_SEQUENTIAL}.get(
        strategy.split("+")[0], PredictAs.PLAN)
    if plan and plan.get("update_blocks_per_sm"):
        note = note or "the embedding update on its own grid"
    cores = [int(x[1:]) for x in strategy.split("+")[1:] if x[:1] == "w" and x[1:].isdigit()]
    it = record["iteration"]
    case = MeasuredCase(
        case_id=f"{source}#{index}", source=source, machine=record["hardware"],
        gpus=record["gpu_count"], model=record["model"], pipeline=record["pipeline"],
        batch_per_gpu=record["batch_per_gpu"],
        cuda_graphs=notes_say_graphed(record.get("notes", ())),
        timed_check=notes_say_timed_checked(record.get("notes", ())),
        strategy=strategy, predict_as=kind, plan_id=plan_id(plan),
        host_cpu_cores=cores[0] if cores else 0, modelled=not note,
        iterations=record["iterations"],
        mean_iteration_ms=mean_iteration_ms(record["throughput_samples_per_s"],
                                            record["batch_per_gpu"], record["gpu_count"]),
        median_step_ms=it["median_ms"], p10_step_ms=it["p10_ms"], p90_step_ms=it["p90_ms"],
        measured_commit=record["git_commit"], measured_on=measured_on,
        torch_version=record.get("versions", {}).get("torch", ""), note=note,
        host_id=record.get("versions", {}).get("host_id", ""))
    return case, plan
