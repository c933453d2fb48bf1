"""Read only one time window of an export: bounded memory for exports of any size.

Memory grows with the rows that are read (bench: ~300 MB per million kernels with their launch
calls), so an export too large for the memory budget is analysed over a *window* of its timeline
(``plan_window``) and every event table is filtered in SQL (``ReadWindow``): SQLite scans the
whole file in C, but only the rows inside the window are ever turned into arrays, so peak memory
follows the window, not the file.

Which rows a window keeps (``[start_ns, end_ns)``, session-timeline ns):

* GPU operations (kernels, memcpy, memset, sync) and CUDA API calls that overlap it
  (``end > start_ns AND start < end_ns``);
* plus the API calls that *launched* those GPU operations, even when they ran before the window:
  CUPTI correlation ids grow with time within a process, so ``correlationId >= min_correlation``
  (the smallest id among the window's GPU operations, any process) with ``start < end_ns`` keeps
  every launch (a launch starts before its work does) — no unmatched launches at the edge;
* NVTX ranges that overlap it (unterminated ones that start before its end), marks inside it, and
  every thread-name / domain-name row (they are written once, at creation time);
* GPU-metric samples inside it. GPU-memory events are not windowed (they are cumulative).

With a zone map (``loaders/zone_map.py``, built once by a streamed analysis) each windowed read
of a large table also gets the rowid range that can hold its rows, so SQLite seeks instead of
scanning the whole table; the rows read are the same.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from nsys_diag.loaders.nsys_db import NsysDb
from nsys_diag.loaders.nsys_specs import (KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE, RUNTIME_TABLE,
                                          SYNC_TABLE)
from nsys_diag.loaders.zone_map import ZoneMap

GPU_OP_TABLES = (KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE, SYNC_TABLE)
"""Tables whose rows carry the correlation id of their launching API call."""

SAMPLE_TABLES = (KERNEL_TABLE, RUNTIME_TABLE)
"""Tables sampled to place a window: the big ones, whose rows make up the memory."""

SAMPLE_ROWS = 20_000
"""About this many rows per sampled table decide where a window goes (strided by rowid)."""


@dataclass(frozen=True)
class ReadWindow:
    """A time window pushed down into every event-table read (see module docstring)."""

    start_ns: int
    end_ns: int
    min_correlation: int | None = None
    """Smallest correlation id of the window's GPU operations (None: no GPU operation in it)."""
    zones: ZoneMap | None = field(default=None, compare=False, repr=False)
    """Rowid bounds of the large tables (``loaders/zone_map.py``); None: plain scans."""

    def overlap(self, start: str = '"start"', end: str = '"end"', table: str | None = None
                ) -> str:
        """SQL: the row's ``[start, end)`` overlaps the window (``table``: the table read, whose
        zone map, if any, adds its rowid range)."""
        sql = f"({end} > {int(self.start_ns)} AND {start} < {int(self.end_ns)})"
        if table is None or self.zones is None:
            return sql
        return _within(self.zones.overlap(table, self.start_ns, self.end_ns), sql)

    def instant(self, ts: str, table: str | None = None) -> str:
        """SQL: the timestamp ``ts`` lies inside the window (``table``: as for ``overlap``)."""
        sql = f"({ts} >= {int(self.start_ns)} AND {ts} < {int(self.end_ns)})"
        if table is None or self.zones is None:
            return sql
        return _within(self.zones.instant(table, self.start_ns, self.end_ns), sql)

    def api(self, has_correlation: bool) -> str:
        """SQL for API rows: overlapping, or a launch of a GPU operation in the window."""
        if not has_correlation or self.min_correlation is None:
            return self.overlap(table=RUNTIME_TABLE)
        sql = (f'("start" < {int(self.end_ns)} AND ("end" > {int(self.start_ns)} OR '
               f'"correlationId" >= {int(self.min_correlation)}))')
        if self.zones is None:
            return sql
        return _within(self.zones.api(RUNTIME_TABLE, self.start_ns, self.end_ns,
                                      self.min_correlation), sql)

    def to_json(self) -> dict:
        return {"start_ns": int(self.start_ns), "end_ns": int(self.end_ns)}


def _within(rowids: str, sql: str) -> str:
    """``sql`` limited to a zone map's rowid range ("": the whole table)."""
    return f"({rowids} AND {sql})" if rowids else sql


