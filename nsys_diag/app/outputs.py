"""Writing what the commands produce: JSON, Markdown and HTML files, or stdout for ``-``.

Every file is written atomically (``atomic_write``): to a temporary file in the destination's
directory, renamed into place once complete. A kill, a full disk or ``ulimit -f`` leaves the
previous file as it was and no partial file; a symlink planted at the destination is replaced,
never followed (its target is untouched). Only an existing FIFO or device at the destination
(``/dev/stdout``, a pipe made on purpose) is written through, as it cannot be replaced.

An unwritable destination is a ``UsageError`` (exit 2) naming what was being written:
``write_file`` (``analyze``) and ``write_text``/``emit`` (``batch``, ``compare``, ``inspect``;
these create missing parent directories first).
"""
from __future__ import annotations

import functools
import json
import os
import stat
import sys
import tempfile
from pathlib import Path

from nsys_diag.model.errors import UsageError
from nsys_diag.model.jsonsafe import escape_invisible, jsonable

STDOUT = "-"
"""The destination that means standard output (``--json -``, ``--md -``)."""


def dumps(obj, indent: int | None = 2) -> str:
    """JSON text of ``obj`` in insertion order (``jsonable`` first: no NaN/Infinity), one
    trailing newline; ``indent=None`` gives one line (cache entries)."""
    return escape_invisible(json.dumps(jsonable(obj), indent=indent, ensure_ascii=False,
                                       allow_nan=False, sort_keys=False)) + "\n"


def to_stdout(text: str) -> None:
    """Write ``text`` to stdout as it is and flush (machine output: nothing is buffered behind)."""
    sys.stdout.write(text)
    sys.stdout.flush()


@functools.lru_cache(maxsize=1)
def _new_file_mode() -> int:
    """The mode a plainly created file gets (0666 less the umask)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _special_target(path: Path) -> bool:
    """Whether ``path`` exists and (through any symlink) is a FIFO, device or socket."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def atomic_write(path: Path, data: bytes) -> None:
    """``data`` into ``path`` all or nothing: a temporary file in the same directory, renamed
    over ``path`` (a symlink there is replaced, not followed); the file keeps the mode of the
    regular file it replaces, else gets the umask's. ``OSError`` with nothing left behind."""
    if _special_target(path):
        with open(path, "wb") as fh:  # /dev/stdout, a FIFO: cannot be renamed over
            fh.write(data)
        return
    try:
        old = path.lstat()
        mode = stat.S_IMODE(old.st_mode) if stat.S_ISREG(old.st_mode) else _new_file_mode()
    except OSError:
        mode = _new_file_mode()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _unwritable(dest: object, what: str, exc: OSError) -> UsageError:
    return UsageError(f"cannot write {what} to {dest}: {exc.strerror or exc}")


def write_file(dest: str, text: str, what: str) -> str:
    """Write ``text`` to ``dest`` (``atomic_write``); returns ``dest``. ``UsageError`` (exit 2)
    when it cannot be written, e.g. ``cannot write the JSON to /ro/x.json: Permission denied``."""
    try:
        atomic_write(Path(dest), text.encode("utf-8"))
    except OSError as exc:
        raise _unwritable(dest, what, exc) from None
    return dest


def write_text(path: Path, text: str, *, parents: bool = True, what: str = "the output") -> None:
    """Write ``text`` to ``path`` (UTF-8, ``atomic_write``), creating its parent directories
    unless ``parents`` is false; ``UsageError`` (exit 2) when it cannot be written."""
    try:
        if parents:
            path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode("utf-8"))
    except OSError as exc:
        raise _unwritable(path, what, exc) from None


def make_output_dir(path: Path) -> None:
    """Create the output directory ``path`` (and parents); ``UsageError`` when it cannot be."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the output directory {path}: "
                         f"{exc.strerror or exc}") from None


def emit(text: str, dest: str | None, *, parents: bool = True, what: str = "the output") -> None:
    """``text`` to ``dest``: nothing for None, stdout (ending in a newline) for ``-``, else a
    file (``write_text``; ``UsageError`` naming ``what`` when it cannot be written)."""
    if dest is None:
        return
    if dest == STDOUT:
        to_stdout(text if text.endswith("\n") else text + "\n")
    else:
        write_text(Path(dest), text, parents=parents, what=what)


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
