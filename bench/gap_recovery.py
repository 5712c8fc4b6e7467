"""Issue 6's two heavy targets side by side, over every committed command that measured a
heavy model's ideal and gpu-sequential in the same rounds: gpu-sequential's gap below
ideal against the share of it the command's fastest strategy, and the planner's choice
(`corun`), recovered. One point per command and workload; the targets ask for a point at
a gap of 20% or more and a recovery of 75% or more.

    python bench/gap_recovery.py [-o bench/results/gap_recovery.md]
                                 [--png bench/results/gap_recovery.png]

Read from bench/results/raw/: every `execute_*.json` (bench/execute_gpu.py and
bench/vocab_probe.py records), every `tune_*/tune.json` (corun tune: each strategy's
median round, kept beside it) and every `sm_cap_*/` folder of `corun execute` records
named <strategy>-r<round>.json (bench/sm_cap_session.sh). Every time is a mean
iteration, as the throughput counts it (reports.rounds.record_iteration_ms: slow steps
counted, which a median step hides). Shares as reports.rounds takes them: per round
against that round's ideal and gpu-sequential, then the median; recovered =
(gpu-sequential - strategy) / (gpu-sequential - ideal) in time.
A strategy run another way than a plan would be (`ideal+...`, a baseline) is not a
"fastest". A command that also ran ideal and gpu-sequential with the fused embedding
update on another grid (`ideal+ub16`, `gpu-sequential+ub16`) gives a second point on
that grid: its gap against that grid's ideal, recovered by the plans run on it
(`corun+ub16`, tune's `corun-ub16`; reports.rounds.gap_baselines).
Records whose timed batches were all compared with the reference (every run
before 2026-12-02, and `--check-timed` since) are marked: the comparison cost the plans
and gpu-sequential time that ideal never pays, so their gaps read wider.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.render_execute import run_name, tune_records  # noqa: E402
from reports.rounds import (  # noqa: E402
    IDEAL,
    SEQUENTIAL,
    grid_baselines,
    is_ideal,
    record_iteration_ms,
    round_stats,
    update_grid,
)
from spec.measurement import CHECKED_EVERY  # noqa: E402
from spec.plan import TRAINER_UPDATE_BLOCKS_PER_SM  # noqa: E402
from spec.serde import read_stored_text, stored_glob, write_atomic  # noqa: E402

RAW = ROOT / "bench/results/raw"
GAP_TARGET_PCT, RECOVERY_TARGET_PCT = 20.0, 75.0
MIN_RATIO_GAP_PCT = 5.0
"""A gap below which the summary quotes no share recovered: over a gap of a few percent
the round-to-round spread is most of it (the uncounted heavy-rehash b16384 tune of run
24, whose ideal ran slow, put a 1.8% gap at 341%). Such rows stay in the table."""
GAP_AXIS_PCT, RECOVERED_AXIS_PCT = (0.0, 40.0), (-60.0, 140.0)
"""The figure's axes: a point outside them is counted in the report, not drawn."""
BASELINES = ("gpu-sequential", "gpu-overlap")


@dataclass(frozen=True)
class Point:
    """One command's one workload on one update grid."""

    source: str
    model: str
    pipeline: str
    batch: int
    graphed: bool
    compared: bool
    rounds: int
    gap_pct: float
    """gpu-sequential's median share of ideal below 100%, both on `update_grid`."""
    best: str
    best_recovered_pct: float
    choice_recovered_pct: float | None
    """The planner's choice (`corun`, on `update_grid`) where the command ran it."""
    update_grid: int | None = None
    """The fused embedding update's blocks an SM the point's strategies ran on (None: the
    trainer's default, spec.plan.TRAINER_UPDATE_BLOCKS_PER_SM)."""

    @property
    def on_target(self) -> bool:
        return self.gap_pct >= GAP_TARGET_PCT and self.best_recovered_pct >= RECOVERY_TARGET_PCT


