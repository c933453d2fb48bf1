"""Schema variants of the nsys SQLite export, as written by :mod:`nsys_diag.synth`.

Everything here is a fact about real exports, taken from ``NSYS_SQLITE.md`` (§1, §2, §4, §5) and
from the real files it was checked against: table names, column names **in their real order**,
NOT NULL flags, ``REFERENCES`` clauses (2.9.1 and older), metadata keys, ENUM rows, API-name
suffixes, ``syncType`` numbering and GPU-table units per variant.

Variants (``SchemaVariant.key``):

==========  =================  =====================================================================
key         nsys / schema      what distinguishes it
==========  =================  =====================================================================
``2020``    pre-2021.2         oldest layout: KERNEL 25 cols, MEMCPY without migrationCause, RUNTIME
                               without callchainId, only ``TARGET_INFO_CUDA_GPU`` (MiB memory,
                               kHz clock, bandwidth 0 = unknown); no metadata table
``2021``    ~2021.1 (qdrep)    transitional: KERNEL 26 cols (+sharedMemoryLimitConfig),
                               ``TARGET_INFO_CUDA_GPU`` (bytes, kHz, kB/s) + a 5-column
                               ``TARGET_INFO_GPU(vmId, deviceId, …)``; no metadata, PROCESSES,
                               ANALYSIS_DETAILS, session start, ENUM or system-env tables
``2022.2``  2022.2.1 / 2.9.1   ``EXPORT_META_DATA`` (``EXPORT_LAZY``, ``EXPORT_OUTUPT_*``), KERNEL
                               27 (+mangledName), real ``REFERENCES`` clauses, no ENUM tables,
                               NVTX 19 cols, ``TARGET_INFO_CUDA_NULL_STREAM``, env NUL-separated,
                               non-UTF-8 ``GpuInfo`` blob
``2024.6``  2024.6.2 / 3.16.1  ``META_DATA_EXPORT`` + ``META_DATA_CAPTURE``, KERNEL 28
                               (+greenContextId), NVTX 20 (+binaryData), ENUM tables,
                               ``TARGET_INFO_CUDA_CONTEXT_INFO``, stream sync written as syncType 2
``2026.2``  2026.2.1 / 3.25.0  KERNEL 40 (qmd*, graphId, cluster*, tensorSizeMinusOneElements),
                               MEMCPY copyCount, SYNCHRONIZATION deprecatedSyncType/eventSyncId,
                               session ``systemClockNs``, ``TARGET_INFO_CUDA_DEVICE(gpuId, cudaId, pid)``
==========  =================  =====================================================================

GPU metrics tables (``TARGET_INFO_GPU_METRICS``/``GPU_METRICS``) are written only for 2024.6 and
2026.2: no real file shows their pre-2024 form (§2.12).
"""
from __future__ import annotations

from dataclasses import dataclass, field

VM_GLOBAL_ID = 1 << 48
"""``ANALYSIS_DETAILS.globalVid`` / ``TARGET_INFO_GPU.vmId``: hardware id 0, VM id 1 (§1.5)."""

NO_ID_U32 = 0xFFFFFFFF
"""SYNCHRONIZATION ``streamId``/``eventId``/``eventSyncId`` sentinel for "none" (§1.1)."""


def global_pid(pid: int) -> int:
    """Serialized GlobalId of a process: ``<hw 0><vm 1><pid:24><tid 0>`` (§1.5)."""
    return VM_GLOBAL_ID | (pid << 24)


def global_tid(pid: int, tid: int) -> int:
    """Serialized GlobalId of a thread."""
    return VM_GLOBAL_ID | (pid << 24) | tid


# --------------------------------------------------------------------------------------------
# Column layouts (names in real order). Types/NOT NULL come from _TYPES/_NOT_NULL below.
# --------------------------------------------------------------------------------------------

_K_HEAD = ("start", "end", "deviceId", "contextId")
_K_MID = ("streamId", "correlationId", "globalPid", "demangledName", "shortName")
_K_TAIL = ("launchType", "cacheConfig", "registersPerThread", "gridX", "gridY", "gridZ",
           "blockX", "blockY", "blockZ", "staticSharedMemory", "dynamicSharedMemory",
           "localMemoryPerThread", "localMemoryTotal", "gridId", "sharedMemoryExecuted",
           "graphNodeId")
_K_2026 = ("qmdBulkReleaseDone", "qmdPreexitDone", "qmdLastCtaDone", "graphId", "clusterX",
           "clusterY", "clusterZ", "clusterSchedulingPolicy", "maxPotentialClusterSize",
           "maxActiveClusters", "sharedMemoryRequestedPercentage", "tensorSizeMinusOneElements")

KERNEL_LAYOUTS: dict[int, tuple[str, ...]] = {
    25: _K_HEAD + _K_MID + _K_TAIL,
    26: _K_HEAD + _K_MID + _K_TAIL + ("sharedMemoryLimitConfig",),
    27: _K_HEAD + _K_MID + ("mangledName",) + _K_TAIL + ("sharedMemoryLimitConfig",),
    28: _K_HEAD + ("greenContextId",) + _K_MID + ("mangledName",) + _K_TAIL
    + ("sharedMemoryLimitConfig",),
    40: _K_HEAD + ("greenContextId",) + _K_MID + ("mangledName",) + _K_TAIL
    + ("sharedMemoryLimitConfig",) + _K_2026,
}
"""CUPTI_ACTIVITY_KIND_KERNEL layouts by column count (NSYS_SQLITE.md §2.1 'Observed layouts')."""

