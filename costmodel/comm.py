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
from dataclasses import dataclass

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


def _ring_parts(nbytes: float, n: int, link: Link) -> tuple[float, float]:
    """(bytes on the wire at the link's whole peak, latency) of a ring all-reduce, ms."""
    steps = 2 * (n - 1)
    return steps / n * nbytes / link.bytes_per_s * 1e3, steps * link.latency_us * 1e-3


def _all_to_all_parts(send_bytes: Sequence[float], recv_bytes: Sequence[float],
                      link: Link) -> tuple[float, float]:
    """The same for an all-to-all: the busier direction of the busiest GPU sets it."""
    busiest = max(max(s, r) for s, r in zip(send_bytes, recv_bytes))
    return busiest / link.bytes_per_s * 1e3, link.latency_us * 1e-3


def ring_allreduce_ms(nbytes: float, n: int, link: Link,
                      share: float = ALLREDUCE_LINK_SHARE) -> float:
    if n <= 1:
        return 0.0
    wire, latency = _ring_parts(nbytes, n, link)
    return wire / share + latency


def all_to_all_ms(send_bytes: list[float], recv_bytes: list[float], link: Link,
                  share: float = A2A_LINK_SHARE) -> float:
    """Every GPU's send and receive volume; the slowest direction of the slowest GPU sets
    the time."""
    if len(send_bytes) <= 1:
        return 0.0
    wire, latency = _all_to_all_parts(send_bytes, recv_bytes, link)
    return wire / share + latency


@dataclass(frozen=True)
class CollectiveParts:
    """A collective stage's time by part, ms: its bytes on the wire at the link's whole
    peak, its latency, and the copies around it at the copy ceiling."""

    comm: Comm
    wire_ms: float
    latency_ms: float
    copies_ms: float

    def ms(self) -> float:
        """At the link share NCCL reaches for this collective."""
        share = ALLREDUCE_LINK_SHARE if self.comm is Comm.ALL_REDUCE else A2A_LINK_SHARE
        return self.wire_ms / share + self.latency_ms + self.copies_ms


def collective_parts(works: Sequence[StageWork], link: Link, gpu: GpuKind) -> CollectiveParts:
    """A collective stage as the trainer runs it on every GPU (`works`, one a GPU, at
    least two): the collective and, on the busiest GPU, its copies around it."""
    w0 = works[0]
    if w0.comm is Comm.NONE or len(works) < 2:
        raise ValueError(f"{w0.stage.value} on {len(works)} GPU(s) is no collective stage")
    if w0.comm is Comm.ALL_REDUCE:
        wire, latency = _ring_parts(w0.send_bytes, len(works), link)
    else:
        wire, latency = _all_to_all_parts([w.send_bytes for w in works],
                                          [w.recv_bytes for w in works], link)
    copies = max(w.reorder_bytes for w in works) / gpu.copy_bytes_per_s * 1e3
    return CollectiveParts(w0.comm, wire, latency, copies)


def collective_stage_ms(works: Sequence[StageWork], link: Link, gpu: GpuKind) -> float:
    """The stage's time (0 on one GPU, where there is no collective)."""
    return collective_parts(works, link, gpu).ms() if len(works) > 1 else 0.0


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
