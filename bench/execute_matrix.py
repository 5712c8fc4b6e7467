"""The execution matrix: plan each workload, run its plans beside ideal and the baselines in
rounds on this GPU, and write one JSON of predicted against measured.

On a GPU machine:
    python bench/execute_matrix.py --hardware h100 --matrix single-gpu --rounds 2 -o matrix.json
    corun validate add WORK/*/tuned --source <machine>-matrix   # every round, into the dataset
On the CPU (tables cut small, a few iterations; checks the whole path, times nothing):
    python bench/execute_matrix.py --dry-run --workloads kaggle-b4096 -o /tmp/m.json

Each workload is planned by `corun plan --runners-up K` and run by `corun tune`: ideal,
gpu-sequential, rap, corun and its runners-up (and the variants of corun that
--variants names, none by default), once a round in a turned order, in one process.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corun.spec import SpecError  # noqa: E402
from corun.spec.serde import write_atomic  # noqa: E402

from corun.cli import main as corun  # noqa: E402


@dataclass(frozen=True)
class Workload:
    """One row of a matrix: a model, its preprocessing pipeline, a batch, a step mode."""

    model: str
    pipeline: str
    batch: int
    cuda_graphs: bool = False

    @property
    def name(self) -> str:
        name = self.pipeline if self.model.startswith("criteo") else f"{self.model}-{self.pipeline}"
        return f"{name}-b{self.batch}" + ("-graphs" if self.cuda_graphs else "")


MATRICES: dict[str, tuple[Workload, ...]] = {
    # the workloads that fit one 80 GB card (criteo-terabyte's tables do not)
    "single-gpu": (
        Workload("criteo-kaggle", "kaggle", 4096), Workload("criteo-kaggle", "kaggle", 8192),
        Workload("criteo-kaggle", "kaggle", 16384), Workload("wide-2x", "wide-2x", 8192),
        Workload("wide-4x", "wide-4x", 8192),
        Workload("heavy-lean", "heavy-rehash", 16384),
        Workload("heavy-lean", "heavy-rehash", 32768),
    ),
    "graphed": (
        Workload("criteo-kaggle", "kaggle", 4096, True),
        Workload("criteo-kaggle", "kaggle", 8192, True),
        Workload("heavy-lean", "heavy-rehash", 16384, True),
        Workload("heavy-lean", "heavy-rehash", 32768, True),
    ),
    "default": (Workload("criteo-kaggle", "kaggle", 4096),),
}
DRY_RUN_TABLE_ROWS = 2000
"""Table rows of a dry run's models: every code path, in seconds on a CPU."""


def selected(matrix: str, names: str | None) -> tuple[Workload, ...]:
    """The matrix's workloads, or those of them `names` (comma-separated) names."""
    rows = MATRICES[matrix]
    if not names:
        return rows
    by_name = {w.name: w for m in MATRICES.values() for w in m}
    picked = []
    for name in names.split(","):
        if name not in by_name:
            raise SpecError("--workloads", name, "names of " + ", ".join(by_name))
        picked.append(by_name[name])
    return tuple(picked)


def run_workload(w: Workload, work: Path, args: argparse.Namespace) -> dict:
    """Plan, then tune, one workload; its tune summary (tune.json) with where it lies."""
    plans, tuned = work / w.name / "plans", work / w.name / "tuned"
    spec_args = ["--model", w.model, "--pipeline", w.pipeline]
    if args.dry_run:
        spec_args = _small_files(w, work / w.name)
    plan = ["plan", *spec_args, "--hardware", args.hardware, "--batch", str(w.batch),
            "--runners-up", str(args.runners_up),
            "--time-limit", str(args.time_limit), "--out", str(plans), "--no-traces", "--quiet"]
    if w.cuda_graphs:
        plan.append("--cuda-graphs")
    if corun(plan) != 0:
        raise SystemExit(f"corun plan failed for {w.name}")
    from corun.plan_dir import planned_strategies

    strategies = ",".join(["ideal", "gpu-sequential", *planned_strategies(plans)])
    tune = ["tune", str(plans), *spec_args, "--hardware", args.hardware, "--strategies", strategies,
            "--rounds", str(args.rounds), "--variants", args.variants,
            "--iterations", str(args.iterations), "--warmup", str(args.warmup), "--quiet",
            "--out", str(tuned)]
    if args.dry_run:
        tune += ["--device", "cpu", "--distinct-batches", "2"]
    if corun(tune) != 0:
        raise SystemExit(f"corun tune failed for {w.name}")
    return {"workload": w.name, "model": w.model, "pipeline": w.pipeline, "batch": w.batch,
            "cuda_graphs": w.cuda_graphs, "tuned": str(tuned),
            "tune": json.loads((tuned / "tune.json").read_text())}


def _small_files(w: Workload, folder: Path) -> list[str]:
    """The workload's model and pipeline with small tables, as files (a dry run)."""
    from dataclasses import replace

    from corun.spec.serde import save

    from corun import spec
    from corun.workload import shrink_tables

    model, pipe = shrink_tables(replace(spec.model_preset(w.model), batch_per_gpu=w.batch),
                                spec.pipeline_preset(w.pipeline), DRY_RUN_TABLE_ROWS)
    folder.mkdir(parents=True, exist_ok=True)
    save(model, folder / "model.json")
    save(pipe, folder / "pipeline.json")
    return ["--model", str(folder / "model.json"), "--pipeline", str(folder / "pipeline.json")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--matrix", choices=sorted(MATRICES), default="single-gpu")
    ap.add_argument("--workloads", help="comma-separated workload names (default: the matrix's)")
    ap.add_argument("--hardware", default="h200",
                    help="the preset the plans are made for (the machine's own: h100, h200, ...)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--runners-up", type=int, default=2)
    ap.add_argument("--time-limit", type=float, default=10.0, help="plan search seconds")
    ap.add_argument("--variants", default="none",
                    help="`corun tune --variants`: variants of the chosen plan to run too")
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--work", type=Path, help="folder for the plans and measurements "
                    "(default: a new temporary folder, named in the output)")
    ap.add_argument("--dry-run", action="store_true",
                    help="on the CPU, tables cut small: checks the path, measures nothing")
    ap.add_argument("-o", "--output", type=Path, required=True, help="the JSON to write")
    args = ap.parse_args(argv)
    try:
        workloads = selected(args.matrix, args.workloads)
    except SpecError as e:
        ap.error(str(e))
    if args.output.is_dir():
        ap.error(f"-o = {str(args.output)!r}: a file to write, not a folder")
    work = args.work or Path(tempfile.mkdtemp(prefix="corun-matrix-"))
    rows = []
    for w in workloads:
        rows.append(run_workload(w, work, args))
        write_atomic(args.output, json.dumps({"matrix": args.matrix, "work": str(work),
                                              "dry_run": args.dry_run, "workloads": rows},
                                             indent=1))
    print(f"wrote {args.output}; add the runs to the validation dataset with: corun validate "
          f"add {work}/*/tuned --source NAME")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
