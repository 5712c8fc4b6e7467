"""Progress on long work: a bar with its rate and time left on a terminal (tqdm), nothing
in a pipe or with --quiet, so logs and piped output stay clean."""

from __future__ import annotations

import sys


def bar(total: float, what: str, quiet: bool = False, unit: str = "it"):
    """A tqdm bar on stderr over `total` units of work, shown only where stderr is a
    terminal and not `quiet`; use as a context manager, `update(n)` as work is done."""
    from tqdm import tqdm

    return tqdm(total=total, desc=what, unit=unit, file=sys.stderr, leave=False,
                dynamic_ncols=True, disable=quiet or not sys.stderr.isatty())


def time_bar(seconds: float, what: str, quiet: bool = False):
    """`bar` over a time limit (work that stops by then at the latest): set `n` to the
    seconds spent; it shows the share of the limit spent and the time left of it."""
    from tqdm import tqdm

    return tqdm(total=seconds, desc=what, file=sys.stderr, leave=False, dynamic_ncols=True,
                disable=quiet or not sys.stderr.isatty(),
                bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining} "
                           "of the time limit{postfix}")
