"""How much SM time a training stage leaves a kernel that starts partway into it.

The co-run profile times a kernel released with a stage, so the simulator's rates for it
average the whole stage. On the H200 the room inside a stage has a shape in time
(probe records in costmodel/data/h200/stage-room-probes/): a small kernel released into graphed
heavy-lean b16384's embedding update (2.34 ms) got almost no SM time for its first ~1.4 ms and
ran at 1.45x its time alone in its last 0.5 ms; the batch's assembly was held up less, and
slowed the update. A StageRoom is that shape for one kind of kernel (RoomKind), fitted from the
probe's releases at several offsets: its pace in each piece of the stage and, for the assembly,
the stage's slowdown beside it. The simulator (sim/engine.py) applies a room to a kernel
that starts after its stage began, where one is installed as costmodel/data/<gpu>/
stage-room.json: on the H200, graphed heavy-lean and heavy-hot b16384's
(sim.scenario.stage_rooms).

    python -m corun.costmodel.stage_room RAW.json [RAW.json ...] -o OUT.json
"""

from __future__ import annotations

import argparse
import enum
import json
import math
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from corun.spec import SpecError
from corun.spec.errors import require

ROOM_FILE = "stage-room.json"
"""The fitted rooms, beside a GPU's profile data (costmodel/data/<gpu>/)."""


class RoomKind(enum.Enum):
    """Which kernels a room is for, and how it applies."""

    KERNEL = "kernel"
    """A fused preprocessing kernel, timed by the probe's small kernel: relative to the
    stage's mean, since the kernel's own profiled rate sets its pace (`factors`)."""
    ASSEMBLY = "assembly"
    """The batch's assembly, timed itself: its pace as measured."""


@dataclass(frozen=True)
class StageRoom:
    """A stage's room in pieces: piece i starts at `starts[i]` (a fraction of the stage's
    progress, the first 0) and gives a new kernel `rates[i]` of its pace alone."""

    starts: tuple[float, ...]
    rates: tuple[float, ...]
    kind: RoomKind = RoomKind.KERNEL
    stage_factors: tuple[float, ...] = ()
    """Per piece, the stage's slowdown while such a kernel runs there (empty: the
    kernel's profiled stage factor)."""
    source: str = ""
    """The probe command (or file) it was fitted from."""

    def __post_init__(self) -> None:
        require(len(self.starts) == len(self.rates) and len(self.starts) > 0,
                "stage_room.starts", len(self.starts), f"{len(self.rates)} (one per rate)")
        require(self.starts[0] == 0.0, "stage_room.starts[0]", self.starts[0], "0")
        require(all(a < b for a, b in zip(self.starts, self.starts[1:])) and
                self.starts[-1] < 1.0, "stage_room.starts", self.starts,
                "increasing fractions in [0, 1)")
        require(all(r >= 0 for r in self.rates), "stage_room.rates", self.rates,
                "rates >= 0")
        require(self.mean_rate > 0, "stage_room.rates", self.rates, "some rate > 0")
        require(not self.stage_factors or (len(self.stage_factors) == len(self.starts) and
                                           all(f >= 1 for f in self.stage_factors)),
                "stage_room.stage_factors", self.stage_factors,
                f"empty, or {len(self.starts)} factors >= 1 (one per piece)")

    @property
    def ends(self) -> tuple[float, ...]:
        return self.starts[1:] + (1.0,)

    @property
    def mean_rate(self) -> float:
        """The rate averaged over the stage: what a kernel released with the stage and
        outlasting it gets, which the co-run profile timed."""
        return sum(r * (e - s) for s, e, r in zip(self.starts, self.ends, self.rates))

    def at(self, progress: float) -> int:
        """The piece at `progress` in [0, 1) (at a boundary, the later one)."""
        return max(j for j, s in enumerate(self.starts) if s <= progress + 1e-12)

    def factors(self, stage: float, kernel: float, progress: float
                ) -> tuple[float, float, float]:
        """(stage factor, kernel factor, where the piece ends) for a kernel at `progress`
        whose profiled factors beside the stage are `stage` and `kernel`. A fused
        kernel's factor is its profiled one times the stage's mean rate over the rate
        here; the assembly's 1 / the rate here (inf where the rate is 0). The stage's is
        the piece's where the room has them."""
        i = self.at(progress)
        rate = self.rates[i]
        if rate <= 0:
            kernel = math.inf
        elif self.kind is RoomKind.ASSEMBLY:
            kernel = 1.0 / rate
        else:
            kernel = kernel * self.mean_rate / rate
        return (self.stage_factors[i] if self.stage_factors else stage), kernel, self.ends[i]


MAX_STAGE_COST = 0.9
"""The most of a stage's pace a kernel beside it is taken to cost (a factor of 10): the
backward solve can ask for more, or for all of it, where a window's whole extra lands in
its first piece (heavy-hot's update took 0.40 ms longer beside the assembly released
with it, which the fit puts in the update's first quarter)."""


