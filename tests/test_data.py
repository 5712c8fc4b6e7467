"""Criteo-format reader and the synthetic generator."""

import numpy as np
import pytest
from corun.backend.data import DataError, ReadStats, read_criteo, synthetic_inputs, write_criteo_tsv
from corun.backend.runner import run_numpy

from corun import spec


@pytest.fixture
def tsv(tmp_path):
    path = tmp_path / "day_0"
    write_criteo_tsv(path, 250, np.random.default_rng(3), null_rate=0.2)
    return path


def test_reader_streams_chunks(tsv):
    chunks = list(read_criteo(tsv, chunk_rows=100))
    assert [c.rows for c in chunks] == [100, 100, 50]
    assert [c.first_line for c in chunks] == [1, 101, 201]
    lines = tsv.read_text().splitlines()
    c = chunks[1]
    fields = lines[100 + 7].split("\t")  # row 7 of the second chunk
    assert c.labels[7] == int(fields[0])
    assert c.columns["int_3"].valid[7] == (fields[4] != "")
    if fields[4]:
        assert c.columns["int_3"].values[7] == float(fields[4])
    cat = c.columns["cat_5"]
    assert list(cat.row(7)) == ([int(fields[19], 16)] if fields[19] else [])
    # the chunk feeds the kaggle pipeline as is: one id a list, or null, as it declares
    p = spec.pipeline_preset("kaggle")
    for name, column in c.columns.items():
        column.check(p.columns[name], name)
    out = run_numpy(p, c.columns)
    assert (out["first_cat_0"].values < 1460).all()


@pytest.mark.parametrize("mutate, column, problem", [
    (lambda f: f[:-1], "*", "39 tab-separated fields, expected 40"),
    (lambda f: f[:3] + ["1.5"] + f[4:], "int_2",
     "'1.5': a 32-bit integer, or empty for a null"),
    (lambda f: f[:20] + ["zz12"] + f[21:], "cat_6",
     "'zz12': 1 to 8 hex digits, or empty for a null"),
    (lambda f: ["2"] + f[1:], "label", "'2': 0 or 1"),
])
def test_malformed_line_names_file_line_column(tmp_path, tsv, mutate, column, problem):
    lines = tsv.read_text().splitlines()
    lines[41] = "\t".join(mutate(lines[41].split("\t")))
    bad = tmp_path / "bad.tsv"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as e:
        list(read_criteo(bad, chunk_rows=64))
    assert (e.value.line, e.value.column) == (42, column)
    assert str(e.value) == f"{bad}:42: column {column}: {problem}"
    stats = ReadStats()
    chunks = list(read_criteo(bad, chunk_rows=64, skip_bad_lines=True, stats=stats))
    assert stats.skipped == 1 and stats.lines == 250 and sum(c.rows for c in chunks) == 249
    good = list(read_criteo(tsv, chunk_rows=64))
    # the rows after the bad line are the file's next rows, not shifted
    assert chunks[0].columns["cat_0"].values[41] == good[0].columns["cat_0"].values[42]


def test_synthetic_is_seeded_and_shaped():
    p = spec.pipeline_preset("multihot")
    a = synthetic_inputs(p, 2000, np.random.default_rng(5))
    b = synthetic_inputs(p, 2000, np.random.default_rng(5))
    c = synthetic_inputs(p, 2000, np.random.default_rng(6))
    assert all(np.array_equal(a[k].values, b[k].values) for k in a)
    assert not np.array_equal(a["cat_0"].values, c["cat_0"].values)
    col = a["cat_20"]  # multi-hot size 100: raw lists of 200 ids
    lengths = np.diff(col.offsets)
    assert set(lengths[col.valid]) == {200} and set(lengths[~col.valid]) <= {0}
    rates = [1 - a[f"int_{k}"].valid.mean() for k in range(13)]
    assert 0 <= min(rates) and max(rates) < 0.5 and np.std(rates) > 0.02
    ids = a["cat_3"].values
    _, counts = np.unique(ids, return_counts=True)
    assert counts.max() > 20 * np.median(counts)  # skewed: a few ids are very common


@pytest.mark.parametrize("column,field,says", [
    ("int_0", "1" + "0" * 50, "a 32-bit integer"),
    ("int_0", "2147483648", "a 32-bit integer"),
    ("int_0", "+5", "a 32-bit integer"),
    ("int_0", " ", "a 32-bit integer"),
    ("int_0", "1e5", "a 32-bit integer"),
    ("int_0", "1_000", "a 32-bit integer"),
    ("cat_0", "0x1f", "1 to 8 hex digits"),
    ("cat_0", "-1f", "1 to 8 hex digits"),
    ("cat_0", "1_f", "1 to 8 hex digits"),
    ("cat_0", "ffffffffffffffff", "1 to 8 hex digits"),
    ("cat_0", "a" * 10_000_000, "1 to 8 hex digits"),
    ("cat_0", " ", "1 to 8 hex digits"),
    ("label", "2", "0 or 1"),
])
def test_a_field_outside_the_format_names_its_line_and_column(tmp_path, column, field, says):
    """Signed, prefixed or underscored numbers, exponents, blanks and oversized values are
    refused, never guessed at; the message shows at most the field's start."""
    from corun.backend.data import N_DENSE

    good = ["1", *["3"] * N_DENSE, *["0000abcd"] * 26]
    at = 0 if column == "label" else (1 + int(column[4:]) if column.startswith("int")
                                      else 1 + N_DENSE + int(column[4:]))
    bad = list(good)
    bad[at] = field
    path = tmp_path / "d.tsv"
    path.write_text("\t".join(good) + "\n" + "\t".join(bad) + "\n")
    with pytest.raises(DataError, match=f":2: column {column}: .*{says}") as e:
        list(read_criteo(path))
    assert len(str(e.value)) < 300


