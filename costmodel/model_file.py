"""A fitted model on disk: gzipped, with the library versions and data it was fitted on."""

from __future__ import annotations

import gzip
import hashlib
import json
import pickle
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from corun.costmodel.features import FEATURES_VERSION
from corun.costmodel.profile_data import data_hash
from corun.spec import SpecError

if TYPE_CHECKING:
    from corun.costmodel.learned import CoRunModel

MODEL_FORMAT = "2"
"""The CoRunModel's pickled layout: 2 names its learned attributes with a trailing _
(scikit-learn's contract). A model of another layout is refitted, never half-read."""


def library_versions() -> dict[str, str]:
    import sklearn

    return {"scikit-learn": sklearn.__version__, "numpy": np.__version__,
            "corun-features": FEATURES_VERSION, "corun-model": MODEL_FORMAT}


GZIP_MAGIC = b"\x1f\x8b"


def report_of(path: str | Path) -> Path:
    """The JSON report beside a saved model: its metadata and the hash of its bytes."""
    return Path(path).with_suffix(".json")


def save_model(model: CoRunModel, path: str | Path, meta: dict) -> None:
    """The model and its metadata, pickled and gzipped (the H200 model: 5.1 MB as a plain
    pickle, 1.3 MB gzipped; the checkout sent to the GPU machine is capped at 64 MiB), the
    gzip header's time left at 0 so that one fit writes the same bytes twice; and beside
    it the report: the metadata and the SHA-256 of those bytes (load_model checks it)."""
    from corun.spec.serde import write_atomic

    raw = gzip.compress(pickle.dumps({"model": model, "meta": meta}), mtime=0)
    write_atomic(path, raw)
    write_atomic(report_of(path), json.dumps(
        {**meta, "model_sha256": hashlib.sha256(raw).hexdigest()}, indent=1))


def load_model(path: str | Path, data: str | Path | None = None) -> tuple[CoRunModel, dict]:
    """A saved model; an error, before anything is unpickled, where its bytes are not
    those its report's hash names (unpickling runs code: only a file corun wrote is
    read); an error if it was fitted with other library versions, or on other data than
    `data` (when given) — never silently used."""
    raw = Path(path).read_bytes()
    report = report_of(path)
    try:
        recorded = json.loads(report.read_text()).get("model_sha256")
    except (OSError, ValueError, AttributeError):
        recorded = None
    digest = hashlib.sha256(raw).hexdigest()
    if recorded != digest:
        raise SpecError(f"{path}: sha256", digest[:12], f"the hash {report} records "
                        f"({str(recorded)[:12]}): a model is read only as corun fit wrote it "
                        "(refit with corun fit)")
    blob = pickle.loads(gzip.decompress(raw) if raw[:2] == GZIP_MAGIC else raw)
    meta = blob["meta"]
    here = library_versions()
    for lib in sorted(set(meta["versions"]) | set(here)):
        v = meta["versions"].get(lib)
        if here.get(lib) != v:
            raise SpecError(f"{path}: {lib}", v, f"the version installed here ({here.get(lib)}):"
                            " refit with corun fit")
    if data is not None and meta["data_sha256"] != data_hash(data):
        raise SpecError(f"{path}: data_sha256", meta["data_sha256"][:12],
                        f"the hash of {data} ({data_hash(data)[:12]}): refit with corun fit")
    return blob["model"], meta


def fitted_gpu_kinds(data_dir: Path) -> frozenset[str]:
    """The GPU kinds (preset names in capitals: H200, ...) whose profiles the committed
    models under `data_dir` were fitted on, from the report beside each model."""
    from corun.spec.hardware import preset_of_device

    kinds = set()
    for report in sorted(Path(data_dir).glob("*/model.json")):
        kinds |= {preset_of_device(g).upper() for g in json.loads(report.read_text())["gpus"]}
    return frozenset(kinds)
