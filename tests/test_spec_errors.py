"""Bad input gets an error naming the field, the value and the allowed range."""

import json
import re
from dataclasses import replace

import pytest
from corun.spec import Column, DType, OpKind, OpNode, Pipeline, Shape, SparseOutput, SpecError
from corun.spec.serde import dumps, load, loads

from corun import spec

INT_COL = Column("c", DType.INT64, Shape.LIST, nullable=False)
FLOAT_COL = Column("f", DType.FLOAT32, Shape.SCALAR, nullable=False)


def node_error(op, params, src=INT_COL):
    nodes = (OpNode("n", op, src.name, params),)
    return Pipeline("p", (src,), nodes, (), (SparseOutput("n", "t"),))


@pytest.mark.parametrize("op, params, field, allowed", [
    (OpKind.SIGRID_HASH, {"salt": 0, "max_value": 0}, "params.max_value", "max_value must be > 0"),
    (OpKind.SIGRID_HASH, {"salt": 0, "max_value": -5}, "params.max_value", ">= 1"),
    (OpKind.BUCKETIZE, {"borders": []}, "params.borders", "non-empty list"),
    (OpKind.BUCKETIZE, {"borders": [1.0, 0.5]}, "params.borders[1]", "non-decreasing"),
    (OpKind.BUCKETIZE, {"borders": [1.0, float("nan")]}, "params.borders[1]", "not NaN"),
    (OpKind.CLAMP_LIST, {"lo": 5, "hi": 1}, "params.lo", "<= hi = 1"),
    (OpKind.NGRAM, {"n": 0}, "params.n", "n <= 0 is an error"),
    (OpKind.ONEHOT, {"low": 0, "high": 16, "num_classes": 0}, "params.num_classes", "[1,"),
    (OpKind.ONEHOT, {"low": 3, "high": 3, "num_classes": 4}, "params.low", "< high = 3"),
    (OpKind.MAPID, {"map": []}, "params.map", "non-empty list"),
    (OpKind.SIGRID_HASH, {"salt": 0, "max_value": 10, "seed": 1}, "params.seed",
     "not a parameter of sigrid_hash"),
    (OpKind.CAST, {"to": "float16"}, "params.to", "'float32' or 'int64'"),
])
def test_bad_op_params(op, params, field, allowed):
    with pytest.raises(SpecError) as e:
        OpNode("n", op, "c", params)
    assert e.value.field == field
    assert allowed in e.value.allowed


@pytest.mark.parametrize("eps", [0.0, 0.5, -1e-5, 0.7])
def test_logit_eps_outside_open_interval(eps):
    with pytest.raises(SpecError, match=r"params.eps = .*: a number in \(0, 0.5\)"):
        OpNode("n", OpKind.LOGIT, "f", {"eps": eps})


def test_non_fill_null_op_seeing_nulls():
    nullable = Column("c", DType.INT64, Shape.LIST, nullable=True)
    with pytest.raises(SpecError, match="null-propagating; put fill_null first") as e:
        node_error(OpKind.SIGRID_HASH, {"salt": 0, "max_value": 10}, nullable)
    assert e.value.field == "nodes[0].input"


def test_cycle_rejected():
    nodes = (OpNode("a", OpKind.FIRSTX, "b", {"x": 1}), OpNode("b", OpKind.FIRSTX, "a", {"x": 1}))
    with pytest.raises(SpecError, match="an acyclic graph") as e:
        Pipeline("p", (INT_COL,), nodes, (), (SparseOutput("a", "t"),))
    assert "a -> b -> a" in str(e.value.value) or "b -> a -> b" in str(e.value.value)


def test_unknown_column():
    with pytest.raises(SpecError, match="nodes\\[0\\].input = 'nope': a raw input column"):
        Pipeline("p", (INT_COL,), (OpNode("n", OpKind.FIRSTX, "nope", {"x": 1}),), (),
                 (SparseOutput("n", "t"),))


def test_unknown_op_in_file(tmp_path):
    doc = dumps(spec.pipeline_preset("kaggle"))
    doc["nodes"][0]["op"] = "frobnicate"
    with pytest.raises(SpecError) as e:
        loads(Pipeline, json.loads(json.dumps(doc)))
    assert e.value.field == "pipeline.nodes[0].op"
    assert "'sigrid_hash'" in e.value.allowed


