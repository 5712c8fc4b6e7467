"""Prediction: what the simulator says a strategy will do, with provenance."""

from __future__ import annotations

from dataclasses import dataclass, field

from corun.spec.findings import Finding


@dataclass(frozen=True)
class Provenance:
    """Where a number came from: tool version, git commit, cost model, inputs."""

    corun_version: str
    git_commit: str
    cost_model: str
    hardware: str
    created_utc: str
    seed: int


@dataclass(frozen=True)
class StageTime:
    stage: str
    time_ms: float
    """Median over simulated iterations, mean over GPUs, of the stage's wall time."""
    standalone_ms: float
    """Its time with nothing co-running."""


@dataclass(frozen=True)
class KernelTime:
    kernel: str
    time_ms: float
    standalone_ms: float
    stage: str


@dataclass(frozen=True)
class Prediction:
    """Predicted steady-state behaviour of one strategy."""

    strategy: str
    model: str
    pipeline: str
    hardware: str
    gpu_count: int
    batch_per_gpu: int
    iterations: int
    iteration_time_ms: float
    """Median over the simulated iterations."""
    throughput_samples_per_s: float
    """Global batch x iterations over the measured span (includes every stall)."""
    stall_ms_per_iteration: float
    """Mean over iterations and GPUs."""
    stages: tuple[StageTime, ...]
    kernels: tuple[KernelTime, ...]
    gpu_utilisation: tuple[float, ...]
    """Per GPU: the share of the iteration its training stream was busy."""
    provenance: Provenance
    findings: tuple[Finding, ...] = field(default_factory=tuple)
    """Facts about this prediction (what paced it, what was not timed or not simulated);
    corun/advice.py renders them for the user."""

    SCHEMA_VERSION = 2
    """Version 2 carries findings where version 1 carried notes as sentences."""

    @property
    def mean_iteration_ms(self) -> float:
        """The simulated span over the simulated iterations (ms), as the throughput counts
        it: what a measurement's mean iteration (Measurement.mean_iteration_ms) is
        compared with, every simulated slow step counted as every measured one is."""
        from corun.spec.measurement import mean_iteration_ms

        return mean_iteration_ms(self.throughput_samples_per_s, self.batch_per_gpu,
                                 self.gpu_count)
