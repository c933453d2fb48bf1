"""Run every analysis on a bundle: ``run_suite(bundle, options, th) -> AnalysisSuite``.

A file holding several processes (e.g. one per rank) is analysed **per process**: each process
gets its own steps, window, phases, utilization, gaps, kernels … and verdict. The headline (what
the top of every report shows) is the slowest process: the largest mean step time, or — without
steps — the one with the most GPU compute time. Processes analysed: those with GPU work (kernels,
copies); when none has any, those with NVTX ranges; when there is nothing, the whole bundle once
(which then yields ``insufficient_data``).

The per-process analyses run as a task graph (``_process_tasks``); their results end in
``process.finish_process`` and the file's in ``process.finish_suite`` (shared with the streamed
run). Data an analysis needs but the export lacks gives ``Unavailable(reason, hint)``;
unexpected exceptions are not swallowed.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from nsys_diag.analyses.diagnosis import data_quality as dq
from nsys_diag.analyses.arrays import all_equal, process_rows, take_rows
from nsys_diag.analyses.base import Unavailable, is_available
from nsys_diag.analyses.capabilities import analysed_process_ids
from nsys_diag.analyses.timeline.busy import Window, choose_window, device_busy, device_ids
from nsys_diag.analyses.communication import analyze_communication
from nsys_diag.analyses.roofline.gpu_choice import choose_gpu, roofline_gpu
from nsys_diag.analyses.gaps.causes import analyze_gaps, analyze_utilization, gap_evidence
from nsys_diag.analyses.gpu_metrics import analyze_gpu_metrics
from nsys_diag.analyses.kernels.table import analyze_kernels
from nsys_diag.analyses.loader_workers import analyze_loader_workers
from nsys_diag.analyses.memory import analyze_memory
from nsys_diag.analyses.process import (AnalysisSuite, AnyRoofline, ProcessAnalysis,
                                        finish_process, finish_suite, process_identity,
                                        tensor_counters)
from nsys_diag.analyses.steps.phases import analyze_phases, explain_outliers
from nsys_diag.analyses.selection import (check_selected_steps, check_step_range, check_steps,
                                           select_device)
from nsys_diag.analyses.steps.detection import StepsResult, analyze_steps
from nsys_diag.analyses.taskgraph import Task, run_tasks
from nsys_diag.analyses.kernels.tensor_cores import analyze_tensor_cores
from nsys_diag.analyses.timeline.strips import build_timeline
from nsys_diag.analyses.transfers import analyze_transfers
from nsys_diag.model.bundle import TraceBundle
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import HINT_CAPTURE_CUDA

__all__ = ["AnalysisSuite", "ProcessAnalysis", "analyze_process", "run_suite"]

PROCESS_FRAMES = ("kernels", "memcpy", "memset", "sync", "api", "nvtx")
"""Frames split by ``global_pid``."""
OPTIONAL_PROCESS_FRAMES = ("osrt", "cpu_samples")
"""Frames split by ``global_pid`` when the bundle has them (OS-runtime calls, CPU samples: gap
evidence)."""
PARALLEL_MIN_ROWS = 200_000
"""From this many kernel + CUDA API rows in a process, its kernel table, gap and GPU-metric
analyses run on two worker threads while this thread does the busy intervals, phases, Tensor
Core and the small analyses (perf, bench: numpy and pandas release the GIL in their array loops;
same results: ``_process_tasks`` is a task graph, ``analyses/taskgraph.py``)."""


def _select_device(bundle: TraceBundle, device: int | None) -> TraceBundle:
    """``--device``: ``selection.select_device`` (a device without GPU work is a usage error)."""
    return select_device(bundle, device)


def _detected_steps(nvtx: pd.DataFrame, kernels: pd.DataFrame, steps0, options: AnalyzeOptions,
                    th: Thresholds):
    """The step detection without the user's ``--steps``/``--window`` selection (``steps0`` when
    it already holds every detected step), for checking ``--steps`` against it."""
    if isinstance(steps0, StepsResult):
        return steps0
    return analyze_steps(nvtx, kernels, options=dataclasses.replace(options, steps=None,
                                                                    window_ns=None), th=th)


def _process_ids(bundle: TraceBundle) -> list[int]:
    return analysed_process_ids(bundle)  # the capability probe analyses the same processes


def _in_window(df: pd.DataFrame, w: Window) -> pd.DataFrame:
    s = df["start_ns"].to_numpy(np.int64)
    e = df["end_ns"].to_numpy(np.int64)
    keep = (s < w.end_ns) & (e > w.start_ns)
    return take_rows(df, keep)


def _explain_outliers(steps, phases):
    """Outlier reasons name the phase that grew the most in that step (e.g. save_checkpoint)."""
    return explain_outliers(steps, phases)


def _process_tasks(bundle: TraceBundle, f: dict[str, pd.DataFrame], pid: int,
                   devices: tuple[int, ...], steps: StepsResult | Unavailable, window: Window,
                   options: AnalyzeOptions, th: Thresholds, roofline: Any) -> list[Task]:
    """The analyses of one process after its steps and window, as a task graph (each task names
    the results it takes). Pooled: the kernel table, the gap evidence and gaps, the GPU metrics
    and the Tensor Core levels (the heavy array work of a large process, on worker threads); the
    rest runs on this thread."""
    kernels, memcpy, memset, api, sync = f["kernels"], f["memcpy"], f["memset"], f["api"], f["sync"]
    wt = (window.start_ns, window.end_ns)
    gaps_able = bool(devices) and window.duration_ns > 0
    metrics_p = _process_metrics(bundle, devices)
    mem_frame = bundle.gpu_memory
    if pid != -1 and len(mem_frame):
        mem_frame = mem_frame.loc[mem_frame["pid"].to_numpy() == pid]

    def steps_total(st: StepsResult | Unavailable) -> int:
        return st.total_analysed_ns if isinstance(st, StepsResult) else window.duration_ns

    gap_rows = {"memcpy": memcpy, "memset": memset, "nvtx": f["nvtx"], "osrt": f.get("osrt")}
    gap_tasks = [
        Task("evidence", lambda busy: gap_evidence(busy, kernels, api, sync, window, th=th,
                                                   **gap_rows),
             ("busy",), pooled=True),
        Task("gaps", lambda busy, phases, ev: analyze_gaps(
            busy, kernels, api, sync, phases, window, th=th, evidence=ev,
            cpu_samples=f.get("cpu_samples")),
             ("busy", "phases", "evidence"), pooled=True),
    ] if gaps_able else [
        Task("gaps", lambda: Unavailable("no GPU activity to find gaps in", HINT_CAPTURE_CUDA))]
    return [
        Task("kernel_table", lambda: _kernel_table(kernels, window, th, options.max_rows),
             pooled=True),
        Task("busy", lambda: device_busy(kernels, memcpy, memset, window, list(devices))),
        Task("phases", lambda busy: analyze_phases(f["nvtx"], steps, kernels, busy,
                                                   phase_map=options.phase_map), ("busy",)),
        *gap_tasks,
        Task("gpu_metrics", lambda ph: analyze_gpu_metrics(
            metrics_p, ph.phase_windows() if is_available(ph) else None, th=th, window=wt),
            ("phases",), pooled=True),
        Task("steps", lambda ph: _explain_outliers(steps, ph), ("phases",)),
        Task("utilization", lambda busy: analyze_utilization(busy, window, bundle.gpus), ("busy",)),
        Task("transfers", lambda: analyze_transfers(memcpy, memset, bundle.gpus, th=th, window=wt)),
        Task("memory", lambda: analyze_memory(mem_frame, bundle.gpus, th=th)),
        Task("timeline", lambda st, ph, busy, kt: build_timeline(
            st, ph, busy, window, kernels=kt[0], name_table=kt[1].table),
            ("steps", "phases", "busy", "kernel_table")),
        Task("roofline", lambda kt: _process_roofline(roofline, kt[0]), ("kernel_table",)),
        Task("tensor_cores", lambda kt, roof, busy: analyze_tensor_cores(
            kt[0], metrics_p, th=th, counters=tensor_counters(roof),
            name_table=kt[1].table,  # perf: the name table is computed once
            busy=busy, busy_window=wt),  # and the kernels merged once
            ("kernel_table", "roofline", "busy"), pooled=True),
        Task("communication", lambda kt, st: analyze_communication(
            kt[0], window=wt, step_time_ns_total=steps_total(st), th=th),
            ("kernel_table", "steps")),
    ]


def analyze_process(bundle: TraceBundle, gpid: int, options: AnalyzeOptions, th: Thresholds,
                    *, roofline: Any = None) -> ProcessAnalysis:
    """Every analysis of one process (``gpid`` -1: the whole bundle), then its verdict."""
    f = {name: process_rows(getattr(bundle, name), gpid) for name in PROCESS_FRAMES}
    for name in OPTIONAL_PROCESS_FRAMES:  # gap evidence; absent before the loaders provide them
        frame = getattr(bundle, name, None)
        if frame is not None:
            f[name] = process_rows(frame, gpid)
    kernels, memcpy, memset = f["kernels"], f["memcpy"], f["memset"]
    pid, _ = process_identity(bundle, gpid)
    devices = tuple(sorted(device_ids(kernels, memcpy, memset)))

    steps0 = analyze_steps(f["nvtx"], kernels, options=options, th=th)
    if options.steps is not None:  # --steps outside the detected steps: a usage error
        where = f" in process {pid}" if gpid != -1 and len(bundle.processes) > 1 else ""
        check_steps(options, _detected_steps(f["nvtx"], kernels, steps0, options, th), where)
        check_selected_steps(options, steps0)
    window = choose_window(steps0, kernels, memcpy, memset, user_window=options.window_ns,
                           capture=(bundle.meta.capture_start_ns, bundle.meta.capture_end_ns))
    r = run_tasks(_process_tasks(bundle, f, pid, devices, steps0, window, options, th, roofline),
                  parallel=len(kernels) + len(f["api"]) >= PARALLEL_MIN_ROWS)
    results = {**r, "kernels": r["kernel_table"][1], "quality": dq.process_quality(
        steps=r["steps"], phases=r["phases"], kernels=kernels, window=window,
        profiler_overhead_rows=int(bundle.meta.tables.get("PROFILER_OVERHEAD", 0)))}
    return finish_process(bundle, gpid, devices, window, results, options, th)


def _kernel_table(kernels: pd.DataFrame, window: Window, th: Thresholds, max_rows: int):
    """(kernels inside the window, ``analyze_kernels`` of them)."""
    k_win = _in_window(kernels, window) if len(kernels) else kernels
    return k_win, analyze_kernels(k_win, th=th, max_rows=max_rows)


def _process_metrics(bundle: TraceBundle, devices) -> pd.DataFrame:
    """The GPU-metric samples of the process's devices."""
    metrics = bundle.gpu_metrics
    if devices and len(metrics):
        dev = metrics["device_id"].to_numpy()
        if all_equal(dev) and int(dev[0]) in devices:  # perf (bench): one sampled GPU, no isin
            return metrics
        keep = np.isin(dev, devices)
        if not keep.all():  # perf (bench): no copy of 1M samples when all are this process's
            metrics = metrics.loc[keep]
    return metrics


