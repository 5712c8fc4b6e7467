"""How an executor run is set up: its length, its data and its checks (one place for
the defaults the command line and the benchmarks show)."""

from __future__ import annotations

from dataclasses import dataclass

from corun.backend.codegen import MAX_UNROLL
from corun.spec import SpecError
from corun.spec.plan import MAX_UPDATE_BLOCKS_PER_SM

MAX_RELEASE_OFFSET_MS = 100.0
"""The longest release_offset_ms (a step of the heavy models is 2-10 ms)."""

REGISTER_CAPS = (16, 255)
"""The registers a thread a values kernel may be capped at (values_max_registers)."""

ASSEMBLY_IDS_PER_THREAD = 20
"""About how many of its largest table's ids each thread of the batch's assembly kernel
copies (backend/device_assembly.py, grid_for; its block row per table is at least a
thread a row wide). Measured alone on the H200: heavy b16384's 32 M ids took 0.282 ms
with a block row of rows / 256 (76 ids a thread), 0.239 ms four times wider (19), 0.281
ms sixteen times wider; kaggle's one id a row is fastest at rows / 256. In the executed
step the grid changed nothing: the kernel is bound by its bytes."""


@dataclass(frozen=True)
class RunSettings:
    iterations: int = 200
    warmup: int = 20
    distinct_batches: int = 4
    """Raw batches generated (or read) once and cycled; preprocessing reruns each time."""
    check: bool = True
    """Compare every row of the batches with the reference, on the batch's own device
    (one flag comes back to the host, read an iteration later; on a mismatch the first
    differing feature and row are named): those of the warmup (`compared_batches`), or
    with `check_timed` every batch of the run."""
    seed: int = 0
    data: str | None = None
    """A Criteo-format TSV file; synthetic data when None."""
    cpu_workers: int = 16
    """Host worker processes for host-mapped nodes (cpu:N sets it to N)."""
    early_assembly: bool = True
    """Enqueue each batch's assembly right after its last kernel launch; False: after
    the host has launched the whole step (kept to measure the change against)."""
    preprocess_sms: int = 0
    """0: preprocessing and training share every SM (the training stream first when the
    plan says so); N: the preprocessing stream runs on N SMs of its own and training on
    the rest (CUDA green contexts, backend/sm_split.py; one GPU). An experiment, not a
    planned decision: on the heavy case it measured worse than sharing."""
    update_sms: int = 0
    """0: the fused embedding update runs on the training stream, on every SM; N: on N SMs
    of a green context of its own (backend/sm_split.py; one GPU), the preprocessing
    stream on the other SMs, and training's other stages on every SM. A kernel released
    with the update then has its SMs to itself for the update's length. An experiment
    that answered a question, not a planned decision: the update of the graphed
    heavy-lean step kept its pace on 84-108 of the H200's 132 SMs (it waits on its hot
    rows' atomics, not on SMs), but the kernel on the other SMs still cost it 0.24-0.35
    ms and hid no more of gpu-sequential's gap than sharing every SM."""
    update_blocks_per_sm: int | None = None
    """The fused embedding update's grid (Model.embedding_update fused-sgd): None, as the
    plan says (Plan.update_blocks_per_sm; its 0 is the trainer's default,
    backend.embedding_sgd.UPDATE_BLOCKS_PER_SM: 4 blocks an SM); N: N blocks an SM; 0:
    one thread per (bag, column), an experiment (about 3x slower at heavy-lean b32768).
    `corun execute --update-blocks-per-sm N` sets it."""
    preprocess_sm_cap: int | None = None
    """None: as the plan says (Plan.preprocess_sm_cap); 0: the preprocessing stream may
    take every SM; N: it is confined to N SMs (a CUDA green context, backend/sm_split.py;
    one GPU) while training keeps every SM, so a kernel that becomes ready between two
    training kernels cannot take the SMs the next one needs (on the H200 an eager values
    kernel took every SM in a quarter of the steps and the next GEMM ran ten times its
    time). `corun execute --preprocess-sm-cap N` sets it."""
    preprocess_first: bool = False
    """The preprocessing stream above training: a kernel released at a training stage
    gets the SMs that stage's blocks free as they end, instead of waiting for all of
    them. An experiment, not yet a planned decision."""

    assembly_stream: bool | None = None
    """On a GPU, each batch's assembly on a stream of its own (Streams.assembly), after
    the batch's last kernel (True), or queued behind the kernels on the preprocessing
    stream, so that a later batch's kernel waits for it (False). None: as the plan says
    (Plan.assembly_stream, False unless `corun tune` measured the other faster).
    `corun execute --assembly-stream {own,behind}` sets it."""
    preprocess_graphs: bool = True
    """On a GPU, each batch's staging copies, kernel launches (with their list scans) and
    assembly replayed as CUDA graphs captured on the run's first batches
    (backend/batch_graphs.py): one graph launch instead of a few host calls each. False:
    the calls one by one, and always so with
    `preprocess_sms`, `update_sms` or `preprocess_sm_cap`, whose streams live in a green
    context of their own."""

    feed_thread: bool = False
    """Each step's batch work (the next batch built from its lanes, the last one checked,
    a later one staged) on a second host thread, handed over as the step's backward
    begins (backend/feed_thread.py); False: on the thread that launches the step, after
    it. An experiment, off: on the H200 it measured no better: the launching thread holds
    the GIL for most of its step, so what the second thread does lengthens that step by as
    much or more."""

    assembly_ids_per_thread: int = ASSEMBLY_IDS_PER_THREAD
    """The batch's assembly kernel copies about this many of its largest table's ids a
    thread (backend/device_assembly.py, grid_for); 0: a thread a row."""

    check_timed: bool = False
    """Compare the timed iterations' batches too. Off, the timed batches are assembled as a
    production run would, without reading the reference: on the H200 the comparison cost
    graphed heavy-lean b16384's plans 0.03-0.09 ms an iteration, which `ideal`, replaying
    ready batches, never pays."""

    values_unroll: int = 1
    """List elements each thread of a fused values kernel computes side by side
    (FusedGroup.unroll). An experiment, not a planned
    decision: whether a kernel beside a training stage, on the few SM slots the stage
    leaves it, gets through its hashing faster with independent work to issue. On the
    H200 it did not: 66 registers a thread against 56, slower alone at every width and
    beside the graphed heavy-lean step."""

    values_max_registers: int = 0
    """A cap on the registers per thread of every fused values kernel (FusedGroup.
    max_registers); 0: none. An experiment, not a planned
    decision: whether a narrower register footprint lets a kernel beside a training stage
    leave that stage's blocks room on the SMs. At 32 on the H200: a few points either way
    beside the graphed heavy steps."""

    release_offset_ms: float = 0.0
    """How long the preprocessing stream waits, a GPU spin, after a kernel's releasing
    stage opens before it launches the kernel. An experiment, not a planned decision: the
    graphed heavy-lean update leaves new blocks no SM time for its first ~1.4 of 2.34 ms
    and room after; released into that room, the whole pipeline recovered no more of
    gpu-sequential's gap than at interaction_bwd. The simulator does not model it."""

    def compared_batches(self, slots: int) -> int | None:
        """Batches compared with their references (the first ones; None: every batch):
        those of the warmup but its last 2 x `slots` (so the assembly without the
        comparison, one graph per pool set, is captured before the timed loop), and at
        least one of each distinct raw batch even where that reaches into the timed loop."""
        if not self.check or self.check_timed:
            return None
        return max(self.distinct_batches, self.warmup - 2 * slots)

    def require_cap_alone(self, cap: int) -> None:
        """A preprocessing SM cap (the settings' or a plan's) is one way to give the
        preprocessing stream its SMs; `preprocess_sms` and `update_sms` are others."""
        if cap and (self.preprocess_sms or self.update_sms):
            raise SpecError("preprocess_sm_cap", cap,
                            "0 with preprocess_sms or update_sms (each gives the "
                            "preprocessing stream its SMs another way)")

    def __post_init__(self) -> None:
        for name, lo in (("iterations", 1), ("warmup", 0), ("distinct_batches", 1),
                         ("cpu_workers", 1), ("preprocess_sms", 0), ("update_sms", 0),
                         ("assembly_ids_per_thread", 0), ("values_unroll", 1),
                         ("values_max_registers", 0)):
            v = getattr(self, name)
            if not isinstance(v, int) or v < lo:
                raise SpecError(name, v, f"an integer >= {lo}")
        if self.values_unroll > MAX_UNROLL:
            raise SpecError("values_unroll", self.values_unroll,
                            f"an integer in 1..{MAX_UNROLL}")
        lo, hi = REGISTER_CAPS
        if self.values_max_registers and not lo <= self.values_max_registers <= hi:
            raise SpecError("values_max_registers", self.values_max_registers,
                            f"0 (no cap) or an integer in {lo}..{hi}")
        if not 0 <= self.release_offset_ms <= MAX_RELEASE_OFFSET_MS:
            raise SpecError("release_offset_ms", self.release_offset_ms,
                            f"ms in 0..{MAX_RELEASE_OFFSET_MS:g}")
        if self.update_blocks_per_sm is not None and not (
                isinstance(self.update_blocks_per_sm, int)
                and 0 <= self.update_blocks_per_sm <= MAX_UPDATE_BLOCKS_PER_SM):
            raise SpecError("update_blocks_per_sm", self.update_blocks_per_sm,
                            "None (the trainer's default), 0 (a thread per bag and column) "
                            f"or an integer in 1..{MAX_UPDATE_BLOCKS_PER_SM}")
        if self.preprocess_sm_cap is not None and not (
                isinstance(self.preprocess_sm_cap, int) and self.preprocess_sm_cap >= 0):
            raise SpecError("preprocess_sm_cap", self.preprocess_sm_cap,
                            "None (as the plan says) or an integer >= 0")
        if self.preprocess_sm_cap:
            self.require_cap_alone(self.preprocess_sm_cap)
        if self.update_sms and (self.preprocess_sms or self.preprocess_first):
            raise SpecError("update_sms", self.update_sms,
                            "0 with preprocess_sms or preprocess_first (each gives the "
                            "preprocessing stream its SMs another way)")
        if self.preprocess_first and self.preprocess_sms:
            raise SpecError("preprocess_first", self.preprocess_first,
                            "False when preprocess_sms > 0 (the streams then have SMs of "
                            "their own and do not compete for them)")
