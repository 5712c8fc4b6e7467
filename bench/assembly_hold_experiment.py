"""Offline: why the simulator ranks graphed heavy-lean b16384's wide kernels above the
198-block one that measures best. For every executed one-kernel plan of the graphed heavy
models (heavy-lean, heavy-hot) that timed its batch's assembly, it sets the assembly's
measured span beside the simulator's. The simulator runs the assembly at the kernel's
rates (`sim.scenario._assembly_run`), and a stage that starts while a large assembly runs
waits for it (ASSEMBLY_HOLDS). It also counts the cases where the simulator puts such a
hold on the optimizer, and predicts them again with the optimizer exempt from the hold.

    python bench/assembly_hold_experiment.py [-o OUT.md]

Results: bench/results/assembly_hold_experiment.md (session 40).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sim.scenario as scenario  # noqa: E402
from bench.render_execute import graphed, measured_scenario, publish  # noqa: E402
from sim import simulate_steady  # noqa: E402
from sim.simulate import git_commit  # noqa: E402
from spec import PIPELINE_PRESETS  # noqa: E402
from spec.serde import read_stored_text, stored_glob  # noqa: E402

RAW = ROOT / "bench" / "results" / "raw"
MODELS = ("heavy-lean", "heavy-hot")
HOLD_MS = 0.05
"""How far above the measured optimizer a predicted one must be to count as a hold."""
COMMITTED = scenario._assembly_run
PLAIN = re.compile(r"ahead\d|b\d+|warp|thread|high|low")
"""Strategy suffixes the simulator models (others change the kernel or the executor)."""


def cases() -> list[tuple[str, str, dict]]:
    """(source, strategy, measurement) of every executed one-kernel plan of MODELS,
    graphed, that timed its assembly: execute_gpu's lists and corun tune's folders."""
    out = []
    for path in stored_glob(RAW, "execute_*.json"):
        runs = json.loads(read_stored_text(path))
        if isinstance(runs, list):
            out += [(path.name, r["strategy"], r["measurement"]) for r in runs
                    if isinstance(r, dict) and r.get("measurement")]
    for folder in sorted(RAW.glob("tune_*")):
        for path in stored_glob(folder, "*.json"):
            m = json.loads(read_stored_text(path))
            if "iteration" in m:
                out.append((folder.name, path.name.removesuffix(".json"), m))
    return [(src, s, m) for src, s, m in out
            if m["model"] in MODELS and graphed(m) and "assemble" in m["stages"]
            and len((m.get("plan") or {}).get("kernels", ())) == 1
            and not s.startswith("two:")
            and all(PLAIN.fullmatch(x) for x in s.split("+")[1:])
            and m["pipeline"] in PIPELINE_PRESETS  # not a probe's pipeline since dropped
            and "dynamic" not in m["plan"]["kernels"][0]]  # a field since dropped


def exempt_optimizer(last, batch_mb, compared):
    """`_assembly_run` with the last stage (the optimizer, on one GPU) never held."""
    run = COMMITTED(last, batch_mb, compared)
    if run.carried and run.carried[-1] == scenario.ASSEMBLY_HOLDS:
        carried = run.carried[:-1] + ((last.carried or last.effects)[-1],)
        run = scenario.KernelRun(run.name, run.release_pos, run.alone_ms, run.effects, carried)
    return run


def predict(m: dict, strategy: str):
    return simulate_steady(measured_scenario(
        m, strategy if strategy in ("ideal", "gpu-sequential") else "plan")).prediction


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", type=Path)
    args = ap.parse_args(argv)
    rows = []
    for _src, strategy, m in cases():
        k = m["plan"]["kernels"][0]
        scenario._assembly_run = COMMITTED
        p = predict(m, strategy)
        scenario._assembly_run = exempt_optimizer
        q = predict(m, strategy)
        asm = next(x for x in p.kernels if x.kernel == scenario.ASSEMBLY_KERNEL)
        stage = {s.stage: s.time_ms for s in p.stages}
        ms = m["iteration"]["median_ms"]
        rows.append({"key": (m["model"], m["batch_per_gpu"], k["stage"], k["blocks"]),
                     "alone": asm.standalone_ms, "pred": asm.time_ms,
                     "meas": m["stages"]["assemble"]["median_ms"],
                     "opt_hold": stage["optimizer"] - m["stages"]["optimizer"]["median_ms"],
                     "err": 100 * (p.iteration_time_ms / ms - 1),
                     "err_exempt": 100 * (q.iteration_time_ms / ms - 1)})
    scenario._assembly_run = COMMITTED
    by = defaultdict(list)
    for r in rows:
        by[r["key"]].append(r)
    lines = ["# The batch's assembly beside the graphed heavy steps: measured and simulated",
             "", f"Made by `python bench/assembly_hold_experiment.py` at commit {git_commit()} "
             f"over {len(rows)} executed "
             f"cases ({', '.join(MODELS)}, graphed, one kernel).",
             "Assembly: its span measured (median over cases of each case's median) and "
             "simulated, as multiples of the simulator's time alone. Optimizer held: cases "
             f"where the simulated optimizer is over {HOLD_MS} ms above the measured one. "
             "Error: mean absolute iteration-time error, as committed and with the optimizer "
             "exempt from the assembly's hold.", "",
             "| model | batch | released at | blocks | cases | assembly measured / alone "
             "| simulated / alone | optimizer held | error | optimizer exempt |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for key in sorted(by):
        rs = by[key]
        med = statistics.median
        lines.append(
            f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {len(rs)} "
            f"| {med(r['meas'] / r['alone'] for r in rs):.2f} "
            f"| {med(r['pred'] / r['alone'] for r in rs):.2f} "
            f"| {sum(r['opt_hold'] > HOLD_MS for r in rs)} "
            f"| {statistics.mean(abs(r['err']) for r in rs):.1f}% "
            f"| {statistics.mean(abs(r['err_exempt']) for r in rs):.1f}% |")
    held = sum(r["opt_hold"] > HOLD_MS for r in rows)
    errs = [abs(r["err"]) for r in rows]
    exempt = [abs(r["err_exempt"]) for r in rows]
    lines += ["", f"Optimizer held in {held} of {len(rows)} simulated cases. Mean absolute "
              f"error {statistics.mean(errs):.2f}% as committed, {statistics.mean(exempt):.2f}% "
              f"with the optimizer exempt; within 5%: {sum(e <= 5 for e in errs)} and "
              f"{sum(e <= 5 for e in exempt)}."]
    text = "\n".join(lines) + "\n"
    publish(text, args.out, named=True, default_out=args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
