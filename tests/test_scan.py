"""The GPU path's offsets scan, run on CPU torch tensors."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from corun.backend.runner import scan_regions  # noqa: E402


def test_scan_regions_matches_per_region_cumsum():
    rng = np.random.default_rng(0)
    count, rows = 5, 17
    lengths = rng.integers(0, 4, (count, rows))
    flat = torch.zeros(count * (rows + 1), dtype=torch.int64)
    flat.view(count, rows + 1)[:, 1:] = torch.as_tensor(lengths)
    scan_regions(flat, count, rows, torch.empty(count * (rows + 1) + 3, dtype=torch.int64))
    want = np.zeros((count, rows + 1), np.int64)
    want[:, 1:] = np.cumsum(lengths, axis=1)
    assert np.array_equal(flat.view(count, rows + 1).numpy(), want)
