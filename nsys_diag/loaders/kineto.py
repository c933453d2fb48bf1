"""PyTorch profiler (Kineto) trace → the same frames the nsys loader produces (``TraceBundle``,
``model/contracts.py``), so every analysis runs unchanged; ``meta.format == "kineto"``,
``meta.tables`` = events per category as written, such as ``{"kernel": 8772}``.

Mapping (reading and times: ``loaders/kineto_json.py``):

* ``kernel`` / ``gpu_memcpy`` / ``gpu_memset`` / ``cuda_sync`` → KERNELS / MEMCPY / MEMSET /
  SYNC: device and stream from ``args`` (else the event's pid/tid), ``correlation``, grid,
  block, ``registers per thread``, ``shared memory`` (static + dynamic, kept as static: the
  trace does not split them); copy kind and memory kinds from the copy's name
  (``Memcpy HtoD (Pageable -> Device)``); sync kind from the sync's name (``Stream Sync``,
  ``Event Sync``, ``Context Sync``, ``Stream Wait Event``), else from its launching call.
* ``cuda_runtime`` / ``cuda_driver`` → API (runtime / driver); GPU work is joined to its call by
  ``correlation`` (the nsys loader's join), or, when the events carry none, by the ``ac2g`` /
  ``async`` flow events that link them.
* ``user_annotation`` (``record_function`` ranges, ``ProfilerStep#N``; a ``ProfilerStep#N``
  ``cpu_op`` in older traces; legacy ``Operator`` ranges that are not ``ns::op``s) → NVTX
  push/pop ranges of the default domain; the other ``cpu_op`` events (``aten::*`` ops,
  autograd's ``evaluate_function`` ranges) → ``TraceBundle.cpu_ops`` (NVTX contract, domain
  ``cpu_op``): they name the host's time in a gap and, where no range names forward/backward,
  the analyses infer those two phases from them (``analyses/steps/operator_phases.py``); never
  steps.
  ``gpu_user_annotation`` duplicates them on the GPU timeline and is not read (only counted).
* ``M`` events → THREADS / PROCESSES; ``deviceProperties`` → GPUS and SM_LIMITS (no clock or
  bandwidth: -1/NaN); ``distributedInfo`` → ``RANK`` / ``WORLD_SIZE`` in ``meta.environment``.
* ``cuda_sync`` waits on an event → the replay's CUDA_EVENTS / SYNC_EVENTS (the record → wait
  links, ``meta.extra["replay_columns"]``).
* GPU metrics, OS-runtime calls and CPU samples are not in the format: empty frames and one
  ``not_in_format`` info item with the nsys capture that adds them.

Every GPU operation belongs to the trace's process (one torch.profiler trace per process).
Global ids follow nsys's layout (``pid << 24 | tid``) so the analyses' decoding holds.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from nsys_diag.loaders.kineto_events import EventCollector, Events, Group
from nsys_diag.loaders.kineto_json import floats, ints
from nsys_diag.loaders.kineto_stream import read_events
from nsys_diag.loaders.nsys_cuda import attach_launch, classify_sync
from nsys_diag.loaders.nsys_replay import ReplayColumns
from nsys_diag.model import contracts as C
from nsys_diag.model.bundle import LoadWarning, TraceBundle, TraceMeta
from nsys_diag.model.errors import UnrecognizedFormatError
from nsys_diag.model.vocabulary import (
    HINT_KINETO_CAPTURE, HINT_KINETO_NOT_IN_FORMAT, KINETO_FORMAT, KINETO_NOT_IN_FORMAT)

OWN_TRACE_GENERATOR = "nsys-diag"
"""``otherData.generator`` of the Chrome traces ``analyze --trace-out`` writes (not inputs)."""

_PID_BITS = 24
_TID_MASK = (1 << _PID_BITS) - 1
SAMPLE_ROWS = 20_000
"""Launch shapes sampled per trace (the nsys loader's sample size)."""

_COPY = re.compile(r"memcpy\s+(\w+)(?:\s*\((\w+)\s*->\s*(\w+)\))?", re.I)
_COPY_KINDS = {"htod": "H2D", "dtoh": "D2H", "dtod": "D2D", "ptop": "P2P", "htoh": "H2H"}
_MEM_KINDS = {"pageable": "pageable", "pinned": "pinned", "device": "device", "array": "array",
              "managed": "managed"}
_SYNC_NAMES = {"stream sync": "stream", "event sync": "event", "context sync": "device",
               "device sync": "device", "stream wait event": "stream_wait"}
_STEP = re.compile(r"^ProfilerStep#\d+$")


def global_pid(pid: np.ndarray) -> np.ndarray:
    return (np.maximum(pid, 0) & _TID_MASK) << _PID_BITS


def global_tid(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    return global_pid(pid) | (np.maximum(tid, 0) & _TID_MASK)


def load_kineto(path: str | Path) -> TraceBundle:
    """Read a Kineto trace into a ``TraceBundle`` (module docstring); ``InputError`` (exit 3)
    for a file that is not one, data-quality warnings for what it lacks."""
    src = str(path)
    collector = EventCollector()
    doc = read_events(path, collector.add)
    other = doc.get("otherData")
    if isinstance(other, dict) and str(other.get("generator", "")).startswith(OWN_TRACE_GENERATOR):
        raise UnrecognizedFormatError(src, "a timeline written by `nsys-diag analyze "
                                      "--trace-out`, not a PyTorch profiler trace",
                                      "analyze the trace it was made from")
    ev = collector.events()
    if not ev.tables:
        raise UnrecognizedFormatError(src, "a trace without events (traceEvents is empty)",
                                      HINT_KINETO_CAPTURE)
    warnings: list[LoadWarning] = []
    main_pid = _main_pid(ev)
    _flow_correlation(ev)
    api = _api(ev)
    ops = {kind: _gpu_ops(ev.groups.get(kind), main_pid, kind)
           for kind in ("kernel", "memcpy", "memset", "sync")}
    joined, unmatched, total = {}, {}, {}
    for kind, (frame, _) in ops.items():
        joined[kind], unmatched[kind] = attach_launch(frame, api) if len(frame) else (frame, 0)
        total[kind] = len(frame)
        if kind == "sync" and len(frame):
            joined[kind]["sync_kind"] = _sync_kind(joined[kind]["event_name"],
                                                   joined[kind]["launch_api"].array)
    warnings += _join_warnings(ops, unmatched, total)
    replay = _event_links(ev.groups.get("sync"), main_pid)
    frames = {kind: contract.validate(joined[kind] if len(joined[kind]) else contract.empty(),
                                      source=src)
              for kind, (_, contract) in ops.items()}
    nvtx, cpu_ops = _host_ranges(ev)
    end = max([int(f["end_ns"].max()) for f in (*frames.values(), api, nvtx) if len(f)]
              or [0])
    gpus, limits = _devices(doc, frames, warnings)
    threads, processes = _threads(ev, main_pid)
    if not any(len(frames[k]) for k in ("kernel", "memcpy", "memset")):
        warnings.append(LoadWarning("no_gpu_events", "the trace holds no GPU kernels, copies or "
                                    "memsets (a CPU-only profile, or CUDA activity not "
                                    "recorded)", 0, HINT_KINETO_CAPTURE))
    if ev.dropped:
        warnings.append(LoadWarning("dropped_rows", f"{ev.dropped:,} events without a numeric "
                                    "time or with a negative duration were dropped", ev.dropped))
    if ev.mixed_clock:
        warnings.append(LoadWarning(
            "mixed_clocks", f"{ev.mixed_clock:,} events lie more than a day from the trace's "
            "other events (another clock: a trace merged from relative and epoch timestamps) "
            "and were dropped", ev.mixed_clock, HINT_KINETO_CAPTURE))
    warnings.append(LoadWarning("not_in_format", KINETO_NOT_IN_FORMAT, 0,
                                HINT_KINETO_NOT_IN_FORMAT))
    meta = TraceMeta(path=src, format=KINETO_FORMAT, schema_version=str(
        doc.get("schemaVersion", "")), capture_start_ns=0, capture_end_ns=end,
        session_start_utc_ns=_utc_start(doc, ev), tables=dict(sorted(ev.tables.items())),
        environment=_rank_environment(doc),
        extra={"kineto_schema": "legacy (PyTorch 1.8-1.9)" if ev.legacy else "current",
               "replay_columns": replay,
               **({"unknown_categories": ev.unknown} if ev.unknown else {})})
    return TraceBundle(
        meta=meta, kernels=frames["kernel"], memcpy=frames["memcpy"], memset=frames["memset"],
        sync=frames["sync"], api=api, nvtx=nvtx, threads=threads, processes=processes,
        gpus=gpus, sm_limits=limits, launch_shapes=_launch_shapes(frames["kernel"]),
        cpu_ops=cpu_ops, warnings=warnings)


def _main_pid(ev: Events) -> int:
    """The traced process: the pid of most CUDA API calls (else of most CPU events)."""
    for kinds in (("runtime", "driver"), ("annotation", "cpu_op", "python")):
        pids = [ev.groups[k].pid for k in kinds if k in ev.groups]
        allp = np.concatenate(pids) if pids else np.zeros(0, np.int64)
        allp = allp[allp >= 0]
        if allp.size:
            vals, counts = np.unique(allp, return_counts=True)
            return int(vals[np.argmax(counts)])
    return 0


def _api(ev: Events) -> pd.DataFrame:
    parts = []
    for kind, cls in (("runtime", "runtime"), ("driver", "driver")):
        g = ev.groups.get(kind)
        if g is None or not len(g):
            continue
        corr = ints(g.arg("correlation"))
        parts.append(pd.DataFrame({
            "start_ns": g.ts, "end_ns": g.end, "global_tid": global_tid(g.pid, g.tid),
            "global_pid": global_pid(g.pid), "pid": g.pid, "tid": g.tid, "correlation_id": corr,
            "name": [re.sub(r"_v\d+$", "", n) for n in g.name], "api_class": cls}))
    if not parts:
        return C.API.empty()
    df = pd.concat(parts, ignore_index=True).sort_values("start_ns", kind="stable")
    df["name"] = df["name"].astype("category")
    return C.API.validate(df)


def _flow_correlation(ev: Events) -> None:
    """When GPU work has no ``correlation`` argument, take it from the flow that links it to its
    launch (``ac2g``; legacy ``async``): flow start at the launch, flow end at the GPU event,
    both at the event's (pid, tid, ts). The flow id is written as ``args["correlation"]``."""
    if not ev.flow_count:
        return
    f = None
    for kind in ("runtime", "driver", "kernel", "memcpy", "memset", "sync"):
        g = ev.groups.get(kind)
        if g is None or not len(g) or (ints(g.arg("correlation")) >= 0).any():
            continue
        f = ev.flows() if f is None else f
        side = f[f["ph"] == ("s" if kind in ("runtime", "driver") else "f")]
        key = pd.DataFrame({"pid": g.pid, "tid": g.tid, "ts": g.ts, "i": np.arange(len(g))})
        m = key.merge(side.drop_duplicates(["pid", "tid", "ts"]), on=["pid", "tid", "ts"])
        g.args["correlation"][m["i"].to_numpy()] = m["id"].to_numpy(np.int64)


def _gpu_ops(g: Group | None, main_pid: int, kind: str) -> tuple[pd.DataFrame, C.FrameContract]:
    contract = {"kernel": C.KERNELS, "memcpy": C.MEMCPY, "memset": C.MEMSET, "sync": C.SYNC}[kind]
    if g is None or not len(g):
        return contract.empty(), contract
    device = ints(g.arg("device"))
    device = np.where(device >= 0, device, g.pid)
    stream = ints(g.arg("stream"))
    stream = np.where(stream >= 0, stream, g.tid) if kind != "sync" else stream
    n = len(g)
    context = ints(g.arg("context"))
    d = {"start_ns": g.ts, "end_ns": g.end, "device_id": device,
         "context_id": np.where(context >= 0, context, 1), "stream_id": stream,
         "correlation_id": ints(g.arg("correlation")),
         "global_pid": np.full(n, int(global_pid(np.array([main_pid]))[0]), np.int64),
         "pid": np.full(n, main_pid, np.int64)}
    if kind == "kernel":
        d.update(_kernel_columns(g))
    elif kind == "memcpy":
        d.update(_copy_columns(g))
    elif kind == "memset":
        d["bytes"] = np.maximum(ints(g.arg("bytes")), 0)
    else:
        d["event_name"] = np.asarray(g.name, dtype=object)
    df = pd.DataFrame(d)
    return df.sort_values("start_ns", kind="stable").reset_index(drop=True), contract


def short_name(name: str) -> str:
    """The base function name of a demangled kernel name (nsys's ``shortName``): no return type,
    parameters, templates or namespaces (``void at::native::f<float>(...)`` → ``f``)."""
    s = name[5:] if name.startswith("void ") else name
    depth, cut = 0, len(s)
    for i, ch in enumerate(s):  # bounded: one pass over one distinct name
        if ch in "<(":
            if ch == "(" and depth == 0:
                cut = i
                break
            depth += 1
        elif ch in ">)":
            depth = max(0, depth - 1)
    base = re.sub(r"<.*>", "", s[:cut]).strip()
    return base.rsplit("::", 1)[-1].split(" ")[-1] or name


def _kernel_columns(g: Group) -> dict:
    names = pd.Categorical(g.name)
    shorts = [short_name(n) for n in names.categories]
    grid, block = g.arg("grid"), g.arg("block")  # (n, 3) int64, -1 rows where absent
    return {
        "name": names, "short_name": pd.Categorical.from_codes(
            names.codes, categories=pd.Index(shorts).unique()) if len(set(shorts)) == len(shorts)
        else pd.Categorical(np.asarray(shorts, dtype=object)[names.codes]),
        "grid_x": grid[:, 0], "grid_y": grid[:, 1], "grid_z": grid[:, 2],
        "block_x": block[:, 0], "block_y": block[:, 1], "block_z": block[:, 2],
        "registers_per_thread": ints(g.arg("registers per thread")),
        "smem_static_bytes": ints(g.arg("shared memory")),
        "smem_dynamic_bytes": np.where(ints(g.arg("shared memory")) >= 0, 0, -1),
        "graph_node_id": ints(g.arg("graph node id")),
    }


def _copy_columns(g: Group) -> dict:
    names = pd.Series(g.name, dtype=object)
    parts = names.str.extract(_COPY)
    kind = parts[0].str.lower().map(_COPY_KINDS).fillna("other")
    src = parts[1].str.lower().map(_MEM_KINDS).fillna("unknown")
    dst = parts[2].str.lower().map(_MEM_KINDS).fillna("unknown")
    return {"bytes": np.maximum(ints(g.arg("bytes")), 0), "copy_kind": kind.to_numpy(object),
            "src_kind": src.to_numpy(object), "dst_kind": dst.to_numpy(object), "copy_count": 1}


def _sync_kind(names: pd.Series, launch_api) -> pd.Categorical:
    """Sync kind from the sync event's name, else from its launching call's name."""
    by_api = np.asarray(classify_sync(pd.Categorical(launch_api), np.zeros(len(names), np.int64),
                                      False), dtype=object)
    by_name = pd.Series(names.to_numpy(object), dtype=object).str.lower().str.strip().map(
        _SYNC_NAMES)
    return pd.Categorical(np.where(by_name.notna().to_numpy(), by_name.to_numpy(object), by_api))


def _event_links(g: Group | None, main_pid: int) -> ReplayColumns:
    """The event record → wait links of ``cuda_sync`` events (``wait_on_cuda_event_record_corr_id``,
    ``wait_on_stream``, ``wait_on_cuda_event_id``) as the replay's CUDA_EVENTS / SYNC_EVENTS
    frames (recent nsys exports lack them); record times are unknown (-1)."""
    if g is None or not len(g):
        return ReplayColumns()
    rec = ints(g.arg("wait_on_cuda_event_record_corr_id"))
    event = ints(g.arg("wait_on_cuda_event_id"))
    linked = (rec >= 0) & (event >= 0)
    if not linked.any():
        return ReplayColumns()
    gpid = int(global_pid(np.array([main_pid]))[0])
    device = ints(g.arg("device"))[linked]
    context = ints(g.arg("context"))[linked]
    records = pd.DataFrame({
        "ts_ns": -1, "device_id": np.where(device >= 0, device, g.pid[linked]),
        "context_id": np.where(context >= 0, context, 1),
        "stream_id": ints(g.arg("wait_on_stream"))[linked], "correlation_id": rec[linked],
        "global_pid": gpid, "event_id": event[linked]}).drop_duplicates(
        ["correlation_id", "event_id"])
    waits = pd.DataFrame({"correlation_id": ints(g.arg("correlation"))[linked],
                          "global_pid": gpid, "stream_id": ints(g.arg("stream"))[linked],
                          "event_id": event[linked]})
    return ReplayColumns(cuda_events=C.CUDA_EVENTS.validate(records),
                         sync_events=C.SYNC_EVENTS.validate(waits))


def _join_warnings(ops, unmatched: dict[str, int], total: dict[str, int]) -> list[LoadWarning]:
    """``no_launch_join`` when GPU work carries no correlation ids at all; ``unmatched_launches``
    when some of it has no launching call in the trace."""
    out = []
    no_corr = [k for k, (f, _) in ops.items() if len(f) and not (f["correlation_id"] >= 0).any()]
    if no_corr:
        n = sum(total[k] for k in no_corr)
        out.append(LoadWarning(
            "no_launch_join", f"GPU work cannot be joined to the CUDA API calls that launched it "
            f"({', '.join(no_corr)}: no correlation ids and no flow events in the trace); launch "
            "overhead, launching threads and launch APIs are unknown", n, HINT_KINETO_CAPTURE))
    miss = {k: m for k, m in unmatched.items() if m and k not in no_corr}
    if miss:
        parts = ", ".join(f"{m:,} of {total[k]:,} {k}" for k, m in miss.items())
        out.append(LoadWarning(
            "unmatched_launches", f"{parts} have no launching CUDA API call in the trace (the "
            "profiler's first or last events); their launch_* columns are -1",
            sum(miss.values()), "profile with a schedule (wait/warmup/active) so the recorded "
            "steps are whole"))
    return out


def _host_ranges(ev: Events) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(NVTX, host operators), both in the NVTX contract. NVTX: ``user_annotation`` ranges and
    ``ProfilerStep#N`` ``cpu_op`` ranges (older traces; in the 1.8–1.9 schema, where
    ``record_function`` ranges are ``Operator`` events too, every ``Operator`` range without
    ``::`` in its name: not an ``aten::`` op), each range once (a step written in both categories
    is kept from ``user_annotation``). Host operators (``TraceBundle.cpu_ops``, domain
    ``cpu_op``): the other ``cpu_op`` events (``aten::*`` ops, autograd's ``evaluate_function``
    ranges …)."""
    parts = []
    ann = ev.groups.get("annotation")
    if ann is not None and len(ann):
        parts.append(ann)
    ops = ev.groups.get("cpu_op")
    if ops is None or not len(ops):
        return _range_frame(parts, ""), C.NVTX.empty()
    pick = (lambda n: "::" not in n) if ev.legacy else (lambda n: bool(_STEP.match(n)))
    is_step = np.array([pick(n) for n in ops.name], bool)
    steps = ops.take(is_step)
    if len(steps) and ann is not None and len(ann):
        seen = set(zip(ann.name, ann.ts.tolist()))
        steps = steps.take(np.array([(n, t) not in seen for n, t in
                                     zip(steps.name, steps.ts.tolist())], bool))
    if len(steps):
        parts.append(steps)
    rest = ops.take(~is_step)
    return _range_frame(parts, ""), _range_frame([rest] if len(rest) else [], "cpu_op")


def _range_frame(parts: list[Group], domain: str) -> pd.DataFrame:
    """Complete events as closed push/pop ranges of ``domain`` (the NVTX contract), sorted by
    start, longest first."""
    if not parts:
        return C.NVTX.empty()
    name = [n for g in parts for n in g.name]
    cat = lambda a: np.concatenate([getattr(g, a) for g in parts])  # noqa: E731
    pid, tid = cat("pid"), cat("tid")
    gtid = global_tid(pid, tid)
    df = pd.DataFrame({"start_ns": cat("ts"), "end_ns": cat("end"), "closed": True,
                       "text": pd.Categorical(name), "domain": domain, "kind": "push_pop",
                       "global_tid": gtid, "end_global_tid": gtid, "global_pid": global_pid(pid),
                       "pid": pid, "tid": tid, "payload": np.nan})
    return C.NVTX.validate(df.sort_values(["start_ns", "end_ns"], ascending=[True, False],
                                          kind="stable"))


def _threads(ev: Events, main_pid: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """THREADS from ``thread_name`` metadata of CPU pids; PROCESSES: the traced process."""
    t_pid, t_tid, t_name, p_name = [], [], [], ""
    for m in ev.metadata:  # bounded: a few metadata events per thread/process
        a = m.get("args")
        args: dict = a if isinstance(a, dict) else {}
        if m.get("name") == "thread_name":
            t_pid.append(m.get("pid"))
            t_tid.append(m.get("tid"))
            t_name.append(str(args.get("name", "")))
        elif m.get("name") == "process_name" and ints([m.get("pid")])[0] == main_pid:
            p_name = str(args.get("name", ""))
    pid, tid = ints(t_pid), ints(t_tid)
    cpu = pid == main_pid
    threads = C.THREADS.validate(pd.DataFrame({
        "global_tid": global_tid(pid[cpu], tid[cpu]), "pid": pid[cpu], "tid": tid[cpu],
        "name": np.asarray(t_name, dtype=object)[cpu] if t_name else []}))
    processes = C.PROCESSES.validate(pd.DataFrame({
        "global_pid": global_pid(np.array([main_pid])), "pid": [main_pid], "name": [p_name]}))
    return threads, processes


def _devices(doc: dict, frames: dict, warnings: list[LoadWarning]
             ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """GPUS and SM_LIMITS from ``deviceProperties`` (one row per device seen without it)."""
    props = [p for p in doc.get("deviceProperties") or [] if isinstance(p, dict)]
    seen = sorted({int(d) for f in frames.values() for d in f["device_id"].unique() if d >= 0})
    if not props:
        if seen:
            warnings.append(LoadWarning("no_gpu_info", "the trace has no deviceProperties: GPU "
                                        "model and size unknown", len(seen)))
        props = [{"id": d} for d in seen]
    val = lambda key: ints([p.get(key) for p in props])  # noqa: E731
    gpus = pd.DataFrame({
        "device_id": val("id"), "name": [str(p.get("name", "")) for p in props], "chip_name": "",
        "sm_count": val("numSms"), "clock_hz": -1, "memory_bandwidth_bytes_per_s": np.nan,
        "total_memory_bytes": val("totalGlobalMem"), "cc_major": val("computeMajor"),
        "cc_minor": val("computeMinor"), "bus_location": ""})
    limits = pd.DataFrame({
        "device_id": val("id"), "max_threads_per_sm": val("maxThreadsPerMultiprocessor"),
        "max_blocks_per_sm": val("maxBlocksPerMultiProcessor"),
        "registers_per_sm": val("regsPerMultiprocessor"),
        "smem_per_sm_bytes": val("sharedMemPerMultiprocessor")})
    return C.GPUS.validate(gpus), C.SM_LIMITS.validate(limits)


def _launch_shapes(kernels: pd.DataFrame) -> pd.DataFrame:
    """A strided sample (≤ ``SAMPLE_ROWS``) of the kernels' launch configuration."""
    n = len(kernels)
    if not n or not (kernels["grid_x"] >= 0).any():
        return C.LAUNCH_SHAPES.empty()
    step = max(1, -(-n // SAMPLE_ROWS))
    k = kernels.iloc[::step]
    df = pd.DataFrame({"name": k["name"].astype(str), "start_ns": k["start_ns"],
                       "duration_ns": k["end_ns"] - k["start_ns"], "device_id": k["device_id"],
                       "global_pid": k["global_pid"], "weight": float(n) / len(k)})
    for c in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
              "registers_per_thread", "smem_static_bytes", "smem_dynamic_bytes", "graph_node_id"):
        df[c] = k[c].to_numpy()
    for c in ("cluster_x", "cluster_y", "cluster_z", "max_active_clusters"):
        df[c] = -1  # a PyTorch profiler trace records no thread-block clusters
    return C.LAUNCH_SHAPES.validate(df)


def _utc_start(doc: dict, ev: Events) -> int | None:
    """UTC ns of the trace start: ``baseTimeNanoseconds`` + the first event's µs when the trace
    writes times relative to it, the first event's µs when they are since the epoch."""
    base = floats([doc.get("baseTimeNanoseconds")])[0]
    first_ns = int(round(ev.origin_us * 1000.0))
    if ev.origin_us > 1e14:  # µs since the epoch (after 1973)
        return first_ns
    if np.isfinite(base) and base > 0:
        return int(base) + first_ns
    return None


def _rank_environment(doc: dict) -> dict[str, str]:
    """``RANK`` / ``WORLD_SIZE`` from ``distributedInfo`` (how the job analysis finds ranks)."""
    info = doc.get("distributedInfo")
    if not isinstance(info, dict):
        return {}
    out = {}
    for key, var in (("rank", "RANK"), ("world_size", "WORLD_SIZE")):
        v = ints([info.get(key)])[0]
        if v >= 0:
            out[var] = str(v)
    return out


__all__ = ["load_kineto", "short_name"]
