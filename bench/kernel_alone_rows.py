"""A kernel's time alone at rows the profile did not time: the trees against the line
through the same kernel's other timed row counts (`CoRunModel.kernel_alone_ms`). No GPU.

Each model/batch combination of the profile is held out in turn; the model is fitted on
the rest, and every held-out row whose kernel (same nodes and launch shape) the rest never
timed at those rows, but timed at two or more others, is predicted both ways. Also the
kernel's co-run time (`kernel_corun`) with each of the two times alone handed to the
co-run estimator. Scored per row (mean absolute percent error, share within 10%), apart
for rows inside the timed row counts (interpolated) and outside them (extrapolated).
With --repredict, also every executed case and `corun tune` run predicted again both
ways, as bench/effect_in_time_experiment.py does (about 20 minutes more on a 2-core
machine): the errors by model, and per command whether the plan predicted best was the
measured best. "Trees" is the rule before 2026-12-03: the profile's time where it timed
the kernel at those rows, else the trees', and the trees' time alone handed to the
co-run estimator.

    python bench/kernel_alone_rows.py [--data costmodel/data/h200] [--repredict] \
        [-o bench/results/kernel_alone_rows.md]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import costmodel.learned as learned  # noqa: E402
from costmodel.learned import (  # noqa: E402
    CoRunModel,
    _f,
    fitted,
    gpu_of,
    is_resident,
    measured,
    score,
)
from costmodel.profile_data import fit_rows  # noqa: E402
from sim.simulate import git_commit  # noqa: E402
from spec.serde import write_atomic  # noqa: E402


def held_out_rows(rows: list[dict]) -> list[dict]:
    """One record per held-out row the line can answer: where it falls, and both ways'
    predictions and truth for the kernel alone and co-run."""
    out = []
    for combo in sorted({(r["model"], r["batch"]) for r in rows}):
        train = [r for r in rows if (r["model"], r["batch"]) != combo]
        test = [r for r in rows if (r["model"], r["batch"]) == combo and not is_resident(r)]
        model = CoRunModel(0).fit(train)
        asked, line = [], []
        for r in test:
            gpu, rows_n = gpu_of(r["gpu"]).name, int(_f(r, "rows"))
            if (gpu, r["kernel"], rows_n) in model.kernel_measured:
                continue  # timed at these rows under another model: a lookup, not a fit
            ms = model.kernel_alone_ms(gpu, r["kernel"], rows_n)
            if ms is None:
                continue
            timed = model.kernel_timed(gpu, r["kernel"])
            asked.append(r)
            line.append((ms, timed[0][0] <= rows_n <= timed[-1][0]))
        if not asked:
            continue
        trees = model.predict(asked)
        by_line = model.predict(asked, [ms for ms, _ in line])
        truth = measured(asked)
        for i, r in enumerate(asked):
            out.append({"combo": combo, "kernel": r["kernel"], "inside": line[i][1],
                        **{f"{way}_{t}": float(p[t][i]) for way, p in
                           (("trees", trees), ("line", by_line))
                           for t in ("kernel_alone", "kernel_corun")},
                        **{f"true_{t}": float(truth[t][i])
                           for t in ("kernel_alone", "kernel_corun")}})
    return out


def table(records: list[dict]) -> list[str]:
    lines = ["| rows | where | target | trees: error / within 10% | line: error / within 10% |",
             "|---:|---|---|---:|---:|"]
    for inside, where in ((True, "inside the timed rows"), (False, "outside them")):
        part = [r for r in records if r["inside"] is inside]
        if not part:
            continue
        for t in ("kernel_alone", "kernel_corun"):
            true = np.array([r[f"true_{t}"] for r in part])
            cells = []
            for way in ("trees", "line"):
                s = score(np.array([r[f"{way}_{t}"] for r in part]), true)
                cells.append(f"{s.mape_pct:.1f}% / {100 * s.within_10pct:.0f}%")
            lines.append(f"| {len(part)} | {where} | {t} | {cells[0]} | {cells[1]} |")
    return lines


@contextlib.contextmanager
def trees_only():
    """The rule before the line: `kernel_alone_ms` answers the profiled rows only, and
    `predict` keeps the trees' time alone; the loaded cost models, which memoise their
    answers, are dropped on the way in and out."""
    line_ms, predict = CoRunModel.kernel_alone_ms, CoRunModel.predict

    def exact(self, gpu, kernel, rows):
        return self.kernel_measured.get((gpu, kernel, rows))

    CoRunModel.kernel_alone_ms = exact
    CoRunModel.predict = lambda self, rows, alone_ms=(): predict(self, rows)
    learned._LOADED.clear()
    try:
        yield
    finally:
        CoRunModel.kernel_alone_ms, CoRunModel.predict = line_ms, predict
        learned._LOADED.clear()


def repredicted() -> list[str]:
    """Every executed case predicted both ways: errors and ranking by model, and the
    commands whose predicted best moved."""
    from bench.repredict import compare_ways, every_raw, rows
    from bench.vocab_probe import registered

    raw, skipped = every_raw(), {}
    with registered():
        with trees_only():
            before = rows(raw, skipped)
        after = rows(raw, skipped)
    return ["", f"## Every executed case predicted again ({len(raw) - len(skipped)} of "
            f"{len(raw)} raw runs under bench/results/raw/ that today's code simulates)",
            "", *compare_ways({"trees": before, "line (committed)": after}, "kernel alone",
                              " by the trees, then by the line", ("trees", "line"))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path("costmodel/data/h200"))
    ap.add_argument("--repredict", action="store_true",
                    help="also predict every executed case both ways (about 20 minutes)")
    ap.add_argument("-o", "--out", type=Path)
    args = ap.parse_args(argv)
    if not args.data.is_dir():
        ap.error(f"data = {str(args.data)!r}: a folder of `corun profile` CSVs")
    rows = [r for r in fit_rows(args.data) if fitted(r)]
    records = held_out_rows(rows)
    combos = sorted({r["combo"] for r in records})
    text = ["# A kernel's time alone at untimed rows: trees against the line", "",
            "Made by `python bench/kernel_alone_rows.py"
            + (f" --data {args.data}" if args.data != Path("costmodel/data/h200") else "")
            + (" --repredict" if args.repredict else "")
            + (f" -o {args.out}" if args.out else "") + f"` at commit {git_commit()} "
            "(its docstring says how). "
            f"{len(records)} held-out rows of {len(combos)} model/batch combinations "
            "whose kernel was timed at two or more other row counts.", "", *table(records),
            "", "By held-out combination (kernel alone, error of trees / line):", ""]
    for combo in combos:
        part = [r for r in records if r["combo"] == combo]
        true = np.array([r["true_kernel_alone"] for r in part])
        t, li = (score(np.array([r[f"{w}_kernel_alone"] for r in part]), true).mape_pct
                 for w in ("trees", "line"))
        text.append(f"- {combo[0]} b{combo[1]}: {len(part)} rows, {t:.1f}% / {li:.1f}%")
    if args.repredict:
        text += repredicted()
    body = "\n".join(text) + "\n"
    if args.out:
        write_atomic(args.out, body)
    print(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