def with_launches(db: NsysDb, start_ns: int, end_ns: int, zones: ZoneMap | None = None
                  ) -> ReadWindow:
    """``ReadWindow`` for ``[start_ns, end_ns)`` with the smallest correlation id of the GPU
    operations inside it (one C-level ``min()`` scan per GPU-operation table; with ``zones``,
    of the rowid range that can hold them)."""
    probe = ReadWindow(int(start_ns), int(end_ns), zones=zones)
    lows = []
    for table in GPU_OP_TABLES:
        actual = db.table(table)
        cols = db.columns(table)
        if actual is None or not {"start", "end", "correlationId"} <= set(cols):
            continue
        split = zones.launch_blocks(table, probe.start_ns, probe.end_ns) if zones else None
        if split is None:
            scans = [probe.overlap(table=table)]
        else:  # perf (bench): blocks wholly inside give their minimum; only the edges are scanned
            if split[0] is not None:
                lows.append(split[0])
            scans = [f"({rowids} AND {probe.overlap()})" for rowids in split[1]]
        for where in scans:
            row = db.rows(f'SELECT min("correlationId") FROM "{actual}" WHERE {where} '
                          f'AND typeof("correlationId") = \'integer\' AND "correlationId" >= 0')
            if row and row[0][0] is not None:
                lows.append(int(row[0][0]))
    return ReadWindow(probe.start_ns, probe.end_ns, min(lows) if lows else None, zones)


def sample_event_starts(db: NsysDb) -> np.ndarray:
    """Sorted start times (ns) of a strided sample of the kernel and API rows (the rows that make
    up most of the memory); empty when there are none."""
    out = []
    for table in SAMPLE_TABLES:
        actual = db.table(table)
        if actual is None or "start" not in db.columns(table):
            continue
        rows = _strided_starts(db, actual)
        out.append(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)))
    starts = np.concatenate(out) if out else np.zeros(0, np.int64)
    starts.sort()
    return starts


def _strided_starts(db: NsysDb, actual: str) -> list[tuple]:
    """Integer starts of the rows whose rowid is a multiple of ``max(rowid) // SAMPLE_ROWS``,
    in rowid order. Perf: the multiples are generated and looked up through the rowid b-tree
    (≈ 20,000 seeks, 0.05 s on 8M rows) instead of a ``rowid % stride`` scan of the whole table
    (0.9 s); the rows are the same. Rowids far sparser than their range fall back to the scan."""
    bounds = db.rowid_bounds(actual)
    if bounds is None:
        return []
    low, high = bounds
    stride = max(1, high // SAMPLE_ROWS)
    first = -(-low // stride) * stride  # the smallest multiple of stride >= min(rowid)
    is_int = 'typeof(t."start") = \'integer\''
    if (high - first) // stride > 4 * SAMPLE_ROWS:  # negative or sparse rowids
        return db.rows(f'SELECT "start" FROM "{actual}" AS t WHERE rowid % {stride} = 0 '
                       f'AND {is_int}')
    return db.rows(f'WITH RECURSIVE m(r) AS (SELECT {first} UNION ALL SELECT r + {stride} '
                   f'FROM m WHERE r + {stride} <= {high}) SELECT t."start" FROM m '
                   f'CROSS JOIN "{actual}" AS t ON t.rowid = m.r WHERE {is_int}')


def plan_window(db: NsysDb, fraction: float) -> tuple[int, int] | None:
    """The middle ``fraction`` (0 < fraction < 1) of the export's kernel and API rows, as a time
    window ``(start_ns, end_ns)``; None when there is nothing to sample.

    Heuristic: the middle of a capture is past start-up and warm-up and before shutdown, so it is
    the most representative stretch of steady-state steps; steps cut by the window's edges are
    left out by the step analysis (it keeps the steps wholly inside a window).
    """
    starts = sample_event_starts(db)
    if starts.size < 2:
        return None
    f = min(max(float(fraction), 0.0), 1.0)
    lo_q, hi_q = 0.5 - f / 2, 0.5 + f / 2
    lo, hi = (int(v) for v in np.quantile(starts, [lo_q, hi_q], method="nearest"))
    if hi <= lo:
        hi = lo + 1
    return lo, hi
