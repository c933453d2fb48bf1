"""Format detection by content. Owned by the loader work (issue: Foundation)."""
from __future__ import annotations

import enum
from pathlib import Path

from nsys_diag.model.errors import InputError, UnrecognizedFormatError

SQLITE_MAGIC = b"SQLite format 3\x00"


class Format(enum.Enum):
    NSYS_SQLITE = "nsys-sqlite"
    NCU_CSV = "ncu-csv"


def sniff_format(path: str | Path) -> Format:
    """Return the format of ``path`` or raise ``InputError`` (exit 3) saying why not."""
    p = Path(path)
    if not p.exists():
        raise InputError(p, "no such file")
    if p.is_dir():
        raise InputError(p, "is a directory", "pass one export file; use `nsys-diag batch DIR` for directories")
    try:
        with p.open("rb") as fh:
            head = fh.read(4096)
    except OSError as exc:
        raise InputError(p, f"cannot open ({exc.strerror or exc})") from None
    if head.startswith(SQLITE_MAGIC):
        return Format.NSYS_SQLITE
    if not head:
        raise UnrecognizedFormatError(p, "empty file", "export with `nsys export --type sqlite REPORT.nsys-rep`")
    from nsys_diag.loaders.ncu_csv import looks_like_ncu_csv  # owned by the ncu loader work

    if looks_like_ncu_csv(head):
        return Format.NCU_CSV
    raise UnrecognizedFormatError(p, "not an nsys SQLite export nor an ncu CSV")
