"""A stage's room in time (costmodel/stage_room.py) and how the simulator applies it."""

import json
from dataclasses import replace
from pathlib import Path

import pytest
from corun.costmodel import AnalyticCostModel
from corun.costmodel.stage_room import (
    MAX_STAGE_COST,
    RoomKind,
    StageRoom,
    fit_room,
    pooled,
    read_rooms,
    rooms_from_probe,
    solve_pieces,
    spin_free_extra_ms,
    write_rooms,
)
from corun.sim import Scenario, Strategy, StrategyKind
from corun.sim.trace import PREPROCESS
from corun.spec import SpecError
from corun.spec.serde import read_stored_text

from corun import spec

ROOT = Path(__file__).resolve().parent.parent
PROBE_DIR = ROOT / "costmodel/data/h200/stage-room-probes"
PROBES = [PROBE_DIR / f"heavy_{m}_run{r}.json" for r in (1, 2) for m in ("lean", "hot")]
FINE = PROBE_DIR / "heavy_hot_fine_run3.json"
KEY = ("H200", "heavy-lean", 16384, "emb_bwd", True)


def test_fit_room_recovers_a_known_room():
    """A 1 ms stage closed for its first quarter, then at 0.1, 0.5 and 0.8 of a kernel's
    pace: a 0.05 ms kernel released at each quarter spans 0.55, 0.3, 0.1 and 0.0625 ms
    (worked by hand), and the backward solve gives the rates back."""
    room = fit_room([0.75, 0.0, 0.5, 0.25], [0.0625, 0.55, 0.1, 0.3], 0.05, 1.0)
    assert room.starts == pytest.approx((0.0, 0.25, 0.5, 0.75))
    assert room.rates == pytest.approx((0.0, 0.1, 0.5, 0.8))
    assert room.mean_rate == pytest.approx((0.1 + 0.5 + 0.8) / 4)


def test_fit_room_takes_the_stage_cost_over_the_same_windows():
    """The same windows: the stage lost 0.11, 0.06, 0.02 and 0.025 ms (costs 0.1 over the
    second quarter, 0.4 over the last two, worked by hand), so factors 1, 1/0.9, 1/0.6,
    1/0.6; a cost above MAX_STAGE_COST is capped there."""
    room = fit_room([0.0, 0.25, 0.5, 0.75], [0.55, 0.3, 0.1, 0.0625], 0.05, 1.0,
                    extra_ms=[0.045, 0.045, 0.04, 0.025])
    assert room.stage_factors == pytest.approx((1.0, 1 / 0.9, 1 / 0.6, 1 / 0.6))
    assert solve_pieces([0.0], [1.0], [5.0], 1.0, MAX_STAGE_COST) == [MAX_STAGE_COST]


def test_room_factors_by_kind():
    """A fused kernel: its profiled factor times the mean rate over the rate here; the
    assembly: 1 / the rate here; closed: inf. The stage keeps its profiled factor unless
    the room has its own."""
    room = StageRoom((0.0, 0.5), (0.0, 1.0))
    assert room.factors(1.1, 3.0, 0.0) == (1.1, float("inf"), 0.5)
    assert room.factors(1.1, 3.0, 0.7) == (1.1, 1.5, 1.0)
    assert room.factors(1.1, 3.0, 0.5 - 1e-13) == (1.1, 1.5, 1.0)  # at a boundary: the next
    asm = StageRoom((0.0, 0.5), (0.25, 0.5), RoomKind.ASSEMBLY, (1.0, 2.0))
    assert asm.factors(1.1, 3.0, 0.2) == (1.0, 4.0, 0.5)
    assert asm.factors(1.1, 3.0, 0.6) == (2.0, 2.0, 1.0)


@pytest.mark.parametrize("starts, rates, field", [
    ((0.1,), (1.0,), "stage_room.starts[0]"),
    ((0.0, 0.0), (1.0, 1.0), "stage_room.starts"),
    ((0.0,), (-1.0,), "stage_room.rates"),
    ((0.0,), (0.0,), "stage_room.rates"),
    ((0.0, 0.5), (1.0,), "stage_room.starts"),
])
def test_a_bad_room_names_its_field(starts, rates, field):
    with pytest.raises(SpecError, match=field.replace("[", r"\[").replace("]", r"\]")):
        StageRoom(starts, rates)
    with pytest.raises(SpecError, match="stage_room.stage_factors"):
        StageRoom((0.0,), (1.0,), stage_factors=(0.5,))


