"""`corun tune` on the CPU: a plan folder's plans and baselines run in rounds, the
fastest kept, predicted and measured ranks side by side, and bad input refused before
anything is written."""

import json
from pathlib import Path

import pytest
from corun.spec import Measurement, Pipeline, Plan, Prediction, SpecError, load

from corun.advice import finding_line
from corun.cli import main
from corun.plan_dir import planned_strategies
from corun.tune_cmd import median_round
from tests.workload_files import write_small_kaggle

ROWS = 32


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """kaggle with tables of 500 rows, planned by `corun plan --runners-up 1 --out`."""
    d = tmp_path_factory.mktemp("tune")
    write_small_kaggle(d, ROWS, 500)
    assert main(["plan", "--model", str(d / "model.json"), "--pipeline", str(d / "pipeline.json"),
                 "--time-limit", "2", "--runners-up", "1", "--iterations", "8", "--quiet",
                 "--out", str(d / "plans")]) == 0
    return d


def tune(folder, out, *extra):
    return main(["tune", str(folder / "plans"), "--model", str(folder / "model.json"),
                 "--pipeline", str(folder / "pipeline.json"), "--device", "cpu",
                 "--iterations", "3", "--warmup", "1", "--distinct-batches", "2", "--quiet",
                 "--out", str(out), *extra])


def test_rounds_of_every_strategy_and_the_fastest_kept(folder, tmp_path, capsys):
    out = tmp_path / "tuned"
    assert planned_strategies(folder / "plans") == ["corun", "corun-2", "rap"]
    assert tune(folder, out, "--rounds", "2", "--variants", "none") == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "tune.json").read_text())
    rows = {r["strategy"]: r for r in summary["rows"]}
    assert list(rows) == ["ideal", "gpu-sequential", "corun", "corun-2"]  # rap: on request
    assert summary["rounds"] == 2 and all(r["rounds"] == 2 for r in rows.values())
    for r in range(1, 3):
        for s in rows:
            m = load(Measurement, out / "rounds" / f"{s}-r{r}.json")
            assert m.strategy == s and m.batch_per_gpu == ROWS
            assert (m.checked_rows > 0) == (s != "ideal")  # ideal replays checked batches
    # each round counts by its mean iteration, the throughput's (slow steps and all)
    for s, r in rows.items():
        means = [load(Measurement, out / "rounds" / f"{s}-r{k}.json") for k in (1, 2)]
        assert r["median_ms"] == pytest.approx(sum(m.mean_iteration_ms for m in means) / 2)
        assert means[0].mean_iteration_ms == pytest.approx(
            1e3 * ROWS / means[0].throughput_samples_per_s)
    # the winner is the fastest median of the strategies other than ideal, and its plan
    # is what tuned.json holds
    best = min((r for s, r in rows.items() if s != "ideal"), key=lambda r: r["median_ms"])
    assert summary["measured_best"] == best["strategy"] and best["measured_rank"] == 1
    tuned = load(Plan, out / "tuned.json")
    if best["strategy"].startswith("corun"):
        name = "plan.json" if best["strategy"] == "corun" else "plan-2.json"
        assert tuned == load(Plan, folder / "plans" / name)
    # predicted ranks follow the folder's predictions, ties going to the planner's
    # choice, then its runner-up (this host-paced step predicts them alike)
    order = {"corun": 0, "corun-2": 1, "gpu-sequential": 2}
    ranked = sorted((r for s, r in rows.items() if s != "ideal"),
                    key=lambda r: (round(r["predicted_ms"], 4), order[r["strategy"]]))
    assert [r["predicted_rank"] for r in ranked] == [1, 2, 3]
    assert summary["predicted_best"] == ranked[0]["strategy"]
    assert rows["ideal"]["of_ideal_pct"] == pytest.approx(100.0)
    assert "tuned plan: " + best["strategy"] in printed
    # each strategy's median round is kept beside its prediction, for `corun report OUT`
    for s in rows:
        assert load(Prediction, out / f"prediction-{s}.json") == load(
            Prediction, folder / "plans" / f"prediction-{s}.json")
    report = tmp_path / "report"
    assert main(["report", "--out", str(report), str(out)]) == 0  # tune.json, tuned.json aside
    text = (report / "summary.md").read_text()
    assert "4 prediction(s), 4 measurement(s)" in text and "corun-2" in text
    assert main(["report", "--out", str(report), str(out / "tune.json")]) == 2  # a file: checked


