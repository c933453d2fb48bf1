"""Run every analysis on a bundle: ``run_suite(bundle, options, th) -> AnalysisSuite``.

A file holding several processes (e.g. one per rank) is analysed **per process**: each process
gets its own steps, window, phases, utilization, gaps, kernels … and verdict. The headline (what
the top of every report shows) is the slowest process: the largest mean step time, or — without
steps — the one with the most GPU compute time. Processes analysed: those with GPU work (kernels,
copies); when none has any, those with NVTX ranges; when there is nothing, the whole bundle once
(which then yields ``insufficient_data``).

Each analysis is called explicitly here (no registry). Data an analysis needs but the export lacks
gives ``Unavailable(reason, hint)``; unexpected exceptions are not swallowed.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

import numpy as np
import pandas as pd

from nsys_diag.analyses.diagnosis import data_quality as dq
from nsys_diag.analyses.arrays import all_equal, process_rows, take_rows
from nsys_diag.analyses.base import Unavailable, is_available
from nsys_diag.analyses.capabilities import Capabilities, analysed_process_ids, probe
from nsys_diag.analyses.timeline.busy import Window, choose_window, device_busy, device_ids
from nsys_diag.analyses.communication import CommunicationResult, analyze_communication
from nsys_diag.analyses.diagnosis.data_quality import QualityItem
from nsys_diag.analyses.roofline.gpu_choice import choose_gpu, roofline_gpu
from nsys_diag.analyses.gaps.causes import (GapsResult, UtilizationResult, analyze_gaps, analyze_utilization,
                                     gap_evidence)
from nsys_diag.analyses.gpu_metrics import GpuMetricsResult, analyze_gpu_metrics
from nsys_diag.analyses.kernels.table import KernelsResult, analyze_kernels
from nsys_diag.analyses.loader_workers import LoaderWorkersResult, analyze_loader_workers
from nsys_diag.analyses.job.mfu import analyze_mfu
from nsys_diag.analyses.job.scaling import analyze_scaling
from nsys_diag.analyses.memory import MemoryResult, analyze_memory
from nsys_diag.analyses.steps.phases import PhasesResult, analyze_phases, explain_outliers
from nsys_diag.analyses.selection import (check_selected_steps, check_step_range, check_steps,
                                           select_device)
from nsys_diag.analyses.steps.detection import StepsResult, analyze_steps
from nsys_diag.analyses.taskgraph import Task, run_tasks
from nsys_diag.analyses.kernels.tensor_cores import TensorCoreResult, analyze_tensor_cores
from nsys_diag.analyses.throughput import ThroughputResult, analyze_throughput
from nsys_diag.analyses.timeline.strips import TimelineResult, build_timeline
from nsys_diag.analyses.transfers import TransfersResult, analyze_transfers
from nsys_diag.analyses.diagnosis.verdict import Verdict, VerdictInputs, diagnose
from nsys_diag.model.bundle import TraceBundle
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import GAP_CAUSES, HINT_CAPTURE_CUDA

if TYPE_CHECKING:  # imported at run time only with ncu data (see run_suite)
    from nsys_diag.analyses.roofline.ncu_join import RooflineJoinResult
    from nsys_diag.analyses.roofline.analysis import RooflineResult

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
AnyRoofline = Union["RooflineResult", "RooflineJoinResult", Unavailable, None]
"""The ncu roofline of a bundle (``analyze_roofline``), of one process when joined to its
kernels (``ncu_join``), or None without ncu data."""
ROOFLINE_MIN_MATCHED = 0.5
"""The ncu roofline feeds the verdict only when its kernels match ≥ 50% of the timeline's kernel
time (an ncu capture of another program, or of a few kernels, must not decide)."""


@dataclass
class ProcessAnalysis:
    """Every analysis result for one process (``global_pid`` -1: the whole bundle)."""

    global_pid: int
    pid: int
    name: str
    devices: tuple[int, ...]
    window: Window
    steps: StepsResult | Unavailable
    phases: PhasesResult | Unavailable
    utilization: UtilizationResult
    gaps: GapsResult | Unavailable
    kernels: KernelsResult
    tensor_cores: TensorCoreResult
    transfers: TransfersResult
    gpu_metrics: GpuMetricsResult | Unavailable
    throughput: ThroughputResult | Unavailable
    communication: CommunicationResult | Unavailable
    memory: MemoryResult | Unavailable
    timeline: TimelineResult | None
    verdict: Verdict
    verdict_inputs: VerdictInputs
    data_quality: list[QualityItem] = field(default_factory=list)
    roofline: AnyRoofline = None
    mfu: dict | None = None
    scaling: tuple[list[dict], str | None] = ([], "not analysed")
    loader: LoaderWorkersResult | Unavailable | None = None  # its own DataLoader workers

    def summary(self) -> dict:
        """One row of the per-process table."""
        steps = self.steps if isinstance(self.steps, StepsResult) else None
        util = self.utilization
        return {
            "pid": int(self.pid), "name": self.name, "devices": list(self.devices),
            "steps_count": steps.count if steps else 0,
            "steps_mean_ms": steps.mean_ms if steps else None,
            "steps_median_ms": steps.median_ms if steps else None,
            "utilization": util.utilization if is_available(util) and util.per_device else None,
            "window_ms": self.window.duration_ns / 1e6,
            "verdict_code": self.verdict.code,
            "headline": self.verdict.headline,
            "confidence": self.verdict.confidence,
        }


@dataclass
class AnalysisSuite:
    processes: tuple[ProcessAnalysis, ...]
    headline_index: int
    gpus: list[dict]
    roofline: AnyRoofline
    data_quality: list[QualityItem]
    capture_hints: list[str]
    thresholds: Thresholds
    options: AnalyzeOptions
    capabilities: Capabilities | None = None  # what the export can answer (shared with inspect)
    loader: LoaderWorkersResult | Unavailable | None = None  # DataLoader workers (whole file)

    @property
    def headline(self) -> ProcessAnalysis:
        return self.processes[self.headline_index]


# ------------------------------------------------------------------------------------ helpers
def _gpu_list(bundle: TraceBundle) -> list[dict]:
    """trace.gpus: the GPUs table plus any device id seen in GPU work but absent from it."""
    g = bundle.gpus
    rows = {}
    for r in g.to_dict("records"):  # one row per GPU
        cc = f"{r['cc_major']}.{r['cc_minor']}" if r["cc_major"] >= 0 else None
        bw = r["memory_bandwidth_bytes_per_s"]
        rows[int(r["device_id"])] = {
            "id": int(r["device_id"]), "name": str(r["name"]) or f"GPU {int(r['device_id'])}",
            "sm_count": int(r["sm_count"]) if r["sm_count"] >= 0 else None,
            "memory_bytes": int(r["total_memory_bytes"]) if r["total_memory_bytes"] >= 0 else None,
            "memory_bandwidth_bytes_per_s": float(bw) if bw == bw else None,
            "compute_capability": cc}
    for d in device_ids(bundle.kernels, bundle.memcpy, bundle.memset):
        if d not in rows:
            rows[d] = {"id": d, "name": f"GPU {d}", "sm_count": None, "memory_bytes": None,
                       "memory_bandwidth_bytes_per_s": None, "compute_capability": None}
    return [rows[k] for k in sorted(rows)]


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


def _roofline_usable(roofline) -> bool:
    """Available, and (when joined to the timeline) matching enough of its kernel time."""
    matched = getattr(roofline, "matched_share", None)
    return is_available(roofline) and (
        matched is None or matched >= ROOFLINE_MIN_MATCHED)


def _tensor_counters(roofline) -> dict | None:
    share = getattr(roofline, "tensor_core_share_by_time", None)
    if _roofline_usable(roofline) and share is not None:
        return {"tensor_core_share_by_time": float(share), "source": "ncu"}
    return None


# ----------------------------------------------------------------------------------- process
def _process_identity(bundle: TraceBundle, gpid: int) -> tuple[int, str]:
    """(OS pid, process name) of ``gpid`` (-1, '' for the whole bundle)."""
    pid, pname = -1, ""
    if gpid != -1:
        pid = int(gpid >> 24) & 0xFFFFFF
        pr = bundle.processes.loc[bundle.processes["global_pid"].to_numpy() == gpid]
        if len(pr):
            pid, pname = int(pr["pid"].iloc[0]), str(pr["name"].iloc[0])
    return pid, pname


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
            kt[0], metrics_p, th=th, counters=_tensor_counters(roof),
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
    pid, pname = _process_identity(bundle, gpid)
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
    k_win, kres = r["kernel_table"]
    steps, phases = r["steps"], r["phases"]
    throughput = analyze_throughput(steps, phases, batch_size=options.batch_size)

    quality = dq.process_quality(steps=steps, phases=phases, kernels=kernels, window=window,
                                 profiler_overhead_rows=int(bundle.meta.tables.get("PROFILER_OVERHEAD", 0)))
    if bundle.meta.format == "ncu-csv":  # a kernel CSV has no timeline: no steps is expected, not a warning
        quality = [q for q in quality if q.code != "no_steps"]
    vin = verdict_inputs(bundle, steps=steps, phases=phases, util=r["utilization"], gaps=r["gaps"],
                         kernels=kres, tensor_cores=r["tensor_cores"], gpu_metrics=r["gpu_metrics"],
                         communication=r["communication"], memory=r["memory"],
                         roofline=r["roofline"], window=window, quality=quality,
                         has_kernels=len(k_win) > 0, transfers=r["transfers"])
    verdict = diagnose(vin, th)
    mfu = _mfu(bundle, devices, steps, r["tensor_cores"], options)
    scaling = _scaling(_gpu_name(bundle, devices), steps, phases, r["communication"], options)
    return ProcessAnalysis(
        global_pid=gpid, pid=pid, name=pname, devices=devices, window=window, steps=steps,
        phases=phases, utilization=r["utilization"], gaps=r["gaps"], kernels=kres,
        tensor_cores=r["tensor_cores"], transfers=r["transfers"], gpu_metrics=r["gpu_metrics"],
        throughput=throughput, communication=r["communication"], memory=r["memory"],
        timeline=r["timeline"], verdict=verdict, verdict_inputs=vin, data_quality=quality,
        roofline=r["roofline"], mfu=mfu, scaling=scaling)


def _scaling(gpu_name: str | None, steps, phases, communication, options: AnalyzeOptions):
    """``analyze_scaling`` of one process: its mean step, exposed communication per step and
    backward phase time (the overlap the all-reduce could hide behind)."""
    mean = steps.mean_ms if is_available(steps) else None
    exposed = None
    if is_available(communication) and mean and communication.exposed_share_of_step is not None:
        exposed = communication.exposed_share_of_step * mean
    return analyze_scaling(step_ms=mean, exposed_comm_ms=exposed,
                           backward_ms=_phase_totals(phases)[1].get("backward"),
                           batch_size=options.batch_size, grad_bytes=options.grad_bytes,
                           gpu_name=gpu_name, link_gbps=options.link_gbps)


def _gpu_name(bundle: TraceBundle, devices: tuple[int, ...]) -> str | None:
    """The name of the process's first GPU as the export gives it (None when unknown)."""
    if not len(bundle.gpus) or not devices:
        return None
    names = bundle.gpus.loc[bundle.gpus["device_id"].isin(devices), "name"].astype(str).tolist()
    return names[0] if names else None


