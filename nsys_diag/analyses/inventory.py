"""What an export holds and what it can support: the facts ``nsys-diag inspect`` shows.

``analyze_inventory(bundle, include_host_info)`` → a frozen ``Inventory`` (no pandas inside);
``Inventory.to_json()`` is the ``inspect --json`` document, rendered by report/inventory_render.py.
Private data (host name, command line, full path) appears only with ``include_host_info``;
environment *values* never appear (only how many variables were captured). Times are integer ns;
the only heuristic is which analyses the captured tables can support (``analyses`` rows, with the
capture flag that would add what is missing). Steps and phases come from the capability probe
(``analyses/capabilities.py``) that ``analyze`` shares, which runs the real step detection.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from nsys_diag.analyses.capabilities import Capabilities, probe
from nsys_diag.analyses.steps.detection import normalize_name
from nsys_diag.model.bundle import TraceBundle
from nsys_diag.model.vocabulary import HINT_KINETO_NOT_IN_FORMAT, KINETO_FORMAT
from nsys_diag.model.vocabulary import (HINT_ADD_NVTX, HINT_CAPTURE_TRACE, HINT_GPU_METRICS,
                                        HINT_MARK_STEPS, HINT_MEMORY_USAGE, HINT_NCU,
                                        HINT_REEXPORT, NSYS_EXPORT_COMMAND, NSYS_FLAG_GPU_METRICS,
                                        NSYS_FLAG_MEMORY_USAGE, NSYS_TRACE_FLAGS)
from nsys_diag.model.jsonsafe import fnum

INSPECT_VERSION = 1
TOP_RANGES = 15
TOP_TABLES = 25

PROFILE_BASE = NSYS_TRACE_FLAGS
FLAG_GPU_METRICS = NSYS_FLAG_GPU_METRICS
FLAG_MEMORY = NSYS_FLAG_MEMORY_USAGE
NVTX_HINT = HINT_ADD_NVTX
NCU_HINT = HINT_NCU


@dataclass(frozen=True)
class Inventory:
    """The facts of one export (JSON types only); field order is the ``inspect --json`` order."""

    path: str
    format: str
    nsys_version: str | None
    schema_version: str | None
    version_note: str | None
    reader: str | None
    time: dict
    gpus: list
    processes: list
    named_threads: int
    cuda: dict
    nvtx: dict
    gpu_metrics: dict
    gpu_memory_events: int
    ncu: dict
    frames: dict
    tables: dict
    tables_total: int
    tables_empty: int
    analyses: list
    capabilities: dict
    capture_hints: list
    warnings: list
    host: dict | None = None

    def to_json(self) -> dict:
        """The ``inspect --json`` document (``host`` only with ``include_host_info``)."""
        out: dict = {"inspect_version": INSPECT_VERSION}
        out.update({k: getattr(self, k) for k in self.__dataclass_fields__ if k != "host"})
        if self.host is not None:
            out["host"] = self.host
        return out


# ------------------------------------------------------------------------------------- build
# ------------------------------------------------------------------------------------- build
def _i(x) -> int:
    return int(x)


def _opt_int(x) -> int | None:
    return None if x is None or int(x) < 0 else int(x)


def _iso_utc(ns: int | None) -> str | None:
    if ns is None:
        return None
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _gpus(bundle: TraceBundle) -> list[dict]:
    per_dev = bundle.kernels["device_id"].value_counts().to_dict() if len(bundle.kernels) else {}
    out = []
    for row in bundle.gpus.to_dict("records"):
        cc = (f"{row['cc_major']}.{row['cc_minor']}" if row["cc_major"] >= 0 and
              row["cc_minor"] >= 0 else None)
        out.append({
            "id": _i(row["device_id"]), "name": row["name"] or None,
            "chip_name": row["chip_name"] or None, "sm_count": _opt_int(row["sm_count"]),
            "clock_hz": _opt_int(row["clock_hz"]),
            "memory_bytes": _opt_int(row["total_memory_bytes"]),
            "memory_bandwidth_bytes_per_s": fnum(row["memory_bandwidth_bytes_per_s"]),
            "compute_capability": cc, "bus_location": row["bus_location"] or None,
            "kernels": _i(per_dev.get(row["device_id"], 0)),
        })
    return out


def _time(bundle: TraceBundle) -> dict:
    starts, ends = [], []
    for name in ("kernels", "memcpy", "memset", "sync", "api", "nvtx"):
        f = getattr(bundle, name)
        if len(f):
            starts.append(int(f["start_ns"].min()))
            ends.append(int(f["end_ns"].max()))
    if len(bundle.nvtx_marks):
        starts.append(int(bundle.nvtx_marks["ts_ns"].min()))
        ends.append(int(bundle.nvtx_marks["ts_ns"].max()))
    m = bundle.meta
    first, last = (min(starts), max(ends)) if starts else (None, None)
    return {
        "capture_start_ns": int(m.capture_start_ns), "capture_end_ns": int(m.capture_end_ns),
        "capture_span_ns": int(m.capture_end_ns - m.capture_start_ns),
        "session_start_utc_ns": m.session_start_utc_ns,
        "session_start_utc": _iso_utc(m.session_start_utc_ns),
        "first_event_ns": first, "last_event_ns": last,
        "event_span_ns": None if first is None or last is None else last - first,
    }


def _count_by(frame: pd.DataFrame, key: str) -> dict:
    return frame[key].value_counts().to_dict() if len(frame) else {}


def _process_name(name: str, include_host_info: bool) -> str | None:
    """Process names can be paths (``/home/me/venv/bin/python``): basename unless host info."""
    if not name:
        return None
    return name if include_host_info else name.rstrip("/").rsplit("/", 1)[-1] or name


def _processes(bundle: TraceBundle, include_host_info: bool) -> list[dict]:
    kern = _count_by(bundle.kernels, "global_pid")
    api = _count_by(bundle.api, "global_pid")
    nvtx = _count_by(bundle.nvtx, "global_pid")
    threads = _count_by(bundle.threads, "pid")
    devices = (bundle.kernels.groupby("global_pid")["device_id"].unique().to_dict()
               if len(bundle.kernels) else {})
    out = []
    for row in bundle.processes.to_dict("records"):
        g = row["global_pid"]
        out.append({"pid": _i(row["pid"]), "name": _process_name(row["name"], include_host_info),
                    "named_threads": _i(threads.get(row["pid"], 0)),
                    "kernels": _i(kern.get(g, 0)), "api_calls": _i(api.get(g, 0)),
                    "nvtx_ranges": _i(nvtx.get(g, 0)),
                    "devices": sorted(int(d) for d in devices.get(g, []))})
    return out


def _nvtx(bundle: TraceBundle) -> dict:
    nv = bundle.nvtx
    view = {"ranges": int(len(nv)), "marks": int(len(bundle.nvtx_marks)),
            "unterminated": int((~nv["closed"]).sum()) if len(nv) else 0,
            "domains": [], "top_ranges": []}
    if not len(nv):
        return view
    doms = nv["domain"].value_counts()
    view["domains"] = [{"name": str(k), "ranges": int(v)} for k, v in doms.items() if v > 0]
    dur = (nv["end_ns"] - nv["start_ns"]).to_numpy(np.int64)
    # Group by the normalised name (", op_id = N" etc. stripped), computed once per category.
    cats = nv["text"].cat.categories
    norm = pd.Index([normalize_name(str(c)) for c in cats])
    norm_codes, norm_uniq = pd.factorize(norm)
    codes = nv["text"].cat.codes.to_numpy()
    text = pd.Categorical.from_codes(np.asarray(norm_codes)[codes], categories=norm_uniq)
    g = pd.DataFrame({"domain": nv["domain"], "text": text, "dur": dur}).groupby(
        ["domain", "text"], observed=True)["dur"].agg(["count", "sum"])
    g = g.sort_values(["sum", "count"], ascending=False).head(TOP_RANGES)
    view["top_ranges"] = [{"domain": str(d), "name": str(t), "count": int(r["count"]),
                           "total_ns": int(r["sum"]), "mean_ns": int(r["sum"] // max(r["count"], 1))}
                          for (d, t), r in g.iterrows()]  # ≤ TOP_RANGES rows
    return view


def _cuda(bundle: TraceBundle) -> dict:
    k, mc = bundle.kernels, bundle.memcpy
    gpu_rows = sum(len(getattr(bundle, f)) for f in ("kernels", "memcpy", "memset", "sync"))
    matched = sum(int((getattr(bundle, f)["launch_start_ns"] >= 0).sum())
                  for f in ("kernels", "memcpy", "memset", "sync"))
    by_kind = {}
    if len(mc):
        agg = mc.groupby("copy_kind", observed=True)["bytes"].agg(["count", "sum"])
        by_kind = {str(kind): {"count": int(r["count"]), "bytes": int(r["sum"])}
                   for kind, r in agg.iterrows()}  # ≤ 6 copy kinds
    return {
        "kernels": int(len(k)),
        "distinct_kernel_names": int(k["name"].nunique()) if len(k) else 0,
        "memcpy": int(len(mc)), "memcpy_bytes": int(mc["bytes"].sum()) if len(mc) else 0,
        "memcpy_by_kind": by_kind,
        "pageable_memcpy": int(((mc["src_kind"] == "pageable") | (mc["dst_kind"] == "pageable")).sum())
        if len(mc) else 0,
        "memset": int(len(bundle.memset)), "sync": int(len(bundle.sync)),
        "api_calls": int(len(bundle.api)),
        "launch_matched_share": (matched / gpu_rows) if gpu_rows else None,
        "graph_kernels": int((k["graph_node_id"] >= 0).sum()) if len(k) else 0,
    }


_CUDA_HINT = HINT_CAPTURE_TRACE


STEP_HINT = HINT_MARK_STEPS


def _steps_row(add, caps: Capabilities, has_gpu_work: bool, has_k: bool, ranges: int,
               cuda_hint: str) -> None:
    """The ``steps_and_phases`` row, from the capability probe (the step and phase detection
    ``analyze`` runs), so ``inspect`` promises exactly what ``analyze`` finds."""
    best = max(caps.processes, key=lambda p: (p.steps, p.phases), default=None)
    if best is not None and best.steps:
        what = (f"{best.steps:,} steps ({best.steps_source})" +
                (f" with {best.phases} named phases" if best.phases else ""))
        if not has_gpu_work:
            add("steps_and_phases", "partial", f"{what}, but no GPU work: CPU-side only", cuda_hint)
        elif best.phases:
            add("steps_and_phases", "yes", what)
        else:
            add("steps_and_phases", "partial", f"{what}; no phase ranges inside the steps",
                NVTX_HINT)
    elif ranges:
        reason = best.steps_reason if best is not None and best.steps_reason else "no steps"
        add("steps_and_phases", "partial", f"{ranges:,} NVTX ranges, but no step found "
            f"({reason}): the analysis covers the whole window, without phases", STEP_HINT)
    elif has_k:
        add("steps_and_phases", "partial",
            "no NVTX ranges: the analysis covers the whole window, without steps or phases",
            NVTX_HINT)
    else:
        add("steps_and_phases", "no", "no NVTX ranges and no kernels", NVTX_HINT)


def _analyses(bundle: TraceBundle, cuda: dict, nvtx: dict,
              caps: Capabilities) -> tuple[list[dict], list[str]]:
    """What the export supports, one row per analysis (``status`` yes/partial/no, ``reason``,
    ``hint`` = what to capture), and the capture hints for what is missing."""
    metrics = set(bundle.gpu_metrics["metric"].astype(str).unique()) if len(bundle.gpu_metrics) else set()
    rows = _timeline_support(bundle, cuda, nvtx, caps) + _metric_support(bundle, cuda, nvtx, metrics)
    return rows, _capture_hints(bundle, nvtx, metrics)


def _timeline_support(bundle: TraceBundle, cuda: dict, nvtx: dict, caps: Capabilities) -> list[dict]:
    """Support rows from the CUDA and NVTX timeline: utilisation, launch attribution, steps and
    phases, transfers, synchronization."""
    has_k = cuda["kernels"] > 0
    has_gpu_work = bundle.has_cuda
    out: list[dict] = []

    def add(name, status, reason, hint=None):
        out.append({"name": name, "status": status, "supported": status != "no",
                    "reason": reason, "hint": hint})

    cuda_hint = _CUDA_HINT
    if has_gpu_work:
        add("gpu_utilization", "yes", "GPU kernels/copies recorded: busy time, idle gaps")
    else:
        add("gpu_utilization", "no", "no CUDA GPU activity in the export", cuda_hint)
    if not has_gpu_work:
        add("launch_attribution", "no", "no CUDA GPU activity in the export", cuda_hint)
    elif cuda["api_calls"] == 0:
        add("launch_attribution", "no", "no CUDA API calls in the export (CPU side missing)",
            cuda_hint)
    elif (cuda["launch_matched_share"] or 0) < 0.999:
        add("launch_attribution", "partial",
            f"{(cuda['launch_matched_share'] or 0):.1%} of GPU work matched to its launching call "
            "(export cut to a time window?)", "export the whole capture")
    else:
        add("launch_attribution", "yes", "every GPU operation matched to its launching API call")
    _steps_row(add, caps, has_gpu_work, has_k, nvtx["ranges"], cuda_hint)
    if cuda["memcpy"]:
        add("transfers", "yes", f"{cuda['memcpy']:,} memcpy rows")
    elif has_gpu_work:
        add("transfers", "yes", "CUDA traced; the program made no memcpy")
    else:
        add("transfers", "no", "no CUDA trace", cuda_hint)
    if cuda["sync"]:
        add("synchronization", "yes", f"{cuda['sync']:,} synchronization rows")
    elif has_gpu_work:
        add("synchronization", "partial", "no synchronization rows recorded")
    else:
        add("synchronization", "no", "no CUDA trace", cuda_hint)
    return out


def _metric_support(bundle: TraceBundle, cuda: dict, nvtx: dict, metrics: set) -> list[dict]:
    """Support rows from metrics and side tables: Tensor Cores, GPU metrics, memory,
    communication, processes, GPU specs, roofline."""
    has_k = cuda["kernels"] > 0
    tensor_metric = any(m.lower().startswith("tensor") for m in metrics)
    nccl = has_k and bool(bundle.kernels["short_name"].astype(str).str.startswith("nccl").any())
    nccl = nccl or (nvtx["ranges"] > 0 and any(d["name"].upper() == "NCCL" for d in nvtx["domains"]))
    cuda_hint = _CUDA_HINT
    out: list[dict] = []
    kineto = bundle.meta.format == KINETO_FORMAT

    def add(name, status, reason, hint=None):
        if kineto and name in ("tensor_cores", "gpu_metrics") and status != "yes":
            hint = HINT_KINETO_NOT_IN_FORMAT  # a torch.profiler trace cannot hold them
            reason += " — not in this format (a PyTorch profiler trace)" if has_k or \
                name != "tensor_cores" else ""
        out.append({"name": name, "status": status, "supported": status != "no",
                    "reason": reason, "hint": hint})

    if tensor_metric:
        add("tensor_cores", "yes", "measured by the 'Tensor Active' GPU metric")
    elif has_k:
        add("tensor_cores", "partial", "heuristic from kernel names (no GPU metrics)",
            f"add `{FLAG_GPU_METRICS}` to measure Tensor Core activity")
    else:
        add("tensor_cores", "no", "no kernels", cuda_hint)
    if metrics:
        add("gpu_metrics", "yes", f"{len(bundle.gpu_metrics):,} samples of {len(metrics)} metrics")
    else:
        add("gpu_metrics", "no", "no GPU metrics sampled",
            HINT_GPU_METRICS)
    if len(bundle.gpu_memory):
        add("memory_usage", "yes", f"{len(bundle.gpu_memory):,} allocation events")
    else:
        add("memory_usage", "no", "GPU memory usage not tracked", HINT_MEMORY_USAGE)
    if nccl:
        add("communication", "yes", "NCCL kernels or NCCL NVTX ranges present")
    elif has_k:
        add("communication", "yes", "CUDA traced; no NCCL activity in this capture")
    else:
        add("communication", "no", "no CUDA trace", cuda_hint)
    n_proc = len(bundle.processes)
    if n_proc > 1:
        add("multi_process", "yes", f"{n_proc} processes own events (ranks analysed separately)")
    known_gpu = len(bundle.gpus) and (bundle.gpus["name"] != "").any()
    if known_gpu:
        add("gpu_specs", "yes", "GPU names and properties recorded")
    elif len(bundle.gpus):
        add("gpu_specs", "partial", "no GPU table in the export: GPU model and peak numbers "
            "unknown", HINT_REEXPORT)
    if bundle.has_ncu:
        add("roofline", "yes", "Nsight Compute metrics attached")
    else:
        add("roofline", "no", "needs Nsight Compute metrics", NCU_HINT)
    return out


def _capture_hints(bundle: TraceBundle, nvtx: dict, metrics: set) -> list[str]:
    """What to capture next: one line per missing source and the recommended nsys command."""
    has_gpu_work = bundle.has_cuda
    hints: list[str] = []
    flags = []
    if not has_gpu_work or not nvtx["ranges"]:
        flags.append(PROFILE_BASE)
    if not metrics:
        flags.append(FLAG_GPU_METRICS)
    if not len(bundle.gpu_memory):
        flags.append(FLAG_MEMORY)
    if not has_gpu_work:
        hints.append(f"no CUDA data: {HINT_CAPTURE_TRACE}")
    if not nvtx["ranges"]:
        hints.append(f"no NVTX ranges: {NVTX_HINT}")
    if flags:
        cmd = " ".join(flags if flags[0] == PROFILE_BASE else [PROFILE_BASE] + flags)
        hints.append(f"recommended capture: `{cmd} -o report <your command>` then "
                     f"`{NSYS_EXPORT_COMMAND}`")
    return hints


def _host(bundle: TraceBundle) -> dict:
    m = bundle.meta
    return {
        "hostname": m.host.get("Hostname"), "cpu": m.host.get("CpuDescription"),
        "cpu_cores": m.host.get("CpuCores"), "os": m.host.get("OsDescription"),
        "driver": m.host.get("NvDriverVersion"), "cuda_driver": m.host.get("CudaDriverVersion"),
        "command_line": m.command_line or None,
        "environment_variables": len(m.environment),  # values are never shown
    }


def _version_note(bundle: TraceBundle) -> str | None:
    m = bundle.meta
    note = m.extra.get("era")
    if note and m.extra.get("nsys_version_hint"):
        note += f"; captured with nsys {m.extra['nsys_version_hint']} (install path in the trace)"
    return note


def _sources(bundle: TraceBundle) -> dict:
    """GPU-metric samples, memory events and ncu launches: counts and names."""
    gm, ncu_l, ncu_m = bundle.gpu_metrics, bundle.ncu_launches, bundle.ncu_metrics
    return {
        "gpu_metrics": {"samples": int(len(gm)),
                        "metrics": sorted(gm["metric"].astype(str).unique().tolist()) if len(gm) else []},
        "gpu_memory_events": int(len(bundle.gpu_memory)),
        "ncu": {"launches": int(len(ncu_l)),
                "kernel_names": int(ncu_l["kernel_name"].nunique()) if len(ncu_l) else 0,
                "metrics": int(ncu_m["metric"].nunique()) if len(ncu_m) else 0},
    }


def analyze_inventory(bundle: TraceBundle, include_host_info: bool = False,
                      capabilities: Capabilities | None = None) -> Inventory:
    """The inventory of ``bundle``: what it holds and which analyses it can support
    (``capabilities``: the probe's answer when already known, else probed here)."""
    m = bundle.meta
    cuda = _cuda(bundle)
    nvtx = _nvtx(bundle)
    caps = capabilities if capabilities is not None else probe(bundle)
    analyses, hints = _analyses(bundle, cuda, nvtx, caps)
    tables = dict(sorted(m.tables.items()))
    time = _time(bundle)
    if m.extra.get("derived_window_ns"):
        time["derived_window_ns"] = str(m.extra["derived_window_ns"])
    return Inventory(
        path=str(m.path) if include_host_info else Path(m.path).name,
        format=m.format, nsys_version=m.nsys_version or None,
        schema_version=m.schema_version or None, version_note=_version_note(bundle),
        reader=m.extra.get("reader"), time=time, gpus=_gpus(bundle),
        processes=_processes(bundle, include_host_info), named_threads=int(len(bundle.threads)),
        cuda=cuda, nvtx=nvtx, **_sources(bundle), frames=bundle.row_counts(), tables=tables,
        tables_total=len(tables), tables_empty=sum(1 for v in tables.values() if v == 0),
        analyses=analyses, capabilities=caps.to_json(), capture_hints=hints,
        warnings=[{"code": w.code, "message": w.message, "count": int(w.count),
                   "hint": w.hint or None} for w in bundle.warnings],
        host=_host(bundle) if include_host_info else None,
    )
