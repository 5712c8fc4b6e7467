"""Table-wise sharding: each embedding table lives whole on one GPU.

The balancer is greedy, largest lookup cost first: each table goes to the GPU with
the least lookup load (ties: least memory) among those it still fits on. Lookup load
is rows looked up per sample x dim, which sets the embedding stages' time; memory is
what must fit. A model that fits on no assignment this finds is an error that says
by how much it is short.
"""

from __future__ import annotations

from dataclasses import dataclass

from corun.spec import Hardware, Model, Optimizer, SpecError

WORKSPACE_BYTES = 4 * 2**30
"""Kept free per GPU for activations, the allocator's slack and CUDA context: an
estimate (a batch-8192 DLRM step's activations are well under 1 GB)."""


def table_state_bytes(model: Model, rows: int) -> int:
    """Bytes one table of `rows` rows needs: weights, optimizer state, dense gradient."""
    d = model.embedding_dim
    per_row = 4 * d  # fp32 weights
    if model.optimizer is Optimizer.ADAGRAD:
        per_row += 4 * d
    elif model.optimizer is Optimizer.ROWWISE_ADAGRAD:
        per_row += 4
    if not model.sparse_gradients:
        per_row += 4 * d  # a dense gradient the size of the table
    return rows * per_row


@dataclass(frozen=True)
class Sharding:
    owner: dict[str, int]
    """Table name -> GPU."""
    bytes_per_gpu: tuple[int, ...]

    def tables_on(self, gpu: int) -> tuple[str, ...]:
        return tuple(t for t, g in self.owner.items() if g == gpu)


def shard_tables(model: Model, hw: Hardware, fixed: dict[str, int] | None = None) -> Sharding:
    """Assign every table to one GPU; `fixed` pins some tables first."""
    n = hw.gpu_count
    capacity = hw.gpu.hbm_bytes - WORKSPACE_BYTES
    load = [0.0] * n
    mem = [0] * n
    owner: dict[str, int] = {}
    fixed = fixed or {}
    tables = sorted(model.tables, key=lambda t: (-t.pooling * t.dim, -t.rows, t.name))
    for t in [t for t in tables if t.name in fixed] + [t for t in tables if t.name not in fixed]:
        need = table_state_bytes(model, t.rows)
        if t.name in fixed:
            g = fixed[t.name]
        else:
            fits = [g for g in range(n) if mem[g] + need <= capacity]
            g = min(fits or range(n), key=lambda g: (load[g], mem[g], g))
        owner[t.name] = g
        mem[g] += need
        load[g] += t.pooling * t.dim
    worst = max(range(n), key=lambda g: mem[g])
    if mem[worst] > capacity:
        total = sum(mem)
        raise SpecError(
            "model", model.name,
            f"a model whose tables fit: GPU {worst} needs {mem[worst] / 1e9:.1f} GB for its "
            f"tables but has {capacity / 1e9:.1f} GB ({hw.gpu.name} HBM less "
            f"{WORKSPACE_BYTES / 2**30:.0f} GiB workspace): {(mem[worst] - capacity) / 1e9:.1f} "
            f"GB short; all tables need {total / 1e9:.1f} GB over {n} GPU(s)")
    return Sharding(owner, tuple(mem))
