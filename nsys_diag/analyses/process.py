"""The shared ending of a process's analyses, in memory or streamed: ``finish_process`` (throughput,
verdict inputs and verdict, MFU, scaling → ``ProcessAnalysis``) and ``finish_suite`` (headline
process, DataLoader workers, capability probe → ``AnalysisSuite``).

``suite.analyze_process`` calls ``finish_process`` on the results of its task graph, the streamed
assembly (``analyses/engine/assemble.py``) on the results merged from the chunk partials: the
same code ends both runs.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Union

from nsys_diag.analyses.diagnosis import data_quality as dq
from nsys_diag.analyses.base import Unavailable, is_available
from nsys_diag.analyses.capabilities import Capabilities, probe
from nsys_diag.analyses.timeline.busy import Window, device_ids
from nsys_diag.analyses.communication import CommunicationResult
from nsys_diag.analyses.diagnosis.data_quality import QualityItem
from nsys_diag.analyses.gaps.causes import GapsResult, UtilizationResult
from nsys_diag.analyses.gpu_metrics import GpuMetricsResult
from nsys_diag.analyses.kernels.gpu_fill import GpuFillResult, has_kernel_rows, process_gpu_fill
from nsys_diag.analyses.kernels.labels import without_parameters
from nsys_diag.analyses.kernels.table import KernelsResult
from nsys_diag.analyses.diagnosis.program import ProgramResult, analyze_program
from nsys_diag.analyses.loader_workers import LoaderWorkersResult
from nsys_diag.analyses.job.mfu import analyze_mfu
from nsys_diag.analyses.job.scaling import analyze_scaling, replay_scaling
from nsys_diag.analyses.memory import MemoryResult
from nsys_diag.analyses.steps.phases import PhasesResult
from nsys_diag.analyses.steps.detection import StepsResult
from nsys_diag.analyses.kernels.tensor_cores import TensorCoreResult
from nsys_diag.analyses.throughput import ThroughputResult, analyze_throughput
from nsys_diag.analyses.timeline.strips import TimelineResult
from nsys_diag.analyses.transfers import TransfersResult
from nsys_diag.analyses.diagnosis.pricing import made_of, savings_of, unavailable_reason
from nsys_diag.analyses.diagnosis.verdict import Verdict, VerdictInputs, diagnose
from nsys_diag.analyses.engine.declaration import Declaration, FinishContext, declare
from nsys_diag.analyses.roofline.results import ROOFLINE_SPEC  # the section spec only
from nsys_diag.model.vocabulary import gpu_placeholder
from nsys_diag.model.bundle import TraceBundle
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import GAP_CAUSES, WIDEN_WINDOW_HINT
from nsys_diag.analyses.capture_facts import (blind_launches, capture_missing, capture_work,
                                              outside_window)

if TYPE_CHECKING:  # imported at run time only with ncu data
    from nsys_diag.analyses.roofline.ncu_join import RooflineJoinResult
    from nsys_diag.analyses.roofline.analysis import RooflineResult

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
    nvtx_ranges: Any = None  # NvtxRangesResult | Unavailable (steps/nvtx_ranges.py); None: not analysed
    timeline_lanes: Any = None  # LanesResult | Unavailable (timeline/lanes.py); None: not analysed
    gpu_fill: GpuFillResult | Unavailable | None = None  # launch shapes vs the GPU's SMs
    replay: Any = None  # the causal replay (``app/replay.py`` sets it after the analysis)

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
    program: ProgramResult | None = None  # what ran (framework, libraries, techniques)

    @property
    def headline(self) -> ProcessAnalysis:
        return self.processes[self.headline_index]


# ------------------------------------------------------------------------------------ helpers
def _gpu_list(bundle: TraceBundle) -> list[dict]:
    """trace.gpus: the GPUs table plus any device id seen in GPU work but absent from it. A GPU
    the input does not name is ``GPU <id>`` (``gpu_placeholder``) with ``name_known`` false."""
    g = bundle.gpus
    rows = {}
    for r in g.to_dict("records"):  # one row per GPU
        cc = f"{r['cc_major']}.{r['cc_minor']}" if r["cc_major"] >= 0 else None
        bw = r["memory_bandwidth_bytes_per_s"]
        name = str(r["name"])
        rows[int(r["device_id"])] = {
            "id": int(r["device_id"]), "name": name or gpu_placeholder(int(r["device_id"])),
            "name_known": bool(name),
            "sm_count": int(r["sm_count"]) if r["sm_count"] >= 0 else None,
            "memory_bytes": int(r["total_memory_bytes"]) if r["total_memory_bytes"] >= 0 else None,
            "memory_bandwidth_bytes_per_s": float(bw) if bw == bw else None,
            "compute_capability": cc}
    for d in device_ids(bundle.kernels, bundle.memcpy, bundle.memset):
        if d not in rows:
            rows[d] = {"id": d, "name": gpu_placeholder(d), "name_known": False,
                       "sm_count": None, "memory_bytes": None,
                       "memory_bandwidth_bytes_per_s": None, "compute_capability": None}
    return [rows[k] for k in sorted(rows)]

def roofline_usable(roofline) -> bool:
    """Available, and (when joined to the timeline) matching enough of its kernel time."""
    matched = getattr(roofline, "matched_share", None)
    return is_available(roofline) and (
        matched is None or matched >= ROOFLINE_MIN_MATCHED)


def tensor_counters(roofline) -> dict | None:
    share = getattr(roofline, "tensor_core_share_by_time", None)
    if roofline_usable(roofline) and share is not None:
        return {"tensor_core_share_by_time": float(share), "source": "ncu"}
    return None

# ----------------------------------------------------------------------------------- process
def process_identity(bundle: TraceBundle, gpid: int) -> tuple[int, str]:
    """(OS pid, process name) of ``gpid`` (-1, '' for the whole bundle)."""
    pid, pname = -1, ""
    if gpid != -1:
        pid = int(gpid >> 24) & 0xFFFFFF
        pr = bundle.processes.loc[bundle.processes["global_pid"].to_numpy() == gpid]
        if len(pr):
            pid, pname = int(pr["pid"].iloc[0]), str(pr["name"].iloc[0])
    return pid, pname

def _scaling(gpu_name: str | None, steps, phases, communication, options: AnalyzeOptions):
    """``analyze_scaling`` of one process: its mean step, exposed communication per step and
    backward phase time (the overlap the all-reduce could hide behind)."""
    mean = steps.mean_ms if is_available(steps) else None
    exposed = None
    if is_available(communication) and mean and communication.exposed_share_of_step is not None:
        exposed = communication.exposed_share_of_step * mean
    return analyze_scaling(step_ms=mean, exposed_comm_ms=exposed,
                           backward_ms=phase_totals(phases)[1].get("backward"),
                           batch_size=options.batch_size, grad_bytes=options.grad_bytes,
                           gpu_name=gpu_name, link_gbps=options.link_gbps)


def scaling_with_replay(p: ProcessAnalysis, batch_size: int | None
                        ) -> tuple[list[dict], str | None]:
    """``p.scaling`` from its replay's data-parallel projection (``replay_scaling``) when the
    replay made one, else ``p.scaling`` as it is (the formula rows, or the reason)."""
    replay = p.replay
    projection = getattr(replay, "scaling", ()) if getattr(replay, "available", False) else ()
    if not projection:
        return p.scaling
    return replay_scaling(projection, ranks=int(replay.ranks or 0), batch_size=batch_size,
                          hidden_share=getattr(p.communication, "overlap_share", None)), None


def scaling_facts(rows: list[dict]) -> tuple:
    """The verdict's view of ``scaling[]``: (gpus, step ms, efficiency, exposed ms, basis) per
    row beyond one GPU."""
    return tuple((int(r["gpus"]), float(r["step_ms"]), r.get("efficiency"), r.get("exposed_ms"),
                  str(r.get("basis", "formula"))) for r in rows if int(r["gpus"]) > 1)


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

def _get(result, key, default=None):
    """A value from a result's JSON (robust to how each analysis names its fields)."""
    if not is_available(result):
        return default
    j = result.to_json()
    return j.get(key, default) if isinstance(j, dict) else default