def test_launch_steps_add_the_chosen_plan_at_other_launch_shapes(folder, tmp_path):
    """By default the chosen plan with every kernel's blocks times each launch step of
    the search runs beside the folder's plans, named corun-x<step>, each with a
    prediction scaled like the folder's; the fastest is kept whichever it is. Without
    corun among --strategies, no variant runs."""
    from dataclasses import replace

    from corun.planner.search import LAUNCH_STEPS

    out = tmp_path / "tuned"
    assert tune(folder, out, "--rounds", "1") == 0
    summary = json.loads((out / "tune.json").read_text())
    rows = {r["strategy"]: r for r in summary["rows"]}
    chosen = load(Plan, folder / "plans" / "plan.json")
    pipeline = load(Pipeline, folder / "pipeline.json")
    # each step's blocks, at least one a chain; a step that gives a plan already run is
    # left out (small kaggle: x0.5 and x0.75 both floor at the kernel's chains)
    taken = [[k.blocks for k in chosen.kernels]]
    variants = []
    for step in LAUNCH_STEPS:
        blocks = [max(len(pipeline.sinks(k.nodes)), 1, int(k.blocks * step))
                  for k in chosen.kernels]
        if blocks not in taken:
            taken.append(blocks)
            variants.append((f"corun-x{step:g}", blocks))
    assert len(variants) >= 2
    lead = f"corun-ahead{3 - chosen.batches_ahead}"  # and the chosen plan's other lead
    assert not chosen.assembly_stream  # and its assemblies on a stream of their own
    assert list(rows) == ["ideal", "gpu-sequential", "corun", "corun-2",
                          *(name for name, _ in variants), lead, "corun-own",
                          "corun-cap96", "corun-cap64"]  # its preprocessing on 96 and 64 SMs
    assert load(Measurement, out / "rounds" / f"{lead}-r1.json").plan == replace(
        chosen, batches_ahead=3 - chosen.batches_ahead)
    assert load(Measurement, out / "rounds" / "corun-own-r1.json").plan == replace(
        chosen, assembly_stream=True)
    for cap in (96, 64):
        assert load(Measurement, out / "rounds" / f"corun-cap{cap}-r1.json").plan == replace(
            chosen, preprocess_sm_cap=cap)
    assert rows[lead]["predicted_ms"] > 0
    assert rows["corun-own"]["predicted_ms"] == pytest.approx(rows["corun"]["predicted_ms"])
    # predictions count by mean iteration too (the throughput's), as the rounds do
    filed = load(Prediction, folder / "plans" / "prediction-corun.json")
    assert rows["corun"]["predicted_ms"] == pytest.approx(filed.mean_iteration_ms)
    for name, blocks in variants:
        ran = load(Measurement, out / "rounds" / f"{name}-r1.json").plan
        assert [k.blocks for k in ran.kernels] == blocks
        assert ran == replace(chosen, kernels=ran.kernels)  # nothing else changed
        assert rows[name]["predicted_ms"] > 0 and rows[name]["error_pct"] is not None
    variants = [name for name, _ in variants] + [lead, "corun-own", "corun-cap96",
                                                  "corun-cap64"]
    for name in variants:  # each variant's prediction is written beside its measurement
        assert load(Prediction, out / f"prediction-{name}.json").mean_iteration_ms == \
            pytest.approx(rows[name]["predicted_ms"])
    assert main(["report", "--out", str(tmp_path / "report"), str(out)]) == 0
    best = summary["measured_best"]
    if best in variants:
        assert load(Plan, out / "tuned.json") == load(Measurement, out / "rounds" /
                                                      f"{best}-r1.json").plan
    other = tmp_path / "baselines"
    assert tune(folder, other, "--rounds", "1", "--strategies", "ideal,corun-2",
                "--variants", "launch-steps") == 0  # no corun: no variant of it runs
    assert [r["strategy"] for r in json.loads((other / "tune.json").read_text())["rows"]] \
        == ["ideal", "corun-2"]


