"""Zone maps: per rowid block, the time bounds of an event table — so a window read seeks to the
rows that can lie in its window instead of scanning the whole table.

A streamed analysis (``app/stream.py``) reads an export chunk by chunk through the window
push-down (``read_window.ReadWindow``). Without help, every chunk's ``WHERE`` makes SQLite scan
every row of the kernel and CUDA API tables (≈ 60 ns a row in C), so the scans grow with
chunks × rows and the time with the square of the export. nsys writes its event tables in
(nearly) time order, so a chunk's rows sit in a narrow band of rowids: a zone map records, for
every block of ``BLOCK_ROWS`` consecutive rowids, the smallest start, the largest end and the
largest correlation id (one ``min``/``max`` range scan per block, built once: about one scan of
the table; GPU-operation tables also keep what a window's smallest launch id needs,
``BlockLaunches``), and a window read adds ``"rowid" BETWEEN first AND last`` — the rowid range of the
blocks whose bounds can satisfy its filter. SQLite seeks to it through the rowid b-tree.

Exact whatever the row order: a block is left out only when no row in it can pass the window's
filter (bounds that are not numbers — text, blobs — keep their block in), and the range is the
single span from the first to the last block kept (so rows still come back in rowid order).
An export in no time order keeps every block in: the read is then the plain scan, never wrong.
"""
from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass, field

import numpy as np

from nsys_diag.loaders.parallel_reads import run_concurrently
from nsys_diag.loaders.nsys_db import NsysDb
from nsys_diag.loaders.nsys_specs import (GPU_METRICS_TABLE, KERNEL_TABLE, MEMCPY_TABLE,
                                          MEMSET_TABLE, OSRT_TABLE, RUNTIME_TABLE, SAMPLES_TABLE,
                                          SYNC_TABLE, gpu_metrics_time_column)

BLOCK_ROWS = 65_536
"""Rowids per block: small enough that a chunk reads little beyond its rows, large enough that
the build is a few hundred range queries per 16M rows."""
MAX_BLOCKS = 4_096
"""At most this many blocks per table (sparse rowids get wider blocks)."""
MAX_EDGE_RUNS = 8
"""At most this many separate rowid ranges scanned for a window's smallest launch id."""
MIN_ZONED_ROWS = 2 * BLOCK_ROWS
"""Tables with fewer rowids than this get no zone map (a scan of them costs next to nothing)."""

_LOW, _HIGH = np.iinfo(np.int64).min, np.iinfo(np.int64).max


@dataclass(frozen=True)
class BlockLaunches:
    """Per block of a GPU-operation table: whether every row lies inside a window, and the
    smallest launch id — so ``read_window.with_launches`` scans only the blocks at a window's
    edges (perf, bench: a ``min(correlationId)`` scan of each chunk's rows took ≈0.3 s a chunk
    on the main thread)."""

    max_start: np.ndarray
    """int64, largest start (ns) in the block (meaningful where ``clean``)."""
    min_end: np.ndarray
    """int64, smallest end (ns) in the block (meaningful where ``clean``)."""
    min_correlation: np.ndarray
    """int64, smallest integer correlation id ≥ 0 in the block; -1: none (or not clean)."""
    clean: np.ndarray
    """bool, every row of the block has integer start and end (then the bounds are exact)."""


@dataclass(frozen=True)
class TableZones:
    """Bounds per rowid block of one table; a bound that is not a number is the sentinel that
    keeps its block in (int64 min for a low bound, int64 max for a high one)."""

    first_rowid: np.ndarray
    """int64, first rowid of each block (blocks are consecutive: block i ends before i + 1)."""
    last_rowid: np.ndarray
    """int64, last rowid of each block."""
    min_start: np.ndarray
    """int64, smallest start (ns) in the block; int64 max: none; int64 min: not a number."""
    max_end: np.ndarray
    """int64, largest end (ns) — or the largest instant of an instant table; int64 min: none;
    int64 max: not a number."""
    max_correlation: np.ndarray | None = None
    """int64, largest correlation id (API tables), int64 min: none, int64 max: not a number;
    None: no such column."""
    launches: BlockLaunches | None = None
    """GPU-operation tables with a correlation id: what a window's smallest launch id needs
    (``ZoneMap.launch_blocks``); None: not built."""

    def rowid_range(self, keep: np.ndarray) -> str:
        """SQL limiting a read to the rowids from the first to the last kept block ("0": none)."""
        idx = np.flatnonzero(keep)
        if not idx.size:
            return "0"
        if idx[0] == 0 and idx[-1] == keep.size - 1:
            return ""  # every block at the ends is in: the range is the whole table
        return (f'"rowid" BETWEEN {int(self.first_rowid[idx[0]])} '
                f'AND {int(self.last_rowid[idx[-1]])}')