def test_fit_room_needs_a_release_with_the_stage_and_inside_it():
    with pytest.raises(SpecError, match="offsets_ms"):
        fit_room([0.5, 1.0], [0.1, 0.1], 0.05, 2.0)
    with pytest.raises(SpecError, match="offsets_ms"):
        fit_room([0.0, 2.5], [0.1, 0.1], 0.05, 2.0)


def test_the_probed_updates_are_closed_to_the_small_kernel_not_the_assembly():
    """On the H200 (bench/results/stage_room_h200.md): heavy-lean's update gives the small
    kernel almost nothing for its first ~40% and most of its pace at its end, the
    assembly a little at first and more as it goes; heavy-hot's hot-row update is open
    to the small kernel at its start and end and closed between, but not to the
    assembly. Beside heavy-lean's update the assembly costs its later part."""
    lean = rooms_from_probe(pooled([json.loads(read_stored_text(p)) for p in PROBES[::2]])[0])
    small, asm = lean[(*KEY, RoomKind.KERNEL)], lean[(*KEY, RoomKind.ASSEMBLY)]
    assert max(small.rates[:2]) < 0.05 and small.rates[-1] > 0.6 and not small.stage_factors
    assert asm.rates[0] > 0.05 and asm.rates[-1] > 0.7
    assert max(asm.stage_factors[2:]) > 1.5
    hot = rooms_from_probe(pooled([json.loads(read_stored_text(p))
                                   for p in [*PROBES[1::2], FINE]])[0])
    key = ("H200", "heavy-hot", 16384, "emb_bwd", True)
    small, asm = hot[(*key, RoomKind.KERNEL)], hot[(*key, RoomKind.ASSEMBLY)]
    middle = [i for i, s in enumerate(small.starts) if 0.3 < s < 0.6]
    assert small.rates[0] > 0.3 and max(small.rates[i] for i in middle) < 0.05
    assert min(asm.rates[i] for i in middle) > 0.3


def test_a_record_that_is_not_a_probe_s_names_the_missing_field(tmp_path):
    from corun.costmodel.stage_room import check_record, main

    with pytest.raises(SpecError, match=r"r\.batch"):
        check_record({"model": "x"}, "r")
    good = json.loads(read_stored_text(PROBES[0]))
    row = {k: v for k, v in good["rows"][0].items() if k != "kernel_ms"}
    with pytest.raises(SpecError, match=r"r\.rows\[0\]\.kernel_ms"):
        check_record({**good, "rows": [row]}, "r")
    assert check_record(good, "r") is good
    bad = tmp_path / "bad.json"
    bad.write_text('{"model": "x"}')
    with pytest.raises(SystemExit):
        main([str(bad), "-o", str(tmp_path / "out.json")])
    assert not (tmp_path / "out.json").exists()


def test_the_spin_before_a_release_is_taken_off_the_stage():
    row = {"offset_ms": 0.5, "stage_ms": 1.3, "stage_alone_ms": 1.0}
    small = {"offset_ms": 0.5, "stage_ms": 1.1, "stage_alone_ms": 1.0}
    assert spin_free_extra_ms(row, small) == pytest.approx(0.2)
    assert spin_free_extra_ms(row, {**small, "stage_ms": 0.9}) == pytest.approx(0.3)
    assert spin_free_extra_ms({**row, "offset_ms": 0.0}, small) == pytest.approx(0.3)


def test_the_installed_rooms_are_the_probes_fitted(tmp_path):
    """costmodel/data/h200/stage-room.json is what `python -m corun.costmodel.stage_room` writes
    from the five probe records beside it (heavy-lean's two starts, heavy-hot's three,
    pooled), and reads back."""
    records = [json.loads(read_stored_text(p)) for p in [*PROBES, FINE]]
    installed = ROOT / "costmodel/data/h200/stage-room.json"
    assert installed.read_text() == write_rooms(records)
    rooms = read_rooms(installed)
    assert len(rooms) == 4 and rooms[(*KEY, RoomKind.ASSEMBLY)].stage_factors
    assert read_rooms(tmp_path / "none.json") == {}
    bad = tmp_path / "bad.json"
    bad.write_text('[{"gpu": "H200"}]')
    with pytest.raises(SpecError, match="bad.json"):
        read_rooms(bad)


