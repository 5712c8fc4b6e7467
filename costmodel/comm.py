"""Collective and one-sided communication times over a modelled machine.

An all-reduce is NCCL's ring or its tree, whichever is predicted faster, as NCCL's tuner
picks by its cost model (src/graph/tuning.cc, Simple protocol, the one NCCL uses at the
trainer's megabyte sizes):
- ring (Patarasuk & Yuan 2009): 2(n-1) steps each moving bytes/n, so 2(n-1)/n x bytes
  over the bus bandwidth, plus a latency per step: the node's link inside a node, the
  network's for the 2 x nodes steps that cross nodes;
- tree (NCCL's double binary tree between nodes, a chain inside each): twice the bytes
  over the bus bandwidth at NCCL's tree efficiency, plus a chunk's latency for each of
  twice (GPUs per node - 1 + log2(nodes)) steps.
NCCL's per-channel caps, its LL and LL128 protocols and its latency "plateau" factor on
multi-node rings are left out. On one node the ring is always the faster.

All-to-all over a switch (NVSwitch, or a fat-tree network): every GPU sends and receives
at once, so the time is the busier direction of the busiest GPU over its link, plus one
latency per peer message batch (NCCL issues all peers' sends together: one latency).

The bus bandwidth is the share of the slowest crossed link's peak that NCCL reaches at
the trainer's message sizes, fitted per collective (costmodel/comm_fit.py). A collective
stage also holds the trainer's copies around the collective (StageWork.reorder_bytes), at
the GPU's copy ceiling.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass

from corun.costmodel.types import Comm, StageWork
from corun.spec import Hardware, Link

A2A_LINK_SHARE = 0.591
"""Share of the link's per-direction peak the trainer's all-to-all reaches (NCCL's
`all_to_all_single` of the pooled rows, 29-59 MB a GPU): fitted by costmodel/comm_fit.py
on the steady two-GPU stages of H200 x2 runs over NVLink 4
(validation/benchmarks/collective_stages-h200.json); used for every link."""

ALLREDUCE_LINK_SHARE = 0.281
"""The same for the all-reduce of the dense gradients (9-10 MB): NCCL's bus bandwidth at
this size is far below the link's peak."""


class Algorithm(enum.Enum):
    """How a collective crosses the GPUs."""

    RING = "ring"
    TREE = "tree"
    SWITCHED = "switched"
    """Every GPU to every other at once (all-to-all)."""


_NCCL = "NCCL src/graph/tuning.cc, Simple protocol"
TREE_STEP_US = 28.0
"""A tree all-reduce's latency per step, us, on every link: a 256 kB chunk's (NCCL's
hwLat for the tree; source: _NCCL). A ring's step is one message's latency on its link
(Link.latency_us): NCCL's own ring figures (a 8.4 us base, 3.4 us an NVLink step)
predicted the held-out four-GPU H200 all-reduce stages worse (costmodel/comm_fit.py)."""
TREE_BUS_SHARE = 0.92
"""The tree's bus bandwidth over the ring's (source: _NCCL)."""
TREE_SIZE_FACTOR = (0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5,
                    0.5, 0.6, 0.7, 0.8, 0.7, 0.7, 0.8, 0.9, 0.9)
"""NCCL's correction of the tree's bandwidth by message size: entry k holds messages of
64 x 2^k to 64 x 2^(k+1) bytes; larger ones take 1 (treeCorrectionFactor; source: _NCCL)."""


def link_share(comm: Comm) -> float:
    """The fitted share of the link's peak that NCCL reaches for `comm`."""
    return ALLREDUCE_LINK_SHARE if comm is Comm.ALL_REDUCE else A2A_LINK_SHARE


def _tree_size_factor(nbytes: float) -> float:
    """TREE_SIZE_FACTOR's entry for a message of `nbytes`."""
    k = int(math.log2(max(nbytes, 64) / 64))
    return TREE_SIZE_FACTOR[k] if k < len(TREE_SIZE_FACTOR) else 1.0


