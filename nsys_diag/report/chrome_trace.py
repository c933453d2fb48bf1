"""The analysed window as a Chrome-trace / Perfetto JSON document (``analyze --trace-out``).

``chrome_trace(bundle, suite)`` returns the JSON object format of the Trace Event Format
(``{"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}``): complete events
(``ph: "X"``) with ``ts``/``dur`` in microseconds (floats, ns precision) from the analysed window's
start, and metadata events (``ph: "M"``) naming the tracks. Opens in ui.perfetto.dev or
chrome://tracing, offline.

Tracks, per analysed process:

- one Chrome "process" per GPU (``GPU <id> · <process> <pid>``) with one thread per CUDA stream:
  its kernels (``cat`` the kernel class of ``kernels/catalog.py``, ``communication`` for NCCL),
  copies (``cat: memcpy``, named by copy kind) and memsets; above the streams, a thread ``idle``
  holding each GPU gap, named by the cause that took most of it (``gaps/causes.py``), every
  cause's ns in ``args``;
- one Chrome "process" for the host side (``<process> <pid> · host``): a thread ``steps`` (the
  detected steps, with their kind) and a thread ``NVTX phases`` (the exclusive phase instances of
  ``steps/phases.py``), and — with the replay — a thread ``critical path waits`` (the replayed
  steps' critical-path waits, ``replay.critical_path_segments``: capture times, named by kind
  and call).

Everything is clipped to the process's analysed window. Bounded: at most ``max_events`` complete
events; over it, the GPU operations (kernels, copies, memsets) are thinned to the longest ones
(steps, phases and gaps are kept first, gaps longest first too), and ``otherData`` says how many
were dropped and the shortest kept — the file stays a few tens of MB for a huge trace.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from nsys_diag.analyses.kernels.catalog import classify_category
from nsys_diag.analyses.kernels.table import in_window
from nsys_diag.analyses.gaps.causes import GapsResult
from nsys_diag.analyses.process import AnalysisSuite, ProcessAnalysis
from nsys_diag.analyses.steps.detection import StepsResult
from nsys_diag.analyses.steps.phases import PhasesResult
from nsys_diag.analyses.timeline.arrays import process_rows
from nsys_diag.model.bundle import TraceBundle
from nsys_diag.model.vocabulary import GAP_CAUSES

MAX_EVENTS = 200_000
"""Complete events written at most (about 150 bytes each: a file of ~30 MB at the cap)."""
IDLE_TID = 0
"""Chrome thread id of a GPU's ``idle`` track (streams are ``stream_id + STREAM_TID_BASE``)."""
STREAM_TID_BASE = 2
"""Stream ``s`` is thread ``s + 2``: kernels without a stream id (``stream_id`` -1: an input that
records none) are thread 1, apart from the idle track."""


def stream_track(stream_id: int) -> str:
    """The Chrome thread name of a GPU stream's track."""
    return f"stream {stream_id}" if stream_id >= 0 else "kernels (no stream id)"
STEPS_TID, PHASES_TID, PATH_TID = 1, 2, 3
"""Chrome thread ids of the host tracks."""
GPU_PID_BASE, HOST_PID_BASE = 1_000_000, 2_000_000
"""Chrome process ids: ``GPU_PID_BASE + 1000 * process index + device``; ``HOST_PID_BASE +
process index`` (stable and distinct, whatever the OS pids)."""


def _us(ns) -> np.ndarray:
    """Microseconds with three decimals (the ns survive the float)."""
    return np.round(np.asarray(ns, dtype=np.int64) / 1e3, 3)


