"""Criteo-format TSV read with pyarrow's multi-threaded CSV reader, every field checked
and converted by compiled loops that hold no GIL, a column a thread (the same format
backend/data.py's line reader parses: labels 0 or 1, 32-bit integers of an optional minus
and digits, categories of 1 to 8 hex digits, an empty field a null).

The file is read in segments, each checked whole before its rows are handed out in
chunks. At the first segment with a bad line, reading goes on a line at a time (the line
reader names the line and column, or skips it) from the first row not yet handed out."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numba
import numpy as np
import pyarrow as pa
import pyarrow.csv as csv
from corun.backend.columns import ColumnData
from corun.backend.data import DENSE_DIGITS, DENSE_MAX, N_DENSE, N_SPARSE, Chunk, ReadStats

NAMES = ["label", *(f"int_{k}" for k in range(N_DENSE)), *(f"cat_{k}" for k in range(N_SPARSE))]
SEGMENT_BYTES = 256 << 20
"""Bytes of whole lines read and converted at a time (memory: a few times this)."""
BLOCK_BYTES = 8 << 20
"""Bytes of a segment each of the reader's threads parses at a time."""

_NIBBLE = np.full(256, -1, np.int64)
for _i, _c in enumerate(b"0123456789"):
    _NIBBLE[_c] = _i
for _i, _c in enumerate(b"abcdef"):
    _NIBBLE[_c] = _NIBBLE[_c - 32] = 10 + _i


@functools.cache
def _pool() -> ThreadPoolExecutor:
    """Threads that check and convert a segment's columns side by side."""
    return ThreadPoolExecutor(max(1, os.cpu_count() or 1), thread_name_prefix="criteo")


class Fallback(Exception):
    """A line breaks the format: read on a line at a time from line `line`."""

    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


def parsed_segments(path: Path) -> Iterator:
    """The file as tables of raw fields, one for each segment of whole lines (pyarrow's
    reader parses a segment's blocks on all cores; its streaming reader takes one);
    Fallback at a line with another field count."""
    options = dict(
        read_options=csv.ReadOptions(column_names=NAMES, block_size=BLOCK_BYTES),
        parse_options=csv.ParseOptions(delimiter="\t", quote_char=False, escape_char=False,
                                       ignore_empty_lines=False,
                                       invalid_row_handler=lambda row: "error"),
        convert_options=csv.ConvertOptions(column_types={n: pa.binary() for n in NAMES},
                                           strings_can_be_null=False,
                                           quoted_strings_can_be_null=False))

    def parsed(job):
        try:
            return job.result()
        except pa.ArrowInvalid:
            raise Fallback(0) from None

    # the next segment is parsed while the caller converts this one
    with ThreadPoolExecutor(1, thread_name_prefix="criteo-parse") as parser:
        ahead = None
        for buf in _segments(path):
            job = parser.submit(lambda b: csv.read_csv(pa.BufferReader(b), **options), buf)
            if ahead is not None:
                yield parsed(ahead)
            ahead = job
        if ahead is not None:
            yield parsed(ahead)


def _segments(path: Path) -> Iterator[memoryview]:
    """The file's bytes in pieces of about SEGMENT_BYTES, each of whole lines (each read
    into a fresh buffer, so none is written while it is parsed)."""
    with open(path, "rb") as f:
        left = os.fstat(f.fileno()).st_size
        carry = np.zeros(0, np.uint8)
        while True:
            buf = np.empty(len(carry) + max(1, min(SEGMENT_BYTES, left)), np.uint8)
            buf[:len(carry)] = carry
            got = f.readinto(memoryview(buf)[len(carry):])
            left -= got
            end = len(carry) + got
            if not got:  # the end: what is left is a last line with no newline
                if end:
                    yield memoryview(buf)[:end]
                return
            cut = _after_last_newline(buf[:end])
            carry = buf[cut:end].copy()  # a line cut short starts the next piece
            if cut:
                yield memoryview(buf)[:cut]


