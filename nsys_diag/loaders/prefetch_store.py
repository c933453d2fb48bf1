"""The prefetch cache: background read results, keyed by (file, :class:`ReadPlan`).

``loaders/prefetch.py`` puts a future per plan it starts (the result of the plan's first SQL,
``SelectPlan.first_sql``); the reader (``NsysDb.read``, ``nsys_meta.table_counts``) takes it by
the plan it is about to read. Keys are plan *values*, so the prefetcher and the reader agree
exactly when they mean the same read. A disagreement is observable, never silent: :func:`stats`
counts hits, misses (a take of a plan whose table has a prefetch outstanding under another plan:
the two drifted) and ``unclaimed`` results (prefetched, never taken, dropped by :func:`clear`);
each miss and unclaimed result is logged at DEBUG on ``nsys_diag.prefetch``. This module imports
nothing of the package (no cycle: ``nsys_db`` takes from it, ``prefetch`` fills it).
"""
from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Hashable

_LOG = logging.getLogger("nsys_diag.prefetch")
_LOCK = threading.Lock()
_PENDING: dict[tuple[str, Hashable], Future] = {}
COUNTS_KEY = "count(*) of every table"
"""Key of the background ``NsysDb.counts()`` (``nsys_meta.table_counts`` takes it)."""


@dataclass
class PrefetchStats:
    """Counters since the last :func:`reset_stats`."""

    started: int = 0
    hits: int = 0
    misses: int = 0
    unclaimed: int = 0


_STATS = PrefetchStats()


def _file(path: str | Path) -> str:
    return str(Path(path).resolve())


def put(path: str | Path, key: Hashable, fut: Future) -> bool:
    """Register the future of ``key`` on ``path``; False when one is already registered."""
    k = (_file(path), key)
    with _LOCK:
        if k in _PENDING:
            return False
        _PENDING[k] = fut
        _STATS.started += 1
    return True


def take(path: str | Path, key: Hashable) -> Any:
    """The prefetched result of ``key`` on ``path`` (waiting for it if it is still being read),
    or None (not prefetched, or the prefetch failed). Each result is handed out once."""
    f = _file(path)
    with _LOCK:
        fut = _PENDING.pop((f, key), None)
        if fut is None:
            table = getattr(key, "table", None)
            if table is not None and any(k[0] == f and getattr(k[1], "table", None) == table
                                         for k in _PENDING):
                _STATS.misses += 1
                _LOG.debug("prefetch miss on %s: %r", f, key)
            return None
        _STATS.hits += 1
    try:
        return fut.result()
    except Exception:
        return None


def clear(path: str | Path | None = None) -> int:
    """Forget results nobody took (of ``path``, or all); running reads finish on their own and
    are dropped. Returns how many were dropped (each counted as ``unclaimed``)."""
    f = None if path is None else _file(path)
    with _LOCK:
        keys = [k for k in _PENDING if f is None or k[0] == f]
        for k in keys:
            del _PENDING[k]
            _LOG.debug("prefetched read never taken on %s: %r", k[0], k[1])
        _STATS.unclaimed += len(keys)
    return len(keys)


def pending() -> int:
    """How many prefetched results wait to be taken."""
    with _LOCK:
        return len(_PENDING)


def stats() -> PrefetchStats:
    """A copy of the counters."""
    with _LOCK:
        return PrefetchStats(**vars(_STATS))


def reset_stats() -> None:
    with _LOCK:
        for name in vars(_STATS):
            setattr(_STATS, name, 0)