@dataclass(frozen=True)
class ZoneMap:
    """Zone maps of the tables a streamed read windows (by the table's contract name)."""

    tables: dict[str, TableZones] = field(default_factory=dict)
    source: tuple[int, int] | None = None
    """(size, modification time in ns) of the file it maps (``matches``)."""

    def matches(self, path) -> bool:
        """Whether ``path`` is still the file this map was built from (a Dask worker checks: a
        file re-exported at the same path would otherwise lose rows silently)."""
        if self.source is None:
            return True
        try:
            st = os.stat(path)
        except OSError:
            return False
        return (int(st.st_size), int(st.st_mtime_ns)) == self.source

    def overlap(self, table: str, start_ns: int, end_ns: int) -> str:
        """Rowid range of ``table``'s rows that may overlap ``[start_ns, end_ns)`` ("" = all)."""
        z = self.tables.get(table)
        if z is None:
            return ""
        return z.rowid_range((z.min_start < end_ns) & (z.max_end > start_ns))

    def instant(self, table: str, start_ns: int, end_ns: int) -> str:
        """Rowid range of ``table``'s rows whose instant may lie in ``[start_ns, end_ns)``."""
        z = self.tables.get(table)
        if z is None:
            return ""
        return z.rowid_range((z.min_start < end_ns) & (z.max_end >= start_ns))

    def launch_blocks(self, table: str, start_ns: int, end_ns: int
                      ) -> tuple[int | None, list[str]] | None:
        """For the smallest launch id of ``table``'s rows overlapping ``[start_ns, end_ns)``:
        (the smallest id of the blocks whose every row overlaps it — None: no such block or
        none has an id —, the rowid ranges of the other blocks that may hold such rows, to be
        scanned); None without the per-block launch bounds (scan as before)."""
        z = self.tables.get(table)
        if z is None or z.launches is None:
            return None
        b = z.launches
        may = (z.min_start < end_ns) & (z.max_end > start_ns)
        whole = may & b.clean & (b.max_start < end_ns) & (b.min_end > start_ns)
        ids = b.min_correlation[whole]
        ids = ids[ids >= 0]
        inner = int(ids.min()) if ids.size else None
        edge = np.flatnonzero(may & ~whole)
        if not edge.size:
            return inner, []
        runs = np.split(edge, np.flatnonzero(np.diff(edge) > 1) + 1)
        if len(runs) > MAX_EDGE_RUNS:  # no time order: one span (a superset, still exact)
            runs = [edge[[0, -1]]]
        return inner, [f'"rowid" BETWEEN {int(z.first_rowid[r[0]])} AND {int(z.last_rowid[r[-1]])}'
                       for r in runs]

    def api(self, table: str, start_ns: int, end_ns: int, min_correlation: int | None) -> str:
        """Rowid range of API rows that may overlap the window or launch its GPU work
        (``ReadWindow.api``: ``start < end AND (end > start OR correlationId >= min)``)."""
        z = self.tables.get(table)
        if z is None:
            return ""
        reach = z.max_end > start_ns
        if min_correlation is not None and z.max_correlation is not None:
            reach = reach | (z.max_correlation >= int(min_correlation))
        return z.rowid_range((z.min_start < end_ns) & reach)


def _bound(value, none: int, unknown: int) -> int:
    """A block bound from SQLite: ``none`` for NULL (no row), ``unknown`` for a non-number,
    else the number rounded outward (floor for a low bound, ceil for a high one)."""
    if value is None:
        return none
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return unknown
    if isinstance(value, float):
        if math.isnan(value):
            return unknown
        if math.isinf(value):
            return _HIGH if value > 0 else _LOW
        value = math.floor(value) if unknown == _LOW else math.ceil(value)
    return int(min(max(value, _LOW), _HIGH))


_LAUNCH_SELECT = 'max("start"), min("end"), min("correlationId")'
_NULL_COUNTS = ', count(*) - count("start"), count(*) - count("end")'
"""The per-block launch bounds of a GPU-operation table (``BlockLaunches``); the NULL counts
only where ``start``/``end`` may hold NULL (not declared NOT NULL, as nsys declares them)."""


