"""Data quality: what was missing or suspicious, shown in every report and lowering confidence.

Items come from the loader's ``LoadWarning``s and from the analyses (steps inferred from a repeat,
truncated/incomplete steps, kernels without their launch call, no phases inside steps, kernel time
outside the analysed window, profiler overhead recorded by nsys). ``severity`` is ``warning`` when
the item can change a conclusion (it lowers the verdict's confidence) and ``info`` otherwise.
``capture_hints`` lists the ``nsys profile`` flags that would capture what is missing.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nsys_diag.analyses.base import is_available
from nsys_diag.model.vocabulary import (HINT_CUDA_NO_LAUNCH, HINT_KERNEL_ACTIVITY_MISSING, HINT_ADD_NVTX,
                                        HINT_ADD_NVTX_NEUTRAL, NSYS_CAPTURE_COMMAND, NSYS_FLAG_GPU_METRICS,
                                        HINT_MEMORY_HEADROOM, NSYS_TRACE_CUDA, HINT_REEXPORT,
                                        WIDEN_WINDOW_HINT)
from nsys_diag.model.vocabulary import (HINT_ADD_PHASES, HINT_KINETO_CUDA, HINT_KINETO_NOT_IN_FORMAT, HINT_KINETO_STEPS,
                                        KINETO_FORMAT, KINETO_NOT_IN_FORMAT, hint_for)
from nsys_diag.analyses.diagnosis.program import analyze_program
from nsys_diag.analyses.engine.declaration import Declaration, FinishContext, declare
from typing import TYPE_CHECKING
from nsys_diag.analyses.timeline.busy import Window
from nsys_diag.model.schema_types import Enum, List, Obj

if TYPE_CHECKING:  # the span type only: the engine's context imports the analyses
    from nsys_diag.analyses.engine.context import ChunkInputs

INFO_LOAD_CODES = frozenset({"noise_lines", "converted_report", "ncu_noise_lines",
                             "ncu_decimal_mark_assumed", "no_gpu_info", "gpu_metric_units",
                             "ncu_na_values", "gpu_named", "not_streamed", "not_in_format"})
"""Loader warnings that do not affect conclusions (shown as info)."""
NO_STEPS_CODES = frozenset({"no_nvtx", "no_steps"})
"""Warnings that there are no steps (no NVTX ranges, no step found). A diagnosis takes them into
its confidence once, through the no-steps cap (``verdict._confidence``: a verdict on the whole
window is at most ``medium``), not again as data warnings; an abstention counts them as any other
warning."""


def without_repeats(items, load_warnings) -> list[QualityItem]:
    """A process's ``items`` without ``no_steps`` when the file's load warnings already say it
    holds no NVTX ranges at all (``no_nvtx``: steps cannot be found — one warning, not two that
    say the same)."""
    if any(w.code == "no_nvtx" for w in load_warnings):
        return [q for q in items if q.code != "no_steps"]
    return list(items)


def warning_counts(items) -> tuple[int, int]:
    """(warnings, of them the ``NO_STEPS_CODES`` ones) among ``items`` (``QualityItem``)."""
    warnings = [q for q in items if q.severity == "warning"]
    return len(warnings), sum(1 for q in warnings if q.code in NO_STEPS_CODES)

CAPTURE_BASE = NSYS_CAPTURE_COMMAND


@dataclass(frozen=True)
class QualityItem:
    code: str
    message: str
    count: int = 0
    severity: str = "info"  # info | warning
    hint: str = ""

    def to_json(self) -> dict:
        return {"code": self.code, "message": self.message, "count": int(self.count),
                "severity": self.severity, "hint": self.hint}


def from_load_warnings(warnings) -> list[QualityItem]:
    return [QualityItem(w.code, w.message, int(w.count),
                        "info" if w.code in INFO_LOAD_CODES else "warning", w.hint or "")
            for w in warnings]


@dataclass(frozen=True)
class KernelWindowSums:
    """What ``kernels_outside_window`` reads of a process's kernels (integer ns); sums of row
    subsets add up (the chunk merge, ``diagnosis/data_quality.py``)."""

    count: int
    total_ns: int
    outside_ns: int
    """Kernel time of the kernels that start outside ``[window.start_ns, window.end_ns)``."""
    outside_count: int

    def __add__(self, other: "KernelWindowSums") -> "KernelWindowSums":
        return KernelWindowSums(self.count + other.count, self.total_ns + other.total_ns,
                                self.outside_ns + other.outside_ns,
                                self.outside_count + other.outside_count)


def kernel_window_sums(kernels, window) -> KernelWindowSums:
    """Count and time of ``kernels``, and of those starting outside ``window``."""
    if not len(kernels) or window.duration_ns <= 0:
        return KernelWindowSums(len(kernels), 0, 0, 0)
    s = kernels["start_ns"].to_numpy(np.int64)
    e = kernels["end_ns"].to_numpy(np.int64)
    d = e - s
    inside = (s >= window.start_ns) & (s < window.end_ns)
    # perf (bench): integer sums, no masked 2M-row copy (equal to the float sums: integers
    # below 2^53 ns, 104 days, add exactly in any order)
    return KernelWindowSums(len(kernels), int(d.sum()), int(d.sum(where=~inside)),
                            int((~inside).sum()))


def process_quality(*, steps, phases, kernels, window, profiler_overhead_rows: int = 0,
                    kernel_sums: KernelWindowSums | None = None) -> list[QualityItem]:
    """Analysis-side quality items for one process (``kernel_sums``, when given, stands for
    ``kernel_window_sums(kernels, window)``; ``kernels`` is then not read)."""
    items: list[QualityItem] = []
    for code, message, severity in getattr(steps, "notes", ()):
        items.append(QualityItem(code, message, 0, severity))
    if not is_available(steps):
        items.append(QualityItem("no_steps", "no steps found: "
                                 + getattr(steps, "reason", ""), 0, "warning",
                                 getattr(steps, "hint", "")))
    if is_available(phases):
        if phases.unattributed_kernels:
            items.append(QualityItem(
                "unattributed_kernels", f"{phases.unattributed_kernels} kernels have no launch call "
                "in the export (time-cut capture?) and are not attributed to phases",
                phases.unattributed_kernels, "warning"))
        if len(phases.rows) == 1:
            items.append(QualityItem("no_phases", "no NVTX phase ranges inside the steps: the whole "
                                     "step is 'other'", 0, "info",
                                     HINT_ADD_PHASES))
        elif phases.thread_scope == "all_threads":
            items.append(QualityItem("phases_other_threads", "no phase ranges on the step's thread; "
                                     "phases were taken from every thread of the process", 0,
                                     "info"))
    sums = kernel_sums if kernel_sums is not None else kernel_window_sums(kernels, window)
    if sums.count and window.duration_ns > 0:
        out_share = float(sums.outside_ns) / float(sums.total_ns) if sums.total_ns > 0 else 0.0
        if out_share > 0.01:
            items.append(QualityItem(
                "kernels_outside_window", f"{out_share:.0%} of kernel time lies outside the "
                f"analysed window ({window.source}: warm-up, incomplete or unselected steps, or "
                "work before/after the steps)", sums.outside_count, "info"))
    if profiler_overhead_rows:
        items.append(QualityItem("profiler_overhead", "nsys recorded profiler-overhead intervals; "
                                 "timings around them are inflated", profiler_overhead_rows, "info"))
    return items


def memory_quality(memory) -> list[QualityItem]:
    """A warning for devices whose GPU-memory peak is impossible (``analyses/memory.py``)."""
    bad = getattr(memory, "implausible", ()) if is_available(memory) else ()
    if not bad:
        return []
    where = ", ".join(f"GPU {d.device_id} ({100 * (d.peak_share or 0):.3g}%)" for d in bad)
    return [QualityItem(
        "implausible_memory_peak", f"peak GPU memory beyond any possible share of the device: "
        f"{where}; the memory events' sizes or the device's memory size are bad data, so no "
        "memory advice is given", len(bad), "warning", HINT_REEXPORT)]


CUDA_API_TABLES = ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER")


def no_gpu_work_hint(bundle) -> str:
    """Why an export with CUDA traced holds no GPU work, when it tells: kernel launch calls
    without kernel activity (``meta.extra["launch_calls_without_kernels"]``, read by the
    loader), or CUDA API calls without any launch, copy or memset; "" otherwise."""
    if bundle.has_cuda or bundle.meta.format != "nsys-sqlite":
        return ""
    launches = bundle.meta.extra.get("launch_calls_without_kernels")
    if launches:
        return HINT_KERNEL_ACTIVITY_MISSING.format(launches=int(launches))
    if launches == 0 and any(bundle.meta.tables.get(t, 0) for t in CUDA_API_TABLES):
        return HINT_CUDA_NO_LAUNCH
    return ""


def window_missed_the_work(bundle) -> bool:
    """The bundle was read over a window (``--window``, a step selection) that holds no kernel,
    copy or memset while the capture's launch-shape sample (read over the whole file) holds
    kernels: the selection missed the GPU work; nothing is missing from the capture."""
    shapes = getattr(bundle, "launch_shapes", None)
    return (not bundle.has_cuda and shapes is not None and len(shapes) > 0
            and bundle.meta.format not in ("ncu-csv", KINETO_FORMAT))


def capture_hints(bundle) -> list[str]:
    """nsys flags that would capture what this export lacks (empty when nothing is missing); for
    a kernel-only input (an ncu CSV) one line: a timeline of the same run, joined with ``--ncu``."""
    if bundle.meta.format == KINETO_FORMAT:
        return kineto_capture_hints(bundle)
    if bundle.meta.format == "ncu-csv":
        return [f"{CAPTURE_BASE}  (a timeline of the same run, then `nsys-diag analyze "
                "report.sqlite --ncu kernels.csv`: steps, phases, idle gaps and the roofline "
                "weighted by timeline time)"]
    if window_missed_the_work(bundle):  # the selection is empty, not the capture
        return [WIDEN_WINDOW_HINT]
    hints: list[str] = []
    blind = no_gpu_work_hint(bundle)
    if blind:
        hints.append(blind)
    elif not bundle.has_cuda:
        hints.append(f"{CAPTURE_BASE}  (the export has no CUDA kernels/copies: trace CUDA with "
                     f"`{NSYS_TRACE_CUDA}` and make sure the capture range covers GPU work)")
    no_memory = bundle.has_cuda and not len(bundle.gpu_memory)
    # what ran words the hints (once, and only when a hint needs it)
    framework = analyze_program(bundle).framework if not bundle.has_nvtx or no_memory else None
    if not bundle.has_nvtx:
        hints.append(HINT_ADD_NVTX if framework == "pytorch" else HINT_ADD_NVTX_NEUTRAL)
    if bundle.has_cuda and not len(bundle.gpu_metrics):
        hints.append(f"{NSYS_FLAG_GPU_METRICS}  (SM/Tensor Core activity and DRAM bandwidth: "
                     "counters beat kernel-name heuristics)")
    if no_memory:
        hints.append(hint_for(HINT_MEMORY_HEADROOM, bundle.meta.format, framework))
    return hints


def kineto_capture_hints(bundle) -> list[str]:
    """What a PyTorch profiler trace lacks and how to record it: CUDA activity and step marks
    with torch.profiler; what the format cannot hold, with the nsys capture of the same run."""
    hints = [] if bundle.has_cuda else [HINT_KINETO_CUDA]
    if not bundle.has_nvtx:
        hints.append(HINT_KINETO_STEPS)
    if bundle.has_cuda:
        hints.append(f"{KINETO_NOT_IN_FORMAT}: {HINT_KINETO_NOT_IN_FORMAT}")
    return hints


# ---------------------------------------------------------------------- streamed: partial per span, merge
# Data quality, streamed: the kernel sums ``data_quality.process_quality`` reads, per chunk.
#
# The process-level items come from the merged steps and phases (``unattributed_kernels``,
# ``no_phases``, ``phases_other_threads``: ``steps/phases_spans.py``) and one kernel reading —
# kernel time starting outside the analysed window (``kernels_outside_window``) — whose count and
# integer-ns sums over each chunk's *owned* kernels add up to the whole exactly. Partial size O(1).
def partial_quality(ci: ChunkInputs) -> KernelWindowSums:
    """Count and ns of the chunk's owned kernels, and of those starting outside the window."""
    return kernel_window_sums(ci.owned("kernels"), ci.window)