_GPU_OP_HEAD = ("start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid")
_GPU_OP_HEAD_GREEN = ("start", "end", "deviceId", "contextId", "greenContextId", "streamId",
                      "correlationId", "globalPid")
_MEMCPY_BODY = ("bytes", "copyKind", "deprecatedSrcId", "srcKind", "dstKind", "srcDeviceId",
                "srcContextId", "dstDeviceId", "dstContextId")

_RUNTIME_OLD = ("start", "end", "eventClass", "globalTid", "correlationId", "nameId", "returnValue")
_NVTX19 = ("start", "end", "eventType", "rangeId", "category", "color", "text", "globalTid",
           "endGlobalTid", "textId", "domainId", "uint64Value", "int64Value", "doubleValue",
           "uint32Value", "int32Value", "floatValue", "jsonTextId", "jsonText")
_TARGET_INFO_GPU41 = (
    "vmId", "id", "name", "busLocation", "isDiscrete", "l2CacheSize", "totalMemory",
    "memoryBandwidth", "clockRate", "smCount", "pwGpuId", "uuid", "luid", "chipName", "cuDevice",
    "ctxswDevPath", "ctrlDevPath", "revision", "nodeMask", "constantMemory", "maxIPC",
    "maxRegistersPerBlock", "maxShmemPerBlock", "maxShmemPerBlockOptin", "maxShmemPerSm",
    "maxRegistersPerSm", "threadsPerWarp", "asyncEngines", "maxWarpsPerSm", "maxBlocksPerSm",
    "maxThreadsPerBlock", "maxBlockDimX", "maxBlockDimY", "maxBlockDimZ", "maxGridDimX",
    "maxGridDimY", "maxGridDimZ", "computeMajor", "computeMinor", "smMajor", "smMinor")
_TARGET_INFO_CUDA_GPU = (
    "vmId", "name", "pciBusId", "globalMemoryBandwidth", "globalMemorySize", "constantMemorySize",
    "l2CacheSize", "numThreadsPerWarp", "coreClockRate", "numMemcpyEngines", "numMultiprocessors",
    "maxIPC", "maxWarpsPerMultiprocessor", "maxBlocksPerMultiprocessor", "maxRegistersPerBlock",
    "maxSharedMemoryPerBlock", "maxThreadsPerBlock", "maxBlockDimX", "maxBlockDimY",
    "maxBlockDimZ", "maxGridDimX", "maxGridDimY", "maxGridDimZ", "computeCapabilityMajor",
    "computeCapabilityMinor", "deviceId", "pid", "maxSharedMemoryPerMultiprocessor",
    "maxRegistersPerMultiprocessor")
_MEM_USAGE11 = ("start", "globalPid", "deviceId", "contextId", "address", "pc", "bytes", "memKind",
                "memoryOperationType", "name", "correlationId")
_MEM_USAGE18 = _MEM_USAGE11 + (
    "streamId", "localMemoryPoolAddress", "localMemoryPoolReleaseThreshold", "localMemoryPoolSize",
    "localMemoryPoolUtilizedSize", "importedMemoryPoolAddress", "importedMemoryPoolProcessId")
_ENUM = ("id", "name", "label")

_COMMON_TABLES: dict[str, tuple[str, ...]] = {
    "StringIds": ("id", "value"),
    "ThreadNames": ("nameId", "priority", "globalTid"),
    "ProcessStreams": ("globalPid", "filenameId", "contentId"),
    "TARGET_INFO_CUDA_STREAM": ("streamId", "hwId", "vmId", "processId", "contextId", "priority",
                                "flag"),
}

# Column types: INTEGER unless listed.
_TEXT = {"name", "text", "jsonText", "symbolName", "binaryData", "busLocation", "uuid", "chipName",
         "ctxswDevPath", "ctrlDevPath", "utcTime", "localTime", "typeName", "metricName",
         "devStateName", "tensorSizeMinusOneElements", "label", "pciBusId"}
_REAL = {"doubleValue", "floatValue"}
_TEXT_VALUE_TABLES = {"StringIds", "EXPORT_META_DATA", "META_DATA_EXPORT", "META_DATA_CAPTURE",
                      "TARGET_INFO_SYSTEM_ENV"}  # elsewhere `value` is INTEGER (MEMSET, GPU_METRICS)


def column_type(table: str, column: str) -> str:
    """Declared SQLite type of ``table.column`` in real exports."""
    if column == "value":
        return "TEXT" if table in _TEXT_VALUE_TABLES else "INTEGER"
    return "TEXT" if column in _TEXT else "REAL" if column in _REAL else "INTEGER"

