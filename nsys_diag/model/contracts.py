"""Column contracts: the only place where frame column names, dtypes and units are written down.

Every loader returns frames that pass ``CONTRACT.validate(df)``; every analysis may rely on them.

Conventions
-----------
* Times are **integer nanoseconds** (``int64``) on the capture's session timeline (nsys) — never
  converted until formatting. Durations are ``end_ns - start_ns``.
* Missing integer ids (correlation id, stream, graph node …) and missing *API-side* times
  (``launch_*_ns`` when the launching call is absent, e.g. in time-cut exports) use the sentinel
  ``MISSING = -1``. NVTX times may legitimately be negative, so NVTX frames never use a sentinel
  for times (unterminated ranges carry ``closed = False`` instead).
* Strings that repeat (kernel names, API names, NVTX text) are ``category``; free text is
  ``string`` (pandas string dtype).
* Process identity: ``global_pid`` is the nsys GlobalId of the process (hw|vm|pid bits, tid zeroed),
  ``pid`` the OS pid decoded from it. Threads: ``global_tid`` (GlobalId) and ``tid``.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pandas as pd

from nsys_diag.model.errors import SchemaError

MISSING = -1
"""Sentinel for absent integer ids and absent API-side times."""

_DTYPES = {"int64", "float64", "category", "string", "bool"}


@dataclass(frozen=True)
class Column:
    name: str
    dtype: str  # one of _DTYPES
    doc: str = ""
    unit: str = ""


@dataclass(frozen=True)
class FrameContract:
    """A named, ordered set of typed columns."""

    name: str
    columns: tuple[Column, ...]
    doc: str = ""

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def cols(self) -> SimpleNamespace:
        """``KERNELS.cols.start_ns == "start_ns"`` — attribute access to column names."""
        return SimpleNamespace(**{c.name: c.name for c in self.columns})

    def empty(self) -> pd.DataFrame:
        """Zero rows, every column with its contract dtype."""
        return pd.DataFrame({c.name: _empty_series(c.dtype) for c in self.columns})

    def validate(self, df: pd.DataFrame, *, source: str = "") -> pd.DataFrame:
        """Return ``df`` with exactly the contract columns, in order, cast to contract dtypes.

        Extra columns are dropped. Missing columns raise ``SchemaError`` listing all of them.
        """
        missing = [c.name for c in self.columns if c.name not in df.columns]
        if missing:
            raise SchemaError(
                source or self.name,
                f"frame '{self.name}' is missing columns {missing}",
                "this is a bug in a loader or a test fixture",
            )
        out = {}
        for c in self.columns:
            out[c.name] = _cast(df[c.name], c.dtype)
        # copy=False: no consolidation into one 2-D block (≈0.8 s per 2M-row frame otherwise).
        return pd.DataFrame(out, index=pd.RangeIndex(len(df)), copy=False)

    def markdown(self) -> str:
        """The contract as a Markdown table (used in docs)."""
        rows = [f"### `{self.name}`", "", self.doc, "", "| column | dtype | unit | meaning |",
                "|---|---|---|---|"]
        rows += [f"| `{c.name}` | {c.dtype} | {c.unit} | {c.doc} |" for c in self.columns]
        return "\n".join(rows)


def _empty_series(dtype: str) -> pd.Series:
    if dtype == "category":
        return pd.Series(pd.Categorical([]), dtype="category")
    if dtype == "string":
        return pd.Series([], dtype="string")
    return pd.Series(np.array([], dtype=dtype))


def _cast(s: pd.Series, dtype: str) -> pd.Series:
    s = s.reset_index(drop=True)
    if dtype == "category":
        return s if isinstance(s.dtype, pd.CategoricalDtype) else s.astype("category")
    if dtype == "string":
        return s.astype("string")
    if dtype == "int64":
        if s.dtype == np.int64:
            return s
        if s.isna().any():
            s = s.fillna(MISSING)
        return s.astype(np.int64)
    if dtype == "float64":
        return s.astype(np.float64)
    if dtype == "bool":
        return s.fillna(False).astype(bool)
    raise ValueError(dtype)


def _c(name: str, dtype: str, doc: str = "", unit: str = "") -> Column:
    assert dtype in _DTYPES, dtype
    return Column(name, dtype, doc, unit)


_LAUNCH_COLS = (
    _c("launch_global_tid", "int64", "GlobalId of the thread whose CUDA API call launched this work "
       "(joined on correlationId within the process); -1 when the call is not in the export"),
    _c("launch_start_ns", "int64", "start of the launching API call; -1 when unmatched", "ns"),
    _c("launch_end_ns", "int64", "end of the launching API call; -1 when unmatched", "ns"),
    _c("launch_api", "category", "launching API name without _vNNNN suffix (e.g. cudaLaunchKernel, "
       "cuLaunchKernelEx, cudaGraphLaunch); '' when unmatched"),
)

_GPU_OP_COLS = (
    _c("start_ns", "int64", "GPU start", "ns"),
    _c("end_ns", "int64", "GPU end (exclusive)", "ns"),
    _c("device_id", "int64", "CUDA device id (joins GPUS.device_id)"),
    _c("context_id", "int64", "CUDA context id"),
    _c("stream_id", "int64", "CUDA stream id (unique only within (global_pid, context_id))"),
    _c("correlation_id", "int64", "CUPTI correlation id (unique only within a process); -1 if NULL"),
    _c("global_pid", "int64", "nsys GlobalId of the owning process"),
    _c("pid", "int64", "OS pid of the owning process"),
)

KERNELS = FrameContract(
    "kernels",
    _GPU_OP_COLS + (
        _c("name", "category", "demangled kernel name (falls back to short name)"),
        _c("short_name", "category", "base function name (shortName)"),
        _c("grid_x", "int64"), _c("grid_y", "int64"), _c("grid_z", "int64"),
        _c("block_x", "int64"), _c("block_y", "int64"), _c("block_z", "int64"),
        _c("registers_per_thread", "int64"),
        _c("smem_static_bytes", "int64", "static shared memory per block", "bytes"),
        _c("smem_dynamic_bytes", "int64", "dynamic shared memory per block", "bytes"),
        _c("graph_node_id", "int64", "CUDA graph node id; -1 when not launched from a graph"),
    ) + _LAUNCH_COLS,
    "One row per GPU kernel execution (CUPTI_ACTIVITY_KIND_KERNEL).",
)

MEMCPY = FrameContract(
    "memcpy",
    _GPU_OP_COLS + (
        _c("bytes", "int64", "bytes moved", "bytes"),
        _c("copy_kind", "category", "H2D | D2H | D2D | P2P | H2H | uvm_h2d | uvm_d2h | uvm_d2d | "
           "other (uvm_*: unified-memory migrations, copyKind 11/12/13)"),
        _c("src_kind", "category", "pageable | pinned | device | array | managed | device_static | "
           "managed_static | unknown"),
        _c("dst_kind", "category", "same vocabulary as src_kind"),
        _c("copy_count", "int64", "copies folded into this row by batched-memcpy APIs (1 usually)"),
    ) + _LAUNCH_COLS,
    "One row per memcpy (CUPTI_ACTIVITY_KIND_MEMCPY).",
)

MIGRATION_PREFIX = "uvm_"
"""``copy_kind`` prefix of unified-memory migrations (copyKind 11/12/13, NSYS_SQLITE.md §5)."""


def migration_rows(memcpy: pd.DataFrame) -> np.ndarray:
    """Rows of a MEMCPY frame that are unified-memory migrations: the driver moves pages on
    demand (faults, prefetches, evictions), so no API call launches them (correlationId 0).
    Vectorised over the categories (a few) rather than the rows."""
    if not len(memcpy) or "copy_kind" not in memcpy:
        return np.zeros(len(memcpy), np.bool_)
    kind = pd.Categorical(memcpy["copy_kind"])
    is_uvm = np.append(np.asarray(pd.Index(kind.categories).astype(str)
                                  .str.startswith(MIGRATION_PREFIX), np.bool_), False)
    return is_uvm[kind.codes]  # code -1 (missing) → the appended False


def launch_counts(frame: pd.DataFrame, rows: np.ndarray | None = None) -> tuple[int, int]:
    """(rows without their launching call, rows that have one to miss) of a GPU-op frame, over
    ``rows`` (a mask; all rows when None): unified-memory migrations are never launched by an
    API call, so they count in neither."""
    expected = np.ones(len(frame), np.bool_) if rows is None else np.asarray(rows, np.bool_)
    if "copy_kind" in frame:
        expected = expected & ~migration_rows(frame)
    miss = expected & (frame["launch_start_ns"].to_numpy(np.int64) == MISSING)
    return int(miss.sum()), int(expected.sum())


MEMSET = FrameContract(
    "memset",
    _GPU_OP_COLS + (_c("bytes", "int64", "bytes set", "bytes"),) + _LAUNCH_COLS,
    "One row per memset (CUPTI_ACTIVITY_KIND_MEMSET).",
)

SYNC = FrameContract(
    "sync",
    _GPU_OP_COLS + (
        _c("sync_kind", "category", "device | stream | event | stream_wait | context | unknown — "
           "classified by the API name of the correlated call (syncType numbering is unstable "
           "across nsys versions), falling back to syncType on schema >= 3.25"),
    ) + _LAUNCH_COLS,
    "One row per CUDA synchronization (CUPTI_ACTIVITY_KIND_SYNCHRONIZATION). stream_id is -1 for "
    "device/event-level syncs (nsys writes 0xFFFFFFFF).",
)

API = FrameContract(
    "api",
    (
        _c("start_ns", "int64", "CPU call start", "ns"),
        _c("end_ns", "int64", "CPU call end", "ns"),
        _c("global_tid", "int64", "GlobalId of the calling thread"),
        _c("global_pid", "int64", "GlobalId of the calling process (tid bits zeroed)"),
        _c("pid", "int64", "OS pid"),
        _c("tid", "int64", "OS tid"),
        _c("correlation_id", "int64", "CUPTI correlation id; -1 if NULL"),
        _c("name", "category", "API name, runtime `_vNNNN(N)` suffix stripped"),
        _c("api_class", "category", "runtime | driver"),
    ),
    "CUDA runtime + driver API calls (CUPTI_ACTIVITY_KIND_RUNTIME, eventClass 0/1 only; "
    "CUDA-backtrace duplicates (eventClass 67) are dropped).",
)

NVTX = FrameContract(
    "nvtx",
    (
        _c("start_ns", "int64", "range start (may be negative)", "ns"),
        _c("end_ns", "int64", "range end; for unterminated ranges the capture end", "ns"),
        _c("closed", "bool", "False when the range never ended in the capture"),
        _c("text", "category", "message (text or textId resolved)"),
        _c("domain", "category", "domain name; '' for the default domain; 'domain#N' when unnamed"),
        _c("kind", "category", "push_pop | start_end"),
        _c("global_tid", "int64", "GlobalId of the thread that started the range"),
        _c("end_global_tid", "int64", "GlobalId of the thread that ended it (= global_tid if same)"),
        _c("global_pid", "int64", "GlobalId of the process"),
        _c("pid", "int64", "OS pid"),
        _c("tid", "int64", "OS tid of the starting thread"),
        _c("payload", "float64", "numeric payload (any scalar payload column), NaN if none"),
    ),
    "NVTX ranges (eventType 59/60/70/71). Marks are in NVTX_MARKS; domain-create rows become "
    "the `domain` column.",
)

NVTX_MARKS = FrameContract(
    "nvtx_marks",
    (
        _c("ts_ns", "int64", "mark time", "ns"),
        _c("text", "category"),
        _c("domain", "category"),
        _c("global_tid", "int64"),
        _c("pid", "int64"),
        _c("payload", "float64"),
    ),
    "NVTX instantaneous marks (eventType 34).",
)

THREADS = FrameContract(
    "threads",
    (
        _c("global_tid", "int64"),
        _c("pid", "int64"),
        _c("tid", "int64"),
        _c("name", "string", "thread name ('' when unnamed)"),
    ),
    "ThreadNames rows (only threads that have a name).",
)

PROCESSES = FrameContract(
    "processes",
    (
        _c("global_pid", "int64"),
        _c("pid", "int64"),
        _c("name", "string", "process name ('' when unknown)"),
    ),
    "Processes that own at least one event in the export.",
)

GPUS = FrameContract(
    "gpus",
    (
        _c("device_id", "int64", "CUDA device id (joins kernels.device_id)"),
        _c("name", "string", "marketing name, e.g. 'NVIDIA H100 80GB HBM3'"),
        _c("chip_name", "string", "e.g. GH100; '' if unknown"),
        _c("sm_count", "int64", "-1 if unknown"),
        _c("clock_hz", "int64", "SM clock; -1 if unknown", "Hz"),
        _c("memory_bandwidth_bytes_per_s", "float64", "peak DRAM bandwidth; NaN if unknown", "B/s"),
        _c("total_memory_bytes", "int64", "-1 if unknown", "bytes"),
        _c("cc_major", "int64", "compute capability major; -1 if unknown"),
        _c("cc_minor", "int64", "compute capability minor; -1 if unknown"),
        _c("bus_location", "string"),
    ),
    "One row per GPU (TARGET_INFO_GPU, or TARGET_INFO_CUDA_GPU in older exports, units normalised).",
)

GPU_METRICS = FrameContract(
    "gpu_metrics",
    (
        _c("ts_ns", "int64", "sample time", "ns"),
        _c("device_id", "int64", "GPU (from typeId & 0xFF mapped to the CUDA device where possible)"),
        _c("metric", "category", "full metric name as nsys labels it, unit in brackets, e.g. "
           "'SMs Active [Throughput %]', 'Tensor Active [Throughput %]', "
           "'DRAM Read Bandwidth [Throughput %]', 'PCIe RX Throughput [Throughput %]'"),
        _c("value", "float64", "sample value in the bracketed unit (0-100 for '%' metrics; "
           "out-of-range samples dropped with a LoadWarning)"),
    ),
    "GPU_METRICS samples joined with TARGET_INFO_GPU_METRICS (long format).",
)

GPU_MEMORY = FrameContract(
    "gpu_memory",
    (
        _c("ts_ns", "int64", "event time", "ns"),
        _c("device_id", "int64"),
        _c("pid", "int64"),
        _c("bytes", "int64", "size of the allocation or free", "bytes"),
        _c("op", "category", "alloc | free | other"),
    ),
    "CUDA_GPU_MEMORY_USAGE_EVENTS (captured with --cuda-memory-usage=true).",
)

NCU_LAUNCHES = FrameContract(
    "ncu_launches",
    (
        _c("launch_id", "int64", "ncu 'ID' column (kernel launch index in the capture)"),
        _c("kernel_name", "category", "ncu 'Kernel Name' (usually demangled)"),
        _c("device_id", "int64", "-1 if unknown"),
        _c("pid", "int64", "-1 if unknown"),
        _c("stream_id", "int64", "-1 if unknown"),
        _c("grid_size", "string", "as printed, e.g. '(256, 1, 1)'"),
        _c("block_size", "string"),
        _c("gpu_name", "string", "device name if present in the CSV ('' otherwise)"),
    ),
    "One row per profiled kernel launch in an ncu CSV.",
)

NCU_METRICS = FrameContract(
    "ncu_metrics",
    (
        _c("launch_id", "int64"),
        _c("metric", "category", "ncu metric name, e.g. 'gpu__time_duration.sum' (details-page "
           "rows whose metric has only a display name keep that name)"),
        _c("section", "category", "details-page section ('' for raw)"),
        _c("unit", "category", "base unit after normalisation: s, byte, byte/s, cycle, cycle/s, %, "
           "inst, flop … ('' when unitless)"),
        _c("value", "float64", "value in the base unit; NaN for n/a"),
    ),
    "ncu metric values in long format, units normalised to base units.",
)

OSRT = FrameContract(
    "osrt",
    (
        _c("start_ns", "int64", "call start", "ns"),
        _c("end_ns", "int64", "call end", "ns"),
        _c("global_tid", "int64", "GlobalId of the calling thread"),
        _c("global_pid", "int64", "GlobalId of the calling process (tid bits zeroed)"),
        _c("pid", "int64", "OS pid"),
        _c("tid", "int64", "OS tid"),
        _c("name", "category", "OS runtime function name from StringIds, e.g. read, "
           "pthread_cond_wait, poll"),
    ),
    "OS runtime library calls (OSRT_API, captured with `-t osrt`); rows in file order (not "
    "sorted). The 'profiling started/finished' markers (zero-length rows of eventClass 31/32) "
    "are dropped.",
)

CPU_SAMPLES = FrameContract(
    "cpu_samples",
    (
        _c("ts_ns", "int64", "sample time", "ns"),
        _c("global_tid", "int64", "GlobalId of the sampled thread"),
        _c("global_pid", "int64", "GlobalId of its process (tid bits zeroed)"),
        _c("pid", "int64", "OS pid"),
        _c("tid", "int64", "OS tid"),
        _c("top_frame", "category", "symbol of the innermost frame (stackDepth 0) from "
           "StringIds; '' when unresolved"),
        _c("state", "category", "thread state label (ENUM_SAMPLING_THREAD_STATE, lower case, "
           "e.g. running, unknown); '' when the export has no state"),
    ),
    "CPU instruction-pointer samples (COMPOSITE_EVENTS + SAMPLING_CALLCHAINS, captured with "
    "`--sample=process-tree`); rows in file order (not sorted).",
)

ALL_CONTRACTS = (KERNELS, MEMCPY, MEMSET, SYNC, API, NVTX, NVTX_MARKS, THREADS, PROCESSES, GPUS,
                 GPU_METRICS, GPU_MEMORY, NCU_LAUNCHES, NCU_METRICS, OSRT, CPU_SAMPLES)


# ------------------------------------------------------------- file-level samples (issue 26)
# Read once per file (the in-memory load and the streamed skeleton alike), never per chunk.

LAUNCH_SHAPES = FrameContract(
    "launch_shapes",
    (
        _c("name", "string", "kernel name (demangled where the export has it)"),
        _c("start_ns", "int64", "GPU start", "ns"),
        _c("duration_ns", "int64", "GPU duration", "ns"),
        _c("device_id", "int64"),
        _c("global_pid", "int64"),
        _c("weight", "float64", "launches this sampled row stands for"),
        _c("grid_x", "int64", "-1 if unknown"), _c("grid_y", "int64"), _c("grid_z", "int64"),
        _c("block_x", "int64", "-1 if unknown"), _c("block_y", "int64"), _c("block_z", "int64"),
        _c("registers_per_thread", "int64", "-1 if unknown"),
        _c("smem_static_bytes", "int64", "static shared memory per block; -1 if unknown", "bytes"),
        _c("smem_dynamic_bytes", "int64", "dynamic shared memory per block; -1 if unknown",
           "bytes"),
        _c("graph_node_id", "int64", "graph node the kernel was launched from; -1 if none"),
        _c("cluster_x", "int64", "thread-block cluster size (blocks); 0 without a cluster, -1 "
           "if unknown"), _c("cluster_y", "int64"), _c("cluster_z", "int64"),
        _c("max_active_clusters", "int64", "clusters of this launch the GPU can hold at once "
           "(CUPTI); 0 or -1 if unknown"),
    ),
    "A strided sample (≈ 20,000 rows) of the kernel table's launch configuration "
    "(loaders/nsys_launch_shapes.py): the GPU fill and the program's kernel-time mix.",
)

SM_LIMITS = FrameContract(
    "sm_limits",
    (
        _c("device_id", "int64"),
        _c("max_threads_per_sm", "int64", "-1 if unknown"),
        _c("max_blocks_per_sm", "int64", "-1 if unknown"),
        _c("registers_per_sm", "int64", "-1 if unknown"),
        _c("smem_per_sm_bytes", "int64", "-1 if unknown", "bytes"),
    ),
    "What one SM of each GPU can hold at once, as the export says (TARGET_INFO_GPU).",
)

SAMPLE_CONTRACTS = (LAUNCH_SHAPES, SM_LIMITS)
"""File-level frames of ``TraceBundle`` outside ``FRAMES`` (not split by process or chunk)."""

# ------------------------------------------------------------------ replay-only frames (issue 25)
# Read for the replayed windows only (``loaders/nsys_replay.py``), not part of ``TraceBundle``.

GRAPH_LAUNCHES = FrameContract(
    "graph_launches",
    _GPU_OP_COLS + (
        _c("graph_id", "int64", "CUDA graph id (graphId); -1 if NULL"),
        _c("graph_exec_id", "int64", "executable graph id (graphExecId); -1 if NULL"),
    ) + _LAUNCH_COLS,
    "One row per whole-graph execution (CUPTI_ACTIVITY_KIND_GRAPH_TRACE, captured with "
    "`--cuda-graph-trace=graph`): the graph's GPU span on its stream, an opaque operation of the "
    "replay.",
)

CUDA_EVENTS = FrameContract(
    "cuda_events",
    (
        _c("ts_ns", "int64", "device-side completion time; -1 when not collected (0 in the table)",
           "ns"),
        _c("device_id", "int64"),
        _c("context_id", "int64"),
        _c("stream_id", "int64", "stream the event was recorded on"),
        _c("correlation_id", "int64", "correlation id of the cudaEventRecord call"),
        _c("global_pid", "int64"),
        _c("event_id", "int64", "CUDA event id (joins SYNC_EVENTS.event_id)"),
    ),
    "One row per event record (CUPTI_ACTIVITY_KIND_CUDA_EVENT): where a cross-stream wait's "
    "event was recorded.",
)

SYNC_EVENTS = FrameContract(
    "sync_events",
    (
        _c("correlation_id", "int64", "correlation id of the synchronising call"),
        _c("global_pid", "int64"),
        _c("stream_id", "int64", "the waiting stream (-1 for device/event syncs)"),
        _c("event_id", "int64", "CUDA event waited for; -1 when none (0xFFFFFFFF)"),
    ),
    "The event column of SYNCHRONIZATION rows in the replayed windows (the SYNC frame leaves it "
    "out): joins a cudaStreamWaitEvent to its event record.",
)

KERNEL_STREAMS = FrameContract(
    "kernel_streams",
    (
        _c("start_ns", "int64", "GPU start", "ns"),
        _c("device_id", "int64"),
        _c("global_pid", "int64"),
        _c("correlation_id", "int64"),
        _c("context_id", "int64"),
        _c("stream_id", "int64"),
        _c("graph_node_id", "int64", "-1 when not launched from a graph"),
    ),
    "Context, stream and graph node of the kernels in the replayed windows, for exports loaded "
    "without kernel detail (their KERNELS frame holds -1 there).",
)

REPLAY_CONTRACTS = (GRAPH_LAUNCHES, CUDA_EVENTS, SYNC_EVENTS, KERNEL_STREAMS)