def build_table_zones(db: NsysDb, table: str, start: str, end: str,
                      correlation: str | None = None, launches: bool = False
                      ) -> TableZones | None:
    """Zone map of one table (None: absent, too small, or lacking the columns) — one
    ``min``/``max`` query per block of rowids, each a range scan of its block. ``launches``:
    with the per-block launch bounds (``BlockLaunches``) when the table has ``correlationId``."""
    actual = db.table(table)
    cols = set(db.columns(table))
    if actual is None or not {start, end} <= cols:
        return None
    bounds = db.rowid_bounds(actual)
    if bounds is None or bounds[1] - bounds[0] + 1 < MIN_ZONED_ROWS:
        return None
    lo_id, hi_id = bounds
    width = max(BLOCK_ROWS, -(-(hi_id - lo_id + 1) // MAX_BLOCKS))
    firsts = np.arange(lo_id, hi_id + 1, width, dtype=np.int64)
    lasts = np.minimum(firsts + (width - 1), hi_id)
    corr = correlation if correlation in cols else None
    with_launches = launches and (start, end) == ("start", "end") and "correlationId" in cols
    nullable = with_launches and not _not_null(db, actual, ("start", "end"))
    select = f'min("{start}"), max("{end}")' + (f', max("{corr}")' if corr else "") + \
        (f", {_LAUNCH_SELECT}" if with_launches else "") + (_NULL_COUNTS if nullable else "")
    rows = [db.rows(f'SELECT {select} FROM "{actual}" WHERE rowid BETWEEN {int(a)} AND {int(b)}')[0]
            for a, b in zip(firsts.tolist(), lasts.tolist())]
    # a low bound that is not a number keeps its block in (_LOW), a high one too (_HIGH)
    min_start = np.array([_bound(r[0], _HIGH, _LOW) for r in rows], np.int64)
    max_end = np.array([_bound(r[1], _LOW, _HIGH) for r in rows], np.int64)
    max_corr = np.array([_bound(r[2], _LOW, _HIGH) for r in rows], np.int64) if corr else None
    return TableZones(firsts, lasts, min_start, max_end, max_corr,
                      _block_launches(rows, 3 if corr else 2) if with_launches else None)


def _not_null(db: NsysDb, actual: str, columns: tuple[str, ...]) -> bool:
    """Whether every one of ``columns`` of table ``actual`` is declared NOT NULL."""
    declared = {r[1]: bool(r[3]) for r in db.rows(f'PRAGMA table_info("{actual}")')}
    return all(declared.get(c, False) for c in columns)


def _block_launches(rows: list[tuple], at: int) -> BlockLaunches:
    """``BlockLaunches`` of the block rows of ``build_table_zones`` (its columns from ``at``).

    A block is clean when no start or end is NULL (declared NOT NULL, or counted), its largest
    start and smallest end are integers (a text or blob start would be the largest; a text end
    passes ``"end" > x`` in SQLite anyway) and its smallest id is an integer ≥ 0 or absent (a
    negative, REAL or text one could hide the smallest integer id ≥ 0: that block is scanned)."""
    clean, max_start, min_end, min_corr = [], [], [], []
    for r in rows:
        hi, lo, corr = r[at:at + 3]
        nulls = r[at + 3:at + 5]
        ok = not any(nulls) and type(hi) is int and type(lo) is int and \
            (corr is None or (type(corr) is int and corr >= 0))
        clean.append(ok)
        max_start.append(hi if ok else _HIGH)
        min_end.append(lo if ok else _LOW)
        min_corr.append(corr if ok and corr is not None else -1)
    return BlockLaunches(np.array(max_start, np.int64), np.array(min_end, np.int64),
                         np.array(min_corr, np.int64), np.array(clean, bool))


def build_zone_map(db: NsysDb) -> ZoneMap:
    """Zone maps of the event tables a chunk read windows (``loaders/read_window.py``): the GPU
    operations and API calls by ``[start, end)``, the API's correlation ids too, GPU-metric and
    CPU samples by their instant. Tables too small to gain get none. The tables are mapped at
    the same time, each on a connection of its own (``loaders/parallel_reads.py``; SQLite runs
    without the GIL)."""
    specs: dict[str, tuple[str, str, str | None, bool]] = {
        t: ("start", "end", None, True) for t in (KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE, SYNC_TABLE)}
    specs[OSRT_TABLE] = ("start", "end", None, False)
    specs[RUNTIME_TABLE] = ("start", "end", "correlationId", False)
    specs[SAMPLES_TABLE] = ("start", "start", None, False)
    if db.has(GPU_METRICS_TABLE):
        ts = gpu_metrics_time_column(db.columns(GPU_METRICS_TABLE))
        specs[GPU_METRICS_TABLE] = (ts, ts, None, False)
    present = {t: spec for t, spec in specs.items() if db.has(t)}

    def job(table: str, spec: tuple[str, str, str | None, bool]) -> object:
        with NsysDb(db.path) as own:
            return build_table_zones(own, table, *spec)
    out = run_concurrently({t: functools.partial(job, t, spec) for t, spec in present.items()})
    st = os.stat(db.path)
    return ZoneMap({t: z for t, z in out.items() if isinstance(z, TableZones)},
                   (int(st.st_size), int(st.st_mtime_ns)))
