"""bench/race_probe.py: a dry run times every (blocks, mode, stage) cell step by step, and
the report counts a cell's held steps against the stage's time alone."""

from __future__ import annotations

import json
import warnings

import pytest

from bench.race_probe import HELD_MS, main, render


@pytest.fixture(autouse=True)
def _quiet_simulator():
    with warnings.catch_warnings():  # the simulator's uint64 arithmetic wraps, as meant
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def test_dry_run_times_each_cell_step_by_step(tmp_path):
    assert main(["--dry-run", "--out", str(tmp_path), "--stages",
                 "interaction_bwd,bottom_mlp_bwd", "--modes", "spin,paced"]) == 0
    doc = json.loads((tmp_path / "race.json").read_text())
    (batch,) = doc["batches"]
    assert set(batch["plain"]) == {"spin", "paced"}
    cells = {(c["mode"], c["stage"]) for c in batch["cells"]}
    assert cells == {(m, s) for m in ("spin", "paced")
                     for s in ("interaction_bwd", "bottom_mlp_bwd")}
    for c in batch["cells"]:
        assert len(c["stage_ms"]) == len(c["kernel_ms"]) == len(c["host_ahead"]) == 2
        assert all(t[c["stage"]] > 0 for t in c["stage_ms"])


def test_report_counts_held_steps_against_the_stage_alone():
    plain = [{s: 0.4 for s in ("emb_fwd", "bottom_mlp_fwd", "interaction_fwd",
                               "top_mlp_fwd", "top_mlp_bwd", "interaction_bwd",
                               "bottom_mlp_bwd", "emb_bwd", "optimizer")}] * 3
    times = [0.41, 0.4 + HELD_MS + 0.01, 2.0, 0.4 + HELD_MS - 0.01]
    doc = {"command": "python bench/race_probe.py", "model": "m", "pipeline": "p",
           "batches": [{"batch": 8, "plain": {"spin": plain}, "cells": [{
               "blocks_asked": 396, "blocks": 403, "threads": 256, "mode": "spin",
               "stage": "interaction_bwd", "kernel_alone_ms": 1.9,
               "stage_ms": [{"interaction_bwd": t} for t in times],
               "kernel_ms": [1.0] * 4, "host_ahead": [True, True, False, True]}]}]}
    row = [line for line in render(doc, []).splitlines() if line.startswith("| spin")]
    assert row == ["| spin | 396 (403) | interaction_bwd | 0.400 | 0.410 / 0.700 / 2.000 | "
                   "2 of 4 | 1.00 | 3 of 4 |"]


@pytest.mark.parametrize("args, field", [
    (["--blocks", "0"], "--blocks"), (["--stages", "emb_a2a_bwd"], "--stages"),
    (["--modes", "spin,fast"], "--modes"), (["--reps", "0"], "--reps"),
    (["--batch", "0"], "--batch")])
def test_bad_input_names_its_field_and_writes_nothing(tmp_path, capsys, args, field):
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path / "out"), *args])
    assert f"error: {field} = " in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