_NOT_NULL: dict[str, set[str]] = {
    "CUPTI_ACTIVITY_KIND_KERNEL": {
        "start", "end", "deviceId", "contextId", "streamId", "demangledName", "shortName",
        "registersPerThread", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
        "staticSharedMemory", "dynamicSharedMemory", "localMemoryPerThread", "localMemoryTotal",
        "gridId", "tensorSizeMinusOneElements"},
    "CUPTI_ACTIVITY_KIND_RUNTIME": {"start", "end", "eventClass", "nameId", "returnValue"},
    "CUPTI_ACTIVITY_KIND_MEMCPY": {"start", "end", "deviceId", "contextId", "streamId", "bytes",
                                   "copyKind"},
    "CUPTI_ACTIVITY_KIND_MEMSET": {"start", "end", "deviceId", "contextId", "streamId", "value",
                                   "bytes"},
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": {"start", "end", "deviceId", "contextId", "streamId",
                                            "syncType", "eventId"},
    "NVTX_EVENTS": {"start", "eventType"},
    "StringIds": {"id", "value"},
    "ThreadNames": {"nameId"},
    "ProcessStreams": {"globalPid", "filenameId", "contentId"},
    "EXPORT_META_DATA": {"name"},
    "META_DATA_EXPORT": {"name"},
    "META_DATA_CAPTURE": {"name"},
    "ANALYSIS_DETAILS": {"globalVid", "duration", "startTime", "stopTime"},
    "TARGET_INFO_GPU": {"vmId", "id"},
    "TARGET_INFO_SYSTEM_ENV": {"devStateName", "name", "nameEnum", "value"},
    "TARGET_INFO_CUDA_STREAM": {"streamId", "hwId", "vmId", "processId", "contextId", "priority",
                                "flag"},
    "TARGET_INFO_CUDA_NULL_STREAM": {"streamId", "hwId", "vmId", "processId", "deviceId",
                                     "contextId"},
    "TARGET_INFO_CUDA_CONTEXT_INFO": {"nullStreamId", "hwId", "vmId", "processId", "deviceId",
                                      "contextId"},
    "TARGET_INFO_CUDA_DEVICE": {"cudaId", "pid"},
    "TARGET_INFO_CUDA_GPU": set(_TARGET_INFO_CUDA_GPU) - {
        "pciBusId", "pid", "maxSharedMemoryPerMultiprocessor", "maxRegistersPerMultiprocessor"},
    "TARGET_INFO_GPU_METRICS": {"typeId", "sourceId", "typeName", "metricId", "metricName"},
    "GPU_METRICS": {"rawTimestamp", "timestamp", "typeId", "metricId", "value"},
    "CUDA_GPU_MEMORY_USAGE_EVENTS": set(_MEM_USAGE11[:9]),
    "OSRT_API": {"start", "end", "eventClass", "nameId", "returnValue", "callchainId"},
    "COMPOSITE_EVENTS": {"id", "start", "cpuCycles"},
    "SAMPLING_CALLCHAINS": {"id", "symbol", "module", "stackDepth"},
}
_PRIMARY_KEY = {"StringIds": "id", "COMPOSITE_EVENTS": "id"}  # ENUM_* tables too (in ddl())
_COMPOSITE_KEY = {"SAMPLING_CALLCHAINS": ("id", "stackDepth")}  # PRIMARY KEY (id, stackDepth)

# Real FOREIGN KEY clauses of schema 2.9.1 and older (inert; PRAGMA foreign_keys stays OFF).
_REFERENCES_291: dict[tuple[str, str], str] = {
    ("CUPTI_ACTIVITY_KIND_RUNTIME", "nameId"): "StringIds(id)",
    ("CUPTI_ACTIVITY_KIND_RUNTIME", "callchainId"): "CUDA_CALLCHAINS(id)",
    ("CUPTI_ACTIVITY_KIND_KERNEL", "correlationId"): "CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)",
    ("CUPTI_ACTIVITY_KIND_KERNEL", "graphNodeId"): "CUDA_GRAPH_EVENTS(graphNodeId)",
    ("CUPTI_ACTIVITY_KIND_MEMCPY", "correlationId"): "CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)",
    ("CUPTI_ACTIVITY_KIND_MEMCPY", "graphNodeId"): "CUDA_GRAPH_EVENTS(graphNodeId)",
    ("CUPTI_ACTIVITY_KIND_MEMSET", "correlationId"): "CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)",
    ("CUPTI_ACTIVITY_KIND_MEMSET", "graphNodeId"): "CUDA_GRAPH_EVENTS(graphNodeId)",
    ("NVTX_EVENTS", "textId"): "StringIds(id)",
}
_REFERENCES_PRE2022 = {("CUPTI_ACTIVITY_KIND_RUNTIME", "callchainId"): "CUDA_CALLCHAINS(id)"}


# --------------------------------------------------------------------------------------------
# ENUM rows (§5; identical in every 3.x file). Only the tables a GPU analysis touches.
# --------------------------------------------------------------------------------------------

