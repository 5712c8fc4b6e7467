"""Findings: every kind has a level and a renderer, and they survive a prediction file."""

import pytest
from corun.sim import Scenario, Strategy, StrategyKind, simulate
from corun.spec import Prediction, SpecError, hardware_preset, model_preset, pipeline_preset
from corun.spec.findings import LEVELS, Finding, FindingKind, Level, finding
from corun.spec.serde import dumps, loads

from corun.advice import RENDERERS, finding_line, shown


def test_every_kind_has_a_level_and_a_line():
    assert set(LEVELS) == set(FindingKind) == set(RENDERERS)


def test_a_prediction_file_keeps_its_findings_and_an_older_one_is_named():
    model = model_preset("criteo-kaggle")
    p = simulate(Scenario(hardware_preset("h200", 1), model, pipeline_preset("kaggle"),
                          Strategy(StrategyKind.IDEAL), iterations=3, warmup=1),
                 commit="t").prediction
    assert p.findings and {f.kind for f in p.findings} >= {FindingKind.HOST_THREAD}
    again = loads(Prediction, dumps(p))
    assert again.findings == p.findings and shown([again]) == shown([p])
    old = {**dumps(p), "schema": "corun.prediction/1"}
    with pytest.raises(SpecError, match="an older corun wrote this file"):
        loads(Prediction, old)


def test_record_findings_stay_in_the_file_and_the_rest_show_with_their_level():
    class P:
        strategy = "ideal"
        findings = (finding(FindingKind.HOST_THREAD, host_ms=3.7, source="h200 host"),
                    finding(FindingKind.SM_CAP_BOUND, sm_cap=96, sm_count=132,
                            max_stage_slowdown=3.667))
    assert LEVELS[FindingKind.HOST_THREAD] is Level.RECORD
    assert shown([P]) == [finding_line(P.findings[1])]
    assert shown([P])[0].startswith(
        "caution: the plan confines its preprocessing to 96 of 132 SMs")


def test_a_finding_that_differs_by_strategy_names_the_strategies():
    def untimed(strategy, n):
        class P:
            findings = (finding(FindingKind.KERNELS_UNTIMED, untimed=n, kernels=n, gpu="H200"),
                        finding(FindingKind.SM_CAP_BOUND, sm_cap=96, sm_count=132,
                                max_stage_slowdown=3.667))
        P.strategy = strategy
        return P

    lines = shown([untimed("ideal", 1), untimed("corun", 1), untimed("rap", 5)])
    assert len(lines) == 3
    assert lines[0].startswith("note: ideal, corun: 1 of 1 fused kernels")
    assert lines[1].startswith("caution: the plan confines")  # the same for all: once
    assert lines[2].startswith("note: rap: 5 of 5 fused kernels")


def test_a_fact_must_be_a_number_or_a_string():
    with pytest.raises(SpecError, match="finding.facts.x"):
        Finding(FindingKind.CALIBRATED, {"x": [1]})


def test_a_plan_s_kernels_say_whether_a_profile_timed_them(monkeypatch):
    """A kernel the profile never timed on this GPU is the learned model's guess, and the
    prediction says so; once timed (at its rows or read off two others), it says nothing."""
    from corun.costmodel.learned import cost_model_for

    hw = hardware_preset("h200", 1)
    pipeline, model = pipeline_preset("kaggle"), model_preset("criteo-kaggle")

    def kernels_finding():
        sc = Scenario(hw, model, pipeline, Strategy(StrategyKind.GPU_SEQUENTIAL),
                      iterations=3, warmup=1)
        found = [f for f in simulate(sc, commit="t").prediction.findings
                 if f.kind is FindingKind.KERNELS_UNTIMED]
        return found[0] if found else None

    f = kernels_finding()
    assert f is not None and f.number("untimed") == f.number("kernels") == 1
    assert "were never timed on H200" in finding_line(f)
    cm = cost_model_for(hw)
    monkeypatch.setattr(cm.model, "kernel_alone_ms", lambda gpu, kernel, rows: 0.1)
    cm._memo.clear()
    assert kernels_finding() is None


def test_findings_follow_the_model_s_content_not_its_name():
    """A renamed copy of a profiled preset (another learning rate too) is told what the
    preset is; a model of other tables is not."""
    from dataclasses import replace

    hw, pipe = hardware_preset("h200", 1), pipeline_preset("kaggle")
    kaggle = model_preset("criteo-kaggle")

    def stages_how(model):
        p = simulate(Scenario(hw, model, pipe, Strategy(StrategyKind.GPU_SEQUENTIAL),
                              iterations=3, warmup=1), commit="t").prediction
        return [f.facts.get("how") for f in p.findings
                if f.kind is FindingKind.STAGES_UNTIMED]

    told = stages_how(kaggle)
    assert told and stages_how(replace(kaggle, name="mine", learning_rate=0.02)) == told
    other = replace(kaggle, name="mine", tables=tuple(replace(t, rows=t.rows + 1)
                                                      for t in kaggle.tables))
    assert stages_how(other) != told
