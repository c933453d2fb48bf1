"""Start the biggest reads of an nsys export before pandas is even imported.

``analyze`` spends ~0.4 s importing pandas before its loader can ask for a single row, while the
SQLite → Arrow reads of the kernel, CUDA API and GPU-metric tables are plain C that needs only
pyarrow and ADBC. ``start_prefetch(path)`` (pandas-free: this module, ``nsys_db`` and
``nsys_specs`` import no pandas) builds exactly the SELECTs the loader will issue
(``nsys_specs`` + ``nsys_db.select_plan``) and runs them on background threads, each with its own
read-only ADBC connection (``nsys_db.read_arrow``); ``NsysDb._read_adbc`` then takes a finished (or still running) result
instead of re-running the same query. The row count of every table (``NsysDb.counts``, for the
report's table list) is taken the same way. Whatever is not taken is dropped by
``clear_prefetch``.

Only the unfiltered whole-table reads of ``analyze`` are prefetched (no ``--window`` / memory
window, no kernel detail). Any problem (no ADBC, odd schema, a damaged file) just means no
prefetch: the loader then reads, and reports errors, as it always does.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import Future
from pathlib import Path

_LOCK = threading.Lock()
_PENDING: dict[tuple[str, str], Future] = {}
COUNTS_QUERY = "-- count(*) of every table"
"""Key of the background ``NsysDb.counts()`` (``nsys_meta.table_counts`` takes it)."""
PREFETCH_ENV = "NSYS_DIAG_NO_PREFETCH"
"""Set to any value to disable prefetching (the loader reads everything itself)."""


def _key(path: str | Path, sql: str) -> tuple[str, str]:
    return str(Path(path).resolve()), sql


def _queries(path: str | Path) -> list[str]:
    """The fast SELECTs ``load_trace(path, kernel_detail=False)`` issues for the big tables."""
    from nsys_diag.loaders import nsys_specs as S
    from nsys_diag.loaders.nsys_db import NsysDb, select_plan

    out = []
    with NsysDb(path) as db:
        if db.reader != "adbc":
            return []
        for table, required, spec, where in (
            (S.RUNTIME_TABLE, S.API_REQUIRED, S.api_spec, S.api_where),
            (S.KERNEL_TABLE, S.GPU_OP_REQUIRED, lambda c: S.kernel_spec(c, detail=False), None),
            (S.GPU_METRICS_TABLE, S.GPU_METRICS_REQUIRED, S.gpu_metrics_spec, None),
        ):
            actual = db.table(table)
            cols = db.columns(table)
            if actual is None or not set(required) <= set(cols):
                continue  # the loader explains what is missing
            plan = select_plan(actual, spec(cols), where(cols) if where else "")
            if plan.fast_sql:
                out.append(plan.fast_sql)
    return out


def _count_rows(path: str | Path) -> dict[str, int]:
    """``count(*)`` of every table on a connection of its own (C work, off the critical path)."""
    from nsys_diag.loaders.nsys_db import NsysDb

    with NsysDb(path) as db:
        return db.counts()


def start_prefetch(path: str | Path) -> int:
    """Start reading the big tables of ``path`` (and counting every table's rows) in the
    background; returns how many jobs were started (0 when prefetching is off or not
    possible)."""
    if os.environ.get(PREFETCH_ENV) or os.environ.get("NSYS_DIAG_NO_ADBC"):
        return 0
    try:
        from nsys_diag.loaders.nsys_db import read_arrow, ro_uri

        queries = _queries(path)
        uri = ro_uri(path)
    except Exception:  # anything odd: the loader reads (and reports) it itself
        return 0
    started = 0
    for sql in queries + [COUNTS_QUERY]:
        fut: Future = Future()
        key = _key(path, sql)
        with _LOCK:
            if key in _PENDING:
                continue
            _PENDING[key] = fut

        def run(fut=fut, sql=sql) -> None:
            try:
                fut.set_result(_count_rows(path) if sql == COUNTS_QUERY else
                               read_arrow(uri, sql))
            except BaseException as exc:  # noqa: BLE001 - handed to the taker, which re-reads
                fut.set_exception(exc)

        threading.Thread(target=run, name="nsys-diag-prefetch", daemon=True).start()
        started += 1
    return started


def take_prefetched(path: str | Path, sql: str):
    """The prefetched ``pyarrow.Table`` of exactly ``sql`` on ``path`` (waiting for it if it is
    still being read), or None (not prefetched, or the prefetch failed). Each result is handed
    out once."""
    with _LOCK:
        fut = _PENDING.pop(_key(path, sql), None)
    if fut is None:
        return None
    try:
        return fut.result()
    except Exception:
        return None


def clear_prefetch(path: str | Path | None = None) -> None:
    """Forget prefetched results nobody took (of ``path``, or all); running reads finish on
    their own and are dropped."""
    with _LOCK:
        for key in [k for k in _PENDING if path is None or k[0] == str(Path(path).resolve())]:
            del _PENDING[key]
