"""The validation dataset: its files, `corun validate`, and the results rendered from it."""

from __future__ import annotations

import dataclasses
import gzip
import math
import random
from pathlib import Path

import pytest
from corun.reports.results import rankings_by, readme_with_table, results_markdown, trust_table
from corun.spec import Measurement, SpecError, Spread
from corun.spec.serde import dumps, save
from corun.spec.validation import (
    MEASURED_FILE,
    PLANS_FILE,
    Dataset,
    MeasuredCase,
    PredictAs,
    PredictedCase,
    case_from_record,
    plan_id,
    read_plans,
)

from corun import spec
from corun.cli import main
from corun.validate_cmd import DATASET, predict_case

ROOT = Path(__file__).resolve().parent.parent


def case(strategy: str, ms: float, source: str = "run", i: int = 0, **kw) -> MeasuredCase:
    fields = dict(case_id=f"{source}#{i}", source=source, machine="NVIDIA H200", gpus=1,
                  model="criteo-kaggle", pipeline="kaggle", batch_per_gpu=8192,
                  cuda_graphs=False, timed_check=False, strategy=strategy,
                  predict_as=PredictAs.IDEAL if strategy == "ideal" else PredictAs.PLAN,
                  plan_id="", host_cpu_cores=0, modelled=True, iterations=100,
                  mean_iteration_ms=ms, median_step_ms=ms, p10_step_ms=0.9 * ms,
                  p90_step_ms=1.1 * ms, measured_commit="abc", measured_on="2026-12-01",
                  torch_version="2.11")
    return MeasuredCase(**{**fields, **kw})


def dataset(rows: list[tuple[MeasuredCase, float]]) -> Dataset:
    return Dataset(tuple(c for c, _ in rows),
                   {c.case_id: PredictedCase(c.case_id, p, "abc") for c, p in rows}, {})


def measurement(strategy: str = "corun", plan: spec.Plan | None = None) -> Measurement:
    return Measurement(strategy=strategy, model="criteo-kaggle", pipeline="kaggle",
                       hardware="NVIDIA H100 80GB HBM3", gpu_count=1, batch_per_gpu=4096,
                       iterations=10, warmup=2, iteration=Spread(4.0, 3.9, 4.4),
                       throughput_samples_per_s=4096 / 4.2 * 1e3, stall_ms_per_iteration=0.0,
                       stages={}, kernels={}, checked_rows=0, versions={"torch": "2.11"},
                       git_commit="0123456789abcdef", command="test", plan=plan)


def test_a_dataset_is_read_back_as_written(tmp_path):
    rows = [(case("ideal", 4.0, i=0), 3.9), (case("corun", 4.2, i=1, plan_id="p"), math.nan)]
    ds = dataset(rows)
    ds = dataclasses.replace(ds, plans={plan_id({"k": 1}): {"k": 1}})
    ds.write(tmp_path)
    back = Dataset.read(tmp_path)
    assert back.measured == ds.measured
    assert back.predicted["run#0"] == ds.predicted["run#0"]
    assert math.isnan(back.predicted["run#1"].predicted_ms)
    assert back.plans == ds.plans
    assert back.error_pct(back.measured[0]) == pytest.approx(-2.5)


def test_a_bad_cell_names_its_line_and_column(tmp_path):
    dataset([(case("ideal", 4.0), 3.9)]).write(tmp_path)
    path = tmp_path / MEASURED_FILE
    path.write_text(path.read_text().replace(",8192,", ",-3,"))
    with pytest.raises(SpecError, match=r"measured.csv:2.batch_per_gpu = -3"):
        Dataset.read(tmp_path)
    path.write_text(path.read_text().replace(",-3,", ",many,"))
    with pytest.raises(SpecError, match=r"measured.csv:2.batch_per_gpu = 'many': a int"):
        Dataset.read(tmp_path)


