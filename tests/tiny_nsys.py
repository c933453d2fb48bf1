"""A tiny nsys-shaped SQLite writer for loader/CLI tests (no pytest, no nsys_diag imports).

Built from the NSYS_SQLITE.md §7 fixture, with switches for the layout traps the loader must
handle. Values are chosen so that every expected number is obvious from this file.

Default content (one process pid 4242, main thread 4243, one GPU id 0):
* StringIds 0..: API names, kernel names, NVTX texts.
* RUNTIME: 3 runtime calls (launch 101, memcpy 102, stream sync 103) + driver cuLaunchKernel (104)
  + an eventClass-67 backtrace duplicate of call 101 (same correlationId).
* KERNEL: 2 kernels (corr 101 via runtime, corr 104 via driver) + 1 kernel whose call is missing
  (corr 999) → 1 unmatched.
* MEMCPY: 1 D2H pinned←device 4 MiB (corr 102). SYNC: 1 stream sync (corr 103) + 1 device-level
  sync row with streamId 0xFFFFFFFF and no call.
* NVTX: domain-create (75) 'MyLib' id 1; ranges: 'forward' (default domain, inline text),
  'layer0' (domain 1 via textId), 'open' (NULL end), 'neg' (negative start), 'nccl' (domain 2
  without a create row), one start/end range ended on another thread; one mark; thread name (39).
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

PID = 4242
TID = 4243
GPID = (1 << 48) | (PID << 24)
GTID = GPID | TID
GTID2 = GPID | (TID + 1)
DURATION = 10_000_000

STRINGS = [
    "cudaLaunchKernel_v7000",  # 0
    "cudaMemcpyAsync_v3020",  # 1
    "cudaStreamSynchronize_v3020",  # 2
    "void gemm_kernel<float, 128>(float const*, float const*, float*, int)",  # 3
    "gemm_kernel",  # 4
    "_Z11gemm_kernelIfLi128EEvPKfS1_Pfi",  # 5
    "MyLib",  # 6
    "layer0",  # 7
    "main thread",  # 8
    "cuLaunchKernel_v2",  # 9  (a driver name ending in _v2 must keep it)
    "cudaLaunchKernelExC_v11060",  # 10 (five-digit runtime suffix)
    "cudaLaunchKernel",  # 11 (eventClass-67 backtrace copy, unsuffixed)
    "ncclKernel",  # 12
]


def write_tiny_nsys(path: str | Path, *, meta_table: str = "META_DATA_EXPORT",
                    schema: str = "3.16.1", gpu_layout: str = "full", with_nvtx: bool = True,
                    with_metrics: bool = False, with_memory: bool = False,
                    extra_columns: bool = False, bad_utf8: bool = False,
                    kernel_name: str | None = None, nvtx_text: str | None = None,
                    sync_type_stream: int = 3, env: dict[str, str] | None = None) -> Path:
    """Write the fixture to ``path``; see the module doc for the content. Returns the path."""
    path = Path(path)
    if path.exists():
        path.unlink()
    con = sqlite3.connect(path)
    x = con.execute
    strings = list(STRINGS)
    if kernel_name is not None:
        strings[3] = kernel_name
    x("CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)")
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", list(enumerate(strings)))
    x("CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER)")
    x("INSERT INTO ThreadNames VALUES (8, 0, ?)", (GTID,))
    x("CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT)")
    x("INSERT INTO PROCESSES VALUES (?, ?, 'python'), (?, 1, 'init')", (GPID, PID, 1 << 48 | 1 << 24))
    if meta_table:
        x(f"CREATE TABLE {meta_table} (name TEXT NOT NULL, value TEXT)")
        lazy = "EXPORT_PARAM_LAZY" if meta_table == "META_DATA_EXPORT" else "EXPORT_LAZY"
        con.executemany(f"INSERT INTO {meta_table} VALUES (?, ?)", [
            ("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"), ("EXPORT_PRODUCT_VERSION", "2024.6.2.25"),
            ("EXPORT_SCHEMA_VERSION", schema), (lazy, "true"), ("EXPORT_HOST", "tiny-host")])
        x("CREATE TABLE ANALYSIS_DETAILS (globalVid INTEGER NOT NULL, duration INTEGER NOT NULL, "
          "startTime INTEGER NOT NULL, stopTime INTEGER NOT NULL)")
        x("INSERT INTO ANALYSIS_DETAILS VALUES (?, ?, 823376632, ?)", (1 << 48, DURATION, 823376632 + DURATION))
        x("CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT)")
        x("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1767225600000000000, '2026-01-01T00:00:00', '2026-01-01T00:00:00')")
    x("CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER, devStateName TEXT, name TEXT, nameEnum INTEGER, value TEXT)")
    envs = env if env is not None else {"SECRET_TOKEN": "hunter2-do-not-show", "RANK": "0"}
    blob = ";".join(f"{k}={v}" for k, v in envs.items())
    con.executemany("INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (?, 'x', ?, 0, ?)", [
        (1 << 48, "Hostname", "tiny-host"), (1 << 48, "CpuCores", "8"),
        (1 << 48, "DeviceEnvironment", blob)])
    if bad_utf8:
        x("INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (?, 'x', 'GpuInfo', 0, CAST(? AS TEXT))",
          (1 << 48, b"\xff\xfe\x00binary\x9c"))

    # ---- GPUs
    if gpu_layout == "full":
        x("CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, "
          "busLocation TEXT, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER, "
          "smCount INTEGER, chipName TEXT, cuDevice INTEGER, computeMajor INTEGER, computeMinor INTEGER, "
          "smMajor INTEGER, smMinor INTEGER)")
        x("INSERT INTO TARGET_INFO_GPU VALUES (?, 0, 'NVIDIA H200', '0000:01:00.0', 150000000000, "
          "4800000000000, 1980000000, 132, 'GH100', 0, 9, 0, 9, 2)", (1 << 48,))
    elif gpu_layout in ("cuda_gpu_mib", "cuda_gpu_bytes"):
        x("CREATE TABLE TARGET_INFO_CUDA_GPU (vmId INTEGER NOT NULL, name TEXT NOT NULL, pciBusId TEXT, "
          "globalMemoryBandwidth INTEGER NOT NULL, globalMemorySize INTEGER NOT NULL, "
          "coreClockRate INTEGER NOT NULL, numMultiprocessors INTEGER NOT NULL, "
          "computeCapabilityMajor INTEGER NOT NULL, computeCapabilityMinor INTEGER NOT NULL, "
          "deviceId INTEGER NOT NULL, pid INTEGER NOT NULL)")
        if gpu_layout == "cuda_gpu_mib":  # pre-2022 V100: MiB, kHz, bandwidth 0 = unknown
            rows = [(1, "Tesla V100-SXM2-32GB", "0000:1a:00.0", 0, 32510, 1380000, 80, 7, 0, 0, PID),
                    (1, "Tesla V100-SXM2-32GB", "0000:1a:00.0", 0, 32510, 1380000, 80, 7, 0, 0, 999)]
        else:  # NVHPC 21.2 era: bytes, kHz, kB/s; plus a reduced TARGET_INFO_GPU
            rows = [(1, "GeForce RTX 3080", None, 760080000, 10495524864, 1740000, 68, 8, 6, 0, PID)]
            x("CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
              "name TEXT, busLocation TEXT, isDiscrete INTEGER)")
            x("INSERT INTO TARGET_INFO_GPU VALUES (1, 0, 'GeForce RTX 3080', '0000:65:00.0', 1)")
        con.executemany("INSERT INTO TARGET_INFO_CUDA_GPU VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)

    # ---- CUDA API
    extra = ", name TEXT" if extra_columns else ""
    x("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, "
      "eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, "
      f"returnValue INTEGER NOT NULL, callchainId INTEGER{extra})")
    rt = [(3000, 3500, 0, GTID, 101, 0), (600000, 600400, 0, GTID, 102, 1),
          (700000, 950000, 0, GTID, 103, 2), (4000, 4300, 1, GTID, 104, 9),
          (2990, 3600, 67, GTID, 101, 11), (5000, 5200, 0, GTID, 105, 10)]
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, "
                    "correlationId, nameId, returnValue) VALUES (?,?,?,?,?,?,0)", rt)

    # ---- kernels (+ DLProf-style appended columns when extra_columns)
    kextra = ", kernel_name TEXT, long_kernel_name TEXT" if extra_columns else ""
    x("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, "
      "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, "
      "streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, "
      "shortName INTEGER NOT NULL, mangledName INTEGER, registersPerThread INTEGER NOT NULL, "
      "gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, "
      "blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL, "
      f"dynamicSharedMemory INTEGER NOT NULL, graphNodeId INTEGER{kextra})")
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, "
                    "greenContextId, streamId, correlationId, globalPid, demangledName, shortName, "
                    "mangledName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, "
                    "staticSharedMemory, dynamicSharedMemory, graphNodeId) "
                    "VALUES (?,?,0,1,0,7,?,?,?,?,?,128,132,1,1,256,1,1,1024,49152,?)", [
                        (10000, 410000, 101, GPID, 3, 4, 5, None),
                        (420000, 430000, 104, GPID, 12, 12, 12, 77),
                        (20, 9000, 999, GPID, 3, 4, 5, None)])

    x("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, "
      "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, "
      "correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, "
      "srcKind INTEGER, dstKind INTEGER)")
    x("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (610000, 650000, 0, 1, 7, 102, ?, 4194304, 2, 2, 1)",
      (GPID,))
    x("CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL, "
      "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, "
      "correlationId INTEGER, globalPid INTEGER, syncType INTEGER NOT NULL, eventId INTEGER NOT NULL)")
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (?,?,0,1,?,?,?,?,?)", [
        (700100, 949900, 7, 103, GPID, sync_type_stream, 4294967295),
        (960000, 970000, 4294967295, 888, GPID, 4, 4294967295)])

    # ---- NVTX
    if with_nvtx:
        x("CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, "
          "rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, "
          "endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER, "
          "int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, "
          "floatValue REAL, jsonTextId INTEGER, jsonText TEXT, binaryData TEXT)")
        fwd = nvtx_text if nvtx_text is not None else "forward"
        con.executemany("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, endGlobalTid, "
                        "textId, domainId, int64Value, doubleValue) VALUES (?,?,?,?,?,?,?,?,?,?)", [
                            (100, None, 75, "MyLib", GTID, None, None, 1, None, None),
                            (-5000, None, 39, "worker-0", GTID, None, None, 0, None, None),
                            (1000, 900000, 59, fwd, GTID, None, None, 0, 7, None),
                            (2000, 500000, 59, None, GTID, None, 7, 1, None, 2.5),
                            (8_000_000, None, 59, "open", GTID, None, None, 0, None, None),
                            (-2_000, 500, 59, "neg", GTID, None, None, 0, None, None),
                            (3000, 4000, 59, None, GTID, None, 12, 2, None, None),
                            (5000, 6000, 60, "handoff", GTID, GTID2, None, 0, None, None),
                            (950000, None, 34, "mark-here", GTID, None, None, 0, None, None)])
        if bad_utf8:
            x("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
              "VALUES (7000, 8000, 59, CAST(? AS TEXT), ?, 0)", (b"caf\xe9-range", GTID))

    if with_metrics:
        x("CREATE TABLE TARGET_INFO_GPU_METRICS (typeId INTEGER NOT NULL, sourceId INTEGER NOT NULL, "
          "typeName TEXT NOT NULL, metricId INTEGER NOT NULL, metricName TEXT NOT NULL)")
        t = (1 << 32) | 0
        con.executemany("INSERT INTO TARGET_INFO_GPU_METRICS VALUES (?, 1, 'GH100', ?, ?)", [
            (t, 0, "GPC Clock Frequency [MHz]"), (t, 1, "SMs Active [Throughput %]"),
            (t, 2, "Tensor Active [Throughput %]")])
        x("CREATE TABLE GPU_METRICS (rawTimestamp INTEGER NOT NULL, timestamp INTEGER NOT NULL, "
          "typeId INTEGER NOT NULL, metricId INTEGER NOT NULL, value INTEGER NOT NULL)")
        con.executemany("INSERT INTO GPU_METRICS VALUES (?, ?, ?, ?, ?)", [
            (1, 100000, t, 0, 1_755_000_000), (1, 100000, t, 1, 97), (1, 100000, t, 2, 80),
            (2, 200000, t, 0, 1_755_000_000), (2, 200000, t, 1, 98), (2, 200000, t, 2, 182)])
    if with_memory:
        x("CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER NOT NULL, globalPid INTEGER NOT NULL, "
          "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, address INTEGER NOT NULL, "
          "pc INTEGER NOT NULL, bytes INTEGER NOT NULL, memKind INTEGER NOT NULL, "
          "memoryOperationType INTEGER NOT NULL, name TEXT, correlationId INTEGER)")
        con.executemany("INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES (?, ?, 0, 1, 4096, 0, ?, 2, ?, NULL, NULL)",
                        [(1000, GPID, 1 << 20, 0), (2000, GPID, 1 << 20, 1)])
    con.commit()
    con.close()
    return path


def write_plain_sqlite(path: str | Path) -> Path:
    """A valid SQLite database that is not an nsys export."""
    path = Path(path)
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    con.execute("INSERT INTO users VALUES (1, 'ada')")
    con.commit()
    con.close()
    return path
