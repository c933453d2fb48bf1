"""`nsys-diag inspect`: what is in an export and what it can support.

``build_inspect_view(bundle)`` → a JSON-able dict (no pandas inside); ``render_inspect_text`` and
``inspect_to_json`` render it. Private data (host name, command line, full path) appears only with
``include_host_info``; environment *values* never appear (only how many variables were captured).
Every string that came from the trace goes through ``clean_text`` before reaching a terminal.
"""
from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from nsys_diag.analyses.steps import normalize_name
from nsys_diag.model.bundle import TraceBundle
from nsys_diag.report.formatting import fmt_bytes, fmt_count, fmt_ns, fmt_rate
from nsys_diag.report.page import clean_text
from nsys_diag.report.sanitize import clean_terminal

INSPECT_VERSION = 1
TOP_RANGES = 15
TOP_TABLES = 25

PROFILE_BASE = "nsys profile -t cuda,nvtx,osrt"
FLAG_GPU_METRICS = "--gpu-metrics-devices=all"  # `--gpu-metrics-device=all` before nsys 2023.3
FLAG_MEMORY = "--cuda-memory-usage=true"
NVTX_HINT = ("add NVTX ranges around steps and phases (torch.cuda.nvtx.range_push/range_pop "
             "or `nvtx.annotate`) and capture with `-t cuda,nvtx`")
NCU_HINT = ("profile kernels with Nsight Compute (`ncu --csv --page raw --set full "
            "--launch-count 200 python train.py > ncu.csv`) and pass `--ncu ncu.csv`")


# ------------------------------------------------------------------------------------- build
def _i(x) -> int:
    return int(x)


def _f(x) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


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
            "memory_bandwidth_bytes_per_s": _f(row["memory_bandwidth_bytes_per_s"]),
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
        "event_span_ns": None if first is None else last - first,
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


def _analyses(bundle: TraceBundle, cuda: dict, nvtx: dict) -> tuple[list[dict], list[str]]:
    has_k = cuda["kernels"] > 0
    has_gpu_work = bundle.has_cuda
    metrics = set(bundle.gpu_metrics["metric"].astype(str).unique()) if len(bundle.gpu_metrics) else set()
    tensor_metric = any(m.lower().startswith("tensor") for m in metrics)
    nccl = has_k and bool(bundle.kernels["short_name"].astype(str).str.startswith("nccl").any())
    nccl = nccl or (nvtx["ranges"] > 0 and any(d["name"].upper() == "NCCL" for d in nvtx["domains"]))
    out: list[dict] = []

    def add(name, status, reason, hint=None):
        out.append({"name": name, "status": status, "supported": status != "no",
                    "reason": reason, "hint": hint})

    cuda_hint = f"`{PROFILE_BASE} -o report <your command>`"
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
    if nvtx["ranges"] and has_gpu_work:
        add("steps_and_phases", "yes", f"{nvtx['ranges']:,} NVTX ranges to find steps and phases")
    elif nvtx["ranges"]:
        add("steps_and_phases", "partial", "NVTX ranges but no GPU work: CPU-side phases only",
            cuda_hint)
    elif has_k:
        add("steps_and_phases", "partial",
            "no NVTX ranges: steps only from repeating kernel patterns, phases unnamed", NVTX_HINT)
    else:
        add("steps_and_phases", "no", "no NVTX ranges and no kernels", NVTX_HINT)
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
            f"add `{FLAG_GPU_METRICS}` (`--gpu-metrics-device=all` on nsys before 2023.3)")
    if len(bundle.gpu_memory):
        add("memory_usage", "yes", f"{len(bundle.gpu_memory):,} allocation events")
    else:
        add("memory_usage", "no", "GPU memory usage not tracked", f"add `{FLAG_MEMORY}`")
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
            "unknown", "export again from the original .nsys-rep with `nsys export --type sqlite`")
    if bundle.has_ncu:
        add("roofline", "yes", "Nsight Compute metrics attached")
    else:
        add("roofline", "no", "needs Nsight Compute metrics", NCU_HINT)

    hints: list[str] = []
    flags = []
    if not has_gpu_work or not nvtx["ranges"]:
        flags.append(PROFILE_BASE)
    if not metrics:
        flags.append(FLAG_GPU_METRICS)
    if not len(bundle.gpu_memory):
        flags.append(FLAG_MEMORY)
    if not has_gpu_work:
        hints.append(f"no CUDA data: capture with `{PROFILE_BASE} -o report <your command>`")
    if not nvtx["ranges"]:
        hints.append(f"no NVTX ranges: {NVTX_HINT}")
    if flags:
        cmd = " ".join(flags if flags[0] == PROFILE_BASE else [PROFILE_BASE] + flags)
        hints.append(f"recommended capture: `{cmd} -o report <your command>` then "
                     "`nsys export --type sqlite --output report.sqlite report.nsys-rep`")
    return out, hints