def _clip(frame: pd.DataFrame, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
    s = np.clip(frame["start_ns"].to_numpy(np.int64), start, end)
    e = np.clip(frame["end_ns"].to_numpy(np.int64), start, end)
    return s, e


def _events(names, cats, pid: int, tids, starts, ends, origin: int, args=None) -> list[dict]:
    """Complete events (``ph: X``) of equal-length columns; ``args`` one dict per row or None."""
    ts, dur = _us(np.asarray(starts) - origin), _us(np.asarray(ends) - np.asarray(starts))
    out = []
    for i in range(len(ts)):
        ev = {"name": str(names[i]), "cat": str(cats[i]), "ph": "X", "pid": pid,
              "tid": int(tids[i]), "ts": float(ts[i]), "dur": float(dur[i])}
        if args is not None and args[i]:
            ev["args"] = args[i]
        out.append(ev)
    return out


def _meta(kind: str, pid: int, name: str, tid: int | None = None, sort: int | None = None) -> list[dict]:
    ev = {"name": kind, "ph": "M", "pid": pid, "args": {"name": name}}
    if tid is not None:
        ev["tid"] = tid
    out = [ev]
    if sort is not None:
        key = "thread_sort_index" if tid is not None else "process_sort_index"
        out.append({"name": key, "ph": "M", "pid": pid, **({"tid": tid} if tid is not None else {}),
                    "args": {"sort_index": sort}})
    return out


def _gpu_ops(bundle: TraceBundle, p: ProcessAnalysis) -> pd.DataFrame:
    """The process's kernels, copies and memsets overlapping its window, clipped to it: one frame
    of start_ns, end_ns, device_id, stream_id, name, cat, bytes."""
    w = p.window
    parts = []
    for frame_name in ("kernels", "memcpy", "memset"):
        df = process_rows(getattr(bundle, frame_name), p.global_pid)
        if not len(df):
            continue
        df = in_window(df, w)
        if len(df) and p.devices:  # --device: the other GPUs' work is not analysed
            df = df.loc[np.isin(df["device_id"].to_numpy(np.int64), p.devices)]
        if not len(df):
            continue
        s, e = _clip(df, w.start_ns, w.end_ns)
        if frame_name == "kernels":
            names = df["name"].astype(str).to_numpy(object)
            uniq, inv = np.unique(names, return_inverse=True)
            cats = classify_category(pd.Series(uniq)).astype(object)[inv]
            byts = np.full(len(df), -1, np.int64)
        elif frame_name == "memcpy":
            names = ("memcpy " + df["copy_kind"].astype(str)).to_numpy(object)
            cats, byts = np.full(len(df), "memcpy", object), df["bytes"].to_numpy(np.int64)
        else:
            names = np.full(len(df), "memset", object)
            cats, byts = np.full(len(df), "memset", object), df["bytes"].to_numpy(np.int64)
        parts.append(pd.DataFrame({"start_ns": s, "end_ns": e, "device_id": df["device_id"].to_numpy(np.int64),
                                   "stream_id": df["stream_id"].to_numpy(np.int64), "name": names,
                                   "cat": cats, "bytes": byts}))
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in (
            ("start_ns", "int64"), ("end_ns", "int64"), ("device_id", "int64"), ("stream_id", "int64"),
            ("name", "object"), ("cat", "object"), ("bytes", "int64"))})
    return pd.concat(parts, ignore_index=True)


def _longest(starts: np.ndarray, ends: np.ndarray, keep: int) -> np.ndarray:
    """Indices of the ``keep`` longest intervals (ties: earliest first), in time order."""
    if keep >= len(starts):
        return np.arange(len(starts))
    order = np.lexsort((starts, -(ends - starts)))[:max(keep, 0)]
    return np.sort(order)


def _host_events(p: ProcessAnalysis, pid: int, origin: int) -> list[dict]:
    """The steps and the NVTX phase instances of ``p``, clipped to its window."""
    w, out = p.window, []
    st = p.steps
    if isinstance(st, StepsResult):
        s = np.clip(st.starts_ns.astype(np.int64), w.start_ns, w.end_ns)
        e = np.clip(st.ends_ns.astype(np.int64), w.start_ns, w.end_ns)
        idx = np.flatnonzero(e > s)
        out += _events([f"step {i}" for i in idx], ["step"] * len(idx), pid, [STEPS_TID] * len(idx),
                       s[idx], e[idx], origin, [{"kind": st.kinds[i]} for i in idx])
    ph = p.phases
    if isinstance(ph, PhasesResult):
        s = np.clip(ph.inst_starts_ns.astype(np.int64), w.start_ns, w.end_ns)
        e = np.clip(ph.inst_ends_ns.astype(np.int64), w.start_ns, w.end_ns)
        idx = np.flatnonzero(e > s)
        names = [ph.rows[int(ph.inst_row[i])].name for i in idx]
        out += _events(names, ["nvtx_phase"] * len(idx), pid, [PHASES_TID] * len(idx),
                       s[idx], e[idx], origin)
    return out


def _path_events(p: ProcessAnalysis, pid: int, origin: int, budget: int
                 ) -> tuple[list[dict], int]:
    """The replay's critical-path waits in ``p``'s window (the longest ``budget``, named by kind
    and call; ≤ ``analysis.MAX_PATH_SEGMENTS``); (events, total)."""
    rp, w = getattr(p, "replay", None), p.window
    segs = [(max(a, w.start_ns), min(b, w.end_ns), k, n)
            for a, b, k, n in (getattr(rp, "segments", ()) if getattr(rp, "available", False)
                               else ()) if min(b, w.end_ns) > max(a, w.start_ns)]
    if not segs:
        return [], 0
    s = np.array([x[0] for x in segs], np.int64)
    e = np.array([x[1] for x in segs], np.int64)
    keep = _longest(s, e, budget)
    names = [f"{k}: {n}" if n else k for _, _, k, n in segs]
    return _events([names[i] for i in keep], ["critical_path"] * len(keep), pid,
                   [PATH_TID] * len(keep), s[keep], e[keep], origin), len(segs)