def _pageable_rates(transfers, steps_ok: bool, step_ms, window_ms: float
                    ) -> tuple[float | None, float | None, float | None]:
    """(pageable copy bytes per step, per second without steps, pageable copy time over the
    window — a share, capped at 1) over the analysed window (ms in, bytes and shares out)."""
    if not is_available(transfers) or window_ms <= 0:
        return None, None, None
    b = float(getattr(transfers, "pageable_bytes", 0) or 0)
    share = min(float(getattr(transfers, "pageable_time_ns", 0) or 0) / 1e6 / window_ms, 1.0)
    if steps_ok and step_ms:
        return b * step_ms / window_ms, None, share
    return None, b / (window_ms / 1e3), share


def with_pageable_rates(transfers, vin) -> Any:
    """``transfers`` with the pageable rates the verdict read (``vin``) when it is available."""
    if not isinstance(transfers, TransfersResult) or not transfers.available:
        return transfers
    return dataclasses.replace(transfers, pageable_bytes_per_step=vin.pageable_bytes_per_step,
                               pageable_bytes_per_s=vin.pageable_bytes_per_s,
                               pageable_window_share=vin.pageable_window_share)


def _gap_detail(gaps) -> dict[str, str]:
    detail = getattr(gaps, "by_cause_detail", None) if is_available(gaps) else None
    return {str(k): str(v) for k, v in (detail or {}).items() if v}


