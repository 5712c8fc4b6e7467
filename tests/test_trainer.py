"""The DLRM trainer on the CPU: same maths as plain PyTorch, stages timed in order."""

from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from corun.backend.trainer import (  # noqa: E402
    TRAINING_STAGES,
    Batch,
    Clock,
    Trainer,
    batch_from_tables,
)

from corun import spec  # noqa: E402


def tiny_model(**change) -> spec.Model:
    tables = tuple(spec.Table(f"t{k}", r, 8, p) for k, (r, p) in
                   enumerate([(50, 1.0), (7, 2.0), (300, 3.0)]))
    m = spec.Model("tiny", 4, tables, (16, 8), (16, 8, 1), batch_per_gpu=32,
                   learning_rate=0.1)
    return replace(m, **change)


def random_batch(model: spec.Model, rng: np.random.Generator, b: int | None = None) -> Batch:
    b = b or model.batch_per_gpu
    tables, base = [], [0]
    for t in model.tables:
        lengths = rng.poisson(t.pooling, b)
        off = np.concatenate([[0], np.cumsum(lengths)])
        tables.append((rng.integers(0, t.rows, off[-1]), off))
        base.append(base[-1] + t.rows)
    dense = rng.normal(size=(b, model.dense_features)).astype(np.float32)
    labels = (dense[:, 0] > 0).astype(np.float32)  # learnable from the dense features
    return batch_from_tables(dense, tables, base[:-1], labels)


def test_one_lookup_equals_embedding_bag_per_table():
    model = tiny_model()
    tr = Trainer(model)
    batch = random_batch(model, np.random.default_rng(0))
    got = tr.net.lookup(batch)
    w = tr.net.embedding.detach()
    t_count, b = len(model.tables), model.batch_per_gpu
    base = 0
    for k, t in enumerate(model.tables):
        bag = torch.nn.EmbeddingBag(t.rows, t.dim, mode="sum", include_last_offset=True)
        bag.weight.data.copy_(w[base : base + t.rows])
        offs = batch.offsets[k * b : (k + 1) * b + 1]
        ids = batch.ids[offs[0] : offs[-1]] - base
        want = bag(ids, offs - offs[0])
        assert torch.allclose(got[:, k, :], want, atol=1e-6)
        base += t.rows
    assert got.shape == (b, t_count, 8)


@pytest.mark.parametrize("interaction", [spec.Interaction.DOT, spec.Interaction.DCN_V2])
def test_staged_backward_equals_plain_autograd(interaction):
    model = tiny_model(interaction=interaction, dcn_layers=2, dcn_low_rank=4,
                       sparse_gradients=False)
    a, b = Trainer(model, seed=3), Trainer(model, seed=3)
    batch = random_batch(model, np.random.default_rng(1))
    a.step(batch)
    # the same step with one backward over the whole graph
    net = b.net
    logits = net.top(net.interaction(net.bottom(batch.dense), net.lookup(batch))).squeeze(1)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, batch.labels)
    loss.backward()
    with torch.no_grad():
        for p in net.parameters():
            p -= model.learning_rate * p.grad
    for (name, pa), (_, pb) in zip(a.net.named_parameters(), net.named_parameters()):
        assert torch.allclose(pa, pb, atol=1e-6), name


@pytest.mark.parametrize("optimizer", list(spec.Optimizer))
def test_sparse_and_dense_gradients_give_the_same_update(optimizer):
    batch = random_batch(tiny_model(), np.random.default_rng(2))
    weights = []
    for sparse in (True, False):
        tr = Trainer(tiny_model(optimizer=optimizer, sparse_gradients=sparse), seed=5)
        for _ in range(3):
            tr.step(batch)
        weights.append(tr.net.embedding.detach().clone())
    assert torch.allclose(weights[0], weights[1], atol=1e-5)


