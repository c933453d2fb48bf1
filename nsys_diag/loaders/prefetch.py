"""Start the biggest reads of an nsys export before pandas is even imported.

``analyze`` spends ~0.4 s importing pandas before its loader can ask for a single row, while the
SQLite → Arrow reads of the kernel, CUDA API and GPU-metric tables are plain C that needs only
pyarrow and ADBC. ``start_prefetch(path)`` (pandas-free: this module, ``nsys_db``, ``read_plan``
and ``nsys_specs`` import no pandas) builds the :class:`~nsys_diag.loaders.read_plan.ReadPlan`
of each read the loader will issue (``nsys_specs`` column specs) and runs its first SQL on a
background thread, each with its own read-only ADBC connection (``nsys_db.read_arrow``). The
results wait in ``prefetch_store``, keyed by (file, plan); ``NsysDb.read`` takes a finished (or
still running) result for the plan it is about to read instead of re-running it. The row count of
every table (``NsysDb.counts``, for the report's table list) is taken the same way. Whatever is
not taken is dropped by ``clear_prefetch`` (and counted, see ``prefetch_store.stats``).

Only the unfiltered whole-table reads of ``analyze`` are prefetched (no ``--window`` / memory
window, no kernel detail). Any problem (no ADBC, odd schema, a damaged file) just means no
prefetch: the loader then reads, and reports errors, as it always does.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import Future
from pathlib import Path

from nsys_diag.loaders import nsys_specs as S
from nsys_diag.loaders import prefetch_store as store
from nsys_diag.loaders.nsys_db import NsysDb, read_arrow, ro_uri
from nsys_diag.loaders.read_plan import ReadPlan

_PENDING = store._PENDING  # the cache itself (tests look at it)
COUNTS_QUERY = store.COUNTS_KEY
"""Key of the background ``NsysDb.counts()`` (``nsys_meta.table_counts`` takes it)."""
PREFETCH_ENV = "NSYS_DIAG_NO_PREFETCH"
"""Set to any value to disable prefetching (the loader reads everything itself)."""


def analyze_plans(db: NsysDb, kernel_detail: bool = False) -> list[ReadPlan]:
    """The plans ``load_trace(path, kernel_detail=...)`` reads for the big tables (API, kernels,
    GPU metrics), as far as the file has them (``analyze`` loads the kernel detail with
    ``--ncu`` only: the join compares launch configurations)."""
    out = []
    consts = S.kernel_constants(db, db.columns(S.KERNEL_TABLE)) if db.has(S.KERNEL_TABLE) else {}
    for table, required, spec, where in (
        (S.RUNTIME_TABLE, S.API_REQUIRED, S.api_spec, S.api_where),
        (S.KERNEL_TABLE, S.GPU_OP_REQUIRED,
         lambda c: S.kernel_spec(c, detail=kernel_detail, constants=consts),
         lambda c: S.constants_where(consts)),
        (S.GPU_METRICS_TABLE, S.GPU_METRICS_REQUIRED, S.gpu_metrics_spec, None),
    ):
        actual = db.table(table)
        cols = db.columns(table)
        if actual is None or not set(required) <= set(cols):
            continue  # the loader explains what is missing
        out.append(ReadPlan.of(actual, spec(cols), where(cols) if where else ""))
    return out


def _plans(path: str | Path, kernel_detail: bool) -> list[ReadPlan]:
    with NsysDb(path) as db:
        return analyze_plans(db, kernel_detail) if db.reader == "adbc" else []


def _count_rows(path: str | Path) -> dict[str, int]:
    """``count(*)`` of every table on a connection of its own (C work, off the critical path)."""
    with NsysDb(path) as db:
        return db.counts()


def start_prefetch(path: str | Path, kernel_detail: bool = False) -> int:
    """Start reading the big tables of ``path`` (and counting every table's rows) in the
    background, the kernels with or without ``kernel_detail`` as the load will ask; returns how
    many jobs were started (0 when prefetching is off or not possible)."""
    if os.environ.get(PREFETCH_ENV) or os.environ.get("NSYS_DIAG_NO_ADBC"):
        return 0
    try:
        plans = _plans(path, kernel_detail)
        uri = ro_uri(path)
    except Exception:  # anything odd: the loader reads (and reports) it itself
        return 0
    started = 0
    for key in [*plans, COUNTS_QUERY]:
        fut: Future = Future()
        if not store.put(path, key, fut):
            continue

        def run(fut=fut, key=key) -> None:
            try:
                fut.set_result(_count_rows(path) if key == COUNTS_QUERY else
                               read_arrow(uri, key.render().first_sql))
            except BaseException as exc:  # noqa: BLE001 - handed to the taker, which re-reads
                fut.set_exception(exc)

        threading.Thread(target=run, name="nsys-diag-prefetch", daemon=True).start()
        started += 1
    return started


take_prefetched = store.take
"""``take_prefetched(path, plan)``: the prefetched result of ``plan`` on ``path``, or None."""


def clear_prefetch(path: str | Path | None = None) -> None:
    """Forget prefetched results nobody took (of ``path``, or all); running reads finish on
    their own and are dropped (counted as unclaimed in ``prefetch_store.stats``)."""
    store.clear(path)