def _mfu(bundle: TraceBundle, devices: tuple[int, ...], steps, tensor_cores,
         options: AnalyzeOptions) -> dict:
    """The ``mfu`` section of one process: its median step against its first GPU's dense peak."""
    return analyze_mfu(
        step_ms=steps.median_ms if is_available(steps) else None, batch_size=options.batch_size,
        flops_per_sample=options.model_flops_per_sample,
        flops_per_step=options.model_flops_per_step, gpu_name=_gpu_name(bundle, devices),
        tensor_core_share=getattr(tensor_cores, "share_of_kernel_time", None)
        if is_available(tensor_cores) else None)


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


def _get(result, key, default=None):
    """A value from a result's JSON (robust to how each analysis names its fields)."""
    if not is_available(result):
        return default
    j = result.to_json()
    return j.get(key, default) if isinstance(j, dict) else default


def _pageable_rates(transfers, steps_ok: bool, step_ms, window_ms: float
                    ) -> tuple[float | None, float | None]:
    """(pageable copy bytes per step, per second without steps) over the analysed window."""
    if not is_available(transfers) or window_ms <= 0:
        return None, None
    b = float(getattr(transfers, "pageable_bytes", 0) or 0)
    if steps_ok and step_ms:
        return b * step_ms / window_ms, None
    return None, b / (window_ms / 1e3)


