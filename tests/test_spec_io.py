"""Spec values survive JSON and YAML, and files are written atomically."""

import os

import pytest
from corun.spec.serde import load, save, write_atomic, write_or_print

from corun import spec


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
@pytest.mark.parametrize("make", [
    lambda: spec.pipeline_preset("wide-2x"),
    lambda: spec.model_preset("mlperf-dcnv2"),
    lambda: spec.hardware_preset("a100", 8),
    lambda: spec.one_kernel_plan(spec.pipeline_preset("kaggle"), "criteo-kaggle", 1, "emb_fwd"),
])
def test_round_trip(tmp_path, suffix, make):
    obj = make()
    path = tmp_path / f"x{suffix}"
    save(obj, path)
    assert load(type(obj), path) == obj


def test_preset_node_counts():
    counts = {k: len(spec.pipeline_preset(k).nodes) for k in spec.PIPELINE_PRESETS}
    assert counts == {"kaggle": 105, "terabyte": 105, "wide-2x": 221, "wide-4x": 442,
                      "multihot": 104, "heavy": 130, "heavy-20": 130, "heavy-small": 130,
                      "heavy-short": 130, "heavy-rehash": 156}
    for k, m in spec.DEFAULT_MODEL_FOR.items():
        spec.pipeline_preset(k).check_model(spec.model_preset(m))


def test_mlperf_model_size():
    m = spec.model_preset("mlperf-dcnv2")
    rows = sum(t.rows for t in m.tables)
    assert 204e6 < rows < 205e6  # OPS.md: about 204 M rows
    assert 104e9 < rows * 128 * 4 < 106e9  # 105 GB in fp32 at dim 128


def test_write_atomic_keeps_old_file_on_failure(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("old")

    class Boom(str):
        def __str__(self):
            raise RuntimeError

    with pytest.raises(TypeError):
        write_atomic(path, 123)  # type: ignore[arg-type]
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]
    write_atomic(path, "new")
    assert path.read_text() == "new"
    assert not any(n.endswith(".tmp") for n in os.listdir(tmp_path))


def test_a_report_is_written_where_named_else_printed(tmp_path, capsys):
    write_or_print("# report\n", tmp_path / "sub" / "r.md")
    assert (tmp_path / "sub" / "r.md").read_text() == "# report\n"
    assert capsys.readouterr().out == ""
    write_or_print("# report\n", None)
    assert capsys.readouterr().out == "# report\n"


def test_a_record_stored_gzipped_is_read_by_either_name(tmp_path):
    import gzip

    from corun.spec.serde import read_document, read_stored_text, stored_glob, stored_path

    (tmp_path / "a.json").write_text('{"x": 1}')
    (tmp_path / "b.json.gz").write_bytes(gzip.compress(b'{"x": 2}'))
    (tmp_path / "c.txt").write_text("not matched")
    assert stored_path(tmp_path / "b.json") == tmp_path / "b.json.gz"
    assert stored_path(tmp_path / "a.json") == tmp_path / "a.json"
    assert stored_path(tmp_path / "z.json") == tmp_path / "z.json"  # neither: as given
    assert read_stored_text(tmp_path / "b.json") == '{"x": 2}'
    assert read_stored_text(tmp_path / "b.json.gz") == '{"x": 2}'
    assert read_document(tmp_path / "b.json") == {"x": 2}
    assert stored_glob(tmp_path, "*.json") == [tmp_path / "a.json", tmp_path / "b.json"]


def test_a_compressed_record_is_read_by_every_name_it_was_cited_by(tmp_path):
    """A record stored as x.json.xz or x.json.gz is read by x.json, x.json.gz and x.json.xz
    alike, and listed by its plain name."""
    import gzip
    import lzma

    from corun.spec.serde import read_stored_text, stored_glob, stored_name, stored_path

    text = '{"rows": [' + ", ".join(f'{{"i": {i}, "ms": 1.5}}' for i in range(500)) + "]}"
    (tmp_path / "r.json.xz").write_bytes(lzma.compress(text.encode()))
    (tmp_path / "g.json.gz").write_bytes(gzip.compress(text.encode()))
    for cited in ("r.json", "r.json.gz", "r.json.xz"):
        assert stored_path(tmp_path / cited) == tmp_path / "r.json.xz"
        assert read_stored_text(tmp_path / cited) == text
        assert stored_name(tmp_path / cited) == "r.json"
    assert read_stored_text(tmp_path / "g.json") == text
    assert stored_glob(tmp_path, "*.json") == [tmp_path / "g.json", tmp_path / "r.json"]
    assert stored_path(tmp_path / "gone.json.gz") == tmp_path / "gone.json.gz"  # as given


def test_files_are_written_with_the_users_normal_permissions(tmp_path):
    """write_atomic's temp file is 0600; the file it becomes is 0666 less the umask, as any
    other program's output."""
    import os

    from corun.spec.serde import write_atomic

    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "a.json", "{}")
        os.umask(0o077)
        write_atomic(tmp_path / "b.json", "{}")
    finally:
        os.umask(old)
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "b.json").stat().st_mode & 0o777 == 0o600