def _periodic(steps) -> str | None:
    for o in getattr(steps, "outliers", ()) or ():  # a handful
        if str(o.reason).startswith("periodic"):
            return str(o.reason)
    return None


def phase_totals(phases) -> tuple[dict[str, float], dict[str, float]]:
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
    if not roofline_usable(roofline):
        return None, None, None
    tw = getattr(roofline, "time_weighted", {}) or {}
    return tw.get("memory_bound"), tw.get("compute_bound"), getattr(roofline, "confidence", None)


def verdict_inputs(bundle, *, gpid: int | None = None, steps, phases, util, gaps, kernels, tensor_cores, gpu_metrics,
                   communication, memory, roofline, window, quality, has_kernels,
                   transfers=None, gpu_fill=None) -> VerdictInputs:
    """The numbers ``diagnose`` reads, gathered from the process's results (see VerdictInputs)."""
    steps_ok = is_available(steps)
    phases_ok = is_available(phases)
    phase_share, phase_ms = phase_totals(phases)
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
    comm_share = comm_hidden = None
    if is_available(communication) and communication.per_device:
        comm_hidden = communication.overlap_share
        comm_share = communication.exposed_share_of_step
        if comm_share is None:
            comm_share = communication.exposed_share
    mem_peak = getattr(memory, "max_peak_share", None) if is_available(memory) else None
    roof_mem, roof_comp, roof_conf = _roofline_facts(roofline)
    window_ms = window.duration_ns / 1e6
    outside = outside_window(bundle, gpid, has_kernels, window)
    pageable = _pageable_rates(transfers, steps_ok, steps.mean_ms if steps_ok else None, window_ms)
    # the file's load warnings lower confidence as the process's own items do (the report
    # shows both beside the verdict)
    warnings, no_steps_warnings = dq.warning_counts((*quality, *dq.from_load_warnings(bundle.warnings)))
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
        comm_exposed_share=comm_share, comm_hidden_share=comm_hidden,
        memory_peak_share=mem_peak,
        data_warnings=warnings, no_steps_warnings=no_steps_warnings,
        capture_hints=(() if has_kernels else (WIDEN_WINDOW_HINT,) if outside is not None
                       else tuple(dq.capture_hints(bundle))),
        window_selection_empty=outside is not None,
        missing=capture_missing(bundle, has_kernels, outside),
        launch_calls_without_kernels=(blind_launches(bundle) if not has_kernels else None),
        gap_detail=_gap_detail(gaps),
        kernel_count=(int(kernels.kernel_count) if hasattr(kernels, "kernel_count") else None),
        kernel_time_ms=(float(kernels.total_ns) / 1e6 if hasattr(kernels, "total_ns") else None),
        analysed_steps=steps.analysed_count if steps_ok else 0,
        phase_names=tuple((r.name, r.canonical) for r in phases.rows) if phases_ok else (),
        periodic_slow_step=_periodic(steps) if steps_ok else None,
        pageable_bytes_per_step=pageable[0], pageable_bytes_per_s=pageable[1],
        pageable_window_share=pageable[2],
        has_counters=bool(metrics) or roof_mem is not None,
        tc_engaged=getattr(tensor_cores, "engaged", None) if tc_ok else None,
        tensor_active_during_gemm=(getattr(tensor_cores, "tensor_active_during_gemm", None)
                                   if tc_ok else None),
        **_fill_facts(gpu_fill),
        **capture_work(bundle, gpid, util, window),
        **_program_facts(bundle),
    )


