"""A machine profile: one machine's GPU ceilings and host-thread costs, measured by
`corun calibrate`, with where and when they were measured. Applied to a hardware preset
of the same GPU kind, it makes the simulator predict that machine rather than the
reference H200 host."""

from __future__ import annotations

from dataclasses import dataclass, replace

from corun.spec.errors import SpecError, require, require_positive
from corun.spec.hardware import Hardware, HostTimes, ReleaseTiming, preset_of_device
from corun.spec.provenance import short_commit


@dataclass(frozen=True)
class StageTiming:
    """One training stage of the eager trainer timed alone on the machine (its GPU time,
    the whole step enqueued before the GPU began it)."""

    model: str
    pipeline: str
    """The pipeline whose batches it trained on."""
    batch_per_gpu: int
    stage: str
    ms: float

    def __post_init__(self) -> None:
        require_positive("ms", self.ms)


@dataclass(frozen=True)
class KernelTiming:
    """One fused kernel of a plan timed alone on the machine (its GPU time on an idle
    GPU, launched as the executor launches it), with what makes it that kernel."""

    pipeline: str
    nodes: tuple[str, ...]
    blocks: int
    threads_per_block: int
    warp_rows: bool
    fixed_offsets: bool
    rows: int
    ms: float
    release: ReleaseTiming | None = None
    """The plan's eager step with the kernel released at its stage, timed on the machine
    (None: a kernel released before the step, or a profile from before co-runs were
    timed)."""
    source_first: bool = False
    """As FusedKernel.source_first (profiles from before the field: false)."""

    def __post_init__(self) -> None:
        require(bool(self.nodes), "nodes", self.nodes, "at least one node")
        for name in ("blocks", "threads_per_block", "rows"):
            require_positive(name, getattr(self, name))
        require_positive("ms", self.ms)


@dataclass(frozen=True)
class MachineProfile:
    device: str
    """The GPU as torch names it (`NVIDIA H100 80GB HBM3`)."""
    copy_bytes_per_s: float
    """Device-to-device copy, bytes read plus written per second."""
    gemm_bf16_flops_per_s: float
    """A large bf16 matmul's rate."""
    host: HostTimes
    corun_version: str
    git_commit: str
    created_utc: str
    versions: dict[str, str]
    """torch, numba and CUDA the measurement ran under, and the host's name."""
    stages: tuple[StageTiming, ...] = ()
    """The trainer's stages timed here, for the models and batches asked."""
    kernels: tuple[KernelTiming, ...] = ()
    """The fused kernels of the plans asked, each timed alone here and, where the plan
    releases it at a training stage, in the step beside that stage."""
    measured_s: float = 0.0
    """Seconds the measuring took, over every run that made it (a resumed one's too; 0
    where not recorded)."""

    def __post_init__(self) -> None:
        require(bool(self.device), "device", self.device, "a GPU name")
        preset_of_device(self.device, "device")
        require_positive("copy_bytes_per_s", self.copy_bytes_per_s)
        require_positive("gemm_bf16_flops_per_s", self.gemm_bf16_flops_per_s)

    @property
    def gpu_preset(self) -> str:
        """The hardware preset of the GPU the profile was measured on (`h100`)."""
        return preset_of_device(self.device, "device")

    @property
    def label(self) -> str:
        """Where and when it was measured, in a few words."""
        return (f"{self.device}, {self.created_utc[:10]}, commit "
                f"{short_commit(self.git_commit)}")

    def apply(self, hw: Hardware, name: str = "") -> Hardware:
        """`hw` with this machine's measured ceilings and host, named `name` (its file)
        and where it was measured (costmodel/machine.py adds the stage and kernel scales
        its timings give); an error where `hw` is another GPU kind: a profile describes
        only the kind it was measured on."""
        try:
            kind = preset_of_device(hw.gpu.name, "hardware")
        except SpecError:
            kind = hw.gpu.name
        if kind != self.gpu_preset:
            raise SpecError("machine", self.device,
                            f"a profile measured on the hardware's GPU kind, {hw.gpu.name} "
                            f"(plan with --hardware {self.gpu_preset} for this one, or run "
                            f"corun calibrate on a {hw.gpu.name})")
        where = f"measured by corun calibrate on {self.device}, {self.created_utc[:10]}"
        gpu = replace(hw.gpu, copy_bytes_per_s=self.copy_bytes_per_s,
                      gemm_bf16_flops_per_s=self.gemm_bf16_flops_per_s,
                      sources={**hw.gpu.sources, "copy_bytes_per_s": where,
                               "gemm_bf16_flops_per_s": where})
        return replace(hw, gpu=gpu, host=self.host,
                       machine=f"{name} ({self.label})" if name else self.label)

    def stale_for(self, version: str) -> str | None:
        """Why the profile may not describe this corun (None where it was measured with
        `version`): the trainer's launches change with the code."""
        if version == self.corun_version:
            return None
        return (f"machine profile measured with corun {self.corun_version} (commit "
                f"{self.git_commit}), this is corun {version}: the trainer's host costs "
                "may have changed (corun calibrate measures them again)")