def test_a_plan_whose_key_does_not_match_is_refused(tmp_path):
    line = b'{"plan":{"k":1},"plan_id":"0000000000000000"}\n'
    (tmp_path / PLANS_FILE).write_bytes(gzip.compress(line))
    with pytest.raises(SpecError, match="plans.jsonl.gz:1.plan_id"):
        read_plans(tmp_path / PLANS_FILE)


def test_a_measurement_becomes_a_case_with_its_mean_iteration_and_plan():
    plan = spec.one_kernel_plan(spec.pipeline_preset("kaggle"), "criteo-kaggle", 1,
                                "emb_fwd")
    doc = dumps(measurement(plan=plan))
    c, p = case_from_record(doc, "h100-run", 3, "2026-12-06")
    assert c.case_id == "h100-run#3" and c.machine == "NVIDIA H100 80GB HBM3"
    assert c.mean_iteration_ms == pytest.approx(4.2)
    assert c.predict_as is PredictAs.PLAN and c.plan_id == plan_id(p) and c.modelled
    ideal, _ = case_from_record(dumps(measurement("ideal")), "h100-run", 0, "2026-12-06")
    assert ideal.predict_as is PredictAs.IDEAL and ideal.plan_id == ""


def test_validate_add_then_predict_a_new_machines_case(tmp_path):
    save(measurement("ideal"), tmp_path / "ideal.json")
    folder = tmp_path / "validation"
    assert main(["validate", "--dataset", str(folder), "add", str(tmp_path / "ideal.json"),
                 "--source", "h100-ideal"]) == 0
    assert main(["validate", "--dataset", str(folder), "add", str(tmp_path / "ideal.json"),
                 "--source", "h100-ideal"]) == 2  # a source is added once
    assert main(["validate", "--dataset", str(folder), "predict", "--jobs", "1"]) == 0
    ds = Dataset.read(folder)
    (c,) = ds.measured
    assert c.machine.startswith("NVIDIA H100") and ds.predicted[c.case_id].predicted_ms > 0


def test_validate_add_refuses_what_is_not_a_measurement(tmp_path):
    (tmp_path / "x.json").write_text('{"schema": "corun.plan/1"}')
    assert main(["validate", "--dataset", str(tmp_path / "v"), "add", str(tmp_path / "x.json"),
                 "--source", "s"]) == 2
    assert not (tmp_path / "v").exists()


def test_ranking_counts_a_command_only_with_two_strategies_besides_ideal():
    rows = [(case("ideal", 4.0, "a", 0), 4.0), (case("gpu-sequential", 5.0, "a", 1), 4.4),
            (case("corun", 4.5, "a", 2), 4.5),  # predicted slower, measured faster: wrong
            (case("ideal", 4.0, "b", 0), 4.0), (case("corun", 4.5, "b", 1), 4.5)]
    ds = dataset(rows)
    from corun.reports.results import predicted_cases

    (r,) = rankings_by(predicted_cases(ds), lambda c: "all").values()
    assert (r.commands, r.right, r.near) == (1, 0, 0)
    assert r.regrets_pct == (pytest.approx(100 * (5.0 / 4.5 - 1)),)


def test_ranking_takes_strategies_predicted_alike_in_the_planner_s_order():
    """Predictions equal to 0.1 us are alike: the planner's choice before its runners-up
    before the rest (a cap variant predicted as its base but for rounding), as `corun
    tune` ranks them."""
    rows = [(case("ideal", 4.0, "a", 0), 4.0),
            (case("corun-cap64", 5.0, "a", 1), 4.2),
            (case("corun", 4.0, "a", 2), 4.2 + 2e-6),
            (case("gpu-sequential", 5.0, "a", 3), 4.2 - 2e-6),
            (case("corun-2", 4.4, "a", 4), 4.2 + 1e-6),
            (case("ideal", 4.0, "b", 0), 4.0),
            (case("gpu-sequential", 4.0, "b", 1), 4.3),
            (case("corun-2", 4.8, "b", 2), 4.3 + 1e-6),
            (case("corun", 4.0, "c", 0), 4.3 + 1e-3), (case("corun-3", 4.6, "c", 1), 4.3)]
    from corun.reports.results import predicted_cases

    (r,) = rankings_by(predicted_cases(dataset(rows)), lambda c: "all").values()
    assert (r.commands, r.right) == (3, 1)  # a: corun; b: corun-2 (wrong); c: corun-3 (wrong)
    assert r.regrets_pct == (0.0, pytest.approx(20.0), pytest.approx(15.0))


