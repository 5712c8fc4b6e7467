"""Offline: what heavy-hot's measured release steps (`MODEL=heavy-hot PIPELINE=heavy-short
BATCHES=8192,16384 BLOCKS=132,198,264,396,528,792,1056,1584,2112 PART=steps bash
bench/resident_session.sh`, 324 graphed pairs with every stage of their steps,
bench/results/raw/resident_profile_run6/) would do to the predictions of every executed
one-kernel graphed plan of heavy-lean and heavy-hot (bench/assembly_hold_experiment.py's
cases), by model and batch: mean error, cases within 5%, and the commands (raw file,
model and batch, 2+ plans) whose predicted best was the measured best.

Variants of `LearnedCostModel.release_rates`: keyed by the releasing stage alone (before
2026-12-02, session 42: a step of one model or batch answered another's with the same
releasing stage), keyed by the whole step (committed), and the whole-step key with
heavy-hot's steps added, from every stage or only the embedding update's.

    python bench/release_steps_hot_experiment.py [-o OUT.md]
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
from bench.assembly_hold_experiment import cases, predict  # noqa: E402
from bench.render_execute import publish  # noqa: E402
from bench.stage_room_experiment import accuracy  # noqa: E402
from costmodel.profile_data import read_profile  # noqa: E402
from costmodel.release_steps import rates, read_release_steps  # noqa: E402
from sim.simulate import git_commit  # noqa: E402

HOT_STEPS = ROOT / "bench/results/raw/resident_profile_run6/graphed-profile-heavy-hot.csv"
DATA = ROOT / "costmodel/data/h200"
COMMITTED = learned.LearnedCostModel.release_rates


def releasing_stage_key(r, step):
    return (learned.gpu_of(r["gpu"]).name, r["kernel"],
            learned._stage_key(learned.stage_only([r])[0]), True)


def by_releasing_stage():
    """release_rates as before session 42: the releasing stage's features only."""
    steps = read_release_steps(learned.graphed_rows(DATA), releasing_stage_key)

    def release_rates(self, kernel, works, hw, release):
        step = steps.get((hw.gpu.name, kernel.key,
                          learned.stage_key(hw.gpu.name, works[release]),
                          works[release].graphed))
        if step is None or len(step.stage_ms) != len(works):
            return None
        return rates(step, release)
    return release_rates


def with_hot(stages: set[str] | None):
    """The committed lookup with heavy-hot's steps added (released at `stages`: all)."""
    hot = read_profile(HOT_STEPS.parent, kind="graphed-profile")
    extra = {k[:-1]: v for k, v in read_release_steps(
        hot, lambda r, step: (*learned.release_step_key(r, step, True), r["stage"])).items()
        if stages is None or k[-1] in stages}

    def release_rates(self, kernel, works, hw, release):
        if not works[release].graphed:
            return COMMITTED(self, kernel, works, hw, release)
        step = extra.get(learned.plan_release_key(kernel, works, hw, release))
        return rates(step, release) if step else COMMITTED(self, kernel, works, hw, release)
    return release_rates


VARIANTS = {"releasing stage key": by_releasing_stage(),
            "whole-step key (committed)": COMMITTED,
            "+ heavy-hot steps": with_hot(None),
            "+ heavy-hot steps at emb_bwd": with_hot({"emb_bwd"})}


def case_rows() -> list[dict]:
    rows = []
    for src, strategy, m in cases():
        k = m["plan"]["kernels"][0]
        row = {"src": src, "model": m["model"], "batch": m["batch_per_gpu"],
               "plan": (k["stage"], k["blocks"], m["plan"].get("batches_ahead", 1)),
               "meas": m["iteration"]["median_ms"]}
        for name, fn in VARIANTS.items():
            learned.LearnedCostModel.release_rates = fn
            row[name] = (predict(m, strategy).iteration_time_ms,)
        learned.LearnedCostModel.release_rates = COMMITTED
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", type=Path)
    args = ap.parse_args(argv)
    rows = case_rows()
    lines = ["# heavy-hot's release steps, and the whole-step key: offline check", "",
             f"Made by `python bench/release_steps_hot_experiment.py` at commit "
             f"{git_commit()}: every executed one-kernel graphed plan of heavy-lean and "
             "heavy-hot, by model and batch.", "",
             "| model | batch | variant | cases | mean error | within 5% "
             "| predicted best = measured best | worst regret |",
             "|---|---:|---|---:|---:|---:|---:|---:|"]
    groups = defaultdict(list)
    for r in rows:
        groups[r["model"], r["batch"]].append(r)
    for (model, batch), mine in sorted(groups.items()):
        for name in VARIANTS:
            mean, within, hits, n, regrets = accuracy(mine, name)
            lines.append(f"| {model} | {batch} | {name} | {len(mine)} | {mean:.2f}% "
                         f"| {within} | {hits} of {n} | {max(regrets, default=0.0):.1f}% |")
    names = list(VARIANTS)
    lines += ["", "heavy-hot by plan (released at, blocks, batches ahead): cases, measured "
              "median ms, and the median error per variant.", "",
              "| batch | plan | cases | measured | " + " | ".join(names) + " |",
              "|---:|---|---:|---:|" + "---:|" * len(names)]
    by = defaultdict(list)
    for r in rows:
        if r["model"] == "heavy-hot":
            by[r["batch"], r["plan"]].append(r)
    med = statistics.median
    for (batch, plan), rs in sorted(by.items()):
        lines.append(f"| {batch} | {plan[0]} {plan[1]} x{plan[2]} | {len(rs)} "
                     f"| {med(r['meas'] for r in rs):.3f} "
                     + "".join(f"| {med(100 * (r[n][0] / r['meas'] - 1) for r in rs):+.1f}% "
                               for n in names) + "|")
    publish("\n".join(lines) + "\n", args.out, named=True, default_out=args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
