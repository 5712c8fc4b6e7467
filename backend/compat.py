"""Compatibility shims for the libraries on the GPU machine, kept in one place.

numba-cuda 0.30.4 calls `np.row_stack`, which NumPy 2.5 removed; every kernel
compile fails with AttributeError there (../shared/GPU.md). The alias restores it.
"""

from __future__ import annotations

import numpy as np


def apply() -> None:
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack  # type: ignore[attr-defined]


apply()