def build_inspect_view(bundle: TraceBundle, include_host_info: bool = False) -> dict:
    """The inspect description of ``bundle`` as a JSON-able dict."""
    m = bundle.meta
    cuda = _cuda(bundle)
    nvtx = _nvtx(bundle)
    analyses, hints = _analyses(bundle, cuda, nvtx)
    tables = dict(sorted(m.tables.items()))
    note = m.extra.get("era")
    if note and m.extra.get("nsys_version_hint"):
        note += f"; captured with nsys {m.extra['nsys_version_hint']} (install path in the trace)"
    view = {
        "inspect_version": INSPECT_VERSION,
        "path": str(m.path) if include_host_info else Path(m.path).name,
        "format": m.format, "nsys_version": m.nsys_version or None,
        "schema_version": m.schema_version or None, "version_note": note,
        "reader": m.extra.get("reader"),
        "time": _time(bundle),
        "gpus": _gpus(bundle),
        "processes": _processes(bundle, include_host_info),
        "named_threads": int(len(bundle.threads)),
        "cuda": cuda,
        "nvtx": nvtx,
        "gpu_metrics": {"samples": int(len(bundle.gpu_metrics)),
                        "metrics": sorted(bundle.gpu_metrics["metric"].astype(str).unique().tolist())
                        if len(bundle.gpu_metrics) else []},
        "gpu_memory_events": int(len(bundle.gpu_memory)),
        "ncu": {"launches": int(len(bundle.ncu_launches)),
                "kernel_names": int(bundle.ncu_launches["kernel_name"].nunique())
                if len(bundle.ncu_launches) else 0,
                "metrics": int(bundle.ncu_metrics["metric"].nunique()) if len(bundle.ncu_metrics) else 0},
        "frames": bundle.row_counts(),
        "tables": tables,
        "tables_total": len(tables),
        "tables_empty": sum(1 for v in tables.values() if v == 0),
        "analyses": analyses,
        "capture_hints": hints,
        "warnings": [{"code": w.code, "message": w.message, "count": int(w.count),
                      "hint": w.hint or None} for w in bundle.warnings],
    }
    if m.extra.get("derived_window_ns"):
        view["time"]["derived_window_ns"] = str(m.extra["derived_window_ns"])
    if include_host_info:
        view["host"] = {
            "hostname": m.host.get("Hostname"), "cpu": m.host.get("CpuDescription"),
            "cpu_cores": m.host.get("CpuCores"), "os": m.host.get("OsDescription"),
            "driver": m.host.get("NvDriverVersion"), "cuda_driver": m.host.get("CudaDriverVersion"),
            "command_line": m.command_line or None,
            "environment_variables": len(m.environment),  # values are never shown
        }
    return view


