"""Data quality, streamed: the kernel sums ``data_quality.process_quality`` reads, per chunk.

The process-level items come from the merged steps and phases (``unattributed_kernels``,
``no_phases``, ``phases_other_threads``: ``chunked/phases_merge.py``) and one kernel reading —
kernel time starting outside the analysed window (``kernels_outside_window``) — whose count and
integer-ns sums over each chunk's *owned* kernels add up to the whole exactly. Partial size O(1).
"""
from __future__ import annotations

from nsys_diag.analyses.timeline.busy import Window
from nsys_diag.analyses.chunked.context import ChunkInputs
from nsys_diag.analyses.diagnosis.data_quality import (KernelWindowSums, QualityItem, kernel_window_sums,
                                             process_quality)

__all__ = ["merge_quality", "partial_quality"]


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
