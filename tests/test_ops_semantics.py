"""OPS.md's examples and test vectors, on the reference and the jitable scalar code."""

import numpy as np
import pytest
from corun.backend import reference as R
from corun.backend import scalar
from corun.backend.columns import ColumnData
from corun.spec import OpKind

from tests.opkit import list_column

SIGRID_VECTOR = [6, 60, 54, 54, 9, 4, 91, 11, 67, 79, 2, 25, 92, 98, 83, 66]


def test_sigrid_hash_vectors():
    assert list(R.sigrid_hash_ref(np.arange(16), 0, 100)) == SIGRID_VECTOR
    assert [int(scalar.sigrid_hash(i, 0, 100)) for i in range(16)] == SIGRID_VECTOR


def test_sigrid_hash_edges():
    x = np.array([0, -1, 2**63 - 1, -(2**63), 12345], np.int64)
    for salt, m in [(0, 1), (7, 2), (-3, 10**9), (2**62, 2**63 - 1)]:
        ref = R.sigrid_hash_ref(x, salt, m)
        assert ((ref >= 0) & (ref < m)).all()
        assert [int(scalar.sigrid_hash(v, salt, m)) for v in x] == list(ref)
    assert list(R.sigrid_hash_ref(x, 5, 1)) == [0] * 5
    # int32 input is sign-extended first
    assert list(R.sigrid_hash_ref(np.array([-5], np.int32), 0, 100)) == \
        list(R.sigrid_hash_ref(np.array([-5], np.int64), 0, 100))


def test_bucketize_example_and_rules():
    v = np.array([1, 2, 3, 5, 8, 10, 11], np.float32)
    assert list(R.bucketize_ref(v, [2, 5, 10])) == [0, 0, 1, 1, 2, 2, 3]
    b = np.array([2.0, 5.0, 10.0])
    assert [int(scalar.bucketize(float(x), b, 0, 3)) for x in v] == [0, 0, 1, 1, 2, 2, 3]
    # repeated borders, Velox's rule; NaN -> 1 when n >= 2 else 0
    rep = [1.0, 2.0, 2.0, 3.0]
    vals = np.array([0.5, 1.0, 2.0, 2.5, 3.0, 4.0, np.nan], np.float32)
    ref = list(R.bucketize_ref(vals, rep))
    assert ref == [0, 0, 2, 3, 3, 4, 1]
    assert [int(scalar.bucketize(float(x), np.array(rep), 0, 4)) for x in vals] == ref
    assert list(R.bucketize_ref(np.array([np.nan], np.float32), [1.0])) == [0]


def test_onehot_example():
    v = np.array([-4, 3.19, 3.2, 15.99, 16, np.nan], np.float32)
    assert list(R.onehot_class_ref(v, 0, 16, 5)) == [0, 0, 1, 4, 0, 0]
    assert [int(scalar.onehot_class(x, 0.0, 16.0, 5)) for x in v] == [0, 0, 1, 4, 0, 0]
    out = R.apply_op(OpKind.ONEHOT, {"low": 0, "high": 16, "num_classes": 5},
                     list_column([[3], [], [16, 1]]))
    assert out.values.reshape(3, 5).tolist() == [[1, 0, 0, 0, 0], [1, 0, 0, 0, 0],
                                                 [1, 0, 0, 0, 0]]


def test_logit_ends_and_nan():
    v = np.array([0.0, 1e-6, 1.0, 0.9999999, np.nan, 0.5], np.float32)
    out = R.logit_ref(v, 1e-5)
    assert out[0] == out[1] == np.float32(-11.5129156)
    assert out[2] == out[3] == np.float32(11.5115585)
    assert np.isnan(out[4]) and out[5] == 0
    assert [scalar.logit(x, 1e-5) for x in v[:4]] == list(out[:4])


