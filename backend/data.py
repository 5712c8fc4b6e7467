"""Criteo-format input: a streaming TSV reader and a seeded synthetic generator.

Criteo Kaggle `train.txt` and Terabyte `day_N` lines are: label, 13 integer features,
26 categorical features as 8-digit hex, tab-separated; an empty field is a null. The
reader yields row chunks in the pipeline's raw layout (integers as float32, categories
as int64 lists of length 1 or 0 when null) and never loads the whole file.

It parses the fields as the format defines them and nothing else: a label is 0 or 1, an
integer is an optional minus and decimal digits within 32 bits (no plus, spaces,
underscores or exponents), a category is 1 to 8 hex digits (no sign, `0x` or
underscores). Any other field is a DataError naming the line and the column, or, with
`skip_bad_lines`, a line counted and skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from corun.backend.columns import ColumnData
from corun.spec import DType, Pipeline, Shape

N_DENSE, N_SPARSE = 13, 26

DENSE_MAX = 2**31 - 1
"""An integer feature is a 32-bit signed integer (Criteo's are counts, far smaller)."""
DENSE_DIGITS = len(str(DENSE_MAX))

_DENSE = re.compile(rf"-?[0-9]{{1,{DENSE_DIGITS}}}")
_HEX = re.compile(r"[0-9a-fA-F]{1,8}")
_SHOWN = 40
"""The most characters of a bad field an error shows."""


def _shown(field: str) -> str:
    return repr(field if len(field) <= _SHOWN else field[:_SHOWN] + "...")


class DataError(ValueError):
    """A malformed input line: names the file, line number and column."""

    def __init__(self, path: str, line: int, column: str, problem: str) -> None:
        self.path, self.line, self.column = path, line, column
        super().__init__(f"{path}:{line}: column {column}: {problem}")


@dataclass
class Chunk:
    labels: np.ndarray
    columns: dict[str, ColumnData]
    first_line: int

    @property
    def rows(self) -> int:
        return len(self.labels)


@dataclass
class ReadStats:
    lines: int = 0
    skipped: int = 0
    first_errors: list[str] = field(default_factory=list)


def _parse_line(fields: list[str], path: str, lineno: int) -> tuple[int, list, list]:
    if len(fields) != 1 + N_DENSE + N_SPARSE:
        raise DataError(path, lineno, "*", f"{len(fields)} tab-separated fields, expected "
                        f"{1 + N_DENSE + N_SPARSE}")
    if fields[0] not in ("0", "1"):
        raise DataError(path, lineno, "label", f"{_shown(fields[0])}: 0 or 1")
    dense: list[int | None] = []
    for k in range(N_DENSE):
        f = fields[1 + k]
        if f == "":
            dense.append(None)
        elif _DENSE.fullmatch(f) and -DENSE_MAX - 1 <= int(f) <= DENSE_MAX:
            dense.append(int(f))
        else:
            raise DataError(path, lineno, f"int_{k}", f"{_shown(f)}: a 32-bit integer, or "
                            "empty for a null")
    cats: list[int | None] = []
    for k in range(N_SPARSE):
        f = fields[1 + N_DENSE + k]
        if f == "":
            cats.append(None)
        elif _HEX.fullmatch(f):
            cats.append(int(f, 16))
        else:
            raise DataError(path, lineno, f"cat_{k}", f"{_shown(f)}: 1 to 8 hex digits, or "
                            "empty for a null")
    return int(fields[0]), dense, cats


def _to_chunk(labels: list[int], dense: list[list], cats: list[list], first: int) -> Chunk:
    cols: dict[str, ColumnData] = {}
    for k in range(N_DENSE):
        vals = [r[k] for r in dense]
        valid = np.array([v is not None for v in vals], bool)
        arr = np.array([0 if v is None else v for v in vals], np.float32)
        cols[f"int_{k}"] = ColumnData(arr, None, valid)
    for k in range(N_SPARSE):
        vals = [r[k] for r in cats]
        valid = np.array([v is not None for v in vals], bool)
        lengths = valid.astype(np.int64)
        off = np.zeros(len(vals) + 1, np.int64)
        np.cumsum(lengths, out=off[1:])
        arr = np.array([v for v in vals if v is not None], np.int64)
        cols[f"cat_{k}"] = ColumnData(arr, off, valid)
    return Chunk(np.array(labels, np.int8), cols, first)


def read_criteo(path: str | Path, chunk_rows: int = 65536, skip_bad_lines: bool = False,
                stats: ReadStats | None = None, engine: str = "auto") -> Iterator[Chunk]:
    """Stream `path` in chunks of `chunk_rows`. A bad line raises DataError, or with
    `skip_bad_lines` is counted in `stats` and skipped; columns never shift.

    `engine` "arrow" reads with pyarrow's multi-threaded CSV reader and checks and converts
    whole columns at once in compiled loops (criteo_arrow.py); "python" a line at a time;
    "auto" arrow where pyarrow and numba are installed. The two give the same chunks;
    arrow hands a file with a bad line to the line reader, which names the line or skips
    it."""
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows = {chunk_rows}: an integer >= 1")
    if engine not in ("auto", "arrow", "python"):
        raise ValueError(f"engine = {engine!r}: 'auto', 'arrow' or 'python'")
    stats = stats if stats is not None else ReadStats()
    if not Path(path).is_file():
        raise DataError(str(path), 0, "*", "no such file (a Criteo-format TSV file)")
    start = 1
    if engine != "python":
        try:
            from corun.backend import criteo_arrow
        except ImportError:  # pyarrow or numba missing: "auto" reads a line at a time
            if engine == "arrow":
                raise
            criteo_arrow = None
        if criteo_arrow is not None:
            try:
                yield from criteo_arrow.read(path, chunk_rows, stats)
                if stats.lines:
                    return
            except criteo_arrow.Fallback as f:
                start = max(1, f.line)  # a bad line: the line reader names it or skips it
    yield from _read_lines(path, chunk_rows, skip_bad_lines, stats, start)


def _read_lines(path: str | Path, chunk_rows: int, skip_bad_lines: bool,
                stats: ReadStats, start: int = 1) -> Iterator[Chunk]:
    """read_criteo a line at a time, from line `start` on."""
    labels: list[int] = []
    dense: list[list] = []
    cats: list[list] = []
    first, rows = 1, 0
    with open(path, encoding="ascii", errors="replace") as f:
        for lineno, line in enumerate(f, start=1):
            if lineno < start:
                continue
            stats.lines += 1
            try:
                label, d, c = _parse_line(line.rstrip("\r\n").split("\t"), str(path), lineno)
            except DataError as e:
                if not skip_bad_lines:
                    raise
                stats.skipped += 1
                if len(stats.first_errors) < 5:
                    stats.first_errors.append(str(e))
                continue
            if not labels:
                first = lineno
            labels.append(label)
            dense.append(d)
            cats.append(c)
            rows += 1
            if len(labels) == chunk_rows:
                yield _to_chunk(labels, dense, cats, first)
                labels, dense, cats = [], [], []
    if labels:
        yield _to_chunk(labels, dense, cats, first)
    if not rows:
        raise DataError(str(path), stats.lines, "*", f"no rows to read ({stats.lines} lines, "
                        f"{stats.skipped} of them malformed)")


def synthetic_inputs(pipeline: Pipeline, rows: int, rng: np.random.Generator,
                     null_rate_max: float = 0.45, zipf_a: float = 1.1,
                     vary_lengths: bool = False) -> dict[str, ColumnData]:
    """Raw columns shaped like Criteo: per-column null rates in [0, null_rate_max], dense
    counts heavy-tailed with a few negatives, categorical ids power-law skewed over 32 bits.
    Lists have their column's lengths where it gives their spread (Column.length_range,
    length_histogram), else its mean length (or, with `vary_lengths`, Poisson lengths).
    `zipf_a` <= 1 draws ids uniformly instead (ten times cheaper, for large benchmarks
    where the kernels' cost does not depend on the id distribution)."""
    cols: dict[str, ColumnData] = {}
    for c in pipeline.inputs:
        rate = rng.uniform(0, null_rate_max) if c.nullable else 0.0
        valid = rng.random(rows) >= rate if c.nullable else None
        if c.shape is Shape.SCALAR:
            if c.dtype is DType.FLOAT32:
                v = np.floor(rng.lognormal(1.0, 1.5, rows)) - (rng.random(rows) < 0.02) * 3
                cols[c.name] = ColumnData(v.astype(np.float32), None, valid)
            else:
                cols[c.name] = ColumnData(_ids(rng, rows, zipf_a).astype(
                    np.int32 if c.dtype is DType.INT32 else np.int64), None, valid)
            continue
        if c.spread:  # the column's own spread of lengths
            values, shares = zip(*c.spread)
            lengths = rng.choice(np.array(values, np.int64), rows, p=np.array(shares))
        elif vary_lengths:
            lengths = rng.poisson(c.mean_length, rows)
        else:
            lengths = np.full(rows, int(round(c.mean_length)))
        if valid is not None:
            lengths = np.where(valid, lengths, 0)
        off = np.zeros(rows + 1, np.int64)
        np.cumsum(lengths, out=off[1:])
        n = int(off[-1])
        if c.dtype is DType.FLOAT32:
            vals = rng.normal(0, 4, n).astype(np.float32)
        else:
            vals = _ids(rng, n, zipf_a).astype(np.int64 if c.dtype is DType.INT64 else np.int32)
        cols[c.name] = ColumnData(vals, off, valid)
    return cols


def _ids(rng: np.random.Generator, n: int, a: float) -> np.ndarray:
    """Power-law ranks (P(rank >= k) ~ k^-(a-1), the continuous Zipf) scattered over
    [0, 2^32) by a fixed odd multiplier. Pareto draws cost a tenth of `rng.zipf`'s."""
    if a <= 1:
        return rng.integers(0, 2**32, n, dtype=np.int64)
    ranks = np.minimum(rng.pareto(a - 1, n), 2.0**32).astype(np.uint64)
    return ((ranks * np.uint64(2654435761)) % np.uint64(2**32)).astype(np.int64)


def write_criteo_tsv(path: str | Path, rows: int, rng: np.random.Generator,
                     null_rate: float = 0.1) -> None:
    """A small Criteo-format file (for tests and examples)."""
    with open(path, "w", encoding="ascii") as f:
        for _ in range(rows):
            fields = [str(int(rng.random() < 0.25))]
            for _ in range(N_DENSE):
                fields.append("" if rng.random() < null_rate
                              else str(min(int(rng.zipf(1.5)) - 1, DENSE_MAX)))
            for _ in range(N_SPARSE):
                fields.append("" if rng.random() < null_rate else f"{int(rng.integers(2**32)):08x}")
            f.write("\t".join(fields) + "\n")


def inputs_of(chunk: Chunk, pipeline: Pipeline) -> Mapping[str, ColumnData]:
    """The chunk's columns that the pipeline reads (Criteo pipelines read them all)."""
    return {c.name: chunk.columns[c.name] for c in pipeline.inputs}
