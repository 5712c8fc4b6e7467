"""A PyTorch DLRM built from a `Model` spec, run as explicit, separately timed stages.

All tables live in one weight matrix and one `embedding_bag` call looks up every table
(one kernel, not one per table). Forward pieces are joined through detached leaves, so
the backward runs stage by stage (top MLP, interaction, bottom MLP, embeddings) with a
clock mark between stages: CUDA events on a GPU, the host clock (after a sync) on the
CPU. Single process here; the multi-GPU stages (all-to-alls, all-reduce) come with the
distributed trainer.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from corun.backend.embedding_fwd import bag_sum
from corun.backend.embedding_sgd import bag_sgd_
from corun.spec import (
    EmbeddingForward,
    EmbeddingUpdate,
    Interaction,
    Model,
    Optimizer,
    Precision,
    Stage,
)
from torch import nn
from torch.nn import functional as F

ADAGRAD_EPS = 1e-8
TRAINING_STAGES = (Stage.EMB_FWD, Stage.BOTTOM_MLP_FWD, Stage.INTERACTION_FWD,
                   Stage.TOP_MLP_FWD, Stage.TOP_MLP_BWD, Stage.INTERACTION_BWD,
                   Stage.BOTTOM_MLP_BWD, Stage.EMB_BWD, Stage.OPTIMIZER)


@dataclass
class Batch:
    """One batch as the trainer takes it: ids are global rows of the stacked tables,
    table-major (all of table 0's bags, then table 1's, ...)."""

    dense: torch.Tensor  # float32 [B, n_dense]
    ids: torch.Tensor  # int64 [total ids]
    offsets: torch.Tensor  # int64 [T * B + 1], include_last_offset layout
    labels: torch.Tensor  # float32 [B]

    def to(self, device: torch.device, non_blocking: bool = False) -> Batch:
        return Batch(*(t.to(device, non_blocking=non_blocking)
                       for t in (self.dense, self.ids, self.offsets, self.labels)))


def row_bases(model: Model) -> list[int]:
    """First row of each table in the stacked embedding matrix of all tables."""
    return [0] + [int(x) for x in np.cumsum([t.rows for t in model.tables])[:-1]]


def batch_from_tables(dense: np.ndarray, tables: Sequence[tuple[np.ndarray, np.ndarray]],
                      row_base: Sequence[int], labels: np.ndarray) -> Batch:
    """Stack per-table (values, offsets) into the trainer's table-major layout."""
    ids, offs, base = [], [np.zeros(1, np.int64)], 0
    for (values, offsets), rb in zip(tables, row_base):
        ids.append(values.astype(np.int64) + rb)
        offs.append(offsets[1:].astype(np.int64) + base)
        base += int(offsets[-1])
    return Batch(torch.from_numpy(np.ascontiguousarray(dense, np.float32)),
                 torch.from_numpy(np.concatenate(ids)), torch.from_numpy(np.concatenate(offs)),
                 torch.from_numpy(labels.astype(np.float32)))


