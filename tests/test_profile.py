"""`corun profile` on the CPU: one row per kernel and stage, resumable, budgeted."""

import csv

import numpy as np
import pytest
from corun.backend.trainer import TRAINING_STAGES
from corun.spec.serde import save

from corun import spec
from corun.cli import main
from corun.profiling import BEFORE_BAG, BEFORE_WARP, COLUMNS, STEP_COLUMNS, sample_kernels
from tests.workload_files import write_small_kaggle


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("profile")
    write_small_kaggle(d, 32, 300, "pipe.json")
    return d


def profile(files, out, *extra):
    return main(["profile", "--out", str(out), "--models", str(files / "model.json"),
                 "--batches", "32", "--train-pipeline", str(files / "pipe.json"),
                 "--pipelines", "kaggle,multihot", "--shapes", "2", "--launches", "2",
                 "--reps", "1", "--device", "cpu", "--quiet", *extra])


def test_rows_per_kernel_and_stage_and_resume(files, tmp_path):
    assert profile(files, tmp_path) == 0
    rows = list(csv.DictReader((tmp_path / "profile.csv").open()))
    drawn = sample_kernels([spec.pipeline_preset(p) for p in ("kaggle", "multihot")], 2, 2,
                           np.random.default_rng(0))
    warp = {s.name for s in drawn if s.warp}
    assert warp and len(drawn) == 2 * 2 + len(warp)  # both mappings where they differ
    assert len(rows) == len(drawn) * len(TRAINING_STAGES)
    assert {r["kernel"] for r in rows if r["warp_rows"] == "1"} == warp
    assert list(rows[0]) == list(STEP_COLUMNS)
    for r in rows:  # every stage of the steps that released the kernel
        steps = dict(x.split("=") for x in r["step_stage_ms"].split())
        assert list(steps) == [s.value for s in TRAINING_STAGES]
        assert float(steps[r["stage"]]) == pytest.approx(float(r["stage_corun_ms"]), rel=1e-3,
                                                         abs=1e-5)
    assert {r["stage"] for r in rows} == {s.value for s in TRAINING_STAGES}
    for r in rows:
        assert float(r["kernel_alone_ms"]) > 0 and float(r["stage_alone_ms"]) >= 0
        assert int(r["nodes"]) >= int(r["features"]) >= 1
        assert sum(int(r[f"op_{op.value}"]) for op in spec.OpKind) == int(r["nodes"])
        assert float(r["host_ahead"]) == 1.0  # the CPU has no launch queue to fall behind
    for stage in TRAINING_STAGES:  # one set of plain steps per model and batch
        assert len({r["stage_alone_ms"] for r in rows if r["stage"] == stage.value}) == 1
    assert profile(files, tmp_path) == 0  # everything done: nothing appended
    assert len(list(csv.DictReader((tmp_path / "profile.csv").open()))) == len(rows)


def test_shards_split_feature_sets_and_read_back_as_one(files, tmp_path):
    from corun.costmodel.profile_data import data_hash, read_profile

    whole, parts = tmp_path / "whole", tmp_path / "parts"
    assert profile(files, whole) == 0
    for i in range(2):
        assert profile(files, parts, "--shard", f"{i}/2") == 0
    names = sorted(f.name for f in parts.iterdir())
    assert names == ["profile-0of2.csv", "profile-1of2.csv"]
    shard_kernels = [{r["kernel"] for r in read_profile(parts / n)} for n in names]
    assert shard_kernels[0] and shard_kernels[1] and not shard_kernels[0] & shard_kernels[1]
    key = lambda rs: sorted((r["kernel"], r["stage"]) for r in rs)  # noqa: E731
    assert key(read_profile(parts)) == key(read_profile(whole / "profile.csv"))
    before = data_hash(parts)
    assert profile(files, parts) == 0  # unsharded rerun: every key is done
    assert not (parts / "profile.csv").exists()
    assert data_hash(parts) == before


@pytest.mark.parametrize("bad", ["2/2", "x", "1/0", "1/-3"])
def test_bad_shard_names_the_field(files, tmp_path, bad, capsys):
    assert profile(files, tmp_path, "--shard", bad) != 0
    assert "--shard" in capsys.readouterr().err
    assert not list(tmp_path.glob("profile*.csv"))