def solve_pieces(starts: Sequence[float], spans: Sequence[float], totals: Sequence[float],
                 stage_ms: float, hi: float = math.inf) -> list[float]:
    """Per piece (piece i from starts[i] to the next start, the last to `stage_ms`), the
    density d_i such that each window [starts[i], starts[i] + spans[i]] sums to totals[i]
    over the pieces it covers: solved from the last back, each piece what its window
    leaves once the later pieces are counted, within [0, hi]. A window past the stage's
    end is taken at the last piece's density there."""
    n = len(starts)
    ends = list(starts[1:]) + [stage_ms]
    d = [0.0] * n
    for i in reversed(range(n)):
        window_end = starts[i] + spans[i]
        later = sum(d[j] * (min(ends[j], window_end) - starts[j])
                    for j in range(i + 1, n) if starts[j] < window_end)
        own = min(ends[i], window_end) - starts[i]
        if window_end > stage_ms:
            if i == n - 1:
                own += window_end - stage_ms
            else:
                later += d[-1] * (window_end - stage_ms)
        d[i] = min(hi, max(0.0, (totals[i] - later) / own))
    return d


def fit_room(offsets_ms: Sequence[float], spans_ms: Sequence[float], alone_ms: float,
             stage_ms: float, source: str = "", extra_ms: Sequence[float] = ()
             ) -> StageRoom:
    """The piecewise rate (one piece from each offset on) under which a kernel of
    `alone_ms` released at each offset takes the measured span (`solve_pieces` with each
    window's total the kernel's time alone). With `extra_ms` (how much longer the stage
    took beside each release), also the stage's factor in each piece: the share c of the
    stage's pace the kernel cost there (`solve_pieces` over the same windows, at most
    MAX_STAGE_COST), as 1 / (1 - c). Windows are taken in the stage's time alone."""
    require(len(offsets_ms) == len(spans_ms) and len(offsets_ms) > 0, "offsets_ms",
            len(offsets_ms), f"{len(spans_ms)} (one per span)")
    require(not extra_ms or len(extra_ms) == len(offsets_ms), "extra_ms", len(extra_ms),
            f"empty or {len(offsets_ms)} (one per offset)")
    require(stage_ms > 0, "stage_ms", stage_ms, "> 0")
    order = sorted(range(len(offsets_ms)), key=lambda i: offsets_ms[i])
    starts = [float(offsets_ms[i]) for i in order]
    spans = [float(spans_ms[i]) for i in order]
    require(starts[0] == 0.0, "offsets_ms", starts[0], "an offset of 0 (the stage's start)")
    require(starts[-1] < stage_ms, "offsets_ms", starts[-1], f"< the stage's {stage_ms:g} ms")
    rates = solve_pieces(starts, spans, [alone_ms] * len(starts), stage_ms)
    factors: tuple[float, ...] = ()
    if extra_ms:
        costs = solve_pieces(starts, spans, [float(extra_ms[i]) for i in order], stage_ms,
                             MAX_STAGE_COST)
        factors = tuple(1.0 / (1.0 - c) for c in costs)
    return StageRoom(tuple(s / stage_ms for s in starts), tuple(rates),
                     stage_factors=factors, source=source)


RoomKey = tuple[str, str, int, str, bool, RoomKind]
"""(GPU kind, model, batch per GPU, stage, graphed, kind)."""

ASSEMBLY_ROWS = "assembly"
"""The name of the assembly's rows in a probe record."""


def rooms_from_probe(record: dict) -> dict[RoomKey, StageRoom]:
    """The rooms a stage_offset_probe record measures: a KERNEL room from its small
    kernel (the fused kernel with the fewest blocks: its span times the room at one
    point) and, where it timed the assembly, an ASSEMBLY room from that, with the
    stage's factors (`spin_free_extra_ms`)."""
    rows = record["rows"]
    fused = [r for r in rows if r["kernel"] != ASSEMBLY_ROWS]
    small = min(fused, key=lambda r: (r["blocks"], r["kernel_alone_ms"]))["kernel"]
    small_rows = {r["offset_ms"]: r for r in rows if r["kernel"] == small}
    out = {}
    for kind, name in ((RoomKind.KERNEL, small), (RoomKind.ASSEMBLY, ASSEMBLY_ROWS)):
        mine = [r for r in rows if r["kernel"] == name]
        if not mine:
            continue
        stage_ms = statistics.median(r["stage_alone_ms"] for r in mine)
        alone_ms = statistics.median(r["kernel_alone_ms"] for r in mine)
        extra = [spin_free_extra_ms(r, small_rows.get(r["offset_ms"])) for r in mine] \
            if kind is RoomKind.ASSEMBLY else ()
        room = fit_room([r["offset_ms"] for r in mine], [r["kernel_ms"] for r in mine],
                        alone_ms, stage_ms, record.get("command", ""), extra)
        key = (record.get("gpu", "H200"), record["model"], int(record["batch"]),
               record["stage"], bool(record["graphed"]), kind)
        out[key] = replace(room, kind=kind)
    return out