def test_sparse_output_feeding_no_table():
    nodes = (OpNode("h", OpKind.SIGRID_HASH, "c", {"salt": 0, "max_value": 10}),
             OpNode("dangling", OpKind.SIGRID_HASH, "c", {"salt": 0, "max_value": 10}))
    with pytest.raises(SpecError, match="a sparse output that feeds a table") as e:
        Pipeline("p", (INT_COL,), nodes, (), (SparseOutput("h", "t"),))
    assert e.value.value == "dangling"


def test_type_mismatch_logit_on_ints():
    with pytest.raises(SpecError, match="a float32 column for logit"):
        Pipeline("p", (INT_COL,), (OpNode("n", OpKind.LOGIT, "c", {"eps": 1e-5}),), ("n",), ())


def test_fill_value_not_castable_to_int():
    nullable = Column("c", DType.INT64, Shape.LIST, nullable=True)
    with pytest.raises(SpecError, match=r"castable to int64"):
        node_error(OpKind.FILL_NULL, {"value": 0.5}, nullable)


def test_pipeline_and_model_mismatch():
    p = spec.pipeline_preset("kaggle")
    with pytest.raises(SpecError, match="26 dense features, as model 'wide-2x' has"):
        p.check_model(spec.model_preset("wide-2x"))
    with pytest.raises(SpecError, match=r"sparse_outputs\[0\].table = 'cat_0': a table of model"):
        p.check_model(replace(spec.model_preset("criteo-kaggle"),
                              tables=tuple(replace(t, name="x" + t.name)
                                           for t in spec.model_preset("criteo-kaggle").tables)))


def test_ids_past_a_table_are_an_error():
    """The terabyte pipeline hashes cat_0 into 45,833,188 buckets; criteo-kaggle's cat_0
    has 1,460 rows: an id past them would read the next table's rows."""
    with pytest.raises(SpecError, match=r"sparse_outputs\[0\] = 'first_cat_0: ids in "
                       r"\[0, 45833187\]': ids in \[0, 1459\], the rows of table 'cat_0'"):
        spec.pipeline_preset("terabyte").check_model(spec.model_preset("criteo-kaggle"))
    kaggle = spec.model_preset("criteo-kaggle")
    one_table = replace(kaggle, dense_features=1, tables=(replace(kaggle.tables[0], name="t"),))

    def feature(op, params):  # one dense feature, and `op` on raw ids feeding table t
        return Pipeline("p", (FLOAT_COL, INT_COL),
                        (OpNode("d", OpKind.LOGIT, "f", {"eps": 1e-5}),
                         OpNode("n", op, "c", params)),
                        ("d",), (SparseOutput("n", "t"),))
    with pytest.raises(SpecError, match=r"ids in \[-9223372036854775808, 9223372036854775807\]"):
        feature(OpKind.FIRSTX, {"x": 1}).check_model(one_table)  # raw ids, unhashed
    feature(OpKind.CLAMP_LIST, {"lo": 0, "hi": 1459}).check_model(one_table)
    with pytest.raises(SpecError, match=r"ids in \[0, 1460\]"):
        feature(OpKind.CLAMP_LIST, {"lo": 0, "hi": 1460}).check_model(one_table)


@pytest.mark.parametrize("op, params, src, want", [
    (OpKind.SIGRID_HASH, {"salt": 3, "max_value": 7}, (-5, 5), (0, 6)),
    (OpKind.BUCKETIZE, {"borders": [1.0, 2.0, 2.0]}, None, (0, 3)),
    (OpKind.ONEHOT, {"low": 0, "high": 16, "num_classes": 5}, None, (0, 1)),
    (OpKind.MAPID, {"map": [4, 9, 2]}, (0, 99), (0, 9)),
    (OpKind.MAPID, {"map": [-4, -9]}, (0, 99), (-9, 0)),
    (OpKind.FILL_NULL, {"value": -1}, (0, 9), (-1, 9)),
    (OpKind.CLAMP_LIST, {"lo": 0, "hi": 16}, (-100, 5), (0, 5)),
    (OpKind.CLAMP, {"lo": 10, "hi": 3}, (-100, 100), (3, 3)),  # lo > hi yields hi
    (OpKind.CAST, {"to": "int64"}, None, (-(2**63), 2**63 - 1)),
    (OpKind.CAST, {"to": "float32"}, (0, 9), None),
    (OpKind.NGRAM, {"n": 3}, (2, 8), (2, 8)),
    (OpKind.LOGIT, {"eps": 1e-5}, None, None),
])
def test_output_range(op, params, src, want):
    assert spec.pipeline.output_range(op, params, src) == want


