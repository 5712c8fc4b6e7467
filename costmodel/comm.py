"""Collective and one-sided communication times over a modelled link.

Formulas: ring all-reduce (Patarasuk & Yuan 2009; NCCL's ring): 2(n-1) steps each
moving bytes/n, so 2(n-1)/n x bytes / bandwidth + 2(n-1) x latency. All-to-all over a
switch (NVSwitch, or a fat-tree network): every GPU sends and receives at once, so the
time is the busier direction of the busiest GPU over its link, plus one latency per
peer message batch (NCCL issues all peers' sends together: one latency). The bandwidth
is the share of the link's peak that NCCL reaches at the trainer's message sizes (its
bus bandwidth), fitted per collective (costmodel/comm_fit.py). A collective stage also
holds the trainer's copies around the collective (StageWork.reorder_bytes), at the
GPU's copy ceiling.
"""

from __future__ import annotations

from collections.abc import Sequence

from corun.costmodel.types import Comm, StageWork
from corun.spec import GpuKind, Link

A2A_LINK_SHARE = 0.591
"""Share of the link's per-direction peak the trainer's all-to-all reaches (NCCL's
`all_to_all_single` of the pooled rows, 29-59 MB a GPU): fitted by costmodel/comm_fit.py
on the steady two-GPU stages of H200 x2 runs over NVLink 4
(validation/benchmarks/collective_stages-h200.json); used for every link."""

ALLREDUCE_LINK_SHARE = 0.281
"""The same for the ring all-reduce of the dense gradients (9-10 MB): NCCL's bus
bandwidth at this size is far below the link's peak."""


def ring_allreduce_ms(nbytes: float, n: int, link: Link,
                      share: float = ALLREDUCE_LINK_SHARE) -> float:
    if n <= 1:
        return 0.0
    steps = 2 * (n - 1)
    return (steps / n * nbytes / (link.bytes_per_s * share) * 1e3
            + steps * link.latency_us * 1e-3)


def all_to_all_ms(send_bytes: list[float], recv_bytes: list[float], link: Link,
                  share: float = A2A_LINK_SHARE) -> float:
    """Every GPU's send and receive volume; the slowest direction of the slowest GPU sets
    the time."""
    if len(send_bytes) <= 1:
        return 0.0
    busiest = max(max(s, r) for s, r in zip(send_bytes, recv_bytes))
    return busiest / (link.bytes_per_s * share) * 1e3 + link.latency_us * 1e-3


def collective_stage_ms(works: Sequence[StageWork], link: Link, gpu: GpuKind) -> float:
    """A collective stage as the trainer runs it on every GPU (`works`, one a GPU): the
    collective and, on the busiest GPU, its copies around it."""
    w0 = works[0]
    if w0.comm is Comm.NONE:
        raise ValueError(f"{w0.stage.value} is no collective stage")
    if len(works) <= 1:
        return 0.0
    if w0.comm is Comm.ALL_REDUCE:
        ms = ring_allreduce_ms(w0.send_bytes, len(works), link)
    else:
        ms = all_to_all_ms([w.send_bytes for w in works], [w.recv_bytes for w in works], link)
    return ms + max(w.reorder_bytes for w in works) / gpu.copy_bytes_per_s * 1e3


PGAS_PUT_EFFICIENCY = 1.0
"""Share of link bandwidth the puts reach. An assumption, not a fit: in the SC'24 PGAS
paper the lookup kernel stores each pooled row straight into the peer's buffer, so the
gain comes from overlapping the transfer with the lookup and from each GPU sending as
soon as its own lookup ends (no wait for the slowest GPU to reach a collective), not
from a faster link. Lower it to model small-message inefficiency."""


def pgas_exposed_ms(send_bytes: float, recv_bytes: float, overlap_ms: float,
                    link: Link) -> float:
    """Time one-sided puts add after the compute they overlap with (`overlap_ms`) ends."""
    transfer = max(send_bytes, recv_bytes) / (link.bytes_per_s * PGAS_PUT_EFFICIENCY) * 1e3
    return max(0.0, transfer - overlap_ms) + link.latency_us * 1e-3
