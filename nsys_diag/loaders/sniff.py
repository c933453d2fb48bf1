"""Format detection by content (the extension only names reports that are not SQLite).

PyTorch profiler (Kineto) traces: a JSON object (gzip-compressed or not) whose first bytes name a
Kineto top-level key (``looks_like_kineto``).

Every failure is an ``InputError`` (exit code 3) with the path, the reason and a hint: missing
path, directory, unreadable file, empty file, garbage, raw ``.qdstrm`` streams, and anything that
is not a regular file (a FIFO, a device, a symlink to ``/dev/zero``: opened without blocking and
refused, ``model/safe_files.py``). Sniffing reads at most ``SNIFF_BYTES``.
"""
from __future__ import annotations

import enum
import zlib
from pathlib import Path

from nsys_diag.model.errors import InputError, UnrecognizedFormatError
from nsys_diag.model.vocabulary import NCU_CAPTURE_COMMAND, NSYS_EXPORT_COMMAND
from nsys_diag.model.safe_files import SQLITE_MAGIC, read_head

REP_SUFFIXES = (".nsys-rep", ".qdrep")
"""Nsight Systems report files (not SQLite): convert with ``nsys export --type sqlite``."""

EXPORT_HINT = NSYS_EXPORT_COMMAND
NCU_HINT = NCU_CAPTURE_COMMAND
KINETO_HINT = "prof.export_chrome_trace('trace.json')"
SNIFF_BYTES = 4096
"""The most bytes read to tell the format."""


GZIP_MAGIC = b"\x1f\x8b"
KINETO_SUFFIXES = (".json", ".json.gz")
"""Names a PyTorch profiler (Kineto) trace usually has (``*.pt.trace.json`` included)."""

_KINETO_MARKERS = (b'"traceEvents"', b'"schemaVersion"', b'"deviceProperties"',
                   b'"distributedInfo"', b'"baseTimeNanoseconds"', b'"displayTimeUnit"',
                   b'"traceName"')
"""Top-level keys only Kineto / Chrome traces write (one of them opens every torch trace)."""


def gunzip_head(head: bytes, n: int = SNIFF_BYTES) -> bytes:
    """The first ``n`` decompressed bytes of a gzip stream's head (b"" when it is not one)."""
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, n)
    except zlib.error:
        return b""


def looks_like_kineto(head: bytes) -> bool:
    """True when ``head`` (a file's first bytes, gunzipped when they carry the gzip magic) opens
    a JSON object with one of the Kineto / Chrome-trace top-level keys."""
    if head.startswith(GZIP_MAGIC):
        head = gunzip_head(head)
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return text.startswith(b"{") and any(m in text for m in _KINETO_MARKERS)


class Format(enum.Enum):
    NSYS_SQLITE = "nsys-sqlite"
    NCU_CSV = "ncu-csv"
    NSYS_REP = "nsys-rep"
    KINETO = "kineto"


def is_sqlite_file(path: str | Path) -> bool:
    """True when ``path`` is a regular file that starts with the SQLite header (False when it
    cannot be read or is a FIFO/device: never blocks)."""
    try:
        return read_head(path, len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except InputError:
        return False


def is_report_file(path: str | Path) -> bool:
    """True for ``*.nsys-rep`` / ``*.qdrep`` names (case-insensitive)."""
    return str(path).lower().endswith(REP_SUFFIXES)


def sniff_format(path: str | Path) -> Format:
    """Return the format of ``path`` or raise ``InputError`` (exit 3) saying why not."""
    p = Path(path)
    try:
        exists, is_dir = p.exists(), p.is_dir()
    except OSError as exc:  # e.g. a name too long, a broken mount
        raise InputError(p, f"cannot access ({exc.strerror or exc})") from None
    if not exists:
        raise InputError(p, "no such file", "check the path (nsys exports end in .sqlite)")
    if is_dir:
        raise InputError(p, "is a directory",
                         "pass one export file; use `nsys-diag batch DIR` for directories")
    head = read_head(p, SNIFF_BYTES)  # InputError for an unreadable or non-regular file
    if head.startswith(SQLITE_MAGIC):
        return Format.NSYS_SQLITE
    if is_report_file(p):
        return Format.NSYS_REP
    if not head:
        raise UnrecognizedFormatError(p, "empty file",
                                      f"export the report again: `{EXPORT_HINT}`")
    if str(p).lower().endswith(".qdstrm"):
        raise UnrecognizedFormatError(
            p, "raw Nsight Systems stream (.qdstrm), not an export",
            "convert it with nsys's QdstrmImporter to .nsys-rep, then "
            f"`{EXPORT_HINT}`")
    from nsys_diag.loaders.ncu_csv import looks_like_ncu_csv  # owned by the ncu loader work

    if looks_like_kineto(head):
        return Format.KINETO
    if looks_like_ncu_csv(head):
        return Format.NCU_CSV
    if head.startswith(SQLITE_MAGIC[:6]) or str(p).lower().endswith((".sqlite", ".db")):
        reason = "not a SQLite database (no SQLite header: damaged, or another format)"
    elif str(p).lower().endswith(KINETO_SUFFIXES) or head.lstrip()[:1] in (b"{", b"["):
        reason = "JSON that is not a PyTorch profiler (Kineto) trace (no traceEvents object)"
    else:
        reason = "not an nsys SQLite export nor an ncu CSV"
    raise UnrecognizedFormatError(
        p, reason, f"expected an nsys SQLite export (`{EXPORT_HINT}`), an ncu CSV "
        f"(`{NCU_HINT}`) or a torch.profiler trace (`{KINETO_HINT}`)")
