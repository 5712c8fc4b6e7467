"""The host thread that drives one GPU: it launches every training kernel and every fused
preprocessing kernel, and stages, assembles and checks each batch, one thing at a time.

On the H200 this thread, not the GPU, set the pace of most executed runs (bench/results/
execute_h200.md: iteration time = the sum of the host's pieces): a GPU that finishes its
work early waits for the next launch. The simulator runs the thread beside each GPU, so
an iteration takes at least its host time.

Constants, fitted (costmodel/host_fit.py) by `python bench/fit_host.py
bench/results/raw/execute_plans_run11.json bench/results/raw/execute_multigpu_run3.json
-o bench/results/host_fit.json` on `corun execute`'s own host breakdown (torch 2.11,
numba-cuda 0.30.4). One GPU, from run 11 (the whole plans matrix, 45 cases, on the host
of an H200 x4 machine, 2026-11-29, commit fe01dad); run 12 (the one-GPU H200 machine's
16-core host, the same day) checks them in bench/results/plans_h200.md, run 13 (an H200
x2 machine's host) in bench/results/plans_h200x2host.md; fitted on run 12 alone they
would be 3.74 / 0.042 / 0.30 / 0.00006:
  step_ms           3.74  `ideal` host step where the host sets the pace (kaggle and
                          terabyte b4096: 3.56-3.92 ms; bench/host_split.py times the
                          GPU side of that step at 2.6 ms);
  kernel_launch_ms  0.052 per host launch of a fused kernel (a list-writing kernel is
                          three: lengths, scan, values), its arguments packed once
                          (backend/launch.py): least squares through zero of the step's
                          host time over ideal's against launches, host-paced runs;
  batch_fixed_ms    0.29  staging + assembly + check of one batch (one kernel assembles
  batch_ms_per_mb   0     and checks it, the host reads one copy back): over the 34
                          non-ideal runs (1.9-86 MB: 0.22-0.63 ms) the line through
                          cost against output MB fell, so the median, flat.
Several GPUs, the same four fitted apart, from the 24 cases of 2-GPU run 6 (`python
bench/fit_host.py bench/results/raw/execute_plans_run11.json
bench/results/raw/execute_multigpu_run6.json -o bench/results/host_fit_multigpu_run6.json`;
bench/execute_gpu.py --matrix multigpu under torchrun on an H200 x2, commit ff15883,
2026-12-01, the distributed trainer with one input all-to-all pass and the gradients
copied back in one call, bench/results/multigpu_h200x2_run6.md):
  distributed_step_ms          6.00  ideal's host-paced step (b4096: 5.87-6.12 ms);
  distributed_kernel_launch_ms 0.029 per fused-kernel launch;
  distributed_batch_fixed_ms   0.35  staging, assembly, check and the per-table split of
  distributed_batch_ms_per_mb  0     each batch (0.28-1.21 ms at 1.9-3.9 MB: too narrow a
                                     span for a slope, host_fit.MIN_MB_SPAN; the median).
What owner-mapped tables save the input all-to-all and what their lane adds:
DISTRIBUTED_OWNER_A2A_MS and DISTRIBUTED_OWNER_LANE_MS (below), fitted apart.
Measured at 2 GPUs on one machine: used for any count. Held out, 2-GPU run 7 (another
lent x2 the same day, ideal 6.12-7.40 ms) is predicted 17.3% fast on average
(bench/results/multigpu_h200x2_run7.md): the lent machines' hosts differ more than the
model's pieces. Fitted before on 2-GPU run 3
(commit 2bce8fc, the trainer before those changes) they were 7.64 / 0.087 / 1.04 / 0,
23-49% slow on run 6.
The one-GPU constants moved with the host: fitted on run 7 (the H200 machine, an
earlier day) they were 4.10 / 0.086 / 0.39 / 0.0024, and ideal's b4096 step measured
3.88-4.32 ms there.
Since commit 4bec2ee the executor's launches and per-batch copies are CUDA driver calls
(backend/driver.py): 0.03-0.05 ms of host a step less at heavy b8192, a median 1.4% off
the iteration in 39 paired rounds (bench/results/driver_h200.md); these constants were
fitted before it and are not refitted (less than the lent hosts' spread).
Since commit fd22a7b each batch's copies, launches and assembly replay as CUDA graphs
(backend/batch_graphs.py): about 0.12 ms of host a batch less at heavy b8192, no change
in the iteration over 46 paired rounds (bench/results/calls_h200.md); not refitted
either.
One step for every model, measured against a step by model: every model's eager ideal at
b2048 and b4096, 2 rounds, back to back on one H200's host (`bash
bench/host_steps_session.sh`; `python bench/fit_host.py --step-scales
bench/results/raw/execute_host_steps_{default,heavy_fused,heavy_lean}_run1.json.gz -o
bench/results/host_step_scales.json`) put the host-paced models' steps at 0.76-1.23x
criteo-kaggle's (heavy-small 0.76, heavy-fused 0.77, heavy-lean 0.95, wide-2x 1.02,
terabyte 1.21, heavy-mlp 1.23; kaggle's own rounds 3.62-4.32 ms). Taken into the model,
the 3,993 executed cases re-predicted (`python bench/repredict.py --all`) went from 1,122
to 1,022 within 5%: heavy-fused 203 -> 61 of 1,171 and heavy-small 26 -> 18 of 78 (other
machines' heavy-fused steps were not 0.77x kaggle's), terabyte 203 -> 253 of 825 but
host-paced b4096 runs from -10% to +10% by machine. So the per-model steps stay out: the
lent hosts differ more than the models (bench/results/host_steps_h200.md).
The same host is assumed for every GPU kind (a what-if elsewhere keeps this host). Before
the executor packed launch arguments once and assembled with one kernel (runs 2-6), the
constants were 4.90 / 0.29 / 1.31 / 0.080, fitted by hand on runs 2-3 (heavy.s batch
took 7.9-8.6 ms of host).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from spec import FusedKernel, Pipeline, Stage
from spec.pipeline import Shape

ASSEMBLY_FIXED_MS, ASSEMBLY_MS_PER_MB = 0.05, 0.0007
"""The GPU kernel that assembles a batch: fitted by eye to its measured spans where it
waited for nothing (RAP's plans and gpu-overlap, execute_plans_run12/15 and
execute_heavy_run5): 0.03-0.07 ms at 2-8 MB (kaggle, terabyte, wide-2x), 0.13, 0.17 and
0.28 ms at heavy's 86, 173 and 345 MB; wide-4x b8192 (104 tables, 15 MB) took 0.27 ms,
which this line puts at 0.06, until the assembly found each table's start once a batch:
0.076-0.082 ms alone since (bench/results/tune_h200.md, runs 8-9). (The MB are
output_mb's, lists at their mean length; the kernel itself moves more: at heavy b16384
785 MB with the check, 0.28 ms alone, 0.235 on the grid of 2026-12-01,
bench/results/assembly_probe_h200.md. Not refitted: in execution the new grid changed
nothing, bench/results/heavy_asmgrid_h200.md.)"""


GRAPH_STEP_MS = 0.42
"""The host's step when the trainer replays CUDA graphs (Model.cuda_graphs): copying the
batch into the graphs' inputs, nine graph launches and their stage marks. gpu-sequential's
host step less its one kernel's three launches (3 x 0.052 ms) at kaggle, terabyte and
wide-4x b4096: 0.28, 0.53 and 0.42 ms, the median taken (H200 machine, commit 0b3647a,
bench/results/raw/execute_graphs_run1.json, `bash bench/graphs_probe.sh`). Eagerly the
same step took 3.3-4.8 ms of host there."""


LAUNCH_SHARE: dict[str, float] = {
    "emb_fwd": 0.027, "bottom_mlp_fwd": 0.066, "interaction_fwd": 0.042,
    "top_mlp_fwd": 0.086, "top_mlp_bwd": 0.271, "interaction_bwd": 0.179,
    "bottom_mlp_bwd": 0.154, "emb_bwd": 0.087, "optimizer": 0.088}
"""Each stage's share of the one-GPU step's host launches: eagerly the host launches a
stage's kernels one by one, so the GPU cannot begin a stage before the host has launched
the ones before it. Fitted with the constants above (`launch_share`, costmodel/host_fit.py:
the median over run 11's host-paced ideal steps, kaggle and terabyte b4096, of the host's
time per stage mark, bench/results/host_fit_multigpu_run6.json). heavy-fused b8192's
ideal, host-paced too, measured alike (0.03 / 0.07 / 0.05 / 0.07 / 0.24 / 0.17 / 0.12 /
0.18 / 0.07, bench/results/raw/execute_asmgrid_b8192.json). The backward MLPs take most:
autograd launches several kernels a layer."""

MODEL_LAUNCH_SHARE: dict[str, dict[str, float]] = {
    "heavy-fused": {
        "emb_fwd": 0.033, "bottom_mlp_fwd": 0.067, "interaction_fwd": 0.054,
        "top_mlp_fwd": 0.073, "top_mlp_bwd": 0.237, "interaction_bwd": 0.171,
        "bottom_mlp_bwd": 0.112, "emb_bwd": 0.18, "optimizer": 0.073}}
"""A model's own one-GPU shares where its ideal step was measured without blocking for
the GPU: heavy-fused's fused embedding update takes twice kaggle's share at emb_bwd.
Fitted by `python bench/fit_host.py --shares-by-model
bench/results/raw/execute_asmgrid_b8192.json.gz execute_tiebreak_b8192.json.gz
execute_tieab_b8192.json.gz execute_capped_plans_b8192.json.gz execute_coupled_stages.json
(each under bench/results/raw/) -o bench/results/launch_shares_heavy_fused.json` (15
b8192 ideal steps, 2026-12-01). Without it the 2-round run `coupled_stages` (kernel at
emb_bwd and at the optimizer, b8192) was predicted 5.22 and 5.39 ms, with it 4.96 and
5.12; measured 4.39 and 4.67, on a host whose ideal step ran 8% faster than the model's."""

