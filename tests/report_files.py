"""What the tests of the fixed reports under bench/ share (the ones rendered from the
committed records their modules name)."""

from pathlib import Path


def written_report(main, out: Path, headings: tuple[str, ...]) -> str:
    """The text `main(["-o", out])` writes, after checking that it exits 0 and that every
    one of `headings` is in it."""
    assert main(["-o", str(out)]) == 0
    text = out.read_text()
    for heading in headings:
        assert heading in text
    return text
