"""Where should a batch's assembly run: on a stream of its own or behind the kernels?

Renders the session-56 runs on the H200 (bench/assembly_stream_session.sh) from their
records under bench/results/raw:

    python bench/assembly_stream_report.py -o bench/results/assembly_stream_h200.md

Run 16: the graphed Criteo-like matrix with the assemblies on their own stream (the
graphed default then), and each heavy-rehash choice both ways in one start (PART=ab);
run 17: the graphed kaggle and terabyte plans both ways with the driver's 8 hardware
queues and with 32, and the heavy choices with 32 (PART=connections). Run 18, `corun
tune` with the chosen plan's other stream as a variant, is in rehash_h200.md.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.render_execute import fixed_report_main  # noqa: E402
from bench.render_repeats import render as render_rounds  # noqa: E402
from reports.rounds import record_iteration_ms  # noqa: E402
from spec.serde import read_stored_text, stored_glob  # noqa: E402

RAW = Path(__file__).resolve().parent / "results" / "raw"
AB = RAW / "assembly_ab_run16"
QUEUES = RAW / "assembly_queues_run17"
MATRIX = RAW / "execute_matrix_head_graphs_run3.json.gz"
STAGES = ("top_mlp_fwd", "top_mlp_bwd", "interaction_bwd", "bottom_mlp_bwd")
"""The stages the two ways part at (each measured median less ideal's)."""
SLOW_STEP = 1.2
"""A timed iteration over this many times ideal's median counts as slow: a step whose
kernel took a training stage's SMs (eager b32768: interaction_bwd 2.6 ms against 0.4)."""


def records(*folders: Path) -> dict[str, dict]:
    """Each `corun execute` record of the folders, by its file's name (the predictions
    `corun tune` writes beside them, prediction-*.json, left out)."""
    return {p.name.split(".")[0]: json.loads(read_stored_text(p))
            for folder in folders for p in stored_glob(folder, "*.json")
            if not p.name.startswith("prediction-")}


def execute_rows(docs: dict[str, dict], rows: list[tuple[str, str]],
                 stages: tuple[str, ...] = STAGES) -> list[str]:
    """One `corun execute` a row, each (name, its ideal's name): its mean iteration by its
    throughput and that share of ideal's, its median step and p10-p90, its slow steps
    (timed iterations over SLOW_STEP x ideal's median) and the share of the steps after a
    slow one that are slow too (near the share of all steps where each step's race for
    the SMs is its own), the assembly's span, and `stages` (by default those where the
    two ways part), less ideal's (ms; ideal's own row: its stages)."""
    out = ["| run | ms/iteration | of ideal | median step ms (p10-p90) | slow steps | "
           "slow after slow | assembly span ms | " + " | ".join(stages) + " |",
           "|---|---:|---:|---:|---:|---:|---:|" + "---:|" * len(stages)]
    for name, ideal_name in rows:
        m, ideal = docs[name], docs[ideal_name]
        it, ms = m["iteration"], record_iteration_ms(m)
        span = m["stages"].get("assemble", {}).get("median_ms")
        its = m["per_iteration"]["iteration"]
        flags = [t > SLOW_STEP * ideal["iteration"]["median_ms"] for t in its]
        slow = sum(flags)
        pairs = sum(a and b for a, b in zip(flags, flags[1:]))
        after = "-" if not any(flags[:-1]) else f"{100 * pairs / sum(flags[:-1]):.0f}%"
        deltas = " | ".join(
            f"{m['stages'][s]['median_ms']:.3f}" if name == ideal_name else
            f"{m['stages'][s]['median_ms'] - ideal['stages'][s]['median_ms']:+.3f}"
            for s in stages)
        out.append(f"| {name} | {ms:.3f} | {100 * record_iteration_ms(ideal) / ms:.1f}% | "
                   f"{it['median_ms']:.3f} ({it['p10_ms']:.2f}-{it['p90_ms']:.2f}) | "
                   f"{slow}/{len(its)} | {after} | "
                   f"{'-' if span is None else f'{span:.3f}'} | {deltas} |")
    return out


def demoted(text: str) -> list[str]:
    """render_repeats' report under this one's headings: its title dropped, its sections
    one level down."""
    lines = text.splitlines()[1:]
    return ["#" + x if x.startswith("## ") else x for x in lines]


def render() -> str:
    docs = records(AB, QUEUES)
    lines = [
        "# The batches' assemblies: a stream of their own or behind the kernels (H200)", "",
        "Made by `python bench/assembly_stream_report.py -o "
        "bench/results/assembly_stream_h200.md` from the records of runs 16 and 17 "
        "(session 56, one lent H200 each start). Own: each batch's assembly on a stream of "
        "its own, waiting for the batch's last kernel (Streams.assembly); behind: queued "
        "after the kernels on the preprocessing stream. Plan.assembly_stream chooses "
        "(default behind); `corun tune` measures the chosen plan the other way too "
        "(run 18: bench/results/rehash_h200.md).", "",
        "## Summary", "",
        "- **Graphed Criteo-like plans: behind is faster.** With the assemblies on their own "
        "stream (session 55's graphed default), corun's plans ran at 98.6-99.5% of ideal, the "
        "fastest of gpu-sequential, RAP and corun in 3 of 8 (run 16), against 99.5-99.8% and "
        "16 of 16 rounds behind the kernels in session 47. Side by side in one start (run "
        "17), kaggle and terabyte at b4096 and b8192: behind 99.6-99.7% of ideal, the fastest "
        "in 16 of 16 rounds; own 98.4-99.1%, slower than gpu-sequential itself. Own adds "
        "0.005-0.008 ms at top_mlp_bwd and at bottom_mlp_bwd, after the assembly has ended "
        "(it starts and lasts alike both ways: kaggle b4096 0.49 and 0.13 ms against 0.48 and "
        "0.13); what holds those stages is not found.",
        "- **Eager heavy-rehash b32768: behind** (7.59 and 7.60 ms an iteration by throughput "
        "against 9.16 and 9.15 own, ideal 6.90; median steps 7.02 and 6.99 against 9.18 and "
        "9.15; run 16, the rounds in turned order). Own, interaction_bwd took 2.60 ms against "
        "0.51, as in runs 14 and 15: the kernel kept the SMs it won from that stage in "
        "297-298 of 300 steps, behind in 95-97: behind's median step is a fast one, its p90 a "
        "held one, and its median step (98.2-98.6% of ideal's) hides what its throughput "
        "counts (90.9%). A held step followed a held one in 29-36% of cases, against 32% of "
        "all steps: each step's race is its own. Every recovery of the eager b32768 choice "
        "quoted by median step before session 56 (96-100%) is 61-69% by throughput "
        "(bench/results/gap_recovery.md). The plan's first kernel started 0.026 ms after "
        "interaction_bwd opened both ways (the median of steps, stage times summed from the "
        "iteration's top), and the host took 2.7 ms a step against the GPU's 7-9 both ways, "
        "so neither decides which side wins. A profiler trace of the choice behind the "
        "kernels (run 19, bench/results/race_trace_h200.md) shows what does: the values "
        "kernel, after its lengths kernel and scan, took every SM in the 10 of 38 steps where "
        "it became ready 0-4 us after a training kernel ended, in the gap before the next "
        "(that gemm then waited 88-90 us and ran 2.1-2.3 ms against 0.12-0.18), and only the SMs "
        "freed as they came where it became ready 4-5 us before one ended. The own stream's "
        "near-certain hold was not traced.",
        "- **Graphed heavy-rehash b16384: own** (3.71 and 3.73 ms an iteration against 4.35 "
        "and 4.22 behind, ideal 3.22; median steps 3.67 against 4.70 and 4.65): behind, the "
        "next batch's kernel queues after an assembly that runs into the next step (run 12).",
        "- **Not the hardware queues.** With CUDA_DEVICE_MAX_CONNECTIONS=32 (run 17) instead "
        "of the driver's 8, every case kept its side: the graphed plans own 98.4-99.1% "
        "against behind 99.6-99.7%, eager b32768 own 9.12 ms an iteration (interaction_bwd "
        "2.60) against behind 7.52, graphed b16384 own 3.73. A false dependency between "
        "streams that share a hardware queue does not explain the eager hold.",
        "", "## Each heavy choice both ways, one start (run 16, PART=ab ROUNDS=2)", "",
        "`PART=ab ROUNDS=2 bash bench/assembly_stream_session.sh` at 719a0929: eager "
        "b32768's choice (bench/plans/rehash/heavy-lean-b32768) and graphed b16384's "
        "(heavy-lean-b16384-graphs), each with `corun execute --assembly-stream own` and "
        "`behind`, 300 timed iterations after 20; round 1 own first, round 2 behind first. "
        "Stages: each median less ideal's (ms; ideal's row: its own).", "",
        *execute_rows(docs, [(n, f"{n.split('-')[0]}-ideal") for n in (
            "eager-ideal", "eager-own-1", "eager-behind-1", "eager-behind-2", "eager-own-2",
            "graphed-ideal", "graphed-own-1", "graphed-behind-1", "graphed-behind-2",
            "graphed-own-2")]),
        "", "## The same with 32 hardware queues (run 17, PART=connections)", "",
        "`PART=connections bash bench/assembly_stream_session.sh` at ac855fdc, after the "
        "matrices below, with `CUDA_DEVICE_MAX_CONNECTIONS=32` (graphed b16384's ideal "
        "from run 16).", "",
        *execute_rows(docs, [(n, "eager-ideal-q32") for n in (
            "eager-ideal-q32", "eager-own-q32", "eager-behind-q32")]
            + [("graphed-own-q32", "graphed-ideal")]),
    ]
    for title, raw in (
            ("The graphed matrix, assemblies on their own stream (run 16, PART=matrix)", MATRIX),
            ("kaggle and terabyte graphed, both ways, 8 hardware queues (run 17)",
             QUEUES / "matrix-queues8.json.gz"),
            ("kaggle and terabyte graphed, both ways, 32 hardware queues (run 17)",
             QUEUES / "matrix-queues32.json.gz")):
        lines += ["", f"## {title}", "", *demoted(render_rounds([raw]))]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    return fixed_report_main(argv, __doc__, render)


if __name__ == "__main__":
    raise SystemExit(main())
