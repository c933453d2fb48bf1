"""nsys-diag's own trace generator: schema-faithful nsys SQLite exports with known answers.

Entry points::

    python -m nsys_diag.synth --write-samples sample_traces        # what `make samples` runs
    python -m nsys_diag.synth PRESET OUT.sqlite [--schema V] [--steps N] [--scale K] [--seed S]
                                               [--env NAME=VALUE ...] [--expected]
    python -m nsys_diag.synth --list

Python API (stable; other modules and tests build on it)::

    from nsys_diag import synth
    sc = synth.preset("worked_example", steps=20)           # a Scenario (dataclass)
    synth.write_nsys_sqlite(path, sc, schema="2024.6")      # -> Path
    synth.write_preset(path, "launch_bound", schema="2026.2", env={"HF_TOKEN": "hf_FAKE"})
    synth.expected("worked_example")                        # the known answers (dict)
    synth.PRESETS, synth.SCHEMAS                             # names

The scenario model (:mod:`nsys_diag.synth_scenarios`), the timing model
(:mod:`nsys_diag.synth_timeline`) and the per-version table layouts
(:mod:`nsys_diag.synth_schema`) live in their own modules; this one maps a timeline onto the
tables of one schema variant, computes :func:`expected` answers and runs the CLI.

Only ``sqlite3`` and numpy are used. Rows are written with ``executemany`` over numpy-built
columns, in one transaction with ``journal_mode=OFF``/``synchronous=OFF``; the timeline is
vectorised, so millions of kernels are fine (``--scale``/``--steps``).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import itertools
import sqlite3
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from nsys_diag.synth_scenarios import (  # re-exported: the public Scenario API
    COMPUTE_STREAM, KERNEL_CATALOG, MS, NCCL_STREAM, PRESETS, US, GiB, GpuMemorySpec,
    GpuMetricsSpec, KernelInfo, KernelSpec, MemcpySpec, MemsetSpec, MiB, PeriodicSpec, PhaseSpec,
    RangeSpec, Scenario, SyncSpec, kernel_info, preset, scaled)
from nsys_diag.synth_schema import (
    ALL_SCHEMAS, ENUM_ROWS, GPU_CATALOG, GPU_METRIC_NAMES, KERNEL_LAYOUTS, SCHEMAS, VM_GLOBAL_ID,
    SchemaVariant, gpu_model, variant)
from nsys_diag.synth_timeline import (
    SYNC_KINDS, Timeline, build_timeline, covered_before, union_intervals)

__all__ = [
    "Scenario", "PhaseSpec", "KernelSpec", "MemcpySpec", "MemsetSpec", "SyncSpec", "RangeSpec",
    "PeriodicSpec", "GpuMetricsSpec", "GpuMemorySpec", "KernelInfo", "KERNEL_CATALOG",
    "kernel_info", "PRESETS", "SCHEMAS", "ALL_SCHEMAS", "KERNEL_LAYOUTS", "GPU_CATALOG",
    "GPU_METRIC_NAMES", "SAMPLES", "preset", "scaled", "write_nsys_sqlite", "write_preset",
    "write_samples", "expected", "build_timeline", "main", "MS", "US", "MiB", "GiB",
    "COMPUTE_STREAM", "NCCL_STREAM",
]

_CHUNK = 100_000  # rows per executemany batch (bounds memory of the Python row tuples)
_ANALYSIS_START_TIME = 4_211_337_000  # raw target clock at session start (ANALYSIS_DETAILS)
_RAW_GPU_CLOCK_OFFSET = 7_000_000_000  # GPU_METRICS.rawTimestamp - timestamp

SAMPLES: tuple[tuple[str, str, str, dict[str, Any]], ...] = (
    # (file name, preset, schema variant, overrides)
    ("worked_example.sqlite", "worked_example", "2024.6", {}),
    ("healthy_tc.sqlite", "healthy_tc", "2026.2", {}),
    ("simt_gemm.sqlite", "simt_gemm", "2022.2", {"cuda_backtraces": True}),
    ("memory_bound.sqlite", "memory_bound", "2024.6", {}),
    ("overhead_bound.sqlite", "overhead_bound", "2021", {}),
    ("launch_bound.sqlite", "launch_bound", "2026.2", {"steps": 3, "scale": 0.5}),
    ("multi_gpu.sqlite", "multi_gpu", "2026.2", {}),
    ("no_cuda.sqlite", "no_cuda", "2022.2", {}),
    ("inference.sqlite", "inference", "2024.6", {}),
)
"""The committed ``sample_traces/`` files: ``make samples`` regenerates exactly these."""


# ---------------------------------------------------------------------------------------------
# low-level writing
# ---------------------------------------------------------------------------------------------

class _Strings:
    """StringIds interning in first-use order; ids start after the variant's fixed strings."""

    def __init__(self, v: SchemaVariant) -> None:
        self.values: list[str] = list(v.string0)
        self.ids: dict[str, int] = {s: i for i, s in enumerate(self.values)}

    def id(self, s: str) -> int:
        i = self.ids.get(s)
        if i is None:
            i = self.ids[s] = len(self.values)
            self.values.append(s)
        return i

    def ids_of(self, values: list[str]) -> np.ndarray:
        return np.array([self.id(s) for s in values], np.int64)


def _column(value: Any, lo: int, hi: int):
    if isinstance(value, np.ndarray):
        return value[lo:hi].tolist()
    if isinstance(value, list):
        return value[lo:hi]
    return itertools.repeat(value, hi - lo)


def _insert(con: sqlite3.Connection, v: SchemaVariant, table: str, data: dict[str, Any],
            n: int) -> None:
    """CREATE ``table`` in ``v``'s layout and insert ``n`` rows. ``data`` maps column names to
    numpy arrays / lists (one value per row) or scalars (repeated); columns of the layout that
    are absent from ``data`` are NULL, keys the layout lacks are ignored (older versions)."""
    cols = v.table_columns(table)
    con.execute(v.ddl(table))
    if n == 0:
        return
    sql = f"INSERT INTO {table} VALUES ({', '.join('?' * len(cols))})"
    vals = [data.get(c) for c in cols]
    for lo in range(0, n, _CHUNK):
        hi = min(n, lo + _CHUNK)
        con.executemany(sql, zip(*[_column(x, lo, hi) for x in vals]))


