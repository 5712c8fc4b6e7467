"""bench/contention_probe.py: its synthetic co-runners compute what their host references
say (under the CUDA simulator), and a dry run measures every kernel at every release."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from backend.scalar import division_magic, sigrid_hash
from backend.trainer import TRAINING_STAGES
from bench.contention_probe import (
    ALU_MAX_VALUE,
    alu_kernel,
    alu_reference,
    main,
    stream_kernel,
    stream_reference,
)


@pytest.fixture(autouse=True)
def _quiet_simulator():
    with warnings.catch_warnings():  # the simulator's uint64 arithmetic wraps, as meant
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def test_alu_kernel_chains_sigrid_hash():
    magic, shift = division_magic(ALU_MAX_VALUE)
    out = np.zeros(40, np.int64)
    alu_kernel[2, 32](out, 3, ALU_MAX_VALUE, magic, shift)
    ref = alu_reference(40, 3, ALU_MAX_VALUE)
    assert np.array_equal(out, ref)
    x = 7
    for _ in range(3):
        x = sigrid_hash(x, 0, ALU_MAX_VALUE)
    assert ref[7] == x and 0 <= ref.min() and ref.max() < ALU_MAX_VALUE


def test_stream_kernel_writes_two_ids_per_raw_id():
    src = np.arange(100, dtype=np.int64) * 5
    dst = np.full(200, -1, np.int64)
    stream_kernel[1, 32](src, dst, 2)  # fewer threads than ids: the grid strides
    assert np.array_equal(dst, stream_reference(src, 2))
    assert dst[:4].tolist() == [1, 2, 6, 7]


def test_dry_run_measures_every_kernel_at_every_release(tmp_path):
    assert main(["--dry-run", "--out", str(tmp_path), "--register-caps", "32"]) == 0
    doc = json.loads((tmp_path / "contention_heavy-fused.json").read_text())
    assert doc["dry_run"] and doc["command"].endswith(f"--out {tmp_path} --register-caps 32")
    (batch,) = doc["batches"]
    assert set(batch["kernels"]) == {"fused", "fused-r32", "alu", "alu-thin", "stream",
                                     "stream1"}
    for k in batch["kernels"].values():
        assert set(k["by_release"]) == {s.value for s in TRAINING_STAGES}
        for row in k["by_release"].values():
            assert row["span_ms"] >= max(row["stage_ms"].values())
            assert row["stretch_ms"] == pytest.approx(row["span_ms"]
                                                      - batch["plain"]["span_ms"])
    assert batch["kernels"]["alu-thin"]["blocks"] < batch["kernels"]["alu"]["blocks"]
    assert all(batch["kernels"][k]["output_matches_reference"]
               for k in ("alu", "alu-thin", "stream", "stream1"))


@pytest.mark.parametrize("flag,value", [("--register-caps", "8"), ("--batches", "0"),
                                        ("--batches", "8192,x"), ("--launch-once", "417"),
                                        ("--launch-once", "0,5")])
def test_bad_lists_are_refused_naming_the_flag(flag, value):
    with pytest.raises(SystemExit, match=flag):
        main(["--dry-run", "--out", "/tmp/unused", flag, value])