def test_warp_rows_need_a_csv_that_records_them(files, tmp_path, capsys):
    """A CSV from before warp_rows is appended thread-per-row kernels only."""
    old = tmp_path / "profile.csv"
    old.write_text(",".join(BEFORE_WARP) + "\n")
    assert profile(files, tmp_path) != 0
    assert "warp_rows" in capsys.readouterr().err
    assert profile(files, tmp_path, "--mappings", "thread") == 0
    rows = list(csv.DictReader(old.open()))
    assert len(rows) == 2 * 2 * len(TRAINING_STAGES) and "warp_rows" not in rows[0]
    assert profile(files, tmp_path / "new", "--mappings", "warp,x") != 0
    assert "--mappings" in capsys.readouterr().err


def test_bag_kernel_rows_need_a_csv_that_records_them(files, tmp_path, capsys):
    """A model whose forward is the bag kernel is profiled into a CSV with the
    stage_bag_kernel column (the fit tells its emb_fwd apart by it), and its rows say so
    at emb_fwd only; a CSV from before the column is refused before any GPU time."""
    from dataclasses import replace

    model = spec.load(spec.Model, files / "model.json")
    lean = replace(model, name="lean", embedding_update=spec.EmbeddingUpdate.FUSED_SGD,
                   embedding_forward=spec.EmbeddingForward.BAG_KERNEL)
    save(lean, tmp_path / "lean.json")
    args = ["profile", "--models", str(tmp_path / "lean.json"), "--batches", "32",
            "--train-pipeline", str(files / "pipe.json"), "--pipelines", "kaggle",
            "--shapes", "1", "--launches", "1", "--reps", "1", "--device", "cpu", "--quiet"]
    old = tmp_path / "old" / "profile.csv"
    old.parent.mkdir()
    old.write_text(",".join(BEFORE_BAG) + "\n")
    assert main([*args, "--out", str(old.parent)]) != 0
    assert "stage_bag_kernel" in capsys.readouterr().err
    assert old.read_text().count("\n") == 1
    assert main([*args, "--out", str(tmp_path / "new")]) == 0
    rows = list(csv.DictReader((tmp_path / "new" / "profile.csv").open()))
    assert rows and {(r["stage"], r["stage_bag_kernel"]) for r in rows if r["stage"] in
                     ("emb_fwd", "emb_bwd")} == {("emb_fwd", "1.0"), ("emb_bwd", "0.0")}


def test_older_csv_is_not_appended_to(files, tmp_path, capsys):
    old = tmp_path / "profile.csv"
    old.write_text(",".join(c for c in COLUMNS if c != "host_ahead") + "\n")
    assert profile(files, tmp_path) != 0
    assert "another version" in capsys.readouterr().err
    assert old.read_text().count("\n") == 1


def test_budget_stops_before_the_first_kernel(files, tmp_path, capsys):
    assert main(["profile", "--out", str(tmp_path), "--models", str(files / "model.json"),
                 "--batches", "32", "--train-pipeline", str(files / "pipe.json"),
                 "--budget-minutes", "0", "--device", "cpu"]) == 0
    assert "time budget spent after 0 pairs" in capsys.readouterr().err
    assert not (tmp_path / "profile.csv").exists()


def test_kernel_samples_spread_sizes_and_share_feature_sets():
    p = spec.pipeline_preset("kaggle")
    specs = sample_kernels([p], 12, 3, np.random.default_rng(0))
    assert 30 <= len(specs) <= 36 and len({s.name for s in specs}) == len(specs)
    sizes = {len(s.features) for s in specs}
    assert min(sizes) < 5 and max(sizes) > 10  # log-uniform over 1..39 features
    assert len({s.features for s in specs}) <= 12  # launch shapes share a feature set
    assert len({s.features for s in specs}) >= 10


def test_kernel_spec_holds_shared_ancestors():
    """kaggle's bucket_int_0 and logit_int_0 share fill_int_0: a kernel of bucket_int_0
    alone must compute it (the first H200 profile stopped on exactly this)."""
    from corun.backend.data import synthetic_inputs
    from corun.backend.fusion import FusedGroup
    from corun.backend.runner import PipelineProgram

    from corun.profiling import KernelSpec

    p = spec.pipeline_preset("kaggle")
    k = KernelSpec(p, ("bucket_int_0",), 8, 64)
    assert "fill_int_0" in k.nodes and "logit_int_0" not in k.nodes
    for s in sample_kernels([p], 30, 1, np.random.default_rng(1)):
        nodes = set(s.nodes)
        assert all(p.node_by_name[n].input in nodes or p.node_by_name[n].input in
                   {c.name for c in p.inputs} for n in nodes)
    raw = synthetic_inputs(p, 16, np.random.default_rng(0))
    rest = [n for n in p.order if n not in set(k.nodes)]
    PipelineProgram(p, [FusedGroup(p, k.nodes, k.name, 8, 64)], raw, elsewhere=rest)