DISTRIBUTED_LAUNCH_SHARE: dict[str, float] = {
    "input_a2a": 0.286, "emb_fwd": 0.016, "emb_a2a_fwd": 0.036, "bottom_mlp_fwd": 0.047,
    "interaction_fwd": 0.028, "top_mlp_fwd": 0.058, "top_mlp_bwd": 0.163,
    "interaction_bwd": 0.091, "bottom_mlp_bwd": 0.075, "emb_a2a_bwd": 0.054,
    "emb_bwd": 0.052, "grad_allreduce": 0.047, "optimizer": 0.046}
"""The same for the distributed step, fitted on 2-GPU run 6's host-paced ideal steps
(`distributed_launch_share`, the same fit). The input all-to-all's host part, the ids
split per rank and their counts exchanged first, is over a quarter of the step (1.6-1.8 ms
of 6.0): a batch assembled late holds back everything after it."""


WORKERS_MS = 0.25
"""What a plan with op nodes on the host CPU adds to the one-GPU step beyond its batch's
staging and check: its 16 worker processes beside the launching thread on a 16-core host
(DISTRIBUTED_WORKERS_MS below is the same on several GPUs). Fitted by `bash
bench/fit_workers.sh` (bench/results/host_workers.json): over the 55 plans with op nodes
on the host CPU in one-GPU runs before plans run 21, the median of their iteration less
the same command's ideal (0.54 ms), less the batch cost (0.29). Before it such plans
were predicted 3.7% faster than gpu-sequential at kaggle and terabyte b4096 and the
planner chose them; measured they took 1.02x its iteration (27 rounds, README), 1.10x
and 1.18x in run 21."""