def test_the_trust_table_counts_cases_within_five_percent_as_predicted_and_calibrated():
    """corun: +10% as predicted; scaled by its command's ideal (measured 4.0, predicted
    4.1) +7.3%, still out."""
    rows = [(case("ideal", 4.0, i=0), 4.1), (case("corun", 4.0, i=1), 4.4)]
    text = "\n".join(trust_table(dataset(rows)))
    assert "| H200, eager, 1 GPU | 2 | 6.2% | 1 (50%) | 0 (0%) | - |" in text


def test_repeats_are_judged_against_the_median_of_their_own_rounds():
    """Three rounds of corun in command a (3.6, 4.0, 4.4 ms): the outer two 10% off their
    median, so no single predicted time is within 5% of all three; a plan run once, and
    the same strategy in another command, are not repeats of it."""
    from corun.reports.repeats import repeats_by

    cases = [case("corun", ms, "a", i) for i, ms in enumerate((3.6, 4.0, 4.4))]
    cases += [case("corun", 9.0, "b", 0), case("rap", 4.0, "a", 3)]
    (r,) = repeats_by(cases, lambda c: "all").values()
    assert r.deviations_pct == pytest.approx((10.0, 0.0, 10.0))
    assert r.within(5.0) == "1 of 3 (33%)"
    text = "\n".join(trust_table(dataset([(c, 4.0) for c in cases])))
    assert "| 1 of 3 (33%) |" in text


def test_calibration_scales_by_the_same_commands_ideal_only():
    from corun.reports.results import calibrated

    # (case, signed error %): ideal predicted 5.0 for 4.0, corun 6.0 for 5.0
    rows = [(case("ideal", 4.0, "a", 0), 25.0), (case("corun", 5.0, "a", 1), 20.0),
            (case("corun", 5.0, "b", 0), 20.0)]  # no ideal in command b: left out
    ((c, e),) = calibrated(rows)
    assert c.source == "a" and e == pytest.approx(-4.0)


def test_only_the_newest_day_of_a_workload_is_kept():
    from corun.reports.results import newest_per_workload

    old, new = case("corun", 4.0, "a", measured_on="2026-11-01"), case("corun", 4.0, "b")
    other = case("corun", 4.0, "c", batch_per_gpu=4096, measured_on="2026-11-01")
    assert newest_per_workload([(old, 1.0), (new, 2.0), (other, 3.0)]) == [
        (new, 2.0), (other, 3.0)]


def test_the_readme_table_is_replaced_between_its_markers_only():
    from corun.reports.results import TABLE_END, TABLE_START

    ds = dataset([(case("ideal", 4.0), 4.1)])
    readme = f"intro\n{TABLE_START}\nOLD-TABLE\n{TABLE_END}\noutro\n"
    out = readme_with_table(readme, ds)
    assert out.startswith("intro\n") and out.endswith(f"{TABLE_END}\noutro\n")
    assert "OLD-TABLE" not in out and "| H200, eager, 1 GPU | 1 |" in out


def test_the_committed_results_and_readme_table_are_fresh():
    """docs/results.md and the README's table are what `corun validate render` makes of
    the committed dataset: edit the data, then render."""
    assert main(["validate", "render", "--check"]) == 0


