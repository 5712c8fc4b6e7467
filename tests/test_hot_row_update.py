"""bench/hot_row_update.py: its --zipf check and a dry run's record (CPU: both updates are
index_add_ there, so they agree exactly)."""

import json

import pytest

from bench.hot_row_update import main


@pytest.mark.parametrize("text", ["1.1,x", "0", "-1", "nan", "inf", ""])
def test_bad_zipf_names_the_flag(text, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--dry-run", "--zipf", text, "--out", str(tmp_path)])
    assert "--zipf" in capsys.readouterr().err
    assert not (tmp_path / "hot_row_update.json").exists()


def test_dry_run_records_both_updates_and_the_hottest_row(tmp_path):
    assert main(["--dry-run", "--models", "heavy-hot", "--zipf", "1.1,1.0",
                 "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "hot_row_update.json").read_text())["rows"]
    assert [(r["model"], r["zipf_a"]) for r in rows] == [("heavy-hot", 1.1), ("heavy-hot", 1.0)]
    for r in rows:
        assert [c["case"] for c in r["cases"]] == ["fused", "hot-row"]
        assert all(c["relative_error"] < 1e-6 for c in r["cases"])
    skewed, uniform = (r["hottest_row_share"] for r in rows)
    assert skewed > 0.1 > uniform  # zipf's head row against uniform ids
