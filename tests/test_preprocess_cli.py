"""`corun preprocess` end to end on a small generated Criteo file."""

import numpy as np
import pytest
from corun.backend.data import write_criteo_tsv

from corun.cli import main


@pytest.fixture
def tsv(tmp_path):
    path = tmp_path / "day_0"
    write_criteo_tsv(path, 300, np.random.default_rng(11), null_rate=0.2)
    return path


@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_preprocess_file_checked_and_saved(tsv, tmp_path, engine, capsys):
    out = tmp_path / "inputs.npz"
    assert main(["preprocess", "--input", str(tsv), "--engine", engine, "--chunk-rows", "128",
                 "--check-rows", "50", "-o", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "300 rows in 3 chunk(s)" in text and "144 rows checked" in text  # 50+50+44
    data = np.load(out)
    assert data["dense"].shape == (300, 13)
    assert data["cat_2.offsets"][-1] == len(data["cat_2.values"]) == 300
    assert (data["cat_2.values"] < 10131227).all()
    assert data["int_0_bucket.values"].max() <= 3


def test_bad_line_stops_or_is_skipped(tsv, tmp_path, capsys):
    lines = tsv.read_text().splitlines()
    lines[9] = lines[9].replace("\t", "\tzz", 1)  # int_0 is no longer an integer
    bad = tmp_path / "bad"
    bad.write_text("\n".join(lines) + "\n")
    assert main(["preprocess", "--input", str(bad), "--engine", "numpy", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:10: column int_0" in err
    assert main(["preprocess", "--input", str(bad), "--engine", "numpy", "--quiet",
                 "--skip-bad-lines"]) == 0
    assert "skipped 1 malformed line(s) of 300" in capsys.readouterr().out


def test_synthetic_and_bad_arguments(capsys):
    assert main(["preprocess", "--synthetic", "500", "--pipeline", "multihot", "--engine",
                 "numpy", "--quiet"]) == 0
    assert "500 rows" in capsys.readouterr().out
    assert main(["preprocess", "--synthetic", "0", "--quiet"]) == 2
    assert "--synthetic = 0: an integer >= 1" in capsys.readouterr().err
    # under the CUDA simulator (conftest) the cuda engine runs simulated
    assert main(["preprocess", "--synthetic", "40", "--engine", "cuda", "--quiet"]) == 0
    assert "40 rows" in capsys.readouterr().out


def test_cuda_engine_without_a_gpu(monkeypatch, capsys):
    import numba
    from numba import cuda

    monkeypatch.setattr(numba.config, "ENABLE_CUDASIM", 0)
    monkeypatch.setattr(cuda, "is_available", lambda: False)
    assert main(["preprocess", "--synthetic", "10", "--engine", "cuda", "--quiet"]) == 2
    assert "no CUDA GPU is available here" in capsys.readouterr().err


def test_mismatch_is_caught(monkeypatch, capsys):
    """A wrong kernel output stops the run with the feature and the row."""
    import corun.backend.runner as runner

    real = runner.run_numpy

    def broken(pipeline, inputs):
        out = real(pipeline, inputs)
        out["logit_int_3"].values[7] += 1.0
        return out

    monkeypatch.setattr(runner, "run_numpy", broken)
    assert main(["preprocess", "--synthetic", "20", "--engine", "numpy", "--check-rows", "20",
                 "--quiet"]) == 3
    assert "feature 'logit_int_3', row 7" in capsys.readouterr().err
