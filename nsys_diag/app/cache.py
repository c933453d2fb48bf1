"""The batch/compare result cache: one gzip JSON per analysed input, never beside the input.

Location: ``$XDG_CACHE_HOME/nsys-diag/batch`` (default ``~/.cache/nsys-diag/batch``). Key:
sha256 of the input's content hash, the tool version, the cache format, the thresholds, the
analysis options and the hash of the package's own code and templates (``code_hash``), so an
edited install or checkout never serves a result computed by other code. An entry holds the
trace summary and its analysis view; every read or write failure is a miss, never fatal.

The content hash is taken from one open descriptor of a regular file (``fingerprint``: a FIFO or
device is refused, never read), together with the file's identity (device, inode, size, mtime,
ctime); the scheduler stores a result only when the identity after the analysis is still the
same (``app/scheduling.py``), so a file changed between hashing and analysing never files the new
content's result under the old content's key. Entries are written to a temporary file beside
them and renamed into place; a truncated entry fails gzip's CRC and is a miss; temporary files
left by a killed writer are removed after ``STALE_TMP_S``.
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from nsys_diag._version import __version__
from nsys_diag.app.outputs import dumps
from nsys_diag.model.errors import InputError
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.safe_files import FileIdentity, open_regular
from nsys_diag.model.text import terminal_line
from nsys_diag.model.thresholds import Thresholds

CACHE_FORMAT = 1
"""Bump when the cached summary/view layout changes (old entries are then simply missed)."""

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # .../nsys_diag
MESSAGE_CHARS = 300
"""Longest quoted text (file names, OS messages) in a warning line."""

STALE_TMP_S = 3600
"""A cache temporary file older than this (seconds) was left by a killed writer: removed."""

TMP_SUFFIX = ".tmp"

Echo = Callable[[str], None]


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/nsys-diag/batch`` (default ``~/.cache/nsys-diag/batch``)."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base) if base else Path.home() / ".cache"
    return root / "nsys-diag" / "batch"


@dataclass(frozen=True)
class Fingerprint:
    """The content hash of one version of a file and that version's identity."""

    sha256: str
    identity: FileIdentity


def fingerprint(path: str | Path, chunk: int = 1 << 20) -> Fingerprint:
    """Hex sha256 of a regular file's content (read in ``chunk``-byte blocks from one descriptor)
    and its identity; ``InputError`` when it is not a regular file or changed while being read."""
    h = hashlib.sha256()
    with open_regular(path) as fh:
        before = FileIdentity.from_stat(os.fstat(fh.fileno()))
        while True:
            block = fh.read(chunk)
            if not block:
                break
            h.update(block)
        after = FileIdentity.from_stat(os.fstat(fh.fileno()))
    if after != before:
        raise InputError(path, "changed while it was being read",
                         "run again once the file is complete")
    return Fingerprint(h.hexdigest(), before)


def file_sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a regular file's content (``fingerprint``)."""
    return fingerprint(path, chunk).sha256


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
            with open_regular(p) as raw, gzip.GzipFile(fileobj=raw, mode="rb") as gz:
                entry = json.loads(gz.read().decode("utf-8"))
        except (OSError, ValueError, EOFError, InputError):  # absent, FIFO, truncated, garbage
            return None
        if not isinstance(entry, dict) or entry.get("key") != key or "summary" not in entry:
            return None
        return entry

    def put(self, key: str, entry: dict) -> None:
        """Store ``entry`` under ``key`` atomically; a failure warns once and is ignored."""
        if self.dir is None:
            return
        p = self._path(key)
        tmp = None
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            remove_stale_tmp(p.parent)
            fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{key}.", suffix=TMP_SUFFIX)
            with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
                gz.write(dumps({"key": key, **entry}, indent=None).encode("utf-8"))
            os.replace(tmp, p)
            tmp = None
        except (OSError, ValueError) as exc:
            if not self._warned and self._echo:
                self._echo(f"nsys-diag: warning: cache not written "
                           f"({terminal_line(exc, MESSAGE_CHARS)}); continuing without it")
            self._warned = True
        finally:
            if tmp is not None:
                _unlink_quietly(Path(tmp))


def _unlink_quietly(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def remove_stale_tmp(directory: Path, max_age_s: float = STALE_TMP_S) -> int:
    """Remove the cache's temporary files in ``directory`` older than ``max_age_s`` (left by a
    writer that was killed); returns how many. Younger ones may belong to a running batch."""
    removed = 0
    cutoff = time.time() - max_age_s
    try:
        names = [n for n in os.listdir(directory) if n.endswith(TMP_SUFFIX)]
    except OSError:
        return 0
    for name in names:
        p = directory / name
        try:
            if p.lstat().st_mtime < cutoff:
                p.unlink()
                removed += 1
        except OSError:
            pass
    return removed
