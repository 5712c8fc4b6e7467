"""`corun validate`: the validation dataset. Add executed cases to it, predict every case
again with today's model, and render the results from it.

    corun validate add MEASUREMENT.json ... --source NAME   # a run's cases into the dataset
    corun validate add MACHINE.json --source NAME            # a machine profile (calibrate)
    corun validate predict [--jobs N]                        # every case, today's model
                                                             # (and with each profile)
    corun validate render                                    # docs/results.md, the README table
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

from corun.spec import SpecError

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "validation"
"""The project's own validation dataset (a source checkout's)."""
RESULTS = ROOT / "docs" / "results.md"
README = ROOT / "README.md"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", type=Path, default=DATASET,
                   help="the dataset folder (default: the checkout's validation/)")
    sub = p.add_subparsers(dest="action", required=True)
    a = sub.add_parser("add", help="add Measurement files' cases (corun execute / tune "
                       "output), or a machine profile (corun calibrate -o)")
    a.add_argument("measurements", nargs="+", type=Path,
                   help="Measurement JSON files, or folders of them (corun tune --out); or "
                   "one machine profile, kept as machines/SOURCE.json")
    a.add_argument("--source", required=True,
                   help="a name for the command that measured them (one per machine and run)")
    pr = sub.add_parser("predict", help="predict every case again with today's model")
    pr.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="worker processes (default: the CPU count)")
    pr.add_argument("--limit", type=int, default=0,
                    help="predict only the first N cases (0: all), for a quick look")
    pr.add_argument("--quiet", action="store_true", help="no progress lines")
    r = sub.add_parser("render", help="write docs/results.md and the README's trust table")
    r.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 where a committed file differs from a render")


def run(args: argparse.Namespace) -> int:
    return {"add": _add, "predict": _predict, "render": _render}[args.action](args)


def _add(args: argparse.Namespace) -> int:
    from corun.spec.validation import MEASURED_FILE, Dataset, case_from_record

    folder = Path(args.dataset)
    ds = Dataset.read(folder) if (folder / MEASURED_FILE).exists() else Dataset((), {}, {})
    profile = _machine_profile(args.measurements)
    if profile is not None:
        if args.source in ds.machines:
            raise SpecError("--source", args.source, "a name no machine profile has yet")
        Dataset(ds.measured, ds.predicted, ds.plans, {**ds.machines, args.source: profile},
                ds.on_machines).write(folder)
        print(f"added machine profile {args.source} ({profile.device}) to {folder}; "
              "`corun validate predict` predicts its GPU kind's cases with it")
        return 0
    if any(c.source == args.source for c in ds.measured):
        raise SpecError("--source", args.source, "a name no case of the dataset has yet")
    cases, plans = list(ds.measured), dict(ds.plans)
    today = datetime.date.today().isoformat()
    docs = measurement_docs(args.measurements)
    for i, doc in enumerate(docs):
        case, plan = case_from_record(doc, args.source, i, today)
        cases.append(case)
        if plan:
            plans[case.plan_id] = plan
    Dataset(tuple(cases), ds.predicted, plans, ds.machines, ds.on_machines).write(folder)
    print(f"added {len(docs)} cases to {folder}; `corun validate predict` "
          "predicts them")
    return 0


def _machine_profile(paths: list[Path]):
    """The machine profile `paths` name, where they name one file that is one (None where
    they name measurements)."""
    from corun.spec.machine import MachineProfile
    from corun.spec.serde import loads, read_document, schema_tag

    if len(paths) != 1 or paths[0].is_dir():
        return None
    doc = read_document(paths[0])
    if not (isinstance(doc, dict) and doc.get("schema") == schema_tag(MachineProfile)):
        return None
    return loads(MachineProfile, doc, str(paths[0]))


def measurement_docs(paths: list[Path]) -> list[dict]:
    """The Measurement documents of the files named and of the folders' *.json: a `corun
    tune` folder's every round (rounds/), where it kept them, else its median rounds (a
    folder's other files, such as a tune's plans and summary, are passed over); all read
    before anything is written."""
    from corun.spec.serde import read_document

    docs = []
    for path in paths:
        if path.is_dir():
            where = path / "rounds" if (path / "rounds").is_dir() else path
            found = [d for p in sorted(where.glob("*.json")) if _is_measurement(
                d := read_document(p))]
            if not found:
                raise SpecError("measurements", str(path), "a folder holding Measurement JSON")
            docs += found
            continue
        doc = read_document(path)
        if not _is_measurement(doc):
            raise SpecError("measurements", str(path), "a Measurement JSON (corun execute -o)")
        docs.append(doc)
    return docs


def _is_measurement(doc) -> bool:
    from corun.spec import Measurement
    from corun.spec.serde import schema_tag

    return isinstance(doc, dict) and doc.get("schema") == schema_tag(Measurement)


def case_scenario(case, plan_doc: dict | None, machine=None):
    """The steady-state Scenario of what a case ran, as `corun plan` simulates a candidate:
    a baseline by its name (its kernel's offsets found as its plan file says), else the
    plan it ran; its host cores, step mode and timed check as it ran; on `machine` (a
    MachineProfile) where given."""
    from corun import spec
    from corun.sim import Scenario, Strategy, StrategyKind, parse_strategy, steady_state
    from corun.spec.hardware import preset_of_device
    from corun.spec.serde import from_jsonable
    from corun.spec.validation import PredictAs

    kind = preset_of_device(case.machine)
    extra = {"host_cpu_cores": case.host_cpu_cores} if case.host_cpu_cores else {}
    hw = spec.hardware_preset(kind, case.gpus, **extra)
    if machine is not None:
        from corun.costmodel.machine import on_machine

        hw = on_machine(hw, machine)
    model = replace(spec.model_preset(case.model), batch_per_gpu=case.batch_per_gpu,
                    cuda_graphs=case.cuda_graphs)
    if case.predict_as is PredictAs.PLAN:
        strat = Strategy(StrategyKind.PLAN, plan=from_jsonable(spec.Plan, plan_doc, "plan"))
    else:
        kernels = (plan_doc or {}).get("kernels", [])
        strat = replace(parse_strategy(case.predict_as.value, hw),
                        fixed_offsets=any(k.get("fixed_offsets", False) for k in kernels))
    return steady_state(Scenario(hw, model, spec.pipeline_preset(case.pipeline), strat,
                                 timed_check=case.timed_check))


def predict_case(case, plan_doc: dict | None, commit: str, machine: tuple = ()):
    """One case's PredictedCase (a MachinePrediction with `machine`, a (name, profile)
    pair): nan with the reason where it is not modelled or today's code cannot simulate
    it (a plan of a pipeline since changed)."""
    from corun.sim import simulate_steady
    from corun.spec.validation import MachinePrediction, PredictedCase

    def row(ms: float, note: str = ""):
        if machine:
            return MachinePrediction(machine[0], case.case_id, ms, commit, note)
        return PredictedCase(case.case_id, ms, commit, note)

    if not case.modelled:
        return row(math.nan, f"not modelled: {case.note}")
    try:
        sc = case_scenario(case, plan_doc, machine[1] if machine else None)
        ms = simulate_steady(sc).prediction.mean_iteration_ms
    except SpecError as e:
        return row(math.nan, f"not simulated: {e}")
    return row(ms)


def _preset(machine: str) -> str:
    """A case's hardware preset ("" for a machine of none, a CPU check run)."""
    from corun.spec.hardware import preset_of_device

    try:
        return preset_of_device(machine)
    except SpecError:
        return ""


def _predict_chunk(chunk: list[tuple]) -> list:
    from corun.costmodel.threads import single_threaded

    with single_threaded():
        return [predict_case(*item) for item in chunk]


def predict_all(ds, jobs: int, limit: int = 0, quiet: bool = True) -> dict:
    """Every case (the first `limit`, where given) predicted again, and again with each
    machine profile of the dataset for the cases of its GPU kind (keyed by (profile,
    case_id)), in `jobs` processes; a progress bar on a terminal unless `quiet`."""
    from corun.pools import process_pool
    from corun.progress import bar
    from corun.spec.provenance import git_commit
    from corun.spec.validation import MachinePrediction

    commit = git_commit()
    items = [(c, ds.plans.get(c.plan_id), commit) for c in ds.measured]
    if limit:
        items = items[:limit]
    items += [(c, ds.plans.get(c.plan_id), commit, (name, profile))
              for name, profile in ds.machines.items() for c, *_ in items
              if _preset(c.machine) == profile.gpu_preset]
    size = max(1, min(200, len(items) // (jobs * 4)))
    chunks = [items[i:i + size] for i in range(0, len(items), size)]
    out = {}
    with process_pool(jobs) if jobs > 1 else nullcontext() as pool, \
            bar(len(items), "cases predicted", quiet, "case") as shown:
        results = pool.map(_predict_chunk, chunks) if pool else map(_predict_chunk, chunks)
        for rows in results:
            out.update({(p.machine, p.case_id) if isinstance(p, MachinePrediction)
                        else p.case_id: p for p in rows})
            shown.update(len(rows))
    return out


def _predict(args: argparse.Namespace) -> int:
    from corun.spec.errors import require_int_range
    from corun.spec.validation import Dataset

    require_int_range("--jobs", args.jobs, 1, 256)
    require_int_range("--limit", args.limit, 0)
    ds = Dataset.read(args.dataset)
    found = predict_all(ds, args.jobs, args.limit, args.quiet)
    predicted = {k: p for k, p in found.items() if isinstance(k, str)}
    on_machines = {k: p for k, p in found.items() if isinstance(k, tuple)}
    if args.limit:
        predicted, on_machines = {**ds.predicted, **predicted}, {**ds.on_machines, **on_machines}
    Dataset(ds.measured, predicted, ds.plans, ds.machines, on_machines).write(args.dataset)
    print(f"predicted {len(predicted)} cases into {Path(args.dataset) / 'predicted.csv'}")
    return 0


def _render(args: argparse.Namespace) -> int:
    from corun.costmodel.learned import DATA_DIR
    from corun.costmodel.model_file import fitted_gpu_kinds
    from corun.reports.benchmarks import read_benchmarks
    from corun.reports.results import readme_with_table, results_markdown
    from corun.spec.serde import write_atomic
    from corun.spec.validation import Dataset

    if not README.is_file():
        raise SpecError("render", str(ROOT), "a source checkout (README.md and docs/ beside "
                        "corun/): render writes the checkout's results")
    ds = Dataset.read(args.dataset)
    results = results_markdown(ds, "corun validate render", fitted_gpu_kinds(DATA_DIR),
                               read_benchmarks(Path(args.dataset) / "benchmarks"))
    readme = readme_with_table(README.read_text(), ds)
    stale = [p for p, text in ((RESULTS, results), (README, readme))
             if not p.exists() or p.read_text() != text]
    if args.check:
        for p in stale:
            print(f"{p.relative_to(ROOT)} differs from a fresh render: run corun validate render")
        return 1 if stale else 0
    for p, text in ((RESULTS, results), (README, readme)):
        write_atomic(p, text)
    print(json.dumps({"wrote": [str(p.relative_to(ROOT)) for p in (RESULTS, README)]}))
    return 0