def spin_free_extra_ms(row: dict, small: dict | None) -> float:
    """How much longer the stage took beside the kernel of `row` than alone, less the
    probe's spin: released at an offset, the kernel waits behind a spin on its stream,
    which on the H200 cost graphed heavy-hot's hot-row update 0.13 ms whatever the offset
    (the small kernel's rows of the heavy-hot probe records) and
    heavy-lean's nothing; so the small kernel's extra at the same offset (at least 0, a
    hundredth of a millisecond of its own) is taken off."""
    extra = row["stage_ms"] - row["stage_alone_ms"]
    if row["offset_ms"] > 0 and small is not None:
        extra -= max(0.0, small["stage_ms"] - small["stage_alone_ms"])
    return extra


RECORD_FIELDS = ("model", "batch", "stage", "graphed", "rows")
ROW_FIELDS = ("kernel", "blocks", "offset_ms", "kernel_alone_ms", "kernel_ms", "stage_ms",
              "stage_alone_ms")


def check_record(record: object, where: str) -> dict:
    """`record` if it is a stage_offset_probe record (its fields and each row's), else a
    SpecError naming `where` and the first missing field."""
    require(isinstance(record, dict), where, type(record).__name__,
            "a stage-room probe record (a JSON object)")
    for name in RECORD_FIELDS:
        require(name in record, f"{where}.{name}", "missing",
                "present, as in a stage-room probe record")
    require(isinstance(record["rows"], list) and record["rows"], f"{where}.rows",
            record["rows"] if not record["rows"] else "not a list", "a non-empty list")
    for i, row in enumerate(record["rows"]):
        for name in ROW_FIELDS:
            require(isinstance(row, dict) and name in row, f"{where}.rows[{i}].{name}",
                    "missing", "present, as in a stage-room probe record")
    return record


def pooled(records: Sequence[dict]) -> list[dict]:
    """Records of the same model, batch, stage and mode made one: each (kernel, offset)
    row the median of theirs (the commands joined), in the order first seen."""
    groups: dict[tuple, list[dict]] = {}
    for rec in records:
        key = (rec.get("gpu", "H200"), rec["model"], rec["batch"], rec["stage"],
               rec["graphed"])
        groups.setdefault(key, []).append(rec)
    out = []
    for recs in groups.values():
        rows: dict[tuple, list[dict]] = {}
        for rec in recs:
            for r in rec["rows"]:
                rows.setdefault((r["kernel"], r["offset_ms"]), []).append(r)
        merged = [{**rs[0], **{k: statistics.median(r[k] for r in rs) for k in
                               ("kernel_alone_ms", "kernel_ms", "stage_ms", "stage_alone_ms")}}
                  for rs in rows.values()]
        out.append({**recs[0], "rows": merged,
                    "command": "; ".join(r.get("command", "") for r in recs)})
    return out


def write_rooms(records: Sequence[dict]) -> str:
    """The rooms of several probe records (`pooled` first) as the JSON that `read_rooms`
    takes."""
    out = []
    for rec in pooled(records):
        for (gpu, model, batch, stage, graphed, kind), room in rooms_from_probe(rec).items():
            out.append({"gpu": gpu, "model": model, "batch": batch, "stage": stage,
                        "graphed": graphed, "kind": kind.value,
                        "starts": [round(s, 4) for s in room.starts],
                        "rates": [round(r, 4) for r in room.rates],
                        "stage_factors": [round(f, 4) for f in room.stage_factors],
                        "source": room.source})
    return json.dumps(out, indent=1) + "\n"


def read_rooms(path: Path) -> dict[RoomKey, StageRoom]:
    """The rooms in `path` (none where it does not exist)."""
    if not path.exists():
        return {}
    try:
        out = {}
        for e in json.loads(path.read_text()):
            kind = RoomKind(e["kind"])
            out[e["gpu"], e["model"], int(e["batch"]), e["stage"], bool(e["graphed"]),
                kind] = StageRoom(tuple(e["starts"]), tuple(e["rates"]), kind,
                                  tuple(e.get("stage_factors", ())), e.get("source", ""))
        return out
    except (KeyError, TypeError, ValueError) as e:
        raise SpecError(str(path), repr(e)[:80], "a list of rooms as "
                        "`python -m corun.costmodel.stage_room` writes them") from None


def main(argv: list[str] | None = None) -> int:
    from corun.spec.serde import read_stored_text, write_atomic

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("raw", nargs="+", help="stage-room probe records")
    ap.add_argument("-o", "--out", required=True)
    args = ap.parse_args(argv)
    records = []
    for p in args.raw:
        try:
            records.append(check_record(json.loads(read_stored_text(p)), p))
        except OSError as e:
            ap.error(f"raw = {p!r}: {e.strerror}")
        except (ValueError, SpecError) as e:  # SpecError: a field; ValueError: not JSON
            ap.error(f"raw = {p!r}: {e}")
    text = write_rooms(records)
    write_atomic(Path(args.out), text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
