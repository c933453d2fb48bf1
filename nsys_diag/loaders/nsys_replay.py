"""What the causal replay reads beyond the bundle, for its replayed windows only (NSYS_SQLITE.md
§2.1, §2.6, §2.7): CUDA-graph launches (``CUPTI_ACTIVITY_KIND_GRAPH_TRACE``; nothing else reads
it), event records (``CUPTI_ACTIVITY_KIND_CUDA_EVENT``: empty in recent exports), the event id of
SYNCHRONIZATION rows, and the kernels' context/stream/graph-node columns (``analyze`` loads
kernels without them: they cost ≈ 1 s on a 2M-kernel export when read for every row).

``read_replay_columns(path, windows, api=None) -> ReplayColumns``; every frame validated against
its contract (``model/contracts.py``, ``REPLAY_CONTRACTS``). Absent tables give empty frames.
Windows are ``(start_ns, end_ns)`` pairs on the session timeline; a row is read when its
interval overlaps one of them (at most ``MAX_WINDOWS`` windows, merged when they touch).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from nsys_diag.loaders.nsys_cuda import NO_STREAM, attach_launch
from nsys_diag.loaders.nsys_db import NsysDb
from nsys_diag.loaders.nsys_specs import KERNEL_TABLE, NULL_TIME, SYNC_TABLE, opt_col
from nsys_diag.loaders.nsys_strings import pid_of_global_pid
from nsys_diag.loaders.read_plan import Col
from nsys_diag.loaders.zone_map import ZoneMap
from nsys_diag.model import contracts as C

GRAPH_TRACE_TABLE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
CUDA_EVENT_TABLE = "CUPTI_ACTIVITY_KIND_CUDA_EVENT"
MAX_WINDOWS = 64
ROWID_MARGIN = 65_536
"""Rows read beyond the rowids a bisection on ``start`` gives for a window (rows a little out
of start order)."""


@dataclass(frozen=True)
class ReplayColumns:
    """The replay's extra frames (contracts ``GRAPH_LAUNCHES``, ``CUDA_EVENTS``,
    ``SYNC_EVENTS``, ``KERNEL_STREAMS``)."""

    graphs: pd.DataFrame = field(default_factory=C.GRAPH_LAUNCHES.empty)
    cuda_events: pd.DataFrame = field(default_factory=C.CUDA_EVENTS.empty)
    sync_events: pd.DataFrame = field(default_factory=C.SYNC_EVENTS.empty)
    kernel_streams: pd.DataFrame = field(default_factory=C.KERNEL_STREAMS.empty)


def merged_windows(windows) -> list[tuple[int, int]]:
    """Windows sorted, touching ones merged, at most ``MAX_WINDOWS`` (the closest merged)."""
    ws = sorted((int(a), int(b)) for a, b in windows if b > a)
    out: list[list[int]] = []
    for a, b in ws:
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    while len(out) > MAX_WINDOWS:
        gaps = [out[i + 1][0] - out[i][1] for i in range(len(out) - 1)]
        i = int(np.argmin(gaps))
        out[i][1] = out[i + 1][1]
        del out[i + 1]
    return [(a, b) for a, b in out]


def _where(windows: list[tuple[int, int]], zones: ZoneMap | None = None, table: str = "") -> str:
    """SQL: the row overlaps one of ``windows``; with a zone map of ``table``, each window's
    term is limited to the rowid range that can hold its rows (SQLite seeks each range
    instead of scanning the table; the rows are the same)."""
    if not windows:
        return "0"
    terms = []
    for a, b in windows:
        rowids = zones.overlap(table, a, b) if zones is not None else ""
        terms.append(f'({rowids + " AND " if rowids else ""}"end" > {a} AND "start" < {b})')
    return " OR ".join(terms)


def _gpu_cols(cols: list[str]) -> list[Col]:
    return [Col("start", "int", fill=NULL_TIME, strict=True), Col("end", "int", fill=0),
            opt_col(cols, "deviceId"), opt_col(cols, "contextId"), opt_col(cols, "streamId"),
            opt_col(cols, "correlationId"), opt_col(cols, "globalPid")]


def read_graph_launches(db: NsysDb, windows, api: pd.DataFrame | None = None) -> pd.DataFrame:
    """Whole-graph executions overlapping ``windows`` (+ ``launch_*`` joined to ``api``)."""
    if not db.has(GRAPH_TRACE_TABLE):
        return C.GRAPH_LAUNCHES.empty()
    cols = db.columns(GRAPH_TRACE_TABLE)
    d = db.read(GRAPH_TRACE_TABLE, _gpu_cols(cols) + [opt_col(cols, "graphId"),
                                                      opt_col(cols, "graphExecId")],
                where=_where(merged_windows(windows)))
    gpid = d.ints("globalPid")
    df = pd.DataFrame({"start_ns": d["start"], "end_ns": d["end"], "device_id": d["deviceId"],
                       "context_id": d["contextId"], "stream_id": d["streamId"],
                       "correlation_id": d["correlationId"], "global_pid": gpid,
                       "pid": pid_of_global_pid(gpid), "graph_id": d["graphId"],
                       "graph_exec_id": d["graphExecId"]})
    df = df.loc[(df["start_ns"] > NULL_TIME) & (df["end_ns"] >= df["start_ns"])]
    if api is not None and len(api):
        df = attach_launch(df.reset_index(drop=True), api)[0]
    else:
        df = df.assign(launch_global_tid=-1, launch_start_ns=-1, launch_end_ns=-1,
                       launch_api=pd.Categorical([""] * len(df)))
    return C.GRAPH_LAUNCHES.validate(df, source=str(db.path))


def read_cuda_events(db: NsysDb) -> pd.DataFrame:
    """Every event record (the table holds one row per cudaEventRecord, often none)."""
    if not db.has(CUDA_EVENT_TABLE):
        return C.CUDA_EVENTS.empty()
    cols = db.columns(CUDA_EVENT_TABLE)
    d = db.read(CUDA_EVENT_TABLE, [opt_col(cols, "timestamp"), opt_col(cols, "deviceId"),
                                   opt_col(cols, "contextId"), opt_col(cols, "streamId"),
                                   opt_col(cols, "correlationId"), opt_col(cols, "globalPid"),
                                   opt_col(cols, "eventId")])
    ts = np.where(d.ints("timestamp") > 0, d.ints("timestamp"), -1)
    return C.CUDA_EVENTS.validate(pd.DataFrame({
        "ts_ns": ts, "device_id": d["deviceId"], "context_id": d["contextId"],
        "stream_id": d["streamId"], "correlation_id": d["correlationId"],
        "global_pid": d["globalPid"], "event_id": d["eventId"]}), source=str(db.path))


def read_sync_events(db: NsysDb, windows, zones: ZoneMap | None = None) -> pd.DataFrame:
    """The event id and stream of SYNCHRONIZATION rows overlapping ``windows`` (``zones``: the
    streamed run's zone map, ``_where``)."""
    if not db.has(SYNC_TABLE):
        return C.SYNC_EVENTS.empty()
    cols = db.columns(SYNC_TABLE)
    d = db.read(SYNC_TABLE, [opt_col(cols, "correlationId"), opt_col(cols, "globalPid"),
                             opt_col(cols, "streamId"), opt_col(cols, "eventId")],
                where=_where(merged_windows(windows), zones, SYNC_TABLE))
    return C.SYNC_EVENTS.validate(pd.DataFrame({
        "correlation_id": d["correlationId"], "global_pid": d["globalPid"],
        "stream_id": np.where(d.ints("streamId") == NO_STREAM, -1, d.ints("streamId")),
        "event_id": np.where(d.ints("eventId") == NO_STREAM, -1, d.ints("eventId"))}),
        source=str(db.path))


def _start_at(db: NsysDb, table: str, rowid: int) -> int | None:
    got = db.rows(f'SELECT "start" FROM "{table}" WHERE rowid >= ? ORDER BY rowid LIMIT 1',
                  (rowid,))
    return int(got[0][0]) if got and isinstance(got[0][0], int) else None


def _first_rowid_from(db: NsysDb, table: str, lo: int, hi: int, t: int) -> int:
    """Bisection over rowids for the first row starting at ``t`` or later, as if the table were
    in start order (nsys writes it nearly so; the caller checks the rows it gets)."""
    while lo < hi:
        mid = (lo + hi) // 2
        start = _start_at(db, table, mid)
        if start is None or start >= t:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _kernel_rowids(db: NsysDb, windows: list[tuple[int, int]]) -> str | None:
    """``rowid BETWEEN …`` around the kernels of ``windows`` (``ROWID_MARGIN`` rows each side);
    None when the table has no rowids to narrow (empty, or a ``WITHOUT ROWID`` table)."""
    if db.without_rowid(KERNEL_TABLE):
        return None
    bounds = db.rowid_bounds(KERNEL_TABLE)
    if bounds is None or not windows:
        return None
    actual = db.table(KERNEL_TABLE) or KERNEL_TABLE
    lo = _first_rowid_from(db, actual, bounds[0], bounds[1], windows[0][0])
    hi = _first_rowid_from(db, actual, bounds[0], bounds[1], windows[-1][1])
    return f"rowid BETWEEN {max(lo - ROWID_MARGIN, bounds[0])} AND {hi + ROWID_MARGIN}"


def read_kernel_streams(db: NsysDb, windows, expected_rows: int | None = None,
                        zones: ZoneMap | None = None) -> pd.DataFrame:
    """Context, stream and graph node of the kernels overlapping ``windows``. ``expected_rows``
    (perf: how many kernels overlap them, from the kernels already loaded): the read is first
    narrowed to the rowids around the windows (``_kernel_rowids``) and kept when it returns
    that many rows, else the table is scanned — limited to the zone map's rowid ranges with
    ``zones`` (the streamed run's: ≈ 0.37 s → milliseconds on the 8M-kernel bench export)."""
    if not db.has(KERNEL_TABLE):
        return C.KERNEL_STREAMS.empty()
    cols = db.columns(KERNEL_TABLE)
    merged = merged_windows(windows)
    spec = [Col("start", "int", fill=NULL_TIME, strict=True),
            opt_col(cols, "deviceId"), opt_col(cols, "globalPid"),
            opt_col(cols, "correlationId"), opt_col(cols, "contextId"),
            opt_col(cols, "streamId"), opt_col(cols, "graphNodeId")]
    where = f"({_where(merged, zones, KERNEL_TABLE)})"
    narrow = _kernel_rowids(db, merged) if expected_rows is not None else None
    d = db.read(KERNEL_TABLE, spec, where=f"{narrow} AND {where}") if narrow else None
    if d is None or len(d.ints("start")) != expected_rows:
        d = db.read(KERNEL_TABLE, spec, where=where)
    return C.KERNEL_STREAMS.validate(pd.DataFrame({
        "start_ns": d["start"], "device_id": d["deviceId"], "global_pid": d["globalPid"],
        "correlation_id": d["correlationId"], "context_id": d["contextId"],
        "stream_id": d["streamId"], "graph_node_id": d["graphNodeId"]}), source=str(db.path))


def read_replay_columns(path: str | Path, windows, *, api: pd.DataFrame | None = None,
                        kernel_streams: bool = True,
                        expected_kernels: int | None = None,
                        zones: ZoneMap | None = None) -> ReplayColumns:
    """Everything the replay reads beyond the bundle, for ``windows`` (see the module
    docstring); ``kernel_streams=False`` when the bundle's kernels carry their streams;
    ``expected_kernels``: how many kernels overlap the (merged) windows, when known
    (``read_kernel_streams``); ``zones``: a streamed run's zone map (rowid ranges per window)."""
    with NsysDb(path) as db:
        return ReplayColumns(
            graphs=read_graph_launches(db, windows, api), cuda_events=read_cuda_events(db),
            sync_events=read_sync_events(db, windows, zones),
            kernel_streams=read_kernel_streams(db, windows, expected_kernels, zones)
            if kernel_streams else C.KERNEL_STREAMS.empty())


__all__ = ["ReplayColumns", "read_replay_columns", "read_graph_launches", "read_cuda_events",
           "read_sync_events", "read_kernel_streams", "merged_windows"]