def _gap_detail(gaps) -> dict[str, str]:
    detail = getattr(gaps, "by_cause_detail", None) if is_available(gaps) else None
    return {str(k): str(v) for k, v in (detail or {}).items() if v}


def _periodic(steps) -> str | None:
    for o in getattr(steps, "outliers", ()) or ():  # a handful
        if str(o.reason).startswith("periodic"):
            return str(o.reason)
    return None


def _phase_totals(phases) -> tuple[dict[str, float], dict[str, float]]:
    """Share of the step and mean ms per step of each canonical phase (empty without phases)."""
    share: dict[str, float] = {}
    ms: dict[str, float] = {}
    if is_available(phases):
        for r in phases.rows:  # ≤ 22 rows
            share[r.canonical] = share.get(r.canonical, 0.0) + r.share
            ms[r.canonical] = ms.get(r.canonical, 0.0) + r.mean_ms
    return share, ms


def _roofline_facts(roofline) -> tuple[float | None, float | None, str | None]:
    """(memory-bound share, compute-bound share, confidence) of a usable ncu roofline."""
    if not _roofline_usable(roofline):
        return None, None, None
    tw = getattr(roofline, "time_weighted", {}) or {}
    return tw.get("memory_bound"), tw.get("compute_bound"), getattr(roofline, "confidence", None)


