"""The trainer's step replayed as CUDA graphs, one graph per training stage.

Launched eagerly, a DLRM step costs the host some 190 PyTorch launches: 3.6-4.1 ms at
kaggle and terabyte b4096 on the H200, where the GPU needs about 2.6 ms
(costmodel/host.py), so the host, not the GPU, sets the pace. Captured once, a stage is
one graph launch. The clock still marks every stage boundary, between the launches, so
the executor releases a plan's preprocessing kernels at the stages it names exactly as
it does eagerly.

What capture needs: a GPU, one process, the same tensor shapes in every batch (the
graphs read the batch from fixed buffers that each step copies it into) and a step that
never reads a value back to the host (`Model.cuda_graphs` admits SGD only).

With the bag kernels (EmbeddingForward.BAG_KERNEL, whose update is the fused one) the two
embedding stages are not captured: each is one kernel, launched between the graphs at a
driver call's host cost on the batch's own ids and offsets, writing and reading fixed
buffers (the pooled bags, their gradient) that the graphs read and write. So a batch may
have any id count, and its ids (40 M at heavy-lean b16384, 340 MB) are not copied.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from corun.backend.embedding_fwd import bag_sum
from corun.backend.trainer import TRAINING_STAGES, Batch, Clock, Trainer
from corun.spec import EmbeddingForward, Model, SpecError, Stage

WARMUP_STEPS = 3
"""Eager steps on batch 0 before capture (PyTorch's advice: lazy set-up such as cuBLAS
workspaces must not happen inside a capture). They train the model, like any step."""


class _StageCuts:
    """The clock passed to the step while it is captured: each mark closes the graph
    being captured and opens the next one, so the step falls into one graph a stage;
    after a stage in `closing` none opens (the next mark opens one)."""

    def __init__(self, pool, closing: frozenset[Stage]) -> None:
        self.pool, self.closing = pool, closing
        self.graphs: list[tuple[Stage, torch.cuda.CUDAGraph | None]] = []
        """Each stage's graph in step order (None: a stage with nothing to capture)."""
        self.open: torch.cuda.CUDAGraph | None = None

    def mark(self, stage: Stage | None) -> None:
        if self.open is not None:
            self.open.capture_end()
            self.graphs.append((stage, self.open))
            self.open = None
        if stage not in self.closing:
            self.open = torch.cuda.CUDAGraph()
            self.open.capture_begin(pool=self.pool)