def test_clamp_bounds_on_an_integer_column_are_integers():
    """Between two integers a bound has no one answer for an int column (the reference
    truncated 1.5 to 1, the kernels rounded it up to 2)."""
    with pytest.raises(SpecError, match=r"nodes\[0\].params.lo = 1.5: an integer: c is int64"):
        node_error(OpKind.CLAMP_LIST, {"lo": 1.5, "hi": 9})
    node_error(OpKind.CLAMP_LIST, {"lo": 1.0, "hi": 9})  # an integral float is one integer
    Pipeline("p", (FLOAT_COL,), (OpNode("n", OpKind.CLAMP, "f", {"lo": 0.5, "hi": 2.5}),),
             ("n",), ())


@pytest.mark.parametrize("change, field, allowed", [
    ({"batch_per_gpu": 0}, "batch_per_gpu", "[1, 16777216]"),
    ({"bottom_mlp": (512, 256, 64)}, "bottom_mlp[-1]", "equal to the embedding dim 128"),
    ({"top_mlp": (1024, 2)}, "top_mlp[-1]", "1 (one logit per sample)"),
    ({"learning_rate": -0.1}, "learning_rate", "(0, 100)"),
    ({"dcn_layers": 0}, "dcn_layers", "[1, 64]"),
])
def test_bad_model(change, field, allowed):
    with pytest.raises(SpecError) as e:
        replace(spec.model_preset("criteo-kaggle"), **change)
    assert e.value.field == field and allowed in e.value.allowed


def test_bad_table_rows():
    with pytest.raises(SpecError, match="rows = 0: an integer >= 1"):
        spec.Table("t", 0, 128)


@pytest.mark.parametrize("kwargs, match", [
    ({"name": "h300"}, "hardware = 'h300': one of v100, a100, h100, h200"),
    ({"name": "h200", "gpus": 0}, r"gpus = 0: an integer in \[1, 4096\]"),
    ({"name": "h200", "intra_node": "nvlink9"}, "interconnect = 'nvlink9'"),
])
def test_bad_hardware(kwargs, match):
    with pytest.raises(SpecError, match=match):
        spec.hardware_preset(**kwargs)


def test_gpu_count_not_multiple_of_node():
    hw = spec.hardware_preset("h200", 8)
    with pytest.raises(SpecError, match="a multiple of it"):
        replace(hw, gpu_count=12)


def test_bf16_on_v100():
    with pytest.raises(SpecError, match="it has no bf16"):
        spec.GPU_KINDS["v100"].peak_flops_per_s(spec.Precision.BF16)


def test_plan_node_twice_and_missing(kaggle):
    k1 = spec.FusedKernel("a", tuple(kaggle.order), "emb_fwd")
    k2 = spec.FusedKernel("b", ("hash_cat_0",), "emb_fwd")
    with pytest.raises(SpecError, match="a node in one kernel only"):
        spec.Plan("kaggle", "criteo-kaggle", 1, (k1, k2)).check_pipeline(kaggle)
    k3 = spec.FusedKernel("a", tuple(kaggle.order[1:]), "emb_fwd")
    with pytest.raises(SpecError, match=r"every op node placed \(1 of 105 are not\)"):
        spec.Plan("kaggle", "criteo-kaggle", 1, (k3,)).check_pipeline(kaggle)


def test_plan_dependency_order(kaggle):
    hashes = tuple(n for n in kaggle.order if n.startswith("hash_"))
    rest = tuple(n for n in kaggle.order if not n.startswith("hash_"))
    late = spec.FusedKernel("fill", rest, "top_mlp_fwd")
    early = spec.FusedKernel("hash", hashes, "emb_fwd")
    with pytest.raises(SpecError, match="to run after kernel 'fill'"):
        spec.Plan("kaggle", "criteo-kaggle", 1, (late, early)).check_pipeline(kaggle)


def test_plan_bad_stage_and_threads():
    with pytest.raises(SpecError, match="threads_per_block = 100: one of 32, 64"):
        spec.FusedKernel("k", ("a",), "emb_fwd", threads_per_block=100)
    with pytest.raises(SpecError, match="stage = 'lunch': one of before, input_a2a"):
        spec.FusedKernel("k", ("a",), "lunch")
    k = spec.FusedKernel("k", ("a",), "grad_allreduce")
    with pytest.raises(SpecError, match="a stage that exists with 1 GPU"):
        spec.Plan("p", "m", 1, (k,))
    with pytest.raises(SpecError, match=r"batches_ahead = 3: an integer in \[1, 2\]"):
        spec.Plan("p", "m", 1, (), batches_ahead=3)
    with pytest.raises(SpecError, match="assembly_stream = 'own': true or false"):
        spec.Plan("p", "m", 1, (), assembly_stream="own")
    with pytest.raises(SpecError, match="source_first = 1: true or false"):
        spec.FusedKernel("k", ("a",), "emb_fwd", source_first=1)