def _gap_events(p: ProcessAnalysis, gpu_pid, origin: int, budget: int) -> tuple[list[dict], int]:
    """The process's GPU gaps (longest ``budget``), named by their largest cause; (events, total)."""
    iv = p.gaps.intervals if isinstance(p.gaps, GapsResult) else None
    if iv is None or not len(iv.starts_ns):
        return [], 0
    frame = iv.to_frame()
    s, e = _clip(frame, p.window.start_ns, p.window.end_ns)
    keep = _longest(s, e, budget)
    causes = frame["cause"].astype(str).to_numpy(object)
    cols = {c: frame[f"{c}_ns"].to_numpy(np.int64) for c in GAP_CAUSES}
    args = [{f"{c}_ns": int(cols[c][i]) for c in GAP_CAUSES if cols[c][i]} for i in keep]
    dev = frame["device_id"].to_numpy(np.int64)
    events = _events(causes[keep], ["idle"] * len(keep), 0, [IDLE_TID] * len(keep), s[keep], e[keep],
                     origin, args)
    for ev, i in zip(events, keep):
        ev["pid"] = gpu_pid(int(dev[i]))
    return events, len(s)


def chrome_trace(bundle: TraceBundle, suite: AnalysisSuite, *, source: str = "",
                 max_events: int = MAX_EVENTS) -> dict:
    """The Chrome-trace JSON object of every analysed process's window (module docstring)."""
    origin = min(int(p.window.start_ns) for p in suite.processes)
    events: list[dict] = []
    meta: list[dict] = []
    counts = {"host": 0, "host_written": 0, "gpu_ops": 0, "gpu_ops_written": 0, "gaps": 0, "gaps_written": 0}
    shortest_kept: int | None = None
    budget = max_events
    for pi, p in enumerate(suite.processes):
        label = f"{p.name or 'process'} {p.pid}" if p.pid != -1 else "trace"
        host_pid = HOST_PID_BASE + pi
        host = _host_events(p, host_pid, origin)
        counts["host"] += len(host)
        host = host[:max(budget, 0)]
        counts["host_written"] += len(host)
        budget -= len(host)
        if host or bool(getattr(getattr(p, "replay", None), "segments", None)):
            meta += _meta("process_name", host_pid, f"{label} · host") + \
                _meta("thread_name", host_pid, "steps", STEPS_TID, 0) + \
                _meta("thread_name", host_pid, "NVTX phases", PHASES_TID, 1) + \
                _meta("thread_name", host_pid, "critical path waits", PATH_TID, 2)
        events += host

        def gpu_pid(dev: int, pi: int = pi) -> int:
            return GPU_PID_BASE + 1000 * pi + dev

        gaps, n_gaps = _gap_events(p, gpu_pid, origin, budget // 4)
        budget -= len(gaps)
        counts["gaps"] += n_gaps
        counts["gaps_written"] += len(gaps)
        events += gaps
        waits, n_waits = _path_events(p, host_pid, origin, budget // 4)
        budget -= len(waits)
        counts["host"] += n_waits
        counts["host_written"] += len(waits)
        events += waits
        ops = _gpu_ops(bundle, p)
        s, e = ops["start_ns"].to_numpy(np.int64), ops["end_ns"].to_numpy(np.int64)
        keep = _longest(s, e, budget)
        budget -= len(keep)
        counts["gpu_ops"] += len(ops)
        counts["gpu_ops_written"] += len(keep)
        if len(keep) < len(ops) and len(keep):
            k_min = int((e[keep] - s[keep]).min())
            shortest_kept = k_min if shortest_kept is None else min(shortest_kept, k_min)
        sub = ops.iloc[keep]
        dev, stream = sub["device_id"].to_numpy(np.int64), sub["stream_id"].to_numpy(np.int64)
        byts = sub["bytes"].to_numpy(np.int64)
        ev = _events(sub["name"].to_numpy(object), sub["cat"].to_numpy(object), 0, stream + STREAM_TID_BASE,
                     s[keep], e[keep], origin, [{"bytes": int(b)} if b >= 0 else None for b in byts])
        for x, d in zip(ev, dev):
            x["pid"] = gpu_pid(int(d))
        events += ev
        for d in sorted(set(int(x) for x in dev) | set(p.devices)):
            meta += _meta("process_name", gpu_pid(d), f"GPU {d} · {label}") + \
                _meta("thread_name", gpu_pid(d), "idle (gap cause)", IDLE_TID, 0)
        for d, st in sorted(set(zip((int(x) for x in dev), (int(x) for x in stream)))):
            meta += _meta("thread_name", gpu_pid(d), stream_track(st), st + STREAM_TID_BASE,
                          st + STREAM_TID_BASE)
    dropped = sum(counts[k] - counts[f"{k}_written"] for k in ("host", "gpu_ops", "gaps"))
    note = ("complete" if not dropped else
            f"capped at {max_events} events: {dropped} events dropped (the shortest GPU operations and "
            f"gaps; steps and phases past the cap)")
    other = {"generator": "nsys-diag analyze --trace-out", "source": source,
             "time_origin_ns": origin, "time_unit": "ts/dur in microseconds from time_origin_ns",
             "windows": [{"pid": int(p.pid), **p.window.to_json()} for p in suite.processes],
             "max_events": max_events, "events_written": len(events), "events_dropped": int(dropped),
             **counts, "shortest_gpu_op_kept_ns": shortest_kept, "note": note}
    return {"traceEvents": meta + events, "displayTimeUnit": "ns", "otherData": other}
