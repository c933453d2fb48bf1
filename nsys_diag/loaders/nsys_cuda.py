"""CUDA tables of an nsys export → KERNELS, MEMCPY, MEMSET, SYNC, API frames (NSYS_SQLITE.md §2.1–2.6).

Columns are selected by name (``PRAGMA table_info``): positions shift between versions and
post-processors append their own columns. GPU rows get their launching call by joining
``CUPTI_ACTIVITY_KIND_RUNTIME`` on (correlationId, process), eventClass 0/1 only (§2.3), vectorised.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from nsys_diag.loaders.nsys_db import Columns, NsysDb
from nsys_diag.loaders.read_window import ReadWindow
from nsys_diag.loaders.nsys_specs import (  # noqa: F401 - names re-exported for callers
    API_NAME_KEY, API_REQUIRED, GPU_OP_REQUIRED, KERNEL_DETAIL_COLUMNS, KERNEL_NAME_COLUMNS,
    KERNEL_TABLE,
    MEMCPY_TABLE, MEMSET_TABLE, RUNTIME_TABLE, SYNC_TABLE, api_spec, api_where, constants_where,
    gpu_op_spec, kernel_constants, kernel_spec, opt_col)
from nsys_diag.loaders.nsys_strings import (StringTable, categorical, constant_view,
                                            decode_global_tid,
                                            pid_of_global_pid, strip_runtime_suffix)
from nsys_diag.model import contracts as C
from nsys_diag.model.bundle import LoadWarning
from nsys_diag.model.errors import SchemaError
from nsys_diag.model.vocabulary import HINT_CAPTURE_LAUNCHES

NO_STREAM = 0xFFFFFFFF
"""SYNCHRONIZATION streamId sentinel for device/event-level syncs (§2.6); becomes -1."""

# ENUM_CUDA_MEMCPY_OPER ids (stable 2021–2026, §5) → contract copy kinds. Array endpoints are
# device memory, so Host↔Array counts as H2D/D2H and Array↔Device as D2D. Unified-memory
# migrations (11/12/13) keep their own kinds: the driver moves pages on demand (page faults,
# prefetches, evictions), which is not an explicit copy the program issued.
COPY_KINDS = {1: "H2D", 3: "H2D", 2: "D2H", 4: "D2H", 5: "D2D", 6: "D2D", 7: "D2D", 8: "D2D",
              9: "H2H", 10: "P2P", 11: "uvm_h2d", 12: "uvm_d2h", 13: "uvm_d2d"}
# ENUM_CUDA_MEM_KIND ids (nsys numbering, not CUPTI's, §5).
MEM_KINDS = {0: "pageable", 1: "pinned", 2: "device", 3: "array", 4: "managed",
             5: "device_static", 6: "managed_static", 7: "unknown"}
# ENUM_CUPTI_SYNC_TYPE as written by schema >= 3.25 (the only version agreeing with the enum, §2.6).
SYNC_TYPES_325 = {1: "event", 2: "stream_wait", 3: "stream", 4: "context"}

_SYNC_BY_API = (  # classified by the correlated API name (§2.6), first match wins
    (re.compile(r"DeviceSynchronize"), "device"),
    (re.compile(r"CtxSynchronize"), "context"),
    (re.compile(r"StreamWaitEvent"), "stream_wait"),
    (re.compile(r"Stream(Synchronize|Query)"), "stream"),
    (re.compile(r"Event(Synchronize|Query)"), "event"),
)


def _require(db: NsysDb, table: str, required) -> list[str]:
    cols = db.columns(table)
    missing = [c for c in required if c not in cols]
    if missing:
        raise SchemaError(db.path, f"table {table} lacks column(s) {missing}",
                          "not a known nsys export layout; please report the nsys version")
    return cols


# ------------------------------------------------------------------------------------------ API
def read_api(db: NsysDb, strings: StringTable, window: ReadWindow | None = None) -> pd.DataFrame:
    """CUDA runtime + driver calls, eventClass 0/1 (67 = backtrace duplicates dropped, §2.2).

    ``window``: only the calls in it and the launches of its GPU work (``read_window``)."""
    if not db.has(RUNTIME_TABLE):
        return C.API.empty()
    cols = _require(db, RUNTIME_TABLE, API_REQUIRED)
    has_class = "eventClass" in cols
    d = db.read(RUNTIME_TABLE, api_spec(cols), where=api_where(
        cols, window.api("correlationId" in cols) if window is not None else ""))
    if has_class:  # nameId × 2 + eventClass (0 runtime, 1 driver), from SQLite
        key = d.ints(API_NAME_KEY)
    else:  # no eventClass column: tell runtime from driver by the name
        name_ids = d.ints("nameId")
        names = strings.categorical(name_ids)
        is_rt = np.asarray(pd.Series(names.categories).str.startswith("cuda"))[names.codes] \
            if len(names.categories) else np.zeros(len(name_ids), np.bool_)
        key = name_ids * 2
        key += ~is_rt  # in place (perf: one 2M-row temporary less)
    # One label per distinct (nameId, class): runtime names lose their _vNNNN suffix, driver keep _v2.
    codes, uniq = pd.factorize(key, use_na_sentinel=False)
    uniq = np.asarray(uniq, dtype=np.int64)
    raw = strings.lookup((uniq // 2).tolist())
    labels = []
    for k, text in zip(uniq.tolist(), raw):
        text = text if text is not None else f"<string #{k // 2}>"
        labels.append(text if k % 2 else strip_runtime_suffix(text))
    gpid, pid, tid = decode_global_tid(d.ints("globalTid"))  # one process: stride-0 gpid/pid
    df = pd.DataFrame(copy=False, data={
        "start_ns": d.ints("start"), "end_ns": d.ints("end"), "global_tid": d.ints("globalTid"),
        "global_pid": gpid, "pid": pid, "tid": tid, "correlation_id": d.ints("correlationId"),
        "name": categorical(np.asarray(codes, dtype=np.int64), labels),
        "api_class": pd.Categorical.from_codes((key & 1).astype(np.int8),  # int8: perf
                                               categories=["runtime", "driver"]),
    })
    return C.API.validate(df, source=str(db.path))


# ------------------------------------------------------------------------------ GPU operations
def _overlap(window: ReadWindow | None, table: str) -> str:
    return window.overlap(table=table) if window is not None else ""


def _gpu_op_frame(d: Columns) -> dict[str, np.ndarray]:
    """The frame columns every GPU-operation table shares (``nsys_specs.gpu_op_spec``)."""
    gpid = constant_view(d.ints("globalPid"))  # perf: one GPU / one process → no 2M-row arrays
    return {"start_ns": d.ints("start"), "end_ns": d.ints("end"),
            "device_id": constant_view(d.ints("deviceId")),
            "context_id": d.ints("contextId"), "stream_id": constant_view(d.ints("streamId")),
            "correlation_id": d.ints("correlationId"), "global_pid": gpid,
            "pid": pid_of_global_pid(gpid)}


KERNEL_DETAIL_FRAME_COLUMNS = ("context_id", "grid_x", "grid_y", "grid_z", "block_x", "block_y",
                               "block_z", "registers_per_thread", "smem_static_bytes",
                               "smem_dynamic_bytes", "graph_node_id")
"""Frame names of ``nsys_specs.KERNEL_DETAIL_COLUMNS`` (-1 when ``read_kernels(detail=False)``):
an analysis that starts to use one must remove it there (tests/loaders/test_loader_fast_paths.py
checks the analyses' sources)."""


def read_kernels(db: NsysDb, strings: StringTable, detail: bool = True,
                 window: ReadWindow | None = None) -> pd.DataFrame | None:
    """Kernels without launch columns (None when the table is absent); ``window``: only the
    kernels overlapping it."""
    if not db.has(KERNEL_TABLE):
        return None
    cols = _require(db, KERNEL_TABLE, GPU_OP_REQUIRED)
    if not any(c in cols for c in KERNEL_NAME_COLUMNS):
        raise SchemaError(db.path, f"table {KERNEL_TABLE} has no kernel name column (one of "
                          f"{', '.join(KERNEL_NAME_COLUMNS)})",
                          "not a known nsys export layout; please report the nsys version")
    d = _read_kernel_columns(db, cols, detail, window)
    if not detail:
        not_read = np.full(len(d.ints("start")), -1, dtype=np.int64)
        not_read.flags.writeable = False
        d.update({c: not_read for c in KERNEL_DETAIL_COLUMNS})
    short = strings.categorical(d.ints("shortName"))
    demangled = strings.categorical(d.ints("demangledName"))
    # Name = demangled, falling back to the short name where demangled is absent/empty.
    empty = np.asarray(pd.Series(demangled.categories) == "", dtype=bool)
    if empty.any() or (d.ints("demangledName") < 0).any():
        use_short = empty[demangled.codes] if len(empty) else np.ones(len(demangled), np.bool_)
        name = pd.Categorical(np.where(use_short, np.asarray(short, dtype=object),
                                       np.asarray(demangled, dtype=object)))
    else:
        name = demangled
    df = pd.DataFrame(copy=False, data={
        **_gpu_op_frame(d), "name": name, "short_name": short,
        "grid_x": d.ints("gridX"), "grid_y": d.ints("gridY"), "grid_z": d.ints("gridZ"),
        "block_x": d.ints("blockX"), "block_y": d.ints("blockY"), "block_z": d.ints("blockZ"),
        "registers_per_thread": d.ints("registersPerThread"),
        "smem_static_bytes": d.ints("staticSharedMemory"),
        "smem_dynamic_bytes": d.ints("dynamicSharedMemory"),
        "graph_node_id": d.ints("graphNodeId"),
    })
    return df


def _read_kernel_columns(db: NsysDb, cols: list[str], detail: bool,
                         window: ReadWindow | None) -> Columns:
    """The kernel read; a whole table whose device/process columns look constant
    (``nsys_specs.KERNEL_CONSTANT_COLUMNS``) is read without them, filtered on their values,
    and kept when that returned every row (they become stride-0 views); else read again whole."""
    consts = kernel_constants(db, cols) if window is None else {}
    d = db.read(KERNEL_TABLE, kernel_spec(cols, detail, consts),
                where=constants_where(consts) if consts else _overlap(window, KERNEL_TABLE))
    if not consts:
        return d
    n = len(d.ints("start"))
    if not db.holds_all_rows(KERNEL_TABLE, n):  # some row differs: read the columns per row
        return db.read(KERNEL_TABLE, kernel_spec(cols, detail))
    for name, value in consts.items():
        one = np.full(1, value, dtype=np.int64)
        one.flags.writeable = False
        d[name] = np.broadcast_to(one, (n,))
    return d


def _kind_categorical(ids: np.ndarray, mapping: dict[int, str], other: str) -> pd.Categorical:
    codes, uniq = pd.factorize(np.asarray(ids, dtype=np.int64), use_na_sentinel=False)
    labels = [mapping.get(int(u), other) for u in np.asarray(uniq).tolist()]
    return categorical(np.asarray(codes, dtype=np.int64), labels)


def read_memcpy(db: NsysDb, window: ReadWindow | None = None) -> pd.DataFrame | None:
    if not db.has(MEMCPY_TABLE):
        return None
    cols = _require(db, MEMCPY_TABLE, GPU_OP_REQUIRED)
    spec = gpu_op_spec(cols) + [opt_col(cols, "bytes", fill=0), opt_col(cols, "copyKind"),
                                 opt_col(cols, "srcKind"), opt_col(cols, "dstKind"),
                                 opt_col(cols, "copyCount", fill=1)]
    d = db.read(MEMCPY_TABLE, spec, where=_overlap(window, MEMCPY_TABLE))
    copy_count = np.where(d.ints("copyCount") < 1, 1, d.ints("copyCount"))
    return pd.DataFrame(copy=False, data={
        **_gpu_op_frame(d), "bytes": d.ints("bytes"),
        "copy_kind": _kind_categorical(d.ints("copyKind"), COPY_KINDS, "other"),
        "src_kind": _kind_categorical(d.ints("srcKind"), MEM_KINDS, "unknown"),
        "dst_kind": _kind_categorical(d.ints("dstKind"), MEM_KINDS, "unknown"),
        "copy_count": copy_count,
    })


def read_memset(db: NsysDb, window: ReadWindow | None = None) -> pd.DataFrame | None:
    if not db.has(MEMSET_TABLE):
        return None
    cols = _require(db, MEMSET_TABLE, GPU_OP_REQUIRED)
    d = db.read(MEMSET_TABLE, gpu_op_spec(cols) + [opt_col(cols, "bytes", fill=0)],
                where=_overlap(window, MEMSET_TABLE))
    return pd.DataFrame({**_gpu_op_frame(d), "bytes": d.ints("bytes")}, copy=False)


def read_sync(db: NsysDb, window: ReadWindow | None = None
              ) -> tuple[pd.DataFrame, np.ndarray] | None:
    """Sync rows (without sync_kind) and their raw ``syncType`` values."""
    if not db.has(SYNC_TABLE):
        return None
    cols = _require(db, SYNC_TABLE, GPU_OP_REQUIRED)
    d = db.read(SYNC_TABLE, gpu_op_spec(cols) + [opt_col(cols, "syncType")],
                where=_overlap(window, SYNC_TABLE))
    df = pd.DataFrame(_gpu_op_frame(d), copy=False)
    df["stream_id"] = np.where(df["stream_id"].to_numpy() == NO_STREAM, -1, df["stream_id"])
    return df, d.ints("syncType")


def classify_sync(launch_api: pd.Categorical, sync_type: np.ndarray,
                  use_sync_type: bool) -> pd.Categorical:
    """sync_kind by the correlated API name; ``syncType`` only as fallback (schema >= 3.25)."""
    labels = []
    for name in launch_api.categories.tolist():
        kind = "unknown"
        for pattern, k in _SYNC_BY_API:
            if pattern.search(name):
                kind = k
                break
        labels.append(kind)
    by_api = np.asarray(labels + ["unknown"], dtype=object)[
        np.where(launch_api.codes < 0, len(labels), launch_api.codes)]
    if use_sync_type and len(by_api):
        fallback = np.asarray([SYNC_TYPES_325.get(int(t), "unknown") for t in
                               np.unique(sync_type)], dtype=object)
        idx = np.searchsorted(np.unique(sync_type), sync_type)
        by_api = np.where(by_api == "unknown", fallback[idx], by_api)
    return pd.Categorical(by_api)


# ---------------------------------------------------------------------------------- launch join
LOOKUP_TABLE_FACTOR = 4
"""The launch join uses a direct-address table when the largest key is below this many times
the rows joined (memory: at most 4 bytes × that many entries)."""


def attach_launch(ops: pd.DataFrame, api: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Add ``launch_*`` columns: the API row with the same (correlationId, process).

    Vectorised: keys are (process index, correlationId) packed into one int64, looked up with
    ``searchsorted`` in the sorted API keys (first API row wins on duplicates). Returns the frame
    and the number of unmatched rows.

    Perf (bench, 2M kernels): with one process the correlation id alone is the key, API rows
    already in key order are not sorted, and no temporary is built where nothing is dropped —
    every avoided 16 MB temporary is memory the process never has to touch.
    """
    n = len(ops)
    api_labels: list[str] = list(api["name"].cat.categories) if len(api) else []
    op_corr = ops["correlation_id"].to_numpy(np.int64)
    matched = np.zeros(n, bool)
    src = np.zeros(0, np.int64)
    if n and len(api):
        a_corr = api["correlation_id"].to_numpy(np.int64)
        a_gpid = api["global_pid"].to_numpy(np.int64)
        o_gpid = ops["global_pid"].to_numpy(np.int64)
        single = bool((a_gpid == a_gpid[0]).all() and (o_gpid == a_gpid[0]).all())
        if single:  # one process: no hashing of millions of ids
            proc_codes, procs = None, a_gpid[:1]
        else:
            proc_codes, procs = pd.factorize(np.concatenate([a_gpid, o_gpid]),
                                             use_na_sentinel=False)
            proc_codes = np.asarray(proc_codes, np.int64)
        if max(int(a_corr.max(initial=0)), int(op_corr.max(initial=0))) < (1 << 40) and \
                len(procs) < (1 << 22):
            if single:  # ids ≥ 0 are their own key (no copy when there is no -1)
                a_key = a_corr if a_corr.min(initial=0) >= 0 else np.maximum(a_corr, 0)
                o_key = op_corr if op_corr.min(initial=0) >= 0 else np.maximum(op_corr, 0)
            else:
                assert proc_codes is not None  # several processes: factorized above
                a_key = (proc_codes[:len(a_gpid)] << 40) | np.maximum(a_corr, 0)
                o_key = (proc_codes[len(a_gpid):] << 40) | np.maximum(op_corr, 0)
            del proc_codes
            order = None  # None: sk[i] is API row i
            sk = a_key
            if a_key.size > 1 and not (a_key[1:] >= a_key[:-1]).all():
                order = np.argsort(a_key, kind="stable")
                sk = a_key[order]
            first = np.ones(len(sk), bool)
            first[1:] = sk[1:] != sk[:-1]
            if not first.all():
                sk = sk[first]
                order = np.flatnonzero(first) if order is None else order[first]
            valid_api = (a_corr if order is None else a_corr[order]) >= 0
            if not valid_api.all():
                sk = sk[valid_api]
                order = np.flatnonzero(valid_api) if order is None else order[valid_api]
            if len(sk):
                pos, matched = _lookup(sk, o_key)
                if not (op_corr >= 0).all():
                    matched &= op_corr >= 0
                src = pos[matched] if order is None else order[pos[matched]]
        else:  # huge ids: fall back to a hash join
            left = pd.DataFrame({"c": op_corr, "p": o_gpid, "i": np.arange(n)})
            right = pd.DataFrame({"c": a_corr, "p": a_gpid, "j": np.arange(len(api))})
            right = right[right["c"] >= 0].drop_duplicates(["c", "p"])
            m = left.merge(right, on=["c", "p"], how="inner", validate="m:1")
            matched[m["i"].to_numpy()] = True
            src = np.empty(n, np.int64)
            src[m["i"].to_numpy()] = m["j"].to_numpy()
            src = src[matched]

    def launch_col(values) -> np.ndarray:  # API values of the matched rows, -1 elsewhere
        if n and matched.all():
            return values.to_numpy()[src].astype(np.int64, copy=False)
        col = np.full(n, -1, np.int64)
        if matched.any():
            col[matched] = values.to_numpy()[src]
        return col

    cols = {c: ops[c] for c in ops.columns}  # a new frame sharing the columns (setitem copies)
    cols["launch_global_tid"] = launch_col(api["global_tid"])
    cols["launch_start_ns"] = launch_col(api["start_ns"])
    cols["launch_end_ns"] = launch_col(api["end_ns"])
    fast = _launch_api(api["name"].cat.codes.to_numpy(), src, matched, api_labels) \
        if len(api) and n else None
    if fast is None:
        api_codes = launch_col(api["name"].cat.codes) if len(api) else np.full(n, -1, np.int64)
        fast = _used_categorical(api_codes, api_labels)
    cols["launch_api"] = fast
    return pd.DataFrame(cols, index=ops.index, copy=False), int(n - matched.sum())


def _lookup(sk: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(position in ``sk``, found) of each key; ``sk`` strictly increasing and ≥ 0.

    Many dense keys (the kernels of one process: correlation ids 1…N) are looked up in a
    direct-address table of ``sk[-1] + 1`` entries — one scatter and one gather (perf, bench: 2M
    kernels, ~4× faster than ``searchsorted``); sparse keys (several processes), or a few keys
    (copies, syncs), by binary search."""
    top = int(sk[-1])
    if top < LOOKUP_TABLE_FACTOR * (len(sk) + len(keys)) + 1024 and len(keys) * 16 >= len(sk):
        table = np.full(top + 1, -1, np.int32 if len(sk) < 2**31 else np.int64)
        table[sk] = np.arange(len(sk), dtype=table.dtype)
        inside = (keys >= 0) & (keys <= top)
        if inside.all():
            pos = table[keys]
        else:
            pos = np.full(len(keys), -1, table.dtype)
            pos[inside] = table[keys[inside]]
        return pos, pos >= 0
    pos = np.searchsorted(sk, keys)
    np.minimum(pos, len(sk) - 1, out=pos)
    return pos, sk[pos] == keys


def _launch_api(api_codes: np.ndarray, src: np.ndarray, matched: np.ndarray,
                labels: list[str]) -> pd.Categorical | None:
    """``launch_api``: the API names of the matched rows (``src``: their API rows), the names no
    row uses dropped, unmatched rows ``""`` — ``_used_categorical`` of the gathered codes, but
    gathered, counted and remapped in the API codes' own small integer type (perf, bench: four
    2M-row int64 passes less). None when the fast path does not apply (negative API codes, or
    an API name ``""`` that the missing label would merge with)."""
    picked = api_codes[src]
    if picked.size and int(picked.min()) < 0:
        return None
    present = np.zeros(len(labels), bool)
    present[picked] = True
    kept = [lbl for lbl, p in zip(labels, present.tolist()) if p]
    missing = not bool(matched.all())
    if missing and "" in kept:
        return None
    cats = pd.factorize(pd.Index(kept + [""] * missing), use_na_sentinel=False)[1]
    if len(cats) != len(kept) + missing:  # duplicate labels: the general path merges them
        return None
    dtype = np.int8 if len(cats) < 128 else np.int16 if len(cats) < 32768 else np.int32
    lut = (np.cumsum(present) - 1).astype(dtype)
    if not missing:
        return pd.Categorical.from_codes(lut[picked], categories=pd.Index(cats), validate=False)
    codes = np.full(len(matched), len(kept), dtype)
    codes[matched] = lut[picked]
    return pd.Categorical.from_codes(codes, categories=pd.Index(cats), validate=False)


def _used_categorical(codes: np.ndarray, labels: list[str]) -> pd.Categorical:
    """``categorical(codes, labels).remove_unused_categories()``, counting codes instead of
    sorting them (perf: millions of launch rows, a few dozen API names)."""
    if not labels:
        return categorical(codes, labels)
    present = np.bincount(codes + 1, minlength=len(labels) + 1)[1:] > 0  # code -1: missing
    lut = np.append(np.cumsum(present) - 1, -1)  # old code → new code; lut[-1] = -1 (missing)
    return categorical(lut[codes], [lbl for lbl, p in zip(labels, present.tolist()) if p])


def join_gaps(db: NsysDb) -> dict[str, str]:
    """GPU-operation tables (by frame label) whose rows cannot be joined to a launching API call,
    each with the reason: no runtime table, or no ``correlationId`` on either side."""
    if not db.has(RUNTIME_TABLE):
        why = f"the export has no {RUNTIME_TABLE} table"
    elif "correlationId" not in db.columns(RUNTIME_TABLE):
        why = f"{RUNTIME_TABLE} has no correlationId column"
    else:
        why = ""
    out = {}
    for table, label in ((KERNEL_TABLE, "kernels"), (MEMCPY_TABLE, "memcpys"),
                         (MEMSET_TABLE, "memsets"), (SYNC_TABLE, "syncs")):
        if not db.has(table):
            continue
        if why:
            out[label] = why
        elif "correlationId" not in db.columns(table):
            out[label] = f"{table} has no correlationId column"
    return out


def join_gap_warning(gaps: dict[str, str], counts: dict[str, tuple[int, int]]
                     ) -> LoadWarning | None:
    """One data-quality warning for GPU work that cannot be joined to its launches at all."""
    parts = [f"{label} ({why})" for label, why in gaps.items() if counts.get(label, (0, 0))[1]]
    if not parts:
        return None
    n = sum(counts[label][1] for label in gaps if label in counts)
    return LoadWarning(
        "no_launch_join",
        f"GPU work cannot be joined to the CUDA API calls that launched it: {'; '.join(parts)}; "
        "launch overhead, launching threads and launch APIs are unknown (launch_* columns are -1)",
        n, HINT_CAPTURE_LAUNCHES)


def unmatched_warning(counts: dict[str, tuple[int, int]]) -> LoadWarning | None:
    """One warning for GPU rows whose launching call is not in the export."""
    parts = [f"{miss:,} of {total:,} {name}" for name, (miss, total) in counts.items() if miss]
    if not parts:
        return None
    total_missing = sum(m for m, _ in counts.values())
    return LoadWarning(
        "unmatched_launches",
        f"{', '.join(parts)} have no launching CUDA API call in the export (typical of exports "
        "cut to a time window); their launch_* columns are -1",
        total_missing,
        "export the whole capture (no --times/time window) to attribute all GPU work to CPU calls",
    )
