"""Does hashing each id twice open heavy-lean's gap while the kernel still hides? (issue 6)

Eager heavy-lean at b32768 hid 79-92% of an 18.5% gap (`heavy_lean_batches_h200.md`):
its 5.3 ms embedding update leaves the whole-pipeline kernel room, but the kernel is too
short to put gpu-sequential 20% below ideal. A vocabulary lookup lengthened the kernel
with random reads, which contend with the update's atomics, and the gap widened while the
kernel stopped hiding (`vocab_lean_h200.md`). Here the kernel is lengthened by arithmetic
instead: the `heavy-rehash` preset is `heavy-small` with each trigram id hashed first
into a global id space (salt 0), then into the table's buckets (salt 1): two sigrid_hash
calls an id, in registers, no more memory traffic (spec.pipelines.heavy, `global_ids`).
Its first two runs read the pipeline from a file this script wrote, equal to the preset.

    python bench/rehash_probe.py --shapes bench/plans/rehash/heavy-lean-b32768 \
        -o bench/plans/rehash/heavy-lean-b32768-shapes --at interaction_bwd:198,...

writes a folder of a plan folder's chosen kernel at other stages and launch shapes, which
`corun tune` runs beside ideal and gpu-sequential (bench/rehash_session.sh);

    python bench/rehash_probe.py --render -o bench/results/rehash_h200.md

renders the runs' records (bench/results/raw/tune_rehash_*_run*/): each `corun tune`
table as it ran (through run 18 ranked by the median step), then each strategy's mean
iteration by its throughput, the gap it recovers so, its training stages against ideal's
and its kernel's span.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.render_execute import tune_table  # noqa: E402
from corun.plan_dir import plan_file, prediction_file  # noqa: E402
from corun.tune_cmd import read_workload, variant_predictions  # noqa: E402
from corun.workload import resolve_hardware, resolve_model, resolve_pipeline  # noqa: E402
from reports.rounds import record_iteration_ms  # noqa: E402
from spec import Plan, SpecError, Stage, load  # noqa: E402
from spec.serde import read_stored_text, save, stored_glob, write_atomic  # noqa: E402

RAW = Path(__file__).resolve().parent / "results" / "raw"
RUNS = {
    "tune_rehash_b32768_run1": "Run 1 (fresh start, 414dfbe7): the folder as first planned, before "
    "heavy-rehash was profiled (`PART=b32768 ROUNDS=3 BUDGET_S=400 bash "
    "bench/rehash_session.sh`, the pipeline read from a file equal to the preset): the "
    "choice 264 blocks at bottom_mlp_bwd, two runners-up, the launch steps and the other lead.",
    "tune_rehash_shapes_run2": "Run 2 (fresh start, 0356ef67): the choice's kernel at other "
    "stages and launch shapes (`PART=shapes ROUNDS=3 BUDGET_S=380`; predictions by the "
    "model before the profile).",
    "tune_rehash_confirm_run3": "Run 3 (fresh start, b31f3974): run 2's best two and the "
    "neighbours of 198 blocks at interaction_bwd (`PART=confirm ROUNDS=3 BUDGET_S=230 "
    "PROFILE_MIN=1.3`; the same command then profiled heavy-lean b32768 beside heavy-rehash's "
    "whole pipeline at 132-1056 blocks, launched and resident, 108 pairs: "
    "costmodel/data/h200/lookup/).",
    "tune_rehash_chosen_run4": "Run 4 (fresh start, be9286fa): the folder re-planned with that "
    "profile, the choice 198 blocks at interaction_bwd two ahead (`PART=b32768 ROUNDS=3 "
    "BUDGET_S=230`: the budget let 2 rounds run). The committed folder was re-planned once "
    "more at 42904d9c, the profile looked up rather than fitted: the same plan.json, "
    "plan-2.json and plan-3.json, and other runners-up 4 and 5 than the ones measured here.",
    "tune_rehash_chosen_run5": "Run 5 (fresh start, 67a7bdfa; the fourth command on it): the "
    "committed folder as run 4 (`PART=b32768 ROUNDS=2 BUDGET_S=130`: the budget let 1 round "
    "run), runners-up 4 and 5 as re-planned at 42904d9c.",
    "tune_rehash_graphs_b16384_run5": "Run 5, first command (`PART=b16384-graphs ROUNDS=3 "
    "BUDGET_S=150`; 2 rounds ran): the step replayed as CUDA graphs at b16384, the folder "
    "planned with `--cuda-graphs`.",
    "tune_rehash_graphs_b32768_run5": "Run 5, second command (`PART=b32768-graphs ROUNDS=3 "
    "BUDGET_S=140`; 1 round ran): the step as CUDA graphs at b32768. x2 and x0.75 of the "
    "choice's 1056 blocks are not run: 2112 and 792 blocks are runners-up already.",
    "tune_rehash_b16384_run5": "Run 5, third command (`PART=b16384 ROUNDS=3 BUDGET_S=130`; 2 "
    "rounds ran): eager at b16384, where the host's launches pace the step (3.74 ms of "
    "launches against 3.34 ms of GPU work, predicted).",
    "tune_rehash_small_replanned_run5": "Run 5, fifth command: not heavy-rehash but eager "
    "heavy-lean beside `heavy-small` at b32768, the folder bench/plans/heavy-lean-b32768 "
    "as re-planned at 42904d9c, when heavy-rehash's lookup rows answered its stages too "
    "(0e85646b keeps them to heavy-rehash and puts back a097470a's plans, whose choice is "
    "run 6's corun-6; the predictions below are those of 42904d9c) (`python -m corun.cli "
    "tune bench/plans/heavy-lean-b32768 --strategies ideal,gpu-sequential,corun,corun-2 "
    "--no-launch-steps --no-lead-variant --rounds 3 --iterations 300 --warmup 20 "
    "--budget-s 240`).",
    "tune_rehash_small_before_run6": "Run 6 (fresh start, 67a7bdfa): the same, with corun-6 "
    "the choice before that re-plan (a097470a's plan.json, 396 blocks at emb_bwd, "
    "predicted as then), from a copy of the folder with it added (`--strategies "
    "ideal,gpu-sequential,corun,corun-6`, `--budget-s 150`).",
    "tune_rehash_chosen_run7": "Run 7 (fresh start, bb64fcf2; its second command, after "
    "`PART=small bash bench/race_session.sh`): the eager b32768 folder re-planned with the "
    "lookup profiled again at 15 steps a pair (`PART=race bash bench/race_session.sh`, "
    "bench/results/race_h200.md) and the search's restarts: the same choice, new runners-up "
    "(`PART=b32768 ROUNDS=2 BUDGET_S=230`: the budget let 1 round run).",
    "tune_rehash_graphs_b32768_run7": "Run 7, third command: the graphed b32768 folder "
    "re-planned as the eager one (`PART=b32768-graphs ROUNDS=1 BUDGET_S=150`); its choice is "
    "now 792 blocks at emb_bwd, and runner-up 4 the eager choice, 198 blocks at "
    "interaction_bwd two ahead.",
    "tune_rehash_graphs_confirm_run7": "Run 7, fourth command: that folder's choice and runner-up "
    "4 again, with the choice's launch steps and other lead (`python -m corun.cli tune "
    "bench/plans/rehash/heavy-lean-b32768-graphs --strategies ideal,gpu-sequential,corun,corun-4 "
    "--rounds 3 --iterations 300 --warmup 20 --budget-s 110`: the budget let 1 round run).",
    "tune_rehash_graphs_b16384_run8": "Run 8 (fresh start, 06ef774d; its second command, "
    "after `PART=graphed bash bench/race_session.sh` profiled heavy-rehash's pairs beside "
    "the graphed step, installed as costmodel/data/h200/graphed-profile-heavy-rehash.csv): "
    "graphed b16384 re-planned with those release steps, the choice 99 blocks at "
    "interaction_bwd (`PART=b16384-graphs ROUNDS=3 BUDGET_S=110`; 2 rounds ran). The "
    "kernel's time alone there was still the trees' (1.78 ms; the profile had timed 2.94), "
    "so the kernel paced the step.",
    "tune_rehash_graphs_b32768_run8": "Run 8, third command: graphed b32768 re-planned the "
    "same way, the choice 297 blocks at interaction_bwd, whose release step the profile "
    "had drawn unheld (1.5x) between held launches of 264 and 528 blocks "
    "(`PART=b32768-graphs ROUNDS=2 BUDGET_S=170`).",
    "tune_rehash_graphs_b32768_run9": "Run 9 (fresh start, c0bc8364): graphed b32768 "
    "re-planned with kernels' times alone taken from the graphed profiles too and "
    "costmodel/held.py (297 and 396 blocks at interaction_bwd taken as held): the choice "
    "198 blocks at interaction_bwd two ahead, training above preprocessing "
    "(`PART=b32768-graphs ROUNDS=2 BUDGET_S=170`; 1 round ran).",
    "tune_rehash_graphs_b16384_run9": "Run 9, second command (`PART=b16384-graphs ROUNDS=3 "
    "BUDGET_S=110`; 1 round ran): not the planner's converged choice. This folder had been "
    "planned while `python bench/repredict.py --all` ran beside it on this 2-core machine; "
    "the search stopped at its 30 s limit on 3168 blocks at emb_bwd. Planned again alone "
    "(converged in 425 plans), the choice is 132 blocks at bottom_mlp_fwd: run 10.",
    "tune_rehash_graphs_confirm_run9": "Run 9, third command: the b32768 choice again in "
    "three rounds (`python -m corun.cli tune bench/plans/rehash/heavy-lean-b32768-graphs "
    "--strategies ideal,gpu-sequential,corun --no-launch-steps --no-lead-variant --rounds 3 "
    "--iterations 300 --warmup 20 --budget-s 150`).",
    "tune_rehash_graphs_b16384_run10": "Run 10 (fresh start, 0c11cea7): the b16384 folder "
    "planned again alone, the choice 132 blocks at bottom_mlp_fwd two ahead, with two "
    "runners-up and the launch variants (`python -m corun.cli tune "
    "bench/plans/rehash/heavy-lean-b16384-graphs --strategies "
    "ideal,gpu-sequential,corun,corun-3,corun-5 --rounds 2 --iterations 300 --warmup 20 "
    "--budget-s 120`). The device tool returns at most 8 files a command: ideal's, "
    "gpu-sequential's and corun's records were lost, so there is no stage table; the "
    "table below is the command's printed one.",
    "tune_rehash_graphs_b16384_run11": "Run 11 (fresh start, 9506fb22): the b16384 choice "
    "again beside ideal and gpu-sequential, for the records run 10 lost (`python -m "
    "corun.cli tune bench/plans/rehash/heavy-lean-b16384-graphs --strategies "
    "ideal,gpu-sequential,corun --no-launch-steps --no-lead-variant --rounds 2 "
    "--iterations 300 --warmup 20 --budget-s 60`). The stages' medians add 0.71 ms over "
    "ideal's and the step 1.51 ms with no wait for the batch: 0.80 ms of the training "
    "stream's busy time (4.71 ms) falls outside the stages' timings (3.91 ms), and the "
    "step took 3.37-5.02 ms (10th-90th percentile; ideal 3.11-3.42). Corrected by run 12: "
    "no time falls outside the stages. The stages' medians add up to less than the median "
    "step because each slow step lost its time in another stage.",
    "tune_rehash_graphs_b16384_run12": "Run 12 (session 55, fresh start, d25a8981): the "
    "same folder with every runner-up, each record now holding each stage and each span's "
    "start iteration by iteration (`PART=b16384-graphs ROUNDS=1 BUDGET_S=200 bash "
    "bench/rehash_session.sh`). Iteration by iteration, the training stream's busy time "
    "less its stages is 0.015 ms (median): run 11's 0.80 ms was the sum of medians. The "
    "choice alternates: a fast step (3.4-3.9 ms) whose batch's assembly ends 0.60 ms "
    "after the step, then a slow one (4.8-5.2 ms) whose kernel, queued behind that "
    "assembly on the preprocessing stream, starts at 0.60 ms instead of 0.49 and wins the "
    "SMs from top_mlp_fwd and top_mlp_bwd (0.57 and 0.80 ms against 0.07 and 0.19).",
    "tune_rehash_graphs_b16384_run13": "Run 13 (fresh start, 3dd0b7d4): the assemblies on "
    "a stream of their own (`Streams.assembly`, made before the copy stream), waiting for "
    "the batch's last kernel's end, so no kernel queues behind an assembly "
    "(`bash bench/assembly_stream_session.sh`, its first form, = PART=graphs now). The "
    "choice starts at 0.50-0.52 ms every step and no step alternates: **-36% to +53%** "
    "(3.70 ms, predicted 3.42, -7.7%); every co-run plan gained; 8 of 12 strategies "
    "predicted within 5%. The same command's GPU tests of the graphed step, the batch "
    "graphs and the streams: 37 passed (`gpu-tests.log`).",
    "tune_rehash_graphs_confirm_run13": "Run 13, second command: graphed b32768's choice "
    "(198 blocks at interaction_bwd, two ahead) with the assembly stream, beside ideal and "
    "gpu-sequential: 101% of the gap, the fastest in 2 of 2 rounds (run 9: 107% and 104%).",
    "tune_rehash_b32768_run14": "Run 14 (fresh start, 35732922; `PART=eager bash "
    "bench/assembly_stream_session.sh`): eager b32768's choice (198 blocks at "
    "interaction_bwd, two ahead), which recovered 96-100% on five starts with the "
    "assemblies queued behind the kernels, with the assembly stream made before the copy "
    "stream: interaction_bwd held in almost every step (2.6 ms against 0.51 in run 7), "
    "**-13%**.",
    "tune_rehash_b16384_run14": "Run 14, second command: the eager b16384 folder, its "
    "choice (264 blocks at interaction_bwd, two ahead) held there too (+0.93 ms; run 5: "
    "+0.10), -28% against run 5's 27%.",
    "tune_rehash_graphs_b16384_run18": "Run 18 (session 56, fresh start, 02dd656c; `PART=tune "
    "bash bench/assembly_stream_session.sh`): Plan.assembly_stream now says where a plan's "
    "assemblies run (behind the kernels unless set), and `corun tune` runs the chosen plan "
    "the other way as corun-own. Graphed b16384: behind, the choice alternates as in run "
    "12 (-45% by its median step, -7% by its throughput); corun-own recovers 57% (54% by "
    "throughput) and is kept as tuned.json. This tune ranked by the median step, as "
    "`corun tune` did until the next commit; the table below each run counts the "
    "throughput.",
    "tune_rehash_graphs_b32768_run18": "Run 18, second command: graphed b32768, the same "
    "variant. Behind, 103% (101% by throughput), the fastest in 2 of 2 rounds; corun-own "
    "101% (99%): tuned.json keeps the choice behind the kernels.",
}


def shapes_folder(folder: Path, out: Path, shapes: list[tuple[str, int]]) -> None:
    """A copy of a one-kernel plan folder's chosen plan and its prediction, with that kernel
    released at each (stage, blocks) of `shapes` as plan-<N>.json, each predicted as `corun
    tune` predicts its launch variants (`corun.tune_cmd.variant_predictions`), so that
    `corun tune OUT` runs them beside ideal and gpu-sequential."""
    work = read_workload(folder)
    chosen = load(Plan, folder / plan_file("corun"))
    if len(chosen.kernels) != 1:
        raise SystemExit(f"{folder}: the chosen plan has {len(chosen.kernels)} kernels, not one")
    out.mkdir(parents=True, exist_ok=True)
    for name in (plan_file("corun"), prediction_file("corun")):
        shutil.copy(folder / name, out / name)
    variants = {f"corun-{i}": replace(chosen, kernels=(replace(chosen.kernels[0], stage=stage,
                                                                blocks=blocks),))
                for i, (stage, blocks) in enumerate(shapes, 2)}
    model = resolve_model(work.model, work.batch, work.cuda_graphs)
    pipeline = resolve_pipeline(work.pipeline)
    hw = resolve_hardware("h200", 1, None, None)  # tune's default
    predicted = variant_predictions(folder, chosen, variants, hw, model, pipeline)
    for name, plan in variants.items():
        save(plan, out / plan_file(name))
        save(predicted[name], out / prediction_file(name))
        print(f"{name}: {plan.kernels[0].stage} {plan.kernels[0].blocks} blocks, "
              f"predicted {predicted[name].mean_iteration_ms:.3f} ms an iteration")


def measurements(folder: Path) -> list[dict]:
    """The folder's measurement records (`corun tune`'s summaries left out), by name."""
    docs = (json.loads(read_stored_text(p)) for p in stored_glob(folder, "*.json"))
    return [m for m in docs if "stages" in m]


def stage_table(records: list[dict]) -> list[str]:
    """Each strategy's mean iteration by its throughput (ms, of its median round) and the
    share of gpu-sequential's gap it recovers so, which a median step hides where a
    share of the steps are slow; then its training stages less ideal's (ms, medians of
    its median round) and its kernels' spans from launch to end."""
    ideal = next((m for m in records if m["strategy"] == "ideal"), None)
    if ideal is None:
        return ["(No stage table: ideal's record was not kept.)"]
    seq = next((m for m in records if m["strategy"] == "gpu-sequential"), None)
    stages = list(ideal["stages"])
    out = ["| strategy | ms/iteration | recovered | " + " | ".join(stages)
           + " | kernel span ms |", "|---|" + "---:|" * (len(stages) + 3)]
    base = record_iteration_ms(ideal)
    seq_ms = None if seq is None else record_iteration_ms(seq)
    for m in records:
        if m["strategy"] == "ideal":
            continue
        k, what = m["plan"]["kernels"], m["strategy"]
        if k and what != "gpu-sequential":
            what += f" ({k[0]['blocks']} at {k[0]['stage']}, {m['plan']['batches_ahead']} ahead)"
        ms = record_iteration_ms(m)
        rec = "-" if seq is None or m is seq else \
            f"{100 * (seq_ms - ms) / (seq_ms - base):.0f}%"
        deltas = (m["stages"][s]["median_ms"] - ideal["stages"][s]["median_ms"] for s in stages)
        spans = ", ".join(f"{v['median_ms']:.2f}" for v in m.get("kernels", {}).values())
        out.append(f"| {what} | {ms:.3f} | {rec} | " + " | ".join(f"{d:+.3f}" for d in deltas)
                   + f" | {spans} |")
    out.append(f"| ideal (ms) | {base:.3f} | - | " + " | ".join(
        f"{ideal['stages'][s]['median_ms']:.3f}" for s in stages) + " | - |")
    return out


