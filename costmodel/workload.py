"""Work counts: what each training stage and each fused kernel does on one GPU.

Counts only (FLOPs, bytes, elements); turning them into time is a CostModel's job.
Formulas follow the DLRM data flow of ../shared/ARCHITECTURE.md with table-wise
sharding: a GPU looks up its own tables for the global batch, the embedding
all-to-all moves pooled vectors to the data-parallel layout and back.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from corun.costmodel.types import Comm, KernelWork, StageWork
from corun.spec import (
    EmbeddingForward,
    EmbeddingUpdate,
    Hardware,
    Interaction,
    Model,
    OpKind,
    Optimizer,
    Pipeline,
    Stage,
    stages_for,
)
from corun.spec.sharding import Sharding

F32 = 4
ID_BYTES = 8
TABLE_STAGES = (Stage.EMB_FWD, Stage.EMB_BWD, Stage.OPTIMIZER)
"""Stages that read or update the embedding tables (StageWork.table_bytes)."""


def _mlp_flops(batch: int, widths: Iterable[int]) -> float:
    w = list(widths)
    return sum(2.0 * batch * a * b for a, b in zip(w, w[1:]))


def _mlp_params(widths: Iterable[int]) -> int:
    w = list(widths)
    return sum(a * b + b for a, b in zip(w, w[1:]))


def _mlp_bytes(batch: int, widths: Iterable[int]) -> float:
    """Activations read and written plus weights read once per layer."""
    w = list(widths)
    return sum(F32 * (batch * a + batch * b + a * b) for a, b in zip(w, w[1:]))


def dense_params(model: Model) -> int:
    """Parameters replicated on every GPU (all-reduced each iteration)."""
    p = _mlp_params((model.dense_features,) + model.bottom_mlp)
    p += _mlp_params((model.interaction_out,) + model.top_mlp)
    if model.interaction is Interaction.DCN_V2:
        d = model.features * model.embedding_dim
        p += model.dcn_layers * (2 * d * model.dcn_low_rank + d)
    return p


def _interaction(model: Model, batch: int) -> tuple[float, float]:
    """(FLOPs, bytes) of the forward interaction."""
    f, d = model.features, model.embedding_dim
    if model.interaction is Interaction.DOT:
        flops = 2.0 * batch * f * f * d
        nbytes = F32 * batch * (f * d + f * f + model.interaction_out)
    else:
        width = f * d
        flops = model.dcn_layers * 2.0 * batch * 2 * width * model.dcn_low_rank
        nbytes = model.dcn_layers * F32 * batch * (3 * width + model.dcn_low_rank)
    return flops, nbytes


def stage_work(model: Model, hw: Hardware, sharding: Sharding, gpu: int,
               owner_mapped: frozenset[str] = frozenset()) -> dict[Stage, StageWork]:
    """Each stage's work on `gpu`. `owner_mapped` tables skip the input all-to-all."""
    n = hw.gpu_count
    b = model.batch_per_gpu
    g_batch = b * n
    d = model.embedding_dim
    prec = model.precision
    mine = set(sharding.tables_on(gpu))
    tables = {t.name: t for t in model.tables}
    ids_mine = sum(tables[t].pooling for t in mine)
    lookups = g_batch * ids_mine  # rows gathered
    bag_threads = g_batch * len(mine) * d  # one thread per output element
    fused = model.embedding_update.fused
    hot_row = model.embedding_update is EmbeddingUpdate.FUSED_SGD_HOT_ROW
    bag_kernel = model.embedding_forward is EmbeddingForward.BAG_KERNEL
    table_bytes = F32 * d * sum(tables[t].rows for t in mine)
    out: dict[Stage, StageWork] = {}

    def add(stage: Stage, flops: float, nbytes: float, kernels: int, parallel: float,
            comm: Comm = Comm.NONE, send: float = 0.0, recv: float = 0.0,
            reorder: float = 0.0) -> None:
        if fused:  # the embedding backward updates the rows; the optimizer, the MLPs
            ids = lookups if stage is Stage.EMB_BWD else 0.0
        else:
            ids = lookups if stage in (Stage.EMB_BWD, Stage.OPTIMIZER) and \
                model.sparse_gradients else 0.0
        out[stage] = StageWork(stage, flops, nbytes, prec, kernels, parallel, comm, send, recv,
                               ids, d, model.features,
                               model.interaction is not Interaction.DOT,
                               fused and stage is Stage.EMB_BWD, model.cuda_graphs,
                               table_bytes if stage in TABLE_STAGES else 0.0,
                               bag_kernel and stage is Stage.EMB_FWD,
                               hot_row and stage is Stage.EMB_BWD, reorder)

    if n > 1:
        # Ids of other GPUs' tables leave; ids of mine arrive from n-1 peers.
        send_ids = sum(tables[t].pooling for t in tables if t not in mine and t not in
                       owner_mapped)
        recv_ids = sum(tables[t].pooling for t in mine if t not in owner_mapped)
        add(Stage.INPUT_A2A, 0, 0, 1, 0, Comm.ALL_TO_ALL,
            b * send_ids * ID_BYTES, (n - 1) * b * recv_ids * ID_BYTES)
    add(Stage.EMB_FWD, lookups * d, F32 * (lookups * d + g_batch * len(mine) * d)
        + ID_BYTES * lookups, 1, bag_threads)
    # The pooled rows of the whole batch, per peer, and this GPU's batch, per table.
    per_peer_layout = F32 * d * len(mine) * g_batch
    per_table_layout = F32 * d * len(tables) * b
    if n > 1:
        pooled_out = F32 * d * len(mine) * b * (n - 1)
        pooled_in = F32 * d * (len(tables) - len(mine)) * b
        # laid out per peer before, gathered into table order after
        add(Stage.EMB_A2A_FWD, 0, 0, 1, 0, Comm.ALL_TO_ALL, pooled_out, pooled_in,
            reorder=2 * (per_peer_layout + per_table_layout))
    bottom = (model.dense_features,) + model.bottom_mlp
    top = (model.interaction_out,) + model.top_mlp
    add(Stage.BOTTOM_MLP_FWD, _mlp_flops(b, bottom), _mlp_bytes(b, bottom), 2 * len(bottom) - 2,
        b * max(bottom))
    i_flops, i_bytes = _interaction(model, b)
    add(Stage.INTERACTION_FWD, i_flops, i_bytes, 4, b * model.features * d)
    add(Stage.TOP_MLP_FWD, _mlp_flops(b, top), _mlp_bytes(b, top), 2 * len(top), b * max(top))
    add(Stage.TOP_MLP_BWD, 2 * _mlp_flops(b, top), 2 * _mlp_bytes(b, top), 4 * len(top),
        b * max(top))
    add(Stage.INTERACTION_BWD, 2 * i_flops, 2 * i_bytes, 6, b * model.features * d)
    add(Stage.BOTTOM_MLP_BWD, 2 * _mlp_flops(b, bottom), 2 * _mlp_bytes(b, bottom),
        4 * len(bottom) - 4, b * max(bottom))
    if n > 1:
        pooled_out = F32 * d * (len(tables) - len(mine)) * b
        pooled_in = F32 * d * len(mine) * b * (n - 1)
        # the gradients gathered into arrival order before (the per-peer layout is
        # undone by the embedding backward)
        add(Stage.EMB_A2A_BWD, 0, 0, 1, 0, Comm.ALL_TO_ALL, pooled_out, pooled_in,
            reorder=2 * per_table_layout)
    # Backward of the bags: read pooled grads, scatter into rows. Sparse SGD/Adagrad
    # update the touched rows in place (read + write weights, and state for Adagrad).
    rows_bytes = F32 * lookups * d
    state = {Optimizer.SGD: 0.0, Optimizer.ROWWISE_ADAGRAD: 2 * F32 * lookups,
             Optimizer.ADAGRAD: 2 * rows_bytes}[model.optimizer]
    owned_table_bytes = F32 * d * sum(tables[t].rows for t in mine)
    bag_grads = F32 * g_batch * len(mine) * d
    grad_in = bag_grads + ID_BYTES * lookups
    if fused:
        # Bag gradients copied to the pool's layout, then one atomic add per id and
        # column into the rows (a read and a write): SGD, no state.
        add(Stage.EMB_BWD, lookups * d, 2 * bag_grads + grad_in + 2 * rows_bytes, 2,
            bag_threads)
    elif model.sparse_gradients:
        add(Stage.EMB_BWD, 2 * lookups * d, grad_in + 2 * rows_bytes + state, 3, bag_threads)
    else:
        # Dense gradient: zero it, scatter-add into it.
        add(Stage.EMB_BWD, lookups * d, grad_in + owned_table_bytes + 2 * rows_bytes, 3,
            bag_threads)
    params = dense_params(model)
    if n > 1:
        # the gradients flattened into one buffer and copied back
        add(Stage.GRAD_ALLREDUCE, 0, 0, 1, 0, Comm.ALL_REDUCE, F32 * params, F32 * params,
            reorder=4 * F32 * params)
    opt_bytes = F32 * params * (3 if model.optimizer is Optimizer.SGD else 5)
    if not model.sparse_gradients and not fused:
        dense_state = 2 * owned_table_bytes if model.optimizer is Optimizer.ADAGRAD else 0
        opt_bytes += 3 * owned_table_bytes + dense_state
    add(Stage.OPTIMIZER, 2 * params, opt_bytes, 2, max(params, opt_bytes / 64))
    assert tuple(out) == stages_for(n)
    return out


