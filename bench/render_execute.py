"""Render the executor's H200 runs (bench/results/raw/execute_*.json, written by
bench/execute_gpu.py) and the trainer comparison (trainer_h200_*.json, from
bench/trainer_gpu.py) into bench/results/execute_h200.md, and split every Measurement
into its own file under reports/h200/measurements/ for `corun report`.

    python bench/render_execute.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from corun.plan_dir import plan_file as corun_plan_file  # noqa: E402
from reports.summary import markdown_table  # noqa: E402
from spec.serde import read_stored_text, stored_name, stored_path, write_atomic  # noqa: E402

RAW = ROOT / "bench" / "results" / "raw"
RUNS = [  # (file, what the run was, the commit it ran, the command on the H200)
    ("execute_baselines_run1.json", "baselines, first run (a page-locking error after the "
     "first cpu:16 case broke the later cases; fixed in f455ca0)",
     "a4e1b03 + uncommitted page-lock fallback",
     "python bench/execute_gpu.py --matrix baselines --out $OUT --budget-s 470"),
    ("execute_baselines_run2.json", "baselines, trainer with coalesced SGD embedding updates",
     "264dd2e",
     "python bench/execute_gpu.py --matrix baselines --out $OUT --budget-s 330"),
    ("execute_baselines_run3.json", "baselines at batch 8192, uncoalesced SGD updates",
     "40860da",
     "python bench/execute_gpu.py --matrix baselines --batches 8192 "
     "--strategies ideal,gpu-sequential,gpu-overlap --out $OUT/b1 --budget-s 100"),
    ("execute_baselines_run4.json", "multihot with host workers (the last device minutes; "
     "batch 8192's cpu:16 was cut off)", "40860da",
     "timeout 165 python bench/execute_gpu.py --matrix baselines --only multihot "
     "--strategies ideal,cpu:16 --out $OUT --budget-s 150"),
    ("execute_plans_heavy_run3.json", "heavy preset: baselines and plans", "40860da",
     "python bench/execute_gpu.py --matrix plans --only heavy --out $OUT/p1 --budget-s 120"),
    ("execute_plans_run3.json", "planned strategies at batch 8192", "40860da",
     "python bench/execute_gpu.py --matrix plans --only kaggle,terabyte --batches 8192 "
     "--strategies ideal,rap,corun --out $OUT/p2 --budget-s 110"),
    ("execute_plans_run5.json", "planned strategies at batch 8192, plans chosen with the "
     "learned H200 model and the host thread", "3e2d32d",
     "python bench/execute_gpu.py --matrix plans --only kaggle,terabyte,wide-2x,wide-4x "
     "--batches 8192 --strategies ideal,gpu-sequential,rap,corun --budget-s 230 --out $OUT"),
    ("execute_plans_run6.json", "planned strategies at batch 4096 and 8192, every value "
     "of every batch checked on the device (PyTorch ops)", "1666f25",
     "python bench/execute_gpu.py --matrix plans --budget-s 420 --out $OUT"),
    ("execute_plans_run7.json", "launch arguments packed once, one kernel assembles and "
     "checks each batch (one thread per bag)", "13fcd2c",
     "python bench/execute_gpu.py --matrix plans --only kaggle,terabyte,heavy "
     "--budget-s 250 --out $OUT"),
    ("execute_plans_run8.json", "coalesced assembly kernel, host constants refitted on "
     "run 7, plans remade (batch 16384 added)", "ffb401f",
     "python bench/execute_gpu.py --matrix plans --budget-s 390 --out $OUT"),
    ("execute_plans_run9.json", "the rest of run 8's matrix (wide-2x, wide-4x)", "ffb401f",
     "python bench/execute_gpu.py --matrix plans --only wide-2x,wide-4x --budget-s 200 "
     "--out $OUT"),
    ("execute_plans_run10.json", "kaggle and terabyte at batch 8192 again (run-to-run "
     "spread)", "ffb401f",
     "python bench/execute_gpu.py --matrix plans --only kaggle,terabyte --batches 8192 "
     "--budget-s 130 --out $OUT"),
    ("execute_plans_run11.json", "the whole plans matrix with each batch's assembly "
     "enqueued after its last kernel; on GPU 0 of an H200 x4 machine while the assembly "
     "matrix ran on GPU 1 (bench/results/assembly_h200.md)", "fe01dad",
     "CUDA_VISIBLE_DEVICES=0 python bench/execute_gpu.py --matrix plans --budget-s 470 "
     "--out $OUT/plans"),
    ("execute_bound_run1.json", "the heavy pipeline beside the heavy model with dense "
     "embedding gradients (no sparse update: the cheapest model per id the trainer has), "
     "on the one-GPU H200 machine", "bb4c279",
     "python bench/execute_gpu.py --matrix bound --budget-s 120 --out $OUT"),
    ("execute_plans_run12.json", "the whole plans matrix on the one-GPU H200 machine, "
     "alone on its host (the plans of run 11)", "bb4c279",
     "python bench/execute_gpu.py --matrix plans --budget-s 300 --out $OUT"),
    ("execute_plans_run13.json", "the whole plans matrix on GPU 0 of an H200 x2 machine, "
     "alone on its host; the timed loop with the heap frozen, host constants refitted "
     "on run 11 and the plans remade with them", "2bce8fc",
     "CUDA_VISIBLE_DEVICES=0 python bench/execute_gpu.py --matrix plans --budget-s 420 "
     "--out $OUT"),
    ("execute_plans_run14.json", "the plans matrix with plans chosen on overlap rates and "
     "measured pairs; a host about 30% slower than run 12's, cut at the budget after 36 "
     "cases", "e9d652d",
     "python bench/execute_gpu.py --matrix plans --budget-s 300 --out $OUT"),
    ("execute_plans_run15.json", "the plans matrix (without heavy) with each stage's "
     "kernels released once the host has enqueued the stage", "607f8f2",
     "python bench/execute_gpu.py --matrix plans --only kaggle,terabyte,wide-2x,wide-4x "
     "--budget-s 330 --out $OUT"),
    ("execute_plans_run16.json", "ideal and corun at 4096 and 8192 after the plans were "
     "remade (cut by a timeout after 5 cases)", "0f234f3",
     "timeout 190 python bench/execute_gpu.py --matrix plans --only "
     "kaggle,terabyte,wide-2x,wide-4x --batches 4096,8192 --strategies ideal,corun "
     "--budget-s 165 --out $OUT"),
    ("execute_plans_run17.json", "corun's plans run one batch ahead (as before) and two "
     "(+ahead2: the host launches a step without waiting for the kernels co-running with "
     "the step before)", "9394a71",
     "python bench/execute_gpu.py --matrix plans --only kaggle,wide-2x --batches "
     "4096,16384 --strategies ideal,corun,corun+ahead2 --budget-s 200 --out $OUT"),
    ("execute_plans_run18.json", "the same for terabyte b4096 (after heavy run 9)",
     "c92bdb6",
     "python bench/execute_gpu.py --matrix plans --only terabyte --batches 4096 "
     "--strategies ideal,corun,corun+ahead2 --budget-s 150 --out $OUT"),
    ("execute_plans_run19.json", "terabyte b4096's all-CPU plan with 16 (the default), "
     "15, 12 and 8 host workers", "4253c15",
     "python bench/execute_gpu.py --matrix plans --only terabyte --batches 4096 "
     "--strategies ideal,corun,corun+w15,corun+w12,corun+w8 --iterations 150 "
     "--budget-s 330 --out $OUT"),
    ("execute_plans_run20.json", "terabyte b4096's all-CPU plan with 15 and 16 host "
     "workers again", "2c13f71",
     "timeout 175 python bench/execute_gpu.py --matrix plans --only terabyte --batches "
     "4096 --strategies ideal,corun+w15,corun --iterations 150 --budget-s 150 --out $OUT"),
]
SPLIT = {"execute_baselines_run3.json": {"multihot"},
         "execute_baselines_run4.json": {"multihot"},
         "execute_plans_run12.json": None,
         "execute_plans_run15.json": None}
"""Runs whose measurements feed reports/h200, with the pipelines taken from each (None:
all; a later run's measurement of the same case replaces an earlier one). Run 15 is of
the current executor (kernels released once their stage is enqueued), run 12 of the one
before (heavy b4096, and the cases whose plans have changed since run 15), both on the
one-GPU H200 machine the `h200` preset describes. Left out: run 16 (ideal and corun
only, on a slower host: it would pair a case's ideal with another run's baselines), run
11 (an x4's host, beside another matrix) and run 13 (an x2's host), the last two
rendered in bench/results/plans_h200*.md. multihot was last measured in runs 3-4 (its
GPU strategies then paid the executor's older host costs)."""
BENCH_PLAN_FILES = {"corun-owner": "plan-owner.json", "corun-gpu": "plan-gpu.json"}
"""Planned strategies beyond what `corun plan --out bench/plans/<pipeline>-b<batch>` writes
(corun.plan_dir: plan.json, plan-rap.json and the runners-up plan-<N>.json as
"corun-<N>"): under bench/plans/x<N>/ for N = 2 or 4 GPUs, corun's best plan on the GPUs
and the owner-mapped variant (bench/plans/make.sh)."""


def plan_file(strategy: str) -> str | None:
    """The plan file a planned strategy runs (None for a baseline)."""
    return corun_plan_file(strategy) or BENCH_PLAN_FILES.get(strategy)


def suffix_number(suffixes: list[str], prefix: str, default: int | None = None) -> int | None:
    """N of a strategy's first "+<prefix><N>" suffix, `default` without one ("+u<N>" is
    not "+ub<N>": what follows the prefix must be digits)."""
    n = len(prefix)
    return next((int(x[n:]) for x in suffixes if x.startswith(prefix) and x[n:].isdigit()),
                default)


RELEASE_OFFSET = "off"
"""The suffix "+off<ms>": the preprocessing stream waits <ms> after a kernel's releasing
stage opens (RunSettings.release_offset_ms)."""


def release_offset_ms(suffixes: list[str]) -> float | None:
    """<ms> of a strategy's first "+off<ms>" suffix, 0.0 without one, None where what
    follows "off" is not a number of ms."""
    for x in suffixes:
        if x.startswith(RELEASE_OFFSET):
            try:
                return float(x[len(RELEASE_OFFSET):])
            except ValueError:
                return None
    return 0.0


def update_blocks_per_sm(suffixes: list[str]) -> int | None:
    """N of a strategy's "+ub<N>" suffix (execute_gpu.py: the fused embedding update on N
    blocks an SM), None without one."""
    return suffix_number(suffixes, "ub")


def same_plan(case: dict) -> bool:
    """Whether a planned strategy's measurement ran the plan now in bench/plans/ (the
    one its prediction is of); baselines always do."""
    name = plan_file(case["strategy"])
    if name is None:
        return True
    path = ROOT / "bench" / "plans" / f"{case['pipeline']}-b{case['batch']}" / name
    return plan_unchanged(case["measurement"]["plan"], path)


def plan_unchanged(ran: dict, path: Path) -> bool:
    """Whether the plan a measurement ran (its dict) is the one in the plan file."""
    now = json.loads(read_stored_text(path))
    defaults = {"batches_ahead": 1, "training_priority_high": True}  # older plans lack them
    return all(now.get(k) == ran.get(k) for k in ("kernels", "cpu_nodes")) and all(
        now.get(k, d) == ran.get(k, d) for k, d in defaults.items())


TUNE_SUMMARY = "tune.json"
"""What `corun tune -o FOLDER` writes beside one Measurement file per strategy."""


def run_name(path: Path) -> str:
    """A raw run's name in reports: an execute file's own; a tune summary's with its
    folder (every tune run's summary is named tune.json)."""
    name = stored_name(path)
    return f"{Path(path).parent.name}/{name}" if name == TUNE_SUMMARY else name


def tune_records(path: Path, doc: dict | None = None) -> dict[str, dict]:
    """A `corun tune` run's Measurement records (each strategy's median round, kept
    beside its summary tune.json at `path`; `doc`: that summary, where read already), by
    strategy, in the summary's order; a strategy whose record is not there is left out."""
    doc = doc or json.loads(read_stored_text(path))
    out = {}
    for row in doc["rows"]:
        file = Path(path).parent / f"{row['strategy']}.json"
        if stored_path(file).is_file():  # some did not come back from the device
            out[row["strategy"]] = json.loads(read_stored_text(file))
    return out


def tune_cases(path: Path) -> list[dict]:
    """A `corun tune` run's cases, as execute files hold them: one per strategy whose
    Measurement (its median round) is beside the summary."""
    doc = json.loads(read_stored_text(path))
    return [{"pipeline": doc["pipeline"], "batch": doc["batch"], "strategy": s,
             "measurement": m} for s, m in tune_records(path, doc).items()]


def tune_table(folder: Path) -> tuple[str, str]:
    """A `corun tune` run's command line (in backquotes) and its table (the fenced block),
    as its tune.md wrote them."""
    text = (Path(folder) / "tune.md").read_text()
    command = next(line for line in text.splitlines() if line.startswith("`corun tune"))
    return command, text[text.index("```"):text.rindex("```") + 3]


def measured_cases(path: Path) -> tuple[list[dict], dict[tuple, dict]]:
    """A raw file's measured cases (an execute_*.json, or a tune run's tune.json), and
    each workload's ideal measurement from the same command, by (pipeline, batch)."""
    if stored_name(path) == TUNE_SUMMARY:
        cases = tune_cases(path)
    else:
        cases = [r for r in json.loads(read_stored_text(path)) if r.get("measurement")]
    ideal = {(r["pipeline"], r["batch"]): r["measurement"] for r in cases
             if r["strategy"] == "ideal"}
    return cases, ideal


def shares_of_ideal(m: dict, base: dict) -> dict:
    """A measurement as a share of its command's ideal: by median iteration time and by
    throughput (which counts the slow iterations the median leaves out)."""
    return {"of_ideal_pct": 100 * base["iteration"]["median_ms"] / m["iteration"]["median_ms"],
            "of_ideal_tput_pct": 100 * m["throughput_samples_per_s"]
            / base["throughput_samples_per_s"]}


def graphed(m: dict) -> bool:
    """Whether a Measurement's trainer replayed CUDA graphs (the executor notes it)."""
    from spec.measurement import notes_say_graphed

    return notes_say_graphed(m.get("notes", ()))


def measured_scenario(m: dict, strategy: str):
    """The steady-state Scenario of what a Measurement ran (for `sim.simulate_steady`), as
    `corun plan` simulates it (learned H200 model, host thread): ideal and gpu-sequential
    by name, any other strategy as the plan it ran (which carries "+ahead2"), "+w<N>"
    with N host cores, the step graphed or not as it ran ("+eager" names an eager step
    beside graphed ones), its timed batches compared with the reference where its notes
    say so (Scenario.timed_check)."""
    from dataclasses import replace

    import spec
    from sim import Scenario, Strategy, StrategyKind, parse_strategy, steady_state
    from spec.measurement import notes_say_timed_checked
    from spec.serde import from_jsonable

    cores = [int(x[1:]) for x in strategy.split("+")[1:] if x[:1] == "w" and x[1:].isdigit()]
    hw = spec.hardware_preset("h200", m["gpu_count"],
                              **({"host_cpu_cores": cores[0]} if cores else {}))
    model = replace(spec.model_preset(m["model"]), batch_per_gpu=m["batch_per_gpu"],
                    cuda_graphs=graphed(m))
    strategy = strategy.removesuffix("+eager")
    strat = parse_strategy(strategy, hw) if strategy in ("ideal", "gpu-sequential") else \
        Strategy(StrategyKind.PLAN, plan=from_jsonable(spec.Plan, m["plan"], "plan"))
    return steady_state(Scenario(hw, model, spec.pipeline_preset(m["pipeline"]), strat,
                                 timed_check=notes_say_timed_checked(m.get("notes", ()))))


RAW_EXPECTED = ("an existing execute_*.json of bench/execute_gpu.py, or the tune.json of "
                "a `corun tune` run")
"""What a raw-run argument must name (require_raw's message)."""


def require_raw(ap, paths: list[Path], expected: str = RAW_EXPECTED) -> None:
    """An argparse error naming the first of `paths` that is not stored (plain or .gz)
    and what was `expected`, before anything is read or written."""
    missing = [str(p) for p in paths if not stored_path(p).is_file()]
    if missing:
        ap.error(f"raw = {missing[0]!r}: {expected}")


def publish(text: str, out: Path | None, named: bool, default_out: Path) -> None:
    """Print a renderer's text and write it atomically to -o OUT.md, else to its committed
    default report only when it renders its default runs (`named` False): other runs'
    text never replaces it (twice it had, bench/results/heavy_rounds_h200.md)."""
    target = out or (None if named else default_out)
    if target is not None:
        write_atomic(target, text)
    print(text)


def fixed_report_main(argv: list[str] | None, doc: str, render) -> int:
    """The command line of a report on fixed records (the ones its module names): -o OUT
    writes `render()`'s text there atomically, else it is printed."""
    import argparse

    from spec.serde import write_or_print

    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", help="write the report here (default: print it)")
    args = ap.parse_args(argv)
    write_or_print(render(), args.out)
    return 0


def render_main(argv: list[str] | None, doc: str, default_raw: list[Path], default_out: Path,
                expected: str, render_raw, flags: dict[str, str] | None = None) -> int:
    """The command line of a renderer of raw runs: RAW.json ... (default_raw when none)
    and -o OUT.md, plus on/off `flags` ({"--name": help}) passed to render_raw by name. A
    raw file that does not exist is an argparse error naming it and what was `expected`,
    before anything is written; the text `render_raw(raw files, **flags)` returns is
    printed and written atomically where `publish` says."""
    import argparse

    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("raw", nargs="*", type=Path,
                    help="default: " + ", ".join(p.name for p in default_raw))
    ap.add_argument("-o", "--out", type=Path,
                    help=f"default: {default_out.name} with the default RAW, else print only")
    dests = {flag: flag.lstrip("-").replace("-", "_") for flag in flags or {}}
    for flag, dest in dests.items():
        ap.add_argument(flag, action="store_true", dest=dest, help=flags[flag])
    args = ap.parse_args(argv)
    require_raw(ap, args.raw, expected)
    text = render_raw(args.raw or default_raw,
                      **{dest: getattr(args, dest) for dest in dests.values()})
    publish(text, args.out, bool(args.raw), default_out)
    return 0


def ms(s: dict) -> str:
    return f"{s['median_ms']:.3f} ({s['p10_ms']:.2f}-{s['p90_ms']:.2f})"


def run_table(cases: list[dict]) -> str:
    ideal = {(c["pipeline"], c["batch"]): c["measurement"]["throughput_samples_per_s"]
             for c in cases if c.get("measurement") and c["strategy"] == "ideal"}
    rows = []
    for c in cases:
        m = c.get("measurement")
        if m is None:
            rows.append([c["pipeline"], str(c["batch"]), c["strategy"], c["error"][:60],
                         "", "", "", "", ""])
            continue
        base = ideal.get((c["pipeline"], c["batch"]))
        pct = f"{100 * m['throughput_samples_per_s'] / base:.1f}%" if base else "-"
        host = ", ".join(f"{k} {v['median_ms']:.2f}" for k, v in m.get("host", {}).items())
        rows.append([c["pipeline"], str(c["batch"]), c["strategy"], ms(m["iteration"]),
                     f"{m['throughput_samples_per_s']:,.0f}", pct,
                     f"{m['stall_ms_per_iteration']:.3f}", host, str(m["checked_rows"])])
    return markdown_table(["pipeline", "batch", "strategy", "iteration ms median (p10-p90)",
                           "samples/s", "of ideal", "stall ms", "host ms per iteration",
                           "rows checked"], rows)


def trainer_table(ms_list: list[dict]) -> str:
    by = {(m["model"], m["batch_per_gpu"], m["strategy"]): m for m in ms_list}
    rows = []
    for (model, b, label), m in sorted(by.items()):
        if label != "ideal-sgd" and not (label == "ideal" and (model, b, "ideal-sgd")
                                         not in by):
            continue
        naive = by[(model, b, "naive-sgd")]
        ours = m["iteration"]["median_ms"]
        theirs = naive["iteration"]["median_ms"]
        rows.append([model, str(b), f"{ours:.3f}", f"{theirs:.3f}", f"{theirs / ours:.2f}x"])
    return markdown_table(["model (SGD)", "batch", "ours ms", "per-table EmbeddingBag ms",
                           "ours faster by"], rows)


def main() -> int:
    out_dir = ROOT / "reports" / "h200" / "measurements"
    for old in out_dir.glob("*.json"):  # rebuilt from the raw runs below
        old.unlink()
    lines = ["# Strategies executed on one H200", "",
             "Made by `python bench/render_execute.py` from the raw files in "
             "`bench/results/raw/`. Each run is one command on the H200 (below); every "
             "ratio is to `ideal` measured in that same command. 200 timed iterations "
             "after 20 warm-up, synthetic Criteo-like data (4 distinct raw batches "
             "cycled, preprocessing re-run every iteration), outputs compared with the "
             "NumPy reference (all equal): in runs 1-5, 64 random rows of every batch on "
             "the host; from run 6 on, every value of every batch on the device (batch 0 "
             "also on the host). Runs 6-13 are of the executor's steps toward its "
             "host costs (bench/host_split.py); from run 15 on, each stage's kernels are "
             "released once the host has enqueued the stage. reports/h200 takes run 15, "
             "run 12 where run 15 has no current plan's case (multihot from runs 3-4).", ""]
    trainer = json.loads(read_stored_text(RAW / "trainer_h200_run3.json"))
    lines += ["## Our trainer against a straightforward PyTorch DLRM", "",
              "`python bench/trainer_gpu.py --out $OUT/trainer --iterations 100 "
              "--warmup 10` (same batches, both with SGD; ours stacks all tables in one "
              "`embedding_bag`, the baseline has one `nn.EmbeddingBag` per table and plain "
              "autograd):", "", trainer_table(trainer), ""]
    pre = [m for m in trainer if m["strategy"] == "ideal" and m["model"] == "mlperf-dcnv2"]
    if pre:
        lines += ["mlperf-dcnv2 with its own row-wise Adagrad (coalesced updates, a host "
                  "sync per step): " + ", ".join(
                      f"batch {m['batch_per_gpu']} {m['iteration']['median_ms']:.1f} ms"
                      for m in pre) + ".", ""]
    for name, what, commit, command in RUNS:
        path = RAW / name
        if not stored_path(path).exists():
            continue
        cases = json.loads(read_stored_text(path))
        recorded = next((c["measurement"]["git_commit"] for c in cases
                         if c.get("measurement")), "?")
        lines += [f"## {what}", "", f"`{command}` at commit `{commit}` "
                  f"(`bench/results/raw/{name}`; the files say `{recorded}`: the GPU machine's "
                  "copy of the tree reported the session's first commit, or nothing)", "",
                  run_table(cases), ""]
        if name in SPLIT:
            stale = [c for c in cases if c.get("measurement") and not same_plan(c)]
            if stale:
                lines += ["Not in reports/h200 (the plan in bench/plans/ has changed since): "
                          + ", ".join(f"{c['pipeline']} b{c['batch']} {c['strategy']}"
                                      for c in stale) + ".", ""]
            for c in cases:
                m = c.get("measurement")
                wanted = SPLIT[name] is None or c["pipeline"] in SPLIT[name]
                if m is None or c in stale or not wanted or (
                        name == "execute_baselines_run4.json" and c["strategy"] == "ideal"
                        and c["batch"] == 8192):
                    continue  # run 3's baselines measured ideal at this batch too
                stem = f"{c['pipeline']}-b{c['batch']}-{c['strategy'].replace(':', '-')}"
                write_atomic(out_dir / f"{stem}.json",
                             json.dumps({**m, "git_commit": commit}, indent=1))
    write_atomic(ROOT / "bench" / "results" / "execute_h200.md", "\n".join(lines) + "\n")
    print("wrote bench/results/execute_h200.md and reports/h200/measurements/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