def test_variants_are_one_list_of_known_names(folder, tmp_path):
    from corun.tune_cmd import Variant, parse_variants

    assert parse_variants("all") == frozenset(Variant) and parse_variants("none") == set()
    assert parse_variants("lead,cap") == {Variant.LEAD, Variant.CAP}
    with pytest.raises(SpecError, match="--variants = 'leads': all, none, or a list of "
                       "launch-steps, lead"):
        parse_variants("lead,leads")
    assert tune(folder, tmp_path / "o", "--variants", "everything") == 2
    assert not (tmp_path / "o").exists()  # refused before any work


def test_the_lead_variant_flips_batches_ahead_unless_that_plan_runs_or_has_no_kernel(folder):
    from dataclasses import replace

    from corun.tune_cmd import lead_variant

    plan = load(Plan, folder / "plans" / "plan.json")
    assert plan.kernels
    for ahead in (1, 2):
        chosen = replace(plan, batches_ahead=ahead)
        other = replace(plan, batches_ahead=3 - ahead)
        assert lead_variant(chosen, [chosen]) == {f"corun-ahead{3 - ahead}": other}
        assert lead_variant(chosen, [chosen, other]) == {}  # a runner-up is that plan
    assert lead_variant(replace(plan, kernels=()), [plan]) == {}


def test_the_source_first_variant_runs_ngram_lists_once_per_input_and_is_checked(
        folder, tmp_path):
    """heavy-small's lists are made by ngrams: tune runs the chosen plan with every
    kernel's source_first on (corun-src), compared with the reference as every run is;
    kaggle has no ngram, and a plan with it on already, or a runner-up that is that
    plan, gets no such variant."""
    from dataclasses import replace

    from corun.tune_cmd import source_first_variant
    from tests.workload_files import write_small

    kaggle = load(Plan, folder / "plans" / "plan.json")
    kaggle_pipe = load(Pipeline, folder / "pipeline.json")
    assert source_first_variant(kaggle, [kaggle], kaggle_pipe) == {}
    d = tmp_path / "heavy"
    d.mkdir()
    _, pipe = write_small(d, "heavy-lean", "heavy-small", ROWS, 500)
    assert main(["plan", "--model", str(d / "model.json"), "--pipeline",
                 str(d / "pipeline.json"), "--time-limit", "1", "--iterations", "8",
                 "--quiet", "--out", str(d / "plans")]) == 0
    chosen = load(Plan, d / "plans" / "plan.json")
    on = replace(chosen, kernels=tuple(replace(k, source_first=True) for k in chosen.kernels))
    assert not any(k.source_first for k in chosen.kernels)  # plans leave it off
    assert source_first_variant(chosen, [chosen], pipe) == {"corun-src": on}
    assert source_first_variant(chosen, [chosen, on], pipe) == {}
    assert source_first_variant(on, [on], pipe) == {}
    out = tmp_path / "tuned"
    assert tune(d, out, "--rounds", "1", "--strategies", "corun",
                "--variants", "source-first") == 0
    rows = [r["strategy"] for r in json.loads((out / "tune.json").read_text())["rows"]]
    assert rows == ["corun", "corun-src"]
    m = load(Measurement, out / "rounds" / "corun-src-r1.json")
    assert m.plan == on and m.checked_rows > 0


