"""Feature groups and list-length spreads: a production-like pipeline in a few lines."""

import json

import numpy as np
import pytest
from corun.backend.data import synthetic_inputs
from corun.spec.feature_groups import expand_feature_groups
from corun.spec.pipeline import Column, DType, Shape
from corun.spec.serde import dumps, from_jsonable, loads, schema_tag

from corun import spec
from corun.cli import main

GROUP = {"prefix": "ad", "count": 200,
         "input": {"dtype": "int64", "shape": "list", "nullable": True,
                   "length_range": [20, 60]},
         "ops": [{"op": "fill_null", "params": {"value": 0}},
                 {"op": "sigrid_hash", "params": {"salt": 0, "max_value": 1000}},
                 {"op": "firstx", "params": {"x": 50}}],
         "output": "sparse"}


def test_a_group_of_200_list_features_in_a_few_lines():
    doc = {"name": "ads", "feature_groups": [GROUP, {
        "prefix": "num", "count": 3, "input": {"dtype": "float32", "shape": "scalar"},
        "ops": [{"op": "fill_null", "params": {"value": 0}},
                {"op": "logit", "params": {"eps": 1e-5}}], "output": "dense"}]}
    p = from_jsonable(spec.Pipeline, expand_feature_groups(doc), "pipeline")
    assert len(p.inputs) == 203 and len(p.nodes) == 606 and len(p.sparse_outputs) == 200
    assert p.dense_outputs == ("num_0_logit", "num_1_logit", "num_2_logit")
    assert p.sparse_outputs[7] == spec.SparseOutput("ad_7_firstx", "ad_7")
    cols = p.columns
    assert cols["ad_0"].mean_length == pytest.approx(40.0)
    # firstx(50) of lengths 20..60: the mean of min(L, 50), not min(mean, 50) = 40
    want = sum(min(n, 50) for n in range(20, 61)) / 41
    assert cols["ad_0_firstx"].mean_length == pytest.approx(want) and want < 40
    assert max(n for n, _ in cols["ad_0_firstx"].length_histogram) == 50
    again = loads(spec.Pipeline, dumps(p))  # a saved pipeline reads back the same
    assert again == p and again.columns["ad_0"].spread == cols["ad_0"].spread


def test_group_and_length_errors_name_the_field():
    bad = {**GROUP, "count": 0}
    with pytest.raises(spec.SpecError, match=r"feature_groups\[0\]\.count = 0"):
        expand_feature_groups({"name": "x", "feature_groups": [bad]})
    with pytest.raises(spec.SpecError, match=r"feature_groups\[0\]\.colour"):
        expand_feature_groups({"name": "x", "feature_groups": [{**GROUP, "colour": 1}]})
    with pytest.raises(spec.SpecError, match="length_range = \\(9, 3\\)"):
        Column("x", DType.INT64, Shape.LIST, length_range=(9, 3))
    with pytest.raises(spec.SpecError, match="mean_length = 7.0: the mean of its lengths, 2"):
        Column("x", DType.INT64, Shape.LIST, mean_length=7.0,
               length_histogram=((1, 1.0), (3, 1.0)))
    with pytest.raises(spec.SpecError, match="length_histogram.*only on a list column"):
        Column("x", DType.FLOAT32, Shape.SCALAR, length_histogram=((1, 1.0),))


def test_synthetic_lists_follow_the_declared_spread():
    p = from_jsonable(spec.Pipeline, expand_feature_groups(
        {"name": "ads", "feature_groups": [{**GROUP, "count": 2}]}), "pipeline")
    cols = synthetic_inputs(p, 20_000, np.random.default_rng(3), null_rate_max=0.0)
    lengths = np.diff(cols["ad_0"].offsets)
    assert lengths.min() == 20 and lengths.max() == 60 and len(set(lengths)) == 41
    assert lengths.mean() == pytest.approx(40, abs=0.3)


def test_simulate_takes_a_grouped_pipeline_file(tmp_path, capsys):
    pipe = tmp_path / "ads.json"
    pipe.write_text(json.dumps({"schema": schema_tag(spec.Pipeline), "name": "ads",
                                "feature_groups": [{**GROUP, "count": 8}, {
                                    "prefix": "num", "count": 2,
                                    "input": {"dtype": "float32", "shape": "scalar"},
                                    "ops": [{"op": "fill_null", "params": {"value": 0}}],
                                    "output": "dense"}]}))
    model = tmp_path / "ads-model.json"
    model.write_text(json.dumps({
        "embedding_bag_configs": [{"name": f"ad_{k}", "num_embeddings": 1000,
                                   "embedding_dim": 16, "pooling_factor": 44.3}
                                  for k in range(8)],
        "dense_in_features": 2, "dense_arch_layer_sizes": [64, 16],
        "over_arch_layer_sizes": [64, 1]}))
    assert main(["simulate", "--model", str(model), "--pipeline", str(pipe), "--strategy",
                 "gpu-sequential", "--iterations", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pipeline"] == "ads"
