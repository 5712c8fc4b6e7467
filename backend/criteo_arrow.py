"""Criteo-format TSV read with pyarrow's multi-threaded CSV reader, every field checked
and converted a whole column at a time (the same format backend/data.py's line reader
parses: labels 0 or 1, 32-bit integers of an optional minus and digits,
categories of 1 to 8 hex digits, an empty field a null).

The file is read in blocks, each checked whole before its rows are handed out in
chunks. At the first block with a bad line, reading goes on a line at a time (the line
reader names the line and column, or skips it) from the first row not yet handed out."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from corun.backend.columns import ColumnData
from corun.backend.data import DENSE_DIGITS, DENSE_MAX, N_DENSE, N_SPARSE, Chunk, ReadStats

NAMES = ["label", *(f"int_{k}" for k in range(N_DENSE)), *(f"cat_{k}" for k in range(N_SPARSE))]
HEX_PATTERN = r"^([0-9a-fA-F]{1,8})?$"
"""The categories the line reader accepts (backend/data.py), as an RE2 pattern."""
SEGMENT_BYTES = 256 << 20
"""Bytes of whole lines read and converted at a time (memory: a few times this)."""
BLOCK_BYTES = 8 << 20
"""Bytes of a segment each of the reader's threads parses at a time."""

_NIBBLE = np.full(256, -1, np.int64)
for _i, _c in enumerate(b"0123456789"):
    _NIBBLE[_c] = _i
for _i, _c in enumerate(b"abcdef"):
    _NIBBLE[_c] = _NIBBLE[_c - 32] = 10 + _i
_NIBBLE_U8 = np.where(_NIBBLE < 0, 255, _NIBBLE).astype(np.uint8)
"""_NIBBLE as bytes (255: not a hex digit)."""


@functools.cache
def _pool() -> ThreadPoolExecutor:
    """Threads that check and convert a block's columns side by side."""
    return ThreadPoolExecutor(max(1, os.cpu_count() or 1), thread_name_prefix="criteo")


def available() -> bool:
    try:
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return False
    return True


class Fallback(Exception):
    """A line breaks the format: read on a line at a time from line `line`."""

    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


def _batches(path: Path) -> Iterator:
    """The file as tables of strings, one for each segment of whole lines (pyarrow's
    reader parses a segment's blocks on all cores; its streaming reader takes one);
    Fallback at a line with another field count, or bytes that are not UTF-8 (the
    reader's error has no line to name)."""
    import pyarrow as pa
    import pyarrow.csv as csv

    options = dict(
        read_options=csv.ReadOptions(column_names=NAMES, block_size=BLOCK_BYTES),
        parse_options=csv.ParseOptions(delimiter="\t", quote_char=False, escape_char=False,
                                       ignore_empty_lines=False,
                                       invalid_row_handler=lambda row: "error"),
        convert_options=csv.ConvertOptions(column_types={n: pa.string() for n in NAMES},
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


def _segments(path: Path) -> Iterator[bytes]:
    """The file's bytes in pieces of about SEGMENT_BYTES, each of whole lines."""
    with open(path, "rb") as f:
        carry = b""
        while True:
            block = f.read(SEGMENT_BYTES)
            if not block and not carry:
                return
            buf, carry = carry + block, b""
            if block:  # whole lines only; the rest starts the next segment
                cut = buf.rfind(b"\n") + 1
                buf, carry = buf[:cut], buf[cut:]
                if not buf:
                    continue
            yield buf


def _strings(column) -> tuple[np.ndarray, np.ndarray]:
    """An Arrow string column's bytes and its rows' start offsets (n + 1)."""
    col = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    offsets = np.frombuffer(col.buffers()[1], np.int32)[col.offset:col.offset + len(col) + 1]
    data = np.frombuffer(col.buffers()[2], np.uint8) if col.buffers()[2] else np.zeros(0, np.uint8)
    return data, offsets.astype(np.int64)


def _dense(column) -> tuple[np.ndarray, np.ndarray] | None:
    """An integer column as float32 values and validity, or None where a field is not an
    optional minus and digits within 32 bits. Arrow's cast refuses signs other than a
    leading minus, blanks, points and exponents; the digit count and the hex prefix it
    would take ("0x10") are checked here."""
    import pyarrow as pa
    import pyarrow.compute as pc

    data, off = _strings(column)
    lengths = np.diff(off)
    valid = lengths > 0
    minus = np.zeros(len(lengths), np.int64)
    minus[valid] = data[off[:-1][valid]] == ord("-")
    if (lengths - minus > DENSE_DIGITS).any() or (data == ord("x")).any() \
            or (data == ord("X")).any():
        return None
    try:
        ints = pc.cast(pc.if_else(valid, column, pa.scalar(None, pa.string())), pa.int64())
    except pa.ArrowInvalid:
        return None
    value = ints.fill_null(0).to_numpy(zero_copy_only=False)
    if ((value > DENSE_MAX) | (value < -DENSE_MAX - 1)).any():
        return None
    return value.astype(np.float32), valid


def _hex(column) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """A category column as its non-null int64 ids, validity and id offsets (n + 1), or
    None where a field is not 1 to 8 hex digits (Criteo's 8 digits converted as they
    lie; other lengths checked by RE2 first)."""
    data, off = _strings(column)
    lengths = np.diff(off)
    valid = lengths > 0
    if (lengths[valid] == 8).all():  # the non-null fields lie end to end, 8 bytes each
        nib = _NIBBLE_U8[data[off[0]:off[-1]]]
        if (nib > 15).any():
            return None
        pairs = (nib[0::2] << 4) | nib[1::2]  # two digits a byte, most significant first
        return pairs.view(">u4").astype(np.int64), valid, (off - off[0]) // 8
    import pyarrow.compute as pc

    if not pc.all(pc.match_substring_regex(column, HEX_PATTERN)).as_py():
        return None
    starts = off[:-1][valid]
    value = np.zeros(len(starts), np.int64)
    mine = lengths[valid]
    for j in range(8):
        at = mine > j
        value[at] = value[at] * 16 + _NIBBLE[data[starts[at] + j]]
    ids = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(valid, out=ids[1:])
    return value, valid, ids


def _columns(batch) -> tuple | None:
    """A batch's labels, (float32 values, validity) per integer column and (ids, validity,
    id offsets) per category column; None where a field breaks the format."""
    import pyarrow.compute as pc

    label = batch.column("label")
    if not pc.all(pc.match_substring_regex(label, "^[01]$")).as_py():
        return None
    label_data, label_off = _strings(label)
    labels = label_data[label_off[:-1]].astype(np.int16) - ord("0")
    jobs = [(_dense, batch.column(f"int_{k}")) for k in range(N_DENSE)]
    jobs += [(_hex, batch.column(f"cat_{k}")) for k in range(N_SPARSE)]
    done = list(_pool().map(lambda job: job[0](job[1]), jobs))  # numpy and Arrow free the GIL
    dense, cats = done[:N_DENSE], done[N_DENSE:]
    if any(x is None for x in (*dense, *cats)):
        return None
    return labels.astype(np.int8), dense, cats


def read(path: str | Path, chunk_rows: int, stats: ReadStats) -> Iterator[Chunk]:
    """The file's chunks of `chunk_rows` (the last shorter); Fallback(line) where a line
    breaks the format, `line` the first line of the rows not yet handed out (so the line
    reader's chunks start where these ended)."""
    rest: Rows | None = None
    emitted = 0
    batches = _batches(Path(path))
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            break
        except Fallback:
            raise Fallback(emitted + 1) from None
        cols = _columns(batch)
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
