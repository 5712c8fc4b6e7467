"""Profile CSVs on disk: one file, or a directory of them (`corun profile --shard I/N`
writes one file per shard, so several GPUs profile at once without sharing a file).

A row is identified by KEY; when files overlap, the first file (in name order) wins.
Rows with the kernel resident before its stage starts (`corun profile --resident`) are
another measurement of the same key: they live in resident*.csv files beside them.
"""

from __future__ import annotations

import csv
import hashlib
import io
from pathlib import Path

from corun.costmodel.interaction import SAVING_CSV, correct_rows, read_savings
from corun.spec import SpecError

KEY = ("gpu", "model", "batch", "kernel", "stage")
LEAD_ASKED = "lead_asked_ms"
"""A resident row's column: how long the profiler held the stage back after the kernel's
release (part of its key: one kernel and stage is profiled at several leads)."""
FIRST_LEAD_MS = "0.01"
"""The lead of resident rows from before the column (the only one then profiled)."""


def is_resident(r: dict) -> bool:
    """Whether a row has the kernel resident before its stage starts (a resident*.csv
    row, or a query for one): it has a kernel_lead_ms."""
    return r.get("kernel_lead_ms") not in (None, "")


def row_key(r: dict) -> tuple:
    """A row's identity: KEY, and for a resident row the lead it was profiled at."""
    key = tuple(str(r.get(k)) for k in KEY)
    if is_resident(r):
        key += (str(r.get(LEAD_ASKED) or FIRST_LEAD_MS),)
    return key


PROFILE, RESIDENT = "profile", "resident"
"""The two kinds of profile file, by the stem their names start with."""
GRAPHED = "graphed-"
"""Before either stem: the rows of a step replayed as CUDA graphs (`corun profile
--cuda-graphs`)."""
KINDS = (PROFILE, RESIDENT, GRAPHED + PROFILE, GRAPHED + RESIDENT)


def shard_file(directory: Path, shard: int, shards: int, kind: str = PROFILE) -> Path:
    """Where shard `shard` of `shards` appends (profile.csv, or resident.csv, when
    unsharded)."""
    name = f"{kind}.csv" if shards == 1 else f"{kind}-{shard}of{shards}.csv"
    return Path(directory) / name


def profile_files(path: str | Path, kind: str = PROFILE) -> list[Path]:
    """The CSVs behind `path`: itself, or a directory's <kind>*.csv in name order."""
    p = Path(path)
    if p.is_dir():
        return sorted(p.glob(f"{kind}*.csv"))
    return [p] if kind == PROFILE else []


def _folder(path: str | Path) -> Path:
    p = Path(path)
    return p if p.is_dir() else p.parent


def read_profile(path: str | Path, corrected: bool = True,
                 kind: str = PROFILE) -> list[dict[str, str]]:
    """The measured rows of a CSV or a directory of them (a torn last line, which has no
    measured_utc, is dropped; a key seen twice keeps its first row), the dot
    interaction's stages corrected where the folder holds its saving
    (costmodel/interaction.py: rows timed before the trainer's interaction changed) unless
    `corrected` is off: rows copied into another profile stay as measured. `kind`:
    which files (RESIDENT: the resident rows)."""
    rows, seen = [], set()
    for f in profile_files(path, kind):
        try:
            text = f.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise SpecError("data", str(f), f"a profile CSV in UTF-8 ({e.reason})") from None
        try:
            for r in csv.DictReader(io.StringIO(text, newline="")):
                key = row_key(r)
                if r.get("measured_utc") and key not in seen:
                    seen.add(key)
                    rows.append(r)
        except csv.Error as e:
            raise SpecError("data", str(f), f"a profile CSV ({e})") from None
    return correct_rows(rows, read_savings(_folder(path) / SAVING_CSV)) if corrected else rows


def fit_rows(path: str | Path) -> list[dict[str, str]]:
    """Every row a fit learns from: the profile's, then the resident ones."""
    return read_profile(path) + read_profile(path, kind=RESIDENT)


LOOKUP_DIR = "lookup"
"""A profile directory's subfolder of rows the model looks up and does not learn from:
measured pairs answered as measured (costmodel.learned.CoRunModel), while the trees that
answer every pair nobody measured stay as fitted. A new preset's own kernels profiled
there do not move every other workload's predictions: heavy-rehash's 108 rows fitted with
the rest re-broke the planner's choice on 18 one-GPU plan folders (predicted ties on
host-paced steps, and the heavy folders), chosen and measured before them."""


def lookup_dir(path: str | Path) -> Path | None:
    """A profile directory's LOOKUP_DIR where it has one (a single CSV has none): the one
    place `lookup_rows` reads and `data_files` hashes."""
    folder = Path(path) / LOOKUP_DIR
    return folder if folder.is_dir() else None


def lookup_rows(path: str | Path, kind: str | None = None,
                corrected: bool = True) -> list[dict[str, str]]:
    """The rows under `path`'s LOOKUP_DIR (profile, then resident; or those of `kind`),
    none without one."""
    folder = lookup_dir(path)
    if folder is None:
        return []
    return fit_rows(folder) if kind is None else read_profile(folder, corrected, kind)


def graphed_rows(path: str | Path) -> list[dict[str, str]]:
    """The rows profiled with the step replayed as CUDA graphs, launched then resident."""
    return read_profile(path, kind=GRAPHED + PROFILE) + \
        read_profile(path, kind=GRAPHED + RESIDENT)


def done_keys(path: str | Path, kind: str = PROFILE) -> set[tuple[str, ...]]:
    """Keys of the rows of `kind` already measured under `path` (missing: none)."""
    if not Path(path).exists():
        return set()
    return {row_key(r) for r in read_profile(path, kind=kind)}


def data_files(path: str | Path) -> list[Path]:
    """The profile CSVs of every kind behind `path` (KINDS), then its LOOKUP_DIR's."""
    files = [f for kind in KINDS for f in profile_files(path, kind)]
    lookup = lookup_dir(path)
    return files + (data_files(lookup) if lookup else [])


def data_hash(path: str | Path) -> str:
    """SHA-256 over the profile files' names and bytes: a fitted model records it, so a
    model fitted on other data is detected."""
    h = hashlib.sha256()
    files = data_files(path)
    saving = _folder(path) / SAVING_CSV
    if saving.exists():  # it changes the rows read_profile returns
        files = [*files, saving]
    for f in files:
        if len(files) > 1:
            h.update(f.name.encode() + b"\0")
        h.update(f.read_bytes())
    return h.hexdigest()