def _nullable(values: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Object array with None where ``present`` is False (NULL in SQLite)."""
    out = values.astype(object)
    out[~present] = None
    return out


def _iso(ns: int) -> str:
    return _dt.datetime.fromtimestamp(ns // 1_000_000_000, _dt.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S")


# ---------------------------------------------------------------------------------------------
# write_nsys_sqlite
# ---------------------------------------------------------------------------------------------

def write_nsys_sqlite(path: str | Path, scenario: Scenario, schema: str = "2024.6") -> Path:
    """Write ``scenario`` as an nsys SQLite export of schema variant ``schema`` (see
    :data:`SCHEMAS`; ``"2020"`` = oldest layout also accepted). Overwrites ``path``."""
    v = variant(schema)
    tl = build_timeline(scenario)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    con = sqlite3.connect(str(path), isolation_level=None)
    try:
        # small files: most tables hold a few rows, so small pages keep samples small
        big = tl.kernels["start"].size + tl.api["start"].size > 200_000
        con.execute(f"PRAGMA page_size={4096 if big else 1024}")
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("PRAGMA synchronous=OFF")
        con.execute("BEGIN")
        _Writer(con, v, tl).write_all()
        con.execute("COMMIT")
    finally:
        con.close()
    return path


def write_preset(path: str | Path, name: str, schema: str = "2024.6", **overrides) -> Path:
    """``write_nsys_sqlite(path, preset(name, **overrides), schema)`` — the helper for tests."""
    return write_nsys_sqlite(path, preset(name, **overrides), schema)


class _Writer:
    def __init__(self, con: sqlite3.Connection, v: SchemaVariant, tl: Timeline) -> None:
        self.con, self.v, self.tl, self.sc = con, v, tl, tl.scenario
        self.s = _Strings(v)
        procs = tl.processes
        self.p_device = np.array([p.device for p in procs], np.int64)
        self.p_context = np.array([p.context for p in procs], np.int64)
        self.p_gpid = np.array([p.gpid for p in procs], np.int64)
        self.gpu = gpu_model(self.sc.gpu)
        self.devices = sorted({p.device for p in procs})

    def insert(self, table: str, data: dict[str, Any], n: int) -> None:
        _insert(self.con, self.v, table, data, n)

    # -- orchestration ------------------------------------------------------------------------
    def write_all(self) -> None:
        v, sc = self.v, self.sc
        # StringIds first in sqlite_master like real files; its rows are inserted at the end.
        self.con.execute(v.ddl("StringIds"))
        self._metadata()
        if v.enums:
            for table, rows in ENUM_ROWS.items():
                self.insert(table, {"id": np.array([r[0] for r in rows]),
                                    "name": [r[1] for r in rows], "label": [r[2] for r in rows]},
                            len(rows))
        self._threads_processes()
        self._target_info()
        if sc.cuda:
            self._cuda_tables()
        self._nvtx()
        if v.gpu_metrics and self.tl.metrics["ts"].size:
            self._gpu_metrics()
        if self.tl.memory["start"].size:
            self._memory_events()
        strings = self.s.values
        self.con.executemany("INSERT INTO StringIds VALUES (?, ?)", enumerate(strings))

    # -- metadata -----------------------------------------------------------------------------
    def _environment(self) -> dict[str, str]:
        env = dict(self.sc.env)
        if self.sc.rank is not None:
            env.setdefault("RANK", str(self.sc.rank))
            env.setdefault("LOCAL_RANK", str(self.sc.rank))
            env.setdefault("WORLD_SIZE", str(self.sc.world_size or self.sc.rank + 1))
        return env

    def _metadata(self) -> None:
        v, sc, tl = self.v, self.sc, self.tl
        if v.metadata_table is None:
            return
        major, minor, micro = v.schema_version.split(".")
        exported = sc.utc_start_ns + tl.capture_end + 95 * 1_000_000_000
        name = sc.name
        rows = [("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"),
                ("EXPORT_PRODUCT_VERSION", v.product_version),
                ("EXPORT_PRODUCT_DATE", ".".join(v.product_version.split(".")[:2])),
                ("EXPORT_SCHEMA_VERSION", v.schema_version),
                ("EXPORT_SCHEMA_VERSION_MAJOR", major), ("EXPORT_SCHEMA_VERSION_MINOR", minor),
                ("EXPORT_SCHEMA_VERSION_MICRO", micro),
                ("EXPORT_SCHEMA_VERSION_CKSUM", {"2.9.1": "3609505966 99921",
                                                 "3.16.1": "1636331256 167395",
                                                 "3.25.0": "306658267 182758"}[v.schema_version]),
                ("EXPORT_PLATFORM", "linux-desktop"), ("EXPORT_ARCH", "x64")]
        src = f"/workspace/{name}.nsys-rep"
        out = f"/workspace/{name}.sqlite"
        if v.metadata_table == "EXPORT_META_DATA":  # 2022.1 - 2023.2 spelling (incl. OUTUPT typo)
            rows += [("EXPORT_TIME", "0.04"), ("EXPORT_TIME_UTC", _iso(exported)),
                     ("EXPORT_TIME_LOCAL", _iso(exported)), ("EXPORT_HOST", sc.hostname),
                     ("EXPORT_USER", "synth"), ("EXPORT_INPUT_FILE", f"{name}.nsys-rep"),
                     ("EXPORT_OUTUPT_FILE", f"{name}.sqlite"),
                     ("EXPORT_INPUT_PATH", f"{name}.nsys-rep"),
                     ("EXPORT_OUTUPT_PATH", f"{name}.sqlite"), ("EXPORT_INPUT_PATH_ABS", src),
                     ("EXPORT_OUTUPT_PATH_ABS", out), ("EXPORT_OVERWRITE", "false"),
                     ("EXPORT_LAZY", "true")]
        else:
            rows += [("EXPORT_TIME_UTC", _iso(exported)),
                     ("EXPORT_TIME_LOCAL", _iso(exported) + " +0000 UTC"),
                     ("EXPORT_HOST", sc.hostname), ("EXPORT_USER", ""),
                     ("EXPORT_PARAM_INPUT_FILE", f"{name}.nsys-rep"),
                     ("EXPORT_PARAM_OUTPUT_FILE", f"{name}.sqlite"),
                     ("EXPORT_PARAM_INPUT_PATH", src), ("EXPORT_PARAM_OUTPUT_PATH", out),
                     ("EXPORT_PARAM_INPUT_PATH_ABS", src), ("EXPORT_PARAM_OUTPUT_PATH_ABS", out),
                     ("EXPORT_PARAM_OVERWRITE", "true"), ("EXPORT_PARAM_APPEND", "false"),
                     ("EXPORT_PARAM_LAZY", "true")]
            if v.key == "2026.2":
                rows += [("EXPORT_PARAM_INCLUDE_JSON", "false"),
                         ("EXPORT_PARAM_INCLUDE_BLOBS", "false")]
            rows += [("EXPORT_PARAM_TIME_NORMALIZE", "false"), ("EXPORT_PARAM_TIME_SHIFT", "0"),
                     ("EXPORT_PARAM_TABLES_TO_EXPORT", ""), ("EXPORT_PARAM_TIMES_TO_EXPORT", ""),
                     ("EXPORT_CONFIG_TIME_SHIFT", "0"), ("EXPORT_TIME", "0.21 sec")]
        self.insert(v.metadata_table, {"name": [r[0] for r in rows],
                                       "value": [r[1] for r in rows]}, len(rows))
        if not v.capture_metadata:
            return
        cap = [("DEVICE_ID", "Local (CLI)"), ("CAPTURE_EVENT_TYPE", "NvtxEvents")]
        if sc.cuda:
            cap.append(("CAPTURE_EVENT_TYPE", "Cuda"))
        cap += [("DEVICE_DISPLAY_NAME", sc.hostname),
                ("CUDA_GRAPH_TRACE_OPTIONS:MODE", "Graph"),
                ("COLLECT_GPU_MEMORY_USAGE", "true" if sc.gpu_memory else "false"),
                ("PROCESS_0:HOW_TO_ATTACH", "LaunchAnother"),
                ("PROCESS_0:COMMAND", sc.command[0])]
        cap += [(f"PROCESS_0:ARGUMENT_{i}", a) for i, a in enumerate(sc.command[1:])]
        cap += [("PROCESS_0:WORKING_DIR", "/workspace"), ("PROCESS_0:PID", "0")]
        cap += [("PROCESS_0:ENVIRONMENT_VARIABLE", f'{k}="{val}"')
                for k, val in self._environment().items()]
        cap += [("PROCESS_0:COLLECT_NVTX_TRACE", "true"),
                ("PROCESS_0:COLLECT_CUDA_TRACE", "true" if sc.cuda else "false"),
                ("PROFILING_SESSION_UUID",
                 f"5e55{sc.seed:04x}-{len(sc.name):04x}-4000-8000-{sc.steps:012x}"),
                ("RUN_DURATION_MS", str(tl.capture_end // 1_000_000))]
        self.insert("META_DATA_CAPTURE", {"name": [r[0] for r in cap],
                                          "value": [r[1] for r in cap]}, len(cap))

    # -- threads / processes ------------------------------------------------------------------
    def _host_processes(self) -> list[tuple[int, str]]:
        base = self.sc.base_pid
        return [(1, "systemd"), (base - 61, "bash"), (base - 40, "nsys")]

    def _threads_processes(self) -> None:
        v, s = self.v, self.s
        name_ids, prio, gtids = [], [], []
        for pid, pname in self._host_processes():
            name_ids.append(s.id(pname))
            prio.append(20)
            gtids.append(VM_GLOBAL_ID | (pid << 24) | pid)
        for p in self.tl.processes:
            for key, (tid, tname) in p.threads.items():
                name_ids.append(s.id(tname))
                prio.append(20)
                gtids.append(p.gtid(key))
        self.insert("ThreadNames", {"nameId": np.array(name_ids), "priority": np.array(prio),
                                    "globalTid": np.array(gtids)}, len(gtids))
        if v.processes:
            procs = [(VM_GLOBAL_ID | (pid << 24), pid, name) for pid, name in self._host_processes()]
            procs += [(p.gpid, p.pid, self.sc.process_name) for p in self.tl.processes]
            self.insert("PROCESSES", {"globalPid": np.array([r[0] for r in procs]),
                                      "pid": np.array([r[1] for r in procs]),
                                      "name": [r[2] for r in procs]}, len(procs))
        rows = []
        empty = s.id("")
        for p in self.tl.processes:
            for stream in ("stdout", "stderr"):
                f = f"/tmp/nvidia/nsight_systems/quadd_session_{self.sc.base_pid}/streams/" \
                    f"pid_{p.pid}_{stream}.log"
                rows.append((p.gpid, s.id(f), empty))
        self.insert("ProcessStreams", {"globalPid": np.array([r[0] for r in rows]),
                                       "filenameId": np.array([r[1] for r in rows]),
                                       "contentId": np.array([r[2] for r in rows])}, len(rows))

    # -- target info ----------------------------------------------------------------------------
    def _target_info(self) -> None:
        v, sc, tl, g = self.v, self.sc, self.tl, self.gpu
        n = len(self.devices)
        dev = np.array(self.devices, np.int64)
        bus = [f"0000:{0x18 + 0x1a * d:02x}:00.0" for d in self.devices]
        uuid = [f"GPU-5e55{d:04x}-{sc.seed:04x}-4a1b-8c2d-{g.sm_count:012x}" for d in self.devices]
        if v.gpu_table == "full":
            self.insert("TARGET_INFO_GPU", {
                "vmId": VM_GLOBAL_ID, "id": dev, "name": g.name, "busLocation": bus,
                "isDiscrete": 1, "l2CacheSize": g.l2_cache, "totalMemory": g.total_memory,
                "memoryBandwidth": g.memory_bandwidth, "clockRate": g.clock_hz,
                "smCount": g.sm_count, "pwGpuId": dev, "uuid": [u[4:] for u in uuid], "luid": 0,
                "chipName": g.chip, "cuDevice": dev, "ctxswDevPath": "", "ctrlDevPath": "",
                "revision": 161, "nodeMask": 0, "constantMemory": 65536, "maxIPC": g.max_ipc,
                "maxRegistersPerBlock": 65536, "maxShmemPerBlock": 49152,
                "maxShmemPerBlockOptin": g.max_shmem_optin, "maxShmemPerSm": g.max_shmem_per_sm,
                "maxRegistersPerSm": 65536, "threadsPerWarp": 32, "asyncEngines": g.async_engines,
                "maxWarpsPerSm": 64, "maxBlocksPerSm": g.max_blocks_per_sm,
                "maxThreadsPerBlock": 1024, "maxBlockDimX": 1024, "maxBlockDimY": 1024,
                "maxBlockDimZ": 64, "maxGridDimX": 2147483647, "maxGridDimY": 65535,
                "maxGridDimZ": 65535, "computeMajor": g.compute[0], "computeMinor": g.compute[1],
                "smMajor": g.sm_version[0], "smMinor": g.sm_version[1]}, n)
        else:
            # pre-2022: one TARGET_INFO_CUDA_GPU row per (process, device); units kHz / bytes or
            # MiB / kB/s or 0 (NSYS_SQLITE.md §2.10)
            procs = tl.processes
            mib = v.gpu_table == "cuda_gpu_mib"
            self.insert("TARGET_INFO_CUDA_GPU", {
                "vmId": VM_GLOBAL_ID, "name": g.name,
                "pciBusId": [bus[self.devices.index(p.device)] for p in procs],
                "globalMemoryBandwidth": 0 if mib else g.memory_bandwidth // 1000,
                "globalMemorySize": g.total_memory // (1 << 20) if mib else g.total_memory,
                "constantMemorySize": 65536, "l2CacheSize": g.l2_cache, "numThreadsPerWarp": 32,
                "coreClockRate": g.clock_hz // 1000, "numMemcpyEngines": g.async_engines,
                "numMultiprocessors": g.sm_count, "maxIPC": g.max_ipc,
                "maxWarpsPerMultiprocessor": 64, "maxBlocksPerMultiprocessor": g.max_blocks_per_sm,
                "maxRegistersPerBlock": 65536, "maxSharedMemoryPerBlock": 49152,
                "maxThreadsPerBlock": 1024, "maxBlockDimX": 1024, "maxBlockDimY": 1024,
                "maxBlockDimZ": 64, "maxGridDimX": 2147483647, "maxGridDimY": 65535,
                "maxGridDimZ": 65535, "computeCapabilityMajor": g.compute[0],
                "computeCapabilityMinor": g.compute[1], "deviceId": self.p_device,
                "pid": np.array([p.pid for p in procs]),
                "maxSharedMemoryPerMultiprocessor": g.max_shmem_per_sm,
                "maxRegistersPerMultiprocessor": 65536}, len(procs))
            if v.gpu_table == "cuda_gpu+reduced":
                self.con.execute("CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, "
                                 "deviceId INTEGER NOT NULL, name TEXT, busLocation TEXT, "
                                 "isDiscrete INTEGER)")
                self.con.executemany("INSERT INTO TARGET_INFO_GPU VALUES (?, ?, ?, ?, ?)",
                                     [(VM_GLOBAL_ID, d, g.name, b, 1)
                                      for d, b in zip(self.devices, bus)])
        if "TARGET_INFO_SESSION_START_TIME" in v.tables:
            self.insert("TARGET_INFO_SESSION_START_TIME", {
                "utcEpochNs": sc.utc_start_ns, "utcTime": _iso(sc.utc_start_ns),
                "localTime": _iso(sc.utc_start_ns), "systemClockNs": _ANALYSIS_START_TIME}, 1)
        if v.analysis_details:
            self.insert("ANALYSIS_DETAILS", {
                "globalVid": VM_GLOBAL_ID, "duration": tl.capture_end,
                "startTime": _ANALYSIS_START_TIME,
                "stopTime": _ANALYSIS_START_TIME + tl.capture_end}, 1)
        if v.system_env:
            self._system_env()

    def _system_env(self) -> None:
        v, sc = self.v, self.sc
        rows: list[tuple[str, int, Any]] = [
            ("CpuCores", 1, "32"), ("CpuArchitecture", 3, "x86_64"),
            ("CpuDescription", 13, "AMD EPYC 7763 64-Core Processor"),
            ("NvDriverVersion", 205, "550.54.15"), ("OsDescription", 605, "Ubuntu 22.04.4 LTS")]
        env = self._environment()
        if env:
            rows.append(("DeviceEnvironment", 610,
                         v.env_separator.join(f"{k}={val}" for k, val in env.items())))
        rows.append(("CudaDriverVersion", 611, "12040"))
        if v.has_hostname:
            rows.append(("Hostname", 619, sc.hostname))
        rows += [("HasNvtxEvents", 809, "1"), ("HasCudaEvents", 812, "1" if sc.cuda else "0"),
                 ("SupportsGpuMetrics", 849, "1")]
        self.insert("TARGET_INFO_SYSTEM_ENV", {
            "globalVid": VM_GLOBAL_ID, "devStateName": "Local (CLI)",
            "name": [r[0] for r in rows], "nameEnum": np.array([r[1] for r in rows]),
            "value": [r[2] for r in rows]}, len(rows))
        if v.gpuinfo_blob:
            # 2.9.1 and older store GpuInfo as a protobuf blob in a TEXT column: not UTF-8 (§2.10)
            blob = b"\n\xdf\x01\x08\x00\x12" + bytes([len(self.gpu.name)]) + \
                self.gpu.name.encode() + b"\x1a\x0c0000:18:00.0\xff\xfe"
            self.con.execute("INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (?, ?, ?, ?, CAST(? AS TEXT))",
                             (VM_GLOBAL_ID, "Local (CLI)", "GpuInfo", 897, blob))

    # -- CUDA ----------------------------------------------------------------------------------
    def _api_name_ids(self) -> tuple[np.ndarray, np.ndarray]:
        names = self.tl.api_names.values
        suffixed = self.s.ids_of([self.v.api_name(n) for n in names])
        if not self.tl.api["unsuffixed"].any():  # no backtrace rows: do not intern unused names
            return suffixed, suffixed
        plain = self.s.ids_of([self.v.api_name(n, suffix=False) for n in names])
        return suffixed, plain

    def _cuda_tables(self) -> None:
        v, tl, s = self.v, self.tl, self.s
        procs = tl.processes
        api = tl.api
        suffixed, plain = self._api_name_ids()
        gtid_pid_mask = np.int64(-16_777_216)  # 0xFFFFFFFFFF000000 as signed int64
        assert gtid_pid_mask == np.int64(np.uint64(0xFFFFFFFFFF000000).astype(np.int64))
        corr = api["corr"]

        # runtime (API) rows
        if api["start"].size:
            o = np.argsort(api["start"], kind="stable")
            name = np.where(api["unsuffixed"], plain[api["name"]], suffixed[api["name"]])
            self.insert("CUPTI_ACTIVITY_KIND_RUNTIME", {
                "start": api["start"][o], "end": api["end"][o], "eventClass": api["eclass"][o],
                "globalTid": api["gtid"][o], "correlationId": corr[o], "nameId": name[o],
                "returnValue": 0}, o.size)

        k = tl.kernels
        if k["start"].size:
            o = np.argsort(k["start"], kind="stable")
            ki = k["kinfo"][o]
            infos = tl.kernel_infos
            dem = s.ids_of([i.demangled for i in infos])
            short = s.ids_of([i.short for i in infos])
            mang = s.ids_of([i.mangled or i.demangled for i in infos])
            arr = lambda f: np.array([f(i) for i in infos], np.int64)[ki]  # noqa: E731
            smem = arr(lambda i: i.static_smem + i.dynamic_smem)
            carve = np.where(smem == 0, 32768, np.where(smem <= 49152, 65536,
                                                         self.gpu.max_shmem_per_sm))
            cluster = arr(lambda i: i.cluster[0])
            pidx = k["pidx"][o]
            grid_id = np.zeros(o.size, np.int64)
            for p in range(len(procs)):
                m = pidx == p
                grid_id[m] = 1 + np.arange(int(m.sum()))
            self.insert("CUPTI_ACTIVITY_KIND_KERNEL", {
                "start": k["start"][o], "end": k["end"][o], "deviceId": self.p_device[pidx],
                "contextId": self.p_context[pidx], "greenContextId": v.green_context,
                "streamId": k["stream"][o], "correlationId": corr[k["api_row"][o]],
                "globalPid": self.p_gpid[pidx], "demangledName": dem[ki], "shortName": short[ki],
                "mangledName": mang[ki], "launchType": 1, "cacheConfig": 1,
                "registersPerThread": arr(lambda i: i.registers),
                "gridX": arr(lambda i: i.grid[0]), "gridY": arr(lambda i: i.grid[1]),
                "gridZ": arr(lambda i: i.grid[2]), "blockX": arr(lambda i: i.block[0]),
                "blockY": arr(lambda i: i.block[1]), "blockZ": arr(lambda i: i.block[2]),
                "staticSharedMemory": arr(lambda i: i.static_smem),
                "dynamicSharedMemory": arr(lambda i: i.dynamic_smem),
                "localMemoryPerThread": 0, "localMemoryTotal": 155_713_536, "gridId": grid_id,
                "sharedMemoryExecuted": carve,
                "sharedMemoryLimitConfig": (smem > 49152).astype(np.int64),
                "clusterX": cluster, "clusterY": arr(lambda i: i.cluster[1]),
                "clusterZ": arr(lambda i: i.cluster[2]), "clusterSchedulingPolicy": 1,
                "maxPotentialClusterSize": np.where(cluster > 0, 16, 0),
                "maxActiveClusters": np.where(cluster > 0, 66, 0),
                "tensorSizeMinusOneElements": "[]"}, o.size)

        m = tl.memcpy
        if m["start"].size:
            o = np.argsort(m["start"], kind="stable")
            pidx = m["pidx"][o]
            self.insert("CUPTI_ACTIVITY_KIND_MEMCPY", {
                "start": m["start"][o], "end": m["end"][o], "deviceId": self.p_device[pidx],
                "contextId": self.p_context[pidx], "greenContextId": v.green_context,
                "streamId": m["stream"][o], "correlationId": corr[m["api_row"][o]],
                "globalPid": self.p_gpid[pidx], "bytes": m["bytes"][o],
                "copyKind": m["copy_kind"][o], "srcKind": m["src_kind"][o],
                "dstKind": m["dst_kind"][o], "copyCount": 1}, o.size)

        ms = tl.memset
        if ms["start"].size:
            o = np.argsort(ms["start"], kind="stable")
            pidx = ms["pidx"][o]
            self.insert("CUPTI_ACTIVITY_KIND_MEMSET", {
                "start": ms["start"][o], "end": ms["end"][o], "deviceId": self.p_device[pidx],
                "contextId": self.p_context[pidx], "greenContextId": v.green_context,
                "streamId": ms["stream"][o], "correlationId": corr[ms["api_row"][o]],
                "globalPid": self.p_gpid[pidx], "value": 0, "bytes": ms["bytes"][o],
                "memKind": 2}, o.size)

        sy = tl.sync
        if sy["start"].size:
            o = np.argsort(sy["start"], kind="stable")
            pidx = sy["pidx"][o]
            sync_type = np.array([v.sync_type[kind] for kind in SYNC_KINDS], np.int64)
            self.insert("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", {
                "start": sy["start"][o], "end": sy["end"][o], "deviceId": self.p_device[pidx],
                "contextId": self.p_context[pidx], "greenContextId": v.sync_green_context,
                "streamId": sy["stream"][o], "correlationId": corr[sy["api_row"][o]],
                "globalPid": self.p_gpid[pidx], "syncType": sync_type[sy["sync_kind"][o]],
                "eventId": sy["event_id"][o], "eventSyncId": v.event_sync_id}, o.size)

        # streams / contexts (plain OS pids, §1.5)
        streams = sorted({int(x) for x in np.concatenate([k["stream"], m["stream"],
                                                           ms["stream"]]).tolist()}
                         | {COMPUTE_STREAM})
        rows = [(st, 0, 1, p.pid, p.context, 0, 3 if st == COMPUTE_STREAM else 2)
                for p in procs for st in streams]
        self.insert("TARGET_INFO_CUDA_STREAM", {
            c: np.array([r[i] for r in rows]) for i, c in enumerate(
                ("streamId", "hwId", "vmId", "processId", "contextId", "priority", "flag"))},
            len(rows))
        if v.null_stream_table == "TARGET_INFO_CUDA_NULL_STREAM":
            self.insert("TARGET_INFO_CUDA_NULL_STREAM", {
                "streamId": COMPUTE_STREAM, "hwId": 0, "vmId": 1,
                "processId": np.array([p.pid for p in procs]), "deviceId": self.p_device,
                "contextId": self.p_context}, len(procs))
        else:
            self.insert("TARGET_INFO_CUDA_CONTEXT_INFO", {
                "nullStreamId": COMPUTE_STREAM, "hwId": 0, "vmId": 1,
                "processId": np.array([p.pid for p in procs]), "deviceId": self.p_device,
                "contextId": self.p_context, "parentContextId": 0, "isGreenContext": 0},
                len(procs))
        if v.cuda_device_table:
            self.insert("TARGET_INFO_CUDA_DEVICE", {
                "gpuId": self.p_device, "cudaId": np.zeros(len(procs), np.int64),
                "pid": np.array([p.pid for p in procs])}, len(procs))

    # -- NVTX ----------------------------------------------------------------------------------
    def _nvtx(self) -> None:
        nv = self.tl.nvtx
        if nv["start"].size == 0:
            return
        o = np.argsort(nv["start"], kind="stable")
        texts = np.array(self.tl.nvtx_texts.values, dtype=object)
        text_ids = self.s.ids_of(self.tl.nvtx_texts.values)
        reg = nv["registered"][o].astype(bool)
        code = nv["text"][o]
        text = texts[code].copy()
        text[reg] = None
        text_id = _nullable(text_ids[code], reg)
        rid = nv["range_id"][o]
        self.insert("NVTX_EVENTS", {
            "start": nv["start"][o], "end": _nullable(nv["end"][o], nv["has_end"][o].astype(bool)),
            "eventType": nv["event_type"][o], "rangeId": _nullable(rid, rid >= 0), "text": text,
            "globalTid": nv["gtid"][o], "textId": text_id, "domainId": nv["domain"][o]}, o.size)

    # -- GPU metrics / memory ------------------------------------------------------------------
    def _gpu_metrics(self) -> None:
        mt = self.tl.metrics
        type_of = {d: (1 << 32) | d for d in self.devices}  # <source 1><type: gpu id in low byte>
        rows = [(type_of[d], 1, f"{self.gpu.chip} metrics", i, name)
                for d in self.devices for i, name in enumerate(GPU_METRIC_NAMES)]
        self.insert("TARGET_INFO_GPU_METRICS", {
            c: [r[i] for r in rows] for i, c in enumerate(
                ("typeId", "sourceId", "typeName", "metricId", "metricName"))}, len(rows))
        type_id = np.array([type_of.get(d, d) for d in range(max(self.devices) + 1)],
                           np.int64)[mt["device"]]
        self.insert("GPU_METRICS", {
            "rawTimestamp": mt["ts"] + _RAW_GPU_CLOCK_OFFSET, "timestamp": mt["ts"],
            "typeId": type_id, "metricId": mt["metric"], "value": mt["value"]}, mt["ts"].size)

    def _memory_events(self) -> None:
        me = self.tl.memory
        o = np.argsort(me["start"], kind="stable")
        pidx = me["pidx"][o]
        self.insert("CUDA_GPU_MEMORY_USAGE_EVENTS", {
            "start": me["start"][o], "globalPid": self.p_gpid[pidx],
            "deviceId": self.p_device[pidx], "contextId": self.p_context[pidx],
            "address": me["address"][o], "pc": 0x7F3A2B1C0000 + (me["address"][o] % 4096),
            "bytes": me["bytes"][o], "memKind": 2, "memoryOperationType": me["op"][o],
            "correlationId": self.tl.api["corr"][me["api_row"][o]],
            "streamId": COMPUTE_STREAM}, o.size)


# ---------------------------------------------------------------------------------------------
# expected answers
# ---------------------------------------------------------------------------------------------

def _busy_in(s: np.ndarray, e: np.ndarray, lo: int, hi: int) -> int:
    us, ue = union_intervals(s, e)
    c = covered_before(us, ue, np.array([lo, hi]))
    return int(c[1] - c[0])


def expected(scenario: str | Scenario, **overrides) -> dict:
    """The known answers of a preset (or Scenario), computed from its definition by building
    its timeline — never typed in. Times in ms (float), shares in 0..1.

    ``steps``: count, warm-up indices (step 0 — it carries ``warmup_extra_ns``), analysed steps
    (all others), step mean over analysed steps, periodic-phase steps. ``phases``: one row per
    phase name (in step order, periodic phases last) with the mean CPU duration over analysed
    steps (0 where absent), share of the mean step, canonical class and GPU work launched from it
    (sum of kernel durations per analysed step). ``gpu``: per device (= process), kernel busy
    (interval union) over that process's analysed window = [first analysed step start, last
    analysed step end], utilization = busy / window, copy busy likewise; the top-level values
    are process 0's. Plus kernel counts, Tensor Core share,
    exposed communication, GPU-metric means and GPU memory peak where the scenario has them.
    ``tolerance`` is the jitter fraction (0 = exact)."""
    if isinstance(scenario, str):
        sc = preset(scenario, **overrides)
    else:
        sc = replace(scenario, **overrides) if overrides else scenario
    tl = build_timeline(sc)
    st = tl.steps
    p0 = st["pidx"] == 0
    analysed = np.arange(1, sc.steps) if sc.steps > 1 else np.arange(sc.steps)
    sel = p0 & np.isin(st["step"], analysed)
    step_ms = (st["end"][sel] - st["start"][sel]) / MS
    step_mean = float(step_ms.mean())
    n_an = int(analysed.size)

    def window(pidx: int) -> tuple[int, int]:
        """[first analysed step start, last analysed step end] of one process."""
        m = (st["pidx"] == pidx) & np.isin(st["step"], analysed)
        return int(st["start"][m].min()), int(st["end"][m].max())

    occ = tl.phase_occ
    k = tl.kernels
    phases = []
    all_phases = list(sc.phases) + [q.phase for q in sc.periodic]
    for ph in all_phases:
        code = tl.phase_names.code(ph.name)
        om = (occ["pidx"] == 0) & (occ["phase"] == code) & np.isin(occ["step"], analysed)
        mean = float((occ["end"][om] - occ["start"][om]).sum()) / MS / n_an
        km = (k["pidx"] == 0) & (k["phase"] == code) & np.isin(k["step"], analysed)
        phases.append({"name": ph.name, "canonical": ph.canonical, "mean_ms": mean,
                       "share": mean / step_mean,
                       "gpu_work_ms": float((k["end"][km] - k["start"][km]).sum()) / MS / n_an,
                       "occurrences": int(om.sum())})

    infos = tl.kernel_infos
    is_tc = np.array([i.tensor_core for i in infos], bool)
    cat = np.array([i.category for i in infos], object)
    per_device = []
    for p in tl.processes:
        lo, hi = window(p.index)
        pm = k["pidx"] == p.index
        compute = pm & (cat[k["kinfo"]] != "nccl") if k["start"].size else pm
        busy = _busy_in(k["start"][pm], k["end"][pm], lo, hi)
        copies_s = np.concatenate([tl.memcpy["start"][tl.memcpy["pidx"] == p.index],
                                   tl.memset["start"][tl.memset["pidx"] == p.index]])
        copies_e = np.concatenate([tl.memcpy["end"][tl.memcpy["pidx"] == p.index],
                                   tl.memset["end"][tl.memset["pidx"] == p.index]])
        row = {"device_id": p.device, "pid": p.pid, "window_ms": (hi - lo) / MS,
               "compute_busy_ms": busy / MS, "utilization": busy / (hi - lo),
               "copy_busy_ms": _busy_in(copies_s, copies_e, lo, hi) / MS}
        nccl = pm & (cat[k["kinfo"]] == "nccl") if k["start"].size else pm
        if nccl.any():
            comm_s, comm_e = union_intervals(k["start"][nccl], k["end"][nccl])
            comm = _busy_in(comm_s, comm_e, lo, hi)
            both = _busy_in(np.concatenate([k["start"][nccl], k["start"][compute]]),
                            np.concatenate([k["end"][nccl], k["end"][compute]]), lo, hi)
            exposed = both - _busy_in(k["start"][compute], k["end"][compute], lo, hi)
            row.update({"comm_ms": comm / MS, "exposed_comm_ms": exposed / MS,
                        "hidden_comm_ms": (comm - exposed) / MS,
                        "exposed_comm_share": exposed / (hi - lo)})
        per_device.append(row)

    km = (k["pidx"] == 0) & np.isin(k["step"], analysed)
    kd = (k["end"] - k["start"])[km]
    kinfo = k["kinfo"][km]
    total = float(kd.sum())
    gemm = np.isin(cat[kinfo], ("gemm",)) if kd.size else np.zeros(0, bool)
    out: dict[str, Any] = {
        "preset": sc.name,
        "verdict": sc.expected_verdict,
        "description": sc.description,
        "gpu_name": gpu_model(sc.gpu).name,
        "processes": len(tl.processes),
        "tolerance": sc.jitter,
        "steps": {
            "count": sc.steps, "warmup": [0] if sc.steps > 1 else [],
            "analysed": analysed.tolist(), "analysed_count": n_an,
            "range_prefix": sc.step_prefix, "mean_ms": step_mean,
            "min_ms": float(step_ms.min()), "max_ms": float(step_ms.max()),
            "nominal_ms": sum(p.dur_ns for p in sc.phases) / MS,
            "warmup_ms": float((st["end"][p0][0] - st["start"][p0][0]) / MS),
            "periodic": [{"phase": q.phase.name, "every": q.every,
                          "steps": [int(i) for i in range(1, sc.steps) if i % q.every == q.every - 1]}
                         for q in sc.periodic],
        },
        "phases": phases,
        "gpu": {"utilization": per_device[0]["utilization"],
                "compute_busy_ms_per_step": per_device[0]["compute_busy_ms"] / n_an,
                "copy_busy_ms_per_step": per_device[0]["copy_busy_ms"] / n_an,
                "window_ms": per_device[0]["window_ms"], "per_device": per_device},
        "kernels": {
            "per_step": float(km.sum()) / n_an,
            "total": int(k["start"].size),
            "small_fraction": float((kd < 10 * US).mean()) if kd.size else 0.0,
            "tensor_core_share": float(kd[is_tc[kinfo]].sum()) / total if total else 0.0,
            "gemm_share": float(kd[gemm].sum()) / total if total else 0.0,
            "tc_share_of_gemm": (float(kd[gemm & is_tc[kinfo]].sum()) / float(kd[gemm].sum())
                                 if kd.size and kd[gemm].sum() else None),
            "categories": {str(c): float(kd[cat[kinfo] == c].sum()) / total
                           for c in sorted(set(cat[kinfo].tolist()))} if total else {},
        },
        "batch_size": sc.batch_size,
    }
    lo, hi = window(0)
    mt = tl.metrics
    if mt["ts"].size:
        w = (mt["ts"] > lo) & (mt["ts"] <= hi) & (mt["device"] == tl.processes[0].device)
        out["gpu_metrics"] = {name: float(mt["value"][w & (mt["metric"] == i)].mean())
                              for i, name in enumerate(GPU_METRIC_NAMES)}
    if sc.gpu_memory is not None:
        gm = sc.gpu_memory
        peak = gm.weights_bytes // gm.chunks * gm.chunks + gm.activation_bytes // gm.chunks * gm.chunks
        total_mem = gpu_model(sc.gpu).total_memory
        out["memory"] = {"peak_bytes": peak, "device_bytes": total_mem,
                         "peak_share": peak / total_mem}
    return out


# ---------------------------------------------------------------------------------------------
# samples + CLI
# ---------------------------------------------------------------------------------------------

def write_samples(directory: str | Path) -> list[Path]:
    """(Re)write every file of :data:`SAMPLES` and the directory's README.md."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    written = [write_nsys_sqlite(d / fname, preset(name, **ov), schema)
               for fname, name, schema, ov in SAMPLES]
    readme = d / "README.md"
    block = f"{README_BEGIN}\n{_samples_readme()}{README_END}\n"
    old = readme.read_text(encoding="utf-8") if readme.exists() else ""
    if README_BEGIN in old and README_END in old:  # keep what others wrote around our block
        head, _, rest = old.partition(README_BEGIN)
        _, _, tail = rest.partition(README_END)
        block = head + block.rstrip("\n") + tail
    readme.write_text(block, encoding="utf-8")
    return written


