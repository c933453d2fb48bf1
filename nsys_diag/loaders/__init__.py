"""Loaders: files → TraceBundle (validated frames, see ``nsys_diag.model.contracts``).

``load_trace(path)`` sniffs the format by content (SQLite magic, ncu CSV header), never trusts the
extension alone, and raises typed ``InputError``s (exit code 3) with path, reason and hint.
"""
from __future__ import annotations

from pathlib import Path

from nsys_diag.model.bundle import TraceBundle
from nsys_diag.loaders.sniff import Format, sniff_format


def load_trace(path: str | Path, *, ncu: str | Path | None = None,
               kernel_detail: bool = True) -> TraceBundle:
    """Load an nsys SQLite export or an ncu CSV. ``ncu`` adds an ncu CSV to an nsys bundle.

    ``kernel_detail=False``: skip the kernel columns no analysis reads (context, stream, launch
    configuration; they hold -1; see ``load_nsys_sqlite``) — faster and smaller, for ``analyze``.
    """
    fmt = sniff_format(path)
    if fmt is Format.NSYS_SQLITE:
        from nsys_diag.loaders.nsys_sqlite import load_nsys_sqlite

        bundle = load_nsys_sqlite(path, kernel_detail=kernel_detail)
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