ENUM_ROWS: dict[str, tuple[tuple[int, str, str], ...]] = {
    "ENUM_NSYS_EVENT_TYPE": tuple(
        (i, n, n) for i, n in (
            (30, "Emc"), (31, "Composite"), (32, "NvtxEvents"), (33, "NvtxCategory"),
            (34, "NvtxMark"), (35, "NvtxPushRange"), (36, "NvtxPopRange"),
            (37, "NvtxStartRange"), (38, "NvtxEndRange"), (39, "NvtxThread"), (40, "PowerRate"),
            (59, "NvtxPushPopRange"), (60, "NvtxStartEndRange"), (61, "ProfTime"),
            (64, "NvtxtCategory"), (65, "NvtxtMark"), (66, "NvtxtPushRange"),
            (67, "NvtxtPopRange"), (68, "NvtxtStartRange"), (69, "NvtxtEndRange"),
            (70, "NvtxtPushPopRange"), (71, "NvtxtStartEndRange"), (72, "NvtxtMetaThread"),
            (73, "NvtxtMetaProcess"), (74, "NvtxtMetaFileDisplay"), (75, "NvtxDomainCreate"),
            (76, "NvtxDomainDestroy"), (97, "NvtxNameCudaDevice"), (98, "NvtxNameCudaContext"),
            (99, "NvtxNameCudaStream"))),
    "ENUM_NSYS_EVENT_CLASS": (
        (0, "TRACE_PROCESS_EVENT_CUDA_RUNTIME", "CUDA runtime"),
        (1, "TRACE_PROCESS_EVENT_CUDA_DRIVER", "CUDA driver"),
        (67, "TRACE_PROCESS_EVENT_CUDABACKTRACE", "CUDA backtrace"),
        (68, "TRACE_PROCESS_EVENT_CUDABACKTRACE_START", "CUDA backtrace start"),
        (69, "TRACE_PROCESS_EVENT_CUDABACKTRACE_FINISH", "CUDA backtrace finish")),
    "ENUM_CUDA_MEMCPY_OPER": tuple(
        (i, "CUDA_MEMCPY_KIND_" + n, lab) for i, n, lab in (
            (0, "UNKNOWN", "Unknown"), (1, "HTOD", "Host-to-Device"), (2, "DTOH", "Device-to-Host"),
            (3, "HTOA", "Host-to-Array"), (4, "ATOH", "Array-to-Host"),
            (5, "ATOA", "Array-to-Array"), (6, "ATOD", "Array-to-Device"),
            (7, "DTOA", "Device-to-Array"), (8, "DTOD", "Device-to-Device"),
            (9, "HTOH", "Host-to-Host"), (10, "PTOP", "Peer-to-Peer"),
            (11, "UVM_HTOD", "Unified Host-to-Device"), (12, "UVM_DTOH", "Unified Device-to-Host"),
            (13, "UVM_DTOD", "Unified Device-to-Device"))),
    "ENUM_CUDA_MEM_KIND": tuple(
        (i, "CUDA_MEMOPR_MEMORY_KIND_" + n, lab) for i, n, lab in (
            (0, "PAGEABLE", "Pageable"), (1, "PINNED", "Pinned"), (2, "DEVICE", "Device"),
            (3, "ARRAY", "Array"), (4, "MANAGED", "Managed"), (5, "DEVICE_STATIC", "Device Static"),
            (6, "MANAGED_STATIC", "Managed Static"), (7, "UNKNOWN", "Unknown"))),
    "ENUM_CUPTI_SYNC_TYPE": tuple(
        (i, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_" + n, lab) for i, n, lab in (
            (0, "UNKNOWN", "Unknown"), (1, "EVENT_SYNCHRONIZE", "Event sync"),
            (2, "STREAM_WAIT_EVENT", "Stream wait sync"), (3, "STREAM_SYNCHRONIZE", "Stream sync"),
            (4, "CONTEXT_SYNCHRONIZE", "Context sync"))),
    "ENUM_CUDA_DEV_MEM_EVENT_OPER": (
        (0, "CUDA_DEV_MEM_EVENT_OPR_ALLOCATION", "Allocation"),
        (1, "CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION", "Deallocation")),
    "ENUM_CUDA_KERNEL_LAUNCH_TYPE": (
        (0, "CUDA_KERNEL_LAUNCH_TYPE_UNKNOWN", "Unknown"),
        (1, "CUDA_KERNEL_LAUNCH_TYPE_REGULAR", "Regular"),
        (2, "CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE", "Coop Single Device"),
        (3, "CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE", "Coop Multi Device")),
    "ENUM_CUDA_FUNC_CACHE_CONFIG": (
        (0, "CU_FUNC_CACHE_PREFER_NONE", "None"), (1, "CU_FUNC_CACHE_PREFER_SHARED", "Shared"),
        (2, "CU_FUNC_CACHE_PREFER_L1", "L1"), (3, "CU_FUNC_CACHE_PREFER_EQUAL", "Equal")),
    "ENUM_CUDA_SHARED_MEM_LIMIT_CONFIG": (
        (0, "CUDA_SHARED_MEM_LIMIT_DEFAULT", "Default"), (1, "CUDA_SHARED_MEM_LIMIT_OPTIN", "Opt in")),
    "ENUM_CUPTI_STREAM_TYPE": (
        (0, "CUPTI_ACTIVITY_STREAM_CREATE_FLAG_UNKNOWN", "Unknown stream type"),
        (1, "CUPTI_ACTIVITY_STREAM_CREATE_FLAG_DEFAULT", "Default stream"),
        (2, "CUPTI_ACTIVITY_STREAM_CREATE_FLAG_NON_BLOCKING", "Non-blocking stream"),
        (3, "CUPTI_ACTIVITY_STREAM_CREATE_FLAG_NULL", "Null stream")),
}

