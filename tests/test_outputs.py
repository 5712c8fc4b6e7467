"""Output targets: checked before any work, folders written whole with a manifest, and
workers that end with their command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corun.cli import main
from corun.out_folder import MANIFEST, staged_folder


@pytest.mark.parametrize("argv_for,says", [
    (lambda d: ["execute", "--strategy", "ideal", "--device", "cpu", "-o", str(d)],
     "a file to write, not a folder"),
    (lambda d: ["execute", "--strategy", "ideal", "--device", "cpu", "-o",
                str(d / "f.txt" / "m.json")], "is a file"),
    (lambda d: ["simulate", "--out", str(d / "f.txt")], "a folder to write, not a file"),
    (lambda d: ["plan", "--out", str(d / "f.txt" / "sub")], "is a file"),
    (lambda d: ["simulate", "--strategy", "ideal", "--trace", str(d)],
     "a file to write, not a folder"),
    (lambda d: ["simulate", "--out", "."], "a folder of its own, not the current folder"),
    (lambda d: ["plan", "--out", ".."], "a folder of its own, not the current folder"),
])
def test_an_output_target_that_cannot_be_written_is_refused_before_any_work(
        tmp_path, capsys, argv_for, says):
    (tmp_path / "f.txt").write_text("mine")
    with pytest.raises(SystemExit) as e:
        main(argv_for(tmp_path))
    assert e.value.code == 2 and says in capsys.readouterr().err
    assert (tmp_path / "f.txt").read_text() == "mine"


def test_a_folder_is_replaced_whole_keeping_what_corun_did_not_write(tmp_path):
    out = tmp_path / "out"
    assert main(["simulate", "--quiet", "--iterations", "3", "--batch", "8192",
                 "--out", str(out)]) == 0
    (out / "notes.txt").write_text("mine")
    first = json.loads((out / MANIFEST).read_text())["files"]
    assert "prediction-ideal.json" in first and "notes.txt" not in first
    assert main(["simulate", "--quiet", "--iterations", "3", "--batch", "4096",
                 "--strategy", "ideal", "--out", str(out)]) == 0
    names = {p.name for p in out.iterdir()}
    assert names == {"prediction-ideal.json", "trace-ideal.json", "summary.md", MANIFEST,
                     "notes.txt"}  # no prediction of the b8192 run is left beside b4096's
    assert json.loads((out / "prediction-ideal.json").read_text())["batch_per_gpu"] == 4096
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]


def test_an_error_while_writing_leaves_the_old_folder_as_it_was(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "plan.json").write_text("old")
    with pytest.raises(OSError):
        with staged_folder(out) as staging:
            (staging / "plan.json").write_text("new")
            raise OSError("disk full")
    assert [p.name for p in out.iterdir()] == ["plan.json"]
    assert (out / "plan.json").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        found += [int(x) for x in task.read_text().split()]
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[1].split()[0] == "Z")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigterm_ends_whatif_and_its_workers(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "corun.cli", "whatif", "--hardware",
                             "h200", "--gpus", "1,2", "--batch", "4096,8192", "--jobs", "2",
                             "--time-limit", "5", "--out", str(tmp_path / "w")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while time.monotonic() < deadline and len(workers) < 2:
        time.sleep(0.5)
        workers = [c for c in _children(proc.pid) if Path(f"/proc/{c}/cmdline").exists()
                   and b"spawn" in Path(f"/proc/{c}/cmdline").read_bytes()]
    assert workers, "the pool's workers never started"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 130
    assert b"interrupted" in proc.stderr.read()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.2)
    assert not any(_alive(w) for w in workers)
    assert not (tmp_path / "w").exists()
