"""nsys SQLite export → TraceBundle: the orchestration of the ``nsys_*`` reader modules.

What is read (every frame validated against ``nsys_diag.model.contracts``):

=====================================  ===========================================================
table(s)                               frame
=====================================  ===========================================================
CUPTI_ACTIVITY_KIND_KERNEL             kernels (+ launch_* from the API join)
CUPTI_ACTIVITY_KIND_MEMCPY / MEMSET    memcpy / memset (+ launch_*)
CUPTI_ACTIVITY_KIND_SYNCHRONIZATION    sync (+ launch_*, sync_kind by API name)
CUPTI_ACTIVITY_KIND_RUNTIME            api (eventClass 0/1; runtime suffix stripped)
NVTX_EVENTS                            nvtx (59/60/70/71), nvtx_marks (34); domains from 75
ThreadNames (+ NVTX 39), PROCESSES     threads, processes (only those owning events)
TARGET_INFO_GPU / _CUDA_GPU            gpus (units normalised)
GPU_METRICS + TARGET_INFO_GPU_METRICS  gpu_metrics
CUDA_GPU_MEMORY_USAGE_EVENTS           gpu_memory
OSRT_API                               osrt (OS runtime calls; ``nsys_host``)
COMPOSITE_EVENTS + SAMPLING_CALLCHAINS cpu_samples (top frame, thread state; ``nsys_host``)
META_DATA_EXPORT / EXPORT_META_DATA,   meta (versions, capture span, session start, table counts,
ANALYSIS_DETAILS, TARGET_INFO_*        private host/environment/command line)
=====================================  ===========================================================

Absent tables give empty frames (lazy exports create tables only when they have rows) and, where
it matters, a ``LoadWarning`` with the capture flag that would have recorded the data.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nsys_diag.loaders import nsys_cuda as cuda
from nsys_diag.loaders import sanity
from nsys_diag.loaders.parallel_reads import After, run_concurrently
from nsys_diag.loaders.load_request import LoadRequest
from nsys_diag.loaders.read_window import ReadWindow, plan_window, with_launches
from nsys_diag.loaders.zone_map import ZoneMap
from nsys_diag.loaders.nsys_db import NsysDb
from nsys_diag.loaders.nsys_host import read_cpu_samples, read_osrt
from nsys_diag.loaders.nsys_launch_shapes import (graph_launch_apis, launch_calls_without_kernels,
                                                  read_launch_shapes, read_sm_limits)
from nsys_diag.loaders.nsys_gpu import read_gpu_memory, read_gpu_metrics, read_gpus
from nsys_diag.loaders.nsys_meta import (capture_duration, capture_info, device_environment,
                                         host_info,
                                         read_export_metadata, read_processes, read_threads,
                                         session_start_utc, table_counts, version_hint)
from nsys_diag.loaders.nsys_nvtx import READ_BATCH_ROWS, finish_ranges, read_nvtx
from nsys_diag.loaders.nsys_strings import MAX_NAME_CHARS, StringTable, distinct_ints
from nsys_diag.model import contracts as C
from nsys_diag.model.bundle import LoadWarning, TraceBundle, TraceMeta
from nsys_diag.model.errors import SchemaError
from nsys_diag.model.vocabulary import (HINT_ADD_NVTX, HINT_CAPTURE_TRACE, HINT_REEXPORT,
                                        NSYS_EXPORT_COMMAND, NSYS_TRACE_FLAGS,
                                        WIDEN_WINDOW_HINT)

CAPTURE_FLAGS = NSYS_TRACE_FLAGS
"""The capture command line we recommend when CUDA data is missing."""

NSYS_TABLES = (cuda.KERNEL_TABLE, cuda.MEMCPY_TABLE, cuda.MEMSET_TABLE, cuda.SYNC_TABLE,
               cuda.RUNTIME_TABLE, "NVTX_EVENTS", "ThreadNames", "ProcessStreams", "TARGET_INFO_GPU",
               "TARGET_INFO_CUDA_GPU", "TARGET_INFO_SYSTEM_ENV", "TARGET_INFO_SESSION_START_TIME",
               "META_DATA_EXPORT", "EXPORT_META_DATA", "ANALYSIS_DETAILS", "OSRT_API",
               "GPU_METRICS")
"""Tables whose presence (besides StringIds) identifies an nsys export."""


def _schema_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for p in version.split("."):
        if not p.isdigit():
            break
        parts.append(int(p))
    return tuple(parts)


def _check_is_nsys(db: NsysDb) -> None:
    """An nsys export has StringIds plus nsys tables; event tables alone also qualify (names then
    show as ``<string #ID>`` with a warning)."""
    if any(db.has(t) for t in (cuda.KERNEL_TABLE, cuda.RUNTIME_TABLE, "NVTX_EVENTS")):
        return
    if db.has("StringIds") and (any(db.has(t) for t in NSYS_TABLES) or len(db.tables) > 1):
        return  # an nsys export of something we do not read; inspect will show its tables
    missing = ["StringIds"] if not db.has("StringIds") else []
    missing.append("any nsys event/target table (CUPTI_ACTIVITY_KIND_*, NVTX_EVENTS, "
                   "ThreadNames, TARGET_INFO_*)")
    shown = ", ".join(sorted(db.tables)[:8]) or "none"
    raise SchemaError(db.path,
                      f"SQLite database but not an Nsight Systems export: missing "
                      f"{' and '.join(missing)} (tables found: {shown})",
                      f"create one with `{NSYS_EXPORT_COMMAND}`")


def load_nsys_sqlite(path: str | Path, request: LoadRequest | None = None, /,
                     **flags: Any) -> TraceBundle:
    """Load an nsys SQLite export (read-only) into a validated :class:`TraceBundle`, as
    ``request`` (``loaders/load_request.LoadRequest``, or its fields as keywords) says.

    ``kernel_detail=False`` skips the kernel columns none of ``analyze``'s analyses reads
    (context, launch configuration, graph node: ``nsys_cuda.KERNEL_DETAIL_COLUMNS``; they
    hold -1 and ``meta.extra["kernel_detail"]`` is False) — what ``analyze`` uses (perf).

    ``time_window=(start_ns, end_ns)`` reads only the events of that window of the session
    timeline; ``row_fraction`` (0–1) reads only the middle fraction of the kernel and API rows
    (bounded memory, see ``read_window``; a ``memory_window`` warning says so). Either way
    ``meta.extra["read_window"]`` records the window.

    ``skeleton=True`` reads everything but the per-event GPU, API, metric and host tables (their
    frames are empty; ``meta.tables`` still counts their rows): the whole NVTX list, processes,
    threads, GPUs and memory events — the global values a chunked (streaming) analysis needs
    before it reads the events chunk by chunk (``app/stream.py``). ``chunk=True``: a chunk of
    such a read — ``time_window`` without the row counts (the skeleton has them); ``zones``: its
    zone map (``loaders/zone_map.py``: rowid ranges instead of whole-table scans);
    ``nvtx=False``: no NVTX read (empty NVTX frames; a streamed chunk takes its NVTX from the
    skeleton, which read it whole); ``known_threads``: then the named threads (the skeleton's),
    which also name the processes as the NVTX thread-name rows would.
    """
    r = LoadRequest.of(request, flags)
    with NsysDb(path) as db:
        return _load(db, r.kernel_detail, r.time_window, r.row_fraction, r.skeleton, r.chunk,
                     r.zones, r.nvtx, r.known_threads)


def _read_window(db: NsysDb, time_window: tuple[int, int] | None, row_fraction: float | None,
                 warnings: list[LoadWarning], zones: ZoneMap | None = None
                 ) -> tuple[ReadWindow | None, dict | None]:
    """The window pushed down into the reads, and its ``meta.extra`` record."""
    if time_window is not None:
        win = with_launches(db, *time_window, zones=zones)
        return win, {**win.to_json(), "reason": "window"}
    if row_fraction is None or not 0 < row_fraction < 1:
        return None, None
    planned = plan_window(db, row_fraction)
    if planned is None:
        return None, None
    win = with_launches(db, *planned)
    warnings.append(LoadWarning(
        "memory_window",
        f"the export is too large for the memory budget: only {win.start_ns / 1e9:.3f}–"
        f"{win.end_ns / 1e9:.3f} s of the session (the middle {row_fraction:.0%} of its kernel "
        "and API rows) was read and analysed; the steps wholly inside it are the analysed steps",
        0, "pass a larger --memory-budget (or `--memory-budget none`) to analyse the whole "
           "capture, or choose the span with --window"))
    return win, {**win.to_json(), "reason": "memory_budget", "row_fraction": float(row_fraction)}


def window_shares(db: NsysDb, kernels: pd.DataFrame) -> dict:
    """How much of the whole export a memory window read: shares of the kernel rows and of the
    kernel time (one C-level ``count``/``sum`` scan; {} without kernels) — the evidence that the
    window is representative."""
    actual = db.table(cuda.KERNEL_TABLE)
    if actual is None or not len(kernels):
        return {}
    n, total = db.rows(f'SELECT count(*), sum("end" - "start") FROM "{actual}" '
                       'WHERE "end" > "start"')[0]
    dur = kernels["end_ns"].to_numpy(np.int64) - kernels["start_ns"].to_numpy(np.int64)
    out = {"kernel_share": round(len(kernels) / n, 4) if n else None}
    if total:
        out["kernel_time_share"] = round(float(dur[dur > 0].sum()) / float(total), 4)
    return out


def _launch_join(ops: pd.DataFrame | None, api: pd.DataFrame):
    """``attach_launch(ops, api)`` → (frame, unmatched rows); None when the table is absent."""
    return None if ops is None else cuda.attach_launch(ops, api)


def _schema(export_md: dict, warnings: list[LoadWarning]) -> tuple[str, tuple]:
    """(export schema version text, as a tuple); warns on a major version not checked against."""
    schema_version = export_md.get("EXPORT_SCHEMA_VERSION", "")
    schema = _schema_tuple(schema_version)
    if schema and schema[0] not in (2, 3):
        warnings.append(LoadWarning(
            "unknown_schema", f"export schema {schema_version} is newer/older than the "
            "versions this tool was checked against (2.x–3.x); reading columns by name", 0))
    return schema_version, schema


def _read_event_tables(db: NsysDb, strings: StringTable, window, kernel_detail: bool,
                       skeleton: bool = False, chunk: bool = False, nvtx: bool = True) -> dict:
    """The tables with one row per event, read concurrently (``loaders/parallel_reads.py``);
    ``skeleton``: NVTX and the row counts only; ``chunk``: no row counts (a streamed chunk: the
    skeleton has them; perf: one ``count(*)`` scan of every table less per chunk); ``nvtx``:
    False reads no NVTX."""
    if skeleton:
        return {**dict.fromkeys(SKELETON_SKIPS), "api": C.API.empty(),
                "gpu_metrics": (C.GPU_METRICS.empty(), []),
                **run_concurrently({"nvtx": lambda: read_nvtx(db, strings, window,
                                                              batch_rows=READ_BATCH_ROWS),
                                    "table_counts": lambda: table_counts(db),
                                    "file_samples": lambda: file_samples(db, strings, chunk)})}
    return run_concurrently({
        # the largest first (they start at once); errors surface in this order
        "api": lambda: cuda.read_api(db, strings, window),
        "kernels": lambda: cuda.read_kernels(db, strings, detail=kernel_detail, window=window),
        # the launch-shape sample (≈ 20,000 b-tree seeks, 0.12 s on 2M kernels) on the first
        # worker free, while the other joins the kernels to their launches
        "file_samples": lambda: file_samples(db, strings, chunk),
        "gpu_metrics": lambda: read_gpu_metrics(db, window),
        # the launch joins (millions of kernels) on a worker while GPU metrics are still read
        "kernels_joined": After(("kernels", "api"), _launch_join),
        "nvtx": (lambda: read_nvtx(db, strings, window)) if nvtx else (lambda: None),
        "memcpy": lambda: cuda.read_memcpy(db, window),
        "memset": lambda: cuda.read_memset(db, window),
        "sync": lambda: cuda.read_sync(db, window),
        "memcpy_joined": After(("memcpy", "api"), _launch_join),
        "memset_joined": After(("memset", "api"), _launch_join),
        "sync_joined": After(("sync", "api"), lambda s, a: (
            None if s is None else _launch_join(s[0], a))),
        # count(*) scans: C, off the main thread (a streamed chunk: the skeleton has them)
        "table_counts": (lambda: {}) if chunk else (lambda: table_counts(db)),
        # host-side tables: absent in most exports (then no query at all)
        "osrt": lambda: read_osrt(db, strings, window),
        "cpu_samples": lambda: read_cpu_samples(db, strings, window),
    })


def _gpu_work(db: NsysDb, read: dict, schema: tuple, src: str,
              warnings: list[LoadWarning]) -> dict[str, pd.DataFrame]:
    """Kernels, memcpys, memsets and syncs joined to their launching API call (validated frames),
    with the unmatched-launch and no-CUDA warnings."""
    unmatched: dict[str, tuple[int, int]] = {}

    def joined(key, contract, name):
        if read[key] is None:
            return contract.empty()
        out, miss = read[key]
        # memcpys: unified-memory migrations have no launching call to miss (C.launch_counts)
        unmatched[name] = C.launch_counts(out) if name == "memcpys" else (miss, len(out))
        return out

    kernels_j = joined("kernels_joined", C.KERNELS, "kernels")
    memcpy_j = joined("memcpy_joined", C.MEMCPY, "memcpys")
    memset_j = joined("memset_joined", C.MEMSET, "memsets")
    sync_raw = read["sync"]
    if sync_raw is not None:
        sync_j = joined("sync_joined", C.SYNC, "syncs")
        sync_j["sync_kind"] = cuda.classify_sync(sync_j["launch_api"].array, sync_raw[1],
                                                 use_sync_type=schema >= (3, 25))
    else:
        sync_j = C.SYNC.empty()
    f = {"kernels": C.KERNELS.validate(kernels_j, source=src),
         "memcpy": C.MEMCPY.validate(memcpy_j, source=src),
         "memset": C.MEMSET.validate(memset_j, source=src),
         "sync": C.SYNC.validate(sync_j, source=src)}
    api = read["api"]
    gaps = cuda.join_gaps(db)  # tables that cannot be joined at all: one warning saying why
    w = cuda.join_gap_warning(gaps, unmatched)
    if w is not None:
        warnings.append(w)
    joinable = {k: v for k, v in unmatched.items() if k not in gaps}
    w = cuda.unmatched_warning(joinable) if len(api) or any(t for _, t in joinable.values()) \
        else None
    if w is not None:
        warnings.append(w)
    if not len(f["kernels"]) + len(f["memcpy"]) + len(f["memset"]):
        present = [t for t in (cuda.KERNEL_TABLE, cuda.MEMCPY_TABLE, cuda.MEMSET_TABLE) if db.has(t)]
        warnings.append(LoadWarning(
            "no_cuda_tables",
            "the export holds no CUDA GPU activity (no kernel, memcpy or memset rows"
            + ("" if present else "; the kernel, memcpy and memset tables are absent") + ")",
            0, HINT_CAPTURE_TRACE))
    return {**f, "api": api}


def _sane_events(db: NsysDb, gpu: dict[str, pd.DataFrame], nvtx_res,
                 warnings: list[LoadWarning]):
    """Rows whose times cannot be right dropped (``loaders/sanity.py``) → (GPU/API frames, NVTX
    read, capture duration in ns: the declared one when trusted, else the last event's end)."""
    declared = capture_duration(db)
    nvtx_raw = None
    if nvtx_res is not None:  # open ranges are checked on their start only (end = start here)
        nvtx_raw = nvtx_res.ranges.assign(end_ns=np.where(
            nvtx_res.open_mask, nvtx_res.ranges["start_ns"].to_numpy(np.int64),
            nvtx_res.ranges["end_ns"].to_numpy(np.int64)))
    events = {**gpu, "nvtx": nvtx_raw,
              "nvtx_marks": nvtx_res.marks if nvtx_res is not None else None}
    window, distrusted = sanity.trusted_window(events, declared)
    events, bad_rows = sanity.drop_invalid_rows(events, window)
    if bad_rows is not None:
        warnings.append(bad_rows)
    if distrusted and declared is not None:
        warnings.append(sanity.distrust_warning(declared))
    gpu = {k: events[k] for k in ("kernels", "memcpy", "memset", "sync", "api")}
    if nvtx_res is not None:
        nvtx_res = sanity.filter_nvtx(nvtx_res, nvtx_raw, window)
    duration = declared if not distrusted else None
    if duration is None:
        ends = [int(f["end_ns"].max()) for f in gpu.values() if len(f)]
        if nvtx_res is not None and nvtx_res.max_ts is not None:
            ends.append(nvtx_res.max_ts)
        duration = max(ends) if ends else 0
    return gpu, nvtx_res, duration


def _nvtx_frames(nvtx_res, duration: int, src: str, warnings: list[LoadWarning]
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(NVTX ranges, NVTX marks) frames, open ranges ended at the capture end (warned)."""
    if nvtx_res is not None:
        nvtx_f = finish_ranges(nvtx_res, duration, src)
        marks_f = nvtx_res.marks
        n_open = int(nvtx_res.open_mask.sum())
        if n_open:
            warnings.append(LoadWarning(
                "unterminated_nvtx", f"{n_open:,} NVTX range(s) never ended in the capture; "
                "they are treated as ending at the capture end (closed=False)", n_open,
                "end every range (nvtxRangePop/End) before the capture stops"))
    else:
        nvtx_f, marks_f = C.NVTX.empty(), C.NVTX_MARKS.empty()
    if not len(nvtx_f):
        warnings.append(LoadWarning(
            "no_nvtx", "the export holds no NVTX ranges, so steps and phases cannot be named",
            0, HINT_ADD_NVTX))
    return nvtx_f, marks_f


_SELECTION_EMPTY = {  # load warning code → (tables that hold its rows, what the window lacks,
    # what follows)
    "no_cuda_tables": ((cuda.KERNEL_TABLE, cuda.MEMCPY_TABLE, cuda.MEMSET_TABLE),
                       "kernel, memcpy or memset rows", ""),
    "no_nvtx": (("NVTX_EVENTS",), "NVTX ranges", ", so steps and phases cannot be named")}


def _selection_warnings(warnings: list[LoadWarning], counts: dict[str, int]
                        ) -> list[LoadWarning]:
    """The load warnings of a read over a chosen window: a table the export holds rows of but
    the window does not is the window's lack, not the export's (worded so, with the hint to
    widen the window rather than to re-capture)."""
    out = []
    for w in warnings:
        tables, lacks, then = _SELECTION_EMPTY.get(w.code, ((), "", ""))
        rows = sum(int(counts.get(t, 0) or 0) for t in tables)
        out.append(LoadWarning(w.code, f"the analysed window holds no {lacks} (the export's "
                               f"{rows:,} lie outside it){then}", w.count,
                               WIDEN_WINDOW_HINT) if rows else w)
    return out


def _owners(frames: list[pd.DataFrame], marks_f: pd.DataFrame) -> np.ndarray:
    """Distinct ``global_pid`` of every event (marks: from their ``global_tid``)."""
    return np.concatenate([distinct_ints(f["global_pid"].to_numpy(np.int64)) for f in frames] +
                          [(marks_f["global_tid"].to_numpy(np.int64) & np.int64(-16777216))
                           if len(marks_f) else np.zeros(0, np.int64)])


def _meta_extra(db: NsysDb, export_md: dict, gpu_layout, event_types, window_record,
                kernels_f: pd.DataFrame, kernel_detail: bool) -> dict:
    """``TraceMeta.extra``: reader, GPU table layout, read window, export parameters, era."""
    extra = {"reader": db.reader, "gpu_table": gpu_layout, "capture_event_types": event_types}
    if window_record is not None:
        if window_record["reason"] == "memory_budget":
            window_record.update(window_shares(db, kernels_f))
        extra["read_window"] = window_record
    if not kernel_detail:
        extra["kernel_detail"] = False  # nsys_cuda.KERNEL_DETAIL_COLUMNS not read (-1)
    if export_md.get("EXPORT_PARAM_LAZY", export_md.get("EXPORT_LAZY")):
        extra["export_lazy"] = export_md.get("EXPORT_PARAM_LAZY", export_md.get("EXPORT_LAZY"))
    if export_md.get("DERIVED_WINDOW_NS"):
        extra["derived_window_ns"] = export_md["DERIVED_WINDOW_NS"]
    if export_md.get("EXPORT_PARAM_TIMES_TO_EXPORT"):
        extra["times_to_export"] = export_md["EXPORT_PARAM_TIMES_TO_EXPORT"]
    if not export_md:
        extra["era"] = "pre-2022 (no version table)"
        hint = version_hint(db)
        if hint:
            extra["nsys_version_hint"] = hint
    return extra


def file_samples(db: NsysDb, strings: StringTable, chunk: bool
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(launch-shape sample, per-SM limits) of the whole file — read by a whole load and by the
    streamed skeleton alike (so both runs see the same sample), never by a chunk (empty frames)."""
    if chunk:
        return C.LAUNCH_SHAPES.empty(), C.SM_LIMITS.empty()
    return read_launch_shapes(db, strings), read_sm_limits(db)


SKELETON_SKIPS = ("api", "kernels", "kernels_joined", "memcpy", "memset", "sync", "memcpy_joined",
                  "memset_joined", "sync_joined", "osrt", "cpu_samples")
"""Reads a skeleton load leaves out (``load_nsys_sqlite(skeleton=True)``)."""


def _load(db: NsysDb, kernel_detail: bool = True, time_window: tuple[int, int] | None = None,
          row_fraction: float | None = None, skeleton: bool = False,
          chunk: bool = False, zones: ZoneMap | None = None, nvtx: bool = True,
          known_threads: pd.DataFrame | None = None) -> TraceBundle:
    """Read every table the analyses use into contract frames (``model/contracts.py``), with the
    load warnings in the order the report lists them."""
    _check_is_nsys(db)
    src = str(db.path)
    strings = StringTable(db)
    warnings: list[LoadWarning] = []
    window, window_record = _read_window(db, time_window, row_fraction, warnings, zones)
    export_md = read_export_metadata(db)
    schema_version, schema = _schema(export_md, warnings)
    read = _read_event_tables(db, strings, window, kernel_detail, skeleton, chunk, nvtx)
    gpu = _gpu_work(db, read, schema, src, warnings)
    gpu, nvtx_res, duration = _sane_events(db, gpu, read["nvtx"], warnings)
    nvtx_f, marks_f = _nvtx_frames(nvtx_res, duration, src, warnings)
    if time_window is not None and not chunk:  # a --window / step selection, not the export
        warnings[:] = _selection_warnings(warnings, read["table_counts"])
    kernels_f, memcpy_f, memset_f = gpu["kernels"], gpu["memcpy"], gpu["memset"]

    # ---- GPUs, metrics, memory
    devices = np.concatenate([distinct_ints(f["device_id"].to_numpy(np.int64))  # perf: no 2M
                              for f in (kernels_f, memcpy_f, memset_f)])  # concat
    gpus, gpu_warn, gpu_layout = read_gpus(db, devices)
    warnings += gpu_warn
    gpu_metrics, metric_warn = read["gpu_metrics"]
    warnings += metric_warn
    gpu_memory = read_gpu_memory(db)

    # ---- threads and processes
    threads = read_threads(db, strings, nvtx_res.thread_names if nvtx_res is not None
                           else known_threads)
    processes = read_processes(db, _owners([*gpu.values(), nvtx_f], marks_f), threads)
    if strings.unresolved:
        warnings.append(LoadWarning(
            "unresolved_strings", f"{strings.unresolved} string id(s) are missing from StringIds "
            "(shown as <string #ID>)", strings.unresolved))
    if strings.truncated:
        warnings.append(LoadWarning(
            "long_names", f"{strings.truncated} name(s) longer than {MAX_NAME_CHARS:,} characters "
            "were cut to that length (a damaged or crafted export)", strings.truncated,
            HINT_REEXPORT))

    # ---- metadata
    env, command_line, event_types = capture_info(db)
    meta = TraceMeta(
        path=src, format="nsys-sqlite", nsys_version=export_md.get("EXPORT_PRODUCT_VERSION", ""),
        schema_version=schema_version, capture_start_ns=0, capture_end_ns=int(duration),
        session_start_utc_ns=session_start_utc(db), tables=read["table_counts"],
        command_line=command_line, host=host_info(db), environment={**device_environment(db), **env},
        extra=_meta_extra(db, export_md, gpu_layout, event_types, window_record, kernels_f,
                          kernel_detail))
    if db.has("EXPORT_META_DATA") or db.has("META_DATA_EXPORT"):
        host_name = export_md.get("EXPORT_HOST")
        if host_name and "Hostname" not in meta.host:
            meta.host["Hostname"] = host_name

    shapes, limits = read["file_samples"]
    launches = None if chunk else launch_calls_without_kernels(db)
    if launches is not None:
        meta.extra["launch_calls_without_kernels"] = launches
    if not chunk:  # the whole capture's graph launch APIs (program.capture_signals)
        meta.extra["graph_launch_apis"] = graph_launch_apis(db)
    return TraceBundle(
        launch_shapes=shapes, sm_limits=limits,
        meta=meta, kernels=kernels_f, memcpy=memcpy_f, memset=memset_f, sync=gpu["sync"],
        api=gpu["api"], nvtx=nvtx_f, nvtx_marks=marks_f, threads=threads, processes=processes,
        gpus=gpus, gpu_metrics=gpu_metrics, gpu_memory=gpu_memory, osrt=read["osrt"],
        cpu_samples=read["cpu_samples"], warnings=warnings)


__all__ = ["load_nsys_sqlite", "CAPTURE_FLAGS"]

