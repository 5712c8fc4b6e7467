"""Render bench/results/ops_h200.md from the raw H200 runs of bench/ops_gpu.py.

Run: python bench/render_ops.py. Every number below comes from a file in
bench/results/raw/; each table names its run, and RUNS gives each run's commit and
command (the code changed between runs: the report says which code a number measures).
"""

from __future__ import annotations

import json
from pathlib import Path

from spec.serde import read_stored_text

RAW = Path(__file__).parent / "results" / "raw"
OUT = Path(__file__).parent / "results" / "ops_h200.md"
PREFIX = "python bench/ops_gpu.py --out $OUT"
RUNS = {
    1: ("92c019f", "--only ceiling,ops,shapes", "first version: 2-D row-wise torch scan; "
        "each run timed alone (host-bound)"),
    2: ("900dc8f", "--only ceiling,pipelines,shapes", "1-D scan; device time behind queued "
        "work; died in wide-4x unfused at 4M rows (host memory)"),
    3: ("73cbecc", "--only ceiling,pipelines,shapes,cpu --pipelines kaggle,multihot",
        "thread per row, uniform blocks per slot"),
    4: ("7c6dcd8", "--only ceiling,ops,pipelines --pipelines multihot,kaggle,wide-2x "
        "--variants fused", "warp per row when any list in the chain >= 4 (regressed)"),
    5: ("a416c8e", "--only ceiling,pipelines --pipelines multihot,wide-2x --variants fused",
        "warp per row when the sink >= 16"),
    6: ("6058c87", "--only ceiling,pipelines --pipelines multihot,kaggle --variants fused "
        "--check-rows 1000000", "current code: blocks per slot by work, thread per row"),
}


def load(run: int) -> list[dict]:
    return json.loads(read_stored_text(RAW / f"ops_h200_run{run}.json"))


def pick(run: int, **match) -> list[dict]:
    return [r for r in load(run) if all(r.get(k) == v for k, v in match.items())]


def one(run: int, **match) -> dict:
    rows = pick(run, **match)
    assert len(rows) == 1, (run, match, len(rows))
    return rows[0]


