"""Early against late assembly, from one `python bench/execute_gpu.py --matrix assembly`
run: each strategy with every batch's assembly enqueued right after its last kernel (the
executor's default) and after the host's launches of the whole step ("+late", the
executor of runs 1-10). Shares of ideal are against the ideal of the same command.

    python bench/render_assembly.py RAW.json [-o bench/results/assembly_h200.md]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spec.serde import read_stored_text, write_atomic  # noqa: E402


def _share(m: dict, ideal: dict) -> float:
    return 100 * m["throughput_samples_per_s"] / ideal["throughput_samples_per_s"]


def _wait(m: dict) -> float:
    """The host's median wait for a batch's id counts."""
    return m["host"].get("wait", {}).get("median_ms", 0.0)


def pairs(runs: list[dict]) -> list[dict]:
    """One row per (pipeline, batch, strategy) measured both ways."""
    done = {(r["pipeline"], r["batch"], r["strategy"]): r["measurement"] for r in runs
            if r.get("measurement")}
    out = []
    for (pipe, batch, label), early in done.items():
        late = done.get((pipe, batch, label + "+late"))
        ideal = done.get((pipe, batch, "ideal"))
        if label.endswith("+late") or late is None or ideal is None:
            continue

        out.append({"pipeline": pipe, "batch": batch, "strategy": label,
                    "early_ms": early["iteration"]["median_ms"],
                    "early_p90_ms": early["iteration"]["p90_ms"],
                    "late_ms": late["iteration"]["median_ms"],
                    "late_p90_ms": late["iteration"]["p90_ms"],
                    "early_pct": _share(early, ideal), "late_pct": _share(late, ideal),
                    "early_wait_ms": _wait(early), "late_wait_ms": _wait(late),
                    "command": early["command"], "commit": early["git_commit"]})
    return out


def render(rows: list[dict], source: str) -> str:
    lines = ["# Batch assembly enqueued early against late, on the H200", "",
             f"From `{source}`, measured with `{rows[0]['command']}` at commit "
             f"{rows[0]['commit'][:7]}; rendered by `python bench/render_assembly.py`. "
             "early: each batch's assembly enqueued right after its last kernel launch; "
             "late: after the host has launched the whole step. Throughput as a share of "
             "the same run's ideal; host wait = the host's wait for the batch's id counts "
             "(median).", "",
             "| workload | strategy | early ms (p90) | late ms (p90) | early / late of ideal "
             "| host wait early / late |", "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['pipeline']} b{r['batch']} | {r['strategy']} | {r['early_ms']:.3f} "
            f"({r['early_p90_ms']:.2f}) | {r['late_ms']:.3f} ({r['late_p90_ms']:.2f}) | "
            f"{r['early_pct']:.1f}% / {r['late_pct']:.1f}% | {r['early_wait_ms']:.2f} / "
            f"{r['late_wait_ms']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", type=Path)
    ap.add_argument("-o", "--out", type=Path, default=ROOT / "bench/results/assembly_h200.md")
    args = ap.parse_args(argv)
    if not args.raw.is_file():
        print(f"render_assembly: RAW = {str(args.raw)!r}: no such file", file=sys.stderr)
        return 2
    rows = pairs(json.loads(read_stored_text(args.raw)))
    if not rows:
        print(f"render_assembly: {args.raw} holds no strategy measured both early and late "
              "beside its ideal (bench/execute_gpu.py --matrix assembly)", file=sys.stderr)
        return 2
    text = render(rows, str(args.raw))
    write_atomic(args.out, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
