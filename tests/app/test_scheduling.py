"""Scheduling many traces: progress bar, failures become skipped results."""
from __future__ import annotations

from nsys_diag.app import scheduling


def test_progress_bar_only_on_a_terminal():
    import io

    class Tty(io.StringIO):
        def isatty(self):
            return True

    quiet, tty = io.StringIO(), Tty()
    for stream in (quiet, tty):
        p = scheduling.Progress(3, "batch", stream=stream)
        p.update()
        p.update(cached=True)
        p.update(skipped=True)
        p.close()
    assert quiet.getvalue() == ""
    out = tty.getvalue()
    assert "3/3" in out and "1 cached" in out and "1 skipped" in out and "\r" in out