def _missing(bundle, has_kernels: bool) -> tuple[str, ...]:
    """What the capture lacks for a diagnosis, in words (``insufficient_data`` headlines)."""
    missing = []
    if not bundle.has_cuda:
        missing.append("the export holds no CUDA kernels or copies")
    elif not has_kernels:
        missing.append("no CUDA kernel ran in the analysed window")
    if not bundle.has_nvtx:
        missing.append("no NVTX ranges (steps and phases cannot be found)")
    return tuple(missing)


def verdict_inputs(bundle, *, steps, phases, util, gaps, kernels, tensor_cores, gpu_metrics,
                   communication, memory, roofline, window, quality, has_kernels,
                   transfers=None) -> VerdictInputs:
    """The numbers ``diagnose`` reads, gathered from the process's results (see VerdictInputs)."""
    steps_ok = is_available(steps)
    phases_ok = is_available(phases)
    phase_share, phase_ms = _phase_totals(phases)
    gap_share = {}
    if is_available(gaps):
        causes = tuple(dict.fromkeys(GAP_CAUSES + tuple(getattr(gaps, "by_cause_ns", {}) or {})))
        gap_share = {c: gaps.cause_share(c) for c in causes}
    cat_share = {}
    small = 0.0
    if is_available(kernels):
        cat_share = {str(r["category"]): float(r["share"]) for r in kernels.categories.to_dict("records")}
        small = float(kernels.small_fraction or 0.0)
    overall = (_get(gpu_metrics, "overall") or {})
    metrics = {k: overall.get(k) for k in ("sm_active", "tensor_active", "dram_bandwidth")
               if overall.get(k) is not None} or None
    tc_ok = is_available(tensor_cores)
    non_tc = tuple((k.get("name", ""), k.get("share")) for k in
                   (getattr(tensor_cores, "non_tc_gemm_kernels", ()) or ())) if tc_ok else ()
    comm_share = None
    if is_available(communication) and communication.per_device:
        comm_share = communication.exposed_share_of_step
        if comm_share is None:
            comm_share = communication.exposed_share
    mem_peak = getattr(memory, "max_peak_share", None) if is_available(memory) else None
    roof_mem, roof_comp, roof_conf = _roofline_facts(roofline)
    window_ms = window.duration_ns / 1e6
    pageable = _pageable_rates(transfers, steps_ok, steps.mean_ms if steps_ok else None, window_ms)
    return VerdictInputs(
        has_kernels=bool(has_kernels),
        window_ms=window.duration_ns / 1e6,
        step_ms=steps.mean_ms if steps_ok else None,
        steps_source=steps.source if steps_ok else None,
        utilization=util.utilization if util.per_device else 0.0,
        copy_only_share=util.copy_only_share if util.per_device else 0.0,
        gap_share=gap_share,
        phase_share=phase_share, phase_ms=phase_ms,
        has_backward="backward" in phase_ms and phase_ms["backward"] > 0,
        small_kernel_frac=small,
        category_share=cat_share,
        tc_share_of_kernel_time=getattr(tensor_cores, "share_of_kernel_time", None) if tc_ok else None,
        non_tc_gemm_share=getattr(tensor_cores, "non_tc_gemm_share", None) if tc_ok else None,
        non_tc_gemm_kernels=non_tc,
        tc_confidence=getattr(tensor_cores, "confidence", None) if tc_ok else None,
        metrics=metrics,
        roofline_memory_share=roof_mem, roofline_compute_share=roof_comp,
        roofline_confidence=roof_conf,
        kernel_level_only=(bundle.meta.format == "ncu-csv"),
        comm_exposed_share=comm_share,
        memory_peak_share=mem_peak,
        data_warnings=sum(1 for q in quality if q.severity == "warning"),
        capture_hints=tuple(dq.capture_hints(bundle)) if not has_kernels else (),
        missing=_missing(bundle, has_kernels),
        gap_detail=_gap_detail(gaps),
        kernel_count=(int(kernels.kernel_count) if hasattr(kernels, "kernel_count") else None),
        kernel_time_ms=(float(kernels.total_ns) / 1e6 if hasattr(kernels, "total_ns") else None),
        analysed_steps=steps.analysed_count if steps_ok else 0,
        phase_names=tuple((r.name, r.canonical) for r in phases.rows) if phases_ok else (),
        periodic_slow_step=_periodic(steps) if steps_ok else None,
        pageable_bytes_per_step=pageable[0], pageable_bytes_per_s=pageable[1],
        has_counters=bool(metrics) or roof_mem is not None,
        tc_engaged=getattr(tensor_cores, "engaged", None) if tc_ok else None,
        tensor_active_during_gemm=(getattr(tensor_cores, "tensor_active_during_gemm", None)
                                   if tc_ok else None),
    )


