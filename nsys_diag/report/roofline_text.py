"""Terminal table of the ``roofline`` JSON section (view-model only; no pandas, no analyses).

Every string from the trace (kernel names, GPU name) goes through ``terminal_line`` (ANSI escapes
and control characters removed, tabs and newlines as spaces) and is never cut: the kernel name is
the table's last column, so the numeric columns stay aligned and a long name runs on, the line
wrapped to the terminal by ``text.fit_line`` (whole when the output is not a terminal), as the
other terminal tables do.
"""
from __future__ import annotations

from nsys_diag.report.formatting import (MISSING, fmt_count, fmt_ns, fmt_number, fmt_pct,
                                         fmt_rate, fmt_ratio, fmt_share)
from nsys_diag.model.text import terminal_line
from nsys_diag.report.render_common import kernels_only

_BOUND_LABEL = {"memory": "memory", "compute": "compute", "latency": "latency",
                "under_occupied": "under-occupied", "balanced": "balanced", "unknown": "unknown"}
_PEAK_LABEL = {"fp64": "FP64", "fp32": "FP32", "fp16": "FP16", "tensor_fp16": "TC FP16/BF16",
               "tensor_tf32": "TC TF32", "tensor_fp8": "TC FP8", "tensor_int8": "TC INT8",
               "tensor_fp64": "TC FP64"}
BOUND_WIDTH = 14
"""The Bound column (the longest label, "under-occupied"); the kernel name, last, is never cut."""
MAX_ROWS = 20
MAX_PAIRINGS = 8
LEVEL_LABEL = {"signature": "exact name", "base": "same function name, other variant",
               "family": "family guess"}
"""How each ``roofline.matches[].level`` reads in a report (``signature`` is the exact match)."""
PEAKS_SOURCE_LABEL = {
    "ncu_peak_metrics": "the CSV's .peak_sustained metrics",
    "gpu_option": "the GPU named by --gpu",
    "csv_gpu": "the GPU the ncu CSV names",
    "csv_device_attributes": "the ncu CSV's device attributes (it names no GPU)",
    "trace_gpu": "the nsys trace's GPU (the CSV neither names nor describes one)",
    "none": "no known GPU (name it with --gpu)",
}
"""How ``roofline.peaks_source`` reads in a report (``analyses/gpu_choice.PEAKS_SOURCES``)."""


def gpu_label(rl: dict) -> str:
    """The roofline's GPU as words: its name, else what the peaks came from."""
    if rl.get("gpu"):
        return str(rl["gpu"])
    if rl.get("peaks_source") == "csv_device_attributes":
        return "GPU not named (peaks from the CSV's device attributes)"
    return "GPU unknown"


def peaks_source_text(rl: dict) -> str:
    """'<where the peaks came from>: <provenance>' for the reports (strings not escaped)."""
    src = PEAKS_SOURCE_LABEL.get(str(rl.get("peaks_source") or ""), "")
    prov = str(((rl.get("peaks") or {}).get("provenance")) or MISSING)
    return f"{src} — {prov}" if src else prov


def launch_config_text(m: dict) -> str:
    """How a match's launch configuration compared (``launch_config``), as words."""
    cfg = m.get("timeline_launch_config")
    shown = (f"{cfg.replace('x', ' blocks × ', 1)} threads" if isinstance(cfg, str) and "x" in cfg
             else "")
    state = m.get("launch_config") or "unknown"
    if state == "same":
        return f"same launch config ({shown})" if shown else "same launch config"
    if state == "different":
        return (f"other launch config (timeline {shown}; not profiled by ncu)" if shown
                else "other launch config")
    return "launch config not compared (a side lacks it)"


def _t(text) -> str:
    """Trace text as one terminal line, whole (the line wraps, it is never cut)."""
    return terminal_line("" if text is None else str(text))


def _share_line(tw: dict, *, basis: str, matched_share=None) -> str:
    parts = [f"{fmt_share(tw.get(k))} {label}" for k, label in (
        ("memory_bound", "memory-bound"), ("compute_bound", "compute-bound"),
        ("latency_bound", "latency-bound"), ("under_occupied", "under-occupied"),
        ("balanced", "balanced"), ("unknown", "bound unknown"), ("unmatched", "not in ncu"))
        if tw.get(k)]
    text = " · ".join(parts) if parts else MISSING
    if basis == "timeline":
        tail = f" (of timeline kernel time; {fmt_share(matched_share)} matched to ncu)"
    else:
        tail = " (of profiled ncu kernel time)"
    return "  Time: " + text + tail


