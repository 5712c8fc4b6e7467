"""Markdown pieces the reports share."""

from __future__ import annotations


def markdown_table(headers: list[str], rows: list[list[str]]) -> str:
    """A Markdown table: a header row, its rule, then one line a row."""
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(out + ["| " + " | ".join(r) + " |" for r in rows])
