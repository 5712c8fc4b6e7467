"""Tables of bench/stage_offset_probe.py runs: for each kernel and offset into the stage,
its span, the span over its time alone, when it ended (from the stage's opening) and the
stage's median beside its time alone.

    python bench/render_stage_offset.py RAW.json [RAW.json ...] [-o OUT.md]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_execute import publish  # noqa: E402
from spec.serde import read_stored_text, stored_path  # noqa: E402


def table(run: dict) -> list[str]:
    lines = [f"## {run['model']} beside {run['pipeline']}, batch {run['batch']}, released "
             f"into {run['stage']} ({'graphed' if run['graphed'] else 'eager'})", "",
             f"`{run['command']}` ({run['reps']} steps a point, medians)", "",
             "| kernel | blocks | offset ms | span ms | span / alone | ends at ms "
             f"| {run['stage']} ms (alone) |", "|---|---:|---:|---:|---:|---:|---:|"]
    for r in run["rows"]:
        lines.append(f"| `{r['kernel']}` | {r['blocks']} | {r['offset_ms']:.2f} "
                     f"| {r['kernel_ms']:.3f} | {r['kernel_ms'] / r['kernel_alone_ms']:.2f} "
                     f"| {r['offset_ms'] + r['kernel_ms']:.3f} "
                     f"| {r['stage_ms']:.3f} ({r['stage_alone_ms']:.3f}) |")
    return lines + [""]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("raw", nargs="+", type=Path)
    ap.add_argument("-o", "--out", type=Path)
    args = ap.parse_args(argv)
    missing = [str(p) for p in args.raw if not stored_path(p).is_file()]
    if missing:
        ap.error(f"raw = {missing[0]!r}: a JSON file bench/stage_offset_probe.py wrote")
    lines = ["# Room inside a training stage, by where a kernel starts", "",
             "Made by `python bench/render_stage_offset.py "
             + " ".join(str(p) for p in args.raw) + "`.", ""]
    for p in args.raw:
        lines += table(json.loads(read_stored_text(p)))
    text = "\n".join(lines)
    publish(text, args.out, named=True, default_out=args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
