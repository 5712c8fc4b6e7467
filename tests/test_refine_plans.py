"""bench/refine_plans.py's decisions: which of a plan's kernels the profile lacks (a
kernel counts as profiled only with a row for every stage), the predicted shares it
records from `corun plan`'s table, and which plan files (runners-up too) that table
vouches for."""

import csv

from backend.profile import COLUMNS, plan_kernels
from backend.trainer import TRAINING_STAGES
from bench.refine_plans import missing_kernels, plan_files, shares
from spec import Plan, load, pipeline_preset


def test_a_kernel_missing_one_stage_is_unprofiled(tmp_path):
    plan = load(Plan, "bench/plans/heavy-fused-one-kernel.json")
    (name,) = [k.name for k in plan_kernels(plan, pipeline_preset("heavy"))]
    stages = [s.value for s in TRAINING_STAGES]
    rows = [{"gpu": "H200", "model": "heavy-fused", "batch": "8192", "kernel": name,
             "stage": s, "measured_utc": "2026-11-30T00:00:00Z"} for s in stages]
    with (tmp_path / "profile.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows[:-1])  # every stage but the optimizer
    assert missing_kernels(plan, "heavy-fused", 8192, "H200", tmp_path, stages) == [name]
    with (tmp_path / "profile.csv").open("a", newline="") as f:
        csv.DictWriter(f, fieldnames=COLUMNS).writerow(rows[-1])
    assert missing_kernels(plan, "heavy-fused", 8192, "H200", tmp_path, stages) == []
    assert missing_kernels(plan, "heavy-fused", 16384, "H200", tmp_path, stages) == [name]


def test_shares_read_the_comparison_table():
    table = """heavy-fused / heavy on 1 x H200, batch 8192 per GPU, cost model learned
strategy        mean iteration ms  samples/s  of ideal  stall ms  min GPU busy
--------------  -----------------  ---------  --------  --------  ------------
ideal                       3.957  2,070,000    100.0%     0.000          100%
gpu-sequential              4.601  1,780,000     86.0%     0.000          100%
corun                       4.390  1,866,000     90.1%     0.000          100%

chosen plan (corun): 1 fused kernel(s)
kernel  released at  op nodes  blocks  threads  alone ms
k0          emb_fwd       130    1056      256     0.646
"""
    assert shares(table) == {"ideal": 100.0, "gpu-sequential": 86.0, "corun": 90.1}


def test_new_rows_never_go_under_another_versions_header(tmp_path):
    """The refine rows go to profile-refine-<model>.csv while its columns are this
    version's; a file from before warp_rows is left as it is and a -2 file is used."""
    from backend.profile import BEFORE_WARP
    from bench.refine_plans import append_csv, refine_file

    assert refine_file(tmp_path, "m") == tmp_path / "profile-refine-m.csv"
    old = tmp_path / "profile-refine-m.csv"
    old.write_text(",".join(BEFORE_WARP) + "\n")
    path = refine_file(tmp_path, "m")
    assert path == tmp_path / "profile-refine-m-2.csv"
    src = tmp_path / "fresh.csv"
    row = dict.fromkeys(COLUMNS, "1")
    with src.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerow(row)
    assert append_csv(src, path) == 1 and refine_file(tmp_path, "m") == path
    assert old.read_text() == ",".join(BEFORE_WARP) + "\n"
    assert next(csv.DictReader(path.open())) == {**row, "step_stage_ms": ""}  # none recorded


def test_the_runners_up_read_are_those_the_table_lists(tmp_path):
    from pathlib import Path

    table = Path("bench/plans/heavy-fused-b16384.txt").read_text()  # corun plan's output
    assert [p.name for p in plan_files(tmp_path, table)] == \
        ["plan.json", "plan-2.json", "plan-3.json"]  # corun-2 and corun-3 in the table
    alone = "\n".join(x for x in table.splitlines() if not x.startswith("corun-"))
    assert [p.name for p in plan_files(tmp_path, alone)] == ["plan.json"]
