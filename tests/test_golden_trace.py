"""A seeded small scenario's timeline, diffed against a committed file.

Regenerate after an intended change with: CORUN_UPDATE_GOLDEN=1 python -m pytest
tests/test_golden_trace.py, and review the diff before committing it.
"""

import json
import os
from pathlib import Path

import pytest
from corun.costmodel import AnalyticCostModel
from corun.sim import EmbeddingComm, Scenario, Strategy, StrategyKind, simulate

from corun import spec

GOLDEN = Path(__file__).parent / "golden" / "trace_2gpu_plan.json"


def scenario() -> Scenario:
    rows = (1000, 2000, 3000)
    tables = tuple(spec.Table(f"cat_{k}", r, 16) for k, r in enumerate(rows))
    tables += (spec.Table("int_0_bucket", 65536, 16),)
    model = spec.Model("golden", 13, tables, (32, 16), (32, 1), batch_per_gpu=2048)
    p = spec.pipelines.criteo("golden", rows)
    dense = tuple(n for n in p.order if "int" in n)
    sparse = tuple(n for n in p.order if "cat" in n)
    plan = spec.Plan("golden", "golden", 2, (
        spec.FusedKernel("dense", dense, "emb_fwd", blocks=132),
        spec.FusedKernel("sparse", sparse, "top_mlp_bwd", blocks=528, threads_per_block=128)))
    return Scenario(spec.hardware_preset("h200", 2), model, p,
                    Strategy(StrategyKind.PLAN, plan=plan), iterations=3, warmup=1, seed=42,
                    jitter_cv=0.05, embedding_comm=EmbeddingComm.PGAS)


def test_golden_trace():
    # the analytic model: the golden tests the event loop, not the fitted H200 data
    trace = json.loads(simulate(scenario(), AnalyticCostModel(), commit="golden").chrome_trace())
    if os.environ.get("CORUN_UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(trace, indent=0) + "\n")
    golden = json.loads(GOLDEN.read_text())
    got, want = trace["traceEvents"], golden["traceEvents"]
    assert [(e["ph"], e["name"], e["pid"], e["tid"]) for e in got] == \
        [(e["ph"], e["name"], e["pid"], e["tid"]) for e in want]
    for g, w in zip(got, want):
        if g["ph"] == "X":
            assert g["ts"] == pytest.approx(w["ts"], abs=2e-3)
            assert g["dur"] == pytest.approx(w["dur"], abs=2e-3)
