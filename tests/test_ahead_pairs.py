"""bench/ahead_pairs.py: one command's cases paired where they ran one plan at both
batch leads and nothing else apart."""

from dataclasses import replace

import spec
from bench.ahead_pairs import _pairs_of, run_suffixes
from spec.serde import to_jsonable


def case(plan, ms: float, notes=("the step replayed as CUDA graphs",)) -> dict:
    return {"model": "heavy-hot", "pipeline": "heavy-short", "batch_per_gpu": 16384,
            "notes": list(notes), "iteration": {"median_ms": ms}, "plan": to_jsonable(plan)}


def test_the_same_plan_at_both_leads_pairs_and_nothing_else_does():
    one = spec.one_kernel_plan(spec.pipeline_preset("heavy-short"), "heavy-hot", 1,
                               "emb_bwd", 1056)
    two = replace(one, batches_ahead=2)
    other = replace(one, kernels=(replace(one.kernels[0], blocks=528),), batches_ahead=2)
    cases = [("at:emb_bwd", case(one, 2.63)), ("at:emb_bwd", case(one, 2.64)),
             ("at:emb_bwd+ahead2", case(two, 2.49)), ("at:emb_bwd+b528+ahead2", case(other, 2.5)),
             ("at:emb_bwd+late+ahead2", case(two, 2.7))]  # ran otherwise: its own key
    pairs = _pairs_of(cases, "run")
    assert [(p["one_ahead"], p["two_ahead"]) for p in pairs] == [("at:emb_bwd",
                                                                  "at:emb_bwd+ahead2")]
    assert pairs[0]["rounds"] == 1 and pairs[0]["measured_ms"] == (2.635, 2.49)


def test_suffixes_the_plan_records_do_not_split_a_pair():
    assert run_suffixes("at:emb_bwd+b1056+ahead2+high") == ()
    assert run_suffixes("corun+late+ahead2+sm16") == ("late", "sm16")
