"""The plan executor on the CPU: every strategy end to end through `corun execute`,
outputs checked against the reference, and each fault ending cleanly with no file."""

from dataclasses import replace

import numpy as np
import pytest
import torch
from corun.backend.columns import ColumnData
from corun.spec import BEFORE_ITERATION, FusedKernel, Measurement, Plan, load, save

from corun import spec
from corun.cli import main
from tests.workload_files import write_small_kaggle

ROWS = 48
ITERS, WARMUP = 3, 1


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    """kaggle with tables of 500 rows, written as spec files the CLI reads."""
    d = tmp_path_factory.mktemp("workload")
    model, pipe = write_small_kaggle(d, ROWS, 500)
    return d, model, pipe


def execute(workload, out, *extra, timed_check: bool = True):
    """`corun execute` on the CPU; `timed_check`: every batch compared (--check-timed),
    not only the first ones (the default, `test_only_the_first_batches_are_compared`)."""
    d, _, _ = workload
    return main(["execute", *extra, "--model", str(d / "model.json"), "--pipeline",
                 str(d / "pipeline.json"), "--device", "cpu", "--iterations", str(ITERS),
                 "--warmup", str(WARMUP), "--distinct-batches", "2",
                 *(["--check-timed"] if timed_check else []), "--quiet", "-o", str(out)])


def mixed_plan(pipe) -> Plan:
    """Dense features on the host CPU, sparse ids in two kernels at two stages, one of
    them before the iteration: every kind of placement in one plan."""
    feature = pipe.feature_of()
    dense = set(pipe.dense_outputs)
    host = tuple(n for n in pipe.order if feature[n] in dense)
    sparse = [n for n in pipe.order if feature[n] not in dense]
    half = {s.node for s in pipe.sparse_outputs[:13]}
    first = tuple(n for n in sparse if feature[n] in half)
    second = tuple(n for n in sparse if feature[n] not in half)
    return Plan(pipe.name, "criteo-kaggle", 1,
                (FusedKernel("early", first, BEFORE_ITERATION, 16, 64),
                 FusedKernel("late", second, "top_mlp_fwd", 16, 64)), cpu_nodes=host)


