"""The collective model: NCCL's ring and tree all-reduce, and the switched all-to-all."""

import math

import pytest
from corun.costmodel.comm import (
    A2A_LINK_SHARE,
    ALLREDUCE_LINK_SHARE,
    TREE_BUS_SHARE,
    TREE_STEP_US,
    Algorithm,
    all_to_all_ms,
    allreduce_ms,
    collective_parts,
)
from corun.costmodel.types import Comm, StageWork

from corun import spec


def test_ring_closed_form_on_one_node():
    hw = spec.hardware_preset("h200", 8)
    link, nbytes, n = hw.intra_node, 64e6, 8
    bus = link.bytes_per_s * ALLREDUCE_LINK_SHARE
    expected = 2 * (n - 1) / n * nbytes / bus * 1e3 + 2 * (n - 1) * link.latency_us / 1e3
    assert allreduce_ms(nbytes, hw, algorithm=Algorithm.RING) == pytest.approx(expected)
    assert allreduce_ms(nbytes, hw) == pytest.approx(expected)  # the ring is NCCL's pick
    assert allreduce_ms(nbytes, spec.hardware_preset("h200", 1)) == 0.0


def test_multi_node_ring_crosses_the_network_twice_a_node():
    """At 4 nodes of 8, 8 of the 62 steps are network steps, and the network's bandwidth
    paces the bytes."""
    hw = spec.hardware_preset("h100", 32)
    net, nvl, nbytes = hw.inter_node, hw.intra_node, 10e6
    expected = (62 / 32 * nbytes / (net.bytes_per_s * ALLREDUCE_LINK_SHARE) * 1e3
                + (54 * nvl.latency_us + 8 * net.latency_us) / 1e3)
    assert allreduce_ms(nbytes, hw, algorithm=Algorithm.RING) == pytest.approx(expected)


def test_tree_closed_form_and_its_log_latency():
    """Twice the bytes at 0.92 of the bus bandwidth and NCCL's size factor (0.8 at 8 MiB),
    and 2 x (7 + log2 nodes) chunk steps."""
    nbytes = 8 * 2**20
    for gpus in (64, 512):
        hw = spec.hardware_preset("h100", gpus)
        bus = hw.inter_node.bytes_per_s * ALLREDUCE_LINK_SHARE
        steps = 2 * (7 + int(math.log2(gpus // 8)))
        expected = (2 * nbytes / (bus * TREE_BUS_SHARE * 0.8) * 1e3
                    + steps * TREE_STEP_US / 1e3)
        assert allreduce_ms(nbytes, hw, algorithm=Algorithm.TREE) == pytest.approx(expected)


@pytest.mark.parametrize("gpus", [2, 4, 8])
@pytest.mark.parametrize("nbytes", [1e5, 1e7, 1e9])
def test_on_one_node_the_ring_is_always_picked(gpus, nbytes):
    hw = spec.hardware_preset("a100", gpus)
    ring = allreduce_ms(nbytes, hw, algorithm=Algorithm.RING)
    assert allreduce_ms(nbytes, hw, algorithm=Algorithm.TREE) > ring
    assert allreduce_ms(nbytes, hw) == ring


def test_at_many_nodes_the_tree_wins_small_messages_and_the_ring_large_ones():
    """The ring's latency grows with the GPU count, the tree's with log2 of the nodes."""
    small, large = 10e6, 100e6
    few, many = spec.hardware_preset("h100", 16), spec.hardware_preset("h100", 512)

    def pick(nbytes, hw):
        ring = allreduce_ms(nbytes, hw, algorithm=Algorithm.RING)
        return Algorithm.RING if ring <= allreduce_ms(nbytes, hw, algorithm=Algorithm.TREE) \
            else Algorithm.TREE

    assert pick(small, few) is Algorithm.RING
    assert pick(small, many) is Algorithm.TREE
    assert pick(large, many) is Algorithm.RING
    assert allreduce_ms(small, many) < allreduce_ms(small, many, algorithm=Algorithm.RING)


def _works(comm: Comm, sends: list[float]) -> list[StageWork]:
    stage = spec.Stage.GRAD_ALLREDUCE if comm is Comm.ALL_REDUCE else spec.Stage.EMB_A2A_FWD
    return [StageWork(stage, 0.0, 0.0, spec.Precision.FP32, 1, 1.0, comm=comm,
                      send_bytes=s, recv_bytes=s) for s in sends]


def test_collective_parts_name_the_algorithm_they_priced():
    hw = spec.hardware_preset("h100", 512)
    p = collective_parts(_works(Comm.ALL_REDUCE, [10e6] * 512), hw)
    assert p.algorithm is Algorithm.TREE
    assert p.ms() == pytest.approx(allreduce_ms(10e6, hw))
    p = collective_parts(_works(Comm.ALL_TO_ALL, [1e6] * 512), hw)
    assert p.algorithm is Algorithm.SWITCHED
    with pytest.raises(ValueError, match="machine of 512 GPUs"):
        collective_parts(_works(Comm.ALL_REDUCE, [1e6] * 8), hw)


def test_all_to_all_is_the_busiest_direction_of_the_busiest_gpu():
    link = spec.LINKS["nvlink4"]
    assert all_to_all_ms([1e6, 3e6], [2e6, 1e6], link) == pytest.approx(
        3e6 / (link.bytes_per_s * A2A_LINK_SHARE) * 1e3 + link.latency_us / 1e3)
    assert all_to_all_ms([1e6, 3e6], [2e6, 1e6], link, share=1.0) == pytest.approx(
        3e6 / link.bytes_per_s * 1e3 + link.latency_us / 1e3)
