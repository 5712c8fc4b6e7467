"""Collective and one-sided communication times over a modelled link.

Formulas: ring all-reduce (Patarasuk & Yuan 2009; NCCL's ring): 2(n-1) steps each
moving bytes/n, so 2(n-1)/n x bytes / bandwidth + 2(n-1) x latency. All-to-all over a
switch (NVSwitch, or a fat-tree network): every GPU sends and receives at once, so the
time is the busier direction of the busiest GPU over its link, plus one latency per
peer message batch (NCCL issues all peers' sends together: one latency).
"""

from __future__ import annotations

from corun.spec import Link


def ring_allreduce_ms(nbytes: float, n: int, link: Link) -> float:
    if n <= 1:
        return 0.0
    steps = 2 * (n - 1)
    return steps / n * nbytes / link.bytes_per_s * 1e3 + steps * link.latency_us * 1e-3


def all_to_all_ms(send_bytes: list[float], recv_bytes: list[float], link: Link) -> float:
    """Every GPU's send and receive volume; the slowest direction of the slowest GPU sets
    the time."""
    if len(send_bytes) <= 1:
        return 0.0
    busiest = max(max(s, r) for s, r in zip(send_bytes, recv_bytes))
    return busiest / link.bytes_per_s * 1e3 + link.latency_us * 1e-3


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
