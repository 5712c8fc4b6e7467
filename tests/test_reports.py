"""Reports from small fixture files: axes and series checked, numbers equal the inputs."""

import csv
import json
from dataclasses import replace

import pytest
from corun.reports import figures
from corun.reports.pairs import load_files, pair_up
from corun.sim import Scenario, Strategy, StrategyKind, simulate
from corun.spec.serde import save

from corun import spec
from corun.cli import main

SLOW = 1.10  # measured = predicted x 1.10: iteration MAPE is exactly 100 x 0.1 / 1.1
STEADY_STEP = 1.02
"""The measured median step over the predicted one: the measurement's slow steps are in its
throughput, not its median, so a report that compared median steps would say 2.0%."""


def measurement_of(p: spec.Prediction, factor: float) -> spec.Measurement:
    spread = lambda ms: spec.Spread(ms, 0.95 * ms, 1.05 * ms)  # noqa: E731
    return spec.Measurement(
        strategy=p.strategy, model=p.model, pipeline=p.pipeline, hardware="NVIDIA H200",
        gpu_count=p.gpu_count, batch_per_gpu=p.batch_per_gpu, iterations=200, warmup=20,
        iteration=spread(p.iteration_time_ms * STEADY_STEP),
        throughput_samples_per_s=p.throughput_samples_per_s / factor,
        stall_ms_per_iteration=0.0, stages={s.stage: spread(s.time_ms * factor)
                                            for s in p.stages},
        kernels={}, checked_rows=1000, versions={"torch": "fixture"}, git_commit="fixture",
        command="fixture")


@pytest.fixture
def files(tmp_path):
    hw = spec.hardware_preset("h200", 1)
    m, p = spec.model_preset("criteo-kaggle"), spec.pipeline_preset("kaggle")
    paths = []
    for kind in (StrategyKind.IDEAL, StrategyKind.GPU_SEQUENTIAL):
        pred = simulate(Scenario(hw, m, p, Strategy(kind), iterations=4, warmup=1),
                        commit="t").prediction
        for name, obj in (("pred", pred), ("meas", measurement_of(pred, SLOW))):
            path = tmp_path / f"{name}-{kind.value}.json"
            save(obj, path)
            paths.append(str(path))
    return paths


def test_pairs_and_scatter(files):
    inputs = load_files(files)
    preds, pairs = inputs.predictions, pair_up(inputs.predictions, inputs.measurements)
    assert [p.measurement.strategy for p in pairs] == ["ideal", "gpu-sequential"]
    fig = figures.scatter(pairs)
    left, right = fig.axes
    assert left.get_xlabel() == "measured (ms)" and left.get_ylabel() == "predicted (ms)"
    assert "MAPE 9.1% (2 points)" in left.get_title()
    # a series per strategy (the band is the first collection), coloured apart
    dots = left.collections[1:]
    assert [len(c.get_offsets()) for c in dots] == [1, 1]
    assert len({tuple(c.get_facecolor()[0]) for c in dots}) == 2
    assert sum(len(c.get_offsets()) for c in right.collections[1:]) == \
        2 * len(preds[0].stages)
    legend = [t.get_text() for t in left.get_legend().get_texts()]
    assert legend == ["gpu-sequential", "ideal", "criteo-kaggle/kaggle b4096 x1"]


def test_stage_bars_and_timeline(files):
    inputs = load_files(files)
    pairs = pair_up(inputs.predictions, inputs.measurements)
    ax = figures.stage_bars(pairs).axes[0]
    assert len(ax.patches) == 2 * 2 * len(pairs[0].prediction.stages)
    many = figures.stage_bars(pairs * 40)  # 80 runs: the worst 30 shown, on one page
    assert len(many.axes[0].get_yticklabels()) == figures.STAGE_ROWS
    assert "the 30 of 80 runs" in many.axes[0].get_title()
    width, height = many.get_size_inches()
    assert width == 11 and height < 15
    tl = figures.timeline(pairs[1]).axes[0]
    assert [t.get_text() for t in tl.get_yticklabels()] == ["measured", "predicted kernels",
                                                            "predicted"]


