"""Host-side tables of an nsys export → OSRT and CPU_SAMPLES frames (NSYS_SQLITE.md §2.13–2.14).

* ``OSRT_API`` (``-t osrt``): one row per OS runtime library call (``read``, ``poll``,
  ``pthread_cond_wait`` …), name via StringIds. Layout drift handled by selecting columns by name:
  2021.2.1 files carry an extra ``correlationId``; files before 3.16.1 have no ``argumentsId``;
  neither is read. The ``OS runtime libraries profiling started/finished`` markers
  (``eventClass`` 31/32, zero length) are not calls and are dropped in SQL.
* ``COMPOSITE_EVENTS`` + ``SAMPLING_CALLCHAINS`` (``--sample=process-tree``): one row per CPU
  sample; the top frame is the ``symbol`` (a StringIds id) of the stackDepth-0 callchain row
  (2.9.1's extra ``symbolName`` TEXT column is NULL in every real file and is not read). The
  thread state is ``ENUM_SAMPLING_THREAD_STATE.name`` lower-cased, from the enum table when the
  export has one, else from the numbering documented in §5 (stable across versions).

Both honour the read window (``read_window.ReadWindow``: calls overlapping it, samples inside it)
and cost nothing on exports without the tables (one ``sqlite_master`` lookup, already cached).
Rows are returned in file order: nothing here assumes timestamp order.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from nsys_diag.loaders.nsys_db import NsysDb
from nsys_diag.loaders.nsys_specs import NULL_TIME, OSRT_TABLE, SAMPLES_TABLE, opt_col
from nsys_diag.loaders.nsys_strings import StringTable, categorical, decode_global_tid
from nsys_diag.loaders.read_plan import Col, and_where
from nsys_diag.loaders.read_window import ReadWindow
from nsys_diag.model import contracts as C

CALLCHAINS_TABLE = "SAMPLING_CALLCHAINS"
THREAD_STATE_ENUM = "ENUM_SAMPLING_THREAD_STATE"

OSRT_MARKER_CLASSES = (31, 32)
"""``ENUM_NSYS_EVENT_CLASS`` OS_RUNTIME_START / OS_RUNTIME_FINISH: profiling markers, not calls."""

THREAD_STATES = {0: "unknown", 1: "running", 2: "interruptible", 3: "uninterruptible",
                 4: "stopped", 5: "terminated", 6: "unscheduled", 7: "waiting", 8: "osruntime",
                 9: "initialized", 10: "transition"}
"""``ENUM_SAMPLING_THREAD_STATE`` (id → name, lower case), NSYS_SQLITE.md §5 — used when the export
has no enum table (2022.2 and older)."""


def _time_cols() -> list[Col]:
    return [Col("start", "int", fill=NULL_TIME, strict=True)]


def _thread_frame(gtid: np.ndarray) -> dict:
    gpid, pid, tid = decode_global_tid(gtid)
    return {"global_tid": gtid, "global_pid": gpid, "pid": pid, "tid": tid}


def read_osrt(db: NsysDb, strings: StringTable, window: ReadWindow | None = None
              ) -> pd.DataFrame:
    """OS runtime calls (empty frame when ``OSRT_API`` is absent or lacks start/end/nameId);
    ``window``: only the calls overlapping it. Rows with a NULL/negative-length time are dropped."""
    if not db.has(OSRT_TABLE):
        return C.OSRT.empty()
    cols = db.columns(OSRT_TABLE)
    if not {"start", "end", "nameId"} <= set(cols):
        return C.OSRT.empty()
    spec = _time_cols() + [Col("end", "int", fill=0, strict=True), opt_col(cols, "globalTid"),
                           Col("nameId", "int")]
    classes = ", ".join(str(c) for c in OSRT_MARKER_CLASSES)
    where = and_where(f'"eventClass" NOT IN ({classes})' if "eventClass" in cols else "",
                      window.overlap(table=OSRT_TABLE) if window is not None else "")
    d = db.read(OSRT_TABLE, spec, where=where)
    ok = (d.ints("start") > NULL_TIME) & (d.ints("end") >= d.ints("start"))
    if not ok.all():
        d = d.filtered(ok)
    df = pd.DataFrame(copy=False, data={
        "start_ns": d.ints("start"), "end_ns": d.ints("end"), **_thread_frame(d.ints("globalTid")),
        "name": strings.categorical(d.ints("nameId"))})
    return C.OSRT.validate(df, source=str(db.path))


def _thread_states(db: NsysDb, ids: np.ndarray) -> pd.Categorical:
    """Labels of ``threadState`` ids (-1 = no column / NULL → '')."""
    names = dict(THREAD_STATES)
    if db.has(THREAD_STATE_ENUM) and {"id", "name"} <= set(db.columns(THREAD_STATE_ENUM)):
        rows = db.rows(f'SELECT CAST("id" AS INTEGER), CAST("name" AS TEXT) FROM '
                       f'"{db.table(THREAD_STATE_ENUM)}"')
        names.update({int(i): str(n).lower() for i, n in rows if i is not None and n})
    codes, uniq = pd.factorize(np.asarray(ids, np.int64), use_na_sentinel=False)
    labels = ["" if int(u) < 0 else names.get(int(u), f"state#{int(u)}")
              for u in np.asarray(uniq).tolist()]
    return categorical(np.asarray(codes, np.int64), labels)


def _top_frames(db: NsysDb, strings: StringTable, sample_ids: np.ndarray,
                window: ReadWindow | None) -> pd.Categorical:
    """Symbol of the stackDepth-0 frame of each sample ('' without a callchain or string)."""
    n = sample_ids.size
    cols = db.columns(CALLCHAINS_TABLE)
    if not n or not {"id", "symbol", "stackDepth"} <= set(cols):
        return categorical(np.full(n, -1, np.int64), [])
    where = '"stackDepth" = 0'
    if window is not None:  # only the callchains of the window's samples
        inside = window.instant('"start"', table=SAMPLES_TABLE)
        where = and_where(where, f'"id" IN (SELECT "id" FROM "{db.table(SAMPLES_TABLE)}" '
                                 f'WHERE {inside})')
    cc = db.read(CALLCHAINS_TABLE, [Col("id", "int"), Col("symbol", "int")], where=where)
    cid, sym = cc.ints("id"), cc.ints("symbol")
    if cid.size and not (cid[1:] >= cid[:-1]).all():  # file order is not promised
        o = np.argsort(cid, kind="stable")
        cid, sym = cid[o], sym[o]
    sym_of = np.full(n, -1, np.int64)
    if cid.size:
        pos = np.minimum(np.searchsorted(cid, sample_ids), cid.size - 1)
        hit = cid[pos] == sample_ids
        sym_of[hit] = sym[pos[hit]]
    codes, uniq = pd.factorize(sym_of, use_na_sentinel=False)
    uniq = np.asarray(uniq, np.int64)
    values = strings.lookup([int(u) for u in uniq.tolist() if u >= 0])
    found = iter(values)
    labels = [("" if u < 0 else (next(found) or "")) for u in uniq.tolist()]
    return categorical(np.asarray(codes, np.int64), labels)


def read_cpu_samples(db: NsysDb, strings: StringTable, window: ReadWindow | None = None
                     ) -> pd.DataFrame:
    """CPU samples with their top frame and thread state (empty frame when
    ``COMPOSITE_EVENTS`` is absent); ``window``: only the samples inside it."""
    if not db.has(SAMPLES_TABLE):
        return C.CPU_SAMPLES.empty()
    cols = db.columns(SAMPLES_TABLE)
    if not {"id", "start"} <= set(cols):
        return C.CPU_SAMPLES.empty()
    spec = [Col("id", "int")] + _time_cols() + [opt_col(cols, "globalTid"),
                                                opt_col(cols, "threadState")]
    d = db.read(SAMPLES_TABLE, spec,
                where=window.instant('"start"', table=SAMPLES_TABLE) if window is not None
                else "")
    ok = d.ints("start") > NULL_TIME
    if not ok.all():
        d = d.filtered(ok)
    df = pd.DataFrame(copy=False, data={
        "ts_ns": d.ints("start"), **_thread_frame(d.ints("globalTid")),
        "top_frame": _top_frames(db, strings, d.ints("id"), window),
        "state": _thread_states(db, d.ints("threadState"))})
    return C.CPU_SAMPLES.validate(df, source=str(db.path))


__all__ = ["read_osrt", "read_cpu_samples", "OSRT_TABLE", "SAMPLES_TABLE", "CALLCHAINS_TABLE"]