def _is_plan_like(strategy: str, grid: int | None = None) -> bool:
    """A strategy that preprocesses as a plan may on update grid `grid` (None: the
    default): not ideal or a variant of it, not a baseline (gpu-sequential is the gap
    itself), checking its batches as gpu-sequential did ("+nocheck" and "+checked"
    change what the batches pay), and training with the fused update on that grid
    ("+ub<N>" and tune's "-ub<N>" name another; "+uncapped" runs it a thread per bag and
    column), whose own ideal is that grid's (bench/results/update_grid_rehash_h200.md)."""
    base, *suffixes = strategy.split("+")
    return not is_ideal(strategy) and base not in BASELINES and "uncapped" not in suffixes \
        and update_grid(strategy) == grid and not {"nocheck", "checked"} & set(suffixes)


def _compared(notes: list[str]) -> bool:
    """Whether a measurement's notes say every timed batch was compared (all of its rows,
    or, in the earliest runs, a sample of each)."""
    return any(CHECKED_EVERY in n or "rows of every batch were compared" in n for n in notes)


def _grids(times_ms: dict[int, dict[str, float]]) -> list[int | None]:
    """The default grid, then each grid N whose ideal+ubN and gpu-sequential+ubN a round
    measured."""
    names = {s for t in times_ms.values() for s in t}
    return [None] + sorted({n for s in names if (n := update_grid(s)) is not None
                            and set(grid_baselines(n)) <= names})


def points(source: str, key: tuple, times_ms: dict[int, dict[str, float]], graphed: bool,
           compared: bool, rounds: int | None = None) -> list[Point]:
    """The Points of one workload's rounds ({round: {strategy: mean iteration ms}}), one
    per update grid with ideal, gpu-sequential slower than it, and a plan-like strategy
    (reports.rounds.round_stats: each recovery against its own grid's baselines).
    `rounds` overrides the count (tune keeps only the median rounds)."""
    stats = {r.strategy: r for r in round_stats(times_ms)}
    out = []
    for grid in _grids(times_ms):
        ideal, seq = grid_baselines(grid)
        shares = [100 * t[ideal] / t[seq] for t in times_ms.values() if ideal in t and seq in t]
        plans = [r for r in stats.values() if _is_plan_like(r.strategy, grid)
                 and r.recovered_pct is not None]
        if not shares or statistics.median(shares) >= 100 or not plans:
            continue
        best = min(plans, key=lambda r: r.median_ms)
        choice = next((stats[c] for c in ("corun", f"corun+ub{grid}", f"corun-ub{grid}")
                       if c in stats and _is_plan_like(c, grid)), None)
        model, pipeline, batch = key
        out.append(Point(source, model, pipeline, batch, graphed, compared,
                         rounds or len(shares), 100 - statistics.median(shares), best.strategy,
                         best.recovered_pct, None if choice is None else choice.recovered_pct,
                         grid))
    return out


def execute_points(path: Path) -> list[Point]:
    """The Points of one execute_*.json record (each workload's cases by round)."""
    cases = json.loads(read_stored_text(path))
    if not isinstance(cases, list):
        return []
    groups: dict[tuple, dict] = {}
    for c in cases:
        m = c.get("measurement")
        if not m or not m["model"].startswith("heavy"):
            continue
        key = (m["model"], c["pipeline"], c["batch"])
        g = groups.setdefault(key, {"rounds": {}, "graphed": False, "compared": False})
        g["rounds"].setdefault(c.get("repeat", 0), {})[c["strategy"]] = \
            record_iteration_ms(m)
        if c["strategy"] == SEQUENTIAL:
            g["graphed"] = any("CUDA graphs" in n for n in m["notes"])
            g["compared"] = _compared(m["notes"])
    return [p for key, g in groups.items()
            for p in points(path.name, key, g["rounds"], g["graphed"], g["compared"])]


def tune_points(path: Path) -> list[Point]:
    """The Points of one `corun tune` summary (tune.json), from the measurement of each
    strategy's median round kept beside it (the rounds themselves are not kept), by its
    throughput; a strategy whose record was not kept is left out (three early folders'
    launch variants). Graphed and compared as its gpu-sequential record says."""
    doc = json.loads(read_stored_text(path))
    if not doc["model"].startswith("heavy"):
        return []
    records = tune_records(path, doc)
    if IDEAL not in records or SEQUENTIAL not in records:
        return []
    notes = records[SEQUENTIAL]["notes"]
    return points(run_name(path), (doc["model"], doc["pipeline"], doc["batch"]),
                  {0: {s: record_iteration_ms(m) for s, m in records.items()}},
                  any("CUDA graphs" in n for n in notes), _compared(notes), doc["rounds"])