README_BEGIN = "<!-- synth:begin (generated by `make samples`; edit nsys_diag/synth.py) -->"
README_END = "<!-- synth:end -->"


def samples_readme_block(text: str) -> str:
    """The generated part of a sample_traces/README.md (between the synth markers)."""
    return text.partition(README_BEGIN)[2].partition(README_END)[0]


def _samples_readme() -> str:
    lines = [
        "# sample_traces/",
        "",
        "Small nsys SQLite exports written by nsys-diag's own generator (`nsys_diag/synth.py`).",
        "Regenerate them with `make samples` (= `python -m nsys_diag.synth --write-samples "
        "sample_traces`); `tests/test_synth.py` proves the committed files equal a fresh "
        "regeneration, table by table and row by row. The numbers below are computed by "
        "`nsys_diag.synth.expected(preset)` from the scenario definitions, not typed in.",
        "",
        "Each file can also be written on its own, in any schema variant "
        f"({', '.join(ALL_SCHEMAS)}; see `nsys_diag/synth_schema.py`):",
        "",
        "```",
        "python -m nsys_diag.synth PRESET OUT.sqlite --schema 2024.6 [--steps N] [--scale K]",
        "```",
        "",
        "| file | preset | schema (nsys) | expected verdict | steps (warm-up) | mean step | "
        "GPU compute busy | kernels (per step) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    details = []
    for fname, name, schema, ov in SAMPLES:
        sc = preset(name, **ov)
        e = expected(sc)
        v = variant(schema)
        ver = f"{schema} ({v.product_version} / {v.schema_version})" if v.schema_version else \
            f"{schema} (qdrep era, no version table)"
        util = "no CUDA trace" if not sc.cuda else f"{e['gpu']['utilization']:.1%}"
        lines.append(f"| `{fname}` | `{name}` | {ver} | `{e['verdict']}` | {sc.steps} (step 0) | "
                     f"{e['steps']['mean_ms']:.1f} ms | {util} | {e['kernels']['total']} "
                     f"({e['kernels']['per_step']:.0f}) |")
        phases = ", ".join(f"`{p['name']}` {p['mean_ms']:.1f} ms ({p['share']:.1%})"
                           for p in e["phases"])
        extra = f" Written with overrides `{ov}`." if ov else ""
        details.append(f"* **`{fname}`** — {sc.description} Step ranges `{sc.step_prefix}N`; "
                       f"phases (mean over analysed steps): {phases}. Contains: "
                       f"{', '.join(_features(sc, v))}.{extra}")
    lines += ["", "## What each file shows", ""] + details + [
        "",
        "Conventions shared by all files: step 0 is a longer warm-up; backward kernels are "
        "launched from a second thread (`pt_autograd_0`) while the main thread holds the "
        "`backward` range; timestamps start at 1.25 s (exports never start at 0); the "
        "`jitter` of a preset is the ± tolerance on its numbers (the worked example has none, so "
        "its phase shares are exactly 0.525 / 0.225 / 0.1875 / 0.0375 / 0.025 and the GPU is "
        "busy exactly 24% of the analysed window).",
        ""]
    return "\n".join(lines)


def _features(sc: Scenario, v: SchemaVariant) -> list[str]:
    """What a reader of the sample can exercise with it (for the README)."""
    phases = list(sc.phases) + [q.phase for q in sc.periodic]
    specs = [s for p in phases for s in p.kernels + p.memcpys + p.memsets + p.syncs]
    text = {"inline": "inline", "registered": "via textId",
            "mixed": "mixed (steps inline, phases via textId)"}[sc.nvtx_text]
    f = [f"{sc.n_processes} process{'es' if sc.n_processes > 1 else ''} "
         f"({gpu_model(sc.gpu).name} × {sc.n_processes})", f"step/phase NVTX text {text}"]
    if not sc.cuda:
        f.append("no CUDA tables at all")
    if any(s.thread == "autograd" for s in specs):
        f.append("backward launches from `pt_autograd_0`")
    if any(p.kind == "start_end" for p in phases):
        f.append("start/end (eventType 60) ranges")
    if any(p.ranges for p in phases):
        f.append("nested sub-ranges")
    if any(p.marks for p in phases):
        f.append("NVTX marks")
    if any(getattr(s, "nvtx_domain", "") for s in specs):
        f.append("an `NCCL` NVTX domain (domain-create rows, textId)")
    if any(isinstance(s, SyncSpec) for s in specs):
        f.append("host syncs with SYNCHRONIZATION rows")
    if any(isinstance(s, MemsetSpec) for s in specs):
        f.append("memsets")
    if any(isinstance(s, MemcpySpec) and s.host == "pageable" for s in specs):
        f.append("pageable copies")
    if sc.periodic:
        f.append(", ".join(f"`{q.phase.name}` every {q.every} steps" for q in sc.periodic))
    if sc.gpu_metrics is not None and v.gpu_metrics:
        f.append(f"GPU metrics every {sc.gpu_metrics.period_ns / MS:g} ms")
    if sc.gpu_memory is not None:
        f.append("GPU memory usage events")
    if sc.cuda_backtraces:
        f.append("eventClass-67 CUDA-backtrace duplicate API rows")
    if v.gpuinfo_blob:
        f.append("a non-UTF-8 `GpuInfo` row in TARGET_INFO_SYSTEM_ENV")
    if v.gpu_table != "full":
        f.append("`TARGET_INFO_CUDA_GPU` (kHz clock, kB/s bandwidth) + a 5-column "
                 "`TARGET_INFO_GPU`")
    return f


def _parse_env(items: list[str]) -> dict[str, str]:
    env = {}
    for it in items:
        k, sep, val = it.partition("=")
        if not sep:
            raise SystemExit(f"--env expects NAME=VALUE, got {it!r}")
        env[k] = val
    return env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nsys_diag.synth",
                                 description="Write synthetic nsys SQLite exports with known answers.")
    ap.add_argument("preset", nargs="?", help=f"one of: {', '.join(PRESETS)}")
    ap.add_argument("out", nargs="?", help="output .sqlite path")
    ap.add_argument("--schema", default="2024.6", choices=ALL_SCHEMAS)
    ap.add_argument("--steps", type=int, help="number of steps (step 0 is the warm-up)")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply kernel counts by K (durations / K: same shares, more rows)")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="add an environment variable to the capture (repeatable)")
    ap.add_argument("--expected", action="store_true", help="print the expected answers (JSON)")
    ap.add_argument("--write-samples", metavar="DIR", help="regenerate the sample_traces/ files")
    ap.add_argument("--list", action="store_true", help="list presets and schema variants")
    a = ap.parse_args(argv)
    if a.list:
        for name in PRESETS:
            sc = preset(name)
            print(f"{name:16s} {sc.expected_verdict:32s} {sc.description}")
        print("schemas:", ", ".join(ALL_SCHEMAS))
        return 0
    if a.write_samples:
        for p in write_samples(a.write_samples):
            print(f"wrote {p} ({p.stat().st_size // 1024} KiB)")
        return 0
    if not a.preset or not a.out:
        ap.error("give PRESET OUT.sqlite, or --write-samples DIR, or --list")
    if a.preset not in PRESETS:
        ap.error(f"unknown preset {a.preset!r}; choose one of {', '.join(PRESETS)}")
    ov: dict[str, Any] = {"scale": a.scale}
    if a.steps is not None:
        ov["steps"] = a.steps
    if a.seed is not None:
        ov["seed"] = a.seed
    sc = preset(a.preset, **ov)
    if a.env:
        sc = replace(sc, env={**sc.env, **_parse_env(a.env)})
    path = write_nsys_sqlite(a.out, sc, a.schema)
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB, schema {a.schema})", file=sys.stderr)
    if a.expected:
        import json

        print(json.dumps(expected(sc), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