def test_the_committed_predictions_are_todays_model():
    """A sample of committed predictions, predicted again now: a change to the model or the
    simulator shows here until `corun validate predict` is run and committed."""
    ds = Dataset.read(DATASET)
    modelled = [c for c in ds.measured if c.modelled
                and not math.isnan(ds.predicted[c.case_id].predicted_ms)]
    for c in random.Random(0).sample(modelled, 6):
        now = predict_case(c, ds.plans.get(c.plan_id), "now")
        assert now.predicted_ms == pytest.approx(ds.predicted[c.case_id].predicted_ms,
                                                 rel=1e-5), c.case_id


def test_the_lent_hosts_spread_is_what_the_committed_runs_give():
    """costmodel/host.py's HOST_STEP_SPREAD is host_fit's answer on the dataset, and the
    plan's host hint carries it where the reference host paces the step (not with a
    machine's measured host)."""
    from corun.costmodel.host import HOST_STEP_SPREAD
    from corun.costmodel.host_fit import host_step_spread
    from corun.sim import Scenario, simulate_steady
    from corun.sim.strategy import Strategy, StrategyKind
    from corun.spec import hardware_preset, model_preset, pipeline_preset
    from corun.spec.findings import FindingKind
    from corun.spec.hardware import HostTimes

    low, high = host_step_spread(Dataset.read(DATASET).measured)
    assert HOST_STEP_SPREAD == (pytest.approx(low, abs=0.005), pytest.approx(high, abs=0.005))
    assert low < 1 < high

    def hint(hw):
        sc = Scenario(hw, model_preset("criteo-kaggle"), pipeline_preset("kaggle"),
                      Strategy(StrategyKind.IDEAL))
        return next(f for f in simulate_steady(sc).prediction.findings
                    if f.kind is FindingKind.HOST_PACES_EAGER)

    h200 = hardware_preset("h200", 1)
    assert (hint(h200).number("lent_low"), hint(h200).number("lent_high")) == HOST_STEP_SPREAD
    mine = dataclasses.replace(h200, host=HostTimes(step_ms=9.0, graph_step_ms=0.4,
                                                    kernel_launch_ms=0.05, batch_fixed_ms=0.3))
    assert "lent_low" not in hint(mine).facts and "round_low" not in hint(mine).facts
    rounds = dataclasses.replace(mine, host=dataclasses.replace(
        mine.host, round_step_ms=(8.1, 9.0, 10.8)))
    assert (hint(rounds).number("round_low"), hint(rounds).number("round_high")) == (
        pytest.approx(0.9), pytest.approx(1.2))
    from corun.advice import finding_line

    said = finding_line(hint(rounds))
    assert "moved between its calibration rounds (0.90x-1.20x their median)" in said
    assert "lent" not in said


def test_results_render_names_the_cases_without_a_prediction():
    rows = [(case("ideal", 4.0, i=0), 4.1),
            (case("corun+ub16", 4.0, i=1, modelled=False, note="the update grid"), math.nan)]
    text = results_markdown(dataset(rows), "test", frozenset({"H200"}))
    assert "1 ran a variant the simulator does not model: the update grid (1)" in text


def test_cases_of_a_gpu_kind_no_fit_has_seen_are_reported_apart():
    h100 = dict(machine="NVIDIA H100 80GB HBM3", measured_on="2026-12-06")
    rows = [(case("ideal", 4.0, "a", 0), 4.1), (case("ideal", 4.0, "b", 0, **h100), 3.0)]
    text = results_markdown(dataset(rows), "test", frozenset({"H200"}))
    start = text.index("## Held out")
    held = text[start:text.index("\n## ", start + 1)]
    assert "fitted on H200" in held
    assert "| H100 criteo-kaggle/kaggle b8192 eager | 1 | 25.0% |" in held
    assert "H200 criteo-kaggle" not in held
    assert "| H200, eager, 1 GPU | 1 |" in text and "| H100, eager, 1 GPU | 1 |" in text