# Instructions per element read: estimates from counting the operations in each op's
# scalar code (OPS.md); sigrid_hash: twang_mix64 ~14, hash128to64 3 x 64-bit multiply
# (~4 instructions each on 32-bit lanes) plus shifts, multiply-shift floor-mod ~10.
OPS_PER_ELEMENT: dict[OpKind, float] = {
    OpKind.FILL_NULL: 3, OpKind.CAST: 2, OpKind.SIGRID_HASH: 60, OpKind.BUCKETIZE: 12,
    OpKind.LOGIT: 30, OpKind.BOXCOX: 40, OpKind.CLAMP: 3, OpKind.CLAMP_LIST: 3,
    OpKind.FIRSTX: 3, OpKind.ONEHOT: 10, OpKind.NGRAM: 4, OpKind.MAPID: 4,
}


def scans_lists(pipeline: Pipeline, nodes: Iterable[str], fixed_offsets: bool) -> bool:
    """Whether a kernel over `nodes` finds its lists' offsets with a lengths kernel and a
    scan: it writes lists, and `fixed_offsets` (FusedKernel's) does not take effect."""
    nodes = tuple(nodes)
    return bool(pipeline.list_sinks(nodes)) and not (
        fixed_offsets and pipeline.offsets_fixed(nodes))


