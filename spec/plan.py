"""Plan: where each op node runs, how nodes are fused into kernels, and when they run."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

from corun.spec.errors import SpecError, require, require_int_range
from corun.spec.model import MAX_BATCH_PER_GPU, Model
from corun.spec.pipeline import Pipeline
from corun.spec.stages import Stage, stages_for


class Mapping(enum.Enum):
    """Which device preprocesses a feature."""

    OWNER = "owner"
    """The GPU owning the feature's table, over the global batch (no input all-to-all)."""
    LOCAL = "local"
    """Every GPU over its local batch (ids then cross the input all-to-all)."""
    CPU = "cpu"
    """Host worker processes."""


BEFORE_ITERATION = "before"
"""A kernel's `stage` when it runs alone on the training stream before stage 0."""


MAX_BLOCKS_OVER = 16
"""How far past the larger of a batch's rows and a GPU's resident blocks a kernel's grid
may go (`corun tune` ran launch shapes 16 x the resident blocks at b8192)."""

KERNEL_NAME = re.compile(r"[A-Za-z0-9_.:+-]{1,64}")
"""What a fused kernel may be called."""


@dataclass(frozen=True)
class FusedKernel:
    """Op nodes launched as one horizontally fused kernel, and when it runs.

    `gpu` None means every GPU runs it over its local batch; an int means only that GPU
    runs it, over the global batch (owner mapping). `stage` is the training stage whose
    start releases it, or BEFORE_ITERATION. `warp_rows`: its long list outputs
    (spec.pipeline.WARP_ROW_MIN_LENGTH) are written a warp per row, lanes over the ids,
    so loads and stores coalesce; false: a thread per row, as every kernel ran before
    the field existed (plan files from before then load with the default).
    `fixed_offsets`: where every list it writes has a fixed length
    (Pipeline.offsets_fixed), its values kernel writes their offsets and runs
    alone, with no lengths kernel or scan; false, as plan files from before the field load
    (their kernels ran so): lists of any length's three steps. The planners set it.
    `source_first`: its list outputs made by one ngram (Pipeline.source_first_sinks)
    compute each element of the ngram's input once and store it in every window that
    holds it, so the ops after an ngram(n) run up to n times fewer; false, as plan files
    from before the field load: once per output element. `corun tune` runs it as a
    variant of the chosen plan (the cost model's kernel timings are of the kernel
    without it).
    """

    name: str
    nodes: tuple[str, ...]
    stage: str
    blocks: int = 264
    threads_per_block: int = 256
    gpu: int | None = None
    warp_rows: bool = True
    fixed_offsets: bool = False
    source_first: bool = False

    def __post_init__(self) -> None:
        require(isinstance(self.name, str) and KERNEL_NAME.fullmatch(self.name) is not None,
                "name", self.name, "1-64 letters, digits and _ . : + - (a kernel's name "
                "becomes a file and a trace label)")
        require(len(self.nodes) >= 1, "nodes", self.nodes, "at least one op node")
        require_int_range("blocks", self.blocks, 1, 2**31 - 1)
        require(isinstance(self.warp_rows, bool), "warp_rows", self.warp_rows, "true or false")
        require(isinstance(self.fixed_offsets, bool), "fixed_offsets", self.fixed_offsets,
                "true or false")
        require(isinstance(self.source_first, bool), "source_first", self.source_first,
                "true or false")
        require(self.threads_per_block in (32, 64, 128, 256, 512, 1024), "threads_per_block",
                self.threads_per_block, "one of 32, 64, 128, 256, 512, 1024")
        allowed = [BEFORE_ITERATION] + [s.value for s in Stage]
        require(self.stage in allowed, "stage", self.stage, f"one of {', '.join(allowed)}")

    @property
    def release(self) -> Stage | None:
        return None if self.stage == BEFORE_ITERATION else Stage(self.stage)


CAP_GRANULARITY_SMS = 8
"""The SMs a CUDA green context is made of on Hopper (backend/sm_split.py)."""


