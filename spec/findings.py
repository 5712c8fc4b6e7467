"""Findings: facts a prediction carries about itself (what paced it, what was not timed or
not simulated), as data. corun/advice.py turns them into the lines a user reads; nothing
below it writes sentences."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from corun.spec.errors import SpecError


class Level(enum.Enum):
    """How the command line shows a finding under its table."""

    CAUTION = "caution"
    """The number may be off: something was extrapolated or is not simulated."""
    HINT = "hint"
    """A change the user may want to try."""
    NOTE = "note"
    """Why a number reads as it does."""
    RECORD = "record"
    """Kept in the prediction's file only."""


class FindingKind(enum.Enum):
    """What a finding says; each kind has one level and the facts its renderer reads."""

    HOST_THREAD = "host-thread"
    """The host thread's time per iteration: host_ms, source."""
    CPU_OVERSUBSCRIBED = "cpu-oversubscribed"
    """More preprocessing workers than host cores: workers, cores."""
    CALIBRATED = "calibrated"
    """Every duration scaled by a measured ideal over the predicted: scale."""
    STAGES_UNTIMED = "stages-untimed"
    """Training stages no profile timed on this GPU (costmodel's stage provenance): model,
    gpu, how (StageProvenance), batch, batches, untimed, stages, heldout_mape_pct (absent
    where none is on record), graphed (1 where the graphed step is its eager time less a
    fitted saving)."""
    KERNELS_UNTIMED = "kernels-untimed"
    """Fused kernels whose time alone no profile timed on this GPU (not at these rows, nor
    at two other row counts to read it off): untimed, kernels, gpu, heldout_mape_pct
    (absent where none is on record)."""
    HOST_PACES_EAGER = "host-paces-eager"
    """The host's launches outlast the GPU's step, and CUDA graphs could replay it: host_ms,
    gpu_ms, and with the reference host lent_low and lent_high (the band lent hosts' pace
    spans around their median, costmodel/host.py HOST_STEP_SPREAD); with a machine
    profile that kept its rounds, round_low and round_high (its rounds' slowest and
    fastest eager steps over their median)."""
    RACING_KERNEL = "racing-kernel"
    """A kernel that can take every SM between two training kernels, uncapped: kernel,
    blocks, alone_ms, cap_sms."""
    HOST_LINK_BOUND = "host-link-bound"
    """Copying the raw inputs over the host link nears the step: h2d_ms, gpu_ms."""
    OWNER_MAPPED = "owner-mapped"
    """Tables preprocessed by their owner GPU skip the input all-to-all: tables,
    of_tables, row_wise_ms, input_a2a_ms, and with the host thread modelled
    host_saved_ms and owner_lane_ms."""
    SM_CAP_BOUND = "sm-cap-bound"
    """The plan's preprocessing SM cap, simulated as a bound on each stage's slowdown
    (sim.scenario.stage_slowdown_bound): sm_cap, sm_count, max_stage_slowdown (0: the
    cap leaves training too few SMs, so the plan runs on every SM)."""
    UPDATE_GRID_NOT_SIMULATED = "update-grid-not-simulated"
    """The plan's embedding-update grid is not simulated: blocks_per_sm, default."""
    GRID_VARIANT = "grid-variant"
    """A tune variant on another update grid, predicted as its base: variant, base."""
    NOT_SETTLED = "not-settled"
    """The plan's kernels still slid after the warm-up: warmup, settle_warmup, first_ms."""
    TIMES_CARRIED = "times-carried"
    """No model was fitted on this GPU kind: every time is another kind's, carried by the
    two kinds' ceilings (costmodel/carried.py): gpu, source, copy_tb_s, source_copy_tb_s,
    profiled (1 where a machine profile scales the stages and kernels it timed)."""
    MACHINE_PROFILE = "machine-profile"
    """Predicted for a measured machine (`--machine`, spec.machine.MachineProfile):
    machine (Hardware.machine), stages and kernels (how many it timed and scales)."""


LEVELS: dict[FindingKind, Level] = {
    FindingKind.HOST_THREAD: Level.RECORD,
    FindingKind.CPU_OVERSUBSCRIBED: Level.CAUTION,
    FindingKind.CALIBRATED: Level.NOTE,
    FindingKind.STAGES_UNTIMED: Level.CAUTION,
    FindingKind.KERNELS_UNTIMED: Level.NOTE,
    FindingKind.HOST_PACES_EAGER: Level.HINT,
    FindingKind.RACING_KERNEL: Level.HINT,
    FindingKind.HOST_LINK_BOUND: Level.NOTE,
    FindingKind.OWNER_MAPPED: Level.NOTE,
    FindingKind.SM_CAP_BOUND: Level.CAUTION,
    FindingKind.UPDATE_GRID_NOT_SIMULATED: Level.CAUTION,
    FindingKind.GRID_VARIANT: Level.CAUTION,
    FindingKind.NOT_SETTLED: Level.RECORD,
    FindingKind.TIMES_CARRIED: Level.CAUTION,
    FindingKind.MACHINE_PROFILE: Level.NOTE,
}


class StageProvenance(enum.Enum):
    """Where an untimed stage's time comes from (FindingKind.STAGES_UNTIMED's how)."""

    GRAPHED_FROM_EAGER = "graphed-from-eager"
    """The eager stages were timed; the graphed step is their time less a fitted saving."""
    BORROWED = "borrowed"
    """Another model's profiled stages with the same features."""
    INTERPOLATED = "interpolated"
    """Between the batches profiled for this model."""
    EXTRAPOLATED = "extrapolated"
    """Past the batches profiled for this model."""
    NEVER_PROFILED = "never-profiled"
    """The fit's extrapolation for a model no profile timed."""


Fact = float | str


@dataclass(frozen=True)
class Finding:
    """One fact about a prediction, with the numbers and names its line needs."""

    kind: FindingKind
    facts: dict[str, Fact] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        for name, value in self.facts.items():
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise SpecError(f"finding.facts.{name}", value, "a number or a string")

    @property
    def level(self) -> Level:
        return LEVELS[self.kind]

    def __getitem__(self, name: str) -> Fact:
        return self.facts[name]

    def number(self, name: str) -> float:
        """A numeric fact (a file stores 3 as 3.0; this reads either)."""
        return float(self.facts[name])


def finding(kind: FindingKind, **facts: Fact) -> Finding:
    """A Finding of `kind` with `facts` given as keywords."""
    return Finding(kind, dict(facts))


def find(findings, kind: FindingKind) -> list[Finding]:
    """The findings of `kind`, in order."""
    return [f for f in findings if f.kind is kind]
