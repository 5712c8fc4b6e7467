"""What the trainer's flat interaction saved, measured inside the step: costmodel/
interaction.py's SAVING_CSV from pairs of `ideal` records, one from before the change
(advanced indexing) and one after, of the same models and batches.

Each pair gives, for every (model, batch) case ideal ran in both (on the GPU the record
names), the interaction stages' medians (median over the record's cases) before and
after; a third value of `--pair` keeps the named models only. Stage
times are GPU-side (CUDA events between stage marks), so a step replayed as CUDA graphs
measures the same kernels without launch gaps; eager records serve where the GPU paces
the step (heavy-fused, which graphs do not run). Run on the H200 records of 2026-12-01:

  R=bench/results/raw; python bench/interaction_saving.py \
    --pair $R/execute_graphs_stages_run2.json.gz $R/execute_flat_graphs_stages_run1.json.gz \
    --pair $R/execute_heavy_run2.json.gz $R/execute_flat_heavy_ideal_run1.json.gz heavy-fused \
    --pair $R/execute_plans_run12.json.gz $R/execute_flat_plans_ideal_run1.json.gz heavy \
    --skip heavy-fused:8192 -o costmodel/data/h200/interaction-saving.csv

(The eager pairs keep the heavy models: eager kaggle and terabyte ideals were host-paced
on that machine, their stage times stretched by launch gaps; so was heavy-fused b8192
after the change, ideal 4.43 ms against its host's 4.40 ms step, its interaction_bwd
0.45 ms where b16384's took 0.21 and b32768's 0.40: left out.)
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import spec  # noqa: E402
from costmodel.interaction import COLUMNS, STAGES  # noqa: E402
from spec.serde import read_document, write_atomic  # noqa: E402


def ideal_stages(path: str) -> dict[tuple[str, str, int], dict[str, float]]:
    """(GPU, model, batch) -> each interaction stage's median ms over the record's
    one-GPU ideal cases (a record runs its matrix one way: eager, or every case
    graphed)."""
    times: dict[tuple[str, str, int], dict[str, list[float]]] = {}
    for c in read_document(path):
        m = c["measurement"]
        if c["strategy"] != "ideal" or m["gpu_count"] != 1:
            continue
        key = (m["hardware"], m["model"], m["batch_per_gpu"])
        for st in STAGES:
            times.setdefault(key, {}).setdefault(st, []).append(m["stages"][st]["median_ms"])
    return {k: {st: statistics.median(v) for st, v in d.items()} for k, d in times.items()}


def saving_rows(before: str, after: str, models: set[str] | None,
                skip: set[tuple[str, int]]) -> list[tuple]:
    """SAVING_CSV rows from one pair of records: every case both timed."""
    old, new = ideal_stages(before), ideal_stages(after)
    rows = []
    for key in sorted(set(old) & set(new)):
        gpu, name, batch = key
        model = spec.model_preset(name)
        if (models and name not in models) or model.interaction is not spec.Interaction.DOT \
                or (name, batch) in skip:
            continue
        for st in STAGES:
            rows.append((gpu, model.features, model.embedding_dim, batch, st,
                         f"{old[key][st]:.5f}", f"{new[key][st]:.5f}",
                         f"{Path(before).name} -> {Path(after).name} ({name})"))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pair", nargs="+", action="append", required=True,
                    metavar="BEFORE AFTER [MODELS]",
                    help="two execute records of ideal, and the comma-separated models to "
                         "keep of them (default: every dot-interaction model)")
    ap.add_argument("--skip", default="", help="comma-separated MODEL:BATCH cases left out")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args(argv)
    skip = set()
    for x in filter(None, args.skip.split(",")):
        model, _, batch = x.partition(":")
        if not model or not batch.isdigit():
            ap.error(f"--skip = {x!r}: MODEL:BATCH, a batch a positive integer")
        skip.add((model, int(batch)))
    for pair in args.pair:
        for path in pair[:2]:
            if not Path(path).exists():
                ap.error(f"--pair {path!r}: an execute record that exists")
    rows = []
    for pair in args.pair:
        if len(pair) not in (2, 3):
            ap.error(f"--pair {' '.join(pair)}: BEFORE AFTER [MODELS], 2 or 3 values")
        models = set(pair[2].split(",")) if len(pair) == 3 else None
        rows += saving_rows(pair[0], pair[1], models, skip)
    if not rows:
        raise SystemExit("no ideal case of a dot-interaction model in both records of a pair")
    lines = [",".join(COLUMNS)] + [",".join(map(str, r)) for r in rows]
    write_atomic(args.output, "\n".join(lines) + "\n")
    print(f"wrote {args.output}: {len(rows)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
