"""A straightforward PyTorch DLRM: one nn.EmbeddingBag per table, one autograd backward.

The baseline our trainer must not be slower than ("ideal" would otherwise flatter every
plan). Same initial values as `trainer.DLRM` for the same seed, so a step of each can be
compared exactly.
"""

from __future__ import annotations

import torch
from corun.backend.trainer import DLRM, Batch
from corun.spec import Model, Optimizer
from torch import nn
from torch.nn import functional as F


def _no_tables(model: Model) -> Model:
    """The model with one-row tables: its MLPs, without allocating its tables."""
    from dataclasses import replace

    return replace(model, tables=tuple(replace(t, rows=1) for t in model.tables))


class NaiveDLRM(nn.Module):
    def __init__(self, model: Model, seed: int, device: torch.device | str = "cpu",
                 same_init: bool = True) -> None:
        """`same_init` copies `trainer.DLRM`'s initial tables (for exact comparisons); off,
        each bag keeps its own initialisation, so a 100 GB model needs no second copy."""
        super().__init__()
        ref = DLRM(model if same_init else _no_tables(model), seed, device=device)
        self.spec = model
        self.bags = nn.ModuleList()
        for k, t in enumerate(model.tables):
            bag = nn.EmbeddingBag(t.rows, t.dim, mode="sum", include_last_offset=True,
                                  sparse=model.sparse_gradients, device=device)
            if same_init:
                r0 = int(ref.row_base[k])
                bag.weight.data.copy_(ref.embedding.data[r0 : r0 + t.rows])
            self.bags.append(bag)
        self.bottom, self.interaction, self.top = ref.bottom, ref.interaction, ref.top
        starts = torch.tensor([0] + [t.rows for t in model.tables[:-1]], device=device)
        self.register_buffer("row_base", torch.cumsum(starts, 0), persistent=False)

    def forward(self, batch: Batch) -> torch.Tensor:
        b = batch.dense.shape[0]
        pooled = []
        for k, bag in enumerate(self.bags):
            offs = batch.offsets[k * b : (k + 1) * b + 1]
            ids = batch.ids[offs[0] : offs[-1]] - self.row_base[k]
            pooled.append(bag(ids, offs - offs[0]))
        emb = torch.stack(pooled, dim=1)
        return self.top(self.interaction(self.bottom(batch.dense), emb)).squeeze(1)


class NaiveTrainer:
    """Plain autograd and a stock optimizer (SGD; Adagrad variants use torch's sparse
    Adagrad, which is full Adagrad)."""

    def __init__(self, model: Model, device: torch.device | str = "cpu", seed: int = 0,
                 same_init: bool = True) -> None:
        self.net = NaiveDLRM(model, seed, device, same_init).to(device)
        lr = model.learning_rate
        if model.optimizer is Optimizer.SGD:
            self.opt: torch.optim.Optimizer = torch.optim.SGD(self.net.parameters(), lr=lr)
        else:
            self.opt = torch.optim.Adagrad(self.net.parameters(), lr=lr)

    def step(self, batch: Batch) -> torch.Tensor:
        loss = F.binary_cross_entropy_with_logits(self.net(batch), batch.labels)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss.detach()