# ------------------------------------------------------------------------------------- suite
def _headline_index(procs: list[ProcessAnalysis]) -> int:
    means = {i: p.steps.mean_ms for i, p in enumerate(procs)
             if isinstance(p.steps, StepsResult) and p.steps.mean_ms is not None}
    if means:
        return max(means, key=lambda i: means[i])

    def compute(p: ProcessAnalysis) -> int:
        u = p.utilization
        return sum(d.compute_ns for d in u.per_device) if is_available(u) else 0
    return max(range(len(procs)), key=lambda i: compute(procs[i]))


def _with_loader(p: ProcessAnalysis, loader: LoaderWorkersResult, th: Thresholds
                 ) -> ProcessAnalysis:
    """``p`` re-diagnosed with its DataLoader workers in its verdict inputs."""
    vin = dataclasses.replace(p.verdict_inputs, loader=loader.verdict_fact())
    return dataclasses.replace(p, verdict_inputs=vin, verdict=diagnose(vin, th))


def _with_workers(bundle: TraceBundle, procs: list[ProcessAnalysis], head: int, th: Thresholds
                  ) -> tuple[list[ProcessAnalysis], LoaderWorkersResult | Unavailable]:
    """The processes with their DataLoader workers (verdict inputs and ``loader``), and the
    headline process's workers (the top-level ``loader``). One GPU process: every worker of the
    file over its window (one call, as before); several: each process's own workers over its own
    window (``analyze_loader_workers(owner=…)``)."""
    if len(procs) < 2 or procs[head].global_pid == -1:
        loader = analyze_loader_workers(bundle, procs[head].window, th)
        found = [loader] * len(procs)
    else:
        found = [analyze_loader_workers(bundle, p.window, th, owner=p.global_pid) for p in procs]
        loader = found[head]
    out = []
    for p, ld in zip(procs, found):  # one per GPU process
        if isinstance(ld, LoaderWorkersResult):  # the input rule says whether workers keep up
            p = _with_loader(p, ld, th)
        out.append(dataclasses.replace(p, loader=ld))
    return out, loader


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
    head = _headline_index(procs)
    procs, loader = _with_workers(bundle, procs, head, th)
    if roofline is not None and is_available(roofline):
        roofline = procs[head].roofline
    quality = dq.from_load_warnings(bundle.warnings)
    return AnalysisSuite(
        processes=tuple(procs), headline_index=head, gpus=_gpu_list(bundle), roofline=roofline,
        data_quality=quality, capture_hints=dq.capture_hints(bundle), thresholds=th,
        options=options,
        capabilities=probe(bundle, options, th,
                           analysed={p.global_pid: (p.steps, p.phases) for p in procs}),
        loader=loader)
