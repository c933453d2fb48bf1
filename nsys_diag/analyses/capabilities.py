"""One capability probe: what an export lets the analyses answer, shared by ``inspect`` and
``analyze`` so the two never disagree (issue 15: ``inspect`` promised "steps and phases" on a
capture where ``analyze`` found none).

``probe(bundle, options, th, analysed=None) -> Capabilities``. Steps and phases come from the
*real* detection (``analyze_steps``, ``analyze_phases``) of every process ``analyze`` analyses
(``analysed_process_ids``): ``inspect`` runs it here; ``analyze`` passes the results it already
computed (``analysed``: global pid → (steps, phases)) so nothing runs twice. The other facts are
whether a table holds rows: GPU activity, NVTX ranges, GPU metrics (and a Tensor Active metric),
Nsight Compute data, GPU memory events, OS-runtime calls and CPU samples (frames absent from an
older bundle count as empty). No heuristic beyond the detections themselves.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline.arrays import process_rows, unique_ints
from nsys_diag.analyses.base import is_available
from nsys_diag.model.bundle import TraceBundle
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.thresholds import Thresholds


@dataclass(frozen=True)
class ProcessCapabilities:
    """Steps and phases of one analysed process (``global_pid`` -1: the whole bundle)."""

    global_pid: int
    pid: int
    steps: int            # detected steps (0: none)
    analysed_steps: int   # of which analysed (warm-up / unselected excluded)
    steps_source: str | None
    steps_reason: str | None  # why there are none
    phases: int           # named phase rows (the residual "other" row not counted)
    phases_reason: str | None

    def to_json(self) -> dict:
        return {"pid": self.pid if self.pid != -1 else None, "steps": self.steps,
                "analysed_steps": self.analysed_steps, "steps_source": self.steps_source,
                "steps_reason": self.steps_reason, "phases": self.phases,
                "phases_reason": self.phases_reason}


@dataclass(frozen=True)
class Capabilities:
    """What the export can answer (JSON types only in ``to_json``)."""

    processes: tuple[ProcessCapabilities, ...]
    gpu_activity: bool
    nvtx_ranges: int
    gpu_metrics: bool
    tensor_active_metric: bool
    ncu: bool
    gpu_memory_events: bool
    osrt: bool
    cpu_samples: bool

    @property
    def steps(self) -> bool:
        """Some analysed process has detected steps."""
        return any(p.steps > 0 for p in self.processes)

    @property
    def phases(self) -> bool:
        """Some analysed process has named phases inside its steps."""
        return any(p.phases > 0 for p in self.processes)

    def to_json(self) -> dict:
        return {"steps": self.steps, "phases": self.phases, "gpu_activity": self.gpu_activity,
                "nvtx_ranges": self.nvtx_ranges, "gpu_metrics": self.gpu_metrics,
                "tensor_active_metric": self.tensor_active_metric, "ncu": self.ncu,
                "gpu_memory_events": self.gpu_memory_events, "osrt": self.osrt,
                "cpu_samples": self.cpu_samples,
                "processes": [p.to_json() for p in self.processes]}


def analysed_process_ids(bundle: TraceBundle) -> list[int]:
    """The processes ``analyze`` analyses: those with GPU work (kernels, copies, memsets); when
    none has any, those with NVTX ranges; when there is nothing, ``[-1]`` (the whole bundle)."""
    gpu: set[int] = set()
    for f in (bundle.kernels, bundle.memcpy, bundle.memset):
        gpu.update(unique_ints(f["global_pid"].to_numpy()))
    if gpu:
        return sorted(gpu)
    nv = sorted(int(p) for p in pd.unique(bundle.nvtx["global_pid"]))
    return nv or [-1]


def _rows(bundle: TraceBundle, name: str) -> int:
    f = getattr(bundle, name, None)
    return int(len(f)) if f is not None else 0


def _detect(bundle: TraceBundle, gpid: int, options: AnalyzeOptions, th: Thresholds):
    """(steps, phases) of one process, as ``analyze`` detects them."""
    from nsys_diag.analyses.timeline.busy import choose_window, device_busy, device_ids
    from nsys_diag.analyses.steps.phases import analyze_phases
    from nsys_diag.analyses.steps.detection import analyze_steps

    nvtx, kernels = process_rows(bundle.nvtx, gpid), process_rows(bundle.kernels, gpid)
    memcpy, memset = process_rows(bundle.memcpy, gpid), process_rows(bundle.memset, gpid)
    steps = analyze_steps(nvtx, kernels, options=options, th=th)
    if not is_available(steps):
        return steps, analyze_phases(nvtx, steps, kernels, {}, phase_map=options.phase_map)
    window = choose_window(steps, kernels, memcpy, memset, user_window=options.window_ns,
                           capture=(bundle.meta.capture_start_ns, bundle.meta.capture_end_ns))
    busy = device_busy(kernels, memcpy, memset, window,
                       sorted(device_ids(kernels, memcpy, memset)))
    return steps, analyze_phases(nvtx, steps, kernels, busy, phase_map=options.phase_map)


def _process(bundle: TraceBundle, gpid: int, steps: Any, phases: Any) -> ProcessCapabilities:
    pid = -1
    if gpid != -1:
        pr = bundle.processes.loc[bundle.processes["global_pid"].to_numpy() == gpid]
        pid = int(pr["pid"].iloc[0]) if len(pr) else int(gpid >> 24) & 0xFFFFFF
    has_steps = is_available(steps)
    named = [r for r in phases.rows if r.name != "other"] if is_available(phases) else []
    return ProcessCapabilities(
        global_pid=int(gpid), pid=pid,
        steps=int(steps.count) if has_steps else 0,
        analysed_steps=int(steps.analysed_count) if has_steps else 0,
        steps_source=str(steps.source) if has_steps else None,
        steps_reason=None if has_steps else str(getattr(steps, "reason", "no steps")),
        phases=len(named),
        phases_reason=(None if named else str(getattr(phases, "reason", "")) or
                       "no NVTX phase ranges inside the steps"))


def _metric_names(metric: pd.Series) -> list[str]:
    """The distinct GPU-metric names sampled (perf, bench: one bincount over the categorical's
    codes of a million samples, no string conversion of every row)."""
    if isinstance(metric.dtype, pd.CategoricalDtype):
        codes = metric.cat.codes.to_numpy()
        seen = np.flatnonzero(np.bincount(codes[codes >= 0], minlength=len(metric.cat.categories)))
        return [str(metric.cat.categories[i]) for i in seen]  # a handful of metric names
    return [str(x) for x in pd.unique(metric)]


def probe(bundle: TraceBundle, options: AnalyzeOptions | None = None, th: Thresholds | None = None,
          *, analysed: Mapping[int, tuple[Any, Any]] | None = None) -> Capabilities:
    """The capabilities of ``bundle``. ``analysed``: the (steps, phases) ``analyze`` found per
    global pid; without it each analysed process's steps and phases are detected here."""
    options = options or AnalyzeOptions()
    th = th or Thresholds()
    if analysed is None:
        analysed = {g: _detect(bundle, g, options, th) for g in analysed_process_ids(bundle)}
    procs = tuple(_process(bundle, g, s, p) for g, (s, p) in analysed.items())  # one per process
    gm = bundle.gpu_metrics
    names = _metric_names(gm["metric"]) if len(gm) else []
    return Capabilities(
        processes=procs, gpu_activity=bool(bundle.has_cuda), nvtx_ranges=_rows(bundle, "nvtx"),
        gpu_metrics=bool(len(gm)),
        tensor_active_metric=any(str(n).lower().startswith("tensor") for n in names),
        ncu=bool(bundle.has_ncu), gpu_memory_events=_rows(bundle, "gpu_memory") > 0,
        osrt=_rows(bundle, "osrt") > 0, cpu_samples=_rows(bundle, "cpu_samples") > 0)
