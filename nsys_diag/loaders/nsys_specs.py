"""What the loader selects from the big nsys tables: table names and column specs.

Pandas-free on purpose: ``loaders/prefetch.py`` builds the very same read plans before pandas is
imported, so the largest reads can start while the interpreter is still importing it.
"""
from __future__ import annotations

from nsys_diag.loaders.read_plan import Col, and_where

KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET_TABLE = "CUPTI_ACTIVITY_KIND_MEMSET"
SYNC_TABLE = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
GPU_METRICS_TABLE = "GPU_METRICS"
OSRT_TABLE = "OSRT_API"
SAMPLES_TABLE = "COMPOSITE_EVENTS"

NULL_TIME = -(1 << 62)
"""What a NULL (or non-numeric) start time is read as; such rows are dropped (``sanity``)."""

GPU_OP_REQUIRED = ("start", "end", "deviceId")
"""The only columns a GPU-operation table must have; every other column is optional and reads as
the contract's missing value (-1) — minimal synthetic exports (no ``contextId``/``streamId``/
``correlationId``/``globalPid``) analyse instead of being refused."""

KERNEL_NAME_COLUMNS = ("demangledName", "shortName", "mangledName")
"""A kernel table needs at least one of these (StringIds ids); the name falls back in this order."""
API_REQUIRED = ("start", "end", "nameId")
API_CLASS_WHERE = "eventClass IN (0, 1)"
"""Runtime (0) and driver (1) calls; 67 = backtrace duplicates (NSYS_SQLITE.md §2.2)."""

KERNEL_DETAIL_COLUMNS = ("contextId", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
                         "registersPerThread", "staticSharedMemory", "dynamicSharedMemory",
                         "graphNodeId")
"""Kernel columns no analysis of ``analyze`` reads (context, launch configuration, graph node),
so ``read_kernels(detail=False)`` skips them (perf, bench: with ``streamId`` they were ~1.2 s of
SQLite work and ~190 MB on 2M kernels); their frame columns then hold -1 (one shared read-only
array). ``streamId`` is read always: the whole-run timeline draws one lane per (device, stream)
(``analyses/timeline/lanes.py``; bench: read per row it cost the 2M-kernel read 0.65 → 0.72 s,
so one stream's value is tested in the WHERE instead, ``KERNEL_CONSTANT_COLUMNS``). The replay
joins the context ids it needs for its windows (``analyses/replay/model.with_kernel_streams``).
``nsys_cuda.KERNEL_DETAIL_FRAME_COLUMNS`` are their frame names: an analysis that starts to use
one must remove it here (tests/loaders/test_loader_fast_paths.py checks the analyses' sources)."""


def opt_col(cols: list[str], name: str, kind: str = "int", fill: int = -1,
            default: str = "NULL") -> Col:
    """Column ``name`` if present, else a constant (``default`` SQL)."""
    return Col(name, kind, "" if name in cols else default, fill)


def gpu_op_spec(cols: list[str]) -> list[Col]:
    """Columns shared by kernels, memcpys, memsets and syncs."""
    return [Col("start", "int", fill=NULL_TIME, strict=True), Col("end", "int", fill=0, strict=True),
            Col("deviceId", "int"),
            opt_col(cols, "contextId"), opt_col(cols, "streamId"), opt_col(cols, "correlationId"),
            opt_col(cols, "globalPid")]


_GPU_OP_NAMES = frozenset(c.name for c in gpu_op_spec([]))
"""The columns ``gpu_op_spec`` selects (the kernel detail ones among them are not added twice)."""

KERNEL_CONSTANT_COLUMNS = ("deviceId", "globalPid", "streamId")
"""Kernel columns one GPU, one process and one stream make constant. When sampled rows agree on
one (``kernel_constants``, column by column), a whole-table kernel read tests it in its WHERE
(``constants_where``) instead of decoding it per row, and is kept only when it returned every row
of the table (``NsysDb.holds_all_rows``; else the kernels are read again with the columns) —
perf, bench: ≈20% of the SQLite → Arrow work of the 2M-kernel read for the device and process;
the stream's column, read since the timeline draws a lane per stream, costs nothing more on a
one-stream export."""


def kernel_constants(db, cols: list[str]) -> dict[str, int]:
    """The ``KERNEL_CONSTANT_COLUMNS`` present in ``cols`` with the value every sampled kernel
    row has (those whose rows differ, hold NULL or non-integers left out); ``db``: an open
    ``NsysDb``."""
    names = [c for c in KERNEL_CONSTANT_COLUMNS if c in cols]
    return db.common_values(KERNEL_TABLE, names) if names else {}


def constants_where(constants: dict[str, int]) -> str:
    """SQL condition: each column of ``constants`` equals its value ('' for none)."""
    return and_where(*(f'"{name}" = {int(value)}' for name, value in constants.items()))


def kernel_spec(cols: list[str], detail: bool, constants: dict[str, int] | None = None
                ) -> list[Col]:
    """Kernel columns (``detail=False``: without ``KERNEL_DETAIL_COLUMNS``; without the
    ``constants`` columns, which the read's WHERE tests instead, see ``constants_where``)."""
    fallback = next((f'"{c}"' for c in KERNEL_NAME_COLUMNS if c in cols), "NULL")
    skip = set(constants or ())
    return [c for c in gpu_op_spec(cols) if (detail or c.name not in KERNEL_DETAIL_COLUMNS)
            and c.name not in skip] + [
        opt_col(cols, "demangledName", default=fallback),
        opt_col(cols, "shortName", default=fallback),
        *(opt_col(cols, c) for c in KERNEL_DETAIL_COLUMNS if detail and c not in _GPU_OP_NAMES),
    ]


API_NAME_KEY = "nameKey"
"""The API read's ``nameId × 2 + eventClass`` column (with ``eventClass``; else plain ``nameId``):
one distinct value per (name, runtime/driver), computed by SQLite (perf, bench: a 2M-row column
less to decode); ``API_CLASS_WHERE`` keeps ``eventClass`` to 0 and 1."""


def api_spec(cols: list[str]) -> list[Col]:
    """CUDA runtime/driver call columns (filter with ``API_CLASS_WHERE`` when ``eventClass``
    exists): ``API_NAME_KEY`` with ``eventClass``, ``nameId`` without."""
    name = Col(API_NAME_KEY, "int", expr='ifnull("nameId", -1) * 2 + "eventClass"', fill=-2) \
        if "eventClass" in cols else Col("nameId", "int")
    return [Col("start", "int", fill=NULL_TIME, strict=True), Col("end", "int", fill=0, strict=True),
            opt_col(cols, "globalTid"), opt_col(cols, "correlationId"), name]


def api_where(cols: list[str], window_clause: str = "") -> str:
    """WHERE of the API read: runtime/driver rows (when ``eventClass`` exists), and a window."""
    return and_where(API_CLASS_WHERE if "eventClass" in cols else "", window_clause)


GPU_METRICS_REQUIRED = ("typeId", "metricId", "value")


def gpu_metrics_time_column(cols: list[str]) -> str:
    """``timestamp``, or ``rawTimestamp`` in old exports."""
    return "timestamp" if "timestamp" in cols else "rawTimestamp"


def gpu_metrics_spec(cols: list[str]) -> list[Col]:
    """GPU_METRICS sample columns: the time is the first (``gpu_metrics_time_column``, read
    plain, perf), then ``typeId``, ``metricId``, ``value``."""
    return [Col(gpu_metrics_time_column(cols), "int", fill=0), Col("typeId", "int"), Col("metricId", "int"),
            Col("value", "float")]
