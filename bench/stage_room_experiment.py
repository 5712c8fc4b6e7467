"""Offline: what the embedding update's measured rooms in time (costmodel/stage_room.py)
do to the predictions of the executed graphed heavy-lean and heavy-hot plans at batch
16384, the batch the probe measured. The rooms are fitted from the probe's records by
`python -m costmodel.stage_room bench/results/raw/stage_room_heavy_{lean,hot}_run{1,2}.json
bench/results/raw/stage_room_heavy_hot_fine_run3.json -o bench/results/stage_room_h200.json`
(bench/results/stage_room_h200.md) and installed as costmodel/data/h200/stage-room.json.
Each case is predicted without rooms, as committed, and with the assembly's rooms alone,
by LearnedCostModel.stage_room answering so:
- the `corun tune` runs of graphed heavy-lean b16384: rank correlation, the predicted
  best's regret, mean error, cases within 5% (as bench/release_steps_experiment.py);
- every executed one-kernel plan of those models at that batch
  (bench/assembly_hold_experiment.py's cases): error, the assembly's span, and per
  command whether the plan predicted best was the measured best.

    python bench/stage_room_experiment.py [-o OUT.md]
    python bench/stage_room_experiment.py --batch 8192 --rooms ROOMS.json -o OUT.md

--batch checks the executed plans of another batch (the tune runs are at 16384 only);
--rooms puts rooms not yet installed beside the committed ones (the "probed" variants).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import costmodel.learned as learned  # noqa: E402
import sim.scenario as scenario  # noqa: E402
from bench.assembly_hold_experiment import cases, predict  # noqa: E402
from bench.release_steps_experiment import RAW, plan_runs, summary  # noqa: E402
from bench.render_execute import publish  # noqa: E402
from costmodel.stage_room import RoomKind, StageRoom, read_rooms  # noqa: E402
from sim.simulate import git_commit  # noqa: E402

BATCH = 16384
ROOMS_FILE = ROOT / "bench/results/stage_room_h200.json"
ROOMS = read_rooms(ROOMS_FILE)
COMMITTED = learned.LearnedCostModel.stage_room


def probed(*kinds: RoomKind):
    """LearnedCostModel.stage_room with the probe's rooms of `kinds` installed."""
    def stage_room(self, model, batch, stage, graphed, hw, kind) -> StageRoom | None:
        return ROOMS.get((hw.gpu.name, model, batch, stage, graphed, kind)) \
            if kind in kinds else None
    return stage_room


VARIANTS = {"no rooms": probed(),
            "as committed": COMMITTED,
            "probed": probed(RoomKind.KERNEL, RoomKind.ASSEMBLY),
            "assembly rooms only": probed(RoomKind.ASSEMBLY)}
"""No room (the simulator before them); the rooms installed in costmodel/data/h200/; the
probed rooms (--rooms; by default bench/results/stage_room_h200.json, the installed ones'
source, so the same as installed); their assembly's alone (the fused kernels' matter only
where a kernel starts partway in, which no one-kernel plan has)."""


def case_rows(batch: int) -> list[dict]:
    """One row per executed case at `batch`: measured and, per variant, predicted."""
    rows = []
    for src, strategy, m in cases():
        if m["batch_per_gpu"] != batch:
            continue
        k = m["plan"]["kernels"][0]
        row = {"src": src, "strategy": strategy, "model": m["model"],
               "plan": (k["stage"], k["blocks"], m["plan"].get("batches_ahead", 1)),
               "meas": m["iteration"]["median_ms"],
               "asm_meas": m["stages"]["assemble"]["median_ms"]}
        for name, fn in VARIANTS.items():
            learned.LearnedCostModel.stage_room = fn
            p = predict(m, strategy)
            asm = next(x for x in p.kernels if x.kernel == scenario.ASSEMBLY_KERNEL)
            row[name] = (p.iteration_time_ms, asm.time_ms)
        learned.LearnedCostModel.stage_room = COMMITTED
        rows.append(row)
    return rows


def ranking(rows: list[dict], variant: str) -> tuple[int, int, list[float]]:
    """(commands whose predicted best was the measured best, commands with 2+ plans,
    the predicted bests' regrets in %), by source file and model."""
    by = defaultdict(list)
    for r in rows:
        by[r["src"], r["model"]].append(r)
    hits, regrets = 0, []
    groups = [g for g in by.values() if len({r["plan"] for r in g}) > 1]
    for g in groups:
        best_p = min(g, key=lambda r: r[variant][0])
        best_m = min(r["meas"] for r in g)
        hits += best_p["meas"] == best_m
        regrets.append(100 * (best_p["meas"] / best_m - 1))
    return hits, len(groups), regrets