def test_file_errors(tmp_path):
    bad = tmp_path / "m.json"
    bad.write_text("{not json")
    with pytest.raises(SpecError, match=re.escape(f"file = '{bad}': valid JSON")):
        load(spec.Model, bad)
    missing = tmp_path / "missing.json"
    with pytest.raises(SpecError, match=re.escape(f"file = '{missing}': a readable file")):
        load(spec.Model, missing)
    doc = dumps(spec.model_preset("criteo-kaggle"))
    doc["schema"] = "corun.model/99"
    bad.write_text(json.dumps(doc))
    with pytest.raises(SpecError, match="must be 'corun.model/1'"):
        load(spec.Model, bad)
    doc["schema"] = "corun.model/1"
    doc["tables"][2]["rows"] = -3
    bad.write_text(json.dumps(doc))
    with pytest.raises(SpecError) as e:
        load(spec.Model, bad)
    assert e.value.field == "model.tables[2].rows"
    doc["tables"][2]["rows"] = 3
    doc["colour"] = "blue"
    bad.write_text(json.dumps(doc))
    with pytest.raises(SpecError, match="not a field of Model"):
        load(spec.Model, bad)


def test_model_too_big_says_by_how_much():
    from corun.costmodel import shard_tables

    big = replace(spec.model_preset("mlperf-dcnv2"), optimizer=spec.Optimizer.ADAGRAD)
    with pytest.raises(SpecError, match=r"GPU 0 needs 209.1 GB .* 72.4 GB short"):
        shard_tables(big, spec.hardware_preset("h200", 1))
    shard_tables(big, spec.hardware_preset("h200", 2))  # fits on two


def test_fused_sgd_update_needs_sgd():
    with pytest.raises(SpecError) as e:
        replace(spec.model_preset("heavy"), optimizer=spec.Optimizer.ADAGRAD,
                embedding_update=spec.EmbeddingUpdate.FUSED_SGD)
    assert e.value.field == "optimizer" and "sgd when embedding_update is fused-sgd" in str(e.value)


def test_a_plan_is_checked_against_the_model_and_the_gpu_it_runs_with(capsys, tmp_path):
    """A plan for another model, an owner of a table the model lacks, a grid no GPU can
    use, and a kernel name that is no name are refused before any work."""
    from corun.cli import main

    pipeline = spec.pipeline_preset("kaggle")
    plan = spec.one_kernel_plan(pipeline, "criteo-kaggle", 1, "emb_fwd")
    model = replace(spec.model_preset("criteo-kaggle"), batch_per_gpu=4096)
    plan.check_model(model, 132, 32)
    with pytest.raises(SpecError, match="plan.model = 'wide-2x': the model it runs with"):
        replace(plan, model="wide-2x").check_model(model, 132, 32)
    with pytest.raises(SpecError, match="plan.table_owner.nope = 0: owners of tables of"):
        replace(plan, table_owner={"nope": 0}).check_model(model, 132, 32)
    wide = replace(plan, kernels=(replace(plan.kernels[0], blocks=2**31 - 1),))
    with pytest.raises(SpecError, match=r"plan.kernels\[0\].blocks = 2147483647: at most "
                                        r"67584 \(16 x the larger"):
        wide.check_model(model, 132, 32)
    with pytest.raises(SpecError, match="name = 'a\\\\x00b': 1-64 letters"):
        spec.FusedKernel("a\x00b", ("fill_int_0",), "emb_fwd")
    path = tmp_path / "wide.json"
    spec.save(wide, path)
    assert main(["simulate", "--plan", str(path), "--strategy", "plan", "--quiet"]) == 2
    assert "blocks = 2147483647" in capsys.readouterr().err
    spec.save(replace(plan, model="wide-2x"), path)
    assert main(["simulate", "--plan", str(path), "--strategy", "plan", "--model",
                 "criteo-kaggle", "--quiet"]) == 2
    assert "plan.model = 'wide-2x'" in capsys.readouterr().err
