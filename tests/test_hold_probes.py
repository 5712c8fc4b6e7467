"""bench/hold_blocks.py, bench/lead_table.py and backend.driver's carveout switch: the
probes of the hold a fused kernel puts on the forward's GEMMs."""

import csv
import gzip
import json

import pytest

from backend import driver
from bench.hold_blocks import main as hold_main
from bench.hold_blocks import report
from bench.lead_table import slowdowns, table


def write_trace(path, gemm_us, beside):
    """A training stream (7) of a GEMM and a short kernel a step, 10 steps; where
    `beside[i]`, a values kernel (stream 13, grid 143) runs across step i's GEMM."""
    events, t = [], 0.0
    for i, b in enumerate(beside):
        if b:
            events.append({"cat": "kernel", "name": "corun_values_cuda_1", "ts": t - 5,
                           "dur": 600.0, "args": {"stream": 13, "grid": [143, 1, 1]}})
        dur = gemm_us[i]
        events.append({"cat": "kernel", "name": "sm80_xmma_gemm_tn_n_tilesize32x32x8",
                       "ts": t, "dur": dur, "args": {"stream": 7, "grid": [1, 1, 16384]}})
        events += [{"cat": "kernel", "name": f"k{j}", "ts": t + dur + 1 + j, "dur": 0.5,
                    "args": {"stream": 7}} for j in range(3)]
        t += 1000.0
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))


def test_report_counts_gemms_beside_the_values_kernel(tmp_path):
    write_trace(tmp_path / "ideal.trace.json.gz", [33.0] * 10, [False] * 10)
    write_trace(tmp_path / "corun.trace.json.gz", [33.0] * 6 + [490.0] * 4,
                [False] * 5 + [True] * 5)
    text = report(tmp_path, ["ideal", "corun"], "tilesize32x32x8", {"corun": 132})
    assert "| ideal | - | - | 10 | 0 | 0 | - | 33.0 | - |" in text
    # five beside (one of them fast), four over twice ideal's 33 us
    # the values kernel starts 5 us before each GEMM it overlaps, slow or not
    assert "| corun | 132 | 143 | 10 | 5 | 4 | 490.0 | 33.0 | 600.0 | 5-5 | 5-5 |" in text
    assert "| ideal | - | - | 10 | 0 | 0 | - | 33.0 | - | - | - |" in text


def test_make_refuses_fewer_blocks_than_chains(tmp_path, capsys):
    with pytest.raises(SystemExit):
        hold_main(["make", "bench/plans/heavy-lean-b16384", "--blocks", "132,33",
                   "--out", str(tmp_path)])
    assert "plan.kernels[0].blocks = 33" in capsys.readouterr().err
    hold_main(["make", "bench/plans/heavy-lean-b16384", "--blocks", "132,264",
               "--out", str(tmp_path)])
    assert json.loads((tmp_path / "blocks.json").read_text()) == {"corun": 132,
                                                                  "corun-2": 264}
    plan = json.loads((tmp_path / "plan-2.json").read_text())
    assert {k["blocks"] for k in plan["kernels"]} == {264}


def test_lead_table_medians_by_lead(tmp_path):
    path = tmp_path / "r.csv"
    fields = ["model", "batch", "stage", "blocks", "warp_rows", "stage_alone_ms",
              "stage_corun_ms", "kernel_lead_ms", "lead_asked_ms"]
    rows = [("heavy-lean", 16384, "interaction_fwd", 143, 1, 0.1, 0.11, 0.012, ""),
            ("heavy-lean", 16384, "interaction_fwd", 143, 1, 0.1, 0.85, 0.1, 0.1),
            ("heavy-lean", 16384, "interaction_fwd", 143, 1, 0.1, 0.75, 0.1, 0.1),
            ("heavy-lean", 16384, "interaction_fwd", 33, 1, 0.1, 0.1, 0.012, ""),
            ("heavy-lean", 16384, "interaction_fwd", 143, 1, 0.1, 0.5, "", ""),  # launched
            ("heavy-lean", 8192, "interaction_fwd", 143, 1, 0.1, 0.9, 0.1, 0.1)]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(fields)
        w.writerows(rows)
    data = slowdowns([path], "heavy-lean", 16384, ["interaction_fwd"])
    by_lead = data[("interaction_fwd", 143, "1")]
    assert sorted(by_lead) == [0.01, 0.1]
    assert by_lead[0.01] == pytest.approx([1.1])
    assert by_lead[0.1] == pytest.approx([8.5, 7.5])
    text = table(data, ["interaction_fwd"])
    assert "| interaction_fwd | 143 | 1 | 1.1x | 8.0x |" in text
    assert "| 33 |" not in text  # one lead only
    assert "| 33 |" in table(data, ["interaction_fwd"], every=True)


def test_lead_table_names_a_missing_column(tmp_path, capsys):
    from bench.lead_table import main as lead_main

    path = tmp_path / "r.csv"
    path.write_text("model,batch,stage\nheavy-lean,16384,emb_fwd\n")
    with pytest.raises(SystemExit):
        lead_main([str(path)])
    assert "no column 'blocks'" in capsys.readouterr().err


def test_carveout_switch_names_the_variable(monkeypatch):
    monkeypatch.delenv(driver.CARVEOUT_ENV, raising=False)
    assert driver.carveout_percent() is None
    monkeypatch.setenv(driver.CARVEOUT_ENV, "100")
    assert driver.carveout_percent() == 100
    for bad in ("101", "-1", "max"):
        monkeypatch.setenv(driver.CARVEOUT_ENV, bad)
        with pytest.raises(ValueError, match="CORUN_SMEM_CARVEOUT must be a whole percent"):
            driver.carveout_percent()
