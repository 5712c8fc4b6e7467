"""Plan, profile what the plan launches, refit, plan again, until every kernel of every
plan has been profiled against every training stage (or the rounds run out).

The planner searches where the learned model predicts best, which is also where the model
has seen least: on heavy-fused its plans were predicted 13-19% faster than they measured
(bench/results/heavy_h200.md). Here every plan is checked against the profile before it
is trusted: a kernel the profile lacks is profiled on this GPU, as the plan launches it,
the model is refitted with those rows and the planner runs again. On the GPU the plans
are for, from the repository root:

    python bench/refine_plans.py --model heavy-fused --pipeline heavy \
        --batches 8192,16384 --rounds 3 --out $OUT/refine

With --runners-up K the planner's K runners-up (corun plan --runners-up) are profiled
too, so that they are predicted from measured pairs as the chosen plan is.

Writes the final plans where bench/execute_gpu.py and bench/render_plans.py read them
(bench/plans/<model>-b<batch>/, with the planner's table in <model>-b<batch>.txt), the new
profile rows to costmodel/data/h200/profile-refine-<model>[-<n>].csv, the refitted model.pkl
there (the planner's model), and under --out each round's plans and tables and
refine.json (per round and batch: the predicted share of ideal of every strategy, the
plan's kernels, and those the profile lacked).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from corun.cli import main as corun  # noqa: E402
from corun.plan_dir import plan_file, runner_up_rank  # noqa: E402
from corun.workload import int_list  # noqa: E402
from costmodel.profile_data import done_keys, read_profile  # noqa: E402
from spec import Plan, SpecError, load, pipeline_preset  # noqa: E402

DATA = ROOT / "costmodel/data/h200"


def run_corun(argv: list[str], log: Path) -> str:
    """`corun ARGV` in this process; its stdout and stderr appended to `log`, stdout
    returned. A failing command stops the refinement (SystemExit)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = corun(argv)
    with log.open("a") as f:
        f.write(f"$ corun {' '.join(argv)}\n{out.getvalue()}{err.getvalue()}\n")
    if rc:
        raise SystemExit(f"corun {' '.join(argv)} failed ({rc}): "
                         f"{err.getvalue().strip() or f'see {log}'}")
    return out.getvalue()


def shares(table: str) -> dict[str, float]:
    """Predicted share of ideal by strategy, from `corun plan`'s comparison table."""
    out = {}
    for line in table.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[3].endswith("%"):
            out[parts[0]] = float(parts[3].rstrip("%"))
    return out


def missing_kernels(plan: Plan, model: str, batch: int, gpu: str, data: Path,
                    stages: list[str]) -> list[str]:
    """The plan's kernels (as the profiler names them) some stage has no row for."""
    from backend.profile import plan_kernels

    done = done_keys(data)
    names = [k.name for k in plan_kernels(plan, pipeline_preset(plan.pipeline))]
    return [n for n in names if any((gpu, model, str(batch), n, s) not in done
                                    for s in stages)]


def plan_files(folder: Path, table: str) -> list[Path]:
    """The plans `corun plan --out folder` wrote with the comparison `table` it printed:
    plan.json, and plan-<N>.json for each runner-up "corun-<N>" the table lists (not a
    file an earlier run left there)."""
    runners = sorted((s for s in shares(table) if runner_up_rank(s) is not None),
                     key=runner_up_rank)
    return [folder / plan_file("corun"), *(folder / plan_file(s) for s in runners)]


def append_csv(src: Path, dst: Path) -> int:
    """Append src's rows to dst through the profiler's own writer (it refuses a file of
    another version's columns); the rows added."""
    from backend.profile import append_rows

    rows = read_profile(src, corrected=False) if src.exists() else []
    if rows:
        append_rows(dst, rows)
    return len(rows)


