"""bench/embedding_forward.py on the CPU: the dry run's record and its rendered report."""

import json

import pytest

pytest.importorskip("torch")

from bench import embedding_forward  # noqa: E402


def test_dry_run_records_both_ways_and_renders(tmp_path):
    assert embedding_forward.main(["--dry-run", "--models", "heavy-lean", "--iters", "2",
                                   "--warmup", "0", "--out", str(tmp_path)]) == 0
    rec = json.loads((tmp_path / "embedding_forward.json").read_text())
    (row,) = rec["rows"]
    assert row["model"] == "heavy-lean" and row["dim"] == 8 and row["ids"] > row["bags"] > 0
    assert row["max_abs_diff"] < 1e-4 * max(1.0, row["max_abs_value"])
    assert row["pytorch_ms"] > 0 and row["kernel_ms"] > 0 and "commit" in rec
    report = tmp_path / "report.md"
    assert embedding_forward.main(["--render", str(tmp_path / "embedding_forward.json"),
                                   "-o", str(report)]) == 0
    text = report.read_text()
    assert "| heavy-lean | 64 | 8 |" in text and "bench/embedding_forward.py --render" in text


@pytest.mark.parametrize("bad", ["8192,abc", "0"])
def test_bad_batches_name_the_flag(bad, tmp_path, capsys):
    with pytest.raises(SystemExit):
        embedding_forward.main(["--batches", bad, "--out", str(tmp_path)])
    assert "--batches" in capsys.readouterr().err
    assert not (tmp_path / "embedding_forward.json").exists()
