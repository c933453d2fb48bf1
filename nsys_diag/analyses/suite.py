"""Run every analysis on a bundle: ``run_suite(bundle, options, th) -> AnalysisSuite``.

A file holding several processes (e.g. one per rank) is analysed **per process**: each process
gets its own steps, window, phases, utilization, gaps, kernels … and verdict. The headline (what
the top of every report shows) is the slowest process: the largest mean step time, or — without
steps — the one with the most GPU compute time. Processes analysed: those with GPU work (kernels,
copies); when none has any, those with NVTX ranges; when there is nothing, the whole bundle once
(which then yields ``insufficient_data``).

The per-process analyses run as a task graph of their declarations' in-memory tasks
(``_process_tasks``, ``engine/declaration.py``); their results end in
``process.finish_process`` and the file's in ``process.finish_suite`` (shared with the streamed
run). Data an analysis needs but the export lacks gives ``Unavailable(reason, hint)``;
unexpected exceptions are not swallowed.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np
import pandas as pd

# the analyses the suite runs: importing them registers their declarations
from nsys_diag.analyses import communication, gpu_metrics, memory, transfers  # noqa: F401
from nsys_diag.analyses.diagnosis import data_quality as dq
from nsys_diag.analyses.timeline.arrays import all_equal, process_rows
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.capabilities import analysed_process_ids
from nsys_diag.analyses.engine.declaration import WholeProcess, whole_declarations
from nsys_diag.analyses.gaps import spans as gap_spans  # noqa: F401
from nsys_diag.analyses.kernels import tensor_spans  # noqa: F401
from nsys_diag.analyses.kernels.table import in_window, window_kernel_table
from nsys_diag.analyses.timeline import busy, strips  # noqa: F401
from nsys_diag.analyses.timeline.busy import Window, choose_window, device_ids
from nsys_diag.analyses.roofline.gpu_choice import choose_gpu, roofline_gpu
from nsys_diag.analyses.loader_workers import analyze_loader_workers
from nsys_diag.analyses.process import (AnalysisSuite, AnyRoofline, ProcessAnalysis,
                                        finish_process, finish_suite, process_identity)
from nsys_diag.analyses.selection import (check_selected_steps, check_step_range, check_steps,
                                           select_device)
from nsys_diag.analyses.steps import nvtx_ranges, phases_spans  # noqa: F401
from nsys_diag.analyses.timeline import lanes  # noqa: F401
from nsys_diag.analyses.steps.detection import StepsResult, analyze_steps
from nsys_diag.analyses.steps.operator_phases import with_operator_phases
from nsys_diag.analyses.engine.taskgraph import Task, run_tasks
from nsys_diag.model.bundle import TraceBundle
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.thresholds import Thresholds

__all__ = ["AnalysisSuite", "ProcessAnalysis", "analyze_process", "run_suite"]

PROCESS_FRAMES = ("kernels", "memcpy", "memset", "sync", "api", "nvtx")
"""Frames split by ``global_pid``."""
OPTIONAL_PROCESS_FRAMES = ("osrt", "cpu_samples", "cpu_ops")
"""Frames split by ``global_pid`` when the bundle has them (OS-runtime calls, CPU samples: gap
evidence)."""
PARALLEL_MIN_ROWS = 200_000
"""From this many kernel + CUDA API rows in a process, its kernel table, NVTX ranges, gap,
GPU-metric and Tensor Core analyses run on two worker threads while this thread does the busy
intervals, phases, lanes and the small analyses (perf, bench: numpy and pandas release the GIL
in their array loops; same results: ``_process_tasks`` is a task graph,
``analyses/engine/taskgraph.py``). The NVTX ranges read no other result and are the longest task
(~0.3 s CPU at 2M kernels): they start first, beside the kernel table, instead of running last
on this thread while the workers idle."""


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
    return in_window(df, w)


def _process_tasks(bundle: TraceBundle, f: dict[str, pd.DataFrame], pid: int,
                   devices: tuple[int, ...], steps: StepsResult | Unavailable, window: Window,
                   options: AnalyzeOptions, th: Thresholds, roofline: Any) -> list[Task]:
    """The analyses of one process after its steps and window, as a task graph: one task per
    declared analysis with an in-memory task (``Declaration.whole``, named by the results it
    takes). Pooled: the kernel table, the NVTX ranges, the gap evidence and gaps, the GPU metrics
    and the Tensor Core levels (the heavy array work of a large process, on worker threads); the
    rest runs on this thread."""
    mem_frame = bundle.gpu_memory
    if pid != -1 and len(mem_frame):
        mem_frame = mem_frame.loc[mem_frame["pid"].to_numpy() == pid]
    proc = WholeProcess(bundle=bundle, frames=f, pid=pid, devices=devices, steps=steps,
                        window=window, options=options, th=th, roofline=roofline,
                        metrics=_process_metrics(bundle, devices), memory=mem_frame)
    return [Task(d.name, functools.partial(d.whole, proc), d.whole_reads, pooled=d.pooled)
            for d in whole_declarations() if d.whole is not None]


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
    f["nvtx"], steps0 = with_operator_phases(f["nvtx"], f.get("cpu_ops"), steps0,
                                             options.phase_map)
    window = choose_window(steps0, kernels, memcpy, memset, user_window=options.window_ns,
                           capture=(bundle.meta.capture_start_ns, bundle.meta.capture_end_ns))
    r = run_tasks(_process_tasks(bundle, f, pid, devices, steps0, window, options, th, roofline),
                  parallel=len(kernels) + len(f["api"]) >= PARALLEL_MIN_ROWS)
    quality = dq.process_quality(
        steps=r["steps"], phases=r["phases"], kernels=kernels, window=window,
        profiler_overhead_rows=int(bundle.meta.tables.get("PROFILER_OVERHEAD", 0)))
    results = {**r, "kernels": r["kernel_table"][1], "quality": quality}
    if bundle.meta.format == "ncu-csv":  # a kernel CSV has no timeline: no steps is expected
        results["quality"] = [q for q in quality if q.code != "no_steps"]
        results.update(_ncu_kernel_results(bundle, options, th))
    return finish_process(bundle, gpid, devices, window, results, options, th)


def _ncu_kernel_results(bundle: TraceBundle, options: AnalyzeOptions, th: Thresholds) -> dict:
    """An ncu CSV read alone: its profiled kernels as the kernel table and the Tensor Core
    result from the tensor pipe (``kernels/ncu_kernels.py``; no timeline analysis sees them)."""
    if not bundle.has_ncu:
        return {}
    from nsys_diag.analyses.kernels.ncu_kernels import ncu_kernels  # ncu data only

    nk = ncu_kernels(bundle.ncu_launches, bundle.ncu_metrics, th=th, max_rows=options.max_rows)
    return {"kernel_table": (nk.frame, nk.kernels), "kernels": nk.kernels,
            "tensor_cores": nk.tensor_cores}


def _kernel_table(kernels: pd.DataFrame, window: Window, th: Thresholds, max_rows: int):
    """(kernels inside the window, ``analyze_kernels`` of them): ``table.window_kernel_table``."""
    return window_kernel_table(kernels, window, th, max_rows)


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
