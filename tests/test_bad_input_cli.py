"""Every bad input of the command line, generated from its own parser and a set of bad
files, is refused before any work: exit 2 and a line naming what is wrong, never a
traceback, never accepted. The classes: numbers (every int and float option of every
command, given a word, nan, inf, a negative, an overflow and nothing) and files (every
option that reads a file, given one missing, a folder, binary bytes, nothing, another
kind, nesting too deep, a key twice, a list)."""

from __future__ import annotations

import argparse
import json

import pytest

from corun.cli import build_parser, main

BAD_NUMBERS = ("abc", "nan", "inf", "-5", "1e400", "")

REQUIRED = {"execute": ["--strategy", "ideal", "--device", "cpu", "-o", "{d}/m.json"],
            "calibrate": ["-o", "{d}/c.json"], "fit": ["{d}/none.csv", "-o", "{d}/f.pkl"],
            "profile": ["--out", "{d}/prof"], "tune": ["{d}/none", "--out", "{d}/t"],
            "report": ["{d}/x.json", "--out", "{d}/r"], "preprocess": ["--synthetic", "100"]}
"""What each command needs besides the option tried (paths under the test's folder)."""


def _numeric_cases() -> list[tuple[str, str, str]]:
    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    cases = []
    for name, sub in subs.choices.items():
        if name == "validate":
            continue  # its numbers are a subcommand's (below)
        for a in sub._actions:
            if a.option_strings and (a.type in (int, float)
                                     or getattr(a.type, "__name__", "") == "seed"):
                cases += [(name, max(a.option_strings, key=len), v) for v in BAD_NUMBERS]
    cases += [("validate predict", flag, v) for flag in ("--jobs", "--limit")
              for v in BAD_NUMBERS]
    return cases


NUMERIC = _numeric_cases()


@pytest.mark.parametrize("command,flag,value", NUMERIC)
def test_a_bad_number_is_refused_naming_its_option(tmp_path, capsys, command, flag, value):
    extra = [x.format(d=tmp_path) for x in REQUIRED.get(command, [])]
    argv = [*command.split(), *extra, flag, value]
    if command.startswith("validate"):
        argv = ["validate", "--dataset", str(tmp_path), "predict", flag, value]
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's own refusal
        code = e.code
    assert code == 2
    err = capsys.readouterr().err
    assert flag.lstrip("-").split("-")[0] in err or repr(value) in err, err


def _bad_files(d) -> dict[str, str]:
    files = {"missing": d / "nope.json", "folder": d / "folder", "binary": d / "bin.json",
             "empty": d / "empty.json", "another kind": d / "model.json",
             "too deep": d / "deep.json", "a key twice": d / "dup.json", "a list": d / "list.json"}
    (d / "folder").mkdir()
    files["binary"].write_bytes(bytes(range(256)) * 10)
    files["empty"].write_text("")
    files["another kind"].write_text(json.dumps({"schema": "corun.model/1", "name": "x"}))
    files["too deep"].write_text("[" * 100_000 + "]" * 100_000)
    files["a key twice"].write_text('{"a": 1, "a": 2}')
    files["a list"].write_text("[1, 2, 3]")
    return {k: str(v) for k, v in files.items()}


FILE_OPTIONS = {
    "plan": ["simulate", "--strategy", "plan", "--quiet", "--plan", "{f}"],
    "config": ["plan", "--quiet", "--config", "{f}"],
    "calibration": ["simulate", "--strategy", "ideal", "--quiet", "--calibration", "{f}"],
    "machine": ["simulate", "--hardware", "h100", "--strategy", "ideal", "--quiet",
                "--machine", "{f}"],
    "report input": ["report", "{f}", "--out", "{d}/rep"],
    "execute plan": ["execute", "{f}", "--device", "cpu", "-o", "{d}/m.json", "--quiet"],
    "validation add": ["validate", "--dataset", "{d}/ds", "add", "{f}", "--source", "x"],
    "hardware file": ["simulate", "--strategy", "ideal", "--quiet", "--hardware", "{f}"],
    "model file": ["simulate", "--strategy", "ideal", "--quiet", "--model", "{f}"],
    "pipeline file": ["simulate", "--strategy", "ideal", "--quiet", "--pipeline", "{f}"],
    "criteo input": ["preprocess", "--quiet", "--input", "{f}"],
    "criteo data": ["execute", "--strategy", "ideal", "--device", "cpu", "-o", "{d}/m.json",
                    "--quiet", "--data", "{f}"],
    "profile": ["fit", "{f}", "-o", "{d}/f.pkl"],
}
KINDS = ("missing", "folder", "binary", "empty", "another kind", "too deep", "a key twice",
         "a list")


@pytest.mark.parametrize("option", FILE_OPTIONS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_bad_file_is_refused_naming_it(tmp_path, capsys, option, kind):
    f = _bad_files(tmp_path)[kind]
    argv = [x.format(f=f, d=tmp_path) for x in FILE_OPTIONS[option]]
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    assert code == 2, capsys.readouterr()
    assert "error" in capsys.readouterr().err


def test_the_suite_covers_its_classes():
    """The counts a reader of the issue asks for, by class (kept in step with the tests)."""
    assert len(NUMERIC) >= 250 and len(FILE_OPTIONS) * len(KINDS) >= 100


@pytest.mark.parametrize("field,value,says", [
    ("intra_node.bytes_per_s", 1e-300, "bytes/s in [1e+06, 1e+15]"),
    ("intra_node.latency_us", float("inf"), "microseconds in [0, 1e+06]"),
    ("gpu.copy_bytes_per_s", 1.0, "bytes/s in [1e+09, 1e+15]"),
    ("gpu.boost_clock_hz", 1e300, "Hz in [1e+08, 1e+10]"),
])
def test_a_machine_no_gpu_can_be_is_refused(tmp_path, capsys, field, value, says):
    """A hardware file whose link or GPU rates would turn every duration into nan or 0."""
    from corun.spec import hardware_preset
    from corun.spec.serde import dumps

    doc = dumps(hardware_preset("h200", 2))
    node = doc
    *path, last = field.split(".")
    for key in path:
        node = node[key]
    node[last] = value
    f = tmp_path / "hw.json"
    f.write_text(json.dumps(doc))
    assert main(["simulate", "--hardware", str(f), "--gpus", "2", "--strategy", "ideal",
                 "--quiet"]) == 2
    assert says in capsys.readouterr().err


@pytest.mark.parametrize("text", ["cpu:²", "cpu:٣", "cpu: 4", "cpu:+4", "cpu:4.0", "cpu:"])
def test_a_strategy_is_named_with_ascii_digits(capsys, text):
    assert main(["simulate", "--strategy", text, "--quiet"]) == 2
    assert "cpu:N with N an integer in [1, 16]" in capsys.readouterr().err