def _program_facts(bundle) -> dict:
    """What ran, for the advice's wording (``program.analyze_program``; file level)."""
    program = analyze_program(bundle)
    return {"framework": program.framework, "techniques": program.techniques,
            "trace_format": bundle.meta.format}


def _fill_facts(gpu_fill) -> dict:
    """The ``gpu_fill`` numbers the latency rule reads (none when it is unavailable)."""
    if not isinstance(gpu_fill, GpuFillResult):
        return {}
    top = next((k for k in gpu_fill.kernels if k.underfilled), None)  # ≤ 20 rows
    return {"underfilled_share": gpu_fill.underfilled_share,
            "tiny_block_share": gpu_fill.tiny_block_share,
            "small_grid_share": gpu_fill.small_grid_share,
            "fill_top": ((without_parameters(top.name), top.blocks, top.threads_per_block,
                          gpu_fill.sm_count, top.blocks_per_sm, top.fill)
                         if top is not None else ())}


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


def diagnose_with_replay(p: ProcessAnalysis, th: Thresholds) -> tuple[VerdictInputs, Verdict]:
    """``p``'s verdict inputs and verdict again, now with its replay (``p.replay``, set after the
    analysis): the what-if savings per finding cause and the critical path's top kinds
    (``pricing``), or — the replay unavailable or pricing nothing — the reason, which the
    fallback verdict states in its evidence."""
    savings = savings_of(p.replay)
    rows: list[dict] = getattr(p, "scaling", ([], None))[0]  # a stand-in may have none
    base = dataclasses.replace(p.verdict_inputs, scaling=scaling_facts(rows))
    if savings:
        vin = dataclasses.replace(base, savings=savings, replay_reason=None,
                                  made_of=made_of(p.replay))
    else:
        reason = (unavailable_reason(p.replay) if not getattr(p.replay, "available", False)
                  else "the replay has no what-ifs for this process"
                  + (" (it replayed a window: no steps)"
                     if getattr(p.replay, "basis", "") == "window" else ""))
        vin = dataclasses.replace(base, savings=None, replay_reason=reason, made_of=())
    return vin, diagnose(vin, th)


# ------------------------------------------------------------------------------------ endings
PROCESS_RESULTS = ("steps", "phases", "utilization", "gaps", "kernels", "tensor_cores",
                   "transfers", "gpu_metrics", "communication", "memory", "timeline", "roofline",
                   "quality")
"""The results ``finish_process`` reads (``kernels``: the ``KernelsResult`` of the window's
kernels; ``quality``: the process's data-quality items)."""


def finish_process(bundle: TraceBundle, gpid: int, devices: tuple[int, ...], window: Window,
                   results: Mapping[str, Any], options: AnalyzeOptions, th: Thresholds
                   ) -> ProcessAnalysis:
    """The ``ProcessAnalysis`` of process ``gpid`` from its analyses' ``results``
    (``PROCESS_RESULTS``): throughput, verdict inputs and verdict, MFU and scaling. The same
    ending for the in-memory run (``suite.analyze_process``) and the streamed one."""
    r = {**results, "quality": dq.without_repeats(results["quality"], bundle.warnings)
         + dq.memory_quality(results["memory"])}
    pid, pname = process_identity(bundle, gpid)
    gpu_fill = process_gpu_fill(bundle.launch_shapes, bundle.gpus, bundle.sm_limits, gpid,
                                devices, trace_format=bundle.meta.format,
                                kernel_rows=has_kernel_rows(bundle))
    steps, phases, kres = r["steps"], r["phases"], r["kernels"]
    throughput = analyze_throughput(steps, phases, batch_size=options.batch_size)
    vin = verdict_inputs(bundle, gpid=gpid, steps=steps, phases=phases, util=r["utilization"],
                         gaps=r["gaps"],
                         kernels=kres, tensor_cores=r["tensor_cores"], gpu_metrics=r["gpu_metrics"],
                         communication=r["communication"], memory=r["memory"],
                         roofline=r["roofline"], window=window, quality=r["quality"],
                         has_kernels=bool(getattr(kres, "kernel_count", 0)),
                         transfers=r["transfers"], gpu_fill=gpu_fill)
    mfu = _mfu(bundle, devices, steps, r["tensor_cores"], options)
    scaling = _scaling(_gpu_name(bundle, devices), steps, phases, r["communication"], options)
    vin = dataclasses.replace(vin, scaling=scaling_facts(scaling[0]))
    verdict = diagnose(vin, th)
    return ProcessAnalysis(
        global_pid=gpid, pid=pid, name=pname, devices=devices, window=window, steps=steps,
        phases=phases, utilization=r["utilization"], gaps=r["gaps"], kernels=kres,
        tensor_cores=r["tensor_cores"], transfers=with_pageable_rates(r["transfers"], vin),
        gpu_metrics=r["gpu_metrics"], throughput=throughput, communication=r["communication"], memory=r["memory"],
        timeline=r["timeline"], verdict=verdict, verdict_inputs=vin, data_quality=r["quality"],
        roofline=r["roofline"], mfu=mfu, scaling=scaling, nvtx_ranges=r.get("nvtx_ranges"),
        timeline_lanes=r.get("timeline_lanes"), gpu_fill=gpu_fill)