def _process_roofline(roofline, k_win: pd.DataFrame):
    """The ncu roofline weighted by this process's kernel time (when it can be joined)."""
    if not is_available(roofline):
        return roofline
    from nsys_diag.analyses.roofline.ncu_join import join_roofline_to_timeline  # only with ncu data

    joined = join_roofline_to_timeline(roofline, k_win)
    # nothing to weight with: keep ncu's own time weights
    return joined if is_available(joined) else roofline


def run_suite(bundle: TraceBundle, options: AnalyzeOptions | None = None,
              th: Thresholds | None = None) -> AnalysisSuite:
    """All analyses, per process, plus the file-level ones (ncu roofline, data quality)."""
    options = options or AnalyzeOptions()
    th = th or Thresholds()
    bundle = choose_gpu(_select_device(bundle, options.device), options.gpu)
    check_step_range(bundle, options)
    roofline: AnyRoofline = None
    if bundle.has_ncu:
        # perf: imported only when the bundle has ncu data (a fifth of the package's import time)
        from nsys_diag.analyses.roofline.analysis import analyze_roofline

        rg = roofline_gpu(bundle, options.gpu)  # the CSV's GPU (or --gpu) sets the peaks
        roofline = analyze_roofline(bundle.ncu_launches, bundle.ncu_metrics, rg.gpus, th=th,
                                    gpu_source=rg.source, gpu_note=rg.note)
    procs = [analyze_process(bundle, gpid, options, th, roofline=roofline)
             for gpid in _process_ids(bundle)]  # one per process (rank)
    return finish_suite(bundle, procs, roofline, options, th,
                        loader_of=lambda window, owner: analyze_loader_workers(
                            bundle, window, th, owner=owner))
