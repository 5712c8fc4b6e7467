"""bench/interaction_probe.py on the CPU: the trainer's flat gather gives advanced
indexing's outputs and gradients exactly, for every model the probe times."""

import json

import torch

from backend.trainer import DotInteraction
from bench.interaction_probe import CASES, IndexDotInteraction, main


def test_the_trainer_s_flat_gather_equals_advanced_indexing():
    gen = torch.Generator().manual_seed(1)
    bottom = torch.rand(5, 4, generator=gen, requires_grad=True)
    emb = torch.rand(5, 6, 4, generator=gen, requires_grad=True)
    a = IndexDotInteraction(7)(bottom, emb)
    b = DotInteraction(7)(bottom, emb)
    assert a.shape == (5, 4 + 21) and torch.equal(a, b)
    ga = torch.autograd.grad(a.sum(), (bottom, emb))
    gb = torch.autograd.grad(b.sum(), (bottom, emb))
    assert all(torch.equal(x, y) for x, y in zip(ga, gb))


def test_dry_run_times_each_model_once(tmp_path):
    assert main(["--dry-run", "--reps", "1", "--warmup", "0", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "interaction_probe.json").read_text())
    assert doc["dry_run"] and doc["command"].startswith("python bench/interaction_probe.py")
    assert [c["model"] for c in doc["cases"]] == list(dict.fromkeys(m for m, _ in CASES))
    for c in doc["cases"]:
        assert c["equal"] and c["index"]["bwd_ms"] > 0 and c["flat"]["fwd_ms"] > 0
    md = tmp_path / "probe.md"
    assert main(["--render", str(tmp_path / "interaction_probe.json"), "-o", str(md)]) == 0
    rows = [line for line in md.read_text().splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + len(doc["cases"])  # the header, then a row a case