def thirds_table(records: list[dict]) -> list[str]:
    """Where each co-run strategy's slow steps lost their time: the means of its fastest
    and slowest thirds of timed iterations (ms), the kernel's start after the top of the
    iteration and each training stage. Only records with per-iteration stages (run 12
    on) and a planned kernel (named k0, k1, ...: not gpu-sequential's); none otherwise."""
    out: list[str] = []
    for m in records:
        per = m.get("per_iteration", {})
        stages = [k for k in per if k.startswith("stage_")]
        starts = [k for k in per if k.startswith("start_k")]
        if not stages or not starts:
            continue
        if not out:
            out = ["", "Fastest and slowest third of each co-run strategy's timed iterations "
                   "(means, ms): the kernel's start after the iteration's top, then each "
                   "stage.", "",
                   "| strategy | third | iteration | kernel start | "
                   + " | ".join(k.removeprefix("stage_") for k in stages) + " |",
                   "|---|---|" + "---:|" * (len(stages) + 2)]
        its = per["iteration"]
        order = sorted(range(len(its)), key=its.__getitem__)
        n = len(order) // 3
        for third, idx in (("fast", order[:n]), ("slow", order[-n:])):
            means = {k: sum(per[k][i] for i in idx) / len(idx)
                     for k in ("iteration", starts[0], *stages)}
            out.append(f"| {m['strategy']} | {third} | {means['iteration']:.3f} | "
                       f"{means[starts[0]]:.3f} | "
                       + " | ".join(f"{means[k]:.3f}" for k in stages) + " |")
    return out


