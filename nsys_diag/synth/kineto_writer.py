"""Writer of the trace generator: one :class:`~nsys_diag.synth.timeline.Timeline` as the
PyTorch profiler (Kineto) Chrome-trace JSON torch.profiler would write for it — the same events
as :mod:`nsys_diag.synth.writer` puts in an nsys export, in Kineto's categories and units.

Two schemas: ``"current"`` (PyTorch ≥ 1.10: ``kernel``, ``gpu_memcpy``, ``gpu_memset``,
``cuda_runtime``, ``cuda_driver``, ``cuda_sync``, ``user_annotation`` mirrored as
``gpu_user_annotation``, ``ac2g`` flows; ``ts`` in float µs relative to
``baseTimeNanoseconds``, ``deviceProperties``, ``distributedInfo``) and ``"legacy"`` (PyTorch
1.8–1.9: ``Kernel``, ``Memcpy``, ``Memset``, ``Runtime``, ``Operator`` ranges, ``async``
flows, integer µs since the epoch, GPU threads named ``"stream N"``, ``deviceProperties`` as
1.9 wrote them).

What the format has no room for is left out: GPU-metric samples, OS-runtime calls, CPU
samples, NVTX domains and marks, GPU-memory events, unified-memory migrations. A trace holds
one process (torch.profiler writes one file per process): ``process`` picks it.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from nsys_diag.synth.events import (COPY_KIND, MEM_DEVICE, MEM_MANAGED, MEM_PAGEABLE, MEM_PINNED,
                                    NVTX_PUSHPOP, NVTX_STARTEND, SYNC_KINDS)
from nsys_diag.synth.scenarios import Scenario
from nsys_diag.synth.schema import gpu_model
from nsys_diag.synth.timeline import Timeline, build_timeline

KINETO_SCHEMAS = ("current", "legacy")
BASE_TIME_NS = 1_700_000_000_000_000_000
"""``baseTimeNanoseconds`` of the generated traces (Nov 2023); legacy ``ts`` count from it."""

_CATS = {"current": {"kernel": "kernel", "memcpy": "gpu_memcpy", "memset": "gpu_memset",
                     "runtime": "cuda_runtime", "driver": "cuda_driver", "sync": "cuda_sync",
                     "annotation": "user_annotation", "flow": "ac2g"},
         "legacy": {"kernel": "Kernel", "memcpy": "Memcpy", "memset": "Memset",
                    "runtime": "Runtime", "driver": "Runtime", "sync": "cuda_sync",
                    "annotation": "Operator", "flow": "async"}}
_COPY_NAMES = {COPY_KIND["H2D"]: "HtoD", COPY_KIND["D2H"]: "DtoH", COPY_KIND["D2D"]: "DtoD"}
_MEM_NAMES = {MEM_PAGEABLE: "Pageable", MEM_PINNED: "Pinned", MEM_DEVICE: "Device",
              MEM_MANAGED: "Managed"}
_SYNC_NAMES = {"stream": "Stream Sync", "device": "Context Sync", "event": "Event Sync"}
_MASK = (1 << 24) - 1


def write_kineto_json(path: str | Path, scenario: Scenario, schema: str = "current",
                      process: int = 0, compress: bool | None = None) -> Path:
    """Write process ``process`` of ``scenario`` as a Kineto trace of ``schema`` (see
    :data:`KINETO_SCHEMAS`); gzip-compressed when ``compress`` (default: the name ends in
    ``.gz``). Overwrites ``path``."""
    if schema not in KINETO_SCHEMAS:
        raise ValueError(f"unknown Kineto schema {schema!r}: one of {KINETO_SCHEMAS}")
    doc = kineto_document(build_timeline(scenario), schema, process)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(doc, separators=(",", ":")).encode()
    if compress if compress is not None else path.name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    path.write_bytes(data)
    return path


def kineto_lacks(tl: Timeline) -> list[str]:
    """What of ``tl`` a Kineto trace cannot hold (empty: the trace carries everything the
    nsys export of the same timeline does that the analyses read)."""
    sc = tl.scenario
    out = []
    if tl.metrics["ts"].size:
        out.append("GPU metrics")
    if tl.osrt["start"].size:
        out.append("OS-runtime calls")
    if tl.samples["ts"].size:
        out.append("CPU samples")
    if tl.memory["start"].size:
        out.append("GPU memory events")
    if (tl.memcpy["migration"] >= 0).any():
        out.append("unified-memory migrations")
    if sc.n_processes > 1:
        out.append("several processes in one capture")
    nv = tl.nvtx
    if nv["start"].size and ((nv["domain"] > 0).any() or not nv["has_end"].all()):
        out.append("NVTX domains or open ranges")
    return out


def write_kineto_ranks(directory: str | Path, scenario: Scenario, schema: str = "current"
                       ) -> list[Path]:
    """One trace per process of ``scenario`` (``rank-N.json``, ``distributedInfo.rank`` = N), as
    torch.profiler writes a distributed job."""
    tl = build_timeline(scenario)
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    out = []
    for i, proc in enumerate(tl.processes):
        p = d / f"rank-{proc.device}.json"
        p.write_bytes(json.dumps(kineto_document(tl, schema, i), separators=(",", ":")).encode())
        out.append(p)
    return out


class _Clock:
    """ns of the timeline → the schema's ``ts``/``dur`` (µs): float µs with ns digits relative
    to the base time (current), whole µs since the epoch (legacy)."""

    def __init__(self, schema: str) -> None:
        self.legacy = schema == "legacy"

    def ts(self, ns: int) -> float | int:
        if self.legacy:
            return (BASE_TIME_NS + ns) // 1000
        return round(ns / 1000.0, 3)

    def dur(self, start: int, end: int) -> float | int:
        if self.legacy:
            return max(0, (BASE_TIME_NS + end) // 1000 - (BASE_TIME_NS + start) // 1000)
        return round((end - start) / 1000.0, 3)


def kineto_document(tl: Timeline, schema: str = "current", process: int = 0) -> dict:
    """The trace object of process ``process`` of ``tl`` (see :func:`write_kineto_json`)."""
    sc, cats, clock = tl.scenario, _CATS[schema], _Clock(schema)
    proc = tl.processes[process]
    events: list[dict] = []
    api = tl.api
    mine = np.flatnonzero((api["pidx"] == process) & np.isin(api["eclass"], (0, 1)))
    api_at: dict[int, tuple[int, int]] = {}
    for i in mine.tolist():  # bounded: the generated events of one process
        tid = int(api["gtid"][i]) & _MASK
        start, end, corr = int(api["start"][i]), int(api["end"][i]), int(api["corr"][i])
        api_at[i] = (tid, start)
        events.append({"ph": "X", "cat": cats["runtime" if api["eclass"][i] == 0 else "driver"],
                       "name": tl.api_names.values[int(api["name"][i])], "pid": proc.pid,
                       "tid": tid, "ts": clock.ts(start), "dur": clock.dur(start, end),
                       "args": {"correlation": corr, "cbid": 211}})
    events += _gpu_events(tl, schema, process, api_at)
    if sc.nvtx:  # False: a run without record_function / ProfilerStep ranges
        events += _annotations(tl, schema, process)
    events += _metadata(tl, schema, process)
    gpu = gpu_model(sc.gpu)
    props = [{
        "id": proc.device, "name": gpu.name, "totalGlobalMem": gpu.total_memory,
        "computeMajor": gpu.compute[0], "computeMinor": gpu.compute[1],
        "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 32 * gpu.max_warps_per_sm,
        "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,
        "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": gpu.max_shmem_per_sm,
        "numSms": gpu.sm_count, "sharedMemPerBlockOptin": gpu.max_shmem_optin}]
    if schema == "legacy":  # PyTorch 1.9's layout: deviceProperties and the events, nothing else
        return {"schemaVersion": 1, "deviceProperties": props, "traceEvents": events}
    ranked = sc.rank is not None or sc.n_processes > 1
    return {"schemaVersion": 1, "deviceProperties": props,
            **({"distributedInfo": {"backend": "nccl", "rank": proc.device,
                                    "world_size": sc.world_size or max(
                                        proc.device + 1, sc.n_processes)}} if ranked else {}),
            "traceEvents": events, "traceName": f"{sc.name}.pt.trace.json",
            "displayTimeUnit": "ms", "baseTimeNanoseconds": BASE_TIME_NS}


def _gpu_events(tl: Timeline, schema: str, process: int, api_at: dict) -> list[dict]:
    """Kernels, copies, memsets and syncs of one process, each with its flow from the launch."""
    cats, clock, proc = _CATS[schema], _Clock(schema), tl.processes[process]
    corr = tl.api["corr"]
    out: list[dict] = []

    def tid(stream: int):
        return f"stream {stream}" if schema == "legacy" else stream

    def add(kind: str, name: str, d: dict, i: int, args: dict) -> None:
        start, end, stream = int(d["start"][i]), int(d["end"][i]), int(d["stream"][i])
        row = int(d["api_row"][i])
        c = int(corr[row]) if row >= 0 else -1
        out.append({"ph": "X", "cat": cats[kind], "name": name, "pid": proc.device,
                    "tid": tid(stream), "ts": clock.ts(start), "dur": clock.dur(start, end),
                    "args": {"device": proc.device, "context": proc.context, "stream": stream,
                             "correlation": c, **args}})
        if row in api_at and kind != "sync":
            launch_tid, launch_ts = api_at[row]
            out.append({"ph": "s", "cat": cats["flow"], "id": c, "pid": proc.pid,
                        "tid": launch_tid, "ts": clock.ts(launch_ts), "name": cats["flow"]})
            out.append({"ph": "f", "cat": cats["flow"], "id": c, "pid": proc.device,
                        "tid": tid(stream), "ts": clock.ts(start), "bp": "e",
                        "name": cats["flow"]})

    k = tl.kernels
    for i in np.flatnonzero(k["pidx"] == process).tolist():  # bounded: generated events
        info = tl.kernel_infos[int(k["kinfo"][i])]
        add("kernel", info.demangled, k, i, {
            "registers per thread": info.registers,
            "shared memory": info.static_smem + info.dynamic_smem,
            "grid": list(info.grid), "block": list(info.block)})
    m = tl.memcpy
    for i in np.flatnonzero((m["pidx"] == process) & (m["migration"] < 0)).tolist():
        kind = _COPY_NAMES.get(int(m["copy_kind"][i]), "DtoD")
        src = _MEM_NAMES.get(int(m["src_kind"][i]), "Device")
        dst = _MEM_NAMES.get(int(m["dst_kind"][i]), "Device")
        add("memcpy", f"Memcpy {kind} ({src} -> {dst})", m, i, {"bytes": int(m["bytes"][i])})
    ms = tl.memset
    for i in np.flatnonzero(ms["pidx"] == process).tolist():
        add("memset", "Memset (Device)", ms, i, {"bytes": int(ms["bytes"][i])})
    sy = tl.sync
    for i in np.flatnonzero(sy["pidx"] == process).tolist():
        kind = SYNC_KINDS[int(sy["sync_kind"][i])]
        add("sync", _SYNC_NAMES[kind], sy, i, {})
    return out


def _annotations(tl: Timeline, schema: str, process: int) -> list[dict]:
    """NVTX ranges of the process as ``record_function`` ranges (``user_annotation``; legacy:
    ``Operator``), mirrored as ``gpu_user_annotation`` on the device in the current schema."""
    cats, clock, proc = _CATS[schema], _Clock(schema), tl.processes[process]
    nv = tl.nvtx
    pid = (nv["gtid"] >> 24) & _MASK
    rows = np.flatnonzero((pid == proc.pid) & np.isin(nv["event_type"], (NVTX_PUSHPOP,
                                                                          NVTX_STARTEND))
                          & (nv["has_end"] > 0))
    out = []
    for i in rows.tolist():  # bounded: generated ranges
        start, end = int(nv["start"][i]), int(nv["end"][i])
        ev = {"ph": "X", "cat": cats["annotation"], "name": tl.nvtx_texts.values[int(nv["text"][i])],
              "pid": proc.pid, "tid": int(nv["gtid"][i]) & _MASK, "ts": clock.ts(start),
              "dur": clock.dur(start, end), "args": {"External id": i + 1}}
        out.append(ev)
        if schema == "current":
            out.append({**ev, "cat": "gpu_user_annotation", "pid": proc.device, "tid": 7})
    return out


def _metadata(tl: Timeline, schema: str, process: int) -> list[dict]:
    proc = tl.processes[process]
    out = [{"ph": "M", "name": "process_name", "pid": proc.pid, "tid": 0,
            "args": {"name": tl.scenario.process_name}}]
    for tid, name in proc.threads.values():
        if name.startswith(("[NSys", "CUPTI", "cuda-Evt")):
            continue  # nsys's own threads: torch.profiler does not see them
        out.append({"ph": "M", "name": "thread_name", "pid": proc.pid, "tid": tid,
                    "args": {"name": name}})
    out.append({"ph": "M", "name": "process_name", "pid": proc.device, "tid": 0,
                "args": {"name": f"GPU {proc.device}" if schema == "current" else "CUDA"}})
    return out


__all__ = ["write_kineto_json", "write_kineto_ranks", "kineto_document", "kineto_lacks", "KINETO_SCHEMAS",
           "BASE_TIME_NS"]
