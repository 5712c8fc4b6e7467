"""The executor's faults: what a user can act on becomes one clear ExecuteError."""

from __future__ import annotations

import contextlib

import torch


class ExecuteError(RuntimeError):
    """The run cannot go on (compile failure, out of memory, a dead worker)."""


@contextlib.contextmanager
def faults(doing: str):
    """Turn the faults a user can act on into an ExecuteError; others pass through."""
    try:
        yield
    except ExecuteError:
        raise
    except Exception as e:
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if isinstance(e, torch.cuda.OutOfMemoryError) or "out of memory" in str(e).lower() \
                or "OUT_OF_MEMORY" in str(e):
            raise ExecuteError(f"CUDA out of memory while {doing}: {text}. Try a smaller "
                               "--batch or a model with fewer embedding rows.") from e
        from numba.core.errors import NumbaError

        if isinstance(e, NumbaError):
            raise ExecuteError(f"a kernel failed to compile while {doing}: {text}") from e
        raise
