"""The corun command, called in-process with tiny sizes."""

import json

import pytest
import yaml

from corun.cli import main


def test_presets(capsys):
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    for name in ("h200", "criteo-kaggle", "mlperf-dcnv2", "wide-4x", "multihot", "nvlink4"):
        assert name in out


def test_simulate_all_table(capsys):
    assert main(["simulate", "--gpus", "2", "--iterations", "3", "--warmup", "1"]) == 0
    out = capsys.readouterr()
    for label in ("ideal", "cpu:8", "cpu:32", "gpu-sequential", "gpu-overlap", "100.0%"):
        assert label in out.out
    assert out.err == ""  # no progress bar in a pipe


def test_simulate_json_and_trace(tmp_path, capsys):
    trace = tmp_path / "t.json"
    assert (
        main(
            [
                "simulate",
                "--strategy",
                "cpu:4",
                "--json",
                "--quiet",
                "--iterations",
                "4",
                "--trace",
                str(trace),
            ]
        )
        == 0
    )
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    assert doc["schema"] == "corun.prediction/2" and doc["strategy"] == "cpu:4"
    assert doc["iterations"] == 60 and cap.err == ""  # CPU work: sim.steady_state's minimum
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e.get("name") == "top_mlp_fwd" for e in events)


def test_config_file_and_override(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "hardware": "a100",
                "gpus": 2,
                "model": "wide-2x",
                "pipeline": "wide-2x",
                "strategy": "ideal",
                "iterations": 3,
            }
        )
    )
    assert main(["simulate", "--config", str(cfg), "--json", "--quiet", "--batch", "1024"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["hardware"], doc["gpu_count"], doc["model"]) == ("A100-SXM4-80GB", 2, "wide-2x")
    assert doc["batch_per_gpu"] == 1024


def test_out_dir(tmp_path):
    assert main(["simulate", "--quiet", "--iterations", "3", "--out", str(tmp_path)]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert "summary.md" in names and "prediction-ideal.json" in names
    assert "trace-gpu-overlap.json" in names


def test_out_dir_without_traces_keeps_every_prediction(tmp_path):
    with_traces, without = tmp_path / "with", tmp_path / "without"
    without.mkdir()
    (without / "trace-ideal.json").write_text("{}")  # an earlier run's: stale now
    (without / "notes.txt").write_text("mine")  # not corun's: left alone
    for out, extra in ((with_traces, []), (without, ["--no-traces"])):
        assert main(["simulate", "--quiet", "--iterations", "3", "--out", str(out),
                     *extra]) == 0
    names = sorted(p.name for p in without.iterdir())
    assert names == sorted([*(p.name for p in with_traces.iterdir()
                              if not p.name.startswith("trace-")), "notes.txt"])
    assert "prediction-ideal.json" in names and "summary.md" in names
    assert "trace-" not in (without / "summary.md").read_text()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["simulate", "--strategy", "cpu:0"], "cpu:N with N an integer in [1, 16]"),
        (["simulate", "--strategy", "magic"], "strategy = 'magic': one of ideal"),
        (
            ["simulate", "--model", "criteo-kaggle", "--pipeline", "wide-2x"],
            "13 dense features, as model 'criteo-kaggle' has",
        ),
        (["simulate", "--batch", "0"], "batch_per_gpu = 0"),
        (["simulate", "--hardware", "tpu"], "hardware = 'tpu'"),
        (
            [
                "simulate",
                "--model",
                "criteo-terabyte",
                "--pipeline",
                "terabyte",
                "--hardware",
                "v100",
            ],
            "GB short",
        ),
        (["simulate", "--strategy", "plan"], "a Plan file when --strategy is plan"),
    ],
)
def test_errors_exit_2_with_message(argv, message, capsys):
    assert main(argv + ["--quiet"]) == 2
    assert message in capsys.readouterr().err


