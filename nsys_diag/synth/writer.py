"""Writer of the trace generator: maps a :class:`~nsys_diag.synth.timeline.Timeline` onto the
tables of one nsys schema variant (:mod:`nsys_diag.synth.schema`) in a SQLite file.

Only ``sqlite3`` and numpy are used. Rows are written with ``executemany`` over numpy-built
columns, in one transaction with ``journal_mode=OFF``/``synchronous=OFF``; the timeline is
vectorised, so millions of kernels are fine. Times are integer ns as in real exports.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from nsys_diag.synth.events import OSRT_EVENT_CLASS, SYNC_KINDS
from nsys_diag.synth.presets import preset
from nsys_diag.synth.scenarios import COMPUTE_STREAM, Scenario
from nsys_diag.synth.rows import insert_rows, iso_seconds, nullable, Strings
from nsys_diag.synth.schema import (ENUM_ROWS, GPU_METRIC_NAMES, SAMPLING_THREAD_STATE_ROWS,
                                    VM_GLOBAL_ID, SchemaVariant, gpu_model, variant)
from nsys_diag.synth.timeline import Timeline, build_timeline

_ANALYSIS_START_TIME = 4_211_337_000  # raw target clock at session start (ANALYSIS_DETAILS)
_RAW_GPU_CLOCK_OFFSET = 7_000_000_000  # GPU_METRICS.rawTimestamp - timestamp

EVENT_TABLES = frozenset({
    "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS",
    "GPU_METRICS", "CUDA_GPU_MEMORY_USAGE_EVENTS", "OSRT_API", "COMPOSITE_EVENTS",
    "SAMPLING_CALLCHAINS"})
"""Tables with one row per event: written in shuffled row order with ``Scenario.shuffle_seed``
(nsys >= 2025.6 no longer promises timestamp order)."""


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
        self.s = Strings(v)
        procs = tl.processes
        self.p_device = np.array([p.device for p in procs], np.int64)
        self.p_context = np.array([p.context for p in procs], np.int64)
        self.p_gpid = np.array([p.gpid for p in procs], np.int64)
        self.gpu = gpu_model(self.sc.gpu)
        self.devices = sorted({p.device for p in procs})
        seed = self.sc.shuffle_seed
        self.shuffle = None if seed is None else np.random.default_rng(seed)

    def insert(self, table: str, data: dict[str, Any], n: int) -> None:
        if self.shuffle is not None and table in EVENT_TABLES and n > 1:
            perm = self.shuffle.permutation(n)
            data = {k: (v[perm] if isinstance(v, np.ndarray) and v.shape[:1] == (n,) else
                        [v[i] for i in perm.tolist()] if isinstance(v, list) else v)
                    for k, v in data.items()}
        insert_rows(self.con, self.v, table, data, n)

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
        if sc.nvtx:  # False: a capture without -t nvtx
            self._nvtx()
        if v.gpu_metrics and self.tl.metrics["ts"].size:
            self._gpu_metrics()
        if self.tl.memory["start"].size:
            self._memory_events()
        if self.tl.osrt["start"].size:
            self._osrt()
        if self.tl.samples["ts"].size:
            self._cpu_samples()
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
        """The export metadata table of the variant (none before 2022.1), then
        META_DATA_CAPTURE where the variant has it."""
        v = self.v
        if v.metadata_table is None:
            return
        rows = self._export_rows()
        self.insert(v.metadata_table, {"name": [r[0] for r in rows],
                                       "value": [r[1] for r in rows]}, len(rows))
        if v.capture_metadata:
            self._capture_metadata()

    def _export_rows(self) -> list[tuple[str, str]]:
        """EXPORT_* (name, value) rows in the spelling of the variant's nsys version."""
        v, sc, tl = self.v, self.sc, self.tl
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
            rows += [("EXPORT_TIME", "0.04"), ("EXPORT_TIME_UTC", iso_seconds(exported)),
                     ("EXPORT_TIME_LOCAL", iso_seconds(exported)), ("EXPORT_HOST", sc.hostname),
                     ("EXPORT_USER", "synth"), ("EXPORT_INPUT_FILE", f"{name}.nsys-rep"),
                     ("EXPORT_OUTUPT_FILE", f"{name}.sqlite"),
                     ("EXPORT_INPUT_PATH", f"{name}.nsys-rep"),
                     ("EXPORT_OUTUPT_PATH", f"{name}.sqlite"), ("EXPORT_INPUT_PATH_ABS", src),
                     ("EXPORT_OUTUPT_PATH_ABS", out), ("EXPORT_OVERWRITE", "false"),
                     ("EXPORT_LAZY", "true")]
        else:
            rows += [("EXPORT_TIME_UTC", iso_seconds(exported)),
                     ("EXPORT_TIME_LOCAL", iso_seconds(exported) + " +0000 UTC"),
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
        return rows

    def _capture_metadata(self) -> None:
        """META_DATA_CAPTURE: capture options, the launched command and its environment."""
        sc, tl = self.sc, self.tl
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
            for key, (_tid, tname) in p.threads.items():
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
        devices = self.devices + [max(self.devices) + 1 + i for i in range(sc.idle_devices)]
        n = len(devices)
        dev = np.array(devices, np.int64)
        bus = [f"0000:{0x18 + 0x1a * d:02x}:00.0" for d in devices]
        uuid = [f"GPU-5e55{d:04x}-{sc.seed:04x}-4a1b-8c2d-{g.sm_count:012x}" for d in devices]
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
                "maxWarpsPerSm": g.max_warps_per_sm, "maxBlocksPerSm": g.max_blocks_per_sm,
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
                "maxWarpsPerMultiprocessor": g.max_warps_per_sm, "maxBlocksPerMultiprocessor": g.max_blocks_per_sm,
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
                "utcEpochNs": sc.utc_start_ns, "utcTime": iso_seconds(sc.utc_start_ns),
                "localTime": iso_seconds(sc.utc_start_ns), "systemClockNs": _ANALYSIS_START_TIME}, 1)
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
        """CUDA API rows, then the GPU activity tables, then streams and contexts."""
        api = self.tl.api
        suffixed, plain = self._api_name_ids()  # interned first, as in real files
        if api["start"].size:  # runtime (API) rows
            o = np.argsort(api["start"], kind="stable")
            name = np.where(api["unsuffixed"], plain[api["name"]], suffixed[api["name"]])
            self.insert("CUPTI_ACTIVITY_KIND_RUNTIME", {
                "start": api["start"][o], "end": api["end"][o], "eventClass": api["eclass"][o],
                "globalTid": api["gtid"][o], "correlationId": api["corr"][o], "nameId": name[o],
                "returnValue": 0}, o.size)
        if self.tl.kernels["start"].size:
            self._kernels()
        self._copies_and_syncs()
        self._streams_contexts()

    def _kernels(self) -> None:
        """CUPTI_ACTIVITY_KIND_KERNEL in start order: names and launch geometry from the kernel
        catalog, gridId 1.. per process, shared-memory carve-out from the smem used."""
        v, tl, s = self.v, self.tl, self.s
        corr = tl.api["corr"]
        k = tl.kernels
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
        for p in range(len(tl.processes)):
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

    def _copies_and_syncs(self) -> None:
        """MEMCPY, MEMSET and SYNCHRONIZATION rows in start order (sync type per variant)."""
        v, tl = self.v, self.tl
        corr = tl.api["corr"]
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
                "dstKind": m["dst_kind"][o], "copyCount": 1,
                "migrationCause": nullable(m["migration"][o], m["migration"][o] >= 0)}, o.size)

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

    def _streams_contexts(self) -> None:
        """TARGET_INFO_CUDA_STREAM (every stream used + the default stream, per process) and the
        context / null-stream / device tables of the variant (plain OS pids, §1.5)."""
        v, tl = self.v, self.tl
        procs = tl.processes
        k, m, ms = tl.kernels, tl.memcpy, tl.memset
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
        text_id = nullable(text_ids[code], reg)
        rid = nv["range_id"][o]
        self.insert("NVTX_EVENTS", {
            "start": nv["start"][o], "end": nullable(nv["end"][o], nv["has_end"][o].astype(bool)),
            "eventType": nv["event_type"][o], "rangeId": nullable(rid, rid >= 0), "text": text,
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


    # -- host side: OS runtime calls, CPU samples -----------------------------------------------
    def _osrt(self) -> None:
        """OSRT_API rows (eventClass 27, OS runtime), in start order, names in StringIds."""
        os_ = self.tl.osrt
        o = np.argsort(os_["start"], kind="stable")
        ids = self.s.ids_of(self.tl.osrt_names.values)
        self.insert("OSRT_API", {
            "start": os_["start"][o], "end": os_["end"][o], "eventClass": OSRT_EVENT_CLASS,
            "globalTid": os_["gtid"][o], "correlationId": 0, "nameId": ids[os_["name"][o]],
            "returnValue": 0, "nestingLevel": 0, "callchainId": 0, "argumentsId": 0}, o.size)

    def _cpu_samples(self) -> None:
        """COMPOSITE_EVENTS (one row per sample; ids in time order, or a random permutation with
        ``shuffle_seed``) + SAMPLING_CALLCHAINS (top frame at stackDepth 0, then the stack) and,
        in variants with ENUM tables, ENUM_SAMPLING_THREAD_STATE."""
        sm, tl = self.samples_sorted(), self.tl
        n = sm["ts"].size
        ids = 1 + (np.arange(n) if self.shuffle is None else self.shuffle.permutation(n))
        self.insert("COMPOSITE_EVENTS", {
            "id": ids, "start": sm["ts"], "cpu": (sm["gtid"] & 0xF), "threadState": sm["state"],
            "globalTid": sm["gtid"], "cpuCycles": 1_000_000}, n)
        sym = self.s.ids_of(tl.frames.values)
        module = self.s.id("/usr/bin/python3.11")
        depth = 1 + len(tl.stack)
        frames = np.concatenate([sm["frame"][:, None],
                                 np.broadcast_to(np.array(tl.stack, np.int64), (n, len(tl.stack)))],
                                axis=1) if tl.stack else sm["frame"][:, None]
        self.insert("SAMPLING_CALLCHAINS", {
            "id": np.repeat(ids, depth), "symbol": sym[frames.ravel()], "module": module,
            "kernelMode": 0, "thumbCode": 0, "unresolved": 0, "specialEntry": 0,
            "originalIP": 0x55D0_0000_0000 + np.repeat(ids, depth) * 16,
            "unwindMethod": 1, "stackDepth": np.tile(np.arange(depth), n)}, n * depth)
        if self.v.enums:
            rows = SAMPLING_THREAD_STATE_ROWS
            self.insert("ENUM_SAMPLING_THREAD_STATE", {
                "id": np.array([r[0] for r in rows]), "name": [r[1] for r in rows],
                "label": [r[2] for r in rows]}, len(rows))

    def samples_sorted(self) -> dict[str, np.ndarray]:
        sm = self.tl.samples
        o = np.lexsort((sm["gtid"], sm["ts"]))
        return {k: v[o] for k, v in sm.items()}