ROUND_SUFFIX = re.compile(r"-r(\d+)$")
"""A `corun execute` record's name in a session folder: <strategy>-r<round>
(bench/sm_cap_session.sh)."""


def folder_points(folder: Path) -> list[Point]:
    """The Points of a folder of `corun execute` records named <strategy>-r<round>.json
    (the strategy as the session script labelled it; every record runs one workload)."""
    rounds: dict[int, dict[str, float]] = {}
    docs = {}
    for path in stored_glob(folder, "*.json"):  # plain names: <strategy>-r<round>.json
        m = ROUND_SUFFIX.search(path.stem)
        if m is None:
            continue
        strategy = path.stem[:m.start()]
        docs[strategy] = doc = json.loads(read_stored_text(path))
        rounds.setdefault(int(m.group(1)), {})[strategy] = record_iteration_ms(doc)
    if SEQUENTIAL not in docs or not docs[SEQUENTIAL]["model"].startswith("heavy"):
        return []
    seq = docs[SEQUENTIAL]
    return points(folder.name, (seq["model"], seq["pipeline"], seq["batch_per_gpu"]), rounds,
                  any("CUDA graphs" in n for n in seq["notes"]), _compared(seq["notes"]))


def all_points() -> list[Point]:
    out = [p for path in stored_glob(RAW, "execute_*.json") for p in execute_points(path)]
    out += [p for folder in sorted(RAW.glob("sm_cap_*")) for p in folder_points(folder)]
    out += [p for path in stored_glob(RAW, "tune_*/tune.json") for p in tune_points(path)]
    return sorted(out, key=lambda p: (p.gap_pct, p.source))


def render(points: list[Point], png: str | None) -> str:
    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v:.0f}%"

    def most(ps: list[Point]) -> str:
        if not ps:
            return "-"
        top = max(ps, key=lambda p: p.best_recovered_pct)
        return (f"{top.best_recovered_pct:.0f}% ({top.source}, {top.model} b{top.batch}"
                f"{grid_text(top)}, gap {top.gap_pct:.1f}%)")

    hit = [p for p in points if p.on_target]
    uncompared = [p for p in points if not p.compared]
    wide = [p for p in uncompared if p.gap_pct >= GAP_TARGET_PCT]
    narrow = [p for p in uncompared if MIN_RATIO_GAP_PCT <= p.gap_pct < GAP_TARGET_PCT]
    on16 = [p for p in points if p.update_grid == 16]
    lines = [
        "# The heavy case's gap and what was recovered of it, every command", "",
        "Made by `python bench/gap_recovery.py` (its docstring says how each number is "
        "taken). One row per command and heavy workload that measured ideal and "
        "gpu-sequential in the same rounds; \"fastest\" is the command's fastest plan-like "
        "strategy (not ideal or a variant of it, not a baseline), \"choice\" the planner's "
        f"plan where the command ran it. Issue 6 asks for a gap of {GAP_TARGET_PCT:.0f}% "
        f"or more and {RECOVERY_TARGET_PCT:.0f}% of it recovered.", "",
        f"- {len(points)} points from {len({p.source for p in points})} commands; "
        f"{len(hit)} in the target corner"
        + (": " + ", ".join(f"{p.source} ({p.model} b{p.batch}{grid_text(p)}, "
                            f"{'graphed' if p.graphed else 'eager'}, gap {p.gap_pct:.1f}%, "
                            f"{p.best} {p.best_recovered_pct:.0f}%"
                            + (", timed batches compared" if p.compared else "") + ")"
                            for p in hit) if hit else "") + ".",
        f"- With the timed batches uncompared (as since 2026-12-02): {len(uncompared)} "
        f"points, {len(wide)} with a gap of {GAP_TARGET_PCT:.0f}% or more, the most "
        f"recovered there {most(wide)}; below that gap (from {MIN_RATIO_GAP_PCT:.0f}%: a "
        f"share of a smaller gap is mostly the rounds' spread) the most recovered "
        f"{most(narrow)}.",
        f"- A gap is against ideal on the trainer's default embedding update "
        f"({TRAINER_UPDATE_BLOCKS_PER_SM} blocks an SM) unless the row names another "
        "grid: then against ideal and gpu-sequential on that grid, recovered by the plans "
        "run on it (heavy-lean's ideal ran 16% faster on 16 blocks an SM; "
        "bench/results/update_grid_rehash_h200.md). The most recovered on 16 blocks an SM: "
        f"eager {most([p for p in on16 if not p.graphed])}; graphed "
        f"{most([p for p in on16 if p.graphed])}.",
    ]
    if png:
        off = [p for p in points if not (GAP_AXIS_PCT[0] <= p.gap_pct <= GAP_AXIS_PCT[1]
                                         and RECOVERED_AXIS_PCT[0] <= p.best_recovered_pct
                                         <= RECOVERED_AXIS_PCT[1])]
        lines += ["", f"![gap against recovered, every heavy command]({Path(png).name})",
                  "", f"{len(off)} point(s) off the figure's axes (gap "
                  f"{GAP_AXIS_PCT[0]:.0f}-{GAP_AXIS_PCT[1]:.0f}%, recovered "
                  f"{RECOVERED_AXIS_PCT[0]:.0f}% to {RECOVERED_AXIS_PCT[1]:.0f}%), in the "
                  "table all the same."]
    lines += ["", "| source | model / pipeline | batch | step | update grid | timed batches "
              "| rounds | gap | fastest | recovered | choice recovered |",
              "|---|---|---:|---|---|---|---:|---:|---|---:|---:|"]
    for p in points:
        lines.append(
            f"| {p.source} | {p.model} / {p.pipeline} | {p.batch} | "
            f"{'graphed' if p.graphed else 'eager'} | "
            f"{p.update_grid or TRAINER_UPDATE_BLOCKS_PER_SM} an SM | "
            f"{'compared' if p.compared else 'uncompared'} | {p.rounds} | "
            f"{p.gap_pct:.1f}% | {p.best} | {pct(p.best_recovered_pct)} | "
            f"{pct(p.choice_recovered_pct)} |")
    return "\n".join(lines) + "\n"