def source_first_lengths(pipeline: Pipeline, nodes: Iterable[str]) -> dict[str, float]:
    """Per node on a chain that FusedKernel.source_first computes once per ngram input
    element (Pipeline.source_first_sinks), the elements it computes a row: each of the
    ngram(n)'s L inputs once, up to the last one a window of the sink's L_out values
    holds, about min(L, L_out / n + n - 1) (backend/codegen.source_lines)."""
    nodes = tuple(nodes)
    cols = pipeline.columns
    out: dict[str, float] = {}
    for sink in pipeline.source_first_sinks(nodes):
        path = pipeline.chain_nodes(nodes, sink)
        ngram = next(pipeline.node_by_name[n] for n in path
                     if pipeline.node_by_name[n].op is OpKind.NGRAM)
        n = ngram.params["n"]
        sources = min(cols[ngram.input].mean_length, cols[sink].mean_length / n + n - 1)
        for m in path:
            out[m] = min(out.get(m, sources), sources)
    return out


def kernel_work(pipeline: Pipeline, name: str, nodes: Iterable[str], rows: int, blocks: int,
                threads_per_block: int, warp_rows: bool = True,
                fixed_offsets: bool = False, source_first: bool = False) -> KernelWork:
    """A fused kernel's counts: it reads inputs produced outside it and writes outputs
    used outside it; chains inside it stay in registers. `warp_rows`, `fixed_offsets`
    and `source_first` as FusedKernel's: the work says whether they take effect (a long
    list output; lists all of a fixed length; a list made by one ngram)."""
    nodes = tuple(nodes)
    inside = set(nodes)
    cols = pipeline.columns
    outputs = set(pipeline.dense_outputs) | {s.node for s in pipeline.sparse_outputs}
    read: set[str] = set()
    written: set[str] = set()
    elements = ops = 0.0
    once = source_first_lengths(pipeline, nodes) if source_first else {}
    for n in nodes:
        node = pipeline.node_by_name[n]
        src = cols[node.input]
        per_row = once.get(n, max(src.mean_length, cols[n].mean_length))
        elements += rows * per_row
        ops += rows * OPS_PER_ELEMENT[node.op] * per_row
        if node.input not in inside:
            read.add(node.input)
        if n in outputs or any(c not in inside for c in pipeline.consumers[n]):
            written.add(n)
    nbytes = rows * (sum(cols[c].bytes_per_row() for c in read)
                     + sum(cols[c].bytes_per_row() for c in written))
    kinds = [pipeline.node_by_name[n].op for n in nodes]
    op_kinds = tuple(sorted(set(kinds), key=lambda o: o.value))
    sinks = pipeline.sinks(nodes)
    warp = warp_rows and bool(pipeline.warp_sinks(nodes))
    fixed = fixed_offsets and pipeline.offsets_fixed(nodes)
    key = kernel_key(pipeline, nodes, blocks, threads_per_block, warp, fixed, bool(once))
    bound = kernel_key(pipeline, nodes, blocks, threads_per_block, warp, fixed) if once else ""
    return KernelWork(name, rows, elements, ops, nbytes, op_kinds, blocks, threads_per_block,
                      node_count=len(nodes), chains=len(sinks),
                      has_lists=scans_lists(pipeline, nodes, fixed_offsets),
                      op_counts=tuple((o, kinds.count(o)) for o in op_kinds),
                      key=key, warp_rows=warp, bound_key=bound)