def test_the_cap_variants_confine_the_chosen_plan_and_free_a_capped_one(folder, tmp_path,
                                                                         capsys):
    from dataclasses import replace

    from corun.spec.plan import CAP_SHARES, cap_sms, default_cap_sms

    from corun.tune_cmd import cap_variants

    assert (default_cap_sms(132), default_cap_sms(108), default_cap_sms(10)) == (96, 80, 8)
    assert [cap_sms(132, s) for s in CAP_SHARES] == [96, 64]
    plan = load(Plan, folder / "plans" / "plan.json")
    at = {cap: replace(plan, preprocess_sm_cap=cap) for cap in (96, 64)}
    assert cap_variants(plan, [plan], (96, 64)) == {"corun-cap96": at[96], "corun-cap64": at[64]}
    # a capped choice (as corun plan caps a racing kernel's) runs at the other cap and freed
    assert cap_variants(at[96], [at[96]], (96, 64)) == {"corun-cap64": at[64],
                                                          "corun-uncapped": plan}
    assert cap_variants(plan, [plan, at[64]], (96, 64)) == {"corun-cap96": at[96]}  # a runner-up
    assert cap_variants(plan, [plan], (64, 64)) == {"corun-cap64": at[64]}  # each once
    assert cap_variants(replace(plan, kernels=()), [plan], (64,)) == {}
    assert cap_variants(replace(plan, gpu_count=2), [plan], (64,)) == {}  # one GPU's SMs
    out = tmp_path / "tuned"
    assert tune(folder, out, "--rounds", "1", "--cap-sms", "96,4") == 2
    assert "--cap-sms = 4: integers in [8, 124]" in capsys.readouterr().err
    assert not out.exists()


def test_the_stream_variant_flips_the_assemblies_stream_unless_that_plan_runs(folder):
    from dataclasses import replace

    from corun.tune_cmd import stream_variant

    plan = load(Plan, folder / "plans" / "plan.json")
    for own, name in ((False, "corun-own"), (True, "corun-behind")):
        chosen = replace(plan, assembly_stream=own)
        other = replace(plan, assembly_stream=not own)
        assert stream_variant(chosen, [chosen]) == {name: other}
        assert stream_variant(chosen, [chosen, other]) == {}
    assert stream_variant(replace(plan, kernels=()), [plan]) == {}
    # capped, the assemblies stay on the capped kernels' stream: no variant to run
    assert stream_variant(replace(plan, preprocess_sm_cap=96), [plan]) == {}


def test_median_round_is_the_middle_one():
    class M:  # by the mean iteration (the throughput's), not the median step
        def __init__(self, ms):
            self.mean_iteration_ms = ms
            self.iteration = type("I", (), {"median_ms": 10 - ms})

    rounds = {0: {"a": M(3.0)}, 1: {"a": M(1.0)}, 2: {"a": M(2.0)}, 3: {"a": M(4.0)}}
    assert median_round(rounds, "a").mean_iteration_ms == 2.0
    assert median_round({0: {"a": M(5.0)}}, "a").mean_iteration_ms == 5.0


@pytest.mark.parametrize("extra,field", [
    (["--rounds", "0"], "--rounds"),
    (["--strategies", "ideal,corun-7"], "--strategies"),
    (["--strategies", "ideal"], "--strategies"),
    (["--strategies", "corun,corun"], "--strategies"),
    (["--budget-s", "-1"], "--budget-s"),
    (["--iterations", "0"], "iterations"),
])
def test_bad_input_is_refused_before_anything_is_written(folder, tmp_path, capsys, extra, field):
    out = tmp_path / "tuned"
    assert tune(folder, out, *extra) == 2
    assert field in capsys.readouterr().err
    assert not out.exists()


