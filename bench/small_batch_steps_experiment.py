"""Offline: what graphed heavy-lean's release steps profiled at b8192 and b12288 (session
47: `BATCHES=8192,12288 BLOCKS=132,198,264,396,528,792,1056,1584,2112 PART=steps bash
bench/resident_session.sh`, 324 pairs, bench/results/raw/graphed_steps_small_batches_run1/)
do to the predictions of the commands that executed graphed heavy-lean plans at those
batches: per variant the mean error, the cases within 5%, and per command (2+ plans) the
predicted best's measured regret against the measured best. Variants: the committed
model; with the profiled kernels' times alone where the fit timed none; with those and
the steps (as the H200 measured the folders re-planned with them at e956088d).

    python bench/small_batch_steps_experiment.py [-o OUT.md]
"""

from __future__ import annotations

import argparse
import csv
import functools
import io
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_execute import publish  # noqa: E402
from bench.repredict import rows  # noqa: E402
from spec.serde import read_stored_text  # noqa: E402

RAW = ROOT / "bench/results/raw"
STEPS = RAW / "graphed_steps_small_batches_run1/graphed-profile.csv"
RUNS = [RAW / name for name in (
    "execute_heavy_batches_run1.json", "execute_thin_kernels_run1.json",
    "execute_release_offset_b8192_run1.json", "tune_heavy_lean_b8192_run1/tune.json",
    "tune_heavy_lean_steps_b8192_run1/tune.json",
    "tune_heavy_lean_steps_b12288_run1/tune.json")]
"""Every command that ran graphed heavy-lean plans at b8192 or b12288 (their b16384
cases, whose predictions the steps do not touch, are left out)."""
OUT = ROOT / "bench/results/small_batch_steps_experiment.md"


@functools.cache
def profile_rows() -> tuple[dict, ...]:
    """The raw profile's rows (read once)."""
    return tuple(csv.DictReader(io.StringIO(read_stored_text(STEPS))))


def profiled_steps() -> dict:
    """The profiled steps as LearnedCostModel.release_steps keys them."""
    from costmodel.learned import release_step_key
    from costmodel.release_steps import read_release_steps

    return read_release_steps(profile_rows(), lambda r, step: release_step_key(r, step, True))


def commands(rs: list[dict]) -> list[tuple[str, int, str, float, float, str, float]]:
    """Per command and batch with 2+ plans: (run, batch, predicted best, its predicted
    and measured ms, measured best, its ms), each plan by its medians over the command's
    rounds."""
    by: dict[tuple, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for r in rs:
        if r["strategy"] not in ("ideal", "gpu-sequential"):
            by[(r["source"], r["batch"])][r["strategy"]].append(
                (r["predicted_ms"], r["measured_ms"]))
    out = []
    for (run, batch), plans in by.items():
        if len(plans) < 2:
            continue
        pred = {s: statistics.median(p for p, _ in v) for s, v in plans.items()}
        meas = {s: statistics.median(m for _, m in v) for s, v in plans.items()}
        pb, mb = min(pred, key=pred.get), min(meas, key=meas.get)
        out.append((run, batch, pb, pred[pb], meas[pb], mb, meas[mb]))
    return out


def kernels_alone() -> dict[tuple, float]:
    """The profiled kernels' times alone, the median of each kernel's rows, keyed as the
    fitted model's kernel_measured (GPU kind, kernel, rows)."""
    from costmodel.learned import gpu_of

    times: dict[tuple, list[float]] = defaultdict(list)
    for r in profile_rows():
        times[(gpu_of(r["gpu"]).name, r["kernel"], int(r["rows"]))].append(
            float(r["kernel_alone_ms"]))
    return {k: statistics.median(v) for k, v in times.items()}


def variant_rows() -> dict[str, list[dict]]:
    """Each variant's rows: the committed model; with the profiled kernels' times alone
    where the fit has none (the fitted one put b12288's whole pipeline in 1056 blocks at
    1.035 ms, the profile 0.41); with those and the steps (the model the H200 measured
    the re-planned folders with, commit e956088d)."""
    from costmodel.learned import cost_model_for
    from spec import hardware_preset

    cm = cost_model_for(hardware_preset("h200", 1))
    steps, measured = dict(cm.release_steps), dict(cm.model.kernel_measured)
    out = {"committed": rows(RUNS)}
    try:
        cm.model.kernel_measured.update({k: v for k, v in kernels_alone().items()
                                         if k not in measured})
        cm._memo.clear()  # kernel_ms answers are memoised
        out["kernels alone added"] = rows(RUNS)
        cm.release_steps.update(profiled_steps())
        out["kernels alone and steps added"] = rows(RUNS)
    finally:
        cm.release_steps.clear()
        cm.release_steps.update(steps)
        cm.model.kernel_measured.clear()
        cm.model.kernel_measured.update(measured)
        cm._memo.clear()
    return {k: [r for r in v if r["batch"] in (8192, 12288)] for k, v in out.items()}


def render(variants: dict[str, list[dict]], command: str) -> str:
    from sim.simulate import git_commit

    lines = ["# Graphed heavy-lean's release steps at b8192 and b12288, checked offline", "",
             f"Made by `{command}` at commit {git_commit()}.", "",
             "| variant | cases | mean error | within 5% | commands: predicted best = "
             "measured best | regret median / max |", "|---|---:|---:|---:|---:|---:|"]
    for name, rs in variants.items():
        errs = [abs(r["error_pct"]) for r in rs]
        cmds = commands(rs)
        regret = [100 * (pm / mm - 1) for _, _, _, _, pm, _, mm in cmds]
        hits = sum(pb == mb for _, _, pb, _, _, mb, _ in cmds)
        lines.append(f"| {name} | {len(rs)} | {statistics.mean(errs):.2f}% | "
                     f"{sum(e <= 5 for e in errs)} | {hits} of {len(regret)} | "
                     f"{statistics.median(regret):.1f}% / {max(regret):.1f}% |")
    lines += ["", "Per command: the predicted best (predicted and measured ms) against the "
              "measured best.", "", "| variant | run | batch | predicted best | predicted ms "
              "| measured ms | measured best | ms | regret |",
              "|---|---|---:|---|---:|---:|---|---:|---:|"]
    for name, rs in variants.items():
        lines += [f"| {name} | {run} | {batch} | {pb} | {pp:.3f} | {pm:.3f} | {mb} | "
                  f"{mm:.3f} | {100 * (pm / mm - 1):.1f}% |"
                  for run, batch, pb, pp, pm, mb, mm in commands(rs)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", type=Path, help=f"default: {OUT.name}")
    args = ap.parse_args(argv)
    command = " ".join(["python bench/small_batch_steps_experiment.py",
                        *(argv if argv is not None else sys.argv[1:])])
    publish(render(variant_rows(), command), args.out, False, OUT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
