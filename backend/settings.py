"""How an executor run is set up: its length, its data and its checks (one place for
the defaults the command line and the benchmarks show)."""

from __future__ import annotations

from dataclasses import dataclass

from corun.spec import SpecError
from corun.spec.plan import MAX_UPDATE_BLOCKS_PER_SM

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
    the calls one by one. With a preprocessing SM cap, the graphs of the work on the
    capped stream are captured in its green context (Streams.capture_sides)."""

    feed_thread: bool = False
    """Each step's batch work (the next batch built from its lanes, the last one checked,
    a later one staged) on a second host thread, handed over as the step's backward
    begins (backend/feed_thread.py); False: on the thread that launches the step, after
    it. Off by default: for an interpreter without a GIL. With one, the launching thread
    holds it for most of its step, so what the second thread does lengthened that step
    by as much or more on the H200."""

    assembly_ids_per_thread: int = ASSEMBLY_IDS_PER_THREAD
    """The batch's assembly kernel copies about this many of its largest table's ids a
    thread (backend/device_assembly.py, grid_for); 0: a thread a row."""

    check_timed: bool = False
    """Compare the timed iterations' batches too. Off, the timed batches are assembled as a
    production run would, without reading the reference: on the H200 the comparison cost
    graphed heavy-lean b16384's plans 0.03-0.09 ms an iteration, which `ideal`, replaying
    ready batches, never pays."""

    def compared_batches(self, slots: int) -> int | None:
        """Batches compared with their references (the first ones; None: every batch):
        those of the warmup but its last 2 x `slots` (so the assembly without the
        comparison, one graph per pool set, is captured before the timed loop), and at
        least one of each distinct raw batch even where that reaches into the timed loop."""
        if not self.check or self.check_timed:
            return None
        return max(self.distinct_batches, self.warmup - 2 * slots)

    def __post_init__(self) -> None:
        for name, lo in (("iterations", 1), ("warmup", 0), ("distinct_batches", 1),
                         ("cpu_workers", 1), ("assembly_ids_per_thread", 0)):
            v = getattr(self, name)
            if not isinstance(v, int) or v < lo:
                raise SpecError(name, v, f"an integer >= {lo}")
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
