"""A GPU's ceilings as this machine reaches them: a device-to-device copy and a large bf16
matmul, timed with CUDA events (the medians of repeated runs after a warm-up)."""

from __future__ import annotations

import statistics

import torch

COPY_BYTES = 2 << 30
"""Bytes copied (read, and as many written): large enough that the caches play no part."""

GEMM_N = 8192
"""Side of the square bf16 matmul: large enough to reach the tensor cores' plateau."""


def _median_ms(run, reps: int, warmup: int) -> float:
    times = []
    for i in range(warmup + reps):
        a, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        run()
        e.record()
        e.synchronize()
        if i >= warmup:
            times.append(a.elapsed_time(e))
    return statistics.median(times)


def copy_bytes_per_s(device: torch.device | str = "cuda", nbytes: int = COPY_BYTES,
                     reps: int = 20, warmup: int = 5) -> float:
    """Device-to-device copy rate, bytes read plus written per second."""
    with torch.cuda.device(device):
        src = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device=device)
        dst = torch.empty_like(src)
        ms = _median_ms(lambda: dst.copy_(src), reps, warmup)
    return 2 * nbytes / (ms * 1e-3)


def gemm_bf16_flops_per_s(device: torch.device | str = "cuda", n: int = GEMM_N,
                          reps: int = 20, warmup: int = 5) -> float:
    """A square bf16 matmul's rate, 2 n^3 FLOPs a product."""
    g = torch.Generator(device).manual_seed(0)
    with torch.cuda.device(device):
        a = torch.randn(n, n, device=device, dtype=torch.bfloat16, generator=g)
        b = torch.randn(n, n, device=device, dtype=torch.bfloat16, generator=g)
        ms = _median_ms(lambda: a @ b, reps, warmup)
    return 2 * n**3 / (ms * 1e-3)