def kernel_key(pipeline: Pipeline, nodes: Iterable[str], blocks: int,
               threads_per_block: int, warp_rows: bool = False,
               fixed_offsets: bool = False, source_first: bool = False) -> str:
    """A fused kernel's name in a profile (`corun profile --plans`): its pipeline, node
    count, a digest of its nodes in pipeline order, its launch request, ":warp" where
    it writes long lists a warp per row, ":fixed" where its values kernel writes its
    lists' offsets and ":src" where it computes lists once per ngram input element (each
    as it takes effect: the key of a kernel without long lists, or without lists, is the
    same either way). The learned model answers a kernel and stage the profile measured
    with that measurement."""
    inside = set(nodes)
    ordered = [n for n in pipeline.order if n in inside]
    digest = hashlib.sha1(",".join(ordered).encode()).hexdigest()[:8]
    key = f"{pipeline.name}:{len(ordered)}n:{digest}:{blocks}x{threads_per_block}"
    return key + kernel_key_suffix(warp_rows, fixed_offsets, source_first)


def kernel_key_suffix(warp_rows: bool, fixed_offsets: bool, source_first: bool) -> str:
    """What a kernel's name in a profile ends with for the FusedKernel fields that take
    effect in it (kernel_key; corun.profiling's feature-set kernels too)."""
    return ((":warp" if warp_rows else "") + (":fixed" if fixed_offsets else "")
            + (":src" if source_first else ""))