SAMPLING_THREAD_STATE_ROWS: tuple[tuple[int, str, str], ...] = (
    (0, "Unknown", "Unknown"), (1, "Running", "Running"), (2, "Interruptible", "Interruptible"),
    (3, "Uninterruptible", "Uninterruptible"), (4, "Stopped", "Stopped"),
    (5, "Terminated", "Terminated"), (6, "Unscheduled", "Unscheduled"), (7, "Waiting", "Waiting"),
    (8, "OSRuntime", "OS runtime"), (9, "Initialized", "Initialized"),
    (10, "Transition", "Transition"))
"""``ENUM_SAMPLING_THREAD_STATE`` (§5): written (enum variants only) when CPU samples are."""

# --------------------------------------------------------------------------------------------
# CUDA API names as they appear in StringIds (§1.4)
# --------------------------------------------------------------------------------------------

RUNTIME_SUFFIX: dict[str, str] = {
    "cudaLaunchKernel": "_v7000", "cudaLaunchKernelExC": "_v11060",
    "cudaMemcpyAsync": "_v3020", "cudaMemcpy": "_v3020", "cudaMemsetAsync": "_v3020",
    "cudaStreamSynchronize": "_v3020", "cudaDeviceSynchronize": "_v3020",
    "cudaEventSynchronize": "_v3020", "cudaEventRecord": "_v3020", "cudaEventQuery": "_v3020",
    "cudaStreamWaitEvent": "_v3020", "cudaMalloc": "_v3020", "cudaFree": "_v3020",
    "cudaHostAlloc": "_v3020", "cudaEventCreateWithFlags": "_v3020",
    "cudaStreamIsCapturing": "_v10000", "cudaGetDeviceProperties_v2": "_v12000",
    "cudaGetDeviceProperties": "_v3020", "cudaStreamGetCaptureInfo_v2": "_v11030",
    "cudaGetDriverEntryPoint": "_v11030", "cudaSetDevice": "_v3020", "cudaGetDevice": "_v3020",
}
"""Runtime API → CUDA-version suffix as nsys writes it (``eventClass = 0`` rows)."""

DRIVER_APIS = frozenset({
    "cuLaunchKernel", "cuLaunchKernelEx", "cuInit", "cuModuleLoadData", "cuModuleGetLoadingMode",
    "cuMemAlloc_v2", "cuGetProcAddress_v2", "cuKernelGetAttribute", "cuLibraryLoadData",
    "cuLibraryGetKernel", "cuCtxSetCurrent", "cuModuleLoad", "cuModuleLoadDataEx",
    "cuLibraryLoadFromFile", "cuCtxCreate_v2", "cuDevicePrimaryCtxRetain", "cuMemFree_v2",
    "cuMemCreate", "cuMemMap", "cuMemRelease", "cuMemAddressReserve",
    # what libomptarget and the NVHPC runtimes call (driver API, no version suffix)
    "cuStreamSynchronize", "cuCtxSynchronize", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2",
    "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemAllocManaged", "cuStreamCreate",
    "cuModuleGetFunction", "cuDeviceGetCount", "cuDeviceGet", "cuCtxGetDevice"})
"""Driver APIs (``eventClass = 1``): written without version suffix (``_v2`` is part of the name)."""


