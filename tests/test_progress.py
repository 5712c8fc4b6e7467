"""Progress bars: shown with the time left on a terminal, nothing in a pipe or quiet."""

import io
import sys

from corun.progress import bar, time_bar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bar_on_a_terminal_only(monkeypatch):
    for stream, quiet, shown in ((io.StringIO(), False, False), (Terminal(), True, False),
                                 (Terminal(), False, True)):
        monkeypatch.setattr(sys, "stderr", stream)
        with bar(4, "cases predicted", quiet, "case") as b:
            b.update(3)
            b.refresh()
            text = stream.getvalue()
        assert ("cases predicted" in text) == shown
        if shown:
            assert "3/4" in text and "<" in text  # done of total, elapsed<remaining


def test_time_bar_counts_the_time_limit(monkeypatch):
    stream = Terminal()
    monkeypatch.setattr(sys, "stderr", stream)
    with time_bar(10.0, "plan search") as b:
        b.n = 5.0
        b.set_postfix_str("40 plans")
        text = stream.getvalue()
    assert "plan search:  50%" in text and "of the time limit, 40 plans" in text


def test_execute_s_bar_follows_the_iterations(monkeypatch):
    from corun.execute_cmd import iteration_bar

    stream = Terminal()
    monkeypatch.setattr(sys, "stderr", stream)
    done = iteration_bar(quiet=False)
    for n in (2, 4, 6):
        done(n, 10)
    assert "iterations:  60%" in stream.getvalue() and "6/10" in stream.getvalue()
    done(10, 10)  # the last: the bar is closed
    quiet = io.StringIO()
    monkeypatch.setattr(sys, "stderr", quiet)
    iteration_bar(quiet=False)(5, 10)  # in a pipe: nothing
    assert quiet.getvalue() == ""
