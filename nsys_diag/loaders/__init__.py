"""Loaders: files → TraceBundle (validated frames, see ``nsys_diag.model.contracts``).

``load_trace(path, request)`` sniffs the format by content (SQLite magic, ncu CSV header, a
Kineto JSON object), never trusts the extension alone, and raises typed ``InputError``s (exit
code 3) with path, reason and hint. ``request`` (``loaders/load_request.LoadRequest``) says what to read.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsys_diag.loaders.load_request import LoadRequest
from nsys_diag.loaders.sniff import Format, sniff_format

if TYPE_CHECKING:  # pandas-free import of this package (loaders/prefetch.py)
    from nsys_diag.model.bundle import TraceBundle


def load_trace(path: str | Path, request: LoadRequest | None = None, /,
               **flags: Any) -> TraceBundle:
    """Load an nsys SQLite export, an ncu CSV or a PyTorch profiler (Kineto) trace as
    ``request`` says (``LoadRequest``: an attached ncu CSV, a window, the skeleton or a chunk of
    a streamed read…); the default reads it all.

    The older call form — the request's fields as keywords (``load_trace(path, ncu=…,
    time_window=…)``) — still works; an unknown keyword is a ``TypeError``.
    """
    req = LoadRequest.of(request, flags)
    fmt = req.format if req.format is not None else sniff_format(path)
    if fmt is Format.NSYS_SQLITE:
        from nsys_diag.loaders.nsys_sqlite import load_nsys_sqlite

        bundle = load_nsys_sqlite(path, req)
    elif fmt is Format.NSYS_REP:
        from nsys_diag.loaders.nsys_rep import load_nsys_rep

        bundle = load_nsys_rep(path)
    elif fmt is Format.KINETO:
        from nsys_diag.loaders.kineto import load_kineto

        bundle = load_kineto(path)
    elif fmt is Format.NCU_CSV:
        from nsys_diag.loaders.ncu_csv import load_ncu_csv

        bundle = load_ncu_csv(path)
    else:  # pragma: no cover - sniff_format raises for everything else
        raise AssertionError(fmt)
    if req.ncu is not None:
        from nsys_diag.loaders.ncu_csv import attach_ncu

        bundle = attach_ncu(bundle, req.ncu)
    return bundle


__all__ = ["load_trace", "LoadRequest", "Format", "sniff_format"]
