"""Random chains of ops with random valid parameters: the Numba CPU kernels, fused and one
op a kernel, equal the NumPy reference (OPS.md: identical integers, float32 within 1
ulp, on any valid input). test_kernels.py fixes each op's parameters; here they vary
over their whole valid range. The CPU kernels come from the same generated source as the
CUDA ones (backend/codegen.py), which test_kernels.py runs through the simulator. Run
with more examples (max_examples=400, five seeds, 2026-12-01) it found no difference."""

import numpy as np
from corun.backend.columns import ColumnData, equal
from corun.backend.fusion import FusedGroup
from corun.backend.runner import PipelineProgram, run_numpy
from corun.spec import SpecError
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.opkit import FLOAT_SCALAR_NULL, INT_LIST_NULL, OpKind, OpNode, list_column, pipeline_of

I64 = st.integers(-(2**63), 2**63 - 1)
NEAR = st.integers(-40, 40)  # values near the borders, bounds and classes below
FINITE = st.floats(-1e6, 1e6, width=32)
ANY_FLOAT = st.floats(width=32, allow_nan=True, allow_infinity=True)
SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _bounds(draw, values):
    lo, hi = sorted((draw(values), draw(values)))
    return lo, hi


@st.composite
def op_params(draw, on_floats: bool) -> tuple[OpKind, dict]:
    """One op and valid parameters for a column of floats or of integers."""
    kinds = [OpKind.SIGRID_HASH, OpKind.BUCKETIZE, OpKind.CLAMP_LIST, OpKind.FIRSTX,
             OpKind.ONEHOT, OpKind.NGRAM, OpKind.MAPID]
    if on_floats:
        kinds = [OpKind.LOGIT, OpKind.BOXCOX, OpKind.CLAMP, OpKind.BUCKETIZE, OpKind.ONEHOT,
                 OpKind.CAST]
    op = draw(st.sampled_from(kinds))
    if op is OpKind.SIGRID_HASH:
        m = draw(st.one_of(st.integers(1, 100), st.integers(1, 2**63 - 1)))
        return op, {"salt": draw(I64), "max_value": m}
    if op is OpKind.BUCKETIZE:
        borders = sorted(draw(st.lists(st.one_of(FINITE, NEAR), min_size=1, max_size=8)))
        return op, {"borders": borders}
    if op in (OpKind.CLAMP, OpKind.CLAMP_LIST):
        if on_floats:
            return op, {"lo": draw(FINITE), "hi": draw(FINITE)}  # lo > hi yields hi
        lo, hi = _bounds(draw, st.one_of(NEAR, I64))
        return op, {"lo": lo, "hi": hi}
    if op is OpKind.FIRSTX:
        return op, {"x": draw(st.integers(-3, 10))}
    if op is OpKind.ONEHOT:
        low, high = _bounds(draw, st.one_of(FINITE, NEAR))
        assume(low < high)
        return op, {"low": low, "high": high, "num_classes": draw(st.integers(1, 8))}
    if op is OpKind.NGRAM:
        return op, {"n": draw(st.integers(1, 6))}
    if op is OpKind.MAPID:
        return op, {"map": draw(st.lists(st.one_of(NEAR, I64), min_size=1, max_size=6))}
    if op is OpKind.LOGIT:
        return op, {"eps": draw(st.floats(1e-7, 0.499))}
    if op is OpKind.BOXCOX:
        return op, {"lambda": draw(st.one_of(st.just(0.0), st.floats(-3, 3)))}
    return op, {"to": "int64"}  # CAST: a float scalar to an int64 id


def _chain(source, fill, ops) -> object:
    nodes = [OpNode("n0", OpKind.FILL_NULL, "x", {"value": fill})]
    for k, (op, params) in enumerate(ops, start=1):
        nodes.append(OpNode(f"n{k}", op, f"n{k - 1}", params))
    try:
        return pipeline_of(nodes, source, [nodes[-1].name])
    except SpecError:  # a valid op, but not on what the op before wrote (mapid on int32)
        assume(False)


def _compare(p, inputs) -> None:
    ref = run_numpy(p, inputs)
    for groups in ([list(p.order)], [[n] for n in p.order]):
        got = PipelineProgram(p, [FusedGroup(p, g, f"g{i}", 2, 8) for i, g in
                                  enumerate(groups)], inputs).run_cpu()
        for name, col in got.items():
            ok, row = equal(ref[name], col)
            assert ok, (f"{p.nodes}: {name} row {row}: ref {ref[name].row(row)} "
                        f"got {col.row(row)}")


@SETTINGS
@given(ops=st.lists(op_params(on_floats=False), min_size=1, max_size=3), fill=I64,
       data=st.lists(st.lists(st.one_of(NEAR, I64), max_size=7), min_size=1, max_size=16),
       nulls=st.lists(st.booleans(), min_size=16, max_size=16))
def test_int_list_chains(ops, fill, data, nulls):
    p = _chain(INT_LIST_NULL, fill, ops)
    _compare(p, {"x": list_column(data, valid=[not n for n in nulls[: len(data)]])})


@SETTINGS
@given(ops=st.lists(op_params(on_floats=True), min_size=1, max_size=2),
       fill=st.one_of(FINITE, NEAR), values=st.lists(st.one_of(ANY_FLOAT, NEAR), min_size=1,
                                                     max_size=16),
       nulls=st.lists(st.booleans(), min_size=16, max_size=16))
def test_float_scalar_chains(ops, fill, values, nulls):
    p = _chain(FLOAT_SCALAR_NULL, float(fill), ops)
    valid = np.array([not n for n in nulls[: len(values)]])
    _compare(p, {"x": ColumnData(np.array(values, np.float32), None, valid)})
