"""GPU description, GPU-metrics samples and GPU-memory events (NSYS_SQLITE.md §2.10, §2.12, §2.15).

GPU table layouts (detected by columns, not by table name):

* ``TARGET_INFO_GPU`` keyed by ``id`` (2021.2 → today): clockRate Hz, memoryBandwidth B/s,
  totalMemory bytes, computeMajor/Minor.
* ``TARGET_INFO_CUDA_GPU`` (older), keyed by ``deviceId``, one row per (process, device):
  coreClockRate **kHz**; globalMemorySize **MiB or bytes** (told apart by magnitude);
  globalMemoryBandwidth **0 = unknown, else kB/s**. May come with a reduced
  ``TARGET_INFO_GPU(vmId, deviceId, name, busLocation, isDiscrete)``.
* none (e.g. files rewritten by third-party tools): rows are derived from the kernels' device ids,
  with unknown properties and a warning.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from nsys_diag.loaders.nsys_db import Col, NsysDb
from nsys_diag.loaders.read_window import ReadWindow
from nsys_diag.loaders.nsys_specs import (GPU_METRICS_REQUIRED, GPU_METRICS_TABLE,
                                          gpu_metrics_spec, gpu_metrics_time_column)
from nsys_diag.loaders.nsys_strings import (categorical, constant_view, is_constant_view,
                                            pid_of_global_pid)
from nsys_diag.model import contracts as C
from nsys_diag.model.bundle import LoadWarning
from nsys_diag.model.vocabulary import HINT_REEXPORT

_MIB_LIMIT = 1 << 20  # globalMemorySize below this is MiB (a 1 TiB GPU would be 1 048 576 MiB)


def _num(v, cast=int, unknown=-1):
    try:
        x = cast(v)
    except (TypeError, ValueError):
        return unknown
    return x if x > 0 else unknown


def _minor(minor, major) -> int:
    """Compute-capability minor (0 is valid) — unknown when the major is unknown."""
    if _num(major) < 0:
        return -1
    try:
        return int(minor) if int(minor) >= 0 else -1
    except (TypeError, ValueError):
        return -1


def _gpu_row(device_id, name="", chip="", sm=-1, clock_hz=-1, bw=np.nan, mem=-1, ccmaj=-1,
             ccmin=-1, bus="") -> dict:
    def i64(v) -> int:  # unit conversions of absurd values must not overflow int64
        v = int(v)
        return v if -1 <= v < 2**62 else -1

    return {"device_id": int(device_id), "name": name or "", "chip_name": chip or "",
            "sm_count": i64(sm), "clock_hz": i64(clock_hz),
            "memory_bandwidth_bytes_per_s": float(bw), "total_memory_bytes": i64(mem),
            "cc_major": i64(ccmaj), "cc_minor": i64(ccmin), "bus_location": bus or ""}


_TEXT_COLUMNS = {"name", "chipName", "busLocation", "pciBusId", "metricName"}


def _select(db: NsysDb, table: str, wanted: list[str]) -> list[dict]:
    """Rows of a small table as dicts; values CAST to INTEGER/TEXT so odd cells cannot crash us."""
    cols = db.columns(table)
    have = [c for c in wanted if c in cols]
    if not have:
        return []
    exprs = [f'CAST("{c}" AS {"TEXT" if c in _TEXT_COLUMNS else "INTEGER"})' for c in have]
    rows = db.rows(f'SELECT {", ".join(exprs)} FROM "{db.table(table)}"')
    return [dict(zip(have, r)) for r in rows]


def read_gpus(db: NsysDb, kernel_devices: np.ndarray) -> tuple[pd.DataFrame, list[LoadWarning], str]:
    """GPUS frame, warnings, and the layout used ('TARGET_INFO_GPU', 'TARGET_INFO_CUDA_GPU', 'none')."""
    warnings: list[LoadWarning] = []
    rows: dict[int, dict] = {}
    layout = "none"
    gpu_cols = db.columns("TARGET_INFO_GPU")
    if "id" in gpu_cols:
        layout = "TARGET_INFO_GPU"
        described = _select(db, "TARGET_INFO_GPU", ["id", "name", "chipName", "smCount",
                                                    "clockRate", "memoryBandwidth", "totalMemory",
                                                    "computeMajor", "computeMinor", "busLocation"])
        no_id = sum(1 for r in described if r.get("id") is None)
        if no_id:  # hardening: a NULL/non-numeric id cannot name a device; the row is dropped
            warnings.append(LoadWarning(
                "gpu_rows_without_id", f"{no_id} TARGET_INFO_GPU row(s) have no device id and "
                "were ignored", no_id, HINT_REEXPORT))
        for r in (r for r in described if r.get("id") is not None):
            clock = _num(r.get("clockRate"))
            if 0 < clock < 10_000_000:  # sanity: a kHz value (no GPU clocks below 10 MHz)
                clock *= 1000
            bw = _num(r.get("memoryBandwidth"), float, np.nan)
            if bw == bw and bw < 1e9:  # sanity: a kB/s value (no GPU DRAM below 1 GB/s)
                bw *= 1000.0
            rows[int(r["id"])] = _gpu_row(
                r["id"], r.get("name"), r.get("chipName"), _num(r.get("smCount")), clock, bw,
                _num(r.get("totalMemory")), _num(r.get("computeMajor")),
                _minor(r.get("computeMinor"), r.get("computeMajor")), r.get("busLocation"))
    elif db.has("TARGET_INFO_CUDA_GPU") or "deviceId" in gpu_cols:
        layout = "TARGET_INFO_CUDA_GPU" if db.has("TARGET_INFO_CUDA_GPU") else "TARGET_INFO_GPU"
        reduced = {int(r["deviceId"]): r for r in _select(
            db, "TARGET_INFO_GPU", ["deviceId", "name", "busLocation"]) if r.get("deviceId") is not None}
        for r in _select(db, "TARGET_INFO_CUDA_GPU", [
                "deviceId", "name", "pciBusId", "numMultiprocessors", "coreClockRate",
                "globalMemoryBandwidth", "globalMemorySize", "computeCapabilityMajor",
                "computeCapabilityMinor"]):
            if r.get("deviceId") is None or int(r["deviceId"]) in rows:
                continue  # one row per (process, device): keep the first per device
            dev = int(r["deviceId"])
            khz = _num(r.get("coreClockRate"))
            mem = _num(r.get("globalMemorySize"))
            if 0 < mem < _MIB_LIMIT:
                mem *= 1 << 20
            kbps = _num(r.get("globalMemoryBandwidth"), float, np.nan)
            red = reduced.get(dev, {})
            rows[dev] = _gpu_row(dev, r.get("name") or red.get("name"), "",
                                 _num(r.get("numMultiprocessors")),
                                 khz * 1000 if khz > 0 else -1,
                                 kbps * 1000.0 if kbps == kbps else np.nan, mem,
                                 _num(r.get("computeCapabilityMajor")),
                                 _minor(r.get("computeCapabilityMinor"),
                                        r.get("computeCapabilityMajor")),
                                 r.get("pciBusId") or red.get("busLocation"))
        for dev, red in reduced.items():
            rows.setdefault(dev, _gpu_row(dev, red.get("name"), bus=red.get("busLocation")))
    used = sorted({int(x) for x in np.unique(kernel_devices).tolist() if int(x) >= 0})
    absent = [dev for dev in used if dev not in rows]
    if absent:
        for dev in absent:
            rows[dev] = _gpu_row(dev)
        what = "has no GPU table" if layout == "none" else \
            f"does not describe device(s) {absent}"
        warnings.append(LoadWarning(
            "no_gpu_info",
            f"the export {what}; GPU names and peak numbers are unknown for {len(absent)} "
            "device(s) that ran work",
            len(absent),
            f"{HINT_REEXPORT} (tools that cut exports into windows drop TARGET_INFO_GPU)"))
    if not rows:
        return C.GPUS.empty(), warnings, layout
    df = pd.DataFrame([rows[k] for k in sorted(rows)])
    return C.GPUS.validate(df, source=str(db.path)), warnings, layout


_UNIT = re.compile(r"\[([^\]]*)\]\s*$")


def _gpu_of_type(type_ids: np.ndarray) -> np.ndarray:
    """GPU id of each GPU-metric sample: ``typeId & 0xFF`` (NSYS_SQLITE.md §1.5); stride-0 when
    every sample has the same type (perf)."""
    if is_constant_view(type_ids):
        return np.broadcast_to(type_ids[:1] & 0xFF, type_ids.shape)
    return constant_view(type_ids & 0xFF)


def read_gpu_metrics(db: NsysDb, window: ReadWindow | None = None
                     ) -> tuple[pd.DataFrame, list[LoadWarning]]:
    """GPU_METRICS joined with TARGET_INFO_GPU_METRICS on (typeId, metricId); unit-checked.
    ``window``: only the samples inside it."""
    if not db.has(GPU_METRICS_TABLE):
        return C.GPU_METRICS.empty(), []
    cols = db.columns(GPU_METRICS_TABLE)
    if not set(GPU_METRICS_REQUIRED) <= set(cols):
        return C.GPU_METRICS.empty(), [LoadWarning(
            "unknown_layout", "GPU_METRICS has an unknown layout and was ignored", 0)]
    ts_col = gpu_metrics_time_column(cols)
    d = db.read(GPU_METRICS_TABLE, gpu_metrics_spec(cols),
                where=window.instant(f'"{ts_col}"', table=GPU_METRICS_TABLE)
                if window is not None else "")
    ts, metric_ids = d.ints(ts_col), d.ints("metricId")
    names: dict[tuple[int, int], str] = {}
    for r in _select(db, "TARGET_INFO_GPU_METRICS", ["typeId", "metricId", "metricName"]):
        if r.get("typeId") is not None and r.get("metricId") is not None:
            names[(int(r["typeId"]), int(r["metricId"]))] = r.get("metricName") or ""
    warnings: list[LoadWarning] = []
    type_ids = constant_view(d.ints("typeId"))
    if is_constant_view(type_ids):  # perf (bench): one sampled GPU, no sort
        types, key = type_ids[:1], metric_ids & 0xFFFFFFFF
    else:
        types, tinv = np.unique(type_ids, return_inverse=True)
        key = (tinv.astype(np.int64) << 32) | (metric_ids & 0xFFFFFFFF)
    codes, uniq = pd.factorize(key, use_na_sentinel=False)
    labels = []
    for k in np.asarray(uniq, np.int64).tolist():  # distinct (type, metric) pairs
        t, m = int(types[k >> 32]), k & 0xFFFFFFFF
        labels.append(names.get((t, m)) or f"metric#{m}")
    codes = np.asarray(codes, np.int64)
    value = d.floats("value")
    units = [(unit.group(1) if (unit := _UNIT.search(lbl)) else "") for lbl in labels]
    is_pct = np.asarray(["%" in u for u in units] + [False], bool)[codes]
    is_mhz = np.asarray([u.strip().lower() == "mhz" for u in units] + [False], bool)
    if is_mhz.any():  # one user saw Hz stored under a [MHz] label (§2.12): rescale per metric
        for code in np.flatnonzero(is_mhz[:-1]).tolist():
            sel = codes == code
            if np.nanmedian(value[sel]) > 1e5:
                value = value.copy()
                value[sel] = value[sel] / 1e6
                warnings.append(LoadWarning(
                    "gpu_metric_units", f"'{labels[code]}' holds Hz values; rescaled to MHz",
                    int(sel.sum())))
    bad = is_pct & ((value < 0) | (value > 100) | np.isnan(value))
    if bad.any():
        warnings.append(LoadWarning(
            "gpu_metric_out_of_range",
            f"{int(bad.sum()):,} GPU-metric samples of '%' metrics were outside 0–100 and dropped",
            int(bad.sum())))
    keep = slice(None) if not bad.any() else ~bad  # perf: no copies when every sample is kept
    df = pd.DataFrame(copy=False, data={
        "ts_ns": ts[keep], "device_id": _gpu_of_type(type_ids[keep]),
        "metric": categorical(codes[keep], labels), "value": value[keep]})
    return C.GPU_METRICS.validate(df, source=str(db.path)), warnings


def read_gpu_memory(db: NsysDb) -> pd.DataFrame:
    """CUDA_GPU_MEMORY_USAGE_EVENTS (``--cuda-memory-usage=true``)."""
    table = "CUDA_GPU_MEMORY_USAGE_EVENTS"
    cols = db.columns(table)
    if not cols or not {"start", "bytes"} <= set(cols):
        return C.GPU_MEMORY.empty()
    def opt(name, fill=-1):
        return Col(name, "int", "" if name in cols else "NULL", fill)
    d = db.read(table, [Col("start", "int", fill=0), opt("globalPid"), opt("deviceId"),
                        Col("bytes", "int", fill=0), opt("memoryOperationType")])
    op = d.ints("memoryOperationType")
    codes = np.where(op == 0, 0, np.where(op == 1, 1, 2))
    df = pd.DataFrame(copy=False, data={"ts_ns": d.ints("start"), "device_id": d.ints("deviceId"),
                       "pid": pid_of_global_pid(d.ints("globalPid")), "bytes": d.ints("bytes"),
                       "op": pd.Categorical.from_codes(codes, categories=["alloc", "free", "other"])})
    return C.GPU_MEMORY.validate(df, source=str(db.path))