def _after_last_newline(buf: np.ndarray, window: int = 1 << 16) -> int:
    """The index after the last newline in `buf` (0 if none), looked for from the end."""
    stop = len(buf)
    while stop > 0:
        start = max(0, stop - window)
        at = np.flatnonzero(buf[start:stop] == ord("\n"))
        if len(at):
            return start + int(at[-1]) + 1
        stop = start
    return 0


def _pieces(column) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """An Arrow binary column's chunks as (bytes, row start offsets (n + 1)), zero-copy."""
    for chunk in column.chunks:
        bufs = chunk.buffers()
        offsets = np.frombuffer(bufs[1], np.int32)[chunk.offset:chunk.offset + len(chunk) + 1]
        data = np.frombuffer(bufs[2], np.uint8) if bufs[2] else np.zeros(0, np.uint8)
        yield data, offsets


@numba.njit(nogil=True, cache=True)
def _labels_of(data, off, labels, at):  # pragma: no cover - compiled
    """Rows' labels into labels[at:]: -1, or the first row whose field is not 0 or 1."""
    for i in range(len(off) - 1):
        a = off[i]
        if off[i + 1] - a != 1 or (data[a] != 48 and data[a] != 49):
            return at + i
        labels[at + i] = data[a] - 48
    return -1


@numba.njit(nogil=True, cache=True)
def _dense_of(data, off, values, valid, at, digits, most):  # pragma: no cover - compiled
    """Rows' integers into values[at:] (float32) and valid[at:]: -1, or the first row whose
    field is neither empty nor an optional minus and 1 to `digits` digits within 32 bits."""
    for i in range(len(off) - 1):
        a, b, r = off[i], off[i + 1], at + i
        valid[r] = a < b
        values[r] = 0
        if a == b:
            continue
        minus = data[a] == 45
        a += minus
        if b - a < 1 or b - a > digits:
            return r
        v = 0
        for j in range(a, b):
            d = np.int64(data[j]) - 48
            if d < 0 or d > 9:
                return r
            v = v * 10 + d
        if v > most + minus:
            return r
        values[r] = -v if minus else v
    return -1


@numba.njit(nogil=True, cache=True)
def _hex_of(data, off, ids, valid, id_off, at, cursor):  # pragma: no cover - compiled
    """Rows' categories: non-null ids from ids[cursor], validity and id offsets from row
    `at`. Returns (-1 or the first row whose field is neither empty nor 1 to 8 hex digits,
    the next cursor)."""
    for i in range(len(off) - 1):
        a, b, r = off[i], off[i + 1], at + i
        id_off[r] = cursor
        valid[r] = a < b
        if a == b:
            continue
        if b - a > 8:
            return r, cursor
        v = 0
        for j in range(a, b):
            d = _NIBBLE[data[j]]
            if d < 0:
                return r, cursor
            v = v * 16 + d
        ids[cursor] = v
        cursor += 1
    return -1, cursor


def _label(column, n: int) -> np.ndarray | None:
    """A label column as int8, or None where a field is not 0 or 1."""
    labels, at = np.empty(n, np.int8), 0
    for data, off in _pieces(column):
        if _labels_of(data, off, labels, at) >= 0:
            return None
        at += len(off) - 1
    return labels