class Roomy(AnalyticCostModel):
    """Answers one room of each kind for emb_fwd."""

    room = StageRoom((0.0, 0.5), (0.0, 1.0))
    assembly = StageRoom((0.0, 0.5), (0.0, 0.5), RoomKind.ASSEMBLY, (1.0, 2.0))

    def stage_room(self, model, batch, stage, graphed, hw, kind):
        if stage != "emb_fwd":
            return None
        return self.room if kind is RoomKind.KERNEL else self.assembly


def test_rooms_are_compiled_for_one_gpu_with_training_above(kaggle, kaggle_model, h200):
    from corun.sim.scenario import compile_scenario

    plan = spec.one_kernel_plan(kaggle, kaggle_model.name, 1, "emb_fwd")
    sc = Scenario(h200, kaggle_model, kaggle, Strategy(StrategyKind.PLAN, plan=plan),
                  host_thread=False, iterations=3, warmup=1)
    assert plan.training_priority_high
    kernel, assembly = compile_scenario(sc, Roomy()).gpus[0].kernels
    assert kernel.rooms[0] is Roomy.room and set(kernel.rooms[1:]) == {None}
    assert assembly.rooms[0] is Roomy.assembly and set(assembly.rooms[1:]) == {None}
    assert {k.rooms for k in compile_scenario(sc, AnalyticCostModel()).gpus[0].kernels} == {()}
    low = replace(plan, training_priority_high=False)
    kernels = compile_scenario(replace(sc, strategy=Strategy(StrategyKind.PLAN, plan=low)),
                               Roomy()).gpus[0].kernels
    assert {k.rooms for k in kernels} == {()}


def test_a_kernel_started_partway_into_a_stage_gets_its_room(kaggle, kaggle_model, h200):
    """Behind a kernel that ends at once, the assembly starts just after emb_fwd begins:
    closed for the stage's first half, it waits, then runs at its room's rate (0.5: twice
    its time alone) while the stage runs at half its pace. With a fused kernel's room it
    runs at twice its profiled pace (the room's rate over its mean) and the stage keeps
    its pace. A kernel released with the stage keeps its profiled rate; so does one
    carried into a stage with a room."""
    from corun.sim.engine import run
    from corun.sim.scenario import compile_scenario

    plan = spec.one_kernel_plan(kaggle, kaggle_model.name, 1, "emb_fwd")
    sc = Scenario(h200, kaggle_model, kaggle, Strategy(StrategyKind.PLAN, plan=plan),
                  host_thread=False, iterations=3, warmup=1)
    compiled = compile_scenario(sc, Roomy())
    g = compiled.gpus[0]
    kernel, assembly = g.kernels
    s0, n = g.stage_ms[0], len(g.stages)
    calm = tuple((1.0, 1.0) for _ in g.stages)
    first = replace(kernel, alone_ms=1e-6, effects=calm, carried=calm)

    def assembly_span(rooms, alone_ms=0.1 * s0) -> tuple[float, float]:
        g.kernels = (first, replace(assembly, alone_ms=alone_ms, effects=calm, carried=calm,
                                    rooms=rooms))
        log = run(compiled)
        span = next(s for s in log.spans if s.lane == PREPROCESS and s.name == assembly.name
                    and s.iteration == 0)
        return span.end_ms - span.start_ms, log.stage_ms[0][0][0]

    span, stage = assembly_span(assembly.rooms)  # at 0.5 of its pace, the stage at half
    assert span == pytest.approx(0.5 * s0 - 1e-6 + 0.2 * s0)
    assert stage == pytest.approx(s0 + 0.1 * s0)  # 0.2 s0 beside it at half its pace
    span, stage = assembly_span((Roomy.room,) + (None,) * (n - 1), 0.25 * s0)
    assert span == pytest.approx(0.5 * s0 - 1e-6 + 0.125 * s0)  # twice its profiled pace
    assert stage == pytest.approx(s0)
    span, _ = assembly_span((), 0.25 * s0)
    assert span == pytest.approx(0.25 * s0)  # no room: one rate
    g.kernels = (replace(first, alone_ms=1.5 * s0, rooms=(Roomy.room,) * n),)
    log = run(compiled)  # released with emb_fwd and carried on: its own pace throughout
    assert log.kernel_ms[0][0][0] == pytest.approx(1.5 * s0)
