"""The learned co-running model: fit on a synthetic profile with a known law, held out
by whole groups, compared with the baselines, saved and refused when stale."""

import csv
import json
import shutil
from dataclasses import replace

import numpy as np
import pytest
from corun.costmodel import evaluation, features, learned, model_file
from corun.spec import OpKind, SpecError
from corun.spec.findings import FindingKind

from corun.advice import finding_line
from corun.cli import main
from corun.profiling import COLUMNS

STAGES = features.STAGES


def synthetic_profile(path, rng: np.random.Generator, shapes: int = 24) -> None:
    """Rows shaped like `corun profile`'s, whose times follow a smooth law of the
    features with 2% noise: a kernel bound by its bytes or its integer work, slowed by a
    stage's bandwidth; `shapes` kernel feature sets, each at three launch shapes."""
    bw, issue = 4.2e12, 1.7e13
    rows = []
    combos = [(m, b) for m in ("m1", "m2", "m3") for b in (2048, 4096)]
    kernels = []
    for s in range(shapes):
        nbytes = float(np.exp(rng.uniform(np.log(1e6), np.log(4e8))))
        ops = nbytes * rng.uniform(2, 20)
        mix = rng.multinomial(int(rng.integers(2, 40)), np.ones(len(OpKind)) / len(OpKind))
        for _ in range(3):
            blocks = int(rng.choice([33, 264, 1056, 2112]))
            kernels.append((f"p:{s}:{s:08x}:{blocks}x256", nbytes, ops, mix, blocks))
    for model, batch in combos:
        scale = batch / 4096 * {"m1": 1.0, "m2": 1.7, "m3": 0.6}[model]
        for name, nbytes, ops, mix, blocks in kernels:
            alone = 0.01 + max(nbytes / (bw * 0.3), ops / (issue * 0.5)) \
                / min(1.0, blocks / 264) * 1e3
            for i, st in enumerate(STAGES):
                s_bytes = scale * 1e8 * (1 + i % 4)
                s_alone = 0.05 + s_bytes / (bw * 0.6) * 1e3
                share = (s_bytes / s_alone) / (s_bytes / s_alone + nbytes / alone)
                noise = rng.normal(1, 0.02, 3)
                rows.append({
                    "gpu": "NVIDIA H200", "model": model, "batch": batch, "kernel": name,
                    "stage": st, "pipeline": "p", "features": int(mix.sum() // 3 + 1),
                    "nodes": int(mix.sum()), "chains": int(mix.sum() // 3 + 1),
                    "has_lists": 1, "rows": batch, "elements": nbytes / 8, "int_ops": ops,
                    "kernel_bytes": nbytes, "blocks": blocks, "threads": 256,
                    "registers": 40, "occupancy": 0.6,
                    **{f"op_{op.value}": int(c) for op, c in zip(OpKind, mix)},
                    "stage_flops": s_bytes * 2, "stage_bytes": s_bytes, "stage_kernels": 2,
                    "stage_parallelism": 1e6, "stage_alone_ms": s_alone * noise[0],
                    "stage_corun_ms": s_alone * (1 + 0.5 * (1 - share) *
                                                 min(1.0, alone / s_alone)) * noise[1],
                    "kernel_alone_ms": alone * noise[2],
                    "kernel_corun_ms": alone * (1 + 1.5 * share) * noise[2], "reps": 3,
                    "torch": "x", "numba_cuda": "y", "measured_utc": "2026-11-29T00:00:00Z"})
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)


@pytest.fixture(scope="module")
def profile_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("fit") / "profile.csv"
    synthetic_profile(path, np.random.default_rng(0))
    return path


@pytest.fixture(scope="module")
def small_profile_csv(tmp_path_factory):
    """A quarter of the rows, for tests of how a model is kept, not of how well it fits
    (they fit it two or three times)."""
    path = tmp_path_factory.mktemp("fit-small") / "profile.csv"
    synthetic_profile(path, np.random.default_rng(0), shapes=6)
    return path


def test_split_holds_out_whole_groups(profile_csv):
    rows = learned.read_profile(profile_csv)
    train, test = evaluation.split(rows, 0.25, 0)
    assert len(train) + len(test) == len(rows)
    combos = lambda rs: {(r["model"], r["batch"]) for r in rs}  # noqa: E731
    shapes = lambda rs: {r["kernel"].rsplit(":", 1)[0] for r in rs}  # noqa: E731
    held = combos(test) - combos(train)
    assert held, "a model/batch combination is held out whole"
    assert shapes(test) - shapes(train), "a kernel feature set is held out whole"


def test_fit_reports_heldout_error_and_beats_baselines(profile_csv, tmp_path, capsys):
    out = tmp_path / "model.pkl"
    assert main(["fit", str(profile_csv), "-o", str(out)]) == 0
    report = json.loads(out.with_suffix(".json").read_text())
    h = report["heldout"]
    assert set(h) == {"learned", "analytic", "rap-style"}
    for target in ("kernel_alone", "kernel_corun", "stage_slowdown"):
        assert h["learned"][target]["mape_pct"] < min(h["analytic"][target]["mape_pct"],
                                                      h["rap-style"][target]["mape_pct"])
    assert h["learned"]["stage_alone"]["mape_pct"] < 10
    assert h["learned"]["kernel_alone"]["mape_pct"] < 10
    assert h["learned"]["stage_slowdown"]["mape_pct"] < 5
    assert (tmp_path / "model-heldout.png").exists()
    assert "held-out MAPE" in capsys.readouterr().out


def test_stale_model_is_refused(small_profile_csv, tmp_path, monkeypatch):
    out = tmp_path / "model.pkl"
    assert main(["fit", str(small_profile_csv), "-o", str(out)]) == 0
    model, meta = model_file.load_model(out, small_profile_csv)
    assert meta["rows"] == len(learned.read_profile(small_profile_csv))
    other = tmp_path / "other.csv"
    other.write_text(small_profile_csv.read_text().replace("2026-11-29T00", "2026-11-30T00"))
    with pytest.raises(SpecError, match="data_sha256"):
        model_file.load_model(out, other)
    here = model_file.library_versions()
    monkeypatch.setattr(model_file, "library_versions",
                        lambda: {**here, "scikit-learn": "0.0"})
    with pytest.raises(SpecError, match="scikit-learn"):
        model_file.load_model(out)
    # a model of other features (or from before they were versioned) is not used either
    other_version = str(int(features.FEATURES_VERSION) + 1)
    monkeypatch.setattr(model_file, "library_versions",
                        lambda: {**here, "corun-features": other_version})
    with pytest.raises(SpecError, match="corun-features"):
        model_file.load_model(out)


def test_bad_inputs(tmp_path, capsys):
    assert main(["fit", str(tmp_path / "none.csv"), "-o", str(tmp_path / "m.pkl")]) == 2
    assert "an existing profile CSV" in capsys.readouterr().err


def test_simulator_uses_a_fitted_model_for_its_gpu(small_profile_csv, tmp_path, monkeypatch):
    from corun.sim import Scenario, Strategy, StrategyKind, simulate
    from corun.spec import hardware_preset, model_preset, pipeline_preset

    sc = Scenario(hardware_preset("h200", 1), model_preset("criteo-kaggle"),
                  pipeline_preset("kaggle"), Strategy(StrategyKind.GPU_OVERLAP),
                  iterations=4, warmup=1)
    monkeypatch.setattr(learned, "DATA_DIR", tmp_path)
    assert simulate(sc).prediction.provenance.cost_model == "analytic"
    (tmp_path / "h200").mkdir()
    shutil.copy(small_profile_csv, tmp_path / "h200" / "profile.csv")
    assert main(["fit", str(tmp_path / "h200"), "-o", str(tmp_path / "h200" / "model.pkl")]) == 0
    p = simulate(sc).prediction
    assert p.provenance.cost_model.startswith("learned (data ")
    assert p.kernels[0].time_ms > 0
    a100 = Scenario(hardware_preset("a100", 1), sc.model, sc.pipeline, sc.strategy,
                    iterations=4, warmup=1)
    carried = simulate(a100).prediction
    assert carried.provenance.cost_model.endswith("carried from H200 by ceilings")
    assert [f.facts["source"] for f in carried.findings
            if f.kind is FindingKind.TIMES_CARRIED] == ["H200"]


def test_model_from_other_library_versions_is_refitted_once(small_profile_csv, tmp_path,
                                                           monkeypatch, capsys):
    from corun.spec import hardware_preset

    d = tmp_path / "data" / "h200"
    d.mkdir(parents=True)
    shutil.copy(small_profile_csv, d / "profile.csv")
    assert main(["fit", str(d), "-o", str(d / "model.pkl")]) == 0
    monkeypatch.setattr(learned, "DATA_DIR", tmp_path / "data")
    monkeypatch.setenv("CORUN_CACHE_DIR", str(tmp_path / "cache"))
    hw = hardware_preset("h200", 1)
    assert learned.cost_model_for(hw).meta.get("refitted_from") is None
    capsys.readouterr()
    here = model_file.library_versions()
    monkeypatch.setattr(model_file, "library_versions",
                        lambda: {**here, "scikit-learn": "0.0"})
    cm = learned.cost_model_for(hw)
    assert cm.meta["refitted_from"] == str(d / "model.pkl")
    assert "refitting" in capsys.readouterr().err
    assert learned.cost_model_for(hw).meta["refitted_from"]  # from the cache, silently
    assert "refitting" not in capsys.readouterr().err
    (d / "profile.csv").write_text((d / "profile.csv").read_text().replace("2026-11-29T00",
                                                                           "2026-11-30T00"))
    assert learned.cost_model_for(hw).meta["data_sha256"] == learned.data_hash(d)
    (d / "model.pkl").write_bytes(b"not a pickle of this scikit-learn")  # unpickling fails
    monkeypatch.setenv("CORUN_CACHE_DIR", str(tmp_path / "cache2"))
    assert learned.cost_model_for(hw).meta["refitted_from"] == str(d / "model.pkl")


def test_a_profiled_stage_is_answered_with_its_measurement(profile_csv):
    from corun.costmodel.profile_data import read_profile

    rows = read_profile(profile_csv)
    model = learned.CoRunModel().fit(rows)
    first = {}
    for r in rows:
        first.setdefault((r["model"], r["batch"], r["stage"]), r)
    seen = list(first.values())
    got = model.predict_stage_ms(seen)
    assert got == pytest.approx([float(r["stage_alone_ms"]) for r in seen], rel=1e-9)
    # a stage no row timed (three times the bytes of m2's) goes to the power law
    unseen = [dict(r, stage_bytes=str(3 * float(r["stage_bytes"])),
                   stage_flops=str(6 * float(r["stage_bytes"]))) for r in seen[:9]]
    power_law = model.estimators_["stage_alone"].predict(learned.stage_only(unseen))
    assert model.predict_stage_ms(unseen) == pytest.approx(power_law)


def test_caveat_names_what_the_profile_never_timed(capsys):
    """The committed H200 model answers a profiled model and batch from its measurements
    and says nothing; at an unprofiled batch it says it interpolates, for a model never
    profiled that it extrapolates or borrows another model's stages, and the command line
    shows the line."""
    from dataclasses import replace

    from corun.costmodel import shard_tables, stage_work
    from corun.spec import hardware_preset, model_preset

    hw = hardware_preset("h200", 1)
    cm = learned.cost_model_for(hw)

    def line_for(m):
        f = cm.untimed_stages(m, list(stage_work(m, hw, shard_tables(m, hw), 0).values()), hw)
        return f and finding_line(f)

    def caveat(name, batch):
        return line_for(replace(model_preset(name), batch_per_gpu=batch))

    assert caveat("criteo-kaggle", 8192) is None
    said = caveat("criteo-kaggle", 4096)
    assert "profiled on H200 at batch 2048, 8192, 16384, not 4096" in said
    assert "9 of 9 training stages" in said and "interpolated" in said
    assert "extrapolated" not in said
    past = caveat("criteo-kaggle", 32768)  # beyond the largest profiled batch
    assert "not 32768" in past and "extrapolated past the profiled batches" in past
    assert "corun profile --models criteo-kaggle --batches 32768" in past
    assert "never profiled on H200" in caveat("heavy-mlp", 16384)
    assert caveat("heavy-fused", 16384) is None
    assert caveat("heavy-lean", 16384) is None
    # heavy-small: heavy-lean's stages but PyTorch's forward, which no profile timed there
    assert "heavy-small was never profiled on H200" in caveat("heavy-small", 16384)
    assert "extrapolated" in caveat("heavy-small", 16384)
    copy = replace(model_preset("heavy-lean"), name="lean-copy", batch_per_gpu=16384)
    assert line_for(copy) is None  # a renamed preset is the preset (same_model_names)
    # a DCN rank a dot interaction never uses: heavy-lean's stages, feature for feature,
    # though not the preset
    copy = replace(copy, dcn_low_rank=64)
    borrowed = line_for(copy)
    assert "lean-copy was never profiled on H200" in borrowed
    assert "another model's profiled stages" in borrowed and "tables' bytes" in borrowed
    assert main(["simulate", "--model", "heavy-mlp", "--pipeline", "heavy-20", "--batch",
                 "16384", "--strategy", "ideal", "--iterations", "4", "--quiet"]) == 0
    assert "caution: heavy-mlp was never profiled on H200" in capsys.readouterr().out


def test_bag_kernel_forward_is_a_stage_feature_of_its_own():
    """heavy-lean differs from heavy-small only in its forward (the bag kernel): its
    emb_fwd gets features of its own, so the fit does not answer it with PyTorch's
    forward measured on another model; every other stage matches feature for feature.
    The tables' bytes tell heavy-small's stages that touch them from heavy-fused's."""
    from dataclasses import replace

    from corun.costmodel import shard_tables, stage_work
    from corun.spec import Stage, hardware_preset, model_preset

    hw = hardware_preset("h200", 1)

    def keys(name):
        m = replace(model_preset(name), batch_per_gpu=16384)
        work = stage_work(m, hw, shard_tables(m, hw), 0)
        return {s: learned.stage_key("NVIDIA H200", w) for s, w in work.items()}, work

    lean, lean_work = keys("heavy-lean")
    small, _ = keys("heavy-small")
    assert [s for s in lean if lean[s] != small[s]] == [Stage.EMB_FWD]
    assert [s for s, w in lean_work.items() if w.bag_kernel] == [Stage.EMB_FWD]
    row = learned.stage_row(lean_work[Stage.EMB_FWD])
    assert row["stage_bag_kernel"] == 1.0 and features.stage_bag_kernel(row) == 1.0
    # heavy-fused's 100k-row tables against heavy-small's 10k: the stages that touch them
    fused, fused_work = keys("heavy-fused")
    assert [s for s in fused if fused[s] != small[s]] == [Stage.EMB_FWD, Stage.EMB_BWD,
                                                           Stage.OPTIMIZER]
    assert fused_work[Stage.EMB_BWD].table_bytes == 26 * 100_000 * 8 * 4
    assert fused_work[Stage.TOP_MLP_BWD].table_bytes == 0.0
    # heavy-hot's hot-row update against heavy-lean's plain one: emb_bwd alone differs,
    # and rows of profiles without the column derive it from their preset
    hot, hot_work = keys("heavy-hot")
    assert [s for s in hot if hot[s] != lean[s]] == [Stage.EMB_BWD]
    assert learned.stage_row(hot_work[Stage.EMB_BWD])["stage_hot_row"] == 1.0
    assert features.stage_hot_row({"model": "heavy-hot", "batch": 8192, "stage": "emb_bwd"}) == 1
    assert features.stage_hot_row({"model": "heavy-lean", "batch": 8192, "stage": "emb_bwd"}) == 0


def test_interpolate_in_rows_follows_the_line_and_bounds_its_ends():
    points = [(8192, 0.288), (16384, 0.557), (24576, 0.803)]
    assert learned.interpolate_in_rows(points, 12288) == pytest.approx((0.288 + 0.557) / 2)
    assert learned.interpolate_in_rows(points, 16384) == pytest.approx(0.557)
    # above: on the line through the last two; a falling line is held flat
    assert learned.interpolate_in_rows(points, 32768) == pytest.approx(0.803 + 0.246)
    assert learned.interpolate_in_rows([(2048, 0.2), (4096, 0.1)], 8192) == pytest.approx(0.1)
    # below: on the line, but no less than the first time scaled by the rows and no more
    # than the first time (a kernel's fixed cost)
    assert learned.interpolate_in_rows(points, 4096) == pytest.approx(0.288 - 0.269 / 2)
    assert learned.interpolate_in_rows([(8192, 0.1), (16384, 0.5)], 4096) == \
        pytest.approx(0.05)
    flat = [(2048, 0.017), (4096, 0.018)]
    assert learned.interpolate_in_rows(flat, 1024) == pytest.approx(0.0165)
    assert learned.interpolate_in_rows([(8192, 0.3), (16384, 0.3)], 4096) == 0.3
    assert learned.interpolate_in_rows(points[:1], 12288) is None


def test_a_kernel_timed_at_other_rows_is_read_off_its_line(profile_csv):
    """`kernel_alone_ms`: the profile's time at the rows it timed, the line through the
    same kernel's other row counts where it did not, None for a kernel never timed; the
    cost model answers with it, and hands it to the co-run estimator for pairs."""
    from corun.costmodel import shard_tables, stage_work
    from corun.costmodel.types import KernelWork
    from corun.spec import hardware_preset, model_preset

    rows = learned.read_profile(profile_csv)
    model = learned.CoRunModel(0).fit(rows)
    (gpu, name, rows_n), ms = next(iter(model.kernel_measured_.items()))
    other = {k[2]: v for k, v in model.kernel_measured_.items() if k[:2] == (gpu, name)}
    assert sorted(other) == [2048, 4096] and other[rows_n] == ms
    assert model.kernel_alone_ms(gpu, name, 3072) == pytest.approx(
        (other[2048] + other[4096]) / 2)
    assert model.kernel_alone_ms(gpu, "never:timed", 3072) is None
    r = next(r for r in rows if r["kernel"] == name and int(r["rows"]) == rows_n)
    assert model.predict([r], [1.25])["kernel_alone"][0] == 1.25
    cm = learned.LearnedCostModel(model, {"data_sha256": "0" * 10, "rows": len(rows)})
    hw = hardware_preset("h200", 1)
    kw = KernelWork(name="k", rows=3072, elements=1.0, int_ops=1.0, hbm_bytes=1.0,
                    ops=(OpKind.LOGIT,), blocks=264, threads_per_block=256, key=name)
    line = model.kernel_alone_ms(gpu, name, 3072)
    assert cm.kernel_ms(kw, hw) == pytest.approx(line)
    model_ = model_preset("criteo-kaggle")
    stage = next(iter(stage_work(model_, hw, shard_tables(model_, hw), 0).values()))
    assert cm.whole_run(kw, stage, hw)[0] == pytest.approx(line)  # a pair never timed
    # a kernel no profile timed whose bound (the same kernel without source_first) was
    # timed is answered with the bound's time, and not reported as the trees'
    src = replace(kw, key=name + ":src", bound_key=name)
    assert cm.kernel_ms(src, hw) == pytest.approx(line)
    assert cm.untimed_kernels([src], hw) is None
    assert cm.untimed_kernels([replace(src, bound_key="never:timed")], hw) is not None


def test_resident_rows_are_their_own_pairs_from_the_stage_start(profile_csv):
    """A resident row (kernel_lead_ms) is fitted from its stage's start: its lead is taken
    off the kernel's times, and the model answers resident and released queries with
    their own measured pairs."""
    rows = learned.read_profile(profile_csv)
    r = dict(rows[0])
    lead = 0.25 * float(r["kernel_alone_ms"])
    resident = {**r, "kernel_lead_ms": str(lead),
                "kernel_corun_ms": str(float(r["kernel_corun_ms"]) + 1.0)}
    model = learned.CoRunModel(0).fit([*rows, resident])
    key = next(k for k in model.pair_measured_ if k[1] == r["kernel"] and k[3])
    released = model.pair_measured_[key[:3] + (False,)]
    got = model.pair_measured_[key]
    assert got[0] == pytest.approx(released[0] - lead)
    assert got[1] == pytest.approx(released[1] + 1.0 - lead)
    y = learned.targets([resident])["kernel_corun"][0]
    assert y == pytest.approx((float(resident["kernel_corun_ms"]) - lead)
                              / (float(r["kernel_alone_ms"]) - lead + float(r["stage_alone_ms"])))
    short = {**resident, "kernel_lead_ms": str(float(r["kernel_alone_ms"]))}
    assert not learned.fitted(short) and learned.fitted(resident) and learned.fitted(r)


def test_whole_runs_in_one_batch_equal_the_pairs_asked_one_by_one():
    """The simulator asks the learned model about a kernel beside every stage at once
    (`whole_runs`, one scikit-learn call for the pairs not measured); each answer is the
    one `whole_run` gives alone, measured pairs included, and asking again is free."""
    from corun.costmodel import kernel_work, shard_tables, stage_work
    from corun.spec import hardware_preset, model_preset, one_kernel_plan, pipeline_preset

    hw = hardware_preset("h200", 1)
    committed = learned.cost_model_for(hw)
    model, pipe = model_preset("criteo-kaggle"), pipeline_preset("kaggle")
    works = list(stage_work(model, hw, shard_tables(model, hw), 0).values())
    for blocks in (77, 66):  # a launch no profile timed, and the one the plans use
        k = one_kernel_plan(pipe, model.name, 1, "emb_fwd", blocks, 256).kernels[0]
        kw = kernel_work(pipe, k.name, k.nodes, model.batch_per_gpu, k.blocks,
                         k.threads_per_block, k.warp_rows)
        for resident in (False, True):
            batch = learned.LearnedCostModel(committed.model, committed.meta)
            single = learned.LearnedCostModel(committed.model, committed.meta)
            together = batch.whole_runs(kw, works, hw, resident)
            assert together == [single.whole_run(kw, w, hw, resident) for w in works]
            assert batch.whole_runs(kw, works[::-1], hw, resident) == together[::-1]


def test_a_source_first_kernel_is_answered_by_the_timed_kernel_without_it():
    """heavy-lean b16384's whole heavy-rehash pipeline in 132 blocks, timed on the H200
    alone and beside every stage without source_first: with it (no profile timed it),
    the learned model answers with those timings, which bound it (KernelWork.bound_key),
    not with the trees; where nothing bounds it, the trees answer."""
    from corun.costmodel import kernel_work, shard_tables, stage_work
    from corun.spec import hardware_preset, model_preset, one_kernel_plan, pipeline_preset

    hw = hardware_preset("h200", 1)
    committed = learned.cost_model_for(hw)
    model = replace(model_preset("heavy-lean"), batch_per_gpu=16384)
    pipe = pipeline_preset("heavy-rehash")
    works = list(stage_work(model, hw, shard_tables(model, hw), 0).values())
    k = one_kernel_plan(pipe, model.name, 1, "emb_fwd", 132, 256).kernels[0]
    plain, src = (kernel_work(pipe, k.name, k.nodes, 16384, k.blocks, k.threads_per_block,
                              k.warp_rows, k.fixed_offsets, s) for s in (False, True))
    cm = learned.LearnedCostModel(committed.model, committed.meta)
    assert src.bound_key == plain.key and cm.timed_ms(plain, hw) is not None
    assert cm.kernel_ms(src, hw) == cm.kernel_ms(plain, hw)
    measured = [w for w in works if cm._pair_timed(plain, w, hw, False) is not None]
    assert measured
    assert cm.whole_runs(src, measured, hw) == cm.whole_runs(plain, measured, hw)
    unbounded = replace(src, bound_key="")
    assert cm.timed_ms(unbounded, hw) is None
    assert cm.whole_runs(unbounded, measured, hw) != cm.whole_runs(plain, measured, hw)


def test_a_saved_model_is_gzipped_the_same_bytes_each_time_and_read_only_as_written(
        profile_csv, tmp_path):
    """save_model gzips the pickle (the H200 model 5.1 MB -> 1.3 MB), with no time in the
    header, so one fit writes the same bytes twice, and records their hash beside them;
    a file of other bytes (a plain pickle, one changed after) is refused before it is
    unpickled, so nothing in it runs."""
    import pickle

    model = learned.CoRunModel(0).fit(learned.read_profile(profile_csv))
    meta = {"versions": model_file.library_versions(), "data_sha256": "x"}
    a, b = tmp_path / "a.pkl", tmp_path / "b.pkl"
    model_file.save_model(model, a, meta)
    model_file.save_model(model, b, meta)
    assert a.read_bytes()[:2] == model_file.GZIP_MAGIC and a.read_bytes() == b.read_bytes()
    got, got_meta = model_file.load_model(a)
    assert got_meta == meta and got.pair_measured_ == model.pair_measured_
    ran = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (ran.write_text, ("unpickled",))

    a.write_bytes(pickle.dumps({"model": Payload(), "meta": meta}))
    with pytest.raises(SpecError, match="a model is read only as corun fit wrote it"):
        model_file.load_model(a)
    assert not ran.exists()
    model_file.report_of(b).unlink()
    with pytest.raises(SpecError, match="sha256"):
        model_file.load_model(b)


def test_lookup_rows_are_answered_as_measured_and_leave_the_fit_alone(profile_csv, tmp_path):
    """Rows under a profile folder's lookup/ subfolder: their stages (for a step that
    trains on their pipeline), pairs and kernels are answered with their measurements;
    the estimators are fitted as without them
    (every unmeasured pair predicted the same), a fitted row wins over a lookup row of the
    same key, and the folder's data hash covers them (so a stale model is refitted)."""
    from corun.costmodel.profile_data import LOOKUP_DIR, data_hash, lookup_rows

    rows = learned.read_profile(profile_csv)
    m1 = [r for r in rows if r["model"] == "m1"]
    fitted_rows = [r for r in rows if r["model"] != "m1"]
    clash = dict(fitted_rows[0], kernel_corun_ms="123.0")  # a key the fit rows hold too
    folder = tmp_path / "data"
    (folder / LOOKUP_DIR).mkdir(parents=True)
    shutil.copy(profile_csv, folder / "profile.csv")
    before = data_hash(folder)
    with open(folder / LOOKUP_DIR / "profile.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows([*m1, clash])
    assert data_hash(folder) != before
    assert len(lookup_rows(folder)) == len(m1) + 1 and lookup_rows(tmp_path) == []
    assert lookup_rows(folder / "profile.csv") == []  # a single CSV has no lookup rows

    plain = learned.CoRunModel(0).fit(fitted_rows)
    both = learned.CoRunModel(0).fit(fitted_rows, lookup=lookup_rows(folder))
    probe = [dict(r, stage_bytes=str(3 * float(r["stage_bytes"]))) for r in m1[:20]]
    for t, v in plain.predict(probe).items():
        assert both.predict(probe)[t] == pytest.approx(v, rel=1e-12)
    r = m1[0]
    key = (learned.gpu_of(r["gpu"]).name, r["kernel"],
           learned._stage_key(learned.stage_only([r])[0]), False)
    assert key not in plain.pair_measured_
    assert both.pair_measured_[key][1] == pytest.approx(float(r["kernel_corun_ms"]))
    # a looked-up stage time answers only a step that trains on its rows' pipeline
    mine = dict(r, trains_on=r["pipeline"])
    assert both.predict_stage_ms([mine])[0] == pytest.approx(float(r["stage_alone_ms"]))
    assert plain.predict_stage_ms([mine])[0] != pytest.approx(float(r["stage_alone_ms"]))
    for other in (dict(r, trains_on=r["pipeline"] + "-other"), r):
        assert both.predict_stage_ms([other])[0] == pytest.approx(
            plain.predict_stage_ms([other])[0], rel=1e-12)
    c = fitted_rows[0]
    ckey = (learned.gpu_of(c["gpu"]).name, c["kernel"],
            learned._stage_key(learned.stage_only([c])[0]), False)
    assert both.pair_measured_[ckey][1] == pytest.approx(float(c["kernel_corun_ms"]))


def test_the_committed_lookup_rows_answer_only_the_pipeline_they_trained_on():
    """heavy-lean b32768's stages were profiled with the trainer reading heavy-rehash's
    outputs (costmodel/data/h200/lookup/): a step on heavy-rehash's ids takes their
    measured times and is not cautioned; one on heavy-small's ids is extrapolated and
    says so (its update ran 0.23 ms slower on the H200: bench/results/rehash_h200.md)."""
    from dataclasses import replace

    from corun.costmodel.profile_data import lookup_rows
    from corun.spec import hardware_preset, model_preset

    hw = hardware_preset("h200", 1)
    cm = learned.cost_model_for(hw)
    if not isinstance(cm, learned.LearnedCostModel):
        pytest.skip("no committed H200 model")
    rows = [r for r in lookup_rows(learned.DATA_DIR / "h200", "profile")
            if r["model"] == "heavy-lean" and r["batch"] == "32768" and r["stage"] == "emb_bwd"]
    assert rows and {r["pipeline"] for r in rows} == {"heavy-rehash"}
    works = learned.preset_stages("heavy-lean", 32768)
    model = replace(model_preset("heavy-lean"), batch_per_gpu=32768)

    def on(pipeline):
        return [replace(w, trains_on=pipeline) for w in works.values()]

    rehash = {w.stage.value: cm.stage_ms(w, hw) for w in on("heavy-rehash")}
    small = {w.stage.value: cm.stage_ms(w, hw) for w in on("heavy-small")}
    assert rehash["emb_bwd"] == pytest.approx(float(rows[0]["stage_alone_ms"]))
    assert small["emb_bwd"] != pytest.approx(rehash["emb_bwd"])
    assert cm.untimed_stages(model, on("heavy-rehash"), hw) is None
    assert "extrapolated past the profiled batches" in finding_line(
        cm.untimed_stages(model, on("heavy-small"), hw))


def test_graphed_rows_add_kernels_times_alone_and_nothing_else(profile_csv):
    """`fit(..., alone=...)`: a graphed row's kernel time alone answers kernel_alone_ms
    where no fitted or looked-up row timed that kernel at those rows; its pair is not
    taken, a fitted row's time wins, and a resident row adds nothing."""
    rows = learned.read_profile(profile_csv)
    base = learned.CoRunModel(0).fit(rows)
    r = rows[0]
    gpu = learned.gpu_of(r["gpu"]).name
    graphed = {**r, "rows": "12288", "kernel_alone_ms": "7.5", "stage_corun_ms": "99"}
    fitted_twin = {**r, "kernel_alone_ms": "123"}
    resident = {**r, "rows": "20480", "kernel_alone_ms": "9", "kernel_lead_ms": "0.01"}
    model = learned.CoRunModel(0).fit(rows, alone=[graphed, fitted_twin, resident])
    assert model.kernel_alone_ms(gpu, r["kernel"], 12288) == 7.5
    own = (gpu, r["kernel"], int(r["rows"]))
    assert model.kernel_measured_[own] == base.kernel_measured_[own]
    assert (gpu, r["kernel"], 20480) not in model.kernel_measured_
    assert model.pair_measured_ == base.pair_measured_


def test_the_stage_regressor_follows_scikit_learns_estimator_contract():
    """PerStageRidge: hyperparameters in __init__ only, so clone and get_params work; fit
    returns self and sets attributes ending in _; predict refuses before fit; a stage seen
    fewer than min_rows times falls back to the shared model."""
    import pickle

    from corun.costmodel.estimators import PerStageRidge
    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError

    rng = np.random.default_rng(3)
    x = np.zeros((40, 8))
    x[:, :2] = rng.uniform(0.5, 2.0, (40, 2))
    x[np.arange(40), 4 + np.arange(40) % 3] = 1.0  # three stages one-hot from column 4
    y = np.exp(0.5 * np.log(x[:, 0]) + (np.arange(40) % 3))
    est = PerStageRidge(stage_column=4, stages=3, min_rows=14)
    assert clone(est).get_params() == est.get_params()
    with pytest.raises(NotFittedError):
        est.predict(x)
    assert est.fit(x, y) is est and est.n_features_in_ == 8
    assert set(est.by_stage_) == {0}  # 14 rows of stage 0, 13 of the others
    assert np.allclose(pickle.loads(pickle.dumps(est)).predict(x), est.predict(x))
    assert np.mean(np.abs(est.predict(x) / y - 1)) < 0.6
    with pytest.raises(ValueError, match="positive"):
        clone(est).fit(x, -y)


def test_the_kernel_alone_regressor_carries_a_ratio_to_the_roofline_beyond_its_rows():
    """OverRoofline: kernels profiled all bound by their integer work at 1.7x its
    roofline, then one bound by its bytes, four times more than any profiled: answered
    at 1.7x its own roofline, where the trees on raw times put it at the largest time
    they saw. It follows scikit-learn's contract and refuses a bad floor or time."""
    import pickle

    from corun.costmodel.estimators import OverRoofline, kernel_alone_regressor, kernel_regressor
    from corun.costmodel.features import KERNEL_BYTES_US_COLUMN, KERNEL_OPS_US_COLUMN
    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError

    rng = np.random.default_rng(5)
    ops_us = rng.uniform(50, 500, 200)
    x = np.zeros((200, 4))
    x[:, KERNEL_OPS_US_COLUMN] = np.log1p(ops_us)
    x[:, KERNEL_BYTES_US_COLUMN] = np.log1p(0.5 * ops_us)
    x[:, 3] = rng.uniform(0, 1, 200)  # a feature the time does not follow
    y = 1.7 * (ops_us + 6.0) * 1e-3
    est = kernel_alone_regressor(seed=0)
    assert isinstance(est, OverRoofline)
    with pytest.raises(NotFittedError):
        est.predict(x)
    assert est.fit(x, y) is est and est.n_features_in_ == 4
    streaming = np.zeros((1, 4))
    streaming[0, KERNEL_BYTES_US_COLUMN] = np.log1p(2000.0)
    streaming[0, KERNEL_OPS_US_COLUMN] = np.log1p(100.0)
    want = 1.7 * 2006.0 * 1e-3
    assert est.predict(streaming)[0] == pytest.approx(want, rel=0.05)
    raw = kernel_regressor(seed=0).fit(x, y)
    assert raw.predict(streaming)[0] < 0.5 * want
    assert clone(est).get_params()["floor_us"] == est.floor_us
    assert np.allclose(pickle.loads(pickle.dumps(est)).predict(x), est.predict(x))
    with pytest.raises(ValueError, match="positive"):
        clone(est).fit(x, -y)
    with pytest.raises(ValueError, match="floor_us"):
        OverRoofline(kernel_regressor(0), floor_us=0.0).fit(x, y)


def test_the_roofline_columns_are_where_kernel_features_puts_them(profile_csv):
    """OverRoofline reads a kernel's roofline from two feature columns by position: they
    hold log1p of its bytes at the copy ceiling and of its integer work at the issue
    rate, in us."""
    r = learned.read_profile(profile_csv)[0]
    g = features.gpu_of(r["gpu"])
    x = features.kernel_features(r)
    bytes_us = float(r["kernel_bytes"]) / g.copy_bytes_per_s * 1e6
    ops_us = float(r["int_ops"]) / g.int32_ops_per_s * 1e6
    assert x[features.KERNEL_BYTES_US_COLUMN] == pytest.approx(np.log1p(bytes_us))
    assert x[features.KERNEL_OPS_US_COLUMN] == pytest.approx(np.log1p(ops_us))


def test_the_co_run_model_follows_the_estimator_contract(profile_csv):
    """CoRunModel: get_params/clone give an unfitted twin, predict refuses before fit, and
    fit sets its learned attributes (ending in _) and returns self."""
    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError

    rows = learned.read_profile(profile_csv)
    est = learned.CoRunModel(seed=7)
    assert est.get_params() == {"seed": 7} and clone(est).get_params() == {"seed": 7}
    with pytest.raises(NotFittedError):
        est.predict(rows[:3])
    assert est.fit(rows) is est
    assert set(est.estimators_) == set(features.TARGETS)
    twin = clone(est)
    assert not hasattr(twin, "estimators_")
    assert np.allclose(twin.fit(rows).predict(rows[:5])["kernel_alone"],
                       est.predict(rows[:5])["kernel_alone"])