def _dense(column, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """An integer column as float32 values (0 where null) and validity, or None where a
    field is not an optional minus and digits within 32 bits."""
    values, valid, at = np.empty(n, np.float32), np.empty(n, bool), 0
    for data, off in _pieces(column):
        if _dense_of(data, off, values, valid, at, DENSE_DIGITS, DENSE_MAX) >= 0:
            return None
        at += len(off) - 1
    return values, valid


def _hex(column, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """A category column as its non-null int64 ids, validity and id offsets (n + 1), or
    None where a field is not 1 to 8 hex digits."""
    ids, valid, id_off = np.empty(n, np.int64), np.empty(n, bool), np.empty(n + 1, np.int64)
    at = cursor = 0
    for data, off in _pieces(column):
        bad, cursor = _hex_of(data, off, ids, valid, id_off, at, cursor)
        if bad >= 0:
            return None
        at += len(off) - 1
    id_off[n] = cursor
    return ids[:cursor], valid, id_off


def converted(batch) -> tuple | None:
    """A batch's labels, (float32 values, validity) per integer column and (ids, validity,
    id offsets) per category column; None where a field breaks the format."""
    n = batch.num_rows
    jobs = [(_label, batch.column("label"))]
    jobs += [(_dense, batch.column(f"int_{k}")) for k in range(N_DENSE)]
    jobs += [(_hex, batch.column(f"cat_{k}")) for k in range(N_SPARSE)]
    done = list(_pool().map(lambda job: job[0](job[1], n), jobs))  # compiled: no GIL held
    if any(x is None for x in done):
        return None
    return done[0], done[1:1 + N_DENSE], done[1 + N_DENSE:]


def read(path: str | Path, chunk_rows: int, stats: ReadStats) -> Iterator[Chunk]:
    """The file's chunks of `chunk_rows` (the last shorter); Fallback(line) where a line
    breaks the format, `line` the first line of the rows not yet handed out (so the line
    reader's chunks start where these ended)."""
    rest: Rows | None = None
    emitted = 0
    batches = parsed_segments(Path(path))
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            break
        except Fallback:
            raise Fallback(emitted + 1) from None
        cols = converted(batch)
        if cols is None:
            raise Fallback(emitted + 1)
        rows, at = Rows(*cols), 0
        if rest is not None:  # the last segment's rows and this one's first make a chunk
            at = min(rows.n, chunk_rows - rest.n)
            rest = rest.then(rows.part(0, at))
            if rest.n < chunk_rows:
                continue
            yield rest.chunk(0, chunk_rows, emitted + 1)
            stats.lines += chunk_rows
            emitted += chunk_rows
        while rows.n - at >= chunk_rows:
            yield rows.chunk(at, at + chunk_rows, emitted + 1)
            stats.lines += chunk_rows
            emitted += chunk_rows
            at += chunk_rows
        rest = rows.part(at, rows.n)
    if rest is not None and rest.n:
        yield rest.chunk(0, rest.n, emitted + 1)
        stats.lines += rest.n


class Rows:
    """Checked rows not yet handed out: labels, (values, validity) per integer column,
    (ids, validity, id offsets) per category column."""

    def __init__(self, labels, dense, cats) -> None:
        self.labels, self.dense, self.cats = labels, dense, cats
        self.n = len(labels)

    def chunk(self, a: int, b: int, first_line: int) -> Chunk:
        """Rows a to b as a Chunk (views, but for the offsets)."""
        cols: dict[str, ColumnData] = {}
        for k, (v, valid) in enumerate(self.dense):
            cols[f"int_{k}"] = ColumnData(v[a:b], None, valid[a:b])
        for k, (ids, valid, off) in enumerate(self.cats):
            cols[f"cat_{k}"] = ColumnData(ids[off[a]:off[b]], off[a:b + 1] - off[a],
                                          valid[a:b])
        return Chunk(self.labels[a:b], cols, first_line)

    def part(self, a: int, b: int) -> Rows:
        """Rows a to b (views; offsets from 0)."""
        return Rows(self.labels[a:b], [(v[a:b], valid[a:b]) for v, valid in self.dense],
                    [(ids[off[a]:off[b]], valid[a:b], off[a:b + 1] - off[a])
                     for ids, valid, off in self.cats])

    def then(self, more: Rows) -> Rows:
        """These rows followed by `more` (copies: used for less than a chunk)."""
        return Rows(np.concatenate([self.labels, more.labels]),
                    [(np.concatenate([v, w]), np.concatenate([a, b]))
                     for (v, a), (w, b) in zip(self.dense, more.dense)],
                    [(np.concatenate([v, w]), np.concatenate([a, b]),
                      np.concatenate([o, p[1:] + o[-1]]))
                     for (v, a, o), (w, b, p) in zip(self.cats, more.cats)])