def test_rowwise_adagrad_formula():
    model = tiny_model(optimizer=spec.Optimizer.ROWWISE_ADAGRAD)
    tr = Trainer(model, seed=1)
    batch = random_batch(model, np.random.default_rng(4))
    w0 = tr.net.embedding.detach().clone()
    # the gradient the step will apply, computed independently
    ref = Trainer(replace(model, sparse_gradients=False), seed=1)
    net = ref.net
    logits = net.top(net.interaction(net.bottom(batch.dense), net.lookup(batch))).squeeze(1)
    torch.nn.functional.binary_cross_entropy_with_logits(logits, batch.labels).backward()
    g = net.embedding.grad
    state = g.pow(2).mean(1)
    touched = torch.unique(batch.ids)
    want = w0.clone()
    want[touched] -= model.learning_rate * g[touched] / (state[touched].sqrt() + 1e-8)[:, None]
    tr.step(batch)
    assert torch.allclose(tr.net.embedding.detach(), want, atol=1e-6)


@pytest.mark.parametrize("optimizer", list(spec.Optimizer))
def test_loss_falls(optimizer):
    model = tiny_model(optimizer=optimizer)
    tr = Trainer(model, seed=0)
    rng = np.random.default_rng(7)
    losses = [float(tr.step(random_batch(model, rng))) for _ in range(60)]
    assert np.mean(losses[-10:]) < 0.8 * np.mean(losses[:10])


def test_clock_marks_every_stage_in_order():
    model = tiny_model()
    tr = Trainer(model)
    clock = Clock(torch.device("cpu"))
    tr.step(random_batch(model, np.random.default_rng(0)), clock)
    times = clock.stage_ms()
    assert tuple(times) == TRAINING_STAGES
    assert all(t >= 0 for t in times.values())


def test_preset_shapes_build():
    for name in ("criteo-kaggle", "mlperf-dcnv2"):
        m = spec.model_preset(name)
        small = replace(m, tables=tuple(replace(t, rows=10) for t in m.tables), batch_per_gpu=4)
        tr = Trainer(small)
        z = tr.net.interaction(torch.zeros(4, m.embedding_dim),
                               torch.zeros(4, len(m.tables), m.embedding_dim))
        assert z.shape == (4, m.interaction_out)


@pytest.mark.parametrize("sparse", [True, False])
def test_naive_baseline_computes_the_same_step(sparse):
    """The per-table EmbeddingBag baseline and our trainer agree after SGD steps."""
    from corun.backend.naive import NaiveTrainer

    model = tiny_model(sparse_gradients=sparse)
    ours, naive = Trainer(model, seed=9), NaiveTrainer(model, seed=9)
    rng = np.random.default_rng(5)
    for _ in range(3):
        batch = random_batch(model, rng)
        a, b = float(ours.step(batch)), float(naive.step(batch))
        assert a == pytest.approx(b, abs=1e-6)
    w = ours.net.embedding.detach()
    for k, bag in enumerate(naive.net.bags):
        r0 = int(ours.net.row_base[k])
        assert torch.allclose(w[r0 : r0 + bag.weight.shape[0]], bag.weight, atol=1e-6)


def test_clock_times_the_host_per_stage():
    """Each mark closes the stage it names, on the device clock and on the host's."""
    import time

    from corun.backend.trainer import Clock
    from corun.spec import Stage

    clock = Clock(torch.device("cpu"))
    clock.mark(None)
    time.sleep(0.02)
    clock.mark(Stage.EMB_FWD)
    clock.mark(Stage.BOTTOM_MLP_FWD)
    host, device = clock.host_stage_ms(), clock.stage_ms()
    assert set(host) == set(device) == {Stage.EMB_FWD, Stage.BOTTOM_MLP_FWD}
    assert host[Stage.EMB_FWD] >= 20 > host[Stage.BOTTOM_MLP_FWD]


def test_fused_sgd_update_equals_autograd_sgd():
    """The fused embedding update (one pass, no per-id gradient) trains exactly like
    PyTorch's embedding_bag backward followed by SGD."""
    batch = random_batch(tiny_model(), np.random.default_rng(2))
    states = []
    for update in spec.EmbeddingUpdate:
        tr = Trainer(tiny_model(embedding_update=update), seed=5)
        before = tr.net.embedding.detach().clone()
        for _ in range(3):
            tr.step(batch)
        assert tr.net.embedding.grad is None
        states.append({k: v.detach().clone() for k, v in tr.net.named_parameters()})
    assert not torch.allclose(states[0]["embedding"], before)  # the tables did train
    for other in states[1:]:
        for name, value in states[0].items():
            assert torch.allclose(value, other[name], atol=1e-6), name


