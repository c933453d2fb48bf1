"""Value checks of option values that parse but cannot be used (``app/options.py`` calls these).

* A ``--window`` time must be finite and within the timeline's integer range: ``1e400s`` (∞ as a
  float) or ``1e30s`` (beyond int64 nanoseconds) are usage errors (exit 2), never an
  ``OverflowError``.
* ``--chunk-rows`` is at least ``MIN_CHUNK_ROWS`` (each chunk is one SQLite pass: a chunk of one
  row would run for minutes on a small export).
* Option files (``--thresholds``, ``--phase-map``) are regular files of at most
  ``MAX_OPTION_FILE_BYTES`` (``model/safe_files.py``): a FIFO or ``/dev/zero`` cannot hang or
  exhaust memory; anything else is a usage error naming the option.
"""
from __future__ import annotations

import math

from nsys_diag.model.errors import InputError, UsageError
from nsys_diag.model.safe_files import MAX_OPTION_FILE_BYTES, read_capped

MAX_TIME_NS = 2**62
"""Largest ``--window`` time (ns, ~146 years): the timeline's int64 with headroom for sums."""

MIN_CHUNK_ROWS = 100
"""Smallest ``--chunk-rows`` accepted (kernel + CUDA API rows per streamed chunk)."""


def checked_time_ns(value_ns: float, text: str) -> int:
    """``value_ns`` (a float from ``--window``) as integer nanoseconds; ``UsageError`` when it is
    not finite or beyond ``MAX_TIME_NS``."""
    if not math.isfinite(value_ns) or abs(value_ns) > MAX_TIME_NS:
        raise UsageError(f"--window: time {text!r} is out of range (at most "
                         f"{MAX_TIME_NS / 1e9:,.0f} s)")
    return int(round(value_ns))


def checked_chunk_rows(rows: int | None) -> int | None:
    """``--chunk-rows`` as given (None: planned from the budget); ``UsageError`` below
    ``MIN_CHUNK_ROWS``."""
    if rows is not None and int(rows) < MIN_CHUNK_ROWS:
        raise UsageError(f"--chunk-rows {rows}: at least {MIN_CHUNK_ROWS} rows per chunk "
                         "(or leave it out: chunks are planned from the memory budget)")
    return rows


def read_option_file(path: str, what: str) -> str:
    """The text of the option file ``path`` (UTF-8); ``UsageError`` naming ``what`` when it is
    unreadable, not a regular file, larger than ``MAX_OPTION_FILE_BYTES`` or not UTF-8."""
    try:
        raw = read_capped(path, MAX_OPTION_FILE_BYTES, what)
    except InputError as exc:
        raise UsageError(f"{what} {path}: {exc.reason}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") \
            from None
