"""Worker process pools whose workers end with the command: spawned (a fork of a process
whose OpenMP threads have run can hang), each worker asking the kernel to end it when its
parent ends, and on an interrupt the pool left without waiting for its running tasks."""

from __future__ import annotations

import multiprocessing
import signal
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager

PR_SET_PDEATHSIG = 1
"""prctl(2): the signal a process gets when its parent ends (Linux)."""


def die_with_parent() -> None:
    """Ask the kernel to send this process SIGTERM when its parent ends (Linux only)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass  # no glibc: the pool's shutdown still cancels what has not started


def _start(initializer: Callable | None, initargs: tuple) -> None:
    die_with_parent()
    if initializer is not None:
        initializer(*initargs)


@contextmanager
def process_pool(jobs: int, initializer: Callable | None = None,
                 initargs: tuple = ()) -> Iterator[ProcessPoolExecutor]:
    """A pool of `jobs` spawned workers; on an error or interrupt its pending tasks are
    cancelled and it is left at once (its workers end with this process)."""
    pool = ProcessPoolExecutor(max_workers=jobs, initializer=_start,
                               initargs=(initializer, initargs),
                               mp_context=multiprocessing.get_context("spawn"))
    try:
        yield pool
    except BaseException:
        _terminate(pool)
        raise
    pool.shutdown(wait=True)


def _terminate(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the workers now: at exit the interpreter
    would otherwise wait for their running tasks. (ProcessPoolExecutor.terminate_workers
    does this from Python 3.14; before it, the pool's own process table.)"""
    if hasattr(pool, "terminate_workers"):
        pool.terminate_workers()
        return
    workers = list((getattr(pool, "_processes", None) or {}).values())  # shutdown clears it
    pool.shutdown(wait=False, cancel_futures=True)
    for process in workers:
        process.terminate()
