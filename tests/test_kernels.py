"""Every op, plain and in fused groups, equals the NumPy reference through the Numba CPU
kernels and the CUDA simulator (NUMBA_ENABLE_CUDASIM=1, set in conftest)."""

from dataclasses import replace

import numpy as np
import pytest
from corun.backend import chains as backend_chains
from corun.backend.columns import ColumnData
from corun.backend.data import synthetic_inputs
from corun.backend.fusion import FusedGroup
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corun import spec
from tests.opkit import (
    FLOAT_SCALAR_NULL,
    INT_LIST_NULL,
    OpKind,
    OpNode,
    compare_all,
    list_column,
    pipeline_of,
)

I64 = st.integers(-(2**63), 2**63 - 1)
SMALL = st.integers(-20, 40)
FLOATS = st.floats(width=32, allow_nan=True, allow_infinity=True)
BORDERS = [0.5, 1.0, 1.0, 1.5, 16.0]
SETTINGS = settings(max_examples=20, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# (op, params) for list ops on int64 lists, each after fill_null
LIST_OPS = [
    (OpKind.SIGRID_HASH, {"salt": 3, "max_value": 1000}),
    (OpKind.SIGRID_HASH, {"salt": -(2**40), "max_value": 1}),
    (OpKind.BUCKETIZE, {"borders": BORDERS}),
    (OpKind.CLAMP_LIST, {"lo": -3, "hi": 16}),
    (OpKind.FIRSTX, {"x": 2}),
    (OpKind.FIRSTX, {"x": 0}),
    (OpKind.ONEHOT, {"low": 0, "high": 16, "num_classes": 5}),
    (OpKind.NGRAM, {"n": 3}),
    (OpKind.MAPID, {"map": [5, -7, 9, 2**62]}),
    (OpKind.CAST, {"to": "float32"}),
]
SCALAR_OPS = [
    (OpKind.LOGIT, {"eps": 1e-5}),
    (OpKind.BOXCOX, {"lambda": 1e-5}),
    (OpKind.BOXCOX, {"lambda": 0.0}),
    (OpKind.BOXCOX, {"lambda": -0.5}),
    (OpKind.CLAMP, {"lo": 0.5, "hi": 2.0}),
    (OpKind.CLAMP, {"lo": 3.0, "hi": 1.0}),
    (OpKind.BUCKETIZE, {"borders": BORDERS}),
    (OpKind.ONEHOT, {"low": -1.0, "high": 1.0, "num_classes": 4}),
    (OpKind.CAST, {"to": "int64"}),
]


def _list_op_pipeline(op, params):
    fill = OpNode("f", OpKind.FILL_NULL, "x", {"value": 7})
    node = OpNode("n", op, "f", params)
    tail = []
    if op is OpKind.CAST:  # float lists are not a pipeline output: bring it back to int
        tail = [OpNode("back", OpKind.CAST, "n", {"to": "int64"})]
    out = tail[-1].name if tail else "n"
    return pipeline_of([fill, node] + tail, INT_LIST_NULL, [out])


def _scalar_op_pipeline(op, params):
    fill = OpNode("f", OpKind.FILL_NULL, "x", {"value": 0.25})
    node = OpNode("n", op, "f", params)
    return pipeline_of([fill, node], FLOAT_SCALAR_NULL, ["n"])


lists = st.lists(st.lists(st.one_of(SMALL, I64), max_size=7), min_size=1, max_size=24)


@pytest.mark.parametrize("op, params", LIST_OPS, ids=lambda x: str(x)[:40])
@SETTINGS
@given(data=lists, nulls=st.lists(st.booleans(), min_size=24, max_size=24))
def test_list_op(op, params, data, nulls):
    p = _list_op_pipeline(op, params)
    col = list_column(data, valid=[not n for n in nulls[: len(data)]])
    order = list(p.order)
    # fused chain: fill_null -> op (-> cast); tile by tile on CUDA where the op sets the
    # lists' lengths (the tiled kernels' own part; values are the three steps' code)
    scan = {OpKind.FIRSTX: "lookback", OpKind.NGRAM: "lookback", OpKind.ONEHOT: "tiles"}
    compare_all(p, {"x": col}, [order], list_scan=scan.get(op, "rows"))
    compare_all(p, {"x": col}, [[n] for n in order])  # one plain kernel per op


@pytest.mark.parametrize("op, params", SCALAR_OPS, ids=lambda x: str(x)[:40])
@SETTINGS
@given(values=st.lists(st.one_of(FLOATS, st.sampled_from(BORDERS + [1e-5, 1 - 1e-5, -1.0])),
                       min_size=1, max_size=30),
       nulls=st.lists(st.booleans(), min_size=30, max_size=30))
def test_scalar_op(op, params, values, nulls):
    p = _scalar_op_pipeline(op, params)
    valid = np.array([not n for n in nulls[: len(values)]])
    col = ColumnData(np.array(values, np.float32), None, valid)
    compare_all(p, {"x": col}, [list(p.order)])
    compare_all(p, {"x": col}, [[n] for n in p.order])


@pytest.mark.parametrize("division", ["magic", "mod"])
def test_dependent_chain_keeps_intermediates_in_registers(division):
    """fill_null -> sigrid_hash -> firstx fused: one sink, nothing else materialised."""
    p = pipeline_of([OpNode("f", OpKind.FILL_NULL, "x", {"value": 0}),
                     OpNode("h", OpKind.SIGRID_HASH, "f", {"salt": 0, "max_value": 50}),
                     OpNode("o", OpKind.FIRSTX, "h", {"x": 1})], INT_LIST_NULL, ["o"])
    g = FusedGroup(p, p.order)
    assert [c.sink for c in g.chains] == ["o"] and len(g.chains[0].nodes) == 3
    rng = np.random.default_rng(1)
    data = [list(rng.integers(-5, 5, rng.integers(0, 4))) for _ in range(200)]
    compare_all(p, {"x": list_column(data, valid=list(rng.random(200) > 0.3))}, [p.order],
                division=division)


@pytest.mark.parametrize("name", ["kaggle", "wide-2x", "multihot"])
def test_preset_pipelines_fused_and_split(name):
    """Mixed op types in one kernel; and the pipeline split into several groups."""
    p = spec.pipeline_preset(name)
    rng = np.random.default_rng(7)
    inputs = synthetic_inputs(p, 120, rng, vary_lengths=True)
    # kaggle's lists are one id long (Pipeline.fixed_lengths): asked to, it runs the one-pass
    # scan of lists of any length; split below, its offsets come from the values kernel
    compare_all(p, inputs, [list(p.order)], blocks=5, threads=16,
                list_scan="lookback" if name == "kaggle" else "rows",
                fixed_offsets=name != "kaggle")
    # split: every fill_null in a first group, the rest in a second (intermediates in memory)
    fills = [n for n in p.order if n.startswith("fill_")]
    rest = [n for n in p.order if not n.startswith("fill_")]
    compare_all(p, inputs, [fills, rest], blocks=2, threads=32)


def test_heavy_rehash_hashes_each_id_twice_in_one_kernel():
    """`heavy-rehash`: ngram -> sigrid_hash into 2^40 ids -> sigrid_hash into the table's
    buckets -> firstx, fused, equals the reference (a few rows: 100 ids a list)."""
    p = spec.pipeline_preset("heavy-rehash")
    rehash = [n for n in p.nodes if n.name.startswith("rehash_")]
    assert len(rehash) == 26 and all(n.input.startswith("hash_") for n in rehash)
    inputs = synthetic_inputs(p, 6, np.random.default_rng(3), vary_lengths=True)
    compare_all(p, inputs, [list(p.order)], blocks=3, threads=32)


def test_kernel_cache_shared_by_same_shape():
    p = spec.pipeline_preset("kaggle")
    a = FusedGroup(p, ["fill_cat_0", "hash_cat_0", "first_cat_0"])
    b = FusedGroup(p, ["fill_cat_5", "hash_cat_5", "first_cat_5"])
    assert a.signatures == b.signatures
    assert a.kernel("values", "cpu") is b.kernel("values", "cpu")
    assert not np.array_equal(a.ipar, b.ipar)  # different max_value, same kernel


def test_occupancy_from_registers():
    gpu = spec.GPU_KINDS["h200"]
    assert gpu.occupancy(132 * 8, 256, 32) == 1.0
    assert gpu.occupancy(132 * 8, 256, 64) == 0.5  # 64 regs: 1024 threads per SM
    assert gpu.occupancy(66, 256, 32) == pytest.approx(66 * 256 / (132 * 2048))


def test_warp_per_row_mapping_when_enabled(monkeypatch):
    """A warp per row only where asked (warp_rows) and only for long sinks; correct."""

    def warp_slots(g: FusedGroup) -> set[str]:
        return {c.sink for c, i in zip(g.chains, g.slot_sig) if g.signatures[i][6] == 32}

    p = spec.pipeline_preset("multihot")
    assert not warp_slots(FusedGroup(p, p.order, warp_rows=False))
    long = warp_slots(FusedGroup(p, p.order))
    assert long == set(p.warp_sinks(p.order)) == {"first_cat_20", "first_cat_21"}  # 100, 27
    monkeypatch.setattr(backend_chains, "WARP_ROW_MIN_LENGTH", 4.0)
    g = FusedGroup(p, p.order, warp_rows=True)
    assert len(warp_slots(g)) > 2
    inputs = synthetic_inputs(p, 30, np.random.default_rng(3), vary_lengths=True)
    compare_all(p, inputs, [list(p.order)], blocks=3, threads=64, warp_rows=True,
                list_scan="lookback")  # "tiles" writes its rows with the same code
    compare_all(p, inputs, [list(p.order)], blocks=3, threads=64, warp_rows=False)


def test_short_lists_split_over_lanes():
    """short_lanes splits a short list's row over up to that many lanes, the largest power
    of two no longer than its mean; scalars stay a thread a row, long lists a warp; the
    three-step and one-pass kernels stay exact, unrolled too."""
    p = spec.pipeline_preset("multihot")

    def lanes(g: FusedGroup) -> dict[str, int]:
        return {c.sink: g.signatures[i][6] for c, i in zip(g.chains, g.slot_sig)}

    cols = p.columns
    got = lanes(FusedGroup(p, p.order, short_lanes=4))
    assert got["first_cat_20"] == got["first_cat_21"] == 32
    for sink, n in got.items():
        mean = cols[sink].mean_length
        if cols[sink].shape is not spec.Shape.LIST:
            assert n == 1, sink
        elif sink not in ("first_cat_20", "first_cat_21"):
            assert n == min(4, 1 << int(np.log2(mean))), (sink, mean, n)
    assert set(got.values()) >= {1, 2, 4, 32}
    assert set(lanes(FusedGroup(p, p.order)).values()) == {1, 32}
    assert set(lanes(FusedGroup(p, p.order, threads_per_block=48, short_lanes=8)).values()) \
        == {1}  # lanes share a row only inside whole warps
    with pytest.raises(ValueError, match="short_lanes = 3: one of 1, 2, 4"):
        FusedGroup(p, p.order, short_lanes=3)
    inputs = synthetic_inputs(p, 30, np.random.default_rng(5), vary_lengths=True)
    compare_all(p, inputs, [list(p.order)], blocks=3, threads=64, short_lanes=8, unroll=2)
    compare_all(p, inputs, [list(p.order)], blocks=3, threads=64, short_lanes=4,
                list_scan="lookback")


@pytest.mark.parametrize("n, before, after", [(3, 9, 100), (1, 9, 4), (2, 3, 5), (5, 9, 7)])
@settings(SETTINGS, max_examples=5)
@given(data=st.lists(st.lists(st.one_of(SMALL, I64), max_size=12), min_size=1, max_size=24),
       nulls=st.lists(st.booleans(), min_size=24, max_size=24))
def test_ngram_values_once_per_source(n, before, after, data, nulls):
    """source_first computes each element of an ngram's input once and stores it in every
    window that holds it: exact for lists shorter than n, empty and null lists, a firstx
    before the ngram and one after it that cuts a window, a thread or a warp a row, the
    three steps and the one-pass kernel."""
    nodes = [OpNode("f", OpKind.FILL_NULL, "x", {"value": 7}),
             OpNode("a", OpKind.FIRSTX, "f", {"x": before}),
             OpNode("g", OpKind.NGRAM, "a", {"n": n}),
             OpNode("h", OpKind.SIGRID_HASH, "g", {"salt": 3, "max_value": 1000}),
             OpNode("o", OpKind.FIRSTX, "h", {"x": after})]
    col = list_column(data, valid=[not x for x in nulls[: len(data)]])
    for source in (INT_LIST_NULL, replace(INT_LIST_NULL, mean_length=40.0)):  # thread, warp
        p = pipeline_of(nodes, source, ["o"])
        assert FusedGroup(p, p.order, source_first=True).signatures[0][8]
        compare_all(p, {"x": col}, [list(p.order)], threads=64, source_first=True)
        compare_all(p, {"x": col}, [list(p.order)], threads=64, source_first=True,
                    list_scan="lookback")


def test_source_first_takes_only_chains_with_one_ngram_and_no_onehot():
    """The heavy pipelines' list chains compute values once per source with source_first
    (and stay exact, a warp or 8 lanes a row); dense chains, and a onehot's chain, whose
    values depend on their position, are untouched; off by default."""
    for name in ("heavy", "heavy-rehash"):
        p = spec.pipeline_preset(name)
        g = FusedGroup(p, p.order, source_first=True)
        flags = {c.sink: g.signatures[i][8] for c, i in zip(g.chains, g.slot_sig)}
        assert all(flags[s] == (p.columns[s].shape is spec.Shape.LIST) for s in flags)
        assert sorted(s for s in flags if flags[s]) == sorted(p.source_first_sinks(p.order))
        assert not any(s[8] for s in FusedGroup(p, p.order).signatures)
        inputs = synthetic_inputs(p, 12, np.random.default_rng(3), vary_lengths=True)
        compare_all(p, inputs, [list(p.order)], blocks=3, threads=64, source_first=True)
        # a row's sources over 8 lanes, not a warp (bench variant fused-src-thread-lanes8)
        compare_all(p, inputs, [list(p.order)], blocks=3, threads=64, source_first=True,
                    warp_rows=False, short_lanes=8)
    wide = spec.pipeline_preset("wide-2x")  # onehot -> ngram(4) -> firstx
    assert not any(s[8] for s in FusedGroup(wide, wide.order, source_first=True).signatures)
    assert wide.source_first_sinks(wide.order) == []  # the rule plans and profiles read


def test_blocks_follow_work():
    p = spec.pipeline_preset("multihot")
    g = FusedGroup(p, p.order, blocks=1000)
    heavy = [i for i, c in enumerate(g.chains) if c.sink == "first_cat_20"][0]
    light = [i for i, c in enumerate(g.chains) if c.sink == "first_cat_2"][0]
    block_slot, first, count = g.block_maps["values"]
    assert count[heavy] > 20 * count[light] >= 20
    assert g.grid("values") == count.sum() == len(block_slot)
    assert (np.diff(block_slot) >= 0).all() and (first == np.cumsum(count) - count).all()
    _, _, even = g.block_maps["lengths"]
    assert even.max() - even.min() <= 1  # the lengths pass costs the same in every slot


def test_slot_constants_read_once_before_the_row_loop():
    """Every operator parameter and descriptor is read into a local before a slot's row
    loop; inside it only per-row data is read."""
    from corun.backend.codegen import SLOT_CONSTANT, kernel_source

    p = spec.pipeline_preset("heavy")
    g = FusedGroup(p, tuple(p.order), warp_rows=True)
    for part, target in (("values", "cuda"), ("lengths", "cpu")):
        src = kernel_source(list(g.signatures), part, target, "k")
        loops = src.split("for r in ")
        assert len(loops) == 3  # one row loop per signature
        assert all(not SLOT_CONSTANT.search(body.split("elif sig")[0])
                   for body in loops[1:])
        assert "s1_ipar4 = ipar[slot, 4]" in loops[1]  # ngram's n, for the second slot


@pytest.mark.parametrize("j,n,length", [(0, 3, 50), (143, 3, 50), (7, 9, 5), (99, 1, 100),
                                        ((1 << 32) - 1, 7, 1 << 40), ((1 << 33) + 5, 3, 1 << 40)])
def test_ngram_source_in_32_bits_and_beyond(j, n, length):
    from corun.backend.scalar import ngram_source
    from numba import njit

    m = min(n, length)
    compiled = njit(lambda j, n, length: ngram_source(j, n, length))
    assert ngram_source(j, n, length) == compiled(j, n, length) == j // m + j % m


def test_register_cap_compiles_a_kernel_of_its_own():
    """FusedGroup.max_registers keys the values kernel apart (the simulator ignores the cap
    itself); the lengths kernel is shared."""
    p = spec.pipeline_preset("heavy")
    plain = FusedGroup(p, tuple(p.order))
    capped = FusedGroup(p, tuple(p.order), max_registers=32)
    assert plain.kernel("values", "cuda") is not capped.kernel("values", "cuda")
    assert plain.kernel("lengths", "cuda") is capped.kernel("lengths", "cuda")


# pairwise, not every combination: each pipeline at both unrolls and both row mappings
# (the simulator takes 3-6 s a case on a 2-core runner)
@pytest.mark.parametrize("name, rows, unroll, warp_rows", [
    ("multihot", 70, 2, True), ("multihot", 70, 3, False),
    ("heavy-small", 12, 2, False), ("heavy-small", 12, 3, True)])
def test_unrolled_values_kernel_equals_reference(monkeypatch, name, rows, unroll, warp_rows):
    """Elements computed side by side (FusedGroup.unroll) give the reference's values on
    lists of every length, including those shorter than one unrolled pass and those
    whose last pass is partial, a thread or a warp per row."""

    monkeypatch.setattr(backend_chains, "WARP_ROW_MIN_LENGTH", 4.0)
    p = spec.pipeline_preset(name)
    inputs = synthetic_inputs(p, rows, np.random.default_rng(5), vary_lengths=True)
    compare_all(p, inputs, [list(p.order)], blocks=3, threads=64, warp_rows=warp_rows,
                unroll=unroll)
    src = FusedGroup(p, p.order, warp_rows=warp_rows, unroll=unroll).kernel("values", "cuda")
    assert src is not FusedGroup(p, p.order, warp_rows=warp_rows).kernel("values", "cuda")


def test_kernel_knobs_out_of_range_are_errors():
    p = spec.pipeline_preset("kaggle")
    with pytest.raises(ValueError, match="unroll = 0: an integer in 1..8"):
        FusedGroup(p, p.order, unroll=0)
    with pytest.raises(ValueError, match="list_scan = 'once': one of rows, lookback, tiles"):
        FusedGroup(p, p.order, list_scan="once")


def _tile_case():
    """Two list sinks over 150 rows of every length, nulls and empty lists among them."""
    p = pipeline_of([OpNode("f", OpKind.FILL_NULL, "x", {"value": 3}),
                     OpNode("g", OpKind.NGRAM, "f", {"n": 2}),
                     OpNode("h", OpKind.SIGRID_HASH, "g", {"salt": 1, "max_value": 97}),
                     OpNode("o", OpKind.FIRSTX, "h", {"x": 4}),
                     OpNode("c", OpKind.CLAMP_LIST, "f", {"lo": -3, "hi": 9})],
                    INT_LIST_NULL, ["o", "c"])
    rng = np.random.default_rng(11)
    data = [list(rng.integers(-9, 9, rng.integers(0, 7))) for _ in range(150)]
    return p, {"x": list_column(data, valid=list(rng.random(150) > 0.2))}


@pytest.mark.parametrize("scan", ["lookback", "tiles"])
def test_tiled_kernels_across_many_tiles_and_launches(scan):
    """Tiles of 8 rows, 19 a slot. 'lookback', one launch: each tile's offsets start where
    its slot's earlier tiles end, and the last block out leaves the counters zeroed and
    the epoch moved on. 'tiles': per slot the 19 totals scanned to where each tile
    starts, the last entry every output element of the slot. Either way a second launch
    over the same state gives the same outputs."""
    from corun.backend.columns import equal
    from corun.backend.runner import PipelineProgram, run_numpy

    p, inputs = _tile_case()
    group = FusedGroup(p, p.order, "g", blocks=3, threads_per_block=8, list_scan=scan,
                       tile_rows=8)
    parts, launches = {"lookback": (("single",), 1), "tiles": (("totals", "tiles"), 4)}[scan]
    assert group.parts("cuda") == parts and group.launches("cuda") == launches
    assert group.parts("cpu") == ("lengths", "values") and group.launches("cpu") == 4
    program = PipelineProgram(p, [group], inputs)
    ref = run_numpy(p, inputs)
    for launch in (1, 2):
        got = program.run_cuda_simulated()
        for name in ("o", "c"):
            ok, row = equal(ref[name], got[name])
            assert ok, f"launch {launch}, {name}: row {row}"
        state = program.tile_state(0)
        if scan == "lookback":
            assert state[0] == state[1] == 0 and state[2] == launch
            assert len(state) == 3 + 2 * 19  # two slots of 150 / 8 -> 19 tiles
        else:
            regions = state.reshape(2, 19 + 1)
            assert (regions[:, 0] == 0).all() and (np.diff(regions, axis=1) >= 0).all()
            sinks = [c.sink for c in group.chains]
            assert regions[:, -1].tolist() == [len(ref[s].values) for s in sinks]


def _fixed_case(rows: int = 40):
    """Lists of exactly three ids, or null: fill_null makes null rows one id long, so
    ngram(2) -> firstx(2) gives two values a row only through onehot; the clamp keeps
    its input's lengths, which vary."""
    x = spec.Column("x", spec.DType.INT64, spec.Shape.LIST, nullable=True, length_range=(3, 3))
    p = pipeline_of([OpNode("f", OpKind.FILL_NULL, "x", {"value": 7}),
                     OpNode("h", OpKind.SIGRID_HASH, "f", {"salt": 5, "max_value": 97}),
                     OpNode("o", OpKind.ONEHOT, "h", {"low": 0, "high": 97, "num_classes": 6}),
                     OpNode("g", OpKind.NGRAM, "o", {"n": 4}),
                     OpNode("t", OpKind.FIRSTX, "g", {"x": 5}),
                     OpNode("c", OpKind.CLAMP_LIST, "f", {"lo": -3, "hi": 9})],
                    x, ["t", "c"])
    rng = np.random.default_rng(13)
    valid = list(rng.random(rows) > 0.3)
    data = [list(rng.integers(-9, 9, 3)) for _ in range(rows)]
    return p, {"x": list_column(data, valid=valid)}


def test_fixed_length_lists_get_offsets_from_the_values_kernel(monkeypatch):
    """A group whose lists all have one length (Pipeline.fixed_lengths) runs its values
    kernel alone, which writes the offsets; a group with a list of varying length runs
    the lengths kernel and the scan for all of them. Both equal the reference, a thread
    or a warp per row."""
    p, inputs = _fixed_case()
    assert p.fixed_lengths == {"o": 6, "g": 12, "t": 5}  # f and c: one id where null, else 3
    fixed = FusedGroup(p, ["h", "o", "g", "t"], "t")
    assert fixed.parts("cuda") == fixed.parts("cpu") == ("values",)
    assert fixed.launches("cuda") == 1 and not fixed.has_lists
    off = FusedGroup(p, ["h", "o", "g", "t"], "t", fixed_offsets=False)
    assert off.parts("cuda") == ("lengths", "values") and off.launches("cuda") == 4
    mixed = FusedGroup(p, ["f", "h", "o", "g", "t", "c"], "all")
    assert mixed.has_lists and not p.offsets_fixed(mixed.nodes)
    compare_all(p, inputs, [["f", "c"], ["h", "o", "g", "t"]], blocks=3, threads=32)
    compare_all(p, inputs, [list(p.order)], blocks=3, threads=32)
    monkeypatch.setattr(backend_chains, "WARP_ROW_MIN_LENGTH", 4.0)
    compare_all(p, inputs, [["f", "c"], ["h", "o", "g", "t"]], blocks=3, threads=64,
                warp_rows=True)


def test_lists_longer_or_shorter_than_declared_are_refused():
    """A non-null row whose length its column does not declare is an error naming the
    column, the row and the allowed lengths; null rows hold none and pass."""
    from corun.backend.runner import PipelineProgram
    from corun.spec import SpecError

    p, _ = _fixed_case()
    bad = list_column([[1, 2, 3], [], [4, 5]], valid=[True, False, True])
    with pytest.raises(SpecError, match=r"column 'x' row 2: length = 2: within its "
                                        r"length_range \[3, 3\] \(1 rows are not\)"):
        PipelineProgram(p, [FusedGroup(p, p.order)], {"x": bad})
    hist = spec.Column("x", spec.DType.INT64, spec.Shape.LIST, nullable=False,
                       length_histogram=((1, 0.5), (4, 0.5)))
    with pytest.raises(SpecError, match=r"row 1: length = 2: one of its length_histogram's "
                                        r"lengths \[1, 4\]"):
        list_column([[1], [1, 2]]).check(hist, "x")
    list_column([[1], [1, 2, 3, 4]]).check(hist, "x")
