"""TraceBundle: everything a loader produces — validated frames, metadata, load warnings."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from nsys_diag.model import contracts as C


@dataclass(frozen=True)
class LoadWarning:
    """A non-fatal data-quality problem found while loading (shown in every report).

    ``code`` is a stable snake_case identifier (e.g. ``no_cuda_tables``, ``dropped_rows``,
    ``unterminated_nvtx``); ``message`` is one human sentence; ``count`` the rows concerned.
    """

    code: str
    message: str
    count: int = 0
    hint: str = ""


@dataclass
class TraceMeta:
    """Facts about the export itself.

    Privacy: ``environment`` and ``host`` are kept for analyses that need them (e.g. rank
    detection from ``RANK``/``LOCAL_RANK``) but are **never** rendered; reports show host/user/path
    details only with ``--include-host-info``.
    """

    path: str
    format: str  # "nsys-sqlite" | "ncu-csv"
    nsys_version: str = ""  # product version, e.g. "2024.6.2"; "" when unknown
    schema_version: str = ""  # export schema version, e.g. "3.16.1"; "" when unknown
    capture_start_ns: int = 0  # session timeline start (0 for nsys)
    capture_end_ns: int = 0  # session duration (ANALYSIS_DETAILS.duration) or max event end
    session_start_utc_ns: int | None = None  # TARGET_INFO_SESSION_START_TIME.utcEpochNs
    tables: dict[str, int] = field(default_factory=dict)  # table name -> row count
    command_line: str = ""  # private: shown only with --include-host-info
    host: dict[str, str] = field(default_factory=dict)  # private
    environment: dict[str, str] = field(default_factory=dict)  # private: never rendered
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class TraceBundle:
    """Validated frames (see ``nsys_diag.model.contracts``) + metadata + warnings.

    A table that is absent from the export yields an *empty* frame (``contract.empty()``) and,
    where it matters, a ``LoadWarning`` — never ``None``.
    """

    meta: TraceMeta
    kernels: pd.DataFrame = field(default_factory=C.KERNELS.empty)
    memcpy: pd.DataFrame = field(default_factory=C.MEMCPY.empty)
    memset: pd.DataFrame = field(default_factory=C.MEMSET.empty)
    sync: pd.DataFrame = field(default_factory=C.SYNC.empty)
    api: pd.DataFrame = field(default_factory=C.API.empty)
    nvtx: pd.DataFrame = field(default_factory=C.NVTX.empty)
    nvtx_marks: pd.DataFrame = field(default_factory=C.NVTX_MARKS.empty)
    threads: pd.DataFrame = field(default_factory=C.THREADS.empty)
    processes: pd.DataFrame = field(default_factory=C.PROCESSES.empty)
    gpus: pd.DataFrame = field(default_factory=C.GPUS.empty)
    gpu_metrics: pd.DataFrame = field(default_factory=C.GPU_METRICS.empty)
    gpu_memory: pd.DataFrame = field(default_factory=C.GPU_MEMORY.empty)
    ncu_launches: pd.DataFrame = field(default_factory=C.NCU_LAUNCHES.empty)
    ncu_metrics: pd.DataFrame = field(default_factory=C.NCU_METRICS.empty)
    osrt: pd.DataFrame = field(default_factory=C.OSRT.empty)
    cpu_samples: pd.DataFrame = field(default_factory=C.CPU_SAMPLES.empty)
    warnings: list[LoadWarning] = field(default_factory=list)
    ncu_gpus: pd.DataFrame = field(default_factory=C.GPUS.empty)
    """The GPUs the ncu CSV itself describes (GPUS contract: its device name and
    ``device__attribute_*`` values); ``gpus`` is the nsys trace's when one was loaded. Not in
    ``FRAMES`` (a view of the ncu data, not a table of the capture)."""
    launch_shapes: pd.DataFrame = field(default_factory=C.LAUNCH_SHAPES.empty)
    """A file-level sample of the kernels' launch configuration (``C.LAUNCH_SHAPES``), read by
    the whole load and the streamed skeleton alike; not in ``FRAMES`` (never split by chunk)."""
    sm_limits: pd.DataFrame = field(default_factory=C.SM_LIMITS.empty)
    """Per GPU, what one SM can hold (``C.SM_LIMITS``, from the export); not in ``FRAMES``."""
    cpu_ops: pd.DataFrame = field(default_factory=C.NVTX.empty)
    """A PyTorch profiler trace's host operator ranges (``cpu_op`` events other than its steps:
    ``aten::mm``, ``autograd::engine::evaluate_function: …``) in the NVTX contract, domain
    ``cpu_op``; empty for other inputs. They name the host's time in a gap (``gaps/activity``),
    never steps or phases; not in ``FRAMES``."""

    FRAMES = ("kernels", "memcpy", "memset", "sync", "api", "nvtx", "nvtx_marks", "threads",
              "processes", "gpus", "gpu_metrics", "gpu_memory", "ncu_launches", "ncu_metrics",
              "osrt", "cpu_samples")

    @property
    def has_cuda(self) -> bool:
        return len(self.kernels) + len(self.memcpy) + len(self.memset) > 0

    @property
    def has_nvtx(self) -> bool:
        return len(self.nvtx) > 0

    @property
    def has_ncu(self) -> bool:
        return len(self.ncu_launches) > 0

    def row_counts(self) -> dict[str, int]:
        return {name: int(len(getattr(self, name))) for name in self.FRAMES}
