"""Tables of bench/stage_offset_probe.py runs: for each kernel and offset into the stage,
its span, the span over its time alone, when it ended (from the stage's opening) and the
stage's median beside its time alone; with --rooms, the rooms fitted from such runs
(`python -m costmodel.stage_room`), one table per model, batch and kind.

    python bench/render_stage_offset.py RAW.json [RAW.json ...] [-o OUT.md]
    python bench/render_stage_offset.py --rooms ROOMS.json [-o OUT.md]
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


def room_tables(rooms: dict) -> list[str]:
    """Each fitted room (costmodel.stage_room.read_rooms) as a table: the pieces' starts
    (fractions of the stage alone), the rate a kernel of its kind gets in each and, for
    the assembly, the stage's slowdown beside it."""
    lines = []
    for (gpu, model, batch, stage, graphed, kind), room in sorted(
            rooms.items(), key=lambda kv: tuple(map(str, kv[0]))):
        lines += [f"**{model} b{batch}, {stage} ({'graphed' if graphed else 'eager'}), "
                  f"{kind.value}** ({gpu})", "",
                  "| piece from | " + " | ".join(f"{x:.2f}" for x in room.starts) + " |",
                  "|---|" + "---:|" * len(room.starts),
                  "| rate | " + " | ".join(f"{x:.3f}" for x in room.rates) + " |"]
        if room.stage_factors:
            lines.append("| stage factor | "
                         + " | ".join(f"{x:.2f}" for x in room.stage_factors) + " |")
        lines.append("")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("raw", nargs="*", type=Path)
    ap.add_argument("--rooms", type=Path, help="a rooms file `python -m costmodel.stage_room` "
                    "wrote: its tables instead of a probe's")
    ap.add_argument("-o", "--out", type=Path)
    args = ap.parse_args(argv)
    if bool(args.raw) == bool(args.rooms):
        ap.error("give the probe's raw files or --rooms ROOMS.json, not both or neither")
    if args.rooms:
        from costmodel.stage_room import read_rooms

        if not args.rooms.is_file():
            ap.error(f"rooms = {str(args.rooms)!r}: a JSON file `python -m "
                     "costmodel.stage_room` wrote")
        lines = ["# Rooms in time fitted from bench/stage_offset_probe.py runs", "",
                 f"Made by `python bench/render_stage_offset.py --rooms {args.rooms}`.", ""]
        lines += room_tables(read_rooms(args.rooms))
        publish("\n".join(lines), args.out, named=True, default_out=args.out)
        return 0
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