def shown(path: Path) -> str:
    """`path` relative to the repository where it is inside it."""
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def accuracy(rows: list[dict], variant: str) -> tuple[float, int, int, int, list[float]]:
    """(mean absolute iteration-time error %, cases within 5%, then `ranking`'s three)."""
    errs = [abs(r[variant][0] / r["meas"] - 1) * 100 for r in rows]
    return (statistics.mean(errs), sum(e <= 5 for e in errs), *ranking(rows, variant))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", type=Path)
    ap.add_argument("--batch", type=int, default=BATCH)
    ap.add_argument("--rooms", type=Path, default=ROOMS_FILE,
                    help="the probed rooms (default: the installed ones' source)")
    args = ap.parse_args(argv)
    if not args.rooms.is_file():
        ap.error(f"--rooms {args.rooms}: a file `python -m costmodel.stage_room` wrote")
    ROOMS.clear()
    ROOMS.update(read_rooms(args.rooms))
    command = " ".join(["python bench/stage_room_experiment.py"] + (argv or sys.argv[1:]))
    lines = ["# The embedding update's room in time, in the simulator: offline check", "",
             f"Made by `{command}` at commit {git_commit()}; the probed rooms: "
             f"`{shown(args.rooms)}`.", ""]
    if args.batch == BATCH:
        lines += ["## corun tune on graphed heavy-lean b16384 (every run)", ""]
        for name, fn in VARIANTS.items():
            learned.LearnedCostModel.stage_room = fn
            lines.append(f"{name}:")
            lines += [f"- {run.name}: {summary(plan_runs(run))}"
                      for run in sorted(RAW.glob("tune_heavy_lean_graphs_run*"))]
            lines.append("")
        learned.LearnedCostModel.stage_room = COMMITTED
    rows = case_rows(args.batch)
    lines += [f"## Every executed one-kernel plan at b{args.batch}, graphed heavy-lean / heavy-hot",
              "", "Mean absolute iteration-time error, cases within 5%, the assembly's span "
              "(median over cases, predicted / measured), and the commands (raw file and "
              "model, 2+ plans) whose predicted best was the measured best, with the "
              "regret of the predicted best (median, max).", "",
              "| model | variant | cases | mean error | within 5% | assembly pred / meas "
              "| best ranked best | regret median / max |",
              "|---|---|---:|---:|---:|---:|---:|---:|"]
    for model in sorted({r["model"] for r in rows}):
        mine = [r for r in rows if r["model"] == model]
        for name in VARIANTS:
            mean, within, hits, groups, regrets = accuracy(mine, name)
            asm = statistics.median(r[name][1] / r["asm_meas"] for r in mine)
            lines.append(f"| {model} | {name} | {len(mine)} | {mean:.2f}% | {within} "
                         f"| {asm:.2f} | {hits} of {groups} "
                         f"| {statistics.median(regrets):.1f}% / {max(regrets):.1f}% |")
    names = list(VARIANTS)
    lines += ["", "By plan (released at, blocks, batches ahead): the assembly's span, median "
              "ms, measured and per variant, then the median iteration-time error per "
              f"variant ({', '.join(names)}).", "",
              "| model | plan | cases | assembly measured | "
              + " | ".join(names) + " | " + " | ".join(f"error, {n}" for n in names) + " |",
              "|---|---|---:|---:|" + "---:|" * (2 * len(names))]
    by = defaultdict(list)
    for r in rows:
        by[r["model"], r["plan"]].append(r)
    med = statistics.median
    for (model, plan), rs in sorted(by.items()):
        lines.append(
            f"| {model} | {plan[0]} {plan[1]} x{plan[2]} | {len(rs)} "
            f"| {med(r['asm_meas'] for r in rs):.3f} "
            + "".join(f"| {med(r[n][1] for r in rs):.3f} " for n in names)
            + "".join(f"| {med(100 * (r[n][0] / r['meas'] - 1) for r in rs):+.1f}% "
                      for n in names) + "|")
    text = "\n".join(lines) + "\n"
    publish(text, args.out, named=True, default_out=args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
