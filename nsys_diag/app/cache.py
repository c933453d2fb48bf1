"""The batch/compare result cache: one gzip JSON per analysed input, never beside the input.

Location: ``$XDG_CACHE_HOME/nsys-diag/batch`` (default ``~/.cache/nsys-diag/batch``). Key:
sha256 of the input's content hash, the tool version, the cache format, the thresholds, the
analysis options and the hash of the package's own code and templates (``code_hash``), so an
edited install or checkout never serves a result computed by other code. An entry holds the
trace summary and its analysis view; every read or write failure is a miss, never fatal.
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Callable

from nsys_diag._version import __version__
from nsys_diag.app.outputs import dumps
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.text import terminal_line
from nsys_diag.model.thresholds import Thresholds

CACHE_FORMAT = 1
"""Bump when the cached summary/view layout changes (old entries are then simply missed)."""

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # .../nsys_diag
MESSAGE_CHARS = 300
"""Longest quoted text (file names, OS messages) in a warning line."""

Echo = Callable[[str], None]


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/nsys-diag/batch`` (default ``~/.cache/nsys-diag/batch``)."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base) if base else Path.home() / ".cache"
    return root / "nsys-diag" / "batch"


def file_sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's content, read in ``chunk``-byte blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while True:
            block = fh.read(chunk)
            if not block:
                break
            h.update(block)
    return h.hexdigest()


def _code_files() -> list[tuple[str, Path]]:
    """(name, path) of the package's ``*.py`` files and of its template files (packaged or in the
    checkout), sorted by name; names are relative, so the hash does not depend on the location."""
    from nsys_diag.report.templates_path import templates_dir

    files = {f"nsys_diag/{p.relative_to(PACKAGE_DIR).as_posix()}": p
             for p in PACKAGE_DIR.rglob("*.py") if "__pycache__" not in p.parts}
    try:
        templates: Path | None = templates_dir()
    except FileNotFoundError:  # an incomplete install: rendering will say so
        templates = None
    if templates is not None:
        files.update({f"templates/{p.relative_to(templates).as_posix()}": p
                      for p in templates.rglob("*") if p.is_file() and "__pycache__" not in p.parts})
    return sorted(files.items())


@functools.lru_cache(maxsize=1)
def code_hash() -> str:
    """Hex sha256 of the package's own code and templates (name and content of every file);
    computed once per process (~150 small files, a few milliseconds)."""
    h = hashlib.sha256()
    for name, p in _code_files():
        try:
            data = p.read_bytes()
        except OSError:
            data = b""
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()


def cache_key(content_sha: str, th: Thresholds, options: AnalyzeOptions | None = None,
              code: str | None = None) -> str:
    """sha256 of content hash + tool version + thresholds + analysis options + cache format +
    ``code`` (default: ``code_hash()``)."""
    opts = options or AnalyzeOptions()
    material = {"content": content_sha, "tool": __version__, "cache_format": CACHE_FORMAT,
                "thresholds": th.to_dict(), "options": repr(opts),
                "code": code if code is not None else code_hash()}
    return hashlib.sha256(json.dumps(material, sort_keys=True, default=str).encode()).hexdigest()


class Cache:
    """Gzip JSON entries ``<dir>/<key[:2]>/<key>.json.gz``; every failure is a miss, never fatal.
    ``directory=None``: a cache that holds nothing (``--no-cache``)."""

    def __init__(self, directory: Path | None, echo: Echo | None = None):
        self.dir = directory
        self._echo = echo
        self._warned = False

    def _path(self, key: str) -> Path:
        assert self.dir is not None
        return self.dir / key[:2] / f"{key}.json.gz"

    def get(self, key: str) -> dict | None:
        """The entry stored under ``key``, or None (absent, unreadable, or not ours)."""
        if self.dir is None:
            return None
        p = self._path(key)
        try:
            with gzip.open(p, "rt", encoding="utf-8") as fh:
                entry = json.load(fh)
        except (OSError, ValueError, EOFError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != key or "summary" not in entry:
            return None
        return entry

    def put(self, key: str, entry: dict) -> None:
        """Store ``entry`` under ``key`` atomically; a failure warns once and is ignored."""
        if self.dir is None:
            return
        p = self._path(key)
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=p.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
                gz.write(dumps({"key": key, **entry}, indent=None).encode("utf-8"))
            os.replace(tmp, p)
        except OSError as exc:
            if not self._warned and self._echo:
                self._echo(f"nsys-diag: warning: cache not written "
                           f"({terminal_line(exc, MESSAGE_CHARS)}); continuing without it")
            self._warned = True
