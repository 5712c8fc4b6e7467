"""What a non-editable install holds: every file the package reads at run time, under one
import name."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def tracked(folder: str) -> set[str]:
    out = subprocess.run(["git", "ls-files", folder], cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    return set(out.stdout.split())


def test_the_wheel_holds_the_fitted_model_and_every_profile(tmp_path):
    """A plain `pip install .` once left out costmodel/data/h200/model.pkl, and `corun plan`
    then fell back to the analytic model without a word."""
    data = {f"corun/{p}" for p in tracked("costmodel/data") if not p.endswith(".svg")}
    assert "corun/costmodel/data/h200/model.pkl" in data
    src = tmp_path / "src"  # the tracked files alone: no build/ left from another build
    for rel in tracked("."):
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                            "--no-build-isolation", "-q", "-w", str(tmp_path), str(src)],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = tmp_path.glob("corun_dlrm-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert data <= names, sorted(data - names)[:5]
    assert "corun/cli.py" in names and "corun/spec/validation.py" in names
    tops = {n.split("/")[0] for n in names if not n.startswith("corun_dlrm-")}
    assert tops == {"corun"}  # one import name: none of ours shadows another distribution