DISTRIBUTED_WORKERS_MS = 0.74
"""What a plan with op nodes on the host CPU adds to each rank's step on several GPUs,
beyond its batch's staging and check: the 16 worker processes a rank starts compete with
its launching thread (34 busy processes on an H200 x2's 32 cores; the input all-to-all's
host part, first in the step, measured 0.7 ms longer in 2-GPU run 8). Fitted by `bash
bench/fit_workers.sh` (first alone: `python bench/fit_host.py --workers
bench/results/raw/execute_multigpu_run6.json
bench/results/raw/execute_multigpu_run7.json -o bench/results/host_workers_x2.json`, the
same value): the median over the 8 all-CPU plans of 2-GPU runs 6 and 7 of their
iteration less the same command's ideal (0.03-1.74 ms, median 1.09), less the
distributed batch cost (0.35). Before it the model put such plans 0.35 ms behind ideal
and the planner chose them on 2 and 4 GPUs; measured they took 1.2 ms more than ideal
(median of 16, runs 6-8) and lost to the plans with kernels in every workload of run 8."""


DISTRIBUTED_OWNER_A2A_MS = 0.268
"""Host time the distributed step's input all-to-all saves when every table's ids are
preprocessed by the table's owner (scaled by the share of tables that are): those ids are
neither split per rank, exchanged nor gathered back per table and source
(backend/distributed.py, `_input_a2a`). DISTRIBUTED_OWNER_LANE_MS is what the owners'
lane adds to the batch's host time (a second lane staged, assembled and checked).
Fitted by `python bench/fit_host.py --owner bench/results/raw/execute_multigpu_run6.json.gz
execute_multigpu_run7.json.gz execute_multigpu_run8.json.gz
execute_multigpu_rounds_x2_run1.json.gz (each under bench/results/raw/) -o
bench/results/host_owner_x2.json`: the medians over the 28 rounds of 2-GPU runs 6-8 and
the owner rounds (2026-12-01, three lent H200 x2s) that ran the owner-mapped plan beside
the same GPU plan without owners (saved -0.18 to 0.61 ms, added -0.04 to 1.74). Held out,
2-GPU runs 9-10 (36 such rounds on another x2) give 0.387 and 0.122. Before it the model
charged owners their extra launch and nothing else and put the owner-mapped plan 0.5%
behind; measured it ran ahead in 3 of 4 workloads of runs 9-10 (median of 9 rounds)."""

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
    source: str = "corun execute host breakdown, H200 machine (costmodel/host.py)"

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
        return (self._step_ms(gpus, graphs, workers) - self.owner_saved_ms(gpus, owner_share)
                + launch * kernel_launches + batch)

    def owner_saved_ms(self, gpus: int, owner_share: float) -> float:
        """Host time the input all-to-all saves for the share of tables owner-mapped."""
        return self.distributed_owner_a2a_ms * owner_share if gpus > 1 else 0.0

    def _step_ms(self, gpus: int, graphs: bool, workers: bool) -> float:
        """The step's own launches: the graphed step, or the eager one plus what host
        workers preprocessing beside the launching thread cost it (`workers`)."""
        if graphs:
            return self.graph_step_ms
        extra = (self.distributed_workers_ms if gpus > 1 else self.workers_ms) \
            if workers else 0.0
        return self._constants(gpus)[0] + extra

    def turnaround_ms(self, host_thread: bool, gpus: int = 1) -> float:
        """From the end of a batch's assembly on the GPU to the earliest start of the step
        that trains on it: with the host thread modelled, the host's staging and check
        before it launches that step (the executor's host waits for the assembly); 0
        without. The assembly itself is simulated on the preprocessing stream
        (`assembly_ms`, sim/scenario.py). Hidden when the batch is ready early in the
        step before; exposed when it is not: heavy-fused b16384's whole pipeline released
        at emb_bwd ended 1.1 ms after the step, and the next began 1.6 ms after it
        (bench/results/raw/execute_heavy_run5.json)."""
        return self._constants(gpus)[2] if host_thread else 0.0

    def launched_ms(self, stages: Sequence[Stage], launches_at: Sequence[int],
                    launches_before: int, gpus: int = 1, graphs: bool = False,
                    model: str = "", workers: bool = False,
                    owner_share: float = 0.0) -> tuple[float, ...]:
        """Per stage position, the host's time from the start of a step's launches until
        that stage's are all made (the last: every launch of the step): the step's own
        launches shared out by stage (LAUNCH_SHARE), each fused kernel's three or one at
        the stage that releases it (`launches_at`), those before the iteration first;
        `model`'s own shares where measured (MODEL_LAUNCH_SHARE, one GPU); the input
        all-to-all's launches less what owner-mapped tables save (`owner_share`).
        The GPU begins a stage no earlier than the stages before it are launched."""
        launch = self._constants(gpus)[1]
        step = self._step_ms(gpus, graphs, workers)
        table = DISTRIBUTED_LAUNCH_SHARE if gpus > 1 else \
            MODEL_LAUNCH_SHARE.get(model, LAUNCH_SHARE)
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


ASSEMBLY_UNCOMPARED_SHARE = 523 / 785
"""The assembly's memory traffic without the comparison over that with it: at heavy
b16384 523 MB against 785 (the reference's ids, offsets and dense features not read;
alone 0.160 ms against 0.239, bench/results/assembly_probe_h200.md). In the executed
graphed heavy-lean plans the assembly took 0.17 ms without against 0.28 with where it ran
past the step's backward (bench/results/check_cost_h200.md)."""


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
    """Host launches of fused kernels per batch: a kernel that writes a list column adds
    a lengths kernel and a scan (backend/runner.py)."""
    cols = pipeline.columns
    return sum(3 if any(cols[x].shape is Shape.LIST for x in pipeline.sinks(k.nodes)) else 1
               for k in kernels)