class GraphedTrainer(Trainer):
    """A `Trainer` whose `step` replays the stages captured on the first batch it is given
    (or on `prepare`'s or `capture`'s)."""

    def __init__(self, model: Model, device: torch.device | str = "cuda", seed: int = 0,
                 tables: Sequence[int] | None = None) -> None:
        super().__init__(model, device, seed, tables)
        if self.device.type != "cuda":
            raise SpecError("model.cuda_graphs", True, "off on a CPU (CUDA graphs need a GPU)")
        self.graphs: list[tuple[Stage, torch.cuda.CUDAGraph | None]] = []
        self.static: Batch | None = None
        self.loss: torch.Tensor | None = None
        self.bag_kernels = model.embedding_forward is EmbeddingForward.BAG_KERNEL
        """The embedding stages launched between the graphs (the module docstring)."""
        self.pooled: torch.Tensor | None = None  # [bags, dim]: emb_fwd's output
        self.pooled_grad: torch.Tensor | None = None  # [bags, dim]: emb_bwd's input

    def begin_run(self) -> None:
        """Forget the graphs: the run's first batch is captured anew (a reused trainer may
        meet another batch size)."""
        self.graphs, self.static, self.loss = [], None, None
        self.pooled = self.pooled_grad = None

    def prepare(self, batch: Batch) -> None:
        if self.static is None:
            self.capture(batch)

    def capture(self, batch: Batch) -> None:
        """Copy `batch` into the fixed input buffers, warm up, and capture one step on
        them, a graph per stage. Capture runs nothing: the step's work happens at replay."""
        self.static = Batch(*(t.clone() for t in _tensors(batch)))
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(WARMUP_STEPS):
                super().step(self.static)
        torch.cuda.synchronize(self.device)
        pool = torch.cuda.graph_pool_handle()
        with torch.cuda.stream(side):
            if self.bag_kernels:
                cuts = _StageCuts(pool, frozenset({Stage.BOTTOM_MLP_BWD, Stage.EMB_BWD,
                                                   Stage.OPTIMIZER}))
                self.loss = self._capture_between_bag_kernels(self.static, cuts)
            else:
                cuts = _StageCuts(pool, frozenset({TRAINING_STAGES[-1]}))
                self.loss = super().step(self.static, cuts)
        self.graphs = cuts.graphs
        torch.cuda.synchronize(self.device)

    def _capture_between_bag_kernels(self, batch: Batch, cuts: _StageCuts) -> torch.Tensor:
        """Capture the stages between the two embedding kernels and the optimizer's: the
        bag kernel writes `pooled`, which the graphs read, and the update kernel reads
        the bags' gradient `pooled_grad`, which they write (emb_bwd's graph copies it
        into the bags' layout where autograd gave it another; else emb_bwd has none)."""
        b, t = batch.dense.shape[0], len(self.spec.tables)
        self.pooled = bag_sum(self.net.embedding, batch.ids, batch.offsets)
        cuts.mark(None)
        loss, grad = self.dense_forward_backward(
            self.pooled.view(t, b, -1).transpose(0, 1), batch.dense, batch.labels, cuts.mark)
        rows = grad.transpose(0, 1)  # [T, B, d]: the bags' order
        if rows.is_contiguous():  # autograd laid it out as the leaf it came from: a view
            self.pooled_grad = rows.view(self.pooled.shape)
            cuts.graphs.append((Stage.EMB_BWD, None))
        else:
            cuts.mark(None)
            self.pooled_grad = rows.reshape(self.pooled.shape)
            cuts.mark(Stage.EMB_BWD)
        cuts.mark(None)
        self.optimize()
        cuts.mark(Stage.OPTIMIZER)
        return loss

    def step(self, batch: Batch, clock: Clock | None = None) -> torch.Tensor:
        """Train on one batch: copy it into the captured step's inputs on the current
        stream (with the bag kernels its dense features and labels only: the kernels read
        its ids and offsets where they are), then launch the stages' graphs there, and the
        bag kernels between them, marking `clock` between stages."""
        self.prepare(batch)
        for name in ("dense", "ids", "offsets", "labels"):
            mine, given = getattr(self.static, name), getattr(batch, name)
            if mine.shape != given.shape and not (self.bag_kernels and name == "ids"):
                raise SpecError(f"batch.{name}", tuple(given.shape),
                                f"the shape captured in the CUDA graphs, {tuple(mine.shape)} "
                                "(model.cuda_graphs needs the same id count in every batch "
                                "unless the model has the bag kernels)")
            if not (self.bag_kernels and name in ("ids", "offsets")):  # read where they are
                mine.copy_(given, non_blocking=True)
        mark = clock.mark if clock is not None else (lambda stage: None)
        mark(None)
        if self.bag_kernels:
            bag_sum(self.net.embedding, batch.ids, batch.offsets, self.pooled)
            mark(Stage.EMB_FWD)
        for stage, graph in self.graphs:
            if graph is not None:
                graph.replay()
            if stage is Stage.EMB_BWD and self.bag_kernels:
                self.fused_update(batch.ids, batch.offsets, self.pooled_grad)
            mark(stage)
        return self.loss


def _tensors(batch: Batch) -> tuple[torch.Tensor, ...]:
    return batch.dense, batch.ids, batch.offsets, batch.labels


def make_trainer(model: Model, device: torch.device | str = "cpu", seed: int = 0) -> Trainer:
    """The one-process trainer the model asks for: graphed or eager."""
    cls = GraphedTrainer if model.cuda_graphs else Trainer
    return cls(model, device, seed)
