"""Hardware: GPU kinds with their ceilings, links, and the machine they form.

Every preset number carries its source in `sources`. Datasheet numbers are leads;
the H200 ceilings `copy_bytes_per_s` and `gemm_bf16_flops_per_s` were measured on
the lent H200 machine.
"""

from __future__ import annotations

import enum
import math
import statistics
from dataclasses import dataclass, field, replace

from corun.spec.errors import (
    SpecError,
    require,
    require_between,
    require_int_range,
    require_positive,
)

LINK_BYTES_PER_S = (1e6, 1e15)
"""A link's bandwidth per direction, from a slow network to beyond any NVLink."""
MAX_LATENCY_US = 1e6
GPU_BYTES_PER_S = (1e9, 1e15)
"""A GPU's memory and copy bandwidth (a V100 moves 9e11, an H200 4.8e12)."""
FLOPS = (1e9, 1e18)
CLOCK_HZ = (1e8, 1e10)
"""What a GPU's rates and clock may be: outside them a figure is a typo, and durations
divided by them are no longer numbers."""


class Precision(enum.Enum):
    """Arithmetic precision a model's dense layers run in."""

    FP32 = "fp32"
    TF32 = "tf32"
    BF16 = "bf16"


@dataclass(frozen=True)
class GpuKind:
    """One GPU model's resources and ceilings (dense, no sparsity)."""

    name: str
    sm_count: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    shared_mem_per_sm_bytes: int
    hbm_bytes: int
    hbm_bytes_per_s: float
    l2_bytes: int
    boost_clock_hz: float
    fp32_flops_per_s: float
    tf32_flops_per_s: float | None
    bf16_flops_per_s: float | None
    copy_bytes_per_s: float
    """Device-to-device copy ceiling, bytes read + written per second."""
    gemm_bf16_flops_per_s: float | None
    """Achievable large bf16 GEMM rate (None where the GPU has no bf16)."""
    sources: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        require(bool(self.name), "name", self.name, "a non-empty string")
        for f in ("sm_count", "max_threads_per_sm", "max_blocks_per_sm", "registers_per_sm",
                  "shared_mem_per_sm_bytes", "hbm_bytes", "l2_bytes"):
            require_int_range(f, getattr(self, f), 1)
        for f in ("hbm_bytes_per_s", "copy_bytes_per_s"):
            require_between(f, getattr(self, f), *GPU_BYTES_PER_S, "bytes/s")
        require_between("boost_clock_hz", self.boost_clock_hz, *CLOCK_HZ, "Hz")
        require_between("fp32_flops_per_s", self.fp32_flops_per_s, *FLOPS, "FLOP/s")
        for f in ("tf32_flops_per_s", "bf16_flops_per_s", "gemm_bf16_flops_per_s"):
            if getattr(self, f) is not None:
                require_between(f, getattr(self, f), *FLOPS, "FLOP/s")
        require(self.copy_bytes_per_s <= 2 * self.hbm_bytes_per_s, "copy_bytes_per_s",
                self.copy_bytes_per_s, f"at most 2 x hbm_bytes_per_s = {2 * self.hbm_bytes_per_s:g}"
                " (a copy reads and writes)")

    @property
    def int32_ops_per_s(self) -> float:
        """Integer add/logic rate: 64 lanes per SM per clock (CUDA Programming Guide, cc 7-9)."""
        return self.sm_count * 64 * self.boost_clock_hz

    @property
    def max_resident_threads(self) -> int:
        return self.sm_count * self.max_threads_per_sm

    def occupancy(self, blocks: int, threads_per_block: int, registers_per_thread: int) -> float:
        """Resident threads over the maximum for a launch: the CUDA occupancy calculator's
        thread, block and register limits (shared memory unused by our kernels)."""
        regs = max(registers_per_thread, 1)
        per_sm = min(self.max_threads_per_sm, self.registers_per_sm // regs,
                     self.max_blocks_per_sm * threads_per_block)
        per_sm = (per_sm // threads_per_block) * threads_per_block
        resident = min(blocks * threads_per_block, per_sm * self.sm_count)
        return resident / self.max_resident_threads

    def peak_flops_per_s(self, precision: Precision) -> float:
        """Dense peak for `precision`; an error where the GPU lacks it."""
        if precision is Precision.FP32:
            return self.fp32_flops_per_s
        value = self.tf32_flops_per_s if precision is Precision.TF32 else self.bf16_flops_per_s
        if value is None:
            raise SpecError("model.precision", precision.value,
                            f"a precision {self.name} supports (it has no {precision.value})")
        return value


class LinkKind(enum.Enum):
    NVLINK = "nvlink"
    NVLINK_C2C = "nvlink-c2c"
    PCIE = "pcie"
    NETWORK = "network"


@dataclass(frozen=True)
class Link:
    """A link as one GPU sees it: bandwidth per direction and one-message latency."""

    kind: LinkKind
    name: str
    bytes_per_s: float
    latency_us: float
    source: str = ""

    def __post_init__(self) -> None:
        require_between("bytes_per_s", self.bytes_per_s, *LINK_BYTES_PER_S, "bytes/s")
        require_between("latency_us", self.latency_us, 0, MAX_LATENCY_US, "microseconds")

    def transfer_ms(self, nbytes: float) -> float:
        return self.latency_us * 1e-3 + nbytes / self.bytes_per_s * 1e3


@dataclass(frozen=True)
class HostTimes:
    """What the host thread that drives one GPU spends, measured on a machine by
    `corun calibrate` (costmodel/host.py turns it into the simulator's host costs)."""

    step_ms: float
    """The eager trainer's own launches for one step, where the host paces it."""
    graph_step_ms: float
    """The same for a step replayed as CUDA graphs."""
    kernel_launch_ms: float
    """Per host launch of a fused preprocessing kernel."""
    batch_fixed_ms: float
    """Staging, assembly and check of one batch."""
    launch_share: dict[str, float] = field(default_factory=dict, hash=False)
    """Each training stage's share of the eager step's launches (empty: the reference
    host's)."""
    measured_on: str = ""
    """The model and batch whose steps were timed (`criteo-kaggle b4096`)."""
    plan_step_ms: float = 0.0
    """What an eager plan's step costs the host beyond ideal's step and its fused
    kernels' launches (the batch work on the feed thread beside it, the marks that
    release kernels); 0 where it was not told apart from the launches (a profile
    without timed launches)."""
    round_step_ms: tuple[float, ...] = ()
    """The eager step's host time in each calibration round where the host paced it
    (`step_ms` is their median; empty: a profile from before rounds were kept)."""
    model_launch_ms: dict[str, float] = field(default_factory=dict, hash=False)
    """Each model's eager step as this host launches it behind a GPU spin
    (backend/launch_count.host_step_ms): the host-run model's and those whose stages were
    timed. How the step differs by model on this host (empty, or a model not in it: the
    host-run model's step serves it, costmodel/host.py)."""

    @property
    def round_band_ms(self) -> tuple[float, float] | None:
        """The fastest and slowest round's eager host step (None from fewer than two)."""
        if len(self.round_step_ms) < 2:
            return None
        return min(self.round_step_ms), max(self.round_step_ms)

    @property
    def step_spread_pct(self) -> float:
        """How far apart the rounds' eager host steps lie: the slowest over the fastest,
        less one, in percent (0 from fewer than two rounds). No prediction of a
        host-paced eager step on this host can be surer than its own rounds."""
        band = self.round_band_ms
        return 100.0 * (band[1] / band[0] - 1.0) if band else 0.0

    def __post_init__(self) -> None:
        for f in ("step_ms", "graph_step_ms"):
            require_positive(f, getattr(self, f))
        for i, ms in enumerate(self.round_step_ms):
            require_positive(f"round_step_ms[{i}]", ms)
        for m, ms in self.model_launch_ms.items():
            require_positive(f"model_launch_ms.{m}", ms)
        for f in ("kernel_launch_ms", "batch_fixed_ms", "plan_step_ms"):
            v = getattr(self, f)
            require(isinstance(v, int | float) and 0 <= v < float("inf"), f, v,
                    "a finite number of ms >= 0")
        for stage, share in self.launch_share.items():
            require(isinstance(share, int | float) and 0 <= share <= 1,
                    f"launch_share.{stage}", share, "a share in [0, 1]")


@dataclass(frozen=True)
class StageScale:
    """One timed training stage on a machine: its measured time over the cost model's
    prediction, for the model and batch it was timed at (costmodel/machine.py)."""

    model: str
    batch_per_gpu: int
    ratio: float

    def __post_init__(self) -> None:
        require_positive("ratio", self.ratio)


@dataclass(frozen=True)
class KernelScale:
    """One fused kernel timed alone on a machine: its measured time over the cost model's
    prediction, at the rows it was timed at (costmodel/machine.py)."""

    rows: int
    ratio: float

    def __post_init__(self) -> None:
        require_positive("ratio", self.ratio)


@dataclass(frozen=True)
class ReleaseTiming:
    """One fused kernel released at one training stage of the eager step on a machine,
    timed there: every stage's time in that step and alone (ms, in step order), and the
    kernel's time alone and from its release to its end (costmodel/machine.py)."""

    model: str
    batch_per_gpu: int
    stage: str
    """The stage whose start released the kernel."""
    stages: tuple[str, ...]
    step_ms: tuple[float, ...]
    alone_ms: tuple[float, ...]
    kernel_alone_ms: float
    kernel_ms: float

    def __post_init__(self) -> None:
        require(self.stage in self.stages, "stage", self.stage,
                f"one of the step's stages ({', '.join(self.stages)})")
        for name in ("step_ms", "alone_ms"):
            require(len(getattr(self, name)) == len(self.stages), name,
                    getattr(self, name), f"one time per stage ({len(self.stages)})")
        for name in ("kernel_alone_ms", "kernel_ms"):
            require_positive(name, getattr(self, name))
        for stage, ms in zip(self.stages, self.step_ms):
            require_positive(f"step_ms[{stage}]", ms)


def _log_line(points: list[tuple[int, float]], x: int) -> float:
    """The ratio at `x` on the line through the two nearest of `points` (sorted by their
    first item) in log x, clamped at the ends."""
    if x <= points[0][0]:
        return points[0][1]
    for (x0, r0), (x1, r1) in zip(points, points[1:]):
        if x0 <= x <= x1:
            t = math.log(x / x0) / math.log(x1 / x0)
            return r0 + t * (r1 - r0)
    return points[-1][1]


def scale_at(points: tuple[StageScale, ...], model: str, batch_per_gpu: int) -> float:
    """A stage's scale for `model` at `batch_per_gpu`: where the model was timed, read off
    the line through its two nearest timed batches in log batch (clamped at the ends);
    else the median over every model timed; 1 where none was."""
    mine = sorted((p.batch_per_gpu, p.ratio) for p in points if p.model == model)
    if not mine:
        return statistics.median(p.ratio for p in points) if points else 1.0
    return _log_line(mine, batch_per_gpu)


def kernel_scale_at(points: tuple[KernelScale, ...], rows: int) -> float:
    """A timed kernel's scale at `rows`, as `scale_at` reads a model's batches; 1 where
    the kernel was not timed (another kernel's ratio says nothing about this one's)."""
    return _log_line(sorted((p.rows, p.ratio) for p in points), rows) if points else 1.0


@dataclass(frozen=True)
class Hardware:
    """The machine a plan runs on: GPU kind and count, links, host cores, and the host
    thread's measured costs where a machine profile gave them."""

    gpu: GpuKind
    gpu_count: int
    gpus_per_node: int
    intra_node: Link
    """GPU-to-GPU link inside a node (per GPU, per direction)."""
    inter_node: Link
    """Network per GPU between nodes."""
    host_link: Link
    """Host-to-GPU link per GPU (raw batches cross it)."""
    host_cpu_cores: int
    """CPU cores available to preprocessing, for the whole machine."""
    host: HostTimes | None = None
    """The host thread's costs measured on this machine (spec.machine.MachineProfile);
    None: the reference H200 host's (costmodel/host.py)."""
    stage_scale: dict[str, tuple[StageScale, ...]] = field(default_factory=dict, hash=False)
    """Per training stage, this machine's measured time over the cost model's prediction
    where a machine profile timed it (costmodel/machine.py; `scale_at` reads it); a
    stage not named: 1."""
    kernel_scale: dict[str, tuple[KernelScale, ...]] = field(default_factory=dict,
                                                            hash=False)
    """Per fused kernel (KernelWork.key), this machine's measured time alone over the cost
    model's prediction where a machine profile timed it (`kernel_scale_at` reads it)."""
    release_steps: dict[str, tuple[ReleaseTiming, ...]] = field(default_factory=dict,
                                                                hash=False)
    """Per fused kernel (KernelWork.key), the eager steps a machine profile timed it
    released in: the simulator takes its co-run rates there from them."""
    machine: str = ""
    """The machine profile applied (MachineProfile.apply names it); '' for the preset's."""

    def __post_init__(self) -> None:
        require_int_range("gpu_count", self.gpu_count, 1, 4096)
        require_int_range("gpus_per_node", self.gpus_per_node, 1, 64)
        require(self.gpu_count <= self.gpus_per_node or self.gpu_count % self.gpus_per_node == 0,
                "gpu_count", self.gpu_count,
                f"at most gpus_per_node ({self.gpus_per_node}) or a multiple of it")
        require_int_range("host_cpu_cores", self.host_cpu_cores, 1)

    @property
    def nodes(self) -> int:
        return max(1, self.gpu_count // self.gpus_per_node)

    @property
    def collective_link(self) -> Link:
        """The slowest link a collective over all GPUs crosses."""
        return self.intra_node if self.nodes == 1 else self.inter_node

    def with_gpus(self, gpu_count: int) -> Hardware:
        """The same machine with another GPU count (cores scale per GPU)."""
        per_gpu = max(1, self.host_cpu_cores // self.gpu_count)
        return replace(self, gpu_count=gpu_count, host_cpu_cores=per_gpu * gpu_count)


_DS_V100 = "NVIDIA V100 datasheet (SXM2 32GB), 2020; CUDA C Programming Guide, cc 7.0 table"
_DS_A100 = "NVIDIA A100 datasheet (SXM4 80GB), 2021; CUDA C Programming Guide, cc 8.0 table"
_DS_H100 = "NVIDIA H100 datasheet (SXM5), 2023; CUDA C Programming Guide, cc 9.0 table"
_DS_H200 = "NVIDIA H200 datasheet (SXM), 2024; CUDA C Programming Guide, cc 9.0 table"
COPY_SHARE_OF_HBM = 0.9
"""A device-to-device copy moves 0.9 of the datasheet's HBM bandwidth, counting bytes read
plus written: measured 4.3 TB/s of 4.8 on the lent H200 and 2.98-3.03 of 3.35 on the lent
H100 (../shared/GPU.md). The datasheet figure already counts both directions."""
_EST_COPY = "estimate: COPY_SHARE_OF_HBM (0.9, measured on the H200 and H100) x datasheet HBM"
_EST_GEMM = "estimate: 0.8 x datasheet bf16 peak (the H200 ratio measured here was 0.80)"

_TB = 1e12
_GB = 10**9

GPU_KINDS: dict[str, GpuKind] = {
    "v100": GpuKind(
        name="V100-SXM2-32GB", sm_count=80, max_threads_per_sm=2048, max_blocks_per_sm=32,
        registers_per_sm=65536, shared_mem_per_sm_bytes=96 * 1024, hbm_bytes=32 * 2**30,
        hbm_bytes_per_s=900 * _GB, l2_bytes=6 * 2**20, boost_clock_hz=1530e6,
        fp32_flops_per_s=15.7 * _TB,
        tf32_flops_per_s=None, bf16_flops_per_s=None,
        copy_bytes_per_s=COPY_SHARE_OF_HBM * 900 * _GB,
        gemm_bf16_flops_per_s=None,
        sources={"*": _DS_V100, "copy_bytes_per_s": _EST_COPY,
                 "bf16_flops_per_s": "V100 has no bf16 or tf32 (fp16 tensor cores only)"}),
    "a100": GpuKind(
        name="A100-SXM4-80GB", sm_count=108, max_threads_per_sm=2048, max_blocks_per_sm=32,
        registers_per_sm=65536, shared_mem_per_sm_bytes=164 * 1024, hbm_bytes=80 * _GB,
        hbm_bytes_per_s=2039 * _GB, l2_bytes=40 * 2**20, boost_clock_hz=1410e6,
        fp32_flops_per_s=19.5 * _TB,
        tf32_flops_per_s=156 * _TB, bf16_flops_per_s=312 * _TB,
        copy_bytes_per_s=COPY_SHARE_OF_HBM * 2039 * _GB,
        gemm_bf16_flops_per_s=0.8 * 312 * _TB,
        sources={"*": _DS_A100, "copy_bytes_per_s": _EST_COPY,
                 "gemm_bf16_flops_per_s": _EST_GEMM}),
    "h100": GpuKind(
        name="H100-SXM", sm_count=132, max_threads_per_sm=2048, max_blocks_per_sm=32,
        registers_per_sm=65536, shared_mem_per_sm_bytes=228 * 1024, hbm_bytes=80 * _GB,
        hbm_bytes_per_s=3350 * _GB, l2_bytes=50 * 2**20, boost_clock_hz=1980e6,
        fp32_flops_per_s=66.9 * _TB,
        tf32_flops_per_s=494.7 * _TB, bf16_flops_per_s=989.4 * _TB,
        copy_bytes_per_s=3.0 * _TB, gemm_bf16_flops_per_s=0.8 * 989.4 * _TB,
        sources={"*": _DS_H100,
                 "copy_bytes_per_s": "measured: 1 and 4 GiB D2D copies, 2.98-3.03 TB/s read "
                                     "plus written, on the lent H100 (../shared/GPU.md)",
                 "gemm_bf16_flops_per_s": _EST_GEMM}),
    "h200": GpuKind(
        name="H200", sm_count=132, max_threads_per_sm=2048, max_blocks_per_sm=32,
        registers_per_sm=65536, shared_mem_per_sm_bytes=228 * 1024, hbm_bytes=141 * _GB,
        hbm_bytes_per_s=4800 * _GB, l2_bytes=60 * 2**20, boost_clock_hz=1980e6,
        fp32_flops_per_s=66.9 * _TB,
        tf32_flops_per_s=494.7 * _TB, bf16_flops_per_s=989.4 * _TB,
        copy_bytes_per_s=4.3 * _TB, gemm_bf16_flops_per_s=790 * _TB,
        sources={"*": _DS_H200,
                 "l2_bytes": "measured: torch.cuda.get_device_properties on the lent H200, 60 MB",
                 "sm_count": "measured: 132 SMs reported by PyTorch on the lent H200",
                 "boost_clock_hz": "measured: nvidia-smi SM clock 1980 MHz under load (KINDS.md)",
                 "copy_bytes_per_s": "measured: D2D copy 8.6 GB in 2.0 ms on the lent H200 "
                                     "(the device tool's KINDS.md)",
                 "gemm_bf16_flops_per_s": "measured: 8192^3 bf16 matmul 769-798 TFLOP/s on the "
                                          "lent H200 (device/KINDS.md)"}),
}

# Per-direction bandwidth per GPU. Latencies are typical small-message figures.
LINKS: dict[str, Link] = {
    "nvlink2": Link(LinkKind.NVLINK, "NVLink 2 (V100 SXM2)", 150 * _GB, 5.0,
                    "NVIDIA V100 datasheet: 300 GB/s total NVLink per GPU, half per direction"),
    "nvlink3": Link(LinkKind.NVLINK, "NVLink 3 (A100 SXM4)", 300 * _GB, 5.0,
                    "NVIDIA A100 datasheet: 600 GB/s total per GPU, half per direction"),
    "nvlink4": Link(LinkKind.NVLINK, "NVLink 4 (H100/H200 SXM)", 450 * _GB, 5.0,
                    "NVIDIA H100/H200 datasheets: 900 GB/s total per GPU, half per direction"),
    "pcie3": Link(LinkKind.PCIE, "PCIe 3.0 x16", 13 * _GB, 10.0,
                  "PCIe 3.0 x16: 15.75 GB/s raw, ~13 GB/s achieved (typical bandwidthTest)"),
    "pcie4": Link(LinkKind.PCIE, "PCIe 4.0 x16", 26 * _GB, 10.0,
                  "PCIe 4.0 x16: 31.5 GB/s raw, ~26 GB/s achieved (typical bandwidthTest)"),
    "pcie5": Link(LinkKind.PCIE, "PCIe 5.0 x16", 52 * _GB, 10.0,
                  "PCIe 5.0 x16: 63 GB/s raw, ~52 GB/s achieved (typical bandwidthTest)"),
    "ib-hdr": Link(LinkKind.NETWORK, "InfiniBand HDR 200 Gb/s per GPU", 25 * _GB, 3.0,
                   "InfiniBand HDR: 200 Gb/s per port, one port per GPU (DGX A100)"),
    "ib-ndr": Link(LinkKind.NETWORK, "InfiniBand NDR 400 Gb/s per GPU", 50 * _GB, 3.0,
                   "InfiniBand NDR: 400 Gb/s per port, one port per GPU (DGX H100)"),
}

HOST_LINKS: dict[str, Link] = {
    "pcie5-h200": Link(LinkKind.PCIE, "PCIe 5.0 x16 (the lent H200 machine's batch copies)",
                       57.0 * _GB, 38.0,
                       "fitted on the H200 machine's measured host-to-device copies of a "
                       "batch, 2-262 MB (82 cases, 13 model/batch pairs, within -7% to +8%; "
                       "52 GB/s + 10 us had been -32% to +18%)"),
}
"""Host links measured on a machine, for its preset's host-to-device copies only (not an
interconnect choice)."""

# gpu preset -> (intra-node, inter-node, host link, gpus per node)
_SYSTEMS: dict[str, tuple[str, str, str, int]] = {
    "v100": ("nvlink2", "ib-hdr", "pcie3", 8),
    "a100": ("nvlink3", "ib-hdr", "pcie4", 8),
    "h100": ("nvlink4", "ib-ndr", "pcie5", 8),
    "h200": ("nvlink4", "ib-ndr", "pcie5-h200", 8),
}

def preset_of_device(device_name: str, field: str = "machine") -> str:
    """The hardware preset of a GPU as torch or a preset spells it (`NVIDIA H100 80GB HBM3`,
    `H100` -> `h100`); an error naming `field` where it is none of them."""
    for key in GPU_KINDS:
        if key.upper() in device_name.upper():
            return key
    raise SpecError(field, device_name,
                    f"a GPU of a hardware preset ({', '.join(k.upper() for k in GPU_KINDS)})")


HOST_CORES_PER_GPU = 16
"""Source: the lent H200 machines have 16 cores per GPU (device/KINDS.md: 16, 32, 64, 128)."""


def hardware_preset(name: str, gpus: int = 1, host_cpu_cores: int | None = None,
                    intra_node: str | None = None) -> Hardware:
    """An HGX-style node of `name` GPUs (8 per node, NVLink inside, InfiniBand between)."""
    key = name.lower()
    if key not in GPU_KINDS:
        raise SpecError("hardware", name, f"one of {', '.join(GPU_KINDS)}")
    nvl, net, host, per_node = _SYSTEMS[key]
    if intra_node is not None and intra_node not in LINKS:
        raise SpecError("interconnect", intra_node, f"one of {', '.join(LINKS)}")
    require_int_range("gpus", gpus, 1, 4096)
    cores = host_cpu_cores if host_cpu_cores is not None else HOST_CORES_PER_GPU * gpus
    return Hardware(gpu=GPU_KINDS[key], gpu_count=gpus, gpus_per_node=per_node,
                    intra_node=LINKS[intra_node or nvl], inter_node=LINKS[net],
                    host_link=HOST_LINKS.get(host) or LINKS[host], host_cpu_cores=cores)
