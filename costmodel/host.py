"""The host thread that drives one GPU: it launches every training kernel and every fused
preprocessing kernel, and stages, assembles and checks each batch, one thing at a time.

On the eager trainer at small batches this thread, not the GPU, sets the pace: a GPU that
finishes its work early waits for the next launch. The simulator runs the thread beside
each GPU, so an iteration takes at least its host time.

The constants are fitted (`costmodel/host_fit.py`) on `corun execute`'s own host
breakdown of executed H200 runs (torch 2.11, numba-cuda 0.30.4; the runs are in
validation/):
  step_ms           `ideal`'s host step where the host sets the pace (kaggle and
                    terabyte b4096);
  kernel_launch_ms  per host launch of a fused kernel (a list-writing kernel is three:
                    lengths, scan, values), its arguments packed once (backend/launch.py);
  batch_fixed_ms    staging, assembly and check of one batch (one kernel assembles and
  batch_ms_per_mb   checks it, the host reads one copy back); the slope was not
                    significant over 1.9-86 MB, so it is flat.
Several GPUs have the same four, fitted apart on 2-GPU runs of the distributed trainer,
and used for any GPU count. One host step serves every model: per-model steps measured
on one host made the predictions of other hosts worse, because lent hosts differ more
than models do. The same host is assumed for every GPU kind.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from corun.costmodel.workload import scans_lists
from corun.spec import FusedKernel, Hardware, Model, Pipeline, Stage
from corun.spec.hardware import HostTimes

ASSEMBLY_FIXED_MS, ASSEMBLY_MS_PER_MB = 0.05, 0.0007
"""The GPU kernel that assembles a batch: a line fitted to its measured spans on the H200
where it waited for nothing, 0.03-0.07 ms at 2-8 MB (kaggle, terabyte, wide-2x) to 0.28
ms at heavy's 345 MB. The MB are output_mb's, lists at their mean length; the kernel
itself moves more (with the check, 785 MB at heavy b16384)."""


GRAPH_STEP_MS = 0.42
"""The host's step when the trainer replays CUDA graphs (Model.cuda_graphs): copying the
batch into the graphs' inputs, nine graph launches and their stage marks. Measured on an
H200 host: gpu-sequential's host step less its kernel's three launches, the median over
kaggle, terabyte and wide-4x b4096 (0.28-0.53 ms)."""


LAUNCH_SHARE: dict[str, float] = {
    "emb_fwd": 0.027, "bottom_mlp_fwd": 0.066, "interaction_fwd": 0.042,
    "top_mlp_fwd": 0.086, "top_mlp_bwd": 0.271, "interaction_bwd": 0.179,
    "bottom_mlp_bwd": 0.154, "emb_bwd": 0.087, "optimizer": 0.088}
"""Each stage's share of the one-GPU step's host launches: eagerly the host launches a
stage's kernels one by one, so the GPU cannot begin a stage before the host has launched
the ones before it. Fitted with the constants above (`launch_share`, costmodel/host_fit.py:
the median over host-paced ideal steps, kaggle and terabyte b4096, of the host's time per
stage mark). The backward MLPs take most: autograd launches several kernels a layer."""

MODEL_LAUNCH_SHARE: dict[str, dict[str, float]] = {
    "heavy-fused": {
        "emb_fwd": 0.033, "bottom_mlp_fwd": 0.067, "interaction_fwd": 0.054,
        "top_mlp_fwd": 0.073, "top_mlp_bwd": 0.237, "interaction_bwd": 0.171,
        "bottom_mlp_bwd": 0.112, "emb_bwd": 0.18, "optimizer": 0.073}}
"""A model's own one-GPU shares where its ideal step was measured without blocking for
the GPU: heavy-fused's fused embedding update takes twice kaggle's share at emb_bwd
(`launch_share` over 15 heavy-fused b8192 ideal steps on an H200 host)."""

DISTRIBUTED_LAUNCH_SHARE: dict[str, float] = {
    "input_a2a": 0.286, "emb_fwd": 0.016, "emb_a2a_fwd": 0.036, "bottom_mlp_fwd": 0.047,
    "interaction_fwd": 0.028, "top_mlp_fwd": 0.058, "top_mlp_bwd": 0.163,
    "interaction_bwd": 0.091, "bottom_mlp_bwd": 0.075, "emb_a2a_bwd": 0.054,
    "emb_bwd": 0.052, "grad_allreduce": 0.047, "optimizer": 0.046}
"""The same for the distributed step, fitted on 2-GPU host-paced ideal steps
(`distributed_launch_share`). The input all-to-all's host part, the ids
split per rank and their counts exchanged first, is over a quarter of the step (1.6-1.8 ms
of 6.0): a batch assembled late holds back everything after it."""


HOST_STEP_SPREAD = (0.75, 1.23)
"""Where the host paced the eager step, how far lent hosts lay from one another: the
10th and 90th percentiles of ideal's step at criteo-kaggle and criteo-terabyte b4096 on
one H200 (the median of each command's runs), over the median of all those commands
(validation/measured.csv, `host_fit.host_step_spread`). One host step serves
every host, so a host-paced prediction can land anywhere in this band."""


WORKERS_MS = 0.25
"""What a plan with op nodes on the host CPU adds to the one-GPU step beyond its batch's
staging and check: its 16 worker processes beside the launching thread on a 16-core host
(DISTRIBUTED_WORKERS_MS below is the same on several GPUs): over 55 executed one-GPU
plans with op nodes on the host CPU, the median of their iteration less the same
command's ideal (0.54 ms), less the batch cost (0.29). Without it such plans are
predicted faster than gpu-sequential at kaggle and terabyte b4096, where measured they
ran no faster."""

DISTRIBUTED_WORKERS_MS = 0.74
"""What a plan with op nodes on the host CPU adds to each rank's step on several GPUs,
beyond its batch's staging and check: the 16 worker processes a rank starts compete with
its launching thread (34 busy processes on an H200 x2's 32 cores). The median over 8
all-CPU plans on 2 GPUs of their iteration less the same command's ideal (median 1.09
ms), less the distributed batch cost (0.35)."""


DISTRIBUTED_OWNER_A2A_MS = 0.268
"""Host time the distributed step's input all-to-all saves when every table's ids are
preprocessed by the table's owner (scaled by the share of tables that are): those ids are
neither split per rank, exchanged nor gathered back per table and source
(backend/distributed.py, `_input_a2a`). DISTRIBUTED_OWNER_LANE_MS is what the owners'
lane adds to the batch's host time (a second lane staged, assembled and checked). The
medians over 28 rounds on three lent H200 x2 machines that ran the owner-mapped plan
beside the same GPU plan without owners (`costmodel/host_fit.py`)."""

DISTRIBUTED_OWNER_LANE_MS = 0.12
"""See DISTRIBUTED_OWNER_A2A_MS."""


@dataclass(frozen=True)
class HostCosts:
    """What one GPU's host thread spends per iteration, by piece."""

    step_ms: float = 3.74
    graph_step_ms: float = GRAPH_STEP_MS
    kernel_launch_ms: float = 0.052
    batch_fixed_ms: float = 0.29
    batch_ms_per_mb: float = 0.0
    distributed_step_ms: float = 6.00
    distributed_kernel_launch_ms: float = 0.029
    distributed_batch_fixed_ms: float = 0.35
    distributed_batch_ms_per_mb: float = 0.0
    workers_ms: float = WORKERS_MS
    distributed_workers_ms: float = DISTRIBUTED_WORKERS_MS
    distributed_owner_a2a_ms: float = DISTRIBUTED_OWNER_A2A_MS
    distributed_owner_lane_ms: float = DISTRIBUTED_OWNER_LANE_MS
    launch_share: tuple[tuple[str, float], ...] = ()
    """The one-GPU step's launch shares by stage where measured on this host, for models
    without shares of their own (MODEL_LAUNCH_SHARE); empty: LAUNCH_SHARE."""
    plan_step_ms: float = 0.0
    """One GPU's eager step of a plan that stages batches, beyond ideal's and its
    kernels' launches (HostTimes.plan_step_ms; 0: folded into kernel_launch_ms, as the
    reference fit is)."""
    step_models: tuple[str, ...] = ("criteo-kaggle", "criteo-terabyte")
    """The models whose eager step `step_ms` is (the fit's host-paced workloads)."""
    model_launch_ms: tuple[tuple[str, float], ...] = ()
    """Models' eager steps as this host launched them (HostTimes.model_launch_ms)."""
    source: str = "corun execute host breakdown, H200 machine (costmodel/host.py)"

    def for_model(self, model: Model) -> HostCosts:
        """These costs with the one-GPU eager step of `model`: `step_ms` times its step
        over `step_models`' as this host launched them (`model_launch_ms`, from `corun
        calibrate`). Unchanged where the host launched neither: one step serves every
        model (see the module's docstring). The graphed and distributed steps are kept."""
        launched = dict(self.model_launch_ms)
        timed = [launched[m] for m in self.step_models if m in launched]
        if model.name not in launched or not timed:
            return self
        ratio = launched[model.name] * len(timed) / sum(timed)
        return replace(self, step_ms=self.step_ms * ratio, step_models=(model.name,))

    def measured(self, t: HostTimes, source: str) -> HostCosts:
        """These costs on a host measured by `corun calibrate`: its one-GPU step, graphed
        step, kernel launch, batch cost and launch shares as measured; what it did not
        measure (several GPUs, host workers, owner lanes) scaled by its step over this
        one's, one host speed for every piece of the thread's work."""
        speed = t.step_ms / self.step_ms
        return replace(
            self, step_ms=t.step_ms, graph_step_ms=t.graph_step_ms,
            kernel_launch_ms=t.kernel_launch_ms, batch_fixed_ms=t.batch_fixed_ms,
            batch_ms_per_mb=0.0, plan_step_ms=t.plan_step_ms,
            distributed_step_ms=self.distributed_step_ms * speed,
            distributed_kernel_launch_ms=self.distributed_kernel_launch_ms * speed,
            distributed_batch_fixed_ms=self.distributed_batch_fixed_ms * speed,
            workers_ms=self.workers_ms * speed,
            distributed_workers_ms=self.distributed_workers_ms * speed,
            distributed_owner_a2a_ms=self.distributed_owner_a2a_ms * speed,
            distributed_owner_lane_ms=self.distributed_owner_lane_ms * speed,
            launch_share=tuple(sorted(t.launch_share.items())),
            step_models=tuple(t.measured_on.split()[:1]) or self.step_models,
            model_launch_ms=tuple(sorted(t.model_launch_ms.items())), source=source)

    def iteration_ms(self, kernel_launches: int, output_mb: float, batches: bool,
                     gpus: int = 1, graphs: bool = False, workers: bool = False,
                     owner_share: float = 0.0) -> float:
        """Host time of one iteration: the step (the distributed one on several GPUs, the
        graphed one with `graphs`, slowed by host workers beside it: `workers`, shortened
        where a share of the tables' ids skip the input all-to-all: `owner_share`),
        its fused-kernel launches and, when the executor stages real batches (`batches`;
        not `ideal`'s replay), their staging, assembly and check (and the owners' lane)."""
        _, launch, fixed, per_mb = self._constants(gpus)
        batch = fixed + per_mb * output_mb if batches else 0.0
        if batches and gpus > 1 and owner_share > 0:
            batch += self.distributed_owner_lane_ms
        return (self._step_ms(gpus, graphs, workers, batches)
                - self.owner_saved_ms(gpus, owner_share) + launch * kernel_launches + batch)

    def owner_saved_ms(self, gpus: int, owner_share: float) -> float:
        """Host time the input all-to-all saves for the share of tables owner-mapped."""
        return self.distributed_owner_a2a_ms * owner_share if gpus > 1 else 0.0

    def _step_ms(self, gpus: int, graphs: bool, workers: bool, batches: bool) -> float:
        """The step's own launches: the graphed step, or the eager one plus what host
        workers preprocessing beside the launching thread cost it (`workers`) and, on
        one GPU, what a plan that stages batches adds to it (`batches`)."""
        if graphs:
            return self.graph_step_ms
        extra = (self.distributed_workers_ms if gpus > 1 else self.workers_ms) \
            if workers else 0.0
        if batches and gpus == 1:
            extra += self.plan_step_ms
        return self._constants(gpus)[0] + extra

    def turnaround_ms(self, host_thread: bool, gpus: int = 1) -> float:
        """From the end of a batch's assembly on the GPU to the earliest start of the step
        that trains on it: with the host thread modelled, the host's staging and check
        before it launches that step (the executor's host waits for the assembly); 0
        without. The assembly itself is simulated on the preprocessing stream
        (`assembly_ms`, sim/scenario.py). Hidden when the batch is ready early in the
        step before; exposed when it is not (a kernel released late in the step)."""
        return self._constants(gpus)[2] if host_thread else 0.0

    def launched_ms(self, stages: Sequence[Stage], launches_at: Sequence[int],
                    launches_before: int, gpus: int = 1, graphs: bool = False,
                    model: str = "", workers: bool = False,
                    owner_share: float = 0.0, batches: bool = False) -> tuple[float, ...]:
        """Per stage position, the host's time from the start of a step's launches until
        that stage's are all made (the last: every launch of the step): the step's own
        launches shared out by stage (LAUNCH_SHARE), each fused kernel's three or one at
        the stage that releases it (`launches_at`), those before the iteration first;
        `model`'s own shares where measured (MODEL_LAUNCH_SHARE, one GPU); the input
        all-to-all's launches less what owner-mapped tables save (`owner_share`); the
        step of a plan that stages batches (`batches`) with what it adds (plan_step_ms).
        The GPU begins a stage no earlier than the stages before it are launched."""
        launch = self._constants(gpus)[1]
        step = self._step_ms(gpus, graphs, workers, batches)
        table = DISTRIBUTED_LAUNCH_SHARE if gpus > 1 else (
            MODEL_LAUNCH_SHARE.get(model) or dict(self.launch_share) or LAUNCH_SHARE)
        mean = sum(table.values()) / len(table)
        shares = [table.get(s.value, mean) for s in stages]
        total = sum(shares) or 1.0
        saved = self.owner_saved_ms(gpus, owner_share)
        out, acc = [], launch * launches_before
        for stage, share, n in zip(stages, shares, launches_at):
            part = step * share / total
            if stage is Stage.INPUT_A2A:
                part, saved = max(0.0, part - saved), 0.0
            acc += part + launch * n
            out.append(acc)
        return tuple(out)

    def _constants(self, gpus: int) -> tuple[float, float, float, float]:
        """(step, kernel launch, batch fixed, batch per MB) ms for one GPU or several."""
        if gpus == 1:
            return (self.step_ms, self.kernel_launch_ms, self.batch_fixed_ms,
                    self.batch_ms_per_mb)
        return (self.distributed_step_ms, self.distributed_kernel_launch_ms,
                self.distributed_batch_fixed_ms, self.distributed_batch_ms_per_mb)


H200_HOST = HostCosts()


def host_costs(hw: Hardware) -> HostCosts:
    """The host thread's costs on `hw`: its measured host's (Hardware.host, from a machine
    profile), else the reference H200 host's."""
    if hw.host is None:
        return H200_HOST
    return H200_HOST.measured(hw.host, "corun calibrate on this machine"
                              + (f" ({hw.host.measured_on})" if hw.host.measured_on else ""))


ASSEMBLY_UNCOMPARED_SHARE = 523 / 785
"""The assembly's memory traffic without the comparison over that with it: at heavy
b16384 523 MB against 785 (the reference's ids, offsets and dense features not read;
alone 0.160 ms against 0.239 on an H200)."""


def assembly_ms(output_mb: float, compared: bool = False) -> float:
    """The GPU kernel that assembles one batch of `output_mb`, alone; `compared`: it also
    compares the batch with the reference (RunSettings.check_timed), which the fit above
    measured."""
    share = 1.0 if compared else ASSEMBLY_UNCOMPARED_SHARE
    return ASSEMBLY_FIXED_MS + ASSEMBLY_MS_PER_MB * share * output_mb


def output_mb(pipeline: Pipeline, rows: int) -> float:
    """MB of one batch's pipeline outputs (what the host assembles and checks), lists at
    their mean length."""
    cols = pipeline.columns
    names = list(pipeline.dense_outputs) + [s.node for s in pipeline.sparse_outputs]
    return sum(cols[n].bytes_per_row() for n in names) * rows / 1e6


def kernel_launches(kernels: Iterable[FusedKernel], pipeline: Pipeline) -> int:
    """Host launches of fused kernels per batch: a kernel that finds its lists' offsets
    with a scan adds a lengths kernel and the scan (backend/runner.py; scans_lists)."""
    return sum(3 if scans_lists(pipeline, k.nodes, k.fixed_offsets) else 1 for k in kernels)