def test_the_committed_models_name_the_gpu_kinds_they_were_fitted_on():
    from corun.costmodel.learned import DATA_DIR
    from corun.costmodel.model_file import fitted_gpu_kinds

    assert fitted_gpu_kinds(DATA_DIR) == {"H200"}


def test_a_tune_folder_adds_every_round_where_it_kept_them(tmp_path):
    """Rankings compare each strategy's median over its rounds: a tune folder's rounds/
    holds every round, its top level only each strategy's median round."""
    tuned = tmp_path / "tuned"
    for name in ("rounds/ideal-r1.json", "rounds/ideal-r2.json", "ideal.json"):
        save(measurement("ideal"), tuned / name)
    (tuned / "tune.json").write_text('{"rows": []}')  # not a Measurement: passed over
    folder = tmp_path / "validation"
    assert main(["validate", "--dataset", str(folder), "add", str(tuned), "--source", "t"]) == 0
    assert [c.case_id for c in Dataset.read(folder).measured] == ["t#0", "t#1"]


def test_a_case_from_a_device_without_a_preset_is_rendered_under_its_own_name():
    """A CPU check run added to a dataset is named as it ran; it gets no prediction."""
    rows = [(case("ideal", 4.0, i=0), 4.1), (case("ideal", 400.0, "c", 0, machine="cpu"),
                                             math.nan)]
    text = results_markdown(dataset(rows), "test", frozenset({"H200"}))
    assert "| H200, eager, 1 GPU | 1 |" in text and "| cpu" not in text  # not predicted
    assert "NVIDIA H200, cpu, measured" in text