def test_plan_kernels_are_profiled_as_the_plan_launches_them(files, tmp_path):
    """A plan's kernels (here RAP-style layers: every fill_null, then everything after)
    profiled as they are: the second reads the first's outputs, staged from the
    reference."""
    pipe = spec.pipeline_preset("kaggle")
    fill = tuple(n for n in pipe.order if pipe.node_by_name[n].op is spec.OpKind.FILL_NULL)
    rest = tuple(n for n in pipe.order if n not in fill)
    plan = spec.Plan("kaggle", "criteo-kaggle", 1, (
        spec.FusedKernel("fill", fill, "emb_fwd", blocks=8, threads_per_block=64),
        spec.FusedKernel("rest", rest, "top_mlp_bwd", blocks=16, threads_per_block=128)))
    save(plan, tmp_path / "plan.json")
    assert profile(files, tmp_path, "--plans", str(tmp_path / "plan.json"), "--shapes",
                   "0") == 0
    rows = list(csv.DictReader((tmp_path / "profile.csv").open()))
    assert len(rows) == 2 * len(TRAINING_STAGES)
    by_kernel = {r["kernel"]: r for r in rows}
    assert len(by_kernel) == 2
    first, second = sorted(by_kernel.values(), key=lambda r: int(r["nodes"]))
    assert int(first["nodes"]) == len(fill) and first["threads"] == "64"  # the plan's shape
    assert int(second["nodes"]) == len(rest) and int(second["op_fill_null"]) == 0
    assert int(first["features"]) == len(fill)  # each fill_null is some feature's
    for r in rows:
        assert ":" + r["nodes"] + "n:" in r["kernel"] and float(r["kernel_alone_ms"]) > 0



def test_a_missing_plan_file_is_named_before_anything_is_written(files, tmp_path, capsys):
    out = tmp_path / "out"
    assert profile(files, out, "--plans", str(tmp_path / "nope.json"), "--shapes", "0") == 2
    assert "nope.json" in capsys.readouterr().err and not out.exists()