def test_report_command_and_markdown_numbers(files, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["report", *files, "--out", str(out)]) == 0
    text = (out / "summary.md").read_text()
    assert "Iteration time MAPE: 9.1% over 2 run(s), each a mean iteration" in text
    preds = load_files(files).predictions
    for p in preds:
        row = next(line for line in text.splitlines() if line.startswith(f"| {p.strategy} |")
                   and "criteo" in line)
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[4:8] == [f"{p.mean_iteration_ms:.3f}", f"{p.mean_iteration_ms * SLOW:.3f}",
                              "-9.1%", "+0.0%"]  # calibrated by the pairs' own ideal
        assert cells[8:] == [f"{p.iteration_time_ms:.3f}",
                             f"{p.iteration_time_ms * STEADY_STEP:.3f}"]
    assert "+-9.1%" not in text
    for name in ("predicted_vs_measured", "stages", "timeline_0", "strategies_0"):
        assert (out / f"{name}.png").stat().st_size > 1000
        assert (out / f"{name}.svg").exists()


def test_slow_iterations_are_taken_apart(files, tmp_path):
    """Every tenth iteration waits 3 ms longer for its batch: the report finds that tail
    and names the piece that grew; a run without a tail, or without the record, gets no
    row."""
    from corun.reports.tail import tail

    n = 200
    waits = [3.0 if i % 10 == 0 else 0.0 for i in range(n)]
    per = {"iteration": tuple(5.0 + w for w in waits), "batch_wait": tuple(waits),
           "busy": (4.9,) * n, "host_step": (4.0,) * n,
           "start_k0": tuple(0.5 + w for w in waits)}  # a position in the step, not a time
    meas = load_files(files).measurements
    tailed = replace(meas[0], per_iteration=per)
    t = tail(tailed)
    assert t.typical_ms == pytest.approx(5.0) and t.slow_ms == pytest.approx(8.0)
    assert t.extra_ms == pytest.approx({"batch_wait": 3.0, "busy": 0.0, "host_step": 0.0})
    flat = replace(meas[1], per_iteration={k: (v[1],) * n for k, v in per.items()})
    assert tail(flat).slow_ms == pytest.approx(tail(flat).typical_ms)
    assert tail(meas[1]) is None  # an older measurement: no per-iteration record
    for name, obj in (("tailed", tailed), ("flat", flat)):
        save(obj, tmp_path / f"{name}.json")
    out = tmp_path / "report"
    assert main(["report", *[f for f in files if "pred-" in f], str(tmp_path / "tailed.json"),
                 str(tmp_path / "flat.json"), "--out", str(out)]) == 0
    text = (out / "summary.md").read_text()
    assert "## Slow iterations" in text
    row = next(line for line in text.splitlines() if "| 5.000 | 8.000 |" in line)
    assert row.startswith(f"| {tailed.strategy} |") and "batch_wait +3.00" in row
    assert text.count("| 5.000 | 8.000 |") == 1  # the flat run has no row


def test_strategies_axis_spans_the_values(files):
    """Strategies a few percent apart stay apart: the axis spans the values, not 0-100%."""
    inputs = load_files(files)
    preds = inputs.predictions
    measured = {p.strategy: p.throughput_samples_per_s * 0.97 for p in preds}
    measured["ideal"] = next(p for p in preds if p.strategy == "ideal").throughput_samples_per_s
    ax = figures.strategies(preds, measured).axes[0]
    lo, hi = ax.get_xlim()
    assert lo > 50 and hi < 110
    assert [t.get_text() for t in ax.get_yticklabels()] == [p.strategy for p in preds]
    ideal = measured["ideal"]
    assert {f"{100 * measured[p.strategy] / ideal:.1f}%" for p in preds} <= \
        {t.get_text() for t in ax.texts}