@dataclass(frozen=True)
class SchemaVariant:
    """Everything that differs between export versions, for the writer."""

    key: str
    product_version: str  # EXPORT_PRODUCT_VERSION ('' when the export records none)
    schema_version: str  # EXPORT_SCHEMA_VERSION ('' when none)
    tables: dict[str, tuple[str, ...]]  # table -> columns in real order (event + target tables)
    metadata_table: str | None
    capture_metadata: bool
    enums: bool
    processes: bool
    analysis_details: bool
    system_env: bool
    gpu_metrics: bool
    gpu_table: str  # "full" | "cuda_gpu+reduced" | "cuda_gpu_mib"
    null_stream_table: str  # TARGET_INFO_CUDA_NULL_STREAM | TARGET_INFO_CUDA_CONTEXT_INFO
    cuda_device_table: bool
    references: dict[tuple[str, str], str]
    env_separator: str  # DeviceEnvironment separator in TARGET_INFO_SYSTEM_ENV
    gpuinfo_blob: bool  # GpuInfo row as non-UTF-8 TEXT (2.9.1 and older)
    string0: tuple[str, ...]  # first StringIds values (ids 0..)
    sync_type: dict[str, int]  # API kind -> syncType value written
    green_context: int | None  # value of greenContextId on kernel/memcpy/memset rows
    sync_green_context: int | None
    event_sync_id: int | None  # eventSyncId when not applicable
    five_digit_suffix: bool  # cudaLaunchKernelExC_v11060 etc. exist
    cu_launch_kernel_ex: bool  # cuLaunchKernelEx exists (CUDA 12)
    has_hostname: bool
    extra_not_null: dict[str, set[str]] = field(default_factory=dict)

    @property
    def kernel_columns(self) -> tuple[str, ...]:
        return self.tables["CUPTI_ACTIVITY_KIND_KERNEL"]

    def api_name(self, api: str, suffix: bool = True) -> str:
        """The StringIds text of a CUDA API call in this variant (suffix added, newer APIs mapped
        to what an older CUDA/nsys would have recorded). ``suffix=False``: the name as CUDA
        backtrace rows (eventClass 67) spell it."""
        if api == "cudaLaunchKernelExC" and not self.five_digit_suffix:
            api = "cudaLaunchKernel"
        if api == "cudaGetDeviceProperties_v2" and not self.five_digit_suffix:
            api = "cudaGetDeviceProperties"
        if api == "cuLaunchKernelEx" and not self.cu_launch_kernel_ex:
            api = "cuLaunchKernel"
        if api in DRIVER_APIS or not suffix:
            return api
        return api + RUNTIME_SUFFIX.get(api, "_v3020")

    @staticmethod
    def event_class(api: str) -> int:
        """0 = CUDA runtime, 1 = CUDA driver (ENUM_NSYS_EVENT_CLASS)."""
        return 1 if api in DRIVER_APIS else 0

    def ddl(self, table: str) -> str:
        """CREATE TABLE statement for ``table`` in this variant's column order."""
        cols = self.table_columns(table)
        not_null = _NOT_NULL.get(table, set()) | self.extra_not_null.get(table, set())
        if table.startswith("ENUM_"):
            not_null = {"id"}
        parts = []
        for c in cols:
            spec = f"{c} {column_type(table, c)}"
            if c in not_null:
                spec += " NOT NULL"
            if _PRIMARY_KEY.get(table) == c or (table.startswith("ENUM_") and c == "id"):
                spec += " PRIMARY KEY"
            ref = self.references.get((table, c))
            if ref:
                spec += f" REFERENCES {ref}"
            parts.append(spec)
        if table in _COMPOSITE_KEY:
            parts.append(f"PRIMARY KEY ({', '.join(_COMPOSITE_KEY[table])})")
        return f"CREATE TABLE {table} ({', '.join(parts)})"

    def table_columns(self, table: str) -> tuple[str, ...]:
        if table in self.tables:
            return self.tables[table]
        if table.startswith("ENUM_"):
            return _ENUM
        if table in ("EXPORT_META_DATA", "META_DATA_EXPORT", "META_DATA_CAPTURE"):
            return ("name", "value")
        raise KeyError(f"table {table} is not part of schema variant {self.key}")


def _layouts(kernel: int, *, memcpy: str, green: bool, nvtx_binary: bool, runtime_callchain: bool,
             sync2026: bool, session: int | None, mem_usage: tuple[str, ...]) -> dict:
    head = _GPU_OP_HEAD_GREEN if green else _GPU_OP_HEAD
    memcpy_cols = head + _MEMCPY_BODY
    if memcpy in ("2021", "2022", "2026"):
        memcpy_cols += ("migrationCause",)
    memcpy_cols += ("graphNodeId",)
    if memcpy in ("2022", "2026"):
        memcpy_cols += ("virtualAddress",)
    if memcpy == "2026":
        memcpy_cols += ("copyCount",)
    sync_cols = head + (("deprecatedSyncType",) if sync2026 else ()) + ("syncType", "eventId") + (
        ("eventSyncId",) if sync2026 else ())
    t = dict(_COMMON_TABLES)
    t.update({
        "CUPTI_ACTIVITY_KIND_KERNEL": KERNEL_LAYOUTS[kernel],
        "CUPTI_ACTIVITY_KIND_RUNTIME": _RUNTIME_OLD + (("callchainId",) if runtime_callchain else ()),
        "CUPTI_ACTIVITY_KIND_MEMCPY": memcpy_cols,
        "CUPTI_ACTIVITY_KIND_MEMSET": head + ("value", "bytes", "graphNodeId", "memKind"),
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": sync_cols,
        "NVTX_EVENTS": _NVTX19 + (("binaryData",) if nvtx_binary else ()),
        "CUDA_GPU_MEMORY_USAGE_EVENTS": mem_usage,
        "TARGET_INFO_CUDA_GPU": _TARGET_INFO_CUDA_GPU,
        "TARGET_INFO_GPU": _TARGET_INFO_GPU41,
        "TARGET_INFO_CUDA_NULL_STREAM": ("streamId", "hwId", "vmId", "processId", "deviceId",
                                         "contextId"),
        "TARGET_INFO_CUDA_CONTEXT_INFO": ("nullStreamId", "hwId", "vmId", "processId", "deviceId",
                                          "contextId", "parentContextId", "isGreenContext"),
        "TARGET_INFO_CUDA_DEVICE": ("gpuId", "cudaId", "pid"),
        "PROCESSES": ("globalPid", "pid", "name"),
        "ANALYSIS_DETAILS": ("globalVid", "duration", "startTime", "stopTime"),
        "TARGET_INFO_SYSTEM_ENV": ("globalVid", "devStateName", "name", "nameEnum", "value"),
        "TARGET_INFO_GPU_METRICS": ("typeId", "sourceId", "typeName", "metricId", "metricName"),
        "GPU_METRICS": ("rawTimestamp", "timestamp", "typeId", "metricId", "value"),
    })
    osrt = ("start", "end", "eventClass", "globalTid") + (
        ("correlationId",) if kernel == 26 else ()) + (
        "nameId", "returnValue", "nestingLevel", "callchainId") + (
        ("argumentsId",) if sync2026 else ())
    t.update({
        "OSRT_API": osrt,  # 2021.2.1: + correlationId; argumentsId after 3.16.1 (§2.13)
        "COMPOSITE_EVENTS": ("id", "start", "cpu", "threadState", "globalTid", "cpuCycles"),
        "SAMPLING_CALLCHAINS": ("id", "symbol", "module", "kernelMode", "thumbCode", "unresolved",
                                "specialEntry", "originalIP", "unwindMethod", "stackDepth")
        + (("symbolName",) if kernel == 27 else ()),  # 2.9.1's extra column (§2.14)
    })
    if session is not None:
        t["TARGET_INFO_SESSION_START_TIME"] = ("utcEpochNs", "utcTime", "localTime") + (
            ("systemClockNs",) if session == 4 else ())
    return t


