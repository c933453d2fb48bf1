"""How much memory analysing a file will need, estimated from file facts before anything is read.

Only the size, the first bytes and (for ncu CSVs) the comma count of a file are looked at. The
numbers are measurements (peak RSS of ``nsys-diag analyze``), documented where they are defined.
The *policy* built on them — whole, middle window or streamed (``plan_memory``), the
``--max-memory`` refusal, the ``--memory-budget`` default and minimum — is the application's
(``nsys_diag/app/memory_policy.py``, ``app/options.py``).
"""
from __future__ import annotations

import functools
from pathlib import Path

from nsys_diag.loaders.sniff import GZIP_MAGIC, SQLITE_MAGIC, looks_like_kineto
from nsys_diag.model.errors import InputError
from nsys_diag.model.safe_files import open_regular

LOAD_MEMORY_FACTOR = 3.0
"""Peak memory of analysing an SQLite export ≈ 3 × its file size on top of ``BASE_MEMORY_BYTES``
(measured peak RSS of ``analyze``: 2.6× on a 277 MB / 2M-kernel bench export, 2.9× on 69 MB)."""

BASE_MEMORY_BYTES = 150 * 2**20
"""Interpreter, numpy/pandas/pyarrow and the report code (measured 115 MiB before any input)."""

JSON_MEMORY_FACTOR = 6.0
"""Peak memory of analysing a PyTorch profiler (Kineto) JSON ≈ 6 × its (decompressed) size on top
of ``BASE_MEMORY_BYTES``: the parsed events are Python objects (measured peak RSS of ``analyze``
with the standard json module: 331 MiB for a 33.6 MiB legacy-schema trace of 45,600 kernels,
1,150 MiB for 168 MiB, 3,081 MiB for 484 MiB)."""

JSON_PIECES_MEMORY_FACTOR = 3.0
"""The same for a trace read in pieces (text over ``kineto_stream.WHOLE_TEXT_BYTES``): only the
events' columns and one piece's parsed events are held (measured 892 MiB for 352 MB of text,
3,016 MiB when that trace was parsed whole)."""

GZIP_JSON_RATIO = 10
"""Assumed decompression ratio of a ``.json.gz`` trace (Kineto text compresses ≈ 8–12×)."""

CSV_BYTES_PER_CELL = {"details": 100, "raw": 400}
"""Peak bytes per ncu CSV cell (measured 90 B for the long ``details`` page and 345 B for the wide
``raw`` page, which is melted into one row per cell)."""

CSV_BYTES_FACTOR = {"details": 8, "raw": 16}
"""Peak bytes per byte of an ncu CSV whose cells are long (kernel names of thousands of characters:
measured 7.3× a 221 MiB ``details`` file, 15× a 10 MiB ``raw`` one, where the per-cell figure
said 0.6× and 5×). The estimate is the larger of the per-cell and the per-byte figure."""


def format_bytes(n: int) -> str:
    """Bytes for a message: ``512 KiB``, ``300 MiB``, ``2.50 GiB``."""
    for unit, k in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= k:
            return f"{n / k:.2f} {unit}" if unit == "GiB" else f"{n / k:.0f} {unit}"
    return f"{n} B"


def estimate_memory(path: str) -> tuple[int, str] | None:
    """(bytes, how) of the input-dependent peak memory of analysing ``path``; None when the file
    cannot be read or is neither SQLite nor text (the loader then says why).

    Remembered per (path, size, mtime): the memory budget and ``--max-memory`` both ask, and an
    ncu CSV is estimated by scanning it whole."""
    p = Path(path)
    if p.name.lower().endswith((".nsys-rep", ".qdrep")):
        return None  # converted first; the exported SQLite is checked by its own size
    try:
        st = p.stat()
    except OSError:
        return None
    return _estimate_file(str(p), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _estimate_file(path: str, size: int, _mtime_ns: int) -> tuple[int, str] | None:
    """``estimate_memory`` of one version of a file (the cache key carries size and mtime)."""
    p = Path(path)
    try:
        with open_regular(p) as fh:  # a FIFO or /dev/zero: no estimate (the loader refuses it)
            head = fh.read(65536)
            if head.startswith(SQLITE_MAGIC):
                return (int(size * LOAD_MEMORY_FACTOR),
                        f"{LOAD_MEMORY_FACTOR:g} × the {format_bytes(size)} SQLite file")
            if looks_like_kineto(head):
                return _kineto_estimate(size * (GZIP_JSON_RATIO if head.startswith(GZIP_MAGIC)
                                                else 1))
            cells, block = head.count(b","), head
            while block:
                block = fh.read(1 << 22)
                cells += block.count(b",")
    except (OSError, InputError):
        return None
    layout = "details" if b"Metric Name" in head else "raw"
    by_cells, by_bytes = cells * CSV_BYTES_PER_CELL[layout], size * CSV_BYTES_FACTOR[layout]
    if by_bytes > by_cells:
        return (by_bytes, f"{CSV_BYTES_FACTOR[layout]} × the {format_bytes(size)} CSV file "
                          f"(long cells, {layout} page)")
    return (by_cells, f"{cells:,} CSV cells × {CSV_BYTES_PER_CELL[layout]} B ({layout} page)")


def _kineto_estimate(text: int) -> tuple[int, str]:
    """The estimate of a Kineto trace of ``text`` bytes of JSON: parsed whole, or in pieces."""
    from nsys_diag.loaders.kineto_stream import WHOLE_TEXT_BYTES  # numpy: a Kineto input only

    if text > WHOLE_TEXT_BYTES:
        return (int(text * JSON_PIECES_MEMORY_FACTOR), f"{JSON_PIECES_MEMORY_FACTOR:g} × the "
                f"{format_bytes(text)} JSON text (read in pieces)")
    return int(text * JSON_MEMORY_FACTOR), f"{JSON_MEMORY_FACTOR:g} × the {format_bytes(text)} JSON text"