def fallback_pairings(roofline_json: dict | None) -> list[dict]:
    """The ``matches[]`` that are not exact-name matches, largest timeline time first: each as
    words (``timeline``, ``ncu``, ``level``, ``ratio``, ``launches``, ``config``, ``time``,
    ``share``) for the terminal, Markdown and HTML. Strings are *not* escaped here; each renderer escapes its way."""
    rl = roofline_json or {}
    out = []
    for m in rl.get("matches") or []:
        if not m or (m.get("level") or "signature") == "signature":
            continue
        ratio = m.get("duration_ratio")
        out.append({
            "timeline": str(m.get("timeline_name") or ""),
            "ncu": ", ".join(str(n) for n in m.get("ncu_names") or []),
            "level": m.get("level"), "level_label": LEVEL_LABEL.get(m.get("level"), m.get("level")),
            "ratio": (f"ncu per launch {fmt_ratio(ratio)} the timeline's" if ratio is not None
                      else "per-launch durations unknown"),
            "launches": f"{fmt_count(m.get('launches'))} timeline / "
                        f"{fmt_count(m.get('ncu_launches'))} ncu launches",
            "config": launch_config_text(m),
            "time": fmt_ns(m.get("time_ns")), "share": fmt_share(m.get("share")),
        })
    return out


def roofline_rows(roofline_json: dict | None) -> list[dict]:
    """Per-kernel roofline rows as words (kernel, time, AI, FLOP/s, bytes/s, bound, SOL %) for the
    Markdown table; the time is the timeline's when joined, ncu's otherwise."""
    rl = roofline_json or {}
    basis = rl.get("time_basis") or "ncu"
    rows = []
    for k in rl.get("kernels") or []:
        sol = [x for x in (k.get("sol_compute_pct"), k.get("sol_memory_pct")) if x is not None]
        rows.append({
            "kernel": str(k.get("name") or ""),
            "time": fmt_ns(k.get("timeline_time_ns") if basis == "timeline" else k.get("time_ns")),
            "ai": fmt_number(k.get("ai_dram")),
            "flops": fmt_rate(k.get("achieved_flop_per_s"), "FLOP"),
            "bytes": fmt_rate(k.get("achieved_dram_bytes_per_s")),
            "bound": _BOUND_LABEL.get(k.get("bound") or "unknown", str(k.get("bound"))),
            "sol": fmt_pct(max(sol) / 100.0) if sol else MISSING,
        })
    return rows


def _pairing_lines(rl: dict) -> list[str]:
    pairs = fallback_pairings(rl)
    if not pairs:
        return []
    lines = ["  Not exact pairings (another name or launch config: a guess, not a measurement of "
             "that kernel):"]
    for p in pairs[:MAX_PAIRINGS]:
        lines.append(f"    {_t(p['timeline'])} ← ncu {_t(p['ncu'])}: "
                     f"{p['level_label']}; {p['config']}; {p['ratio']}; {p['launches']}; "
                     f"{p['time']} ({p['share']})")
    if len(pairs) > MAX_PAIRINGS:
        lines.append(f"    … {len(pairs) - MAX_PAIRINGS} more in the JSON (roofline.matches)")
    return lines