_OLD_SYNC = {"device": 1, "event": 2, "stream": 3, "stream_wait": 3}

SCHEMA_VARIANTS: dict[str, SchemaVariant] = {
    "2020": SchemaVariant(
        key="2020", product_version="", schema_version="",
        tables=_layouts(25, memcpy="2020", green=False, nvtx_binary=False, runtime_callchain=False,
                        sync2026=False, session=None, mem_usage=_MEM_USAGE11),
        metadata_table=None, capture_metadata=False, enums=False, processes=False,
        analysis_details=False, system_env=False, gpu_metrics=False, gpu_table="cuda_gpu_mib",
        null_stream_table="TARGET_INFO_CUDA_NULL_STREAM", cuda_device_table=False,
        references=_REFERENCES_PRE2022, env_separator="\0", gpuinfo_blob=False,
        string0=("[Unknown]",), sync_type=_OLD_SYNC, green_context=None, sync_green_context=None,
        event_sync_id=None, five_digit_suffix=False, cu_launch_kernel_ex=False, has_hostname=False),
    "2021": SchemaVariant(
        key="2021", product_version="", schema_version="",
        tables=_layouts(26, memcpy="2021", green=False, nvtx_binary=False, runtime_callchain=True,
                        sync2026=False, session=None, mem_usage=_MEM_USAGE11),
        metadata_table=None, capture_metadata=False, enums=False, processes=False,
        analysis_details=False, system_env=False, gpu_metrics=False, gpu_table="cuda_gpu+reduced",
        null_stream_table="TARGET_INFO_CUDA_NULL_STREAM", cuda_device_table=False,
        references=_REFERENCES_PRE2022, env_separator="\0", gpuinfo_blob=False,
        string0=("[Unknown]",), sync_type=_OLD_SYNC, green_context=None, sync_green_context=None,
        event_sync_id=None, five_digit_suffix=False, cu_launch_kernel_ex=False, has_hostname=False),
    "2022.2": SchemaVariant(
        key="2022.2", product_version="2022.2.1.31", schema_version="2.9.1",
        tables=_layouts(27, memcpy="2022", green=False, nvtx_binary=False, runtime_callchain=True,
                        sync2026=False, session=3, mem_usage=_MEM_USAGE11),
        metadata_table="EXPORT_META_DATA", capture_metadata=False, enums=False, processes=True,
        analysis_details=True, system_env=True, gpu_metrics=False, gpu_table="full",
        null_stream_table="TARGET_INFO_CUDA_NULL_STREAM", cuda_device_table=False,
        references=_REFERENCES_291, env_separator="\0", gpuinfo_blob=True,
        string0=("[Unknown]",), sync_type=_OLD_SYNC, green_context=None, sync_green_context=None,
        event_sync_id=None, five_digit_suffix=False, cu_launch_kernel_ex=False, has_hostname=True,
        extra_not_null={"TARGET_INFO_SYSTEM_ENV": {"globalVid"}}),
    "2024.6": SchemaVariant(
        key="2024.6", product_version="2024.6.2.25", schema_version="3.16.1",
        tables=_layouts(28, memcpy="2022", green=True, nvtx_binary=True, runtime_callchain=True,
                        sync2026=False, session=3, mem_usage=_MEM_USAGE18),
        metadata_table="META_DATA_EXPORT", capture_metadata=True, enums=True, processes=True,
        analysis_details=True, system_env=True, gpu_metrics=True, gpu_table="full",
        null_stream_table="TARGET_INFO_CUDA_CONTEXT_INFO", cuda_device_table=False,
        references={}, env_separator=";", gpuinfo_blob=False,
        string0=("GpuMetrics", "SocMetrics", "GenericCounters"),
        # 3.16.1/3.17.1 numbering (§2.6): stream sync 2, device sync 4; event sync not observed.
        sync_type={"device": 4, "event": 1, "stream": 2, "stream_wait": 2},
        green_context=0, sync_green_context=None, event_sync_id=None, five_digit_suffix=True,
        cu_launch_kernel_ex=True, has_hostname=True),
    "2026.2": SchemaVariant(
        key="2026.2", product_version="2026.2.1.210", schema_version="3.25.0",
        tables=_layouts(40, memcpy="2026", green=True, nvtx_binary=True, runtime_callchain=True,
                        sync2026=True, session=4, mem_usage=_MEM_USAGE18),
        metadata_table="META_DATA_EXPORT", capture_metadata=True, enums=True, processes=True,
        analysis_details=True, system_env=True, gpu_metrics=True, gpu_table="full",
        null_stream_table="TARGET_INFO_CUDA_CONTEXT_INFO", cuda_device_table=True,
        references={}, env_separator=";", gpuinfo_blob=False,
        string0=("GpuMetrics", "SocMetrics", "GenericCounters"),
        sync_type={"device": 4, "event": 1, "stream": 3, "stream_wait": 2},
        green_context=0, sync_green_context=0, event_sync_id=0, five_digit_suffix=True,
        cu_launch_kernel_ex=True, has_hostname=True),
}

