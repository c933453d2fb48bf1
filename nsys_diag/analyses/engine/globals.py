"""The global values of a chunked analysis: what every chunk must agree on before it is analysed.

A chunk is analysed against its process's **steps**, **analysed window** and **devices**, which
depend on the whole export (the steps' kernel counts, the first and last GPU operation, every
device the process ever used). A streaming pass cannot know them before it has read everything,
so it *assumes* them (``assume``: steps from NVTX alone, the window from the export's GPU span,
the devices seen so far) and **records the facts** as it goes (``ProcessFacts``: each process's
kernels per assumed step, its GPU span, its devices — O(steps), not per kernel). ``settle``
computes the exact values from the facts; when they differ from the assumptions the pass is run
again with the exact ones (a second pass is exact by construction: its assumptions are the
first pass's facts).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys_diag.analyses.base import Unavailable, is_available
from nsys_diag.analyses.timeline.busy import Window, choose_window
from nsys_diag.analyses.steps.repeat import KernelCounts
from nsys_diag.analyses.steps.detection import StepsResult, analyze_steps
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.thresholds import Thresholds


@dataclass
class ProcessFacts:
    """What the chunks of one process showed (filled chunk by chunk)."""

    launches: list[np.ndarray] = field(default_factory=list)
    """Launch-or-start time (ns) of each owned kernel, per chunk (``step_repeat.launch_or_start``)
    — kept only when a pass is asked to (``keep_launches``: the interval counts below did not
    answer what the steps asked)."""
    kernels: int = 0
    """Owned kernels (all chunks)."""
    interval_counts: dict = field(default_factory=dict)
    """``KernelCounts.key`` → kernels launched in each interval of the assumed steps (and between
    consecutive step starts: the repeat check's intervals), summed over the chunks — what
    ``analyze_steps`` reads of the kernels, in O(steps) instead of 8 bytes per kernel."""
    span: tuple[int, int] | None = None
    """(first start, last end) of the process's kernels, memcpys and memsets (ns)."""
    devices: set[int] = field(default_factory=set)
    gpu_rows: int = 0
    first_kernel_ns: int | None = None
    """Start of the process's first kernel (the ``startup`` gap cause's edge)."""
    thread_sets: list = field(default_factory=list)
    tensor_sampling: list = field(default_factory=list)
    """``tensor_spans.TensorSamplingPart`` of each chunk."""
    osrt_rows: int = 0
    """OS-runtime calls the chunks held (none: the host-I/O threads do not matter)."""
    """``gaps.spans.ThreadSets`` of each chunk's API rows (which threads' OS-runtime calls are
    ``host_io`` evidence)."""

    def add_counts(self, kernels: int, counts: dict) -> None:
        self.kernels += int(kernels)
        for k, c in counts.items():
            self.interval_counts[k] = self.interval_counts[k] + c if k in self.interval_counts \
                else c.copy()

    def add(self, launches: np.ndarray | None, span: tuple[int, int] | None, devices: set[int],
            gpu_rows: int, first_kernel_ns: int | None = None, thread_sets=None) -> None:
        if first_kernel_ns is not None:
            self.first_kernel_ns = first_kernel_ns if self.first_kernel_ns is None else \
                min(self.first_kernel_ns, first_kernel_ns)
        if thread_sets is not None:
            self.thread_sets.append(thread_sets)
        if launches is not None:
            self.launches.append(np.asarray(launches, np.int64))
        if span is not None:
            self.span = span if self.span is None else (min(self.span[0], span[0]),
                                                        max(self.span[1], span[1]))
        self.devices |= devices
        self.gpu_rows += int(gpu_rows)

    def kernel_proxy(self) -> pd.DataFrame:
        """A kernels frame holding only what ``analyze_steps`` reads of the kernels: their
        launch-or-start times (``launch_start_ns`` = ``start_ns``)."""
        t = np.concatenate(self.launches) if self.launches else np.zeros(0, np.int64)
        t.sort(kind="stable")
        self.launches = [t]  # one array, not the chunks' and their concatenation
        return pd.DataFrame({"start_ns": t, "launch_start_ns": t}, copy=False)

    def step_kernels(self, keep_launches: bool):
        """What ``analyze_steps`` reads of the kernels: the launch times (a pass that kept
        them) or the interval counts (``step_repeat.KernelCounts``)."""
        if keep_launches:
            return self.kernel_proxy()
        return KernelCounts(self.kernels, self.interval_counts)


def count_intervals(steps) -> list[tuple[np.ndarray, np.ndarray]]:
    """The intervals whose kernels a pass counts for ``steps`` (assumed): the steps, and the spans
    between consecutive step starts (what the repeat detection's nesting check reads)."""
    if not is_available(steps) or not steps.count:
        return []
    s, e = steps.starts_ns.astype(np.int64), steps.ends_ns.astype(np.int64)
    out = [(s, e)]
    if s.size >= 2:
        out.append((s[:-1], s[1:]))
    return out


@dataclass(frozen=True)
class ProcessGlobals:
    """What every chunk of one process is analysed against."""

    global_pid: int
    steps: StepsResult | Unavailable
    window: Window
    devices: tuple[int, ...]
    first_kernel_ns: int | None = None
    io_threads: tuple[int, ...] = ()
    tensor_sampling: object = None
    """``tensor_spans.TensorSampling``: the Tensor Active sampling period and devices."""

    def same_for_chunks(self, other: "ProcessGlobals", *, host_io: bool = True) -> bool:
        """Equal in everything a chunk's analysis reads (the steps' kernel counts aside: they
        are only reported, and come from the facts). ``host_io=False``: the process has no
        OS-runtime calls, so which threads' calls would count does not matter."""
        return (self.window == other.window and self.devices == other.devices
                and self.first_kernel_ns == other.first_kernel_ns
                and (not host_io or self.io_threads == other.io_threads)
                and self.tensor_sampling == other.tensor_sampling
                and _step_key(self.steps) == _step_key(other.steps))


def _step_key(steps) -> tuple:
    if not is_available(steps):
        return ("unavailable", str(getattr(steps, "reason", "")))
    return (steps.source, steps.boundary, steps.global_tid, tuple(steps.starts_ns.tolist()),
            tuple(steps.ends_ns.tolist()), steps.kinds)


def _span_frame(span: tuple[int, int] | None) -> pd.DataFrame:
    """A one-row GPU-op frame spanning ``span`` (what ``choose_window`` reads of the ops)."""
    if span is None:
        return pd.DataFrame({"start_ns": np.zeros(0, np.int64), "end_ns": np.zeros(0, np.int64)})
    return pd.DataFrame({"start_ns": [int(span[0])], "end_ns": [int(span[1])]})


def process_globals(gpid: int, nvtx: pd.DataFrame, kernels: pd.DataFrame,
                    span: tuple[int, int] | None, devices, capture: tuple[int, int],
                    options: AnalyzeOptions, th: Thresholds, *, first_kernel_ns: int | None = None,
                    io_threads: tuple[int, ...] = (), tensor_sampling=None) -> ProcessGlobals:
    """Steps, window and devices of one process from its NVTX list, a kernels frame holding its
    kernels' launch times (``ProcessFacts.kernel_proxy``, or an empty one to assume) and its GPU
    span (or a function giving it, called only when the window needs it) — the in-memory
    ``analyze_process`` computes the same from the whole frames."""
    steps = analyze_steps(nvtx, kernels, options=options, th=th)
    if callable(span):  # a census asked only when the window needs the GPU span
        needs = options.window_ns is not None or not (is_available(steps) and steps.analysed_count)
        span = span() if needs else None
    empty = _span_frame(None)
    window = choose_window(steps, _span_frame(span), empty, empty, user_window=options.window_ns,
                           capture=capture)
    return ProcessGlobals(gpid, steps, window, tuple(sorted(int(d) for d in devices)),
                          first_kernel_ns, tuple(io_threads), tensor_sampling)
