"""Output targets, checked before any work and written whole.

An output file (`-o`) is written atomically (spec.serde.write_atomic). An output folder
(`--out`) is built beside its target, in `.NAME.partial-PID`, and renamed into place
with a manifest of its files once the command has written them all: an interrupt or an
error leaves the folder as it was, never a mix of two runs. What the old folder held
that corun did not write there is kept."""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import hashlib
import json
import os
import shutil
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MANIFEST = "manifest.json"
"""The file of a finished output folder that lists what corun wrote into it."""

OURS = ("manifest.json", "summary.md", "plan*.json", "prediction-*.json", "trace-*.json",
        "whatif.*", "whatif-*", "*.svg", "*.png")
"""Names corun writes into an output folder: in a folder without a manifest (written
before manifests, or by hand), files of these names are taken as an earlier run's."""


def _writable_ancestor(path: Path, what: str) -> None:
    """An error unless the nearest existing folder above `path` is a folder this process
    may create files in."""
    parent = path.parent if path.parent != Path("") else Path(".")
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise argparse.ArgumentTypeError(f"{str(path)!r}: a {what} path, but {parent} is a "
                                         "file")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{str(path)!r}: a {what} in a folder this user "
                                         f"can write ({parent} is not)")


def out_file(text: str) -> str:
    """argparse type of an output file: a non-empty path, not a folder, in a folder that
    exists or can be made and is writable (checked before any work)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: a non-empty path to write to")
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r}: a file to write, not a folder")
    _writable_ancestor(path, "file")
    return text


def out_folder(text: str) -> str:
    """argparse type of an output folder: a non-empty path, not a file, whose nearest
    existing folder is writable (checked before any work)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: a non-empty path to write to")
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r}: a folder to write, not a file")
    here = Path.cwd().resolve()
    if path.resolve() in (here, *here.parents):
        raise argparse.ArgumentTypeError(f"{text!r}: a folder of its own, not the current "
                                         "folder or one above it (corun replaces it whole)")
    _writable_ancestor(path, "folder")
    return text


def _ours(old: Path) -> set[str]:
    """The names in `old` an earlier corun run wrote: its manifest's, else OURS'."""
    manifest = old / MANIFEST
    if manifest.is_file():
        try:
            return {MANIFEST, *json.loads(manifest.read_text())["files"]}
        except (OSError, ValueError, KeyError, TypeError):
            pass
    return {p.name for p in old.iterdir() if any(fnmatch.fnmatch(p.name, g) for g in OURS)}


def _manifest(folder: Path, command: str) -> dict:
    from corun.spec.provenance import corun_version, git_commit

    files = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            files[str(p.relative_to(folder))] = {
                "bytes": p.stat().st_size,
                "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}
    return {"schema": "corun.manifest/1", "command": command,
            "corun_version": corun_version(), "git_commit": git_commit(),
            "created_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "files": files}


def _remove_stale_partials(target: Path) -> None:
    """Partial folders of `target` left by processes that are gone (killed outright)."""
    for p in target.parent.glob(f".{target.name}.partial-*"):
        try:
            pid = int(p.name.rsplit("-", 1)[1])
            os.kill(pid, 0)
        except (ValueError, ProcessLookupError):
            shutil.rmtree(p, ignore_errors=True)
        except PermissionError:
            pass  # another user's live process


@contextmanager
def staged_folder(target: str | Path, command: str = "") -> Iterator[Path]:
    """A fresh folder to write the outputs of `target` into; on leaving without an error
    it replaces `target` (with a manifest, and the old folder's files corun did not write
    carried over); on an error it is removed and `target` stays as it was."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_partials(target)
    staging = target.parent / f".{target.name}.partial-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        yield staging
        from corun.spec.serde import write_atomic

        write_atomic(staging / MANIFEST, json.dumps(_manifest(staging, command), indent=1))
        _swap(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _swap(staging: Path, target: Path) -> None:
    """Rename `staging` to `target`, the old `target` out of the way first, then move the
    old folder's files corun did not write into the new one and remove what is left,
    with SIGINT and SIGTERM held back meanwhile (an interrupt leaves one folder or the
    other). Nothing of the user's is moved before the new folder is in place."""
    old = target.parent / f".{target.name}.old-{os.getpid()}"
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        had = target.is_dir()
        ours = _ours(target) if had else set()
        if had:
            target.rename(old)
        staging.rename(target)
        if had:
            for p in old.iterdir():
                if p.name not in ours and not (target / p.name).exists():
                    p.rename(target / p.name)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    if had and all(p.name in ours for p in old.iterdir()):  # nothing of the user's left
        shutil.rmtree(old, ignore_errors=True)