CAP_SHARES = (0.75, 0.5)
"""The shares of a GPU's SMs a preprocessing cap is tried at: the planner caps at the
first (`default_cap_sms`), `corun tune` measures the rest and the plan on every SM.
Measured on the H200, of gpu-sequential's gap recovered
by eager choices on 96 and on 64 SMs: heavy-rehash b32768 111% and 100% (74-76% on
every SM), b16384 51% and 25% (19%); heavy-small b16384 45% and 67% (-72%); heavy-lean /
heavy-small b32768 63% and 73% (46%), one command each. Neither share is best everywhere;
both beat every SM in all four. With `corun tune` of the capped plans, a cap
beat every SM in 8 of 9 commands on the four choices (not in one of two counted at
heavy-rehash b16384, which is noisy)."""


def cap_sms(sm_count: int, share: float) -> int:
    """`share` of a GPU's SMs, rounded down to whole green-context groups (at least one)."""
    return max(CAP_GRANULARITY_SMS,
               int(share * sm_count) // CAP_GRANULARITY_SMS * CAP_GRANULARITY_SMS)


def default_cap_sms(sm_count: int) -> int:
    """The cap the planner gives a plan whose kernel can race the training stages for
    the SMs: three quarters of the GPU's (CAP_SHARES), 96 of the H200's 132."""
    return cap_sms(sm_count, CAP_SHARES[0])


TRAINER_UPDATE_BLOCKS_PER_SM = 4
"""The fused embedding update's grid the trainer runs where a plan says nothing
(Plan.update_blocks_per_sm = 0), in blocks an SM: backend.embedding_sgd.UPDATE_BLOCKS_PER_SM
is this value, and says where it was measured. Here so that the planner's and the
simulator's notes, which must not import the CUDA kernels, name the same grid."""

MAX_UPDATE_BLOCKS_PER_SM = 64
"""The most blocks an SM the fused embedding update's grid takes (32 were measured)."""

UPDATE_GRIDS = (16,)
"""The fused embedding update's grids, in blocks an SM, `corun tune` measures beside the
trainer's default (4). On heavy-lean beside heavy-rehash b32768 emb_bwd took 5.08-5.17 ms on 4,
4.93-5.01 on 8, 3.96-4.06 on 16 and 4.61 on 32; ideal on 16 ran faster than on 4 for
heavy-lean, heavy-hot and heavy-small at b16384 and b32768, though 8 was faster still at b16384
for two of them (`--update-grids 8,16` measures both)."""


@dataclass(frozen=True)
class Plan:
    """A complete preprocessing plan for one pipeline on `gpu_count` GPUs."""

    pipeline: str
    model: str
    gpu_count: int
    kernels: tuple[FusedKernel, ...]
    cpu_nodes: tuple[str, ...] = ()
    feature_mapping: dict[str, Mapping] = field(default_factory=dict)
    """Sparse feature (its output node) -> mapping; features not listed are LOCAL."""
    training_priority_high: bool = True
    """Training stream at higher priority than the preprocessing stream."""
    table_owner: dict[str, int] = field(default_factory=dict)
    """Table -> owning GPU; empty means the default balancer decides."""
    batches_ahead: int = 1
    """How far ahead of training the GPUs preprocess: 1, the next batch (its kernels
    co-run with the step before it, and the host launches a step once the last one's
    kernels and assembly are done); 2, the batch after it (the host launches a step
    without waiting for the preprocessing co-running with the step before; one more
    pool set of memory). On the H200 the two measured alike."""
    cuda_graphs: bool = False
    """Planned for the trainer's step replayed as CUDA graphs (`corun plan --cuda-graphs`):
    `corun execute` and `corun simulate --plan` then replay it so without being told."""
    batch_per_gpu: int | None = None
    """The batch per GPU it was planned for (its launch shapes and release stages are
    sized to it): `corun execute` and `corun simulate --plan` run at it unless --batch
    says otherwise. None (plans written before the field): the model's own batch."""
    assembly_stream: bool = False
    """Each batch's assembly on a stream of its own, after the batch's last kernel (True),
    or queued behind the kernels on theirs (False). Apart, the next batch's kernel need
    not wait for an assembly that runs into the next step: graphed heavy-rehash b16384's
    choice, two ahead, ran 3.71-3.73 ms an iteration against 4.22-4.35 behind (one
    start). Behind, the H200 measured faster everywhere else it was tried side by side:
    the graphed Criteo-like plans 99.6-99.7% of ideal against 98.4-99.1% (16 of 16
    rounds), eager heavy-rehash b32768 7.59-7.60 ms against 9.14-9.16, graphed b32768
    101% of gpu-sequential's gap against 99%. `corun tune` measures the chosen plan both ways; the
    simulator does not tell them apart."""
    preprocess_sm_cap: int = 0
    """0: the preprocessing stream may take every SM. N: it runs confined to N SMs (a CUDA
    green context; the driver rounds up to 8) while training keeps every SM, so a kernel
    that becomes ready between two training kernels cannot take the SMs the next one
    needs. Eager heavy-rehash b32768's choice: 6.89-6.90 ms an iteration on 96 SMs, 0 of
    300 steps held, against 7.54-7.59 and 78-85 held on every SM (ideal 7.09; graphed
    b16384's: 3.57 on 64 against 3.74 with its assemblies on their own stream; three more
    eager choices in CAP_SHARES; those runs issued each batch's preprocessing call by
    call). One GPU; each batch's work is replayed from graphs captured in the green
    context, so that its kernels keep to its SMs (backend/batch_graphs.py). The
    planner caps a plan whose kernel can race the training stages
    (planner/sm_cap.py); `corun tune` measures the chosen plan at the other CAP_SHARES
    and on every SM (tune_cmd.cap_variants); the simulator bounds each stage's slowdown
    by the SMs the cap leaves training (sim.scenario.stage_slowdown_bound)."""
    update_blocks_per_sm: int = 0
    """The fused embedding update's grid in blocks an SM (Model.embedding_update
    fused-sgd); 0: the trainer's default (backend.embedding_sgd.UPDATE_BLOCKS_PER_SM, 4,
    which leave the SMs room for a kernel beside the update). Heavy-lean beside
    heavy-rehash b32768 ran ideal's step in 5.86-5.93 ms on 16 against 6.98-7.06 on 4;
    eager, its best plan measured, on 64 SMs with the update on 16, in 6.64-6.68 ms
    against the capped choice's 6.78-6.84 on 4; graphed, the choice on 16 in 6.20-6.22
    ms. The
    planner leaves it at 0 (the cost model's stage times are the default grid's);
    `corun tune` measures the chosen plan on UPDATE_GRIDS (tune_cmd.grid_variants); the
    simulator does not model it."""

    def __post_init__(self) -> None:
        require_int_range("gpu_count", self.gpu_count, 1, 4096)
        require(isinstance(self.cuda_graphs, bool), "cuda_graphs", self.cuda_graphs,
                "true or false")
        require(not (self.cuda_graphs and self.gpu_count > 1), "cuda_graphs", True,
                "false with several GPUs (the graphed step is one process's)")
        require_int_range("batches_ahead", self.batches_ahead, 1, 2)
        require(isinstance(self.assembly_stream, bool), "assembly_stream",
                self.assembly_stream, "true or false")
        if self.preprocess_sm_cap != 0:
            require_int_range("preprocess_sm_cap", self.preprocess_sm_cap, 8, 4096)
            require(self.gpu_count == 1, "preprocess_sm_cap", self.preprocess_sm_cap,
                    "0 with several GPUs (it confines one GPU's preprocessing stream)")
        if self.update_blocks_per_sm != 0:
            require_int_range("update_blocks_per_sm", self.update_blocks_per_sm, 1,
                              MAX_UPDATE_BLOCKS_PER_SM)
        if self.batch_per_gpu is not None:
            require_int_range("batch_per_gpu", self.batch_per_gpu, 1, MAX_BATCH_PER_GPU)
        names = [k.name for k in self.kernels]
        dup = sorted({n for n in names if names.count(n) > 1})
        require(not dup, "kernels", dup, "unique kernel names")
        for i, k in enumerate(self.kernels):
            if k.gpu is not None:
                require(0 <= k.gpu < self.gpu_count, f"kernels[{i}].gpu", k.gpu,
                        f"an integer in [0, {self.gpu_count - 1}] or null")
            if k.release is not None:
                require(k.release in stages_for(self.gpu_count), f"kernels[{i}].stage", k.stage,
                        f"a stage that exists with {self.gpu_count} GPU(s)")
        for t, g in self.table_owner.items():
            require(0 <= g < self.gpu_count, f"table_owner.{t}", g,
                    f"an integer in [0, {self.gpu_count - 1}]")

    def check_pipeline(self, pipeline: Pipeline) -> None:
        """Every node runs exactly once, after the node it reads."""
        require(self.pipeline == pipeline.name, "plan.pipeline", self.pipeline,
                f"the pipeline it runs with ({pipeline.name!r})")
        where: dict[str, tuple[int, str]] = {}
        for i, k in enumerate(self.kernels):
            for n in k.nodes:
                require(n in pipeline.node_by_name, f"plan.kernels[{i}].nodes", n,
                        f"a node of pipeline {pipeline.name!r}")
                require(n not in where, f"plan.kernels[{i}].nodes", n,
                        f"a node in one kernel only (also in {where.get(n, ('', ''))[1]!r})")
                where[n] = (i, k.name)
        for n in self.cpu_nodes:
            require(n in pipeline.node_by_name, "plan.cpu_nodes", n,
                    f"a node of pipeline {pipeline.name!r}")
            require(n not in where, "plan.cpu_nodes", n, "a node not also in a GPU kernel")
            where[n] = (-1, "cpu")
        for i, k in enumerate(self.kernels):
            chains = len(pipeline.sinks(k.nodes))
            require(k.blocks >= chains, f"plan.kernels[{i}].blocks", k.blocks,
                    f"at least the kernel's {chains} chains (a fused kernel gives each at "
                    "least one block)")
        missing = [n.name for n in pipeline.nodes if n.name not in where]
        require(not missing, "plan", missing[:3],
                f"every op node placed ({len(missing)} of {len(pipeline.nodes)} are not)")
        order = {s: i for i, s in enumerate(stages_for(self.gpu_count))}
        for node in pipeline.nodes:
            if node.input not in pipeline.node_by_name:
                continue
            ki, kname = where[node.name]
            pi, pname = where[node.input]
            if ki == pi:
                continue  # same kernel (a fused chain) or both on the CPU
            require(pi == -1 or ki != -1, "plan.cpu_nodes", node.name,
                    f"a node whose input {node.input!r} is also on the CPU")
            if pi == -1:
                continue
            mine, theirs = self.kernels[ki], self.kernels[pi]
            pos_m = -1 if mine.release is None else order[mine.release]
            pos_t = -1 if theirs.release is None else order[theirs.release]
            require(pos_t < pos_m or (pos_t == pos_m and pi < ki), f"plan.kernels[{ki}]",
                    kname, f"to run after kernel {pname!r}, which produces {node.input!r}")

    def check_model(self, model: Model, sm_count: int, max_blocks_per_sm: int) -> None:
        """The plan was made for `model` (by name), owns only its tables, and launches no
        kernel far wider than a GPU of `sm_count` SMs can use on the model's batch
        (MAX_BLOCKS_OVER: blocks beyond both its rows and its resident blocks have no
        row to work on)."""
        require(self.model == model.name, "plan.model", self.model,
                f"the model it runs with ({model.name!r})")
        tables = {t.name for t in model.tables}
        for t in self.table_owner:
            require(t in tables, f"plan.table_owner.{t}", self.table_owner[t],
                    f"owners of tables of {model.name!r} only")
        rows = (self.batch_per_gpu or model.batch_per_gpu) * self.gpu_count
        most = MAX_BLOCKS_OVER * max(rows, sm_count * max_blocks_per_sm)
        for i, k in enumerate(self.kernels):
            require(k.blocks <= most, f"plan.kernels[{i}].blocks", k.blocks,
                    f"at most {most} ({MAX_BLOCKS_OVER} x the larger of the batch's {rows} "
                    f"rows and the {sm_count} SMs' {sm_count * max_blocks_per_sm} resident "
                    "blocks)")

    def mapping_of(self, feature: str) -> Mapping:
        return self.feature_mapping.get(feature, Mapping.LOCAL)


def one_kernel_plan(pipeline: Pipeline, model: str, gpu_count: int, stage: str,
                    blocks: int = 264, threads_per_block: int = 256) -> Plan:
    """All nodes in one horizontally fused kernel on every GPU, released at `stage`."""
    if stage != BEFORE_ITERATION and Stage(stage) not in stages_for(gpu_count):
        raise SpecError("stage", stage, f"a stage that exists with {gpu_count} GPU(s)")
    kernel = FusedKernel("all", tuple(pipeline.order), stage, blocks, threads_per_block,
                         fixed_offsets=True)
    return Plan(pipeline.name, model, gpu_count, (kernel,))