def render_roofline_table(roofline_json: dict | None, *, max_rows: int = MAX_ROWS) -> str:
    """Plain-text roofline summary + per-kernel table for the terminal."""
    rl = roofline_json or {}
    if not rl.get("available"):
        reason = rl.get("reason") or "no Nsight Compute data"
        lines = [f"Roofline: unavailable — {_t(reason)}"]
        if rl.get("hint"):
            lines.append(f"  hint: {_t(rl['hint'])}")
        return "\n".join(lines)

    gpu = _t(gpu_label(rl))
    lines = [f"Roofline (Nsight Compute) — {gpu}"]
    peaks = rl.get("peaks") or {}
    flop = peaks.get("flop_per_s") or {}
    shown = [f"{_PEAK_LABEL.get(p, p)} {fmt_rate(v, 'FLOP')}" for p, v in flop.items()
             if v and p in ("fp32", "fp16", "fp64", "tensor_fp16")]
    if peaks.get("dram_bytes_per_s"):
        shown.append(f"DRAM {fmt_rate(peaks['dram_bytes_per_s'])}")
    if shown:
        ridge = (peaks.get("ridge_point") or {}).get("fp32")
        ridge_txt = f"; FP32 ridge {fmt_number(ridge)} FLOP/B" if ridge else ""
        lines.append("  Peaks: " + " · ".join(shown) + ridge_txt)
    lines.append(f"  Peak source: {_t(peaks_source_text(rl))}")
    basis = rl.get("time_basis") or "ncu"
    lines.append(_share_line(rl.get("time_weighted") or {}, basis=basis,
                             matched_share=rl.get("matched_share")))
    tc = rl.get("tensor_core_share_by_time")
    if tc is not None:
        lines.append(f"  Tensor Cores (counters: {_t(rl.get('tensor_evidence') or '')}): "
                     f"{fmt_share(tc)} of kernel time")
    kernels = rl.get("kernels") or []
    header = (f"  {'Launch':>6} {'Time':>9} {'FLOP/s':>12} {'DRAM B/s':>10} {'FLOP/B':>7} "
              f"{'Bound':<{BOUND_WIDTH}} {'TC':>4}  Kernel")
    lines += ["", header, "  " + "-" * (len(header) - 2)]
    for k in kernels[:max_rows]:
        time_ns = k.get("timeline_time_ns") if basis == "timeline" else k.get("time_ns")
        bound = _BOUND_LABEL.get(k.get("bound") or "unknown", str(k.get("bound")))
        tcs = k.get("tensor_core_share")
        lines.append(
            f"  {fmt_count(k.get('launches')):>6} {fmt_ns(time_ns):>9} "
            f"{fmt_rate(k.get('achieved_flop_per_s'), 'FLOP'):>12} "
            f"{fmt_rate(k.get('achieved_dram_bytes_per_s')):>10} {fmt_number(k.get('ai_dram')):>7} "
            f"{terminal_line(bound, BOUND_WIDTH):<{BOUND_WIDTH}} "
            f"{fmt_share(tcs) if tcs is not None else MISSING:>4}  {_t(k.get('name'))}")
    if len(kernels) > max_rows:
        lines.append(f"  … {len(kernels) - max_rows} more kernels in the JSON/HTML report")
    lines += _pairing_lines(rl)
    unmatched = rl.get("unmatched") or []
    if unmatched:
        names = ", ".join(_t(u.get("name")) for u in unmatched[:5])
        more = f" (+{len(unmatched) - 5} more)" if len(unmatched) > 5 else ""
        lines.append(f"  Not profiled by ncu: {names}{more}")
    for note in (rl.get("notes") or [])[:5]:
        lines.append(f"  note: {_t(note)}")
    if rl.get("hint"):
        lines.append(f"  hint: {_t(rl['hint'])}")
    return "\n".join(lines)


def ncu_kernel_rows(view: dict) -> list[dict]:
    """The profiled kernels of an Nsight Compute CSV read alone whose roofline is unavailable
    (no FLOP/DRAM counters), as words: name, launches, total time, share of profiled time and
    the counters the CSV does hold (tensor-pipe and SM-throughput % of peak; ``MISSING`` where
    absent). [] for a timeline input (its kernel table is the HTML report's), when the roofline
    is available (its table lists them) or when no kernels were read."""
    if not kernels_only(view.get("trace") or {}) or (view.get("roofline") or {}).get("available"):
        return []
    rows = []
    for k in view.get("kernels") or []:
        tc, sm = k.get("tensor_pipe_pct"), k.get("sm_throughput_pct")
        rows.append({"kernel": str(k.get("name") or ""), "launches": fmt_count(k.get("count")),
                     "time": fmt_ns(k.get("total_ns")), "share": fmt_share(k.get("share")),
                     "tensor_pipe": MISSING if tc is None else fmt_pct(float(tc) / 100.0),
                     "sm_throughput": MISSING if sm is None else fmt_pct(float(sm) / 100.0)})
    return rows


def render_ncu_kernels(view: dict, *, max_rows: int = MAX_ROWS) -> list[str]:
    """Terminal lines of ``ncu_kernel_rows`` (none when there are no such rows); the roofline's
    reason (counters missing) under the table."""
    rows = ncu_kernel_rows(view)
    if not rows:
        return []
    header = f"  {'Launch':>6} {'Time':>9} {'Share':>6} {'TC pipe':>7} {'SM thr':>6}  Kernel"
    lines = ["Kernels (Nsight Compute)", header, "  " + "-" * (len(header) - 2)]
    for r in rows[:max_rows]:
        lines.append(f"  {r['launches']:>6} {r['time']:>9} {r['share']:>6} {r['tensor_pipe']:>7} "
                     f"{r['sm_throughput']:>6}  {_t(r['kernel'])}")
    if len(rows) > max_rows:
        lines.append(f"  … {len(rows) - max_rows} more kernels in the JSON/HTML report")
    lines.append("  (TC pipe: tensor-pipe activity, SM thr: SM throughput, % of peak)")
    reason = (view.get("roofline") or {}).get("reason")
    if reason:
        lines.append(f"  {_t(reason)}")
    return lines
