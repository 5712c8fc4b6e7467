"""bench/render_contention.py: one table per run and batch, each stretch with its share of
the co-runner's time alone."""

from __future__ import annotations

import gzip
import json

from bench.render_contention import main


def run(stretch_ms: float) -> dict:
    by_release = {st: {"stretch_ms": stretch_ms, "span_ms": 5.0, "kernel_ms": 0.5,
                       "stage_ms": {}, "host_ahead": 1.0}
                  for st in ("emb_fwd", "emb_bwd")}
    plain = {"span_ms": 4.5, "stage_ms": {"emb_fwd": 1.0, "interaction_bwd": 0.5,
                                          "emb_bwd": 3.0}}
    return {"command": "python bench/contention_probe.py --out X", "batches": [
        {"batch": 8192, "plain": plain,
         "kernels": {"fused": {"alone_ms": 0.5, "by_release": by_release},
                     "alu": {"alone_ms": 0.0, "by_release": by_release}}}]}


def test_tables_name_each_run_and_share_each_stretch(tmp_path, capsys):
    plain = tmp_path / "contention_a.json"
    plain.write_text(json.dumps(run(0.25)))
    (tmp_path / "contention_b.json.gz").write_bytes(gzip.compress(json.dumps(run(0.1)).encode()))
    out = tmp_path / "out.md"
    assert main([str(plain), str(tmp_path / "contention_b.json"), "-o", str(out)]) == 0
    text = out.read_text()
    assert "## contention_a.json, batch 8192" in text and "## contention_b.json" in text
    assert "| fused | 0.500 | +0.250 (50%) | +0.250 (50%) |" in text
    assert "| alu | 0.000 | +0.100 | +0.100 |" in text  # no share of a zero time
    assert "plain step 4.500 ms (emb_fwd 1.000, interaction_bwd 0.500, emb_bwd 3.000)" in text
    assert capsys.readouterr().out == text + "\n"  # printed as written


def test_counters_read_from_ncu_details_csv(tmp_path):
    from bench.render_contention import counters, counters_table

    header = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
              '"Block Size","Grid Size","Device","CC","Section Name","Metric Name",'
              '"Metric Unit","Metric Value"')

    def row(kernel: str, metric: str, unit: str, value: str) -> str:
        return (f'"0","1","python","h","{kernel}","1","7","(256, 1, 1)","(1056, 1, 1)","0",'
                f'"9.0","S","{metric}","{unit}","{value}"')

    fused = "_3cdynamic_3e::corun_values_cuda_1[v3,x](Array<long long>)"
    path = tmp_path / "ncu_x_new.csv"
    path.write_text("\n".join([
        "==PROF== Connected to process 1", header,
        row(fused, "Duration", "ns", "533,568"),
        row(fused, "Memory Throughput", "%", "15.54"),
        row(fused, "Memory Throughput", "byte/s", "681,835,672,304.19"),
        row(fused, "Local Memory Spilling Request Overhead", "%", "no data"),
        row("__main__::alu_kernel[v11,y](Array<long long>)", "Duration", "ns", "581,440")]))
    got = counters(path)
    assert got["fused"] == {"Duration": 533568.0, "Memory Throughput": 681835672304.19}
    assert got["alu"] == {"Duration": 581440.0}
    table = counters_table([path])
    assert "| fused (new) | 533.6 | - |" in table and "| 681.8 |" in table