def test_bag_sgd_kernel_in_the_cuda_simulator():
    """The Numba-CUDA kernel (run here by the CUDA simulator) adds -lr x each bag's
    gradient to every id of the bag, duplicates within and across bags included."""
    from corun.backend.embedding_sgd import THREADS_PER_BLOCK, bag_sgd_, bag_sgd_kernel, blocks_for

    rng = np.random.default_rng(0)
    w = rng.normal(size=(20, 3)).astype(np.float32)
    offsets = np.array([0, 3, 3, 6, 7], np.int64)  # an empty bag, duplicates
    ids = np.array([4, 4, 9, 4, 0, 19, 9], np.int64)
    grad = rng.normal(size=(4, 3)).astype(np.float32)
    want = w.astype(np.float64).copy()
    for bag in range(4):
        for j in range(offsets[bag], offsets[bag + 1]):
            want[ids[j]] -= 0.5 * grad[bag]
    none = np.array([-1], np.int64)
    got = w.copy()
    bag_sgd_kernel[blocks_for(4, 3), THREADS_PER_BLOCK](got, ids, offsets, grad,
                                                        np.float32(-0.5), none, np.int64(4))
    assert np.allclose(got, want, atol=1e-6)
    strided = w.copy()  # a grid of 1 block of 4 threads strides over the 12 (bag, column)s
    assert blocks_for(4, 3, max_blocks=1) == 1 and blocks_for(4000, 3, 7) == 7
    bag_sgd_kernel[1, 4](strided, ids, offsets, grad, np.float32(-0.5), none, np.int64(4))
    assert np.allclose(strided, want, atol=1e-6)
    # two tables of two bags, hot rows 4 and 19 (counted, added once a bag), or a row
    # no bag holds: the same update
    for hot in ([4, 19], [4, 7]):
        counted = w.copy()
        bag_sgd_kernel[1, 8](counted, ids, offsets, grad, np.float32(-0.5),
                             np.array(hot, np.int64), np.int64(2))
        assert np.allclose(counted, want, atol=1e-6), hot
    on_cpu = torch.from_numpy(w.copy())
    bag_sgd_(on_cpu, torch.from_numpy(ids), torch.from_numpy(offsets), torch.from_numpy(grad),
             0.5)
    assert np.allclose(on_cpu.numpy(), want, atol=1e-6)
    with pytest.raises(ValueError, match="does not match 3 bags"):
        bag_sgd_(on_cpu, torch.from_numpy(ids), torch.from_numpy(offsets[:4]),
                 torch.from_numpy(grad), 0.5)
    with pytest.raises(ValueError, match="over 3 tables"):
        bag_sgd_(on_cpu, torch.from_numpy(ids), torch.from_numpy(offsets),
                 torch.from_numpy(grad), 0.5, hot_tables=3)


def test_hot_rows_kernel_in_the_cuda_simulator():
    """Each table's hot row is the most frequent of its sampled ids (a bag's middle id,
    HOT_SAMPLES bags spread over the table); -1 where every sampled bag is empty."""
    from corun.backend.embedding_sgd import HOT_SAMPLES, hot_rows_kernel

    per_table = 300
    lists = [[5, 7, 9] if b % 3 else [1, 3, 2] for b in range(per_table)]  # table 0: 7
    lists += [[40 + b % 2] for b in range(per_table)]  # table 1: 40 and 41, ties -> either
    lists += [[] for _ in range(per_table)]  # table 2: empty bags
    ids = np.array([i for x in lists for i in x], np.int64)
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in lists])]).astype(np.int64)
    hot = np.zeros(3, np.int64)
    hot_rows_kernel[3, HOT_SAMPLES](ids, offsets, np.int64(per_table), hot)
    assert hot[0] == 7 and hot[1] in (40, 41) and hot[2] == -1


