"""Measurement: what a run on real hardware did, with the numbers' spread and origin."""

from __future__ import annotations

from dataclasses import dataclass, field

from corun.spec.plan import Plan


@dataclass(frozen=True)
class Spread:
    """Median, 10th and 90th percentile over the timed iterations, in milliseconds."""

    median_ms: float
    p10_ms: float
    p90_ms: float


@dataclass(frozen=True)
class Measurement:
    strategy: str
    model: str
    pipeline: str
    hardware: str
    """The device as detected (e.g. torch.cuda.get_device_name)."""
    gpu_count: int
    batch_per_gpu: int
    iterations: int
    warmup: int
    iteration: Spread
    throughput_samples_per_s: float
    stall_ms_per_iteration: float
    stages: dict[str, Spread]
    kernels: dict[str, Spread]
    checked_rows: int
    """Preprocessed rows compared with the NumPy reference during the run."""
    versions: dict[str, str]
    git_commit: str
    command: str
    notes: tuple[str, ...] = field(default_factory=tuple)
    host: dict[str, Spread] = field(default_factory=dict)
    """Host-thread time per iteration, by step (ms): staging, the training step with its
    kernel launches, waiting for the next batch's id counts, assembly, the check;
    `kernels`, the launches of a batch's fused kernels alone (in the step or before it);
    and `launch:<stage>`, the step's host time from one stage's mark to the next (the
    launches of that stage's training work and of the kernels it releases)."""
    plan: Plan | None = None
    """The plan that ran (empty for ideal; one fused kernel for the GPU baselines)."""
    per_iteration: dict[str, tuple[float, ...]] = field(default_factory=dict)
    """The timed iterations one by one (ms): `iteration`, `batch_wait` (the training
    stream waiting at the top for its batch), `busy` (the training stream's work), and
    `host_<piece>` for each host piece: where a slow iteration's time went, which the
    median and p90 above cannot say; and `span_<name>` for each kernel, h2d and assemble:
    the span of the batch preprocessed beside each timed iteration (its index plus the
    plan's batches_ahead; 0: none), so a kernel whose span is its time alone in a slow
    iteration held the training stream there; `start_<name>` for the same spans, when
    each began after the top of its iteration (negative: before it; 0: none); and
    `stage_<stage>` for each training stage, so a slow iteration names the stage it
    lost its time in (the stages' medians add up to less than the median iteration
    where the lost time falls in a different stage each iteration)."""

    @property
    def mean_iteration_ms(self) -> float:
        """The timed span over the timed iterations (ms), as the throughput counts it."""
        return mean_iteration_ms(self.throughput_samples_per_s, self.batch_per_gpu,
                                 self.gpu_count)


def mean_iteration_ms(throughput_samples_per_s: float, batch_per_gpu: int,
                      gpu_count: int) -> float:
    """The mean iteration (ms) a throughput means: every slow step and stall counted,
    where the median step counts none of them. Bimodal steps part the two: eager
    heavy-rehash b32768's choice ran a median step of 7.02 ms and 7.59 ms a step by its
    throughput, a third of its steps held at interaction_bwd, so rounds compare strategies by
    this."""
    return 1e3 * batch_per_gpu * gpu_count / throughput_samples_per_s


ASSEMBLY_STREAM_NOTE = ("each batch's assembly on a stream of its own, after the batch's "
                        "last kernel (RunSettings.assembly_stream)")
"""A measurement's note where its assemblies did not queue behind the kernels (where the
plan or `--assembly-stream own` says)."""

GRAPHS_NOTE = "the trainer's step replayed as CUDA graphs"
"""How a measurement's notes begin to say the step ran as CUDA graphs (backend/executor)."""


def notes_say_graphed(notes) -> bool:
    """Whether a Measurement's notes say its trainer replayed CUDA graphs."""
    return any(n.startswith(GRAPHS_NOTE) for n in notes)


CHECKED_EVERY = "every row of every batch was compared with the NumPy reference on the device"
"""How a measurement's notes say its timed batches were compared too (their assembly then
reads the reference: backend.settings.RunSettings.check_timed)."""
UNCHECKED = "the timed iterations' batches were assembled without the comparison"
"""How a measurement's notes say only its first batches were compared (the default)."""


def notes_say_timed_checked(notes) -> bool:
    """Whether a Measurement's timed batches were compared with the reference: runs made
    made before RunSettings.check_timed existed compared every batch and say so."""
    return any(n.endswith(CHECKED_EVERY) for n in notes)
