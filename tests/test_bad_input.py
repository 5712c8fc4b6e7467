"""Bad input, generated: whatever a file or a line holds, corun either reads it or says
which field is wrong (SpecError, DataError) — never another exception, never a guess."""

from __future__ import annotations

import json

import pytest
from corun.backend.data import N_DENSE, N_SPARSE, DataError, read_criteo
from corun.spec import Hardware, Model, Pipeline, Plan, SpecError
from corun.spec.machine import MachineProfile
from corun.spec.serde import dumps, loads
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corun import spec

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63) | st.floats(allow_nan=True)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                max_size=4),
    max_leaves=20)
"""Any JSON value."""


def _mutations(doc: dict) -> st.SearchStrategy:
    """A spec document with one field, anywhere in it, replaced by any JSON value, or a
    field added or removed."""
    paths = []

    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                paths.append((*path, k))
                walk(v, (*path, k))
        elif isinstance(node, list):
            for i, v in enumerate(node[:3]):
                paths.append((*path, i))
                walk(v, (*path, i))

    walk(doc, ())

    def apply(choice):
        path, value, how = choice
        out = json.loads(json.dumps(doc))
        node = out
        for key in path[:-1]:
            node = node[key]
        if how == "drop" and isinstance(node, dict):
            node.pop(path[-1], None)
        elif how == "add" and isinstance(node, dict):
            node["an_unknown_field"] = value
        else:
            node[path[-1]] = value
        return out

    return st.tuples(st.sampled_from(paths), JSON,
                     st.sampled_from(["set", "drop", "add"])).map(apply)


def _documents() -> list[tuple[type, dict]]:
    pipeline = spec.pipeline_preset("kaggle")
    plan = spec.one_kernel_plan(pipeline, "criteo-kaggle", 1, "emb_fwd")
    from tests.test_calibrate import profile

    return [(Plan, dumps(plan)), (Model, dumps(spec.model_preset("criteo-kaggle"))),
            (Hardware, dumps(spec.hardware_preset("h100", 2))),
            (Pipeline, dumps(pipeline)), (MachineProfile, dumps(profile()))]


@pytest.mark.parametrize("cls,doc", _documents(), ids=lambda x: getattr(x, "__name__", ""))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_spec_file_is_read_or_refused_with_its_field(cls, doc, data):
    bad = data.draw(_mutations(doc))
    try:
        loads(cls, bad)
    except SpecError as e:
        assert e.field and str(e)
    except RecursionError:
        pytest.fail("a deep document raised RecursionError")


FIELD = st.one_of(st.text(alphabet="0123456789abcdefABCDEF-+x_ .e\t", max_size=12),
                  st.text(max_size=6))


@settings(max_examples=150, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(FIELD, min_size=1 + N_DENSE + N_SPARSE,
                         max_size=1 + N_DENSE + N_SPARSE), min_size=1, max_size=3),
       st.integers(0, 2))
def test_a_criteo_line_is_read_exactly_as_the_format_says_or_named(tmp_path_factory, lines,
                                                                  skip):
    """Both engines agree on every generated file: the same rows, or the same error
    naming the line and the column."""
    pytest.importorskip("pyarrow")
    path = tmp_path_factory.mktemp("crit") / "d.tsv"
    good = ["1", *["7"] * N_DENSE, *["0a0b0c0d"] * N_SPARSE]
    text = "\n".join("\t".join(x.replace("\t", " ").replace("\n", " ") for x in line)
                     for line in [good, *lines]) + "\n"
    path.write_text(text, encoding="utf-8")

    def read(engine):
        try:
            return [(c.first_line, c.labels.tolist(),
                     {k: v.values.tolist() for k, v in c.columns.items()})
                    for c in read_criteo(path, 2, bool(skip), engine=engine)]
        except DataError as e:
            assert e.line >= 1 and e.column
            return str(e)

    assert read("arrow") == read("python")
