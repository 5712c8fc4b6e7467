"""Read Prediction and Measurement files and pair them by what they describe."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from corun.spec import Measurement, Prediction, SpecError
from corun.spec.hardware import preset_of_device
from corun.spec.serde import loads, read_document, schema_tag


@dataclass(frozen=True)
class Pair:
    prediction: Prediction
    measurement: Measurement

    @property
    def label(self) -> str:
        m = self.measurement
        return f"{m.model}/{m.pipeline} b{m.batch_per_gpu} x{m.gpu_count} {m.strategy}"


def key(x: Prediction | Measurement) -> tuple:
    return (x.strategy, x.model, x.pipeline, x.batch_per_gpu, x.gpu_count)


@dataclass(frozen=True)
class Inputs:
    """The predictions and measurements of a report, and the file each came from."""

    predictions: list[Prediction]
    measurements: list[Measurement]
    paths: dict[int, str] = field(default_factory=dict)
    """id() of each prediction and measurement -> its file, as given."""

    def path(self, x: Prediction | Measurement) -> str:
        return self.paths.get(id(x), "?")


def load_files(paths: list[str]) -> Inputs:
    """Each file by its schema tag; anything else is an error naming the file. A folder
    (`corun tune`'s output, a plan folder) gives its *.json files that are predictions or
    measurements, and leaves the rest (tune.json, plans) aside."""
    found: dict[type, list] = {Prediction: [], Measurement: []}
    sources: dict[int, str] = {}
    kinds = {schema_tag(cls): cls for cls in found}
    for path in paths:
        folder = Path(path).is_dir()
        files = sorted(Path(path).glob("*.json")) if folder else [path]
        taken = 0
        for file in files:
            doc = read_document(file)
            tag = doc.get("schema") if isinstance(doc, dict) else None
            if tag in kinds:
                value = loads(kinds[tag], doc, str(file))
                found[kinds[tag]].append(value)
                sources[id(value)] = str(file)
                taken += 1
            elif not folder:
                raise SpecError(f"{file}.schema", tag, " or ".join(map(repr, kinds)))
        if folder and not taken:
            raise SpecError("report inputs", str(path), "a folder holding prediction or "
                            "measurement files (corun plan --out, corun tune -o)")
    return Inputs(found[Prediction], found[Measurement], sources)


def gpu_kind(hardware: str) -> str | None:
    """The hardware preset a prediction's GPU or a measurement's device names (`H100-SXM`,
    `NVIDIA H100 80GB HBM3` -> h100); None for a CPU or a device of no preset."""
    try:
        return preset_of_device(hardware)
    except SpecError:
        return None


def pair_up(preds: list[Prediction], meas: list[Measurement]) -> list[Pair]:
    """Match each measurement to the prediction of the same strategy, model, pipeline,
    batch and GPU count; a measurement without one is an error that says what differs."""
    by_key = {key(p): p for p in preds}
    pairs = []
    for m in meas:
        p = by_key.get(key(m))
        if p is None:
            near = [q for q in preds if q.strategy == m.strategy]
            if near:
                hint = (f"; the prediction for {m.strategy!r} is of {near[0].model}/"
                        f"{near[0].pipeline} batch {near[0].batch_per_gpu} "
                        f"x{near[0].gpu_count}")
            else:
                given = ", ".join(sorted({q.strategy for q in preds})) or "none"
                hint = (f"; predictions given: {given} (`corun execute --label` names a "
                        f"measurement's strategy)")
            raise SpecError("measurement", f"{m.strategy} {m.model}/{m.pipeline} batch "
                            f"{m.batch_per_gpu} x{m.gpu_count}",
                            f"a prediction of the same strategy, model, pipeline, batch and "
                            f"GPU count{hint}")
        pairs.append(Pair(p, m))
    return pairs


def same_hardware(pair: Pair) -> bool:
    """Whether the run was made on the kind of GPU its prediction is for (a CPU run, or one
    on a device of no preset, never is)."""
    kind = gpu_kind(pair.measurement.hardware)
    return kind is not None and kind == gpu_kind(pair.prediction.hardware)


def mape(pairs: list[tuple[float, float]]) -> float:
    """Mean absolute percentage error of (predicted, measured) pairs, in percent."""
    if not pairs:
        return float("nan")
    return 100 * sum(abs(p - m) / m for p, m in pairs) / len(pairs)


def iteration_points(pairs: list[Pair]) -> list[tuple[float, float]]:
    """(predicted, measured) mean iteration of each pair, in ms: the throughputs compared,
    every slow step counted on both sides."""
    return [(p.prediction.mean_iteration_ms, p.measurement.mean_iteration_ms)
            for p in pairs]
