"""Ecosystem formats: TorchRec-style and MLPerf models in, TorchRec sharding plans out."""

import json
from dataclasses import replace

import pytest
from corun.costmodel import shard_tables
from corun.spec.formats import (
    mlperf_flags,
    model_from_mlperf,
    model_from_torchrec,
    owners_from_torchrec_plan,
    torchrec_sharding_plan,
)

from corun import spec
from corun.cli import main

# MLPerf Training's DLRM-DCNv2 reference run (torchrec_dlrm), its model flags as published
# beside flags that do not shape the model
MLPERF_RUN = (
    "torchrun --nproc_per_node 8 dlrm_main.py --embedding_dim 128 \\\n"
    "  --dense_arch_layer_sizes 512,256,128 --over_arch_layer_sizes 1024,1024,512,256,1 \\\n"
    "  --synthetic_multi_hot_criteo_path /data/criteo_1tb_multihot --epochs 1 --pin_memory \\\n"
    "  --num_embeddings_per_feature 40000000,39060,17295,7424,20265,3,7122,1543,63,40000000,"
    "3067956,405282,10,2209,11938,155,4,976,14,40000000,40000000,40000000,590152,12973,108,36"
    " \\\n"
    "  --validation_freq_within_epoch 1000 --batch_size 65536 --interaction_type=dcn \\\n"
    "  --dcn_num_layers=3 --dcn_low_rank_dim=512 --adagrad --learning_rate 0.005 \\\n"
    "  --multi_hot_distribution_type uniform \\\n"
    "  --multi_hot_sizes=3,2,1,2,6,1,1,1,1,7,3,8,1,6,9,5,1,1,1,12,100,27,10,3,1,1\n")


def torchrec_doc(model: spec.Model) -> dict:
    return {"embedding_bag_configs": [
        {"name": t.name, "num_embeddings": t.rows, "embedding_dim": t.dim,
         "feature_names": [t.name], "pooling": "SUM", "pooling_factor": t.pooling}
        for t in model.tables],
        "dense_in_features": model.dense_features,
        "dense_arch_layer_sizes": list(model.bottom_mlp),
        "over_arch_layer_sizes": list(model.top_mlp), "batch_size": model.batch_per_gpu}


def test_a_torchrec_model_reads_as_the_same_model():
    kaggle = spec.model_preset("criteo-kaggle")
    assert model_from_torchrec(torchrec_doc(kaggle), "criteo-kaggle") == kaggle
    bad = torchrec_doc(kaggle)
    del bad["embedding_bag_configs"][3]["num_embeddings"]
    with pytest.raises(spec.SpecError, match=r"embedding_bag_configs\[3\]\.num_embeddings"):
        model_from_torchrec(bad)
    with pytest.raises(spec.SpecError, match="'tables'.*keys of a TorchRec-style model"):
        model_from_torchrec({**torchrec_doc(kaggle), "tables": []})
    odd = torchrec_doc(kaggle)
    odd["embedding_bag_configs"][0]["pooling"] = "NONE"
    with pytest.raises(spec.SpecError, match=r"\[0\]\.pooling = 'NONE': SUM or MEAN"):
        model_from_torchrec(odd)


def test_the_published_mlperf_run_reads_as_the_dcnv2_preset():
    flags = mlperf_flags(MLPERF_RUN)
    assert "epochs" not in flags and flags["adagrad"] is True
    model = model_from_mlperf(flags)
    preset = spec.model_preset("mlperf-dcnv2")
    assert model == replace(preset, name="mlperf-dlrm", batch_per_gpu=65536)
    with pytest.raises(spec.SpecError, match="multi_hot_sizes = 2: one size per table"):
        model_from_mlperf({**flags, "multi_hot_sizes": "1,2"})


def test_a_sharding_plan_round_trips():
    model = spec.model_preset("criteo-kaggle")
    owner = shard_tables(model, spec.hardware_preset("h200", 4)).owner
    assert len(set(owner.values())) == 4
    doc = json.loads(json.dumps(torchrec_sharding_plan(model, owner)))
    tables = doc["plan"]["sparse_arch.embedding_bag_collection"]
    assert tables["cat_2"]["sharding_type"] == "table_wise"
    assert tables["cat_2"]["compute_kernel"] == "dense"
    assert tables["cat_2"]["sharding_spec"]["shards"][0]["shard_sizes"] == [10131227, 128]
    assert owners_from_torchrec_plan(doc, model) == owner
    tables["cat_2"]["sharding_type"] = "row_wise"
    with pytest.raises(spec.SpecError, match="cat_2.sharding_type = 'row_wise': table_wise"):
        owners_from_torchrec_plan(doc, model)


def test_plan_takes_ecosystem_models_and_writes_the_sharding_plan(tmp_path, capsys):
    run = tmp_path / "mlperf.sh"
    run.write_text(MLPERF_RUN)
    assert main(["simulate", "--model", str(run), "--batch", "8192", "--pipeline", "multihot",
                 "--strategy", "ideal", "--iterations", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == "mlperf"
    kaggle = spec.model_preset("criteo-kaggle")
    path = tmp_path / "kaggle-tables.json"
    path.write_text(json.dumps(torchrec_doc(kaggle)))
    out = tmp_path / "plan"
    assert main(["plan", "--model", str(path), "--gpus", "2", "--time-limit", "2",
                 "--out", str(out), "--quiet"]) == 0
    chosen = spec.load(spec.Plan, out / "plan.json")
    doc = json.loads((out / "sharding-plan.json").read_text())
    owner = shard_tables(kaggle, spec.hardware_preset("h200", 2),
                         chosen.table_owner or None).owner
    assert owners_from_torchrec_plan(doc, kaggle) == owner and set(owner.values()) == {0, 1}