def test_mismatched_and_malformed_inputs(files, tmp_path, capsys):
    meas = load_files(files).measurements
    other = replace(meas[0], model="criteo-terabyte", pipeline="terabyte")
    bad = tmp_path / "other.json"
    save(other, bad)
    preds_only = [f for f in files if "pred-" in f]
    assert main(["report", *preds_only, str(bad), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "criteo-terabyte/terabyte" in err and "the prediction for 'ideal' is of " \
        "criteo-kaggle/kaggle" in err
    for device in ("cpu", "NVIDIA H100 80GB HBM3"):  # an H200 prediction, another device
        elsewhere = tmp_path / "elsewhere" / "meas.json"
        elsewhere.parent.mkdir(exist_ok=True)
        save(replace(meas[0], hardware=device), elsewhere)
        out = tmp_path / f"r-{device[:3]}"
        assert main(["report", *preds_only, str(elsewhere), "--out", str(out)]) == 0
        text = (out / "summary.md").read_text()
        flagged = text.split("## Not compared: run on other hardware")[1].split("##")[0]
        assert f"| {device} | H200 | `{elsewhere}` |" in flagged and "pred-ideal.json" in flagged
        assert "MAPE" not in text and not (out / "predicted_vs_measured.png").exists()
    junk = tmp_path / "junk.json"
    junk.write_text(json.dumps({"schema": "corun.plan/1"}))
    assert main(["report", str(junk), "--out", str(tmp_path / "r")]) == 2
    assert "'corun.prediction/2' or 'corun.measurement/1'" in capsys.readouterr().err


def test_whatif_compares_interconnects_and_says_why_a_plan_beats_ideal(tmp_path):
    """Over PCIe the heavy pipeline's owner-mapped plan skips an input all-to-all that
    costs ideal more than the owners' host copies: above 100%, and the table says why."""
    from corun.reports.whatif import markdown

    from corun.whatif_cmd import plan_point

    # only the slow point's plan is asserted on: the fast one's search is kept short
    fast = plan_point("h200", 2, 16384, "heavy-fused", "heavy", 0.3, "nvlink4")
    slow = plan_point("h200", 2, 16384, "heavy-fused", "heavy", 2, "pcie5")
    assert (fast.interconnect, slow.interconnect) == ("nvlink4", "pcie5")
    assert slow.ideal_samples_per_s < fast.ideal_samples_per_s
    text = markdown([fast, slow], "heavy-fused", "heavy")
    assert "| h200 | pcie5 | 2 | 16384 |" in text
    assert ("Above 100%" in text) == (slow.of_ideal > 1 or fast.of_ideal > 1)
    assert slow.of_ideal > 1 and "owner-mapped" in slow.plan


def test_a_whatif_point_caps_a_racing_plan_as_corun_plan_does():
    """heavy-small b16384's converged plan on one H200 has a kernel of 132 blocks that can
    race the eager step for the SMs: its point says it runs on 96 of them
    (planner/sm_cap.py); a Criteo-like point's plan is not capped."""
    from corun.whatif_cmd import plan_point

    assert plan_point("h200", 1, 16384, "heavy-small", "heavy-small", 60).plan == \
        "1 GPU kernel on 96 SMs"
    assert "SMs" not in plan_point("h200", 1, 4096, "criteo-kaggle", "kaggle", 60).plan


def test_whatif_grid(tmp_path, capsys):
    from corun.whatif_cmd import plan_point

    out = tmp_path / "wi"
    # a limit the search never reaches, so both runs converge to the same plan
    # one GPU each: a 2-GPU point plans for 16-25 s on a 2-core runner (test_planner has them)
    assert main(["whatif", "--hardware", "h200,a100", "--gpus", "1", "--batch", "4096",
                 "--time-limit", "60", "--jobs", "2", "--out", str(out), "--quiet"]) == 0
    with (out / "whatif.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0])[:5] == ["hardware", "interconnect", "gpus", "batch",
                                 "ideal_samples_per_s"]
    assert [(r["hardware"], r["interconnect"], r["gpus"]) for r in rows] == [
        ("h200", "nvlink4", "1"), ("a100", "nvlink3", "1")]
    direct = plan_point("h200", 1, 4096, "criteo-kaggle", "kaggle", 60)
    assert (rows[0]["plan"], float(rows[0]["planned_samples_per_s"])) == \
        (direct.plan, pytest.approx(direct.planned_samples_per_s))
    # the eager b4096 step is the host's: no cpu:N matches, an empty cell (no sentinel)
    assert direct.cpu_cores_to_match is None and rows[0]["cpu_cores_to_match"] == ""
    assert f"{direct.planned_samples_per_s:,.0f}" in (out / "whatif.md").read_text()
    # what paces ideal's step, and its stages by GPU kind: the eager b4096 step on one H200
    # is the host's (costmodel/host.py); the A100's GPU side is slower than the H200's
    assert rows[0]["paced_by"] == direct.paced_by == "host"
    assert float(rows[0]["host_ms"]) >= float(rows[0]["gpu_ms"])
    assert float(rows[1]["gpu_ms"]) > float(rows[0]["gpu_ms"])
    assert "top_mlp_bwd=" in rows[0]["stage_ms"]
    # what the plan's times stand on: kaggle's b4096 stages lie between profiled batches
    assert rows[0]["footing"] == direct.footing and "stages interpolated" in direct.footing
    assert f"| {direct.footing} |" in (out / "whatif.md").read_text()
    assert "| hardware | GPUs | batch/GPU | emb_fwd |" in (out / "whatif.md").read_text()
    for metric in ("planned_samples_per_s", "of_ideal", "cpu_cores_to_match"):
        assert (out / f"whatif_{metric}.png").exists()
    assert main(["whatif", "--gpus", "0", "--out", str(out), "--quiet"]) == 2
    assert "--gpus = '0': integers >= 1" in capsys.readouterr().err
    assert main(["whatif", "--interconnect", "nvlink4,pcie9", "--out", str(out),
                 "--quiet"]) == 2
    assert "--interconnect = 'pcie9': one of nvlink2" in capsys.readouterr().err
    assert main(["whatif", "--hardware", "tpu", "--out", str(out), "--quiet"]) == 2
    assert "--hardware = 'tpu'" in capsys.readouterr().err
    assert main(["whatif", "--time-limit", "0", "--out", str(out), "--quiet"]) == 2
    assert "--time-limit = 0.0: a finite number of seconds > 0" in capsys.readouterr().err


def test_whatif_predicts_the_points_of_a_machine_profiles_kind_for_that_machine(
        tmp_path, capsys):
    """--machine: the H100 point is paced by the profile's host and says it stands on the
    profile; the H200 point keeps its preset; a profile of a kind the grid lacks is
    refused before any point is planned."""
    from corun.spec import hardware_preset
    from corun.spec.hardware import HostTimes
    from corun.spec.machine import MachineProfile
    from corun.spec.serde import save

    from corun.whatif_cmd import plan_point, point_hardware

    path = tmp_path / "mine.json"
    save(MachineProfile("NVIDIA H100 80GB HBM3", 3.0e12, 7.9e14,
                        HostTimes(step_ms=9.0, graph_step_ms=0.3, kernel_launch_ms=0.04,
                                  batch_fixed_ms=0.2), "0.1.0", "abc",
                        "2026-12-06T00:00:00", {}), path)
    mine = plan_point("h100", 1, 4096, "criteo-kaggle", "kaggle", 60, None, str(path))
    assert mine.paced_by == "host" and mine.host_ms == pytest.approx(9.0, rel=0.05)
    assert mine.footing.startswith("profile mine.json; carried from H200")
    assert point_hardware("h200", 1, None, str(path)) == hardware_preset("h200", 1)
    assert main(["whatif", "--hardware", "h200", "--machine", str(path), "--out",
                 str(tmp_path / "wi"), "--quiet"]) == 2
    assert f"--machine = '{path}': a profile of a GPU kind the grid has" in \
        capsys.readouterr().err
    assert not (tmp_path / "wi").exists()


def test_whatif_table_says_when_no_cpu_count_matches():
    from dataclasses import replace

    from corun.reports.whatif import MAX_CORES, markdown

    from corun.whatif_cmd import Point

    matched = Point("h200", "nvlink4", 1, 8192, 2.0e6, 2.0e6, 1.0, 7, "1 GPU kernel")
    none = replace(matched, batch=4096, of_ideal=0.893, cpu_cores_to_match=None)
    text = markdown([matched], "m", "p")
    assert "| 7 |" in text and "none" not in text
    text = markdown([matched, none], "m", "p")
    assert "| 89.3% | none |" in text and f"no cpu:N up to {MAX_CORES} cores" in text
    assert "time limit" not in text
    cut = replace(matched, gpus=8, converged=False)
    text = markdown([matched, cut], "m", "p")
    assert "| 1 GPU kernel * |" in text and "*: the search stopped at its time limit" in text


def test_report_calibrates_by_the_measured_ideal(files, tmp_path):
    """Measured = predicted x 1.10 for both: the ideal's factor takes the other run's
    error to zero; without the ideal's measurement there is nothing to calibrate by."""
    out = tmp_path / "report"
    assert main(["report", *files, "--out", str(out)]) == 0
    text = (out / "summary.md").read_text()
    assert "MAPE 0.0% over the 1 other run(s)." in text
    assert "| -9.1% | +0.0% |" in text  # gpu-sequential: as is, then calibrated
    no_ideal = [f for f in files if "meas-ideal" not in f]
    assert main(["report", *no_ideal, "--out", str(tmp_path / "r2")]) == 0
    text = (tmp_path / "r2" / "summary.md").read_text()
    assert "Calibrated by" not in text and "| -9.1% | - |" in text
    # the ideal's prediction, now without its measurement, is named, not dropped silently
    assert "Not compared: 1 prediction(s) no measurement matches" in text
    assert "ideal (criteo-kaggle/kaggle" in text
    full = (tmp_path / "report" / "summary.md").read_text()
    assert "Not compared" not in full


def test_a_report_folder_without_predictions_or_measurements_is_refused(tmp_path, capsys):
    """`corun report` takes a folder's prediction and measurement files; a folder with
    none is an error naming it, and nothing is written."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "tune.json").write_text('{"rows": []}')
    assert main(["report", "--out", str(tmp_path / "out"), str(tmp_path / "in")]) == 2
    assert "report inputs" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_what_paces_a_step():
    from corun.whatif_cmd import pace

    assert pace(3.7, 2.8, 0.0) == "host"
    assert pace(1.0, 2.8, 0.5) == "gpu"
    assert pace(1.0, 1.0, 2.0) == "link"


def test_whatif_heatmaps_share_one_scale_and_say_none(tmp_path):
    """Every panel of a metric on one colour scale with a colorbar, the workload in the
    title, and no sentinel: a point no cpu:N matches is a grey cell that says none."""
    from dataclasses import replace

    from corun.reports.whatif import heatmap, heatmaps

    from corun.whatif_cmd import Point

    a = Point("h200", "nvlink4", 1, 4096, 2.0e6, 1.9e6, 0.95, 12, "1 GPU kernel")
    points = [a, replace(a, batch=8192, of_ideal=0.99, cpu_cores_to_match=None),
              replace(a, hardware="a100", interconnect="nvlink3", of_ideal=0.80),
              replace(a, hardware="a100", interconnect="nvlink3", batch=8192, of_ideal=0.85,
                      converged=False)]
    fig = heatmap(points, "of_ideal", "criteo-kaggle", "kaggle")
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 2 and len(fig.axes) == 3  # two panels and their colorbar
    limits = {(ax.images[0].norm.vmin, ax.images[0].norm.vmax) for ax in panels}
    assert limits == {(0.80, 0.99)}
    assert fig._suptitle.get_text().startswith("criteo-kaggle / kaggle: planned throughput")
    assert "(*: search not converged)" in fig._suptitle.get_text()
    texts = [t.get_text() for ax in panels for t in ax.texts]
    assert texts == ["95.0%", "99.0%", "80.0%", "85.0% *"]
    cores = heatmap(points, "cpu_cores_to_match", "criteo-kaggle", "kaggle")
    cells = [t for ax in cores.axes if ax.images for t in ax.texts]
    assert [t.get_text() for t in cells] == ["12", "none", "12", "12 *"]
    assert "8193" not in " ".join(t.get_text() for t in cells)
    assert len(heatmaps(points, tmp_path, "criteo-kaggle", "kaggle")) == 6


def test_footing_says_what_a_prediction_stands_on():
    from corun.spec.findings import FindingKind, finding

    from corun.whatif_cmd import footing

    assert footing([]) == "measured"
    assert footing([finding(FindingKind.STAGES_UNTIMED, how="extrapolated", model="m",
                            gpu="H200", batch=1, batches="", untimed=9, stages=9,
                            graphed=0),
                    finding(FindingKind.KERNELS_UNTIMED, untimed=2, kernels=3,
                            gpu="H200")]) == "stages extrapolated; kernels 2/3 untimed"
    carried = finding(FindingKind.TIMES_CARRIED, gpu="H100-SXM", source="H200",
                      copy_tb_s=3.0, source_copy_tb_s=4.3)
    assert footing([carried]) == "carried from H200"