def test_bag_sum_kernel_in_the_cuda_simulator():
    """The bag kernel (run here by the CUDA simulator) sums each bag's rows: empty bags,
    bags shorter and longer than its four ids a turn, duplicates; threads past the last
    (bag, column) write nothing."""
    from corun.backend.embedding_fwd import bag_sum, bag_sum_kernel
    from corun.backend.embedding_sgd import THREADS_PER_BLOCK, blocks_for

    rng = np.random.default_rng(3)
    w = rng.normal(size=(30, 5)).astype(np.float32)
    lengths = np.array([0, 1, 3, 4, 5, 9, 0, 2])
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    ids = rng.integers(0, 30, offsets[-1]).astype(np.int64)
    ids[:2] = 7  # a duplicate within a bag
    want = np.stack([w[ids[a:b]].astype(np.float64).sum(axis=0)
                     for a, b in zip(offsets, offsets[1:])])
    got = np.full((8, 5), np.nan, np.float32)
    assert blocks_for(8, 5) * THREADS_PER_BLOCK > 8 * 5
    bag_sum_kernel[blocks_for(8, 5), THREADS_PER_BLOCK](w, ids, offsets, got)
    assert np.allclose(got, want, atol=1e-5)
    assert np.all(got[lengths == 0] == 0)
    on_cpu = bag_sum(torch.from_numpy(w), torch.from_numpy(ids), torch.from_numpy(offsets))
    assert np.allclose(on_cpu.numpy(), want, atol=1e-5)
    fixed = torch.full((8, 5), float("nan"))  # the graphed step's buffer, written in place
    assert bag_sum(torch.from_numpy(w), torch.from_numpy(ids), torch.from_numpy(offsets),
                   fixed) is fixed
    assert torch.equal(fixed, on_cpu)
    with pytest.raises(ValueError, match="does not match 7 bags"):
        bag_sum(torch.from_numpy(w), torch.from_numpy(ids), torch.from_numpy(offsets[:8]),
                fixed)


def test_bag_kernel_forward_trains_like_pytorchs():
    """A model whose forward is the bag kernel takes the same steps as PyTorch's forward
    with the fused update; without the fused update it is refused."""
    batch = random_batch(tiny_model(), np.random.default_rng(4))
    states = []
    for forward in spec.EmbeddingForward:
        tr = Trainer(tiny_model(embedding_update=spec.EmbeddingUpdate.FUSED_SGD,
                                embedding_forward=forward), seed=5)
        losses = [float(tr.step(batch)) for _ in range(3)]
        states.append((losses, tr.net.embedding.detach().clone()))
    assert states[0][0] == pytest.approx(states[1][0], rel=1e-6)
    assert torch.allclose(states[0][1], states[1][1], atol=1e-6)
    with pytest.raises(spec.SpecError,
                       match="fused-sgd or fused-sgd-hot-row when embedding_forward is"):
        tiny_model(embedding_forward=spec.EmbeddingForward.BAG_KERNEL)


def test_the_dot_interaction_equals_the_reference_dlrms_advanced_indexing():
    """The trainer's flat gather of the pairwise dots gives what the reference DLRMs'
    advanced indexing of the lower triangle gives, outputs and gradients alike."""
    import torch
    from corun.backend.trainer import DotInteraction

    def reference(bottom, emb):
        x = torch.cat([bottom.unsqueeze(1), emb], dim=1)  # [B, F, d]
        z = torch.bmm(x, x.transpose(1, 2))
        rows, cols = torch.tril_indices(x.shape[1], x.shape[1], offset=-1)
        return torch.cat([bottom, z[:, rows, cols]], dim=1)

    gen = torch.Generator().manual_seed(1)
    bottom = torch.rand(5, 4, generator=gen, requires_grad=True)
    emb = torch.rand(5, 6, 4, generator=gen, requires_grad=True)
    a, b = DotInteraction(7)(bottom, emb), reference(bottom, emb)
    assert a.shape == (5, 4 + 21) and torch.equal(a, b)
    ga = torch.autograd.grad(a.sum(), (bottom, emb))
    gb = torch.autograd.grad(b.sum(), (bottom, emb))
    assert all(torch.equal(x, y) for x, y in zip(ga, gb))