def merge_quality(parts: list[KernelWindowSums], *, steps, phases, window: Window,
                  profiler_overhead_rows: int = 0) -> list[QualityItem]:
    """``process_quality`` of the whole process: ``steps`` (after ``explain_outliers``) and
    ``phases`` merged, ``window`` the process's analysed window."""
    total = KernelWindowSums(0, 0, 0, 0)
    for p in parts:  # one per chunk
        total = total + p
    return process_quality(steps=steps, phases=phases, kernels=None, window=window,
                           profiler_overhead_rows=profiler_overhead_rows, kernel_sums=total)


# -------------------------------------------------------------------------------- declaration
def _finish_quality(states, ctx: FinishContext) -> list[QualityItem]:
    r = ctx.results
    return merge_quality(list(states), steps=r["steps"], phases=r["phases"],
                         window=ctx.glob.window,
                         profiler_overhead_rows=int(ctx.bundle.meta.tables.get("PROFILER_OVERHEAD", 0)))


DATA_QUALITY_SPEC = List(Obj({"code": "str", "message": "str", "count": "int",
                         "severity": Enum("info", "warning", default="info"), "hint": "str?"},
                        optional=("hint",)), per_process=True)
"""The ``data_quality`` section of the analysis JSON (model/schema_types.py)."""

QUALITY = declare(Declaration(
    "quality", section="data_quality", spec=DATA_QUALITY_SPEC, reads=("steps", "phases"),
    partial=lambda span, **_: partial_quality(span), finish=_finish_quality))
"""The process's data-quality items (the ``data_quality`` section, with the file's)."""
