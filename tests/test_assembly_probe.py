"""bench/assembly_probe.py: its report from a probe record (the probe itself needs a GPU;
the kernel at wider grids is tested in tests/test_device_assembly.py)."""

import json

import pytest

from bench import assembly_probe


def record(equal_last: bool = True) -> dict:
    def variant(check, factor, width, ms, equal=True):
        moved = 3_000_000 if check else 2_000_000
        return {"check": check, "factor": factor, "blocks": [width, 27], "ms": ms,
                "bytes": moved, "tb_per_s": moved / ms / 1e9, "equal": equal}

    return {"command": "python bench/assembly_probe.py --out /x", "commit": "abcdef123",
            "pipeline": "heavy", "model": "heavy-fused", "reps": 30,
            "batches": [{"rows": 1024, "tables": 26, "ids": 100_000, "grid": [4, 27],
                         "grid_default": [10, 27],
                         "variants": [variant(True, 1, 4, 0.2), variant(True, None, 10, 0.1),
                                      variant(False, 1, 4, 0.15, equal_last)],
                         "copy": {"ms": 0.05, "bytes": 1_600_000, "tb_per_s": 0.032}}]}


def test_render_lists_every_variant_with_its_bandwidth_and_names_the_default():
    md = assembly_probe.render([("run1.json", record())])
    assert "--render bench/results/raw/run1.json" in md
    assert "| yes | 1 | 4 x 27 | 0.200 | 3 | 0.01 | yes |" in md
    assert "| yes | default | 10 x 27 | 0.100 | 3 | 0.03 | yes |" in md
    assert "100,000 ids in 26 tables" in md and "commit abcdef1" in md


def test_render_marks_a_batch_that_differs():
    md = assembly_probe.render([("r.json", record(equal_last=False))])
    assert "| no | 1 | 4 x 27 | 0.150 | 2 | 0.01 | NO |" in md


def test_render_command_writes_the_report(tmp_path):
    raw = tmp_path / "probe.json"
    raw.write_text(json.dumps(record()))
    out = tmp_path / "probe.md"
    assert assembly_probe.main(["--render", str(raw), "-o", str(out)]) == 0
    assert "heavy beside heavy-fused (probe.json)" in out.read_text()


def test_a_missing_record_is_named(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        assembly_probe.main(["--render", str(tmp_path / "none.json"), "-o",
                             str(tmp_path / "x.md")])
    assert e.value.code == 2 and "none.json" in capsys.readouterr().err
    assert not (tmp_path / "x.md").exists()


def test_bad_factors_are_named():
    with pytest.raises(SystemExit):
        assembly_probe.main(["--factors", "1,x"])
