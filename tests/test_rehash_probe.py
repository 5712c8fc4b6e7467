"""bench/rehash_probe.py: a folder of the chosen kernel at other stages and launch shapes,
and the committed report rendered again from the committed records."""

from pathlib import Path

import pytest

from bench import rehash_probe
from corun.plan_dir import planned_strategies
from spec import Plan, Prediction, load

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "bench/plans/rehash/heavy-lean-b32768"


def test_shapes_folder_moves_only_the_kernels_stage_and_blocks(tmp_path):
    out = tmp_path / "shapes"
    rehash_probe.shapes_folder(FOLDER, out, [("emb_bwd", 132), ("bottom_mlp_bwd", 264)])
    chosen = load(Plan, FOLDER / "plan.json")
    assert planned_strategies(out) == ["corun", "corun-2", "corun-3"]
    for name, (stage, blocks) in (("plan-2.json", ("emb_bwd", 132)),
                                  ("plan-3.json", ("bottom_mlp_bwd", 264))):
        plan = load(Plan, out / name)
        k, c = plan.kernels[0], chosen.kernels[0]
        assert (k.stage, k.blocks) == (stage, blocks)
        assert (k.nodes, k.warp_rows, plan.batches_ahead) == (c.nodes, c.warp_rows,
                                                                chosen.batches_ahead)
    pred = load(Prediction, out / "prediction-corun-2.json")
    assert pred.strategy == "corun-2" and pred.iteration_time_ms > 0
    assert pred.throughput_samples_per_s == pytest.approx(
        1e3 * pred.batch_per_gpu / pred.iteration_time_ms)


def test_a_folder_whose_choice_has_two_kernels_is_refused(tmp_path):
    import shutil
    from dataclasses import replace

    from spec.serde import save

    folder = tmp_path / "two"
    folder.mkdir()
    shutil.copy(FOLDER / "prediction-corun.json", folder)
    chosen = load(Plan, FOLDER / "plan.json")
    k = chosen.kernels[0]
    half = len(k.nodes) // 2
    save(replace(chosen, kernels=(replace(k, nodes=k.nodes[:half]),
                                  replace(k, name="k1", nodes=k.nodes[half:]))),
         folder / "plan.json")
    with pytest.raises(SystemExit, match="2 kernels, not one"):
        rehash_probe.shapes_folder(folder, tmp_path / "x", [("emb_bwd", 132)])


@pytest.mark.parametrize("bad", ["emb_bwd", "emb_bwd:0", "emb_bwd:x", "nowhere:132", ","])
def test_a_bad_shape_is_an_error_naming_the_item(bad, capsys):
    assert rehash_probe.main(["--shapes", str(FOLDER), "--at", bad, "-o", "/nonexistent"]) == 2
    err = capsys.readouterr().err
    assert "--at" in err and "STAGE:BLOCKS" in err


def test_shapes_parse_in_order():
    assert rehash_probe.parse_shapes("emb_bwd:132, interaction_bwd:198") == [
        ("emb_bwd", 132), ("interaction_bwd", 198)]


def test_the_committed_report_is_what_the_records_render():
    assert rehash_probe.render() == (ROOT / "bench/results/rehash_h200.md").read_text()


def test_thirds_split_each_strategys_iterations_by_time(tmp_path):
    """The fast third's and slow third's means, the kernel's start and each stage, for
    records that hold their stages iteration by iteration; none for older records."""
    import gzip
    import json

    from bench.rehash_probe import measurements, thirds_table

    per = {"iteration": [3.0, 5.0, 3.2, 5.2, 3.1, 5.1], "start_k0": [0.5, 0.6] * 3,
           "stage_emb_fwd": [1.0, 3.0] * 3}
    record = {"strategy": "corun", "stages": {}, "per_iteration": per}
    (tmp_path / "corun.json.gz").write_bytes(gzip.compress(json.dumps(record).encode()))
    old = {"strategy": "corun-2", "stages": {}, "per_iteration": {"iteration": [1.0]}}
    (tmp_path / "corun-2.json.gz").write_bytes(gzip.compress(json.dumps(old).encode()))
    rows = [r for r in thirds_table(measurements(tmp_path)) if r.startswith("| corun")]
    assert rows == ["| corun | fast | 3.050 | 0.500 | 1.000 |",
                    "| corun | slow | 5.150 | 0.600 | 3.000 |"]