def test_an_empty_or_all_bad_file_and_a_missing_one_are_errors(tmp_path):
    empty = tmp_path / "empty.tsv"
    empty.write_text("")
    with pytest.raises(DataError, match="no rows to read"):
        list(read_criteo(empty))
    bad = tmp_path / "bad.tsv"
    bad.write_text("x\n")
    with pytest.raises(DataError, match=r"no rows to read \(1 lines, 1 of them malformed\)"):
        list(read_criteo(bad, skip_bad_lines=True))
    with pytest.raises(DataError, match="no such file"):
        list(read_criteo(tmp_path / "nope.tsv"))
    with pytest.raises(DataError, match="no such file"):
        list(read_criteo(tmp_path))


@pytest.mark.parametrize("segment", [1 << 30, 50_000])
def test_the_arrow_reader_gives_the_line_reader_s_chunks_and_errors(tmp_path, tsv, segment,
                                                                    monkeypatch):
    """Both engines: the same chunks at every chunk size, the same error for a bad line,
    the same rows with it skipped (Arrow reads on a line at a time from the first row it
    has not handed out), in one segment or many."""
    pytest.importorskip("pyarrow")
    from corun.backend import criteo_arrow

    monkeypatch.setattr(criteo_arrow, "SEGMENT_BYTES", segment)

    def read(path, chunk_rows, engine, skip=False):
        stats = ReadStats()
        try:
            chunks = list(read_criteo(path, chunk_rows, skip, stats, engine=engine))
        except DataError as e:
            return str(e)
        return stats.lines, stats.skipped, [
            (c.first_line, c.labels.tolist(),
             {k: (v.values.tolist(), None if v.offsets is None else v.offsets.tolist(),
                  v.valid.tolist()) for k, v in c.columns.items()}) for c in chunks]

    for chunk_rows in (64, 77, 1000):
        assert read(tsv, chunk_rows, "arrow") == read(tsv, chunk_rows, "python")
    lines = tsv.read_text().splitlines()
    for i, bad in ((200, lines[200].replace("\t", "\t+", 1)), (130, "x\ty"),
                   (70, lines[70][:-3] + "0x1")):
        lines[i] = bad
        path = tmp_path / f"bad{i}.tsv"
        path.write_text("\n".join(lines) + "\n")
        for skip in (False, True):
            assert read(path, 64, "arrow", skip) == read(path, 64, "python", skip)
    raw = tmp_path / "latin.tsv"
    raw.write_bytes(tsv.read_bytes().replace(b"\n1\t", b"\n\xff\t", 2))
    assert read(raw, 64, "arrow", True) == read(raw, 64, "python", True)


def test_the_arrow_reader_s_fields_follow_the_line_reader_s_rules():
    """Each field the compiled checks take or refuse, at the edges of the format: the
    32-bit range, the digit count, a sign, hex digits of either case and their count."""
    pa = pytest.importorskip("pyarrow")
    from corun.backend import criteo_arrow
    from corun.backend.data import _parse_line

    def line_reader(label="0", dense="", cat=""):
        try:
            _, d, c = _parse_line([label, dense, *[""] * 12, cat, *[""] * 25], "f", 1)
        except DataError:
            return None
        return d[0], c[0]

    def column(field):
        return pa.chunked_array([pa.array([b"", field.encode(), b""], pa.binary())])

    for field in ("0", "-0", "7", "-2147483648", "2147483647", "0000000001", "2147483648",
                  "-2147483649", "00000000001", "-", "+1", "0x1", "1.0", "1e3", " 1", "",
                  "١"):
        got = criteo_arrow._dense(column(field), 3)
        want = line_reader(dense=field)
        assert (got is None) == (want is None), field
        if got is not None:
            assert got[1].tolist() == [False, field != "", False], field
            assert got[0][1] == (want[0] or 0), field
    for field in ("0", "f", "ABCdef12", "ffffffff", "123456789", "g", "0x1", "-1", " a", ""):
        got = criteo_arrow._hex(column(field), 3)
        want = line_reader(cat=field)
        assert (got is None) == (want is None), field
        if got is not None:
            assert got[0].tolist() == ([] if field == "" else [want[1]]), field
            assert got[2].tolist() == [0, 0, int(field != ""), int(field != "")], field
    for field in ("0", "1", "2", "", "01", "-1", " 1"):
        got = criteo_arrow._label(pa.chunked_array([pa.array([b"1", field.encode()])]), 2)
        want = line_reader(label=field)
        assert (got is None) == (want is None), field
        if got is not None:
            assert got.tolist() == [1, int(field)], field
    chunks = pa.chunked_array([pa.array([b"1"]), pa.array([b"0", b"1"])])
    assert criteo_arrow._label(chunks, 3).tolist() == [1, 0, 1]


def test_segments_end_after_the_last_newline_however_far_back():
    pytest.importorskip("pyarrow")
    from corun.backend.criteo_arrow import _after_last_newline

    def after(text, window):
        return _after_last_newline(np.frombuffer(text, np.uint8), window)

    assert [after(b"ab\ncdefg", w) for w in (1, 2, 3, 100)] == [3, 3, 3, 3]
    assert after(b"\n", 1) == 1 and after(b"abc", 2) == 0 and after(b"", 4) == 0
