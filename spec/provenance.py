"""Where a result came from: the code version that made it."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

DISTRIBUTION = "corun-dlrm"
"""The name corun is installed under (`corun` on the package index is another project)."""


@functools.cache
def corun_version() -> str:
    """The installed version; not installed (a checkout on PYTHONPATH), the checkout's
    pyproject.toml's; else 'unknown'."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        import tomllib

        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        try:
            return tomllib.loads(pyproject.read_text())["project"]["version"]
        except (OSError, KeyError, tomllib.TOMLDecodeError):
            return "unknown"


NOT_CODE = ("validation", "docs", "README.md")
"""Paths whose edits leave a result's code as committed: the validation data and docs that
`corun validate` itself rewrites."""


@functools.cache
def git_commit() -> str:
    """The checkout's commit, '-dirty' when tracked code differs from it (a copy of the
    working tree on a lent GPU machine keeps the session's first commit), or 'unknown'
    outside a git checkout. CORUN_GIT_COMMIT, if set, wins. Asked once a process."""
    if os.environ.get("CORUN_GIT_COMMIT"):
        return os.environ["CORUN_GIT_COMMIT"]
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=5, cwd=here)
        commit = out.stdout.strip()
        if not commit:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                                ":/", *(f":(top,exclude){p}" for p in NOT_CODE)],
                               capture_output=True, text=True, timeout=10, cwd=here)
        return commit + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
"""Linux's id of the running boot."""


@functools.cache
def host_id() -> str:
    """This host's boot id, which tells one machine's runs from another's where lent
    machines share a host name (a profile is checked against the cases of its own host);
    '' where the system keeps none."""
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return ""


def short_commit(commit: str) -> str:
    """A commit as git's short form: its first 8 hex digits, with any `-dirty` kept (a
    record made with CORUN_GIT_COMMIT may hold the full hash)."""
    sha, dirty, rest = commit.partition("-")
    return sha[:8] + dirty + rest
