"""Loads and stores of data a kernel touches once, marked evict-first (PTX ld/st .cs),
so that preprocessing's stream of raw ids and outputs, some hundred MB a batch, does
not push the embedding tables' hot rows out of L2 while training runs beside it.

Where Numba has no such intrinsics (the CUDA simulator), or with CORUN_CACHE_HINTS=0 in
the environment (to measure what the hints are worth: bench/cache_hints_probe.sh),
they are plain indexing."""

from __future__ import annotations

import os

from numba import cuda
from numba.extending import register_jitable

ENABLED = (os.environ.get("CORUN_CACHE_HINTS", "1") != "0"
           and getattr(cuda, "stcs", None) is not None)  # the simulator has None

if ENABLED:
    load_once, store_once = cuda.ldcs, cuda.stcs
else:
    @register_jitable
    def load_once(array, i):
        return array[i]

    @register_jitable
    def store_once(array, i, value):
        array[i] = value