def test_bad_config_key(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("gpus: 2\ncolour: blue\n")
    assert main(["simulate", "--config", str(cfg)]) == 2
    assert "colour" in capsys.readouterr().err


def test_plan_file(tmp_path, capsys):
    from corun.spec.serde import save

    from corun import spec

    p = spec.pipeline_preset("kaggle")
    path = tmp_path / "plan.json"
    save(spec.one_kernel_plan(p, "criteo-kaggle", 1, "top_mlp_bwd"), path)
    assert (
        main(
            [
                "simulate",
                "--strategy",
                "plan",
                "--plan",
                str(path),
                "--json",
                "--quiet",
                "--iterations",
                "3",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["strategy"] == "plan:kaggle"


def test_a_plan_file_brings_its_model_and_pipeline(tmp_path, capsys):
    """simulate --plan takes the plan's model and pipeline unless told others, as execute
    does; a workload given that is not the plan's is refused, naming both pipelines."""
    from dataclasses import replace

    from corun.spec.serde import save

    from corun import spec

    path = tmp_path / "plan.json"
    plan = spec.one_kernel_plan(spec.pipeline_preset("heavy-rehash"), "heavy-lean", 1,
                                "emb_bwd")
    save(replace(plan, batch_per_gpu=8192), path)
    argv = ["simulate", "--strategy", "plan", "--plan", str(path), "--json", "--quiet",
            "--iterations", "3"]
    assert main(argv) == 0
    pred = json.loads(capsys.readouterr().out)
    assert (pred["model"], pred["pipeline"], pred["batch_per_gpu"]) == \
        ("heavy-lean", "heavy-rehash", 8192)
    assert main([*argv, "--model", "criteo-kaggle", "--pipeline", "kaggle"]) == 2
    assert "plan.pipeline = 'heavy-rehash': the pipeline it runs with ('kaggle')" in \
        capsys.readouterr().err


def test_host_thread_on_by_default_and_off_on_request(capsys):
    """ideal on one H200 is bound by the host thread's step launch (costmodel/host.py);
    --no-host-thread gives the GPU side alone, which is faster."""
    from corun.costmodel.host import H200_HOST

    times = {}
    for flag in ([], ["--no-host-thread"]):
        assert main(["simulate", "--strategy", "ideal", "--json", "--quiet",
                     "--iterations", "6", *flag]) == 0
        doc = json.loads(capsys.readouterr().out)
        pred = doc[0] if isinstance(doc, list) else doc
        times[bool(flag)] = pred["iteration_time_ms"]
        assert any(f["kind"] == "host-thread" for f in pred["findings"]) is not bool(flag)
    assert times[False] >= H200_HOST.step_ms * 0.999 > times[True]


def test_version_names_the_installed_distribution(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"corun {version('corun-dlrm')}"


@pytest.mark.parametrize("args, says", [
    (["plan", "--time-limit", "nan"], "--time-limit = nan: a finite number of seconds > 0"),
    (["plan", "--time-limit", "inf"], "--time-limit = inf: a finite number of seconds > 0"),
    (["simulate", "--seed", "-1"], "--seed = '-1': an integer in [0, 4294967295]"),
    (["plan", "--seed", "2**40"], "--seed = '2**40': an integer in [0, 4294967295]"),
    (["plan", "--out", ""], "'': a non-empty path to write to"),
    (["report", "x.json", "--out", " "], "' ': a non-empty path to write to"),
])
def test_bad_numbers_and_empty_outputs_are_refused_before_any_work(args, says, capsys,
                                                                   tmp_path):
    """Refused with exit 2 and a message naming the value and what is allowed, before any
    search or write: a NaN time limit had turned the search's improvement step off, a
    negative seed ended in a traceback, and `--out ''` wrote nothing with exit 0."""
    try:
        rc = main([*args, "--quiet"] if args[0] in ("plan", "simulate") else args)
    except SystemExit as e:  # argparse's own refusal
        rc = e.code
    assert rc == 2
    assert says in capsys.readouterr().err


def test_config_values_pass_the_flags_checks_and_an_abbreviated_flag_wins(tmp_path, capsys):
    """Config and command line merge in one place: a value the flag would refuse is refused
    (`cuda_graphs: 'no'` had turned CUDA graphs on; `seed: abc` had ended in a traceback),
    a key given twice is refused, and a flag given on the command line wins even abbreviated
    (`--gpu 1` had lost to the config's `gpus: 8`)."""
    import json as json_

    def run(text: str, *flags: str) -> int:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(text)
        return main(["simulate", "--config", str(cfg), "--strategy", "ideal", "--json",
                     "--quiet", *flags])

    assert run("cuda_graphs: 'no'\n") == 2
    assert "config cuda_graphs = 'no': true or false" in capsys.readouterr().err
    assert run("seed: abc\n") == 2
    assert "config seed = 'abc'" in capsys.readouterr().err
    assert run("embedding_comm: telepathy\n") == 2
    assert "config embedding_comm = 'telepathy': one of collective, pgas" in \
        capsys.readouterr().err
    assert run("gpus: 8\ngpus: 4\n") == 2
    assert "gpus = 'given twice': each key once" in capsys.readouterr().err
    assert run("gpus: 8\n", "--gpu", "1") == 0
    assert json_.loads(capsys.readouterr().out)["gpu_count"] == 1
    assert run("gpus: 2\n") == 0
    assert json_.loads(capsys.readouterr().out)["gpu_count"] == 2


def test_a_json_key_given_twice_and_binary_or_deep_files_are_refused(tmp_path):
    from corun.spec import SpecError
    from corun.spec.serde import read_document

    (tmp_path / "d.json").write_text('{"a": 1, "a": 2}')
    (tmp_path / "b.json").write_bytes(b"\xff\xfe\x00binary")
    (tmp_path / "n.json").write_text("[" * 100_000)
    with pytest.raises(SpecError, match="a = 'given twice'"):
        read_document(tmp_path / "d.json")
    with pytest.raises(SpecError, match="UTF-8 text"):
        read_document(tmp_path / "b.json")
    with pytest.raises(SpecError, match="valid JSON"):
        read_document(tmp_path / "n.json")


@pytest.mark.parametrize("hardware,gpus", [("h200", 1), ("a100", 2), ("h100", 4)])
def test_the_table_and_the_json_give_the_same_numbers(capsys, hardware, gpus):
    """One number, one source: every strategy's row of the printed table is its JSON
    prediction's mean iteration, samples/s and stall, rounded."""
    common = ["simulate", "--hardware", hardware, "--gpus", str(gpus), "--iterations", "4",
              "--quiet"]
    assert main(common) == 0
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()
            if line and line.split()[0] in {"ideal", "gpu-sequential", "gpu-overlap"}}
    assert main([*common, "--json"]) == 0
    from corun.spec import Prediction
    from corun.spec.serde import loads

    preds = [loads(Prediction, d) for d in json.loads(capsys.readouterr().out)]
    assert {p.strategy for p in preds} >= set(rows)
    for p in preds:
        if p.strategy in rows:
            ms, samples, _, stall, _ = rows[p.strategy]
            assert ms == f"{p.mean_iteration_ms:.3f}"
            assert samples == f"{p.throughput_samples_per_s:,.0f}"
            assert stall == f"{p.stall_ms_per_iteration:.3f}"


def _flags(parser, path=("corun",)):
    """(command, option or argument, its help) of every action of every subcommand."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _flags(sub, (*path, name))
        elif not isinstance(action, argparse._HelpAction):
            yield " ".join(path), "/".join(action.option_strings) or action.dest, action.help


def test_every_flag_of_every_command_says_what_it_does():
    from corun.cli import build_parser

    flags = list(_flags(build_parser()))
    assert len(flags) > 100
    silent = [f"{cmd} {flag}" for cmd, flag, text in flags if not (text or "").strip()]
    assert not silent, f"flags without help: {silent}"