def grid_text(p: Point) -> str:
    """", on N blocks an SM" where a point is on another update grid than the default."""
    return "" if p.update_grid is None else f", update on {p.update_grid} blocks an SM"


def draw(points: list[Point], png: Path) -> None:
    """Gap against the fastest strategy's recovery, a marker per model and pipeline,
    hollow where the timed batches were compared; the target corner shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 5.5))
    ax.axvspan(GAP_TARGET_PCT, GAP_AXIS_PCT[1], color="0.95")
    ax.fill_between([GAP_TARGET_PCT, GAP_AXIS_PCT[1]], RECOVERY_TARGET_PCT,
                    RECOVERED_AXIS_PCT[1], color="#d8f0d8", label="issue 6's targets")
    markers = "osD^vP*Xhp<>"
    workloads = sorted({(p.model, p.pipeline) for p in points})
    for i, (model, pipeline) in enumerate(workloads):
        for compared in (False, True):
            ps = [p for p in points if (p.model, p.pipeline) == (model, pipeline)
                  and p.compared == compared]
            if ps:
                color = f"C{i % 10}"
                ax.scatter([p.gap_pct for p in ps], [p.best_recovered_pct for p in ps],
                           marker=markers[i % len(markers)], s=28,
                           facecolors="none" if compared else color, edgecolors=color,
                           label=f"{model} / {pipeline}"
                           + (" (timed batches compared)" if compared else ""))
    ax.set_xlim(*GAP_AXIS_PCT)
    ax.set_ylim(*RECOVERED_AXIS_PCT)
    ax.set_xlabel("gpu-sequential below ideal (%)")
    ax.set_ylabel("share of that gap the command's fastest plan recovered (%)")
    ax.set_title("The heavy case, every command on the H200")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    tmp = png.with_name(png.stem + ".tmp.png")
    fig.savefig(tmp, dpi=120)
    plt.close(fig)
    tmp.replace(png)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", default=str(ROOT / "bench/results/gap_recovery.md"))
    ap.add_argument("--png", default=str(ROOT / "bench/results/gap_recovery.png"),
                    help="the figure ('' for none)")
    args = ap.parse_args(argv)
    points = all_points()
    if args.png:
        draw(points, Path(args.png))
    write_atomic(Path(args.out), render(points, args.png or None))
    on = [p for p in points if p.on_target]
    print(f"{len(points)} points, {len(on)} in the target corner; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
