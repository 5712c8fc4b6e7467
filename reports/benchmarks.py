"""The benchmarks section of docs/results.md, rendered from the JSON the benchmarks under
bench/ wrote and validation/benchmarks/ keeps (nothing is measured here)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from corun.reports.markdown import markdown_table


def read_benchmarks(folder: Path) -> dict[str, object]:
    """Each committed benchmark file's document, by file name."""
    return {p.name: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


_MOVED = {"all": "raw inputs read once, outputs written once",
          "needed": "raw inputs read once, a list's values only as far as the outputs are "
                    "computed from them, outputs written once"}
"""What an ops_gpu file's bytes count, by its env record's `bytes_rule` (none: "all")."""


def _command(env: dict) -> str:
    """The benchmark's command line as its env record kept it, less its output path."""
    argv = list(env.get("argv") or ["bench/ops_gpu.py"])
    for flag in ("-o", "--output"):
        if flag in argv[:-1]:
            i = argv.index(flag)
            del argv[i:i + 2]
    return "python " + " ".join(argv)


def _ops(name: str, records: list[dict]) -> list[str]:
    """bench/ops_gpu.py: each pipeline's time by variant, against the copy ceiling
    measured in the same run."""
    env = next((r for r in records if r.get("kind") == "env"), {})
    ceiling = next((r for r in records if r.get("kind") == "ceiling"), None)
    timed = [r for r in records if r.get("kind") == "pipeline-time"]
    checks = [r for r in records if r.get("kind") == "pipeline-check"]
    bad = [r for r in checks + timed if r.get("mismatches") or r.get("repeat_mismatches")]
    share = (f"the bytes the pipeline must move ({_MOVED[env.get('bytes_rule', 'all')]}) "
             "over that time as a share of the device-to-device copy ceiling"
             + (f" measured in the same run ({ceiling['bytes_per_s'] / 1e12:.2f} TB/s, "
                "bytes read and written)" if ceiling else ""))
    lines = [f"### Fused preprocessing kernels on {env.get('gpu', 'a GPU')} (`{name}`)", ""]
    if timed:
        lines += ["`python bench/ops_gpu.py --only ceiling,pipelines`: one group over the "
                  "whole pipeline, device time (median of runs queued behind a GPU spin), "
                  f"and {share}. Every output was checked against the NumPy reference first "
                  f"({sum(r['checked_rows'] for r in checks):,} rows in "
                  f"{len(checks)} checks); {len(bad)} differed.", ""]
        rows = [[r["pipeline"], f"{r['rows']:,}", r["variant"], str(r.get("launches", "-")),
                 str(r.get("registers") or "-"), f"{r['device_ms']:.3f}",
                 f"{r['bytes'] / 1e9:.2f}", f"{100 * r['bw_fraction']:.0f}%"] for r in timed]
        lines += [markdown_table(["pipeline", "rows", "variant", "launches",
                                  "registers a thread", "device ms", "GB", "of copy ceiling"],
                                 rows), ""]
    shapes = [r for r in records if r.get("kind") == "launch-shape"]
    if shapes:
        names = list(dict.fromkeys(r["pipeline"] for r in shapes))  # in the order run
        checked = [r for r in shapes if "mismatches" in r]
        sizes = {r["rows"] for r in shapes}
        lines += [f"`--only shapes`: one group over {', '.join(names)}'s "
                  + (f"{shapes[0]['rows']:,} rows" if len(sizes) == 1 else "rows (below)")
                  + " in other launch shapes"
                  + ("" if all("variant" in r for r in shapes) else " (the default kernel)")
                  + ("" if timed else f" (`{_command(env)}`): device time, and {share}")
                  + (f"; each checked against the NumPy reference on a sample of rows first, "
                     f"{sum(bool(r['mismatches']) for r in checked)} of {len(checked)} differed"
                     if checked else "") + ".", "",
                  markdown_table(["pipeline", "rows", "variant", "blocks", "threads a block",
                                  "registers a thread", "device ms", "of copy ceiling"],
                                 [[r["pipeline"], f"{r['rows']:,}", r.get("variant", "fused"),
                                   f"{r['blocks']:,}", str(r["threads"]),
                                   str(r.get("registers") or "-"), f"{r['device_ms']:.3f}",
                                   f"{100 * r['bw_fraction']:.0f}%"] for r in shapes]), ""]
    lines += _hash_rate(records, env, ceiling, command_shown=bool(shapes and not timed))
    lines += [f"Note: {r['text']}." for r in records if r.get("kind") == "note"]
    return lines + [""] if lines[-1] != "" else lines


def _hash_rate(records: list[dict], env: dict, ceiling: dict | None,
               command_shown: bool) -> list[str]:
    """`--only hash`: sigrid_hash's rate, once an id and in a chain, by multiply-high."""
    rates = [r for r in records if r.get("kind") == "hash-rate"]
    if not rates:
        return []
    bad = sum(bool(r["mismatches"]) for r in rates)
    chain = max(r["hashes"] // r["ids"] for r in rates)
    moved = (f" against the copy ceiling measured in the same run "
             f"({ceiling['bytes_per_s'] / 1e12:.2f} TB/s)" if ceiling else "")
    rows = [[r["kernel"], r["multiply_high"], f"{r['blocks']:,}",
             str(r.get("registers") or "-"), f"{r['device_ms']:.3f}",
             f"{r['hashes_per_s'] / 1e9:.1f}" if r["hashes"] else "-",
             f"{r['bytes_per_s'] / 1e12:.2f}"] for r in rates]
    return [f"`--only hash`: sigrid_hash's rate over {rates[0]['ids']:,} random ids"
            + ("" if command_shown else f" (`{_command(env)}`)")
            + f": a copy of the ids, one hash an id (memory-bound: bytes moved{moved}), and "
            f"{chain} hashes in turn an id (compute-bound), with the multiply-high the fused "
            "kernels compile (device) and with 32-bit halves; each kernel's outputs were "
            f"compared with Python's hash on a sample of ids first, {bad} of {len(rates)} "
            "differed.", "",
            markdown_table(["kernel", "multiply-high", "blocks", "registers a thread",
                            "device ms", "G hashes/s", "TB/s moved"], rows), ""]


def _criteo_read(name: str, doc: dict) -> list[str]:
    """bench/criteo_read.py: rows a second of each Criteo reader over the same file."""
    engines = [v for v in doc.values() if isinstance(v, dict) and "rows_per_s" in v]
    lines = [f"### Reading Criteo TSV (`{name}`)", "",
             f"`python bench/criteo_read.py` on {doc['cores']} cores, a "
             f"{doc['file_bytes'] / 1e9:.2f} GB day-file slice of generated lines, read to "
             "the end in chunks of 65,536 rows by each reader (the line reader over the "
             "first rows only), the median of repeated reads.", ""]
    rows = [[e["engine"], f"{e['rows']:,}", f"{e['seconds']:.2f}", f"{e['rows_per_s']:,.0f}"]
            for e in engines]
    lines += [markdown_table(["reader", "rows", "seconds", "rows/s"], rows), "",
              f"pyarrow's reader is {doc['speedup']:.0f}x the line reader.", ""]
    stages = doc.get("arrow_stages")
    if stages:
        lines += [f"Its stages alone: pyarrow's parse into raw fields "
                  f"{stages['parse_rows_per_s']:,.0f} rows/s; the compiled checks and "
                  f"conversion of {stages['convert_rows']:,} parsed rows held in memory "
                  f"{stages['convert_rows_per_s']:,.0f} rows/s.", ""]
    return lines


def _launch_counts(name: str, doc: dict) -> list[str]:
    """bench/launch_counts.py: operators each training stage dispatches and the kernels
    it launches through Numba, per model; where timed on a GPU, the host's launch of the
    whole step."""
    models = doc["models"]
    stages = list(next(iter(models.values()), {}).get("operators", {}))
    timed = all("host_step_ms" in c for c in models.values())

    def cell(c: dict, s: str) -> str:
        k = c.get("kernels", {}).get(s, 0)
        return f"{c['operators'].get(s, '-')}" + (f" + {k}k" if k else "")

    rows = [[m, *(cell(c, s) for s in stages), str(sum(c["operators"].values())),
             str(sum(c.get("kernels", {}).values()))]
            + ([f"{c['host_step_ms']:.3f}"] if timed else []) for m, c in models.items()]
    where = (f"the host's launch of one eager step timed on {doc['gpu']} at batch "
             f"{doc['host_batch']} behind a GPU spin (the median of each model's steps)"
             if timed else "counted on the CPU")
    return [f"### Host launches of the eager step (`{name}`)", "",
            "`python bench/launch_counts.py`: the PyTorch operators one eager training "
            "step dispatches, by stage, and the kernels it launches through Numba (`k`: "
            f"the bag forward, the fused update) (torch {doc['torch']}; {where}). On a GPU "
            "each operator is about one launch from the host thread.", "",
            markdown_table(["model", *stages, "operators", "Numba kernels"]
                           + (["host step ms"] if timed else []), rows), ""]


def _collective_stages(name: str, doc: dict) -> list[str]:
    """bench/collective_stages.py: each collective stage as measured against today's
    collective model (costmodel/comm.py), the fitted runs apart from the held-out ones."""
    from corun.costmodel import comm, comm_fit

    rows, errors = [], {True: [], False: []}
    for r in doc["stages"]:
        predicted = comm_fit.predicted_ms(r, doc["hardware"])
        fitted = int(r["gpus"]) == comm_fit.FIT_GPUS
        steady = comm_fit.is_steady(r)
        error = predicted / r["p10_ms"] - 1
        if steady:
            errors[fitted].append(abs(error))
        rows.append([str(r["gpus"]), r["model"], f"{r['batch_per_gpu']:,}", r["stage"],
                     str(r["runs"]), f"{r['p10_ms']:.3f}", f"{r['median_ms']:.3f}",
                     f"{predicted:.3f}", f"{100 * error:+.0f}%",
                     ("fitted" if fitted else "held out") if steady else "host-held"])
    lines = [f"### Collective stages on {doc['hardware'].upper()} (`{name}`)", "",
             "`python bench/collective_stages.py RUNS...`: the distributed ideal step's "
             "collective stages, each the span between the trainer's stage marks (the "
             "collective and the copies around it), the median over runs of each run's "
             "10th-percentile and median step, against the simulator's collective model "
             f"(all-to-all at {comm.A2A_LINK_SHARE:.3f} and ring all-reduce at "
             f"{comm.ALLREDUCE_LINK_SHARE:.3f} of the link's peak, plus latency and "
             "copies). The shares are fitted on the steady "
             f"{comm_fit.FIT_GPUS}-GPU stages (median within {comm_fit.STEADY_RATIO:g}x "
             "the 10th percentile); the other GPU counts are held out; a host-held stage "
             "waited for the host thread and times it more than the collective.", ""]
    for fitted in (True, False):
        if errors[fitted]:
            lines.append(f"Mean abs error on the steady {'fitted' if fitted else 'held-out'} "
                         f"stages: {100 * sum(errors[fitted]) / len(errors[fitted]):.0f}% "
                         f"({len(errors[fitted])} stages).")
    lines += ["", markdown_table(["GPUs", "model", "batch/GPU", "stage", "runs",
                                  "p10 ms", "median ms", "predicted ms", "vs p10", "rows"],
                                 rows), ""]
    if doc.get("note"):
        lines += [f"Runs: {doc['note']}.", ""]
    return lines


KERNEL_GOALS = {"kaggle": 0.75, "terabyte": 0.75, "multihot": 0.50, "heavy": 0.50}
"""The share of the copy ceiling each reference pipeline's fused kernel aims for at its
full batch: Criteo-like 75% (a plain feature-major kernel of the Criteo pipeline reached
it on the H100), list-heavy 50%."""


def _kernel_times(docs: dict[str, object]):
    """Each checked kernel time of the ops_gpu files that count only the bytes the outputs
    need: (GPU, pipeline, rows, variant, blocks or '', share of the copy ceiling, file)."""
    for name, doc in docs.items():
        if not name.startswith("ops_gpu"):
            continue
        records = list(doc)  # type: ignore[call-overload]
        env = next((r for r in records if r.get("kind") == "env"), {})
        if env.get("bytes_rule") != "needed":
            continue
        for r in records:
            if (r.get("kind") in ("pipeline-time", "launch-shape")
                    and not r.get("mismatches") and not r.get("repeat_mismatches")):
                yield (env.get("gpu", "a GPU"), r["pipeline"], r["rows"],
                       r.get("variant", "fused"), r.get("blocks", ""), r["bw_fraction"], name)


def _met(goal: float | None, default: tuple | None, best: tuple) -> str:
    """Whether a goal is met, and by what: the default kernel, or only a variant."""
    if goal is None:
        return "-"
    if default and default[0] >= goal:
        return "yes"
    return "by a variant only" if best[0] >= goal else "no"


def kernel_goals(docs: dict[str, object]) -> list[str]:
    """Per GPU, pipeline and row count, the default kernel's best share of the copy ceiling
    and the best of any variant, against the pipeline's goal (KERNEL_GOALS, at the most
    rows measured; fewer rows are reported without one)."""
    best: dict[tuple, tuple] = {}
    default: dict[tuple, tuple] = {}
    for gpu, pipeline, rows, variant, blocks, share, name in _kernel_times(docs):
        key, x = (gpu, pipeline, rows), (share, variant, blocks, name)
        best[key] = max(best.get(key, x), x, key=lambda t: t[0])
        if variant == "fused":
            default[key] = max(default.get(key, x), x, key=lambda t: t[0])
    if not best:
        return []
    most: dict[tuple, int] = {}  # per GPU and pipeline, the most rows measured
    for g, p, n in best:
        most[(g, p)] = max(most.get((g, p), 0), n)

    def shape(x: tuple) -> str:
        return f"{x[1]}, {x[2]:,} blocks" if x[2] != "" else f"{x[1]}, default blocks"

    rows = []
    goal_order = list(KERNEL_GOALS)
    for key in sorted(best, key=lambda k: (k[0], goal_order.index(k[1]) if k[1] in
                                           goal_order else len(goal_order), k[1], -k[2])):
        gpu, pipeline, n = key
        goal = KERNEL_GOALS.get(pipeline) if n == most[(gpu, pipeline)] else None
        d, b = default.get(key), best[key]
        rows.append([gpu, pipeline, f"{n:,}", f"{100 * goal:.0f}%" if goal else "-",
                     f"{100 * d[0]:.0f}% ({shape(d)})" if d else "-",
                     f"{100 * b[0]:.0f}% ({shape(b)})",
                     _met(goal, d, b), f"`{b[3]}`"])
    return ["### Fused kernels against their goals", "",
            "Every checked kernel time below that counts only the bytes the outputs need, "
            "as a share of the copy ceiling measured in the same run: per GPU, pipeline and "
            "rows, the default kernel (`fused`) at its best launch shape measured, and the "
            "best of any variant, against the pipeline's goal at its full batch. Files measured "
            "different commits' kernels (each file's note names its commit).", "",
            markdown_table(["GPU", "pipeline", "rows", "goal", "default kernel",
                            "best measured", "goal met", "file of the best"], rows), ""]


RENDERERS: dict[str, Callable[[str, object], list[str]]] = {
    "ops_gpu": _ops,  # type: ignore[dict-item]
    "criteo_read": _criteo_read,  # type: ignore[dict-item]
    "launch_counts": _launch_counts,  # type: ignore[dict-item]
    "collective_stages": _collective_stages,  # type: ignore[dict-item]
}
"""Benchmark -> its section's renderer, a file's benchmark being the part of its name
before the first '-'."""


def benchmarks_section(docs: dict[str, object]) -> list[str]:
    """Every committed benchmark rendered; a file of no known benchmark is an error that
    names it."""
    if not docs:
        return []
    lines = ["## Benchmarks", "", *kernel_goals(docs)]
    for name, doc in docs.items():
        bench = name.split("-")[0].removesuffix(".json")
        if bench not in RENDERERS:
            raise ValueError(f"validation/benchmarks/{name}: no renderer for {bench!r} "
                             f"(one of {', '.join(RENDERERS)})")
        lines += RENDERERS[bench](name, doc)
    return lines
