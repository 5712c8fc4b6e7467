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