def refine_file(data: Path, model: str) -> Path:
    """profile-refine-<model>.csv, or where that holds another version's columns (before
    warp_rows), the first profile-refine-<model>-<n>.csv that is new or current."""
    from backend.profile import COLUMNS, STEP_COLUMNS, csv_header

    n = 1
    while True:
        path = data / (f"profile-refine-{model}.csv" if n == 1 else
                       f"profile-refine-{model}-{n}.csv")
        if not path.exists() or csv_header(path) in (STEP_COLUMNS, COLUMNS):
            return path
        n += 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--pipeline", required=True)
    ap.add_argument("--batches", required=True, help="comma-separated batch sizes")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=10.0, help="planner seconds")
    ap.add_argument("--runners-up", type=int, default=0,
                    help="also profile the kernels of the planner's K runners-up "
                         "(corun plan --runners-up)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    args.data = DATA  # the planner reads its model from here
    if args.rounds < 1:
        ap.error(f"--rounds {args.rounds}: an integer >= 1")
    try:
        batches = int_list(args.batches, "--batches")
    except SpecError as e:
        ap.error(str(e))

    import torch

    from backend.trainer import TRAINING_STAGES

    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    stages = [s.value for s in TRAINING_STAGES]
    args.out.mkdir(parents=True, exist_ok=True)
    log, record = args.out / "refine.log", []
    rows_file = refine_file(args.data, args.model)
    converged = False
    for rnd in range(1, args.rounds + 1):
        todo: dict[int, list[Path]] = {}
        for b in batches:
            folder = ROOT / f"bench/plans/{args.model}-b{b}"
            t0 = time.time()
            table = run_corun(["plan", "--hardware", "h200", "--gpus", "1", "--pipeline",
                               args.pipeline, "--model", args.model, "--batch", str(b),
                               "--time-limit", str(args.time_limit), "--runners-up",
                               str(args.runners_up), "--no-traces", "--quiet", "--out",
                               str(folder)], log)
            (ROOT / f"bench/plans/{args.model}-b{b}.txt").write_text(table)
            kept = args.out / f"round{rnd}" / f"{args.model}-b{b}"
            shutil.copytree(folder, kept, dirs_exist_ok=True)
            (kept / "plan.txt").write_text(table)
            plan = load(Plan, folder / "plan.json")
            lacking = {path: missing_kernels(load(Plan, path), args.model, b, gpu, args.data,
                                             stages)
                       for path in plan_files(folder, table)}
            new = sorted({n for names in lacking.values() for n in names})
            record.append({"round": rnd, "batch": b, "plan_s": round(time.time() - t0, 1),
                           "predicted_share_of_ideal_pct": shares(table),
                           "kernels": [{"nodes": len(k.nodes), "stage": k.stage,
                                        "blocks": k.blocks, "threads": k.threads_per_block}
                                       for k in plan.kernels],
                           "unprofiled_kernels": new})
            print(f"round {rnd} b{b}: corun {shares(table).get('corun')}% of ideal "
                  f"predicted, {len(plan.kernels)} kernel(s), {len(new)} unprofiled",
                  flush=True)
            if new:
                todo[b] = [path for path, names in lacking.items() if names]
        (args.out / "refine.json").write_text(json.dumps(
            {"model": args.model, "pipeline": args.pipeline, "gpu": gpu,
             "rounds": record, "converged": not todo}, indent=1))
        if not todo:
            converged = True
            break
        if rnd == args.rounds:
            break
        fresh = args.out / f"round{rnd}" / "profile"
        for b, paths in todo.items():
            run_corun(["profile", "--out", str(fresh), "--models", args.model,
                       "--train-pipeline", args.pipeline, "--batches", str(b), "--shapes",
                       "0", "--reps", str(args.reps), "--plans", ",".join(map(str, paths)),
                       "--device", "cuda" if torch.cuda.is_available() else "cpu",
                       "--budget-minutes", "5", "--quiet"], log)
        added = append_csv(fresh / "profile.csv", rows_file)
        print(f"round {rnd}: {added} new pairs -> {rows_file.name}; refitting", flush=True)
        run_corun(["fit", str(args.data), "-o", str(args.data / "model.pkl")], log)
    print("converged: every plan's kernels are profiled" if converged else
          f"not converged after {args.rounds} round(s): the last plans have unprofiled "
          "kernels", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
