"""What a non-editable install holds: every file the package reads at run time."""

from __future__ import annotations

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
    data = {p for p in tracked("costmodel/data") if not p.endswith(".svg")}
    assert "costmodel/data/h200/model.pkl" in data
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                            "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = tmp_path.glob("corun_dlrm-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert data <= names, sorted(data - names)[:5]
    assert "corun/cli.py" in names and "spec/validation.py" in names
    assert not any(n.startswith(("tests/", "bench/", "validation/")) for n in names)