def test_a_training_pipeline_that_does_not_feed_the_model_is_named_before_any_work(
        files, tmp_path, capsys):
    """The small kaggle model's tables hold 300 rows: the preset kaggle pipeline's ids
    run past them, so without --train-pipeline the profile is refused, naming the flag
    and the table, before anything is written (the trainer would fail mid-run)."""
    out = tmp_path / "out"
    assert main(["profile", "--out", str(out), "--models", str(files / "model.json"),
                 "--batches", "32", "--pipelines", "kaggle", "--shapes", "1",
                 "--device", "cpu", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--train-pipeline = 'kaggle': a pipeline that feeds model" in err
    assert "ids in [0, 299]" in err and not out.exists()


def test_the_profiler_builds_its_trainer_before_its_streams(files, monkeypatch):
    """As the executor does: allocated after the streams, heavy-fused's fused update ran
    its atomics 7% slower on the H200 (bench/results/placement_h200.md)."""
    import corun.profiling as bp

    order = []
    real_trainer, real_streams = bp.make_trainer, bp.Streams
    monkeypatch.setattr(bp, "make_trainer", lambda *a, **k: order.append("trainer")
                        or real_trainer(*a, **k))
    monkeypatch.setattr(bp, "Streams", lambda *a, **k: order.append("streams")
                        or real_streams(*a, **k))
    model = spec.load(spec.Model, files / "model.json")
    pipeline = spec.load(spec.Pipeline, files / "pipe.json")
    bp.Profiler(model, pipeline, spec.hardware_preset("h200", 1), "cpu", say=lambda *a: None)
    assert order == ["trainer", "streams"]


def test_resident_rows_go_to_their_own_file_with_the_lead(files, tmp_path, capsys):
    """--resident profiles the same kernels and stages again with the kernel released
    before the stage's work (LeadClock): into resident.csv, with kernel_lead_ms, apart
    from profile.csv's rows of the same keys; both kinds resume on their own."""
    from corun.costmodel.profile_data import RESIDENT, data_hash, read_profile

    from corun.profiling import RESIDENT_COLUMNS, append_rows

    assert profile(files, tmp_path) == 0
    before = data_hash(tmp_path)
    assert profile(files, tmp_path, "--resident") == 0
    plain = list(csv.DictReader((tmp_path / "profile.csv").open()))
    resident = list(csv.DictReader((tmp_path / "resident.csv").open()))
    assert list(resident[0]) == list(RESIDENT_COLUMNS)
    key = lambda rs: sorted((r["kernel"], r["stage"]) for r in rs)  # noqa: E731
    assert key(resident) == key(plain)
    assert all(float(r["kernel_lead_ms"]) >= 0 for r in resident)
    assert key(read_profile(tmp_path, kind=RESIDENT)) == key(resident)
    assert len(read_profile(tmp_path)) == len(plain)  # the resident rows are not mixed in
    assert data_hash(tmp_path) != before  # a model fitted before them is refitted
    assert profile(files, tmp_path, "--resident") == 0  # all done: nothing appended
    assert len(list(csv.DictReader((tmp_path / "resident.csv").open()))) == len(resident)
    with pytest.raises(spec.SpecError, match="resident"):
        append_rows(tmp_path / "profile.csv", resident[:1])


def test_lead_clock_holds_the_stage_after_the_release():
    """LeadClock releases the kernel at the mark that opens its stage, then marks again:
    the stage is timed from the second mark, the interval between counts for no stage."""
    import torch

    from corun.profiling import LeadClock

    released = []
    clock = LeadClock(torch.device("cpu"), TRAINING_STAGES[2],
                      lambda stage, opened: released.append((stage, opened)), 0.01)
    clock.mark(None)
    for s in TRAINING_STAGES:
        clock.mark(s)
    assert [m[0] for m in clock.marks] == [None, *TRAINING_STAGES[:2], None,
                                           *TRAINING_STAGES[2:]]
    assert released == [(TRAINING_STAGES[2], clock.marks[2][1])]
    assert clock.started == clock.marks[3][1]
    assert set(clock.stage_ms()) == set(TRAINING_STAGES)


def test_graphs_and_leads_are_refused_where_they_cannot_be(files, tmp_path, capsys):
    """--cuda-graphs needs a GPU (the graphed trainer refuses the CPU, naming the
    field); --lead-ms needs --resident and a lead in (0, 5] ms; nothing is written."""
    assert profile(files, tmp_path, "--cuda-graphs") != 0
    assert "cuda_graphs" in capsys.readouterr().err
    for args in (["--lead-ms", "0.2"], ["--resident", "--lead-ms", "0"],
                 ["--resident", "--lead-ms", "9"]):
        assert profile(files, tmp_path, *args) != 0
        assert "--lead-ms" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.csv"))


def test_resident_rows_at_another_lead_are_other_rows(files, tmp_path):
    """A resident row's key holds the lead it was profiled at: the same kernels at a
    second lead are profiled again, into the same file."""
    from corun.costmodel.profile_data import RESIDENT, read_profile

    assert profile(files, tmp_path, "--resident") == 0
    first = read_profile(tmp_path, kind=RESIDENT)
    assert profile(files, tmp_path, "--resident", "--lead-ms", "0.5") == 0
    both = read_profile(tmp_path, kind=RESIDENT)
    assert len(both) == 2 * len(first)
    assert {r["lead_asked_ms"] for r in both} == {"0.01", "0.5"}


def test_a_torn_last_row_is_dropped_before_rows_are_appended(tmp_path, capsys):
    """A run killed mid-write leaves a last row without its line end; the next run's row
    is not joined onto it: the torn row is cut off (and measured again), and said."""
    from corun.profiling import append_rows, drop_torn_row

    path = tmp_path / "profile.csv"
    assert drop_torn_row(path) is None  # no file: nothing to do
    rows = [{c: "1" for c in STEP_COLUMNS} for _ in range(2)]
    append_rows(path, rows[:1])
    whole = path.read_text()
    assert drop_torn_row(path) is None and path.read_text() == whole
    path.write_text(whole + "1,1,1")  # the torn start of a second row
    append_rows(path, rows[1:])
    assert "dropped a torn last row (5 characters)" in capsys.readouterr().err
    lines = path.read_text().splitlines()
    assert len(lines) == 3 and lines[1] == lines[2]  # header, the first row, the new one