LoaderOf = Callable[[Window, "int | None"], "LoaderWorkersResult | Unavailable | None"]
"""``loader_of(window, owner)``: the DataLoader workers over ``window`` (of process ``owner``;
None: every worker of the file)."""


def _with_workers(procs: list[ProcessAnalysis], head: int, th: Thresholds, loader_of: LoaderOf
                  ) -> tuple[list[ProcessAnalysis], LoaderWorkersResult | Unavailable | None]:
    """The processes with their DataLoader workers (verdict inputs and ``loader``), and the
    headline process's workers (the top-level ``loader``). One GPU process: every worker of the
    file over its window (one call); several: each process's own workers over its own window."""
    if len(procs) < 2 or procs[head].global_pid == -1:
        found = [loader_of(procs[head].window, None)] * len(procs)
    else:
        found = [loader_of(p.window, p.global_pid) for p in procs]
    out = []
    for p, ld in zip(procs, found):  # one per GPU process
        if isinstance(ld, LoaderWorkersResult):  # the input rule says whether workers keep up
            p = _with_loader(p, ld, th)
        out.append(dataclasses.replace(p, loader=ld))
    return out, found[head]


def finish_suite(bundle: TraceBundle, procs: list[ProcessAnalysis], roofline: AnyRoofline,
                 options: AnalyzeOptions, th: Thresholds, *, loader_of: LoaderOf
                 ) -> AnalysisSuite:
    """The ``AnalysisSuite`` of the processes (``finish_process`` each): the headline process,
    the DataLoader workers (``loader_of``), the file-level roofline, data quality and capture
    hints, the capability probe."""
    head = _headline_index(procs)
    procs, loader = _with_workers(procs, head, th, loader_of)
    if roofline is not None and is_available(roofline):
        roofline = procs[head].roofline
    return AnalysisSuite(
        processes=tuple(procs), headline_index=head, gpus=_gpu_list(bundle), roofline=roofline,
        data_quality=dq.from_load_warnings(bundle.warnings),
        capture_hints=dq.capture_hints(bundle), thresholds=th, options=options,
        capabilities=probe(bundle, options, th,
                           analysed={p.global_pid: (p.steps, p.phases) for p in procs}),
        loader=loader, program=analyze_program(bundle))


# -------------------------------------------------------------------------------- declaration
def _finish_roofline(states, ctx: FinishContext) -> AnyRoofline:
    """The file's ncu roofline weighted by this process's kernel time (from its kernel table)."""
    roofline = ctx.roofline
    if not is_available(roofline):
        return roofline
    from nsys_diag.analyses.roofline.ncu_join import (join_roofline_to_timeline,  # ncu data only
                                                      timeline_from_name_table)

    joined = join_roofline_to_timeline(
        roofline, None, timeline=timeline_from_name_table(ctx.results["kernel_table"].table))
    return joined if is_available(joined) else roofline


def process_roofline(roofline, k_win):
    """The ncu roofline weighted by this process's kernel time (when it can be joined)."""
    if not is_available(roofline):
        return roofline
    from nsys_diag.analyses.roofline.ncu_join import join_roofline_to_timeline  # only with ncu data

    joined = join_roofline_to_timeline(roofline, k_win)
    # nothing to weight with: keep ncu's own time weights
    return joined if is_available(joined) else roofline


ROOFLINE = declare(Declaration("roofline", section="roofline", spec=ROOFLINE_SPEC,
                               reads=("kernel_table",), finish=_finish_roofline, rank=11,
                               whole_reads=("kernel_table",),
                               whole=lambda p, kt: process_roofline(p.roofline, kt[0])))
"""The ncu roofline of the process (no per-span work: it joins the merged kernel table)."""