@pytest.mark.parametrize("strategy", ["ideal", "gpu-sequential", "gpu-overlap", "cpu:2"])
def test_strategies_run_and_check(workload, tmp_path, strategy):
    out = tmp_path / "m.json"
    assert execute(workload, out, "--strategy", strategy) == 0
    m = load(Measurement, out)
    assert m.strategy == strategy and m.batch_per_gpu == ROWS and m.iterations == ITERS
    assert m.iteration.p10_ms <= m.iteration.median_ms <= m.iteration.p90_ms
    assert m.throughput_samples_per_s > 0
    for stage in ("emb_fwd", "top_mlp_bwd", "optimizer"):
        assert m.stages[stage].median_ms >= 0
    if strategy == "ideal":
        assert m.checked_rows == 0 and not m.kernels
    else:
        # one batch per iteration (batch 0 before the loop), 16 rows each
        assert m.checked_rows == ROWS * (ITERS + WARMUP)  # every row of every batch
        assert "h2d" in m.stages and "assemble" in m.stages
        assert (strategy == "cpu:2") == (not m.kernels)
    assert m.plan is not None and m.versions["torch"] == torch.__version__
    assert m.host["step"].median_ms > 0
    launch = {k for k in m.host if k.startswith("launch:")}  # the step's host time by stage
    assert launch == {f"launch:{s.value}" for s in spec.stages_for(1)}
    assert sum(m.host[k].median_ms for k in launch) <= m.host["step"].p90_ms * 1.5
    # every timed iteration one by one, in step with the spreads above
    per = m.per_iteration
    assert all(len(v) == ITERS for v in per.values())
    assert sorted(per["iteration"])[ITERS // 2] == pytest.approx(m.iteration.median_ms, abs=1e-3)
    assert {"batch_wait", "busy", "host_step"} <= set(per)
    assert ("host_finish" in per) == (strategy != "ideal")
    # the fused kernels' launches timed on the host, a batch's within its step's
    assert ("kernels" in m.host) == bool(m.kernels)
    if m.kernels:
        assert 0 < m.host["kernels"].median_ms <= m.host["step"].p90_ms
        assert any(x > 0 for x in per["host_kernels"])
    # each kernel's span batch by batch, in step with its spread (per-iteration values
    # are kept to 4 decimals of a ms, so one may round past the unrounded median)
    rounding_ms = 5e-5
    for name, sp in m.kernels.items():
        xs = sorted(x for x in per[f"span_{name}"] if x > 0)
        assert xs and xs[0] - rounding_ms <= sp.median_ms <= xs[-1] + rounding_ms
    assert ("span_assemble" in per) == (strategy != "ideal")
    # each stage iteration by iteration, in step with its spread; each span's start
    for stage in spec.stages_for(1):
        xs = sorted(per[f"stage_{stage.value}"])
        assert xs[0] - rounding_ms <= m.stages[stage.value].median_ms <= xs[-1] + rounding_ms
    for name in m.kernels:
        assert f"start_{name}" in per and any(x != 0 for x in per[f"start_{name}"])


@pytest.mark.parametrize("ahead", [1, 2])
def test_only_the_first_batches_are_compared(workload, tmp_path, ahead):
    """By default the run's first batches are compared with the reference (those of the
    warmup, each distinct raw batch at least once), the timed ones assembled without the
    comparison; the notes say which, and a re-prediction of the run reads them
    (Scenario.timed_check). --check-timed compares every batch, as runs did before."""
    from corun.spec.measurement import UNCHECKED, notes_say_timed_checked
    from corun.spec.serde import to_jsonable
    from corun.spec.validation import case_from_record

    d, _, pipe = workload
    plan = replace(spec.one_kernel_plan(pipe, "criteo-kaggle", 1, "top_mlp_fwd", 64, 64),
                   batches_ahead=ahead)  # no host workers: they take the test's time
    save(plan, tmp_path / "plan.json")
    for timed in (False, True):
        out = tmp_path / f"m{timed}.json"
        assert main(["execute", str(tmp_path / "plan.json"), "--model", str(d / "model.json"),
                     "--pipeline", str(d / "pipeline.json"), "--device", "cpu",
                     "--iterations", "2", "--warmup", "7", "--distinct-batches", "2",
                     *(["--check-timed"] if timed else []), "--quiet", "-o", str(out)]) == 0
        m = load(Measurement, out)
        compared = max(2, 7 - 2 * (ahead + 1))  # the warmup but its last 2 x pool sets
        assert m.checked_rows == ROWS * (9 if timed else compared)
        assert notes_say_timed_checked(m.notes) == timed
        assert any(UNCHECKED in n for n in m.notes) != timed
        case, _ = case_from_record(to_jsonable(m), "run", 0, "2026-12-06")
        assert case.timed_check == timed  # what a re-prediction simulates it with


@pytest.mark.parametrize("strategy", ["ideal", "gpu-overlap"])
def test_timed_loop_runs_with_the_heap_frozen(workload, tmp_path, monkeypatch, strategy):
    """Every step sees the objects made before the loop set aside from the cyclic
    collector (a full collection stalled one iteration by ~360 ms on the H200), and the
    run gives them back when it ends."""
    import gc

    from corun.backend.trainer import Trainer

    frozen, step = [], Trainer.step

    def spy(self, *a, **k):
        frozen.append(gc.get_freeze_count())
        return step(self, *a, **k)

    monkeypatch.setattr(Trainer, "step", spy)
    assert execute(workload, tmp_path / "m.json", "--strategy", strategy) == 0
    assert len(frozen) == ITERS + WARMUP and min(frozen) > 10_000
    assert gc.get_freeze_count() == 0


def test_host_workers_outlive_the_timed_loop(workload, tmp_path, monkeypatch):
    """Workers done with their batches wait for the executor to close them, then exit
    cleanly: none exits while iterations are still being timed."""
    import corun.backend.executor as ex

    seen = {}

    class Spy(ex.CpuFeeder):
        def close(self):
            seen["alive"] = [p.is_alive() for p in self.procs]
            super().close()
            seen["exit"] = [p.exitcode for p in self.procs]

    monkeypatch.setattr(ex, "CpuFeeder", Spy)
    assert execute(workload, tmp_path / "m.json", "--strategy", "cpu:2") == 0
    assert seen["alive"] == [True, True] and seen["exit"] == [0, 0]


def spy_calls(monkeypatch, **records) -> list:
    """Record a tuple per call of each named method (`name=(class, record(self, *args))`)
    before it runs; returns the list they are appended to."""
    calls = []
    for name, (cls, record) in records.items():
        real = getattr(cls, name)

        def wrapped(self, *args, _real=real, _record=record, **kwargs):
            calls.append(_record(self, *args))
            return _real(self, *args, **kwargs)
        monkeypatch.setattr(cls, name, wrapped)
    return calls


def execute_plan(workload, tmp_path, plan: Plan, name: str, iterations: int, distinct: int
                 ) -> Measurement:
    """`corun execute` of `plan` saved as <name>.json (the strategy's name) on the CPU,
    no warm-up, every batch compared, two host workers for the plan's CPU nodes (the
    preset's 16 processes take most of the test's time on a 2-core machine); the
    Measurement."""
    d, _, _ = workload
    save(plan, tmp_path / f"{name}.json")
    out = tmp_path / "m.json"
    assert main(["execute", str(tmp_path / f"{name}.json"), "--model", str(d / "model.json"),
                 "--pipeline", str(d / "pipeline.json"), "--device", "cpu", "--iterations",
                 str(iterations), "--warmup", "0", "--distinct-batches", str(distinct),
                 "--host-cores", "2", "--check-timed", "--quiet", "-o", str(out)]) == 0
    return load(Measurement, out)


def test_mixed_plan_file(workload, tmp_path, monkeypatch):
    """Every kind of placement runs and is checked; each batch's assembly is enqueued
    right after its lane's last kernel launch (during the trainer's step, not after it),
    and the host waits for it only after launching the step."""
    from corun.backend.lane import Lane
    from corun.backend.streams import ReleaseClock

    calls = spy_calls(
        monkeypatch,
        mark=(ReleaseClock, lambda self, stage: ("mark", stage)),
        launch=(Lane, lambda self, S, i, index, stream:
                ("launch", i, self.kernels[index].name)),
        assemble=(Lane, lambda self, S, i, *_: ("assemble", i)),
        finish=(Lane, lambda self, S, i, *_: ("finish", i)))
    m = execute_plan(workload, tmp_path, mixed_plan(workload[2]), "mixed", 2, 1)
    assert m.strategy == "mixed" and set(m.kernels) == {"early", "late"}
    assert m.checked_rows == ROWS * 2  # one batch per iteration, every row
    for i in range(2):  # batch 0 before the loop, batch 1 during step 0
        at = calls.index(("assemble", i))
        assert calls[at - 1] == ("launch", i, "late")  # right after its last kernel,
        after = [c for c in calls[at + 1:] if c[0] != "finish"]  # (the feed thread's)
        assert i == 0 or after[0][0] == "mark"  # before the step's next stage
        assert at < calls.index(("finish", i))


def test_two_batches_ahead(workload, tmp_path, monkeypatch):
    """With `batches_ahead` 2 the kernels co-running with step i preprocess batch i + 2
    (three pool sets), and the host launches step i + 1 before it waits for them: it
    waits, after launching step i, for batch i + 1 only. Every row is still checked."""
    from corun.backend.lane import Lane
    from corun.backend.streams import ReleaseClock

    calls = spy_calls(monkeypatch,
                      mark=(ReleaseClock, lambda self, stage: ("mark", stage)),
                      launch=(Lane, lambda self, S, i, *_: ("launch", i)),
                      finish=(Lane, lambda self, S, i, *_: ("finish", i)))
    m = execute_plan(workload, tmp_path, replace(mixed_plan(workload[2]), batches_ahead=2),
                     "ahead", 4, 3)
    assert m.checked_rows == ROWS * 4 and m.plan.batches_ahead == 2
    steps = [at for at, c in enumerate(calls) if c == ("mark", None)]  # each step's start
    assert len(steps) == 4
    launched = [i for kind, i in calls if kind == "launch"]
    assert sorted(set(launched)) == [0, 1, 2, 3] and launched.count(2) == 2
    for b in (2, 3):  # launched with step b - 2 ("early" just before it, "late" at one of
        # its stages), finished after step b - 1 is launched
        at = [k for k, c in enumerate(calls) if c == ("launch", b)]
        assert at[0] == steps[b - 2] - 1 and steps[b - 2] < at[1] < steps[b - 1]
        assert calls.index(("finish", b)) > steps[b - 1]
    assert calls.index(("finish", 1)) < steps[0]  # batches 0 and 1 before the loop


@pytest.mark.parametrize("threaded", [True, False])
def test_batch_work_on_the_feed_thread_during_the_backward(workload, tmp_path, monkeypatch,
                                                           threaded):
    """Two batches ahead, the feed thread (--feed-thread) builds batch i + 1, checks batch
    i and stages batch i + 3 after step i's last forward mark and before step i + 1
    begins; without it the launching thread does the same after the step's last mark.
    Every row checked."""
    import threading

    from corun.backend.lane import Lane
    from corun.backend.streams import ReleaseClock

    def who():
        return threading.current_thread().name

    calls = spy_calls(monkeypatch,
                      mark=(ReleaseClock, lambda self, stage: ("mark", stage, who())),
                      finish=(Lane, lambda self, S, i, *_: ("finish", i, who())),
                      stage=(Lane, lambda self, S, i, *_: ("stage", i, who())))
    plan = replace(mixed_plan(workload[2]), batches_ahead=2)
    d = workload[0]
    save(plan, tmp_path / "ahead.json")
    extra = ["--feed-thread"] if threaded else []
    assert main(["execute", str(tmp_path / "ahead.json"), *extra, "--model",
                 str(d / "model.json"), "--pipeline", str(d / "pipeline.json"), "--device",
                 "cpu", "--iterations", "5", "--warmup", "0", "--distinct-batches", "3",
                 "--host-cores", "2", "--check-timed", "--quiet", "-o",
                 str(tmp_path / "m.json")]) == 0
    m = load(Measurement, tmp_path / "m.json")
    assert m.checked_rows == ROWS * 5
    assert ("join" in m.host) == threaded  # the wait for the feed thread, where there is one
    starts = [k for k, c in enumerate(calls) if c[:2] == ("mark", None)]
    ends = [k for k, c in enumerate(calls) if c[:2] == ("mark", spec.Stage.OPTIMIZER)]
    handed = [k for k, c in enumerate(calls) if c[:2] == ("mark", spec.Stage.TOP_MLP_FWD)]
    assert len(starts) == len(ends) == len(handed) == 5
    assert {c[2] for c in calls if c[0] == "mark"} == {"MainThread"}
    helper = "corun-feed" if threaded else "MainThread"
    for i in range(4):  # step i: batch i + 1 built (0 and 1 before the loop), batch
        # i + 3 staged (i + 3 < 5)
        work = [calls.index(("finish", i + 1, helper))] if i > 0 else []
        if i + 3 < 5:
            work.append(calls.index(("stage", i + 3, helper)))
        for at in work:
            assert (handed[i] if threaded else ends[i]) < at < starts[i + 1]
    assert calls.index(("stage", 2, "MainThread")) < starts[0]  # before the loop


def test_feed_thread_hands_back_what_its_job_raised():
    """A job's exception comes back to the launching thread at `join`, as itself; the
    interpreter's switch interval is restored on close."""
    import sys
    import threading

    from corun.backend.feed_thread import FeedThread
    from corun.spec import SpecError

    before = sys.getswitchinterval()
    feed = FeedThread(torch.device("cpu"))
    ran = []
    feed.post(lambda: ran.append(threading.current_thread().name))
    feed.join()
    assert ran == ["corun-feed"]
    feed.post(lambda: (_ for _ in ()).throw(SpecError("x", 1, "y")))
    with pytest.raises(SpecError, match="x"):
        feed.join()
    feed.post(lambda: ran.append("after"))
    feed.join()
    feed.close()
    assert ran == ["corun-feed", "after"] and sys.getswitchinterval() == before


def test_a_stage_is_released_once_the_host_has_enqueued_it():
    """Each stage's kernels go out at the mark that closes the stage (its own work is
    queued first, so the training stream's priority takes the SMs first), behind the
    event of the mark that opened it."""
    from corun.backend.streams import ReleaseClock
    from corun.backend.trainer import TRAINING_STAGES

    released = []
    clock = ReleaseClock(torch.device("cpu"), lambda stage, opened: released.append(
        (stage, opened, len(clock.marks))))
    clock.mark(None)
    assert released == []
    for k, stage in enumerate(TRAINING_STAGES):
        clock.mark(stage)
        assert released[-1] == (stage, clock.marks[k][1], k + 2)
    assert [s for s, _, _ in released] == list(TRAINING_STAGES)


def test_wrong_output_stops_with_feature_and_row(workload, tmp_path, monkeypatch, capsys):
    """A reference that disagrees in one sparse feature: the run stops and says where."""
    import corun.backend.executor as ex

    real = ex.run_reference

    def skewed(pipeline, inputs):
        out = dict(real(pipeline, inputs))
        node = pipeline.sparse_outputs[3].node
        c = out[node]
        out[node] = ColumnData(np.where(c.values >= 0, c.values + 1, c.values), c.offsets)
        return out

    monkeypatch.setattr(ex, "run_reference", skewed)
    out = tmp_path / "m.json"
    assert execute(workload, out, "--strategy", "gpu-overlap", timed_check=False) == 1
    err = capsys.readouterr().err
    node = workload[2].sparse_outputs[3].node
    assert f"feature {node!r}, row " in err and "no measurement written" in err
    assert not out.exists()


@pytest.mark.parametrize("fault,message,code", [
    (KeyboardInterrupt(), "interrupted; no measurement written", 130),
    (torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
     "CUDA out of memory while training iteration 1", 1),
])
def test_faults_leave_no_file(workload, tmp_path, monkeypatch, capsys, fault, message, code):
    from corun.backend.trainer import Trainer

    real, calls = Trainer.step, []

    def failing(self, batch, clock=None):
        calls.append(1)
        if len(calls) == 2:
            raise fault
        return real(self, batch, clock)

    monkeypatch.setattr(Trainer, "step", failing)
    out = tmp_path / "m.json"
    out.write_text("previous run")
    assert execute(workload, out, "--strategy", "gpu-sequential") == code
    assert message in capsys.readouterr().err
    assert out.read_text() == "previous run"


def test_compile_failure_is_named(workload, tmp_path, monkeypatch, capsys):
    from corun.backend.fusion import FusedGroup
    from numba.core.errors import TypingError

    def broken(self, part, target):
        raise TypingError("Cannot unify int64 and float32")

    monkeypatch.setattr(FusedGroup, "kernel", broken)
    out = tmp_path / "m.json"
    assert execute(workload, out, "--strategy", "gpu-overlap") == 1
    err = capsys.readouterr().err
    assert "a kernel failed to compile while launching fused kernel 'all'" in err
    assert not out.exists()


def test_plan_for_another_pipeline_is_refused(workload, tmp_path, capsys):
    _, _, pipe = workload
    plan = replace(mixed_plan(pipe), pipeline="terabyte")
    save(plan, tmp_path / "p.json")
    out = tmp_path / "m.json"
    assert main(["execute", str(tmp_path / "p.json"), "--model",
                 str(workload[0] / "model.json"), "--pipeline",
                 str(workload[0] / "pipeline.json"), "--device", "cpu", "-o", str(out)]) == 2
    assert "plan.pipeline = 'terabyte'" in capsys.readouterr().err
    assert not out.exists()


def test_plan_or_strategy_not_both(workload, tmp_path, capsys):
    assert main(["execute", "--device", "cpu", "-o", str(tmp_path / "m.json")]) == 2
    assert "either a plan file or --strategy" in capsys.readouterr().err


def test_criteo_file_input(workload, tmp_path):
    """--data: batches read from a Criteo-format file instead of generated."""
    from corun.backend.data import write_criteo_tsv

    path = tmp_path / "day_0.tsv"
    write_criteo_tsv(path, 3 * ROWS + 5, np.random.default_rng(4))
    out = tmp_path / "m.json"
    assert execute(workload, out, "--strategy", "gpu-sequential", "--data", str(path)) == 0
    m = load(Measurement, out)
    assert m.checked_rows == ROWS * (ITERS + WARMUP)  # every row of every batch
    short = tmp_path / "short.tsv"
    write_criteo_tsv(short, ROWS - 1, np.random.default_rng(5))
    assert execute(workload, tmp_path / "x.json", "--strategy", "gpu-sequential", "--data",
                   str(short)) == 2


def owner_plan(model, pipe) -> Plan:
    """Two GPUs: one table of each rank preprocessed by its owner over the global batch
    (one before the iteration, one at the input all-to-all), the rest on every GPU."""
    from corun.spec.sharding import shard_tables

    sharding = shard_tables(model, spec.hardware_preset("h200", 2))
    feature = pipe.feature_of()
    raw = {c.name for c in pipe.inputs}
    chosen = {}
    for s in pipe.sparse_outputs:
        nodes = [n for n in pipe.order if feature[n] == s.node]
        alone = all(pipe.node_by_name[n].input in raw | set(nodes) and
                    all(feature[c] == s.node for c in pipe.consumers[n]) for n in nodes)
        chosen.setdefault(sharding.owner[s.table], (s.node, tuple(nodes))) if alone else None
    assert set(chosen) == {0, 1}
    own = {n for _, nodes in chosen.values() for n in nodes}
    kernels = (FusedKernel("own0", chosen[0][1], BEFORE_ITERATION, 16, 64, gpu=0),
               FusedKernel("own1", chosen[1][1], "input_a2a", 16, 64, gpu=1),
               FusedKernel("rest", tuple(n for n in pipe.order if n not in own), "emb_fwd",
                           64, 128))
    return Plan(pipe.name, model.name, 2, kernels,
                feature_mapping={f: spec.Mapping.OWNER for f, _ in chosen.values()})


def test_torchrun_two_ranks_with_gloo_and_owner_mapping(workload, tmp_path):
    """`torchrun --nproc-per-node 2 ... corun execute PLAN`: the tables sharded over two
    CPU processes, each preprocessing and checking its own batches, rank 0 writing; each
    owner preprocesses its owner-mapped table over both ranks' rows, and those ids skip
    the input all-to-all; every lane's rows are checked. (One torchrun costs the suite
    about 13 s; the two-rank step itself is test_distributed's, in one process.)"""
    import os
    import subprocess
    import sys

    d, model, pipe = workload
    save(owner_plan(model, pipe), tmp_path / "owner.json")
    out = tmp_path / "m.json"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
           "2", "-m", "corun.cli", "execute", str(tmp_path / "owner.json"), "--model",
           str(d / "model.json"), "--pipeline", str(d / "pipeline.json"), "--device", "cpu",
           "--iterations", "3", "--warmup", "1", "--distinct-batches", "2",
           "--check-timed", "--quiet", "-o", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    m = load(Measurement, out)
    assert m.gpu_count == 2 and m.plan.gpu_count == 2 and "rank 0 of 2" in m.notes[0]
    for stage in ("input_a2a", "emb_a2a_fwd", "emb_a2a_bwd", "grad_allreduce"):
        assert stage in m.stages
    assert set(m.kernels) == {"own0", "rest"}  # rank 0's view
    assert "h2d:owner" in m.stages and "assemble:owner" in m.stages
    assert m.checked_rows == (ROWS + 2 * ROWS) * 4  # local lane, owner lane (global), 4 batches


def test_device_check_follows_the_host_rule():
    """`differs` (the on-device check) agrees with backend.columns.equal: integers
    exactly, floats within 1 ulp, NaN equal to NaN; a different id count differs."""
    from corun.backend.assembly import differs
    from corun.backend.trainer import Batch

    dense = torch.tensor([[1.0, float("nan")], [-2.5, 0.0]])
    ids, offs = torch.tensor([3, 4, 5]), torch.tensor([0, 1, 3])
    ref = (dense.clone(), ids.clone(), offs.clone())

    def batch(d=dense, i=ids, o=offs):
        return Batch(d, i, o, torch.zeros(2))

    assert not differs(batch(), ref).item()
    assert not differs(batch(d=torch.nextafter(dense, torch.full_like(dense, 9))), ref).item()
    two_ulp = torch.nextafter(torch.nextafter(dense, dense + 9), dense + 9)
    assert differs(batch(d=two_ulp), ref).item()
    assert differs(batch(i=torch.tensor([3, 4, 6])), ref).item()
    assert differs(batch(o=torch.tensor([0, 2, 3])), ref).item()
    assert differs(batch(i=torch.tensor([3, 4])), ref).item()


def test_executors_share_the_batches_they_are_given(workload, monkeypatch):
    """A benchmark of several strategies makes the raw batches and their references once
    (`inputs`): the second Executor reads the first one's and still checks every row
    against them; another seed makes its own."""
    from corun.backend.executor import Executor
    from corun.backend.settings import RunSettings
    from corun.sim.strategy import parse_strategy, strategy_plan

    _, model, pipe = workload
    made = []
    original = Executor._raw_batches

    def counted(self):
        made.append(self.strategy)
        return original(self)

    monkeypatch.setattr(Executor, "_raw_batches", counted)
    hw, inputs = spec.hardware_preset("h200", 1), {}
    settings = RunSettings(ITERS, WARMUP, 2, check_timed=True)
    for strategy, seed in (("gpu-sequential", 0), ("gpu-overlap", 0), ("gpu-overlap", 1)):
        plan = strategy_plan(parse_strategy(strategy, hw), pipe, model.name, hw)
        m = Executor(model, pipe, plan, strategy, replace(settings, seed=seed), "cpu",
                     say=lambda *a: None, inputs=inputs).run()
        assert m.checked_rows == ROWS * (ITERS + WARMUP)
    assert made == ["gpu-sequential", "gpu-overlap"] and len(inputs) == 2


@pytest.mark.parametrize("planned, flag, want", [
    (False, None, False), (True, None, True), (False, "own", True), (True, "behind", False)])
def test_the_assembly_stream_follows_the_flag_else_the_plan(workload, tmp_path, monkeypatch,
                                                             planned, flag, want):
    """`--assembly-stream own|behind` puts each batch's assembly on a stream of its own or
    behind the kernels; without it, the plan says (Plan.assembly_stream)."""
    from corun.backend import streams

    seen = []
    real = streams.Streams.__init__

    def spy(self, *args, **kwargs):
        seen.append(args[2] if len(args) > 2 else kwargs.get("assembly_stream", False))
        real(self, *args, **kwargs)

    monkeypatch.setattr(streams.Streams, "__init__", spy)
    _, _, pipe = workload
    plan = Plan(pipe.name, "criteo-kaggle", 1,
                (FusedKernel("k0", tuple(pipe.order), "top_mlp_fwd", 64),),
                assembly_stream=planned)
    save(plan, tmp_path / "plan.json")
    extra = ["--assembly-stream", flag] if flag else []
    assert execute(workload, tmp_path / "m.json", str(tmp_path / "plan.json"), *extra) == 0
    assert seen == [want]
    assert load(Plan, tmp_path / "plan.json").assembly_stream is planned  # read back


def test_a_preprocessing_sm_cap_on_the_cpu_is_refused_before_anything_is_written(
        workload, tmp_path, capsys):
    """`--preprocess-sm-cap N` confines the preprocessing stream to N SMs of one GPU; on a
    CPU the error names the setting and what it allows, and no measurement is written."""
    out = tmp_path / "m.json"
    assert execute(workload, out, "--strategy", "gpu-sequential",
                   "--preprocess-sm-cap", "64") != 0
    assert "preprocess_sm_cap = 64: 0 on a CPU or several GPUs" in capsys.readouterr().err
    assert not out.exists()


def test_the_update_grid_is_refused_for_a_model_without_the_fused_update(
        workload, tmp_path, capsys):
    """`--update-blocks-per-sm N` sets the fused embedding update's grid; the small kaggle
    model updates its tables through autograd, so the error names the setting and why,
    and no measurement is written."""
    out = tmp_path / "m.json"
    assert execute(workload, out, "--strategy", "ideal", "--update-blocks-per-sm", "16") != 0
    err = capsys.readouterr().err
    assert "update_blocks_per_sm = 16" in err and "not the fused kernel" in err
    assert not out.exists()


def test_the_update_grid_runs_and_is_noted(workload, tmp_path):
    """With the fused update the setting runs (on a CPU the update is index_add_, so the
    note says the grid was ignored there) and the measurement says which grid ran."""
    d, _, _ = workload
    model = load(spec.Model, d / "model.json")
    fused = replace(model, name="small-fused", optimizer=spec.Optimizer.SGD,
                    embedding_update=spec.EmbeddingUpdate.FUSED_SGD)
    save(fused, tmp_path / "model.json")
    out = tmp_path / "m.json"
    assert main(["execute", "--strategy", "gpu-sequential", "--model",
                 str(tmp_path / "model.json"), "--pipeline", str(d / "pipeline.json"),
                 "--device", "cpu", "--iterations", str(ITERS), "--warmup", str(WARMUP),
                 "--distinct-batches", "2", "--update-blocks-per-sm", "16", "--quiet",
                 "-o", str(out)]) == 0
    notes = load(Measurement, out).notes
    assert any(n.startswith("the fused embedding update on 16 blocks an SM, not the "
                            "default 4") and "ignored on a CPU" in n for n in notes)


def test_the_update_grid_becomes_the_trainer_s_block_cap(monkeypatch):
    """Executor._update_max_blocks: N blocks an SM of this GPU, 0 a thread per bag and
    column, unset the trainer's default; on a CPU always the default."""
    from types import SimpleNamespace

    from corun.backend.executor import Executor

    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda device: SimpleNamespace(multi_processor_count=132))
    for per_sm, want in ((16, 2112), (0, 0), (None, None)):
        fake = SimpleNamespace(update_grid=per_sm, device=torch.device("cuda:0"))
        assert Executor._update_max_blocks(fake) == want
    cpu = SimpleNamespace(update_grid=16, device=torch.device("cpu"))
    assert Executor._update_max_blocks(cpu) is None


@pytest.mark.parametrize("value", [-1, 65])
def test_the_update_grid_names_its_range(value):
    from corun.backend.settings import RunSettings

    with pytest.raises(spec.SpecError) as e:
        RunSettings(update_blocks_per_sm=value)
    assert e.value.field == "update_blocks_per_sm" and "1..64" in str(e.value)
