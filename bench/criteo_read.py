"""Criteo TSV reading speed: the Arrow reader against the line reader, on one file.

Run: python bench/criteo_read.py [--rows 10000000] [--python-rows 200000] -o read.json
Writes a Criteo-format file of `--rows` lines (a block of distinct seeded lines, repeated),
then reads it to the end with each engine of backend.data.read_criteo in chunks of
65,536 rows: the Arrow reader over all of it, the line reader over its first
`--python-rows` lines (it is too slow for all). Reports rows per second for each (the
median of `--repeats` reads), their ratio, and this machine's core count; and the Arrow
reader's two stages on their own: pyarrow's parse into raw fields, and the compiled
checks and conversion of parsed segments held in memory.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from corun.backend.data import read_criteo, write_criteo_tsv
from corun.spec.provenance import git_commit
from corun.spec.serde import write_atomic

BLOCK_LINES = 100_000
"""Distinct lines written once and repeated to make the file."""


def make_file(path: Path, rows: int, seed: int = 0) -> None:
    block = path.with_suffix(".block")
    write_criteo_tsv(block, min(rows, BLOCK_LINES), np.random.default_rng(seed))
    text = block.read_bytes()
    block.unlink()
    lines = text.count(b"\n")
    with open(path, "wb") as f:
        for _ in range(rows // lines):
            f.write(text)
        rest = rows % lines
        if rest:
            f.write(b"".join(text.splitlines(keepends=True)[:rest]))


def read_rate(path: Path, engine: str, repeats: int) -> dict:
    times, rows = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        rows = sum(c.rows for c in read_criteo(path, 65536, engine=engine))
        times.append(time.perf_counter() - t0)
    s = statistics.median(times)
    return {"engine": engine, "rows": rows, "seconds": s, "rows_per_s": rows / s}


def stage_rates(path: Path, repeats: int, kept: int = 4) -> dict:
    """Rows per second of the Arrow reader's parse alone (over the whole file) and of its
    conversion alone (over the first `kept` parsed segments), medians of `repeats`."""
    from corun.backend import criteo_arrow

    parse, convert, rows = [], [], 0
    for _ in range(repeats):
        t0, rows = time.perf_counter(), 0
        for table in criteo_arrow.parsed_segments(path):
            rows += table.num_rows
        parse.append(rows / (time.perf_counter() - t0))
    tables = []
    for table in criteo_arrow.parsed_segments(path):
        tables.append(table)
        if len(tables) == kept:
            break
    held = sum(t.num_rows for t in tables)
    criteo_arrow.converted(tables[0])  # compiled before timing
    for _ in range(repeats):
        t0 = time.perf_counter()
        for table in tables:
            assert criteo_arrow.converted(table) is not None
        convert.append(held / (time.perf_counter() - t0))
    return {"parse_rows_per_s": statistics.median(parse),
            "convert_rows_per_s": statistics.median(convert), "convert_rows": held}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--python-rows", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--work", help="folder for the files (default: a temporary one)")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args(argv)
    if min(args.rows, args.python_rows, args.repeats) < 1:
        ap.error("--rows, --python-rows and --repeats: integers >= 1")
    with tempfile.TemporaryDirectory(dir=args.work) as d:
        big, small = Path(d) / "day.tsv", Path(d) / "slice.tsv"
        make_file(big, args.rows)
        make_file(small, min(args.rows, args.python_rows))
        arrow = read_rate(big, "arrow", args.repeats)
        python = read_rate(small, "python", args.repeats)
        stages = stage_rates(big, args.repeats)
        size = big.stat().st_size
    out = {"bench": "criteo_read", "git_commit": git_commit(), "cores": os.cpu_count(),
           "machine": platform.node(), "file_bytes": size, "arrow": arrow,
           "python": python, "arrow_stages": stages,
           "speedup": arrow["rows_per_s"] / python["rows_per_s"]}
    write_atomic(args.output, json.dumps(out, indent=1))
    print(f"{os.cpu_count()} cores: arrow {arrow['rows_per_s']:,.0f} rows/s over "
          f"{arrow['rows']:,} rows, python {python['rows_per_s']:,.0f} rows/s over "
          f"{python['rows']:,}: {out['speedup']:.0f}x; arrow's parse alone "
          f"{stages['parse_rows_per_s']:,.0f} rows/s, its conversion alone "
          f"{stages['convert_rows_per_s']:,.0f} rows/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
