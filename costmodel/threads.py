"""One compute thread for the model's predictions where many small ones run in a loop."""

from __future__ import annotations

from contextlib import contextmanager


@contextmanager
def single_threaded():
    """Native thread pools (OpenMP, BLAS) held to one thread inside the block.

    Each prediction of the learned model is a few rows: spread over a pool it costs more
    in hand-offs than it computes, and on a small machine those threads starve a
    time-limited search of the CPU, so it judges fewer plans and may choose another. The
    limit reaches only the runtimes loaded when it is set, so the learned model's is
    loaded first."""
    import sklearn.ensemble  # noqa: F401 - loads its OpenMP runtime, so the limit reaches it
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield
