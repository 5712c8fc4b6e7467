"""bench/unroll_probe.py: each unrolled kernel's outputs against unroll 1's, in the CUDA
simulator (the tests' NUMBA_ENABLE_CUDASIM), the record and its table; bad options refused."""

import json

import pytest

from bench.unroll_probe import main


def test_a_dry_run_checks_every_unroll_and_renders(tmp_path, capsys):
    assert main(["--dry-run", "--out", str(tmp_path), "--pipelines", "multihot",
                 "--blocks", "2", "--unrolls", "1,2"]) == 0
    records = json.loads((tmp_path / "unroll_probe.json").read_text())
    assert [(r["asked_blocks"], r["unroll"]) for r in records] == [(2, 1), (2, 2)]
    assert all(r["equal_to_unroll_1"] for r in records)
    capsys.readouterr()
    report = tmp_path / "r.md"
    assert main(["--render", str(tmp_path / "unroll_probe.json"), "-o", str(report)]) == 0
    assert report.read_text().count("| multihot | 64 |") == 2


@pytest.mark.parametrize("argv, says", [
    (["--unrolls", "2,4"], "--unrolls 2,4: integers in 1..8, 1 among them"),
    (["--unrolls", "1,9"], "--unrolls 1,9: integers in 1..8"),
    (["--blocks", "0"], "--blocks 0: integers >= 1"),
    (["--blocks", "a"], "--blocks a: comma-separated integers"),
])
def test_bad_options_are_refused_naming_them(tmp_path, capsys, argv, says):
    with pytest.raises(SystemExit):
        main(["--dry-run", "--out", str(tmp_path), *argv])
    assert says in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--render", str(tmp_path / "missing.json")])
    assert "no such file" in capsys.readouterr().err