def render() -> str:
    """The report: each run's description, `corun tune` table and stage table."""
    lines = ["# heavy-rehash beside heavy-lean on the H200 (issue 6)", "",
             "Made by `python bench/rehash_probe.py --render -o bench/results/rehash_h200.md` "
             "from the records under `bench/results/raw/tune_rehash_*_run*/`. Recovered: the "
             "share of gpu-sequential's gap to ideal a strategy closes, per round, then the "
             "median. Below each table: each training stage's median less ideal's (ms) and "
             "the kernel's span from its launch to its end."]
    for name, text in RUNS.items():
        block = tune_table(RAW / name)[1]
        records = measurements(RAW / name)
        lines += ["", f"## {name}", "", text, "", block, "", *stage_table(records),
                  *thirds_table(records)]
    return "\n".join(lines) + "\n"


def parse_shapes(text: str) -> list[tuple[str, int]]:
    """`--at`'s STAGE:BLOCKS,... as (stage, blocks) pairs: a training stage's name and a
    positive block count each, else an error naming the item."""
    names = [s.value for s in Stage]
    out = []
    for item in filter(None, (t.strip() for t in text.split(","))):
        stage, _, blocks = item.partition(":")
        if stage not in names or not blocks.isdigit() or int(blocks) < 1:
            raise SpecError("--at", item, f"STAGE:BLOCKS, STAGE one of {', '.join(names)} "
                            "and BLOCKS an integer >= 1")
        out.append((stage, int(blocks)))
    if not out:
        raise SpecError("--at", text, "at least one STAGE:BLOCKS")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", metavar="FOLDER",
                    help="a one-GPU plan folder whose chosen plan has one kernel")
    ap.add_argument("--at", default="", help="STAGE:BLOCKS,... the kernel's releases")
    ap.add_argument("--render", action="store_true", help="write the report to --out")
    ap.add_argument("-o", "--out", required=True, help="the folder (--shapes) or report to write")
    args = ap.parse_args(argv)
    if args.render:
        write_atomic(args.out, render())
        return 0
    if not args.shapes:
        ap.error("--shapes FOLDER or --render")
    try:
        shapes_folder(Path(args.shapes), Path(args.out), parse_shapes(args.at))
    except SpecError as e:
        print(f"rehash_probe: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
