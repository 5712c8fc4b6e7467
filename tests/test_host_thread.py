"""backend/host_thread.py: the launching thread kept on one core, and given its cores
back."""

import os

import pytest

from backend.host_thread import core_for, pinned


def test_ranks_take_the_highest_cores_first_and_wrap():
    cores = {0, 1, 2, 3}
    assert [core_for(r, cores) for r in range(5)] == [3, 2, 1, 0, 3]


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux only")
def test_the_thread_keeps_one_core_inside_and_its_cores_after():
    before = os.sched_getaffinity(0)
    with pinned(True) as core:
        assert os.sched_getaffinity(0) == {core} and core == max(before)
    assert os.sched_getaffinity(0) == before
    with pytest.raises(RuntimeError):
        with pinned(True):
            raise RuntimeError("the loop failed")
    assert os.sched_getaffinity(0) == before  # given back on an error too
    with pinned(False) as core:
        assert core is None and os.sched_getaffinity(0) == before