# ------------------------------------------------------------------------------------ render
def inspect_to_json(view: dict) -> str:
    return json.dumps(view, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _s(text, max_len: int = 120) -> str:
    # terminal text: also no CR/LF (a trace string must not rewrite or add lines)
    return clean_terminal(clean_text("" if text is None else str(text), max_len))


def _gpu_line(g: dict) -> str:
    bits = []
    if g["sm_count"]:
        bits.append(f"{g['sm_count']} SMs")
    if g["memory_bytes"]:
        bits.append(fmt_bytes(g["memory_bytes"]))
    if g["memory_bandwidth_bytes_per_s"]:
        bits.append(fmt_rate(g["memory_bandwidth_bytes_per_s"]))
    if g["clock_hz"]:
        bits.append(f"{g['clock_hz'] / 1e9:.2f} GHz")
    if g["compute_capability"]:
        bits.append(f"cc {g['compute_capability']}")
    name = _s(g["name"]) if g["name"] else "unknown GPU (no GPU table in the export)"
    props = f" ({', '.join(bits)})" if bits else ""
    return f"{g['id']}: {name}{props} — {fmt_count(g['kernels'])} kernels"


def render_inspect_text(view: dict) -> str:
    """Plain-text description for the terminal (all trace strings cleaned)."""
    L: list[str] = []
    add = L.append
    version = ("nsys " + _s(view["nsys_version"]) if view["nsys_version"] else "nsys version unknown")
    if view["schema_version"]:
        version += f" · schema {_s(view['schema_version'])}"
    add(f"{_s(view['path'], 300)}")
    add(f"  format      nsys SQLite export · {version}" if view["format"] == "nsys-sqlite"
        else f"  format      {_s(view['format'])}")
    if view.get("version_note"):
        add(f"              {_s(view['version_note'], 200)}")
    t = view["time"]
    span = f"capture {fmt_ns(t['capture_span_ns'])}" if t["capture_span_ns"] > 0 else \
        "capture span unknown (no events, no ANALYSIS_DETAILS)"
    if t["first_event_ns"] is not None:
        span += (f" · events {fmt_ns(t['first_event_ns'])} → {fmt_ns(t['last_event_ns'])} "
                 f"({fmt_ns(t['event_span_ns'])})")
    if t["session_start_utc"]:
        span += f" · started {t['session_start_utc'][:19]}Z"
    add(f"  time        {span}")
    if t.get("derived_window_ns"):
        add(f"              cut to window {_s(t['derived_window_ns'])} ns by a post-processing tool")
    if view["gpus"]:
        for i, g in enumerate(view["gpus"]):
            add(f"  {'GPUs' if i == 0 else '':<12}{_gpu_line(g)}")
    else:
        add("  GPUs        none described")
    if view["processes"]:
        for i, p in enumerate(view["processes"][:20]):
            name = _s(p["name"]) if p["name"] else "?"
            add(f"  {'processes' if i == 0 else '':<12}{name} (pid {p['pid']}): "
                f"{fmt_count(p['kernels'])} kernels · {fmt_count(p['api_calls'])} CUDA API calls · "
                f"{fmt_count(p['nvtx_ranges'])} NVTX ranges · {p['named_threads']} named threads")
        if len(view["processes"]) > 20:
            add(f"              … {len(view['processes']) - 20} more")
    else:
        add("  processes   none own events")
    add(f"  threads     {fmt_count(view['named_threads'])} named")
    c = view["cuda"]
    if c["kernels"] + c["memcpy"] + c["memset"]:
        line = (f"{fmt_count(c['kernels'])} kernels ({fmt_count(c['distinct_kernel_names'])} names) · "
                f"{fmt_count(c['memcpy'])} memcpy ({fmt_bytes(c['memcpy_bytes'])}) · "
                f"{fmt_count(c['memset'])} memset · {fmt_count(c['sync'])} sync · "
                f"{fmt_count(c['api_calls'])} API calls")
        add(f"  CUDA        {line}")
        if c["launch_matched_share"] is not None:
            add(f"              {c['launch_matched_share']:.1%} of GPU work matched to its "
                "launching API call")
    else:
        add("  CUDA        no CUDA GPU activity recorded")
    nv = view["nvtx"]
    if nv["ranges"] or nv["marks"]:
        doms = ", ".join(f"{_s(d['name']) or '(default)'} {fmt_count(d['ranges'])}"
                         for d in nv["domains"][:10])
        add(f"  NVTX        {fmt_count(nv['ranges'])} ranges · {fmt_count(nv['marks'])} marks"
            + (f" · {fmt_count(nv['unterminated'])} unterminated" if nv["unterminated"] else ""))
        add(f"  domains     {doms}")
        for i, r in enumerate(nv["top_ranges"][:10]):
            dom = f"{_s(r['domain'], 30)}:" if r["domain"] else ""
            add(f"  {'top ranges' if i == 0 else '':<12}{dom}{_s(r['name'], 80)} — "
                f"{fmt_count(r['count'])}× · {fmt_ns(r['total_ns'])} total")
    else:
        add("  NVTX        no NVTX ranges")
    ncu = view["ncu"]
    if ncu["launches"]:
        add(f"  ncu         {fmt_count(ncu['launches'])} profiled launches · "
            f"{fmt_count(ncu['kernel_names'])} kernels · {fmt_count(ncu['metrics'])} metrics")
    gm = view["gpu_metrics"]
    if gm["samples"]:
        add(f"  GPU metrics {fmt_count(gm['samples'])} samples · {len(gm['metrics'])} metrics")
    non_empty = {k: v for k, v in view["tables"].items() if v and not k.startswith("ENUM_")}
    shown = sorted(non_empty.items(), key=lambda kv: -kv[1])[:TOP_TABLES]
    n_enum = sum(1 for k in view["tables"] if k.startswith("ENUM_"))
    add(f"  tables      {view['tables_total']} ({view['tables_empty']} empty"
        + (f", {n_enum} ENUM_*" if n_enum else "") + ")")
    for name, rows in shown:
        add(f"              {_s(name, 60):<44}{fmt_count(rows):>12}")
    if len(non_empty) > len(shown):
        add(f"              … {len(non_empty) - len(shown)} more non-empty tables (see --json)")
    if "host" in view:
        h = view["host"]
        add("  host        " + " · ".join(_s(x) for x in (h["hostname"], h["cpu"], h["os"]) if x))
        if h["command_line"]:
            add(f"  command     {_s(h['command_line'], 300)}")
        add(f"  environment {h['environment_variables']} variables captured (values not shown)")
    add("")
    add("What this export supports")
    marks = {"yes": "[yes]", "partial": "[~]  ", "no": "[no] "}
    for a in view["analyses"]:
        line = f"  {marks[a['status']]} {a['name'].replace('_', ' '):<20} {_s(a['reason'], 200)}"
        add(line)
        if a["hint"] and a["status"] != "yes":
            add(f"        → {_s(a['hint'], 300)}")
    if view["warnings"]:
        add("")
        add("Warnings")
        for w in view["warnings"]:
            add(f"  - {_s(w['message'], 400)}")
            if w["hint"]:
                add(f"      hint: {_s(w['hint'], 300)}")
    if view["capture_hints"]:
        add("")
        add("To capture what is missing")
        for h in view["capture_hints"]:
            add(f"  {_s(h, 400)}")
    return "\n".join(L) + "\n"
