"""One table of heavy-case probe runs: per case the median iteration, its share of the
same command's ideal, the training stages' sum and the three longest, the preprocessing
kernels, the copy and assembly spans, and the host's step.

    python bench/render_heavy_probe.py RAW.json [RAW.json ...] [-o OUT.md] [--header warp]

bench/results/heavy_probe_h200.md is this over the raw files HEADER names,
bench/results/heavy_warp_h200.md over those WARP_HEADER names (--header warp).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spec.serde import read_stored_text, write_or_print  # noqa: E402

NOT_TRAINING = ("h2d", "assemble")
HEADER = """# Heavy case on the H200: the SMs split between the streams, and evict-first hints

heavy-fused / heavy, one H200, every batch checked on the device; "+sm<N>": the
preprocessing stream on N SMs of its own (CUDA green contexts, RunSettings.preprocess_sms),
training on the rest. Shares are of the ideal measured in the same process.

- execute_heavy_smsplit_run1.json: `bash bench/sm_split_probe.sh` (commit a1e306d)
- execute_heavy_smsplit_run2.json: `python bench/execute_gpu.py --matrix heavy --batches
  8192 --strategies ideal,gpu-overlap,gpu-overlap+sm24 --iterations 60 --warmup 10`
  (commit 3ceec6a)
- execute_heavy_smsplit_repeat_*.json: `bash bench/sm_split_repeat.sh` (commit b05f073),
  one process a round, rounds in the order listed
- execute_heavy_hints_{off,on}_run1.json: loads and stores of the fused kernels' raw
  values and outputs, and the assembly's reads, marked evict-first (ld/st .cs), off and
  on, one process each (commit 434bac1, bench/cache_hints_probe.sh there; removed after)

Rendered by `python bench/render_heavy_probe.py` over those files, in this order.

"""


WARP_HEADER = """# Heavy case on the H200: a warp per row against a thread per row

heavy-fused / heavy, one H200, every batch checked on the device; shares are of the
ideal measured in the same process. Kernels write their long lists (100 ids a row) a
warp per row where the strategy has no suffix and a thread per row with "+thread"
(FusedKernel.warp_rows; in runs 1-2, before warp became the default, "+warp" asked for
it and no suffix meant a thread).

- execute_heavy_warp_round1.json, round2.json (runs 1-2): `bash bench/warp_probe.sh`
  (commit 4f44968)
- execute_heavy_warp_run3.json: `bash bench/warp_session.sh` (commit dbb48b1; its corun
  plans were made there by the model refitted with the warp profile, and are not
  committed)
- execute_heavy_warp_run4.json: `PART=profile bash bench/warp_session.sh` (commit 9b51d4c)
- execute_heavy_warp_run5.json: `PART=refine bash bench/warp_session.sh` (commit
  2cd13ce): corun's plans after three rounds of bench/refine_plans.py, as committed under
  bench/plans/heavy-fused-b8192 and -b16384

Rendered by `python bench/render_heavy_probe.py --header warp` over those files, in this
order.

"""
HEADERS = {"probe": HEADER, "warp": WARP_HEADER}


def span(stages: dict[str, float], name: str) -> str:
    return f"{stages[name]:.2f}" if name in stages else "-"


def rows(path: Path) -> list[str]:
    out, ideal = [], {}
    for case in json.loads(read_stored_text(path)):
        m = case.get("measurement")
        if m is None:
            out.append(f"| {path.name} | {case['batch']} | {case['strategy']} | "
                       f"{case.get('error', '')} |||||||")
            continue
        m = json.loads(m) if isinstance(m, str) else m
        ms = m["iteration"]["median_ms"]
        if case["strategy"] == "ideal":
            ideal[case["batch"]] = ms
        base = ideal.get(case["batch"])
        share = f"{base / ms * 100:.1f}%" if base else "-"
        st = {k: v["median_ms"] for k, v in m["stages"].items()}
        train = sum(v for k, v in st.items() if k not in NOT_TRAINING)

        kernels = ", ".join(f"{v['median_ms']:.2f}" for v in m["kernels"].values()) or "-"
        out.append(f"| {path.name} | {case['batch']} | {case['strategy']} | {ms:.3f} | {share} "
                   f"| {train:.2f} | {span(st, 'emb_fwd')} / {span(st, 'interaction_bwd')} / "
                   f"{span(st, 'emb_bwd')} | {kernels} | {span(st, 'h2d')} / "
                   f"{span(st, 'assemble')} | {m['host']['step']['median_ms']:.2f} |")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("raw", nargs="+", type=Path)
    ap.add_argument("-o", "--out", type=Path)
    ap.add_argument("--header", choices=sorted(HEADERS), default="probe",
                    help="the text above the table, naming the runs (with -o)")
    args = ap.parse_args(argv)
    lines = ["| run | batch | strategy | median ms | of ideal | training stages ms | "
             "emb_fwd / interaction_bwd / emb_bwd | kernels ms | h2d / assemble | host step |",
             "|---|---:|---|---:|---:|---:|---|---|---|---:|"]
    for path in args.raw:
        lines += rows(path)
    text = (HEADERS[args.header] if args.out else "") + "\n".join(lines) + "\n"
    write_or_print(text, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