SCHEMAS: tuple[str, ...] = ("2021", "2022.2", "2024.6", "2026.2")
"""The schema variants of the Foundation issue. ``"2020"`` (oldest layout) is also accepted."""

ALL_SCHEMAS: tuple[str, ...] = ("2020",) + SCHEMAS


def variant(key: str) -> SchemaVariant:
    try:
        return SCHEMA_VARIANTS[key]
    except KeyError:
        raise ValueError(f"unknown schema variant {key!r}; choose one of {', '.join(ALL_SCHEMAS)}") from None


# --------------------------------------------------------------------------------------------
# GPUs (values of real devices; units as TARGET_INFO_GPU stores them: bytes, B/s, Hz)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GpuModel:
    name: str
    chip: str
    sm_count: int
    clock_hz: int
    total_memory: int
    memory_bandwidth: int  # bytes/s
    l2_cache: int
    compute: tuple[int, int]
    sm_version: tuple[int, int]
    max_shmem_per_sm: int
    max_shmem_optin: int
    async_engines: int
    max_ipc: int
    max_blocks_per_sm: int = 32
    max_warps_per_sm: int = 64


GPU_CATALOG: dict[str, GpuModel] = {
    "H100": GpuModel("NVIDIA H100 80GB HBM3", "GH100", 132, 1_980_000_000, 85_031_714_816,
                     3_352_320_000_000, 52_428_800, (9, 0), (9, 0), 233_472, 232_448, 3, 4),
    "H200": GpuModel("NVIDIA H200", "GH100", 132, 1_980_000_000, 150_137_864_192,
                     4_916_736_000_000, 62_914_560, (9, 0), (9, 0), 233_472, 232_448, 3, 0),
    "A100": GpuModel("NVIDIA A100-SXM4-40GB", "GA100", 108, 1_410_000_000, 42_297_524_224,
                     1_555_200_000_000, 41_943_040, (8, 0), (8, 2), 167_936, 166_912, 5, 4),
    "V100": GpuModel("Tesla V100-SXM2-32GB", "GV100", 80, 1_530_000_000, 34_089_730_048,
                     898_048_000_000, 6_291_456, (7, 0), (7, 0), 98_304, 98_304, 6, 4),
    "RTX3090": GpuModel("NVIDIA GeForce RTX 3090", "GA102", 82, 1_695_000_000, 25_438_126_080,
                        936_096_000_000, 6_291_456, (8, 6), (8, 6), 102_400, 101_376, 2, 4,
                        max_blocks_per_sm=16, max_warps_per_sm=48),
    "T4": GpuModel("Tesla T4", "TU104", 40, 1_590_000_000, 15_655_829_504, 320_064_000_000,
                   4_194_304, (7, 5), (7, 5), 65_536, 65_536, 3, 4, max_blocks_per_sm=16,
                   max_warps_per_sm=32),
}


def gpu_model(key: str) -> GpuModel:
    try:
        return GPU_CATALOG[key]
    except KeyError:
        raise ValueError(f"unknown GPU {key!r}; choose one of {', '.join(GPU_CATALOG)}") from None


GPU_METRIC_NAMES: tuple[str, ...] = (
    "GPC Clock Frequency [MHz]",
    "GR Active [Throughput %]",
    "SMs Active [Throughput %]",
    "SM Issue [Throughput %]",
    "Tensor Active [Throughput %]",
    "DRAM Read Bandwidth [Throughput %]",
    "DRAM Write Bandwidth [Throughput %]",
    "PCIe RX Throughput [Throughput %]",
    "PCIe TX Throughput [Throughput %]",
)
"""GPU metric names exactly as nsys labels them (§2.12), in metricId order."""