def test_boxcox():
    v = np.array([10.0, 0.0, -2.0, np.nan, 1.0], np.float32)
    out = R.boxcox_ref(v, 1e-5)
    assert out[0] == np.float32(2.30073929)
    assert out[1] == 0 and out[2] == -2 and np.isnan(out[3]) and out[4] == 0
    assert scalar.boxcox(np.float32(10.0), 1e-5) == np.float32(2.30073929)
    assert R.boxcox_ref(np.array([np.e], np.float32), 0.0)[0] == pytest.approx(1.0, rel=1e-6)


def test_clamp_presto_semantics():
    v = np.array([-5, 0, 5, 20], np.int64)
    assert list(R.clamp_ref(v, 0, 16)) == [0, 0, 5, 16]
    assert list(R.clamp_ref(v, 10, 3)) == [3, 3, 3, 3]  # lo > hi yields hi
    f = np.array([np.nan, 1.5], np.float32)
    out = R.clamp_ref(f, 0, 1)
    assert np.isnan(out[0]) and out[1] == 1


def test_firstx_ngram_mapid_fill_null():
    col = list_column([[1, 2, 3, 4, 5], [], [7], [8, 9]])
    first = R.apply_op(OpKind.FIRSTX, {"x": 2}, col)
    assert [list(first.row(r)) for r in range(4)] == [[1, 2], [], [7], [8, 9]]
    assert R.apply_op(OpKind.FIRSTX, {"x": 0}, col).offsets.tolist() == [0, 0, 0, 0, 0]
    ng = R.apply_op(OpKind.NGRAM, {"n": 3}, col)
    assert list(ng.row(0)) == [1, 2, 3, 2, 3, 4, 3, 4, 5]
    assert list(ng.row(1)) == [] and list(ng.row(2)) == [7] and list(ng.row(3)) == [8, 9]
    m = R.apply_op(OpKind.MAPID, {"map": [10, 11, 12]},
                   ColumnData(np.array([-1, 0, 2, 3, 99], np.int64), np.array([0, 5])))
    assert list(m.values) == [0, 10, 12, 0, 0]
    nulls = list_column([[1], [2, 3], [4]], valid=[True, False, True])
    filled = R.apply_op(OpKind.FILL_NULL, {"value": 0}, nulls)
    assert [list(filled.row(r)) for r in range(3)] == [[1], [0], [4]]


@pytest.mark.parametrize("m", [2, 3, 7, 100, 1460, 65536, 10131227, 2**31 - 1, 2**40 + 17,
                               2**62 + 3, 2**63 - 1])
def test_multiply_shift_floor_mod_equals_percent(m):
    """Velox's multiply-and-shift floor-mod gives the same indices as a plain `%`."""
    x = np.random.default_rng(m % 1000).integers(-(2**63), 2**63 - 1, 400, dtype=np.int64)
    x[:3] = [0, -1, -(2**63)]
    magic, shift = scalar.division_magic(m)
    got = [int(scalar.sigrid_hash_magic(v, np.int64(9), m, np.int64(magic), shift)) for v in x]
    assert got == list(R.sigrid_hash_ref(x, 9, m))


def test_multiply_high_is_exact_interpreted_and_compiled():
    """umulhi64 as the simulator runs it (Python integers) and as the CPU target compiles
    it (32-bit halves) give the 128-bit product's high half, edge values included."""
    from numba import njit

    rng = np.random.default_rng(5)
    edge = [0, 1, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1]
    a = np.array(edge + rng.integers(0, 2**64 - 1, 200, dtype=np.uint64).tolist(), np.uint64)
    b = np.array(edge[::-1] + rng.integers(0, 2**64 - 1, 200, dtype=np.uint64).tolist(),
                 np.uint64)
    compiled = njit(lambda x, y: scalar.umulhi64(x, y))
    want = [(int(x) * int(y)) >> 64 for x, y in zip(a, b)]
    assert [int(scalar.umulhi64(x, y)) for x, y in zip(a, b)] == want
    assert [int(compiled(x, y)) for x, y in zip(a, b)] == want