def test_benchmarks_render_from_their_files():
    """The benchmarks section says what each committed benchmark file holds, numbers as
    recorded; a file of no known benchmark is an error that names it."""
    from corun.reports.benchmarks import benchmarks_section

    ops = [{"kind": "env", "gpu": "NVIDIA H100 80GB HBM3"},
           {"kind": "ceiling", "bytes_per_s": 3.0e12},
           {"kind": "pipeline-check", "checked_rows": 1000, "mismatches": []},
           {"kind": "pipeline-time", "pipeline": "kaggle", "rows": 4194304, "variant": "fused",
            "launches": 4, "registers": 48, "device_ms": 4.273, "bytes": 3.9e9,
            "bw_fraction": 0.304, "repeat_mismatches": []},
           {"kind": "launch-shape", "pipeline": "kaggle", "rows": 4194304, "blocks": 4224,
            "threads": 256, "registers": 46, "device_ms": 1.893, "bw_fraction": 0.68},
           {"kind": "note", "text": "a note"}]
    read = {"bench": "criteo_read", "cores": 16, "file_bytes": 2.4e9, "speedup": 37.1,
            "arrow": {"engine": "arrow", "rows": 10_000_000, "seconds": 7.96,
                      "rows_per_s": 1_256_148.0},
            "arrow_stages": {"parse_rows_per_s": 5e6, "convert_rows_per_s": 2e7,
                             "convert_rows": 4_000_000}}
    text = "\n".join(benchmarks_section({"ops_gpu-h100.json": ops,
                                         "criteo_read-h100.json": read}))
    assert "on NVIDIA H100 80GB HBM3 (`ops_gpu-h100.json`)" in text
    assert "(3.00 TB/s, bytes read and written)" in text and "1,000 rows in 1 checks); 0" in text
    assert "| kaggle | 4,194,304 | fused | 4 | 48 | 4.273 | 3.90 | 30% |" in text
    assert "over kaggle's 4,194,304 rows in other launch shapes (the default kernel)" in text
    assert "| kaggle | 4,194,304 | fused | 4,224 | 256 | 46 | 1.893 | 68% |" in text
    assert "Note: a note." in text
    assert "(raw inputs read once, outputs written once)" in text  # a file of every value
    needed = [{**ops[0], "bytes_rule": "needed"}, *ops[1:]]
    assert "a list's values only as far as the outputs are computed from them" in "\n".join(
        benchmarks_section({"ops_gpu-h100.json": needed}))
    shapes = [{"kind": "env", "gpu": "NVIDIA H100 80GB HBM3", "bytes_rule": "needed",
               "argv": ["bench/ops_gpu.py", "--only", "ceiling,shapes", "-o", "/x/s.json"]},
              ops[1], {**ops[4], "variant": "fused-r32", "registers": 32, "mismatches": []},
              {**ops[4], "pipeline": "wide-2x", "variant": "fused", "mismatches": [["x", 3]]}]
    only = "\n".join(benchmarks_section({"ops_gpu-h100-shapes.json": shapes}))
    assert "| GB |" not in only and "--only ceiling,pipelines" not in only  # no empty table
    assert "over kaggle, wide-2x's 4,194,304 rows" in only
    assert "(`python bench/ops_gpu.py --only ceiling,shapes`)" in only
    assert "(3.00 TB/s, bytes read and written)" in only and "1 of 2 differed" in only
    assert "| kaggle | 4,194,304 | fused-r32 | 4,224 | 256 | 32 | 1.893 | 68% |" in only
    rates = [{"kind": "env", "gpu": "NVIDIA H100 80GB HBM3",
              "argv": ["bench/ops_gpu.py", "--only", "ceiling,hash", "-o", "/x/h.json"]},
             ops[1],
             {"kind": "hash-rate", "kernel": "copy", "multiply_high": "-", "ids": 1000,
              "hashes": 0, "blocks": 1056, "registers": 28, "device_ms": 0.4,
              "hashes_per_s": 0.0, "bytes_per_s": 2.9e12, "mismatches": []},
             {"kind": "hash-rate", "kernel": "hash-x16", "multiply_high": "halves",
              "ids": 1000, "hashes": 16000, "blocks": 16896, "registers": 32,
              "device_ms": 1.4, "hashes_per_s": 1.92e11, "bytes_per_s": 7e11,
              "mismatches": ["id@3"]}]
    hashed = "\n".join(benchmarks_section({"ops_gpu-h100-hash.json": rates}))
    assert "rate over 1,000 random ids (`python bench/ops_gpu.py --only ceiling,hash`)" in hashed
    assert "16 hashes in turn an id" in hashed and "1 of 2 differed" in hashed
    assert "| copy | - | 1,056 | 28 | 0.400 | - | 2.90 |" in hashed
    assert "| hash-x16 | halves | 16,896 | 32 | 1.400 | 192.0 | 0.70 |" in hashed
    assert "(3.00 TB/s)" in hashed and "| GB |" not in hashed
    assert "| arrow | 10,000,000 | 7.96 | 1,256,148 |" in text and "37x" in text
    assert "raw fields 5,000,000 rows/s" in text and "memory 20,000,000 rows/s" in text
    with pytest.raises(ValueError, match="validation/benchmarks/odd.json"):
        benchmarks_section({"odd.json": {}})
    assert benchmarks_section({}) == []