def table(headers: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def f(x: float, d: int = 3) -> str:
    return f"{x:.{d}f}"


def hoisted_section() -> str:
    """Run 8: the fused kernels with each slot's parameters read once, against the code
    before, in one command."""
    runs = {v: json.loads(read_stored_text(RAW / f"ops_h200_run8_{v}.json"))
            for v in ("new", "old")}
    times = {v: {(r["pipeline"], r["rows"]): r for r in recs if r["kind"] == "pipeline-time"}
             for v, recs in runs.items()}
    checks = [r for recs in runs.values() for r in recs if r["kind"] == "pipeline-check"]
    bad = sum(len(r["mismatches"]) for r in checks)
    rows = []
    for key, new in times["new"].items():
        old = times["old"][key]
        rows.append([key[0], f"{key[1]:,}", f(old["device_ms"]), f(new["device_ms"]),
                     f"{old['device_ms'] / new['device_ms']:.2f}x",
                     f"{old['registers']} -> {new['registers']}"])
    return "\n".join([
        "\n## Slot constants read once (run 8)\n",
        "`PART=ops bash bench/kernel_ab_session.sh` at commit 349458c: `python "
        "bench/ops_gpu.py --only ceiling,pipelines --variants fused --check-rows 65536 "
        "--pipelines kaggle,terabyte,wide-2x,wide-4x,multihot,heavy` with the kernels as "
        "now (each slot's operator parameters and descriptors read once before its row "
        "loop; ngram's index in 32 bits), then with aa3e82a's backend/codegen.py and "
        "backend/scalar.py swapped in, one process each, one after the other. "
        f"{len(checks)} pipeline checks (both thread mappings, 65,536 rows or the cap), "
        f"{bad} mismatches. Copy ceiling "
        + ", ".join(f"{v} {one_of(recs, 'ceiling')['bytes_per_s'] / 1e12:.2f} TB/s"
                    for v, recs in runs.items()) + ".\n",
        table(["pipeline", "rows", "before: device ms", "now: device ms", "speed-up",
               "registers"], rows)])


def capped_section() -> str:
    """Run 9: every preset's fused kernel with its registers capped at 32 a thread
    (FusedGroup.max_registers), against the default, in one process."""
    recs = json.loads(read_stored_text(RAW / "ops_h200_run9_caps.json"))
    times = {(r["pipeline"], r["rows"], r["variant"]): r for r in recs
             if r["kind"] == "pipeline-time"}
    rows = []
    for (name, n, variant), r in times.items():
        if variant != "fused":
            continue
        capped = times[(name, n, "fused-r32")]
        rows.append([name, f"{n:,}", f"{r['registers']}", f(r["device_ms"]),
                     f(capped["device_ms"]), f"{r['device_ms'] / capped['device_ms']:.2f}x",
                     "all" if not capped["mismatches"] else capped["mismatches"]])
    return "\n".join([
        "\n## Registers capped at 32 a thread (run 9)\n",
        "`PART=caps bash bench/kernel_ab_session.sh` at commit 07a7088: `python "
        "bench/ops_gpu.py --only ceiling,pipelines --variants fused,fused-r32 "
        "--check-rows 65536 --pipelines kaggle,terabyte,wide-2x,wide-4x,multihot,heavy`; "
        "the capped kernel's output compared with the reference on 200,000 sampled rows "
        "(or all). Faster for some presets, slower for others: a per-kernel choice, not "
        "a default.\n",
        table(["pipeline", "rows", "registers uncapped", "uncapped ms", "capped ms",
               "speed-up", "capped rows equal"], rows)])


def one_of(records: list[dict], kind: str) -> dict:
    (rec,) = [r for r in records if r["kind"] == kind]
    return rec


def render() -> str:
    parts = ["# Operators and fused pipelines on the H200\n",
             "Generated by `python bench/render_ops.py` from `bench/results/raw/` (the raw "
             "records of each H200 run). Machine: one NVIDIA H200, 16 host cores; torch "
             "2.11.0+cu130, numba 0.68.0, numba-cuda 0.30.4, numpy 2.5.2, polars 2.1.0 "
             "(carried as a wheel).\n",
             "## Runs\n",
             table(["run", "commit", "command", "code state"],
                   [[k, v[0], f"`{PREFIX} {v[1]}`", v[2]] for k, v in RUNS.items()]),
             "\nCopy ceiling (device-to-device, 2 GiB, bytes read + written, median of 20): "
             + ", ".join(f"run {k}: {one(k, kind='ceiling')['bytes_per_s'] / 1e12:.2f} TB/s"
                         for k in RUNS) + ".\n"]

    parts.append("## Correctness against the NumPy reference\n")
    rows = [[r["op"], f"{r['rows']:,}", "all" if not r["mismatches"] else r["mismatches"]]
            for r in pick(4, kind="op-check")]
    parts.append("Per-op kernels (run 4; run 1 gave the same), every row compared, random "
                 "inputs with nulls, empty and Poisson-length lists:\n")
    parts.append(table(["op", "rows", "rows equal"], rows))
    rows = []
    for run in (2, 3, 6):
        for r in pick(run, kind="pipeline-check"):
            rows.append([r["pipeline"], run, f"{r['rows']:,}", f"{r['checked_rows']:,}",
                         r["outputs"], "all" if not r["mismatches"] else r["mismatches"]])
    parts.append("\nFused whole pipelines (one kernel group): the GPU ran every row; a "
                 "random sample of rows was recomputed by the reference and compared on "
                 "every output:\n")
    parts.append(table(["pipeline", "run", "rows run", "rows compared", "outputs",
                        "equal"], rows))

    parts.append("\n## Per-op GPU time (run 4)\n")
    parts.append("`device ms`: runs queued behind a GPU spin, so events see device time "
                 "only; `wall ms`: events around each run, host launch gaps included (what "
                 "a Python host sees). Bandwidth: minimum bytes (input values, offsets, "
                 "validity read once; output values, offsets written once) over device "
                 "time, as a fraction of the copy ceiling. In run 4 firstx, onehot and "
                 "ngram took the warp-per-row mapping (now off).\n")
    rows = []
    for r in pick(4, kind="op-time"):
        rows.append([r["op"], f"{r['rows']:,}", f(r["device_ms"]), f(r["ms"]),
                     f"{100 * r['bw_fraction']:.1f}%", r["launches"]])
    parts.append(table(["op", "rows", "device ms", "wall ms", "of copy bw", "launches"], rows))

    parts.append("\n## Fused pipelines\n")
    latest = {"kaggle": 6, "multihot": 6, "terabyte": 2, "wide-2x": 5, "wide-4x": 2}
    rows = []
    for name, run in latest.items():
        for r in pick(run, kind="pipeline-time", pipeline=name, variant="fused"):
            rows.append([name, run, f"{r['rows']:,}", f(r["device_ms"]), f(r["ms"]),
                         f"{r['bytes'] / 1e9:.2f}", f"{100 * r['bw_fraction']:.1f}%",
                         r["registers"], r["launches"]])
    parts.append("One fused group per pipeline, 1056 blocks of 256 threads. Runs 2 and 5 "
                 "predate blocks-by-work; for terabyte and wide-2x/4x no slot is much "
                 "heavier than another, so that change matters little there (kaggle moved "
                 "3.74 -> 3.65 ms).\n")
    parts.append(table(["pipeline", "run", "rows", "device ms", "wall ms", "GB moved",
                        "of copy bw", "registers", "launches"], rows))
    rows = []
    for run in (2, 3):
        for r in pick(run, kind="pipeline-time"):
            if r["variant"] == "fused":
                continue
            fused = one(run, kind="pipeline-time", pipeline=r["pipeline"], variant="fused",
                        rows=r["rows"])
            rows.append([r["pipeline"], run, f"{r['rows']:,}", r["variant"], r["launches"],
                         f(r["device_ms"]), f(r["ms"]), f(fused["ms"]),
                         f"{r['ms'] / fused['ms']:.1f}x"])
    parts.append("\nFusion and the division (same run, same inputs): `unfused` is one "
                 "kernel per op node, every intermediate through memory; `fused-mod` is "
                 "the fused kernel with a plain 64-bit `%` in sigrid_hash instead of "
                 "Velox's multiply-and-shift.\n")
    parts.append(table(["pipeline", "run", "rows", "variant", "launches", "device ms",
                        "wall ms", "fused wall ms", "wall vs fused"], rows))

    parts.append(hoisted_section())
    parts.append(capped_section())

    parts.append("\n## Where the time goes (4M rows)\n")
    rows = []
    for run, names in ((3, ("kaggle", "multihot")), (6, ("kaggle", "multihot"))):
        for name in names:
            r = one(run, kind="pipeline-time", pipeline=name, variant="fused", rows=4194304)
            b = r["breakdown_ms"]
            rows.append([name, run, f(b["lengths"]), f(b["scan"]), f(b["values"]),
                         f(r["device_ms"])])
    parts.append(table(["pipeline", "run", "lengths ms", "scan ms", "values ms",
                        "device ms"], rows))

    parts.append("\n## Launch shape, kaggle at 4M rows (run 3)\n")
    rows = [[r["blocks"], r["threads"], f(r["device_ms"]), f"{100 * r['bw_fraction']:.1f}%",
             r["registers"]] for r in pick(3, kind="launch-shape")]
    parts.append(table(["blocks", "threads", "device ms", "of copy bw", "registers"], rows))

    parts.append("\n## CPU baselines (run 3, 16 cores) and GPU speedup\n")
    gpu = {("kaggle", 4194304): one(6, kind="pipeline-time", pipeline="kaggle",
                                    variant="fused", rows=4194304),
           ("terabyte", 4194304): one(2, kind="pipeline-time", pipeline="terabyte",
                                      variant="fused", rows=4194304),
           ("kaggle", 65536): one(6, kind="pipeline-time", pipeline="kaggle",
                                  variant="fused", rows=65536),
           ("wide-2x", 65536): one(5, kind="pipeline-time", pipeline="wide-2x",
                                   variant="fused", rows=65536),
           ("wide-4x", 65536): one(2, kind="pipeline-time", pipeline="wide-4x",
                                   variant="fused", rows=65536),
           ("multihot", 65536): one(6, kind="pipeline-time", pipeline="multihot",
                                    variant="fused", rows=65536)}
    rows = []
    for (name, n), g in gpu.items():
        cpu = {r["engine"]: r for r in pick(3, kind="cpu", pipeline=name, rows=n)}
        best = min(cpu.values(), key=lambda r: r["ms"])
        cells = [name, f"{n:,}"]
        for eng in ("numpy-1core", "numba-16threads", "polars-2.1.0-16threads"):
            cells.append(f(cpu[eng]["ms"], 1) if eng in cpu else "n/a")
        cells += [f(g["device_ms"]), f(g["ms"]),
                  f"{best['ms'] / g['device_ms']:.0f}x / {best['ms'] / g['ms']:.0f}x"]
        rows.append(cells)
    parts.append("All CPU outputs equal the reference. polars has no sigrid_hash; it is "
                 "written in polars' wrapping UInt64 arithmetic (`bench/polars_pipelines.py`"
                 ", bit-exact) and covers kaggle, terabyte and multihot. Speedup = best "
                 "CPU / GPU, on device time and on wall time.\n")
    parts.append(table(["pipeline", "rows", "NumPy 1 core ms", "Numba 16 thr ms",
                        "polars 16 thr ms", "GPU device ms", "GPU wall ms",
                        "speedup device / wall"], rows))
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    OUT.write_text(render() + (Path(__file__).parent / "results" / "ops_h200_notes.md")
                   .read_text())
    print(f"wrote {OUT}")
