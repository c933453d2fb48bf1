"""Loaders: files → TraceBundle (validated frames, see ``nsys_diag.model.contracts``).

``load_trace(path)`` sniffs the format by content (SQLite magic, ncu CSV header), never trusts the
extension alone, and raises typed ``InputError``s (exit code 3) with path, reason and hint.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from nsys_diag.loaders.sniff import Format, sniff_format

if TYPE_CHECKING:  # pandas-free import of this package (loaders/prefetch.py)
    from nsys_diag.loaders.zone_map import ZoneMap
    from nsys_diag.model.bundle import TraceBundle


def load_trace(path: str | Path, *, ncu: str | Path | None = None,
               kernel_detail: bool = True, time_window: tuple[int, int] | None = None,
               row_fraction: float | None = None, skeleton: bool = False,
               chunk: bool = False, zones: ZoneMap | None = None,
               nvtx: bool = True, known_threads=None) -> TraceBundle:
    """Load an nsys SQLite export or an ncu CSV. ``ncu`` adds an ncu CSV to an nsys bundle.

    ``kernel_detail=False``: skip the kernel columns no analysis reads (context, stream, launch
    configuration; they hold -1; see ``load_nsys_sqlite``) — faster and smaller, for ``analyze``.
    ``time_window`` / ``row_fraction``: read one window of an nsys export only (bounded memory,
    ``loaders/read_window.py``); ignored for ncu CSVs. ``skeleton``: no event tables but NVTX;
    ``chunk``: one chunk of a streamed read, ``zones`` its zone map; ``nvtx=False``: no NVTX
    read, ``known_threads`` the named threads instead (``load_nsys_sqlite``).
    """
    fmt = sniff_format(path)
    if fmt is Format.NSYS_SQLITE:
        from nsys_diag.loaders.nsys_sqlite import load_nsys_sqlite

        bundle = load_nsys_sqlite(path, kernel_detail=kernel_detail, time_window=time_window,
                                  row_fraction=row_fraction, skeleton=skeleton, chunk=chunk,
                                  zones=zones, nvtx=nvtx, known_threads=known_threads)
    elif fmt is Format.NSYS_REP:
        from nsys_diag.loaders.nsys_rep import load_nsys_rep

        bundle = load_nsys_rep(path)
    elif fmt is Format.NCU_CSV:
        from nsys_diag.loaders.ncu_csv import load_ncu_csv

        bundle = load_ncu_csv(path)
    else:  # pragma: no cover - sniff_format raises for everything else
        raise AssertionError(fmt)
    if ncu is not None:
        from nsys_diag.loaders.ncu_csv import attach_ncu

        bundle = attach_ncu(bundle, ncu)
    return bundle


__all__ = ["load_trace", "Format", "sniff_format"]