def test_a_profile_is_checked_apart_on_the_cases_of_its_own_host():
    """A case measured in the same boot as a machine profile (the run's and the profile's
    host_id) is counted apart as the profile's own host; a case of another host is not,
    and the host id comes from the run's versions."""
    from corun.spec.hardware import HostTimes
    from corun.spec.machine import MachineProfile
    from corun.spec.validation import MachinePrediction

    record = dataclasses.replace(measurement("ideal"), versions={"host_id": "boot-a"})
    assert case_from_record(spec.serde.to_jsonable(record), "r", 0, "2026-12-06")[0] \
        .host_id == "boot-a"
    h100 = dict(machine="NVIDIA H100 80GB HBM3", measured_on="2026-12-06")
    mine = case("ideal", 4.0, "a", 0, host_id="boot-a", **h100)
    other = case("ideal", 4.0, "b", 0, host_id="boot-b", **h100)
    host = HostTimes(step_ms=4.0, graph_step_ms=0.3, kernel_launch_ms=0.04,
                     batch_fixed_ms=0.2, round_step_ms=(3.6, 4.0, 4.5))
    profile = MachineProfile("NVIDIA H100 80GB HBM3", 3e12, 7.9e14, host, "0.1.0", "abc",
                             "2026-12-06T00:00:00", {"host_id": "boot-a"})
    ds = dataclasses.replace(
        dataset([(mine, 4.4), (other, 4.4)]), machines={"m": profile},
        on_machines={("m", c.case_id): MachinePrediction("m", c.case_id, 4.1, "abc")
                     for c in (mine, other)})
    text = results_markdown(ds, "test", frozenset({"H200"}))
    assert ("On the profile's own host (1 cases from 1 profile): within 5% 0% with the "
            "preset, 100% with the profile; mean abs error 10.0% against 2.5%; the cases' "
            "rounds lie within 5% of their median in -.") in text
    assert "Those cases' sources: a." in text
    assert "0.200 ms a batch (eager step 3.600-4.500 ms by round, 25% apart)" in text


def test_a_commit_is_shown_short_with_its_dirty_mark():
    from corun.spec.provenance import short_commit

    assert short_commit("9a5d6eded7d9ef749f1d6d08f3dfe4b32af88eb3") == "9a5d6ede"
    assert short_commit("ed0267fb-dirty") == "ed0267fb-dirty"


def test_a_profile_line_counts_the_kernels_it_timed_in_their_step():
    """The results page's profile line says how many kernels were also timed in their
    plan's step (nothing where none was)."""
    from types import SimpleNamespace

    from corun.reports.results import _in_steps

    def profile(*releases):
        return SimpleNamespace(kernels=[SimpleNamespace(release=r) for r in releases])

    assert _in_steps(profile(None, None)) == ""
    assert _in_steps(profile(None, object(), object())) == " (2 also in their plan's step)"


def test_kernel_goals_judge_the_default_kernel_apart_from_variants():
    """The goals table takes only files that count the bytes the outputs need and rows
    that matched the reference; a goal met only by a variant says so, and fewer rows than
    the most measured get no goal."""
    from corun.reports.benchmarks import kernel_goals

    def shape(pipeline, rows, variant, share, **extra):
        return {"kind": "launch-shape", "pipeline": pipeline, "rows": rows, "blocks": 16896,
                "variant": variant, "bw_fraction": share, "mismatches": [], **extra}

    env = {"kind": "env", "gpu": "G", "bytes_rule": "needed"}
    needed = [env, shape("kaggle", 4194304, "fused", 0.72),
              shape("kaggle", 4194304, "fused-r32", 0.78),
              shape("kaggle", 65536, "fused", 0.52),
              shape("heavy", 262144, "fused", 0.99, mismatches=[["cat_0", 3]]),
              shape("heavy", 262144, "fused", 0.30)]
    every_byte = [{**env, "bytes_rule": "all"}, shape("multihot", 2097152, "fused", 0.9)]
    text = "\n".join(kernel_goals({"ops_gpu-a.json": needed, "ops_gpu-b.json": every_byte}))
    assert ("| G | kaggle | 4,194,304 | 75% | 72% (fused, 16,896 blocks) | 78% (fused-r32, "
            "16,896 blocks) | by a variant only | `ops_gpu-a.json` |") in text
    assert "| G | kaggle | 65,536 | - | 52% (fused, 16,896 blocks) |" in text
    assert "| G | heavy | 262,144 | 50% | 30% (fused, 16,896 blocks) |" in text
    assert "| 30% (fused, 16,896 blocks) | no |" in text and "multihot" not in text
    assert kernel_goals({"ops_gpu-b.json": every_byte}) == []