def test_a_folder_planned_for_a_pipeline_that_is_no_preset_asks_for_its_file(
        folder, tmp_path, capsys):
    import shutil
    from dataclasses import replace

    from corun.spec import Prediction, save

    from corun.plan_dir import prediction_file

    plans = tmp_path / "plans"
    shutil.copytree(folder / "plans", plans)
    pred = load(Prediction, plans / prediction_file("corun"))
    save(replace(pred, pipeline="my-pipeline"), plans / prediction_file("corun"))
    out = tmp_path / "out"
    assert main(["tune", str(plans), "--model", str(folder / "model.json"), "--device", "cpu",
                 "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--pipeline" in err and "'my-pipeline' is not a preset" in err
    assert not out.exists()
    assert main(["tune", str(plans), "--model", str(folder / "model.json"), "--pipeline",
                 str(folder / "pipeline.json"), "--device", "cpu", "--iterations", "2",
                 "--warmup", "1", "--distinct-batches", "1", "--rounds", "1", "--strategies",
                 "ideal,corun", "--variants", "none",
                 "--quiet", "--out",
                 str(out)]) == 0  # the file given, the same folder tunes


def test_a_folder_without_a_plan_is_refused(tmp_path, capsys):
    assert main(["tune", str(tmp_path), "--device", "cpu", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "plans" in err and "plan.json" in err


def test_runner_up_names_and_ranks_read_back_one_way():
    from corun.plan_dir import plan_file, plan_strategy, runner_up_label, runner_up_rank

    assert [runner_up_rank(runner_up_label(n)) for n in (2, 3, 12)] == [2, 3, 12]
    assert [runner_up_rank(s) for s in ("corun", "corun-1", "corun-gpu", "rap")] == [None] * 4
    assert [plan_file(s) for s in ("corun", "corun-4", "rap", "corun-1", "ideal")] == \
        ["plan.json", "plan-4.json", "plan-rap.json", None, None]
    for s in ("corun", "corun-2", "corun-11", "rap"):
        assert plan_strategy(plan_file(s)) == s
    assert [plan_strategy(n) for n in ("plan-1.json", "plan4.json", "p.json")] == [None] * 3


def test_an_executed_plan_file_pairs_with_its_prediction(folder, tmp_path, capsys):
    """`corun execute DIR/plan.json` (no --label) measures strategy "corun", as the
    folder's prediction-corun.json names it, so `corun report` pairs the two."""
    plans = folder / "plans"
    files = []
    for name, strategy in (("plan.json", "corun"), ("plan-2.json", "corun-2")):
        out = tmp_path / f"measurement-{strategy}.json"
        assert main(["execute", str(plans / name), "--model", str(folder / "model.json"),
                     "--pipeline", str(folder / "pipeline.json"), "--device", "cpu",
                     "--iterations", "2", "--warmup", "0", "--distinct-batches", "1",
                     "--quiet", "--out", str(out)]) == 0
        assert load(Measurement, out).strategy == strategy
        files += [str(plans / f"prediction-{strategy}.json"), str(out)]
    assert main(["report", "--out", str(tmp_path / "report"), *files]) == 0
    summary = (tmp_path / "report" / "summary.md").read_text()
    assert "corun-2" in summary
    # a measurement with no prediction of its strategy names the strategies predicted
    assert main(["report", "--out", str(tmp_path / "r2"), files[0], files[3]]) == 2
    assert "predictions given: corun" in capsys.readouterr().err


def test_a_plan_runs_at_the_batch_it_was_planned_for(folder, tmp_path, capsys):
    """`corun plan --batch B` writes B into the plan; `corun execute` and `corun simulate
    --plan` run at it unless --batch says otherwise."""
    model, pipe = str(folder / "model.json"), str(folder / "pipeline.json")
    out = tmp_path / "plans"
    assert main(["plan", "--model", model, "--pipeline", pipe, "--batch", "24",
                 "--time-limit", "1", "--iterations", "4", "--quiet", "--out", str(out)]) == 0
    assert load(Plan, out / "plan.json").batch_per_gpu == 24
    common = ["--model", model, "--pipeline", pipe, "--device", "cpu", "--iterations", "1",
              "--warmup", "0", "--distinct-batches", "1", "--quiet"]
    for extra, rows in (([], 24), (["--batch", "16"], 16)):
        m = tmp_path / f"m{rows}.json"
        assert main(["execute", str(out / "plan.json"), *common, *extra, "--out", str(m)]) == 0
        assert load(Measurement, m).batch_per_gpu == rows
    capsys.readouterr()
    assert main(["simulate", "--strategy", "plan", "--plan", str(out / "plan.json"),
                 "--model", model, "--pipeline", pipe, "--iterations", "4", "--json",
                 "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["batch_per_gpu"] == 24



def test_the_verdict_names_the_planners_choice_where_it_measured_fastest():
    from corun.tune_cmd import verdict

    s = {"predicted_best": "corun-ahead1", "measured_best": "corun",
         "predicted_best_behind_pct": 6.07}
    assert verdict(s).endswith("the measured fastest, corun (the planner's choice: it also "
                               "weighs what the simulator is least sure of, such as a plan's "
                               "batch lead)")
    assert verdict({**s, "measured_best": "corun-x0.5"}).endswith("fastest, corun-x0.5")
    assert verdict({**s, "predicted_best": "corun"}) == \
        "the predicted fastest, corun, was the measured fastest"


def test_the_cap_variant_is_left_out_where_the_driver_makes_no_green_contexts(monkeypatch):
    """On a GPU whose driver cannot confine a stream to some SMs, tune leaves the cap
    variant out and says why, instead of failing in its first round; on the CPU it runs
    (no SMs to confine: the plan runs as on every SM)."""
    from corun.backend import sm_split

    from corun.tune_cmd import cap_variant_runs

    said = []
    monkeypatch.setattr(sm_split, "green_contexts_supported", lambda: False)
    assert not cap_variant_runs(True, "cuda", said.append)
    assert said and "cannot make green contexts" in said[0]
    assert cap_variant_runs(True, "cpu", said.append) and len(said) == 1
    assert not cap_variant_runs(False, "cuda", said.append)
    monkeypatch.setattr(sm_split, "green_contexts_supported", lambda: True)
    assert cap_variant_runs(True, "cuda", said.append) and len(said) == 1


def test_strategies_predicted_alike_are_named_under_the_table():
    """Run 25's tune of the capped heavy-rehash b32768 choice: the simulator models no cap,
    so the choice and its cap variants share one prediction and their predicted ranks are
    the planner's order; the line under the table says so. Without ties, no line."""
    from corun.tune_cmd import render, tie_line

    summary = json.loads((Path(__file__).parent / "data/tune-capped-rehash-b32768.json")
                         .read_text())
    line = tie_line(summary)
    assert line.endswith(": corun, corun-cap64, corun-uncapped")
    assert render(summary).endswith(line)
    for r in summary["rows"]:  # spread them apart: no tie left
        if r.get("predicted_ms") is not None:
            r["predicted_ms"] += 0.01 * r.get("predicted_rank", 0)
    assert tie_line(summary) is None


def test_the_grid_variants_run_the_baselines_and_the_plans_on_other_update_grids(folder):
    from dataclasses import replace

    from corun.tune_cmd import grid_variants

    plan = load(Plan, folder / "plans" / "plan.json")
    capped = replace(plan, preprocess_sm_cap=64)
    ideal = replace(plan, kernels=())
    variants = grid_variants({"ideal": ideal, "corun": plan, "corun-cap64": capped}, (16, 8))
    assert variants == {
        "ideal+ub16": ("ideal", replace(ideal, update_blocks_per_sm=16)),
        "corun-ub16": ("corun", replace(plan, update_blocks_per_sm=16)),
        "corun-cap64-ub16": ("corun-cap64", replace(capped, update_blocks_per_sm=16)),
        "ideal+ub8": ("ideal", replace(ideal, update_blocks_per_sm=8)),
        "corun-ub8": ("corun", replace(plan, update_blocks_per_sm=8)),
        "corun-cap64-ub8": ("corun-cap64", replace(capped, update_blocks_per_sm=8))}
    on16 = replace(plan, update_blocks_per_sm=16)  # a plan already on a grid: not again
    assert grid_variants({"corun": on16}, (16,)) == {}


@pytest.fixture(scope="module")
def fused_model(folder):
    """The folder's model with the fused embedding update (and the SGD it applies)."""
    from dataclasses import replace

    from corun import spec

    model = load(spec.Model, folder / "model.json")
    fused = folder / "fused-model.json"
    spec.save(replace(model, optimizer=spec.Optimizer.SGD,
                      embedding_update=spec.EmbeddingUpdate.FUSED_SGD), fused)
    return fused


def test_a_fused_update_s_model_is_tuned_on_the_other_grid_too(folder, fused_model, tmp_path):
    """With the fused update, ideal, gpu-sequential and the chosen plan also run on
    UPDATE_GRIDS (16 blocks an SM): ideal's variant is never the fastest, each variant's
    prediction is its base's with a caution, and the grid rides in the plan."""
    out = tmp_path / "tuned"
    assert main(["tune", str(folder / "plans"), "--model", str(fused_model), "--pipeline",
                 str(folder / "pipeline.json"), "--device", "cpu", "--iterations", "3",
                 "--warmup", "1", "--distinct-batches", "2", "--quiet", "--rounds", "1",
                 "--variants", "grid", "--out", str(out)]) == 0
    summary = json.loads((out / "tune.json").read_text())
    rows = {r["strategy"]: r for r in summary["rows"]}
    assert list(rows) == ["ideal", "gpu-sequential", "corun", "corun-2", "ideal+ub16",
                          "gpu-sequential+ub16", "corun-ub16"]
    assert rows["ideal+ub16"]["wins"] is None and "measured_rank" not in rows["ideal+ub16"]
    assert summary["measured_best"] not in ("ideal", "ideal+ub16")
    m = load(Measurement, out / "rounds" / "corun-ub16-r1.json")
    assert any(n.startswith("the fused embedding update on 16 blocks an SM") for n in m.notes)
    tuned = load(Plan, out / "tuned.json")  # the grid rides in the kept plan
    assert tuned.update_blocks_per_sm == (16 if summary["measured_best"].endswith("-ub16")
                                          or summary["measured_best"].endswith("+ub16") else 0)
    pred = load(Prediction, out / "prediction-corun-ub16.json")
    base = load(Prediction, folder / "plans" / "prediction-corun.json")
    assert pred.strategy == "corun-ub16" and pred.mean_iteration_ms == base.mean_iteration_ms
    assert "corun-ub16 runs the fused embedding update on another grid" in \
        finding_line(pred.findings[-1])


def test_update_grids_out_of_range_are_refused_before_anything_is_written(
        folder, fused_model, tmp_path, capsys):
    out = tmp_path / "tuned"
    assert main(["tune", str(folder / "plans"), "--model", str(fused_model), "--pipeline",
                 str(folder / "pipeline.json"), "--device", "cpu", "--quiet",
                 "--update-grids", "16,65", "--out", str(out)]) == 2
    assert "--update-grids = 65: integers in [1, 64]" in capsys.readouterr().err
    assert not out.exists()


def test_an_ideal_variant_faster_than_ideal_is_named_under_the_table():
    from corun.tune_cmd import faster_ideal_line

    rows = [{"strategy": "ideal", "median_ms": 7.0}, {"strategy": "corun", "median_ms": 6.8},
            {"strategy": "ideal+ub16", "median_ms": 5.9}]
    assert faster_ideal_line({"rows": rows}) == (
        "ideal+ub16 ran 15.7% faster than ideal: the shares of ideal above are against "
        "ideal as the trainer runs by default (a row on another update grid recovers "
        "against that grid's ideal and gpu-sequential)")
    rows[2]["median_ms"] = 7.1  # slower: nothing to say
    assert faster_ideal_line({"rows": rows}) is None
    assert faster_ideal_line({"rows": rows[1:]}) is None  # no ideal measured


def test_a_machine_profile_of_another_gpu_kind_is_refused_before_any_round(
        folder, tmp_path, capsys):
    """--machine: the profile the folder was planned with; one of another GPU kind than
    the hardware's is an error that names both, and nothing is run or written."""
    from corun.spec.hardware import HostTimes
    from corun.spec.machine import MachineProfile
    from corun.spec.serde import save

    path = tmp_path / "h100.json"
    save(MachineProfile("NVIDIA H100 80GB HBM3", 3.0e12, 7.9e14,
                        HostTimes(step_ms=4.0, graph_step_ms=0.3, kernel_launch_ms=0.04,
                                  batch_fixed_ms=0.2), "0.1.0", "abc",
                        "2026-12-06T00:00:00", {}), path)
    out = tmp_path / "o"
    assert tune(folder, out, "--hardware", "h200", "--machine", str(path)) == 2
    assert "--hardware h100 for this one" in capsys.readouterr().err
    assert not out.exists()