def _mlp(widths: Sequence[int], relu_last: bool) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        layers.append(nn.Linear(a, b))
        if relu_last or i < len(widths) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DotInteraction(nn.Module):
    """Pairwise dot products of the F vectors (strict lower triangle, row by row), after
    the bottom MLP's output: width d + F(F-1)/2.

    The triangle is gathered from the flattened [B, F*F] products by index_select, whose
    backward writes each gradient element once (index_add_). facebookresearch/dlrm and
    TorchRec take it by advanced indexing, z[:, rows, cols], whose backward PyTorch runs
    through a sort and `indexing_backward_kernel`: the same outputs and gradients bit for
    bit, and a backward 1.95-4.18x slower on the H200 (profile rows timed with it are
    corrected by costmodel/interaction.py)."""

    def __init__(self, features: int) -> None:
        super().__init__()
        rows, cols = torch.tril_indices(features, features, offset=-1)
        self.register_buffer("flat", rows * features + cols, persistent=False)

    def forward(self, bottom: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        x = torch.cat([bottom.unsqueeze(1), emb], dim=1)  # [B, F, d]
        z = torch.bmm(x, x.transpose(1, 2)).flatten(1)  # [B, F*F]
        return torch.cat([bottom, z.index_select(1, self.flat)], dim=1)


class DCNv2Interaction(nn.Module):
    """DCN-v2 cross layers with low-rank weights: x_{l+1} = x0 * (U V x_l + b) + x_l."""

    def __init__(self, width: int, layers: int, rank: int) -> None:
        super().__init__()
        self.v = nn.ModuleList(nn.Linear(width, rank, bias=False) for _ in range(layers))
        self.u = nn.ModuleList(nn.Linear(rank, width) for _ in range(layers))

    def forward(self, bottom: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        x0 = torch.cat([bottom.unsqueeze(1), emb], dim=1).flatten(1)
        x = x0
        for v, u in zip(self.v, self.u):
            x = x0 * u(v(x)) + x
        return x


class DLRM(nn.Module):
    """Embedding tables stacked in one matrix, bottom MLP, interaction, top MLP.

    `tables` selects the tables this process holds (all by default). Each table is
    initialised from its own seed, so a table has the same values wherever it lives."""

    def __init__(self, model: Model, seed: int, tables: Sequence[int] | None = None,
                 device: torch.device | str = "cpu") -> None:
        super().__init__()
        device = torch.device(device)
        self.spec = model
        self.tables = list(range(len(model.tables))) if tables is None else list(tables)
        rows = [model.tables[k].rows for k in self.tables]
        base = np.concatenate([[0], np.cumsum(rows)[:-1]]) if rows else np.zeros(0)
        self.register_buffer("row_base", torch.tensor(base, dtype=torch.int64),
                             persistent=False)
        d = model.embedding_dim
        bound = 1.0 / np.sqrt(d)
        weight = torch.empty(sum(rows), d, device=device)  # made where it lives: 100 GB fit
        for k, r0, n in zip(self.tables, base, rows):
            gen = torch.Generator(device).manual_seed(seed * 1_000_003 + k + 1)
            weight[int(r0) : int(r0) + n].uniform_(-bound, bound, generator=gen)
        self.embedding = nn.Parameter(weight)
        self.bottom = _mlp((model.dense_features,) + model.bottom_mlp, relu_last=True)
        if model.interaction is Interaction.DOT:
            self.interaction: nn.Module = DotInteraction(model.features)
        else:
            self.interaction = DCNv2Interaction(model.features * d, model.dcn_layers,
                                                model.dcn_low_rank)
        self.top = _mlp((model.interaction_out,) + model.top_mlp, relu_last=False)
        gen = torch.Generator().manual_seed(seed)
        for mod in (self.bottom, self.interaction, self.top):
            for p in mod.parameters():
                if p.dim() == 2:
                    nn.init.xavier_uniform_(p, generator=gen)
                else:
                    nn.init.zeros_(p)

    def pool(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        """Sum-pooled bags of the held tables: ids are rows of the stacked matrix. With
        the fused update no autograd graph is kept (the update takes the bags' gradient
        itself, `Trainer.embedding_backward`); with the bag kernel's forward the kernel
        pools them (backend/embedding_fwd.py)."""
        if self.spec.embedding_forward is EmbeddingForward.BAG_KERNEL:
            return bag_sum(self.embedding, ids, offsets)
        if self.spec.embedding_update.fused:
            with torch.no_grad():
                return F.embedding_bag(ids, self.embedding, offsets, mode="sum",
                                       include_last_offset=True)
        return F.embedding_bag(ids, self.embedding, offsets, mode="sum",
                               sparse=self.spec.sparse_gradients, include_last_offset=True)

    def lookup(self, batch: Batch) -> torch.Tensor:
        """[B, T, d] pooled embeddings, one embedding_bag for all tables."""
        b, t = batch.dense.shape[0], len(self.spec.tables)
        return self.pool(batch.ids, batch.offsets).view(t, b, -1).transpose(0, 1)


class Clock:
    """Marks stage boundaries: CUDA events on a GPU, the host clock on the CPU."""

    def __init__(self, device: torch.device, stream=None) -> None:
        """`stream`: the CUDA stream the step runs on, where the marks are recorded (None:
        the current stream, looked up at every mark; PyTorch's lookup costs the launching
        thread a few microseconds each, ten marks a step)."""
        self.cuda = device.type == "cuda"
        self.stream = stream
        self.marks: list[tuple[Stage | None, object]] = []
        self.host_marks: list[float] = []

    def mark(self, stage: Stage | None) -> None:
        now = time.perf_counter()
        self.host_marks.append(now)
        if self.cuda:
            e = torch.cuda.Event(enable_timing=True)
            e.record(self.stream)
            self.marks.append((stage, e))
        else:
            self.marks.append((stage, now))

    def stage_ms(self) -> dict[Stage, float]:
        """Milliseconds of each marked stage (call after the step has finished)."""
        def ms(a, b) -> float:
            return a.elapsed_time(b) if self.cuda else (b - a) * 1e3
        return self._by_stage([t for _, t in self.marks], ms)

    def host_stage_ms(self) -> dict[Stage, float]:
        """The host's milliseconds from each stage's mark to the next: what launching
        that stage cost the host thread (on a GPU the stage itself runs later)."""
        return self._by_stage(self.host_marks, lambda a, b: (b - a) * 1e3)

    def _by_stage(self, times: list, ms) -> dict[Stage, float]:
        """Sum `ms(start, end)` per stage: mark k + 1 closes the stage it names."""
        out: dict[Stage, float] = {}
        for (stage, _), a, b in zip(self.marks[1:], times, times[1:]):
            if stage is not None:
                out[stage] = out.get(stage, 0.0) + ms(a, b)
        return out


class Trainer:
    """One DLRM and its optimizer; `step` trains on one batch and returns stage times."""

    def __init__(self, model: Model, device: torch.device | str = "cpu", seed: int = 0,
                 tables: Sequence[int] | None = None) -> None:
        self.device = torch.device(device)
        self.net = DLRM(model, seed, tables, self.device).to(self.device)
        self.spec = model
        dense_params = [p for n, p in self.net.named_parameters() if n != "embedding"]
        lr = model.learning_rate
        if model.optimizer is Optimizer.SGD:
            self.dense_opt: torch.optim.Optimizer = torch.optim.SGD(dense_params, lr=lr)
        else:
            self.dense_opt = torch.optim.Adagrad(dense_params, lr=lr, eps=ADAGRAD_EPS)
        emb = self.net.embedding
        if model.optimizer is Optimizer.ROWWISE_ADAGRAD:
            self.row_state = torch.zeros(emb.shape[0], device=self.device)
        elif model.optimizer is Optimizer.ADAGRAD:
            self.row_state = torch.zeros_like(emb)
        if model.precision is Precision.TF32 and self.device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = True
        self.update_max_blocks: int | None = None
        """The fused embedding update's grid cap (embedding_sgd.bag_sgd_; None: its
        default, 0: one thread per bag and column)."""

    def begin_run(self) -> None:
        """Called when a run starts (backend/graphed.py forgets its graphs there)."""

    def prepare(self, batch: Batch) -> None:
        """Called with a run's first batch before its timed loop (backend/graphed.py
        captures its graphs there, so no timed iteration pays for it)."""

    def _autocast(self):
        enabled = self.spec.precision is Precision.BF16
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=enabled)

    @torch.no_grad()
    def _update_embedding(self) -> None:
        """Plain SGD, or (row-wise) Adagrad, on the touched rows (sparse) or all (dense)."""
        w, g = self.net.embedding, self.net.embedding.grad
        lr, opt = self.spec.learning_rate, self.spec.optimizer
        if g.is_sparse and opt is Optimizer.SGD:
            # SGD is linear in the gradient: duplicate rows may be added as they come.
            # Coalescing first (a sort, and a device-to-host sync for its size) made the
            # mlperf-dcnv2 step 2x slower than per-table EmbeddingBags on the H200.
            w.index_add_(0, g._indices()[0], g._values(), alpha=-lr)
            w.grad = None
            return
        if g.is_sparse:
            g = g.coalesce()
            rows, vals = g.indices()[0], g.values()
        else:
            rows, vals = None, g
        if opt is Optimizer.SGD:
            step = vals
        elif opt is Optimizer.ROWWISE_ADAGRAD:
            state = self.row_state if rows is None else self.row_state[rows]
            state = state + vals.pow(2).mean(dim=1)
            if rows is None:
                self.row_state.copy_(state)
            else:
                self.row_state[rows] = state
            step = vals / (state.sqrt() + ADAGRAD_EPS).unsqueeze(1)
        else:
            state = (self.row_state if rows is None else self.row_state[rows]) + vals.pow(2)
            if rows is None:
                self.row_state.copy_(state)
            else:
                self.row_state[rows] = state
            step = vals / (state.sqrt() + ADAGRAD_EPS)
        if rows is None:
            w.sub_(lr * step)
        else:
            w.index_add_(0, rows, step, alpha=-lr)
        w.grad = None

    def dense_forward_backward(self, emb: torch.Tensor, dense: torch.Tensor,
                               labels: torch.Tensor, mark, scale: float = 1.0
                               ) -> tuple[torch.Tensor, torch.Tensor]:
        """Bottom MLP, interaction, top MLP forward and backward on pooled embeddings
        `emb` [B, T, d]; returns (loss, gradient of emb). The loss backpropagated is
        scaled by `scale` (1/world in data parallel)."""
        net = self.net
        with self._autocast():
            emb_leaf = emb.detach().requires_grad_()
            bottom = net.bottom(dense)
            mark(Stage.BOTTOM_MLP_FWD)
            bottom_leaf = bottom.detach().requires_grad_()
            z = net.interaction(bottom_leaf, emb_leaf)
            mark(Stage.INTERACTION_FWD)
            z_leaf = z.detach().requires_grad_()
            logits = net.top(z_leaf).squeeze(1)
            loss = F.binary_cross_entropy_with_logits(logits.float(), labels)
            mark(Stage.TOP_MLP_FWD)
        (loss * scale).backward()
        mark(Stage.TOP_MLP_BWD)
        z.backward(z_leaf.grad)
        mark(Stage.INTERACTION_BWD)
        bottom.backward(bottom_leaf.grad)
        mark(Stage.BOTTOM_MLP_BWD)
        return loss.detach(), emb_leaf.grad

    def step(self, batch: Batch, clock: Clock | None = None) -> torch.Tensor:
        """Train on one batch; returns the loss (a tensor: reading it would sync the GPU).
        Stage boundaries go to `clock`."""
        mark = clock.mark if clock is not None else (lambda stage: None)
        mark(None)
        b, t = batch.dense.shape[0], len(self.spec.tables)
        with self._autocast():
            pooled = self.net.pool(batch.ids, batch.offsets)  # [T * B, d], table-major
        emb = pooled.view(t, b, -1).transpose(0, 1)
        mark(Stage.EMB_FWD)
        loss, grad = self.dense_forward_backward(emb, batch.dense, batch.labels, mark)
        self.embedding_backward(pooled, grad.transpose(0, 1).reshape(pooled.shape),
                                batch.ids, batch.offsets)
        mark(Stage.EMB_BWD)
        self.optimize()
        mark(Stage.OPTIMIZER)
        return loss

    def embedding_backward(self, pooled: torch.Tensor, grad: torch.Tensor,
                           ids: torch.Tensor, offsets: torch.Tensor) -> None:
        """The embedding stage's backward from the gradient of `pool`'s output [bags,
        dim]: autograd into `embedding.grad`, or, fused, the SGD update itself (the
        optimizer stage then updates the dense parameters only)."""
        if self.spec.embedding_update.fused:
            self.fused_update(ids, offsets, grad)
        else:
            pooled.backward(grad)

    def fused_update(self, ids: torch.Tensor, offsets: torch.Tensor,
                     grad: torch.Tensor) -> None:
        """The SGD update of the rows by the model's fused kernel (EmbeddingUpdate.fused),
        under `update_max_blocks`; with the hot-row form each held table's hot row is
        counted per bag."""
        hot = self.spec.embedding_update is EmbeddingUpdate.FUSED_SGD_HOT_ROW
        bag_sgd_(self.net.embedding, ids, offsets, grad, self.spec.learning_rate,
                 self.update_max_blocks, len(self.net.tables) if hot else 0)

    def optimize(self) -> None:
        self.dense_opt.step()
        self.dense_opt.zero_grad(set_to_none=True)
        if not self.spec.embedding_update.fused:
            self._update_embedding()
