"""Writing what the commands produce: JSON, Markdown and HTML files, or stdout for ``-``.

Two failure styles, kept as the commands have always had them: ``write_file`` turns an
unwritable destination into a ``UsageError`` naming what was being written (``analyze``);
``write_text``/``emit`` create missing parent directories and let ``OSError`` through (``batch``,
``compare``, ``inspect``; the CLI reports it).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from nsys_diag.model.errors import UsageError
from nsys_diag.model.jsonsafe import jsonable

STDOUT = "-"
"""The destination that means standard output (``--json -``, ``--md -``)."""


def dumps(obj, indent: int | None = 2) -> str:
    """JSON text of ``obj`` in insertion order (``jsonable`` first: no NaN/Infinity), one
    trailing newline; ``indent=None`` gives one line (cache entries)."""
    return json.dumps(jsonable(obj), indent=indent, ensure_ascii=False, allow_nan=False,
                      sort_keys=False) + "\n"


def to_stdout(text: str) -> None:
    """Write ``text`` to stdout as it is and flush (machine output: nothing is buffered behind)."""
    sys.stdout.write(text)
    sys.stdout.flush()


def write_file(dest: str, text: str, what: str) -> str:
    """Write ``text`` to ``dest``; returns ``dest``. ``UsageError`` (exit 2) when it cannot be
    written, e.g. ``cannot write the JSON to /ro/x.json: Permission denied``."""
    try:
        Path(dest).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {what} to {dest}: {exc.strerror or exc}") from None
    return dest


def write_text(path: Path, text: str, *, parents: bool = True) -> None:
    """Write ``text`` to ``path`` (UTF-8), creating its parent directories unless ``parents``
    is false."""
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def emit(text: str, dest: str | None, *, parents: bool = True) -> None:
    """``text`` to ``dest``: nothing for None, stdout (ending in a newline) for ``-``, else a
    file (``write_text``)."""
    if dest is None:
        return
    if dest == STDOUT:
        to_stdout(text if text.endswith("\n") else text + "\n")
    else:
        write_text(Path(dest), text, parents=parents)


def default_html_path(trace: str) -> Path:
    """``run.sqlite`` → ``run.nsys-diag.html`` beside the trace."""
    p = Path(trace)
    return p.with_name(p.stem + ".nsys-diag.html")


def dir_writable(d: Path) -> bool:
    """Whether files can be created in directory ``d``."""
    return d.is_dir() and os.access(d, os.W_OK | os.X_OK)


def write_html_report(html: str, trace: str, html_out: str | None, lines: list[str]) -> None:
    """Write the HTML report to ``html_out``, else beside ``trace``, else (that directory not
    writable) into the current directory; the lines saying where are appended to ``lines``."""
    if html_out:
        lines.append(f"report: {write_file(html_out, html, 'the HTML report')}")
        return
    dest = default_html_path(trace)
    if not dir_writable(dest.parent):
        fallback = Path.cwd() / dest.name
        lines.append(f"note: {dest.parent} is not writable; writing the report to the current "
                     "directory")
        dest = fallback
    lines.append(f"report: {write_file(str(dest), html, 'the HTML report')}")
