"""What one load reads: the request ``load_trace`` takes instead of ten keyword flags.

A frozen value built by the application (``app/analyze.py`` from its memory plan,
``app/stream.py`` for the skeleton and each chunk) and read by the loaders; pandas-free, so the
CLI can build one without importing the readers.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nsys_diag.loaders.sniff import Format
    from nsys_diag.loaders.zone_map import ZoneMap


@dataclass(frozen=True, eq=False)
class LoadRequest:
    """One load of one input (all optional; the default reads everything).

    ``ncu``: an ncu CSV attached to an nsys bundle. ``kernel_detail=False``: skip the kernel
    columns no analysis reads (context, launch configuration, graph node; they hold -1).
    ``time_window`` (session-timeline ns) / ``row_fraction`` (0–1, the middle share of the kernel
    and API rows): read one window of an nsys export only (``loaders/read_window.py``); ignored
    for ncu CSVs. ``skeleton``: no event tables but NVTX; ``chunk``: one chunk of a streamed read,
    ``zones`` its zone map; ``nvtx=False``: no NVTX read, ``known_threads`` the named threads
    instead (``load_nsys_sqlite``). ``format``: the input's format when the caller has sniffed it
    already (the file is then not sniffed again)."""

    ncu: str | Path | None = None
    kernel_detail: bool = True
    time_window: tuple[int, int] | None = None
    row_fraction: float | None = None
    skeleton: bool = False
    chunk: bool = False
    zones: ZoneMap | None = None
    nvtx: bool = True
    known_threads: Any = None
    format: Format | None = None

    @classmethod
    def of(cls, request: LoadRequest | None, flags: dict[str, Any]) -> LoadRequest:
        """``request``, or one built from the keyword ``flags`` of the older call form (an
        unknown flag is a ``TypeError``; both at once too)."""
        if request is None:
            return cls(**flags)
        if flags:
            raise TypeError(f"pass either a LoadRequest or keyword flags, not both: {sorted(flags)}")
        return request