def _allreduce_parts(nbytes: float, hw: Hardware, algorithm: Algorithm) -> tuple[float, float]:
    """(bytes on the wire at the slowest crossed link's whole peak, latency), ms, of an
    all-reduce of `nbytes` over all of `hw`'s GPUs by `algorithm`."""
    n, nodes = hw.gpu_count, hw.nodes
    peak = hw.collective_link.bytes_per_s
    if algorithm is Algorithm.RING:
        steps = 2 * (n - 1)
        crossing = 2 * nodes if nodes > 1 else 0  # NCCL's count of network steps
        wire = steps / n * nbytes / peak * 1e3
        latency = ((steps - crossing) * hw.intra_node.latency_us
                   + crossing * hw.inter_node.latency_us)
    elif algorithm is Algorithm.TREE:
        wire = 2 * nbytes / peak * 1e3 / (TREE_BUS_SHARE * _tree_size_factor(nbytes))
        latency = 2 * (n // nodes - 1 + int(math.log2(nodes))) * TREE_STEP_US
    else:
        raise ValueError(f"{algorithm.value} is no all-reduce algorithm")
    return wire, latency * 1e-3


def _fastest_allreduce(nbytes: float, hw: Hardware,
                       share: float) -> tuple[Algorithm, float, float]:
    """(algorithm, wire ms, latency ms) of ring and tree, whichever takes less at `share`
    of the link's peak, as NCCL picks."""
    options = [(a, *_allreduce_parts(nbytes, hw, a)) for a in (Algorithm.RING, Algorithm.TREE)]
    return min(options, key=lambda o: o[1] / share + o[2])


def allreduce_ms(nbytes: float, hw: Hardware, share: float = ALLREDUCE_LINK_SHARE,
                 algorithm: Algorithm | None = None) -> float:
    """An all-reduce of `nbytes` over all of `hw`'s GPUs by `algorithm`; None: the faster
    of ring and tree, as NCCL picks (0 on one GPU)."""
    if hw.gpu_count <= 1:
        return 0.0
    if algorithm is None:
        _, wire, latency = _fastest_allreduce(nbytes, hw, share)
    else:
        wire, latency = _allreduce_parts(nbytes, hw, algorithm)
    return wire / share + latency


def _all_to_all_parts(send_bytes: Sequence[float], recv_bytes: Sequence[float],
                      link: Link) -> tuple[float, float]:
    """(bytes on the wire at the link's whole peak, latency), ms, of an all-to-all: the
    busier direction of the busiest GPU sets it."""
    busiest = max(max(s, r) for s, r in zip(send_bytes, recv_bytes))
    return busiest / link.bytes_per_s * 1e3, link.latency_us * 1e-3


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
    """A collective stage's time by part, ms: the algorithm it crosses the GPUs by, its
    bytes on the wire at the link's whole peak, its latency, and the copies around it at
    the copy ceiling."""

    comm: Comm
    algorithm: Algorithm
    wire_ms: float
    latency_ms: float
    copies_ms: float

    def ms(self) -> float:
        """At the link share NCCL reaches for this collective."""
        return self.wire_ms / link_share(self.comm) + self.latency_ms + self.copies_ms


def collective_parts(works: Sequence[StageWork], hw: Hardware) -> CollectiveParts:
    """A collective stage as the trainer runs it on every GPU of `hw` (`works`, one a GPU,
    at least two): the collective by the algorithm NCCL would pick and, on the busiest
    GPU, its copies around it."""
    w0 = works[0]
    if w0.comm is Comm.NONE or len(works) < 2:
        raise ValueError(f"{w0.stage.value} on {len(works)} GPU(s) is no collective stage")
    if len(works) != hw.gpu_count:
        raise ValueError(f"{len(works)} GPUs' work for a machine of {hw.gpu_count} GPUs")
    if w0.comm is Comm.ALL_REDUCE:
        algorithm, wire, latency = _fastest_allreduce(w0.send_bytes, hw, link_share(w0.comm))
    else:
        algorithm = Algorithm.SWITCHED
        wire, latency = _all_to_all_parts([w.send_bytes for w in works],
                                          [w.recv_bytes for w in works], hw.collective_link)
    copies = max(w.reorder_bytes for w in works) / hw.gpu.copy_bytes_per_s * 1e3
    return CollectiveParts(w0.comm, algorithm, wire, latency, copies)


def collective_stage_ms(works: Sequence[StageWork], hw: Hardware) -> float:
    """The stage's time (0 on one GPU, where there is no collective)."""
    return collective_parts(works, hw).ms() if len(works) > 1 else 0.0


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
