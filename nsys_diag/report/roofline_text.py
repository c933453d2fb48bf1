"""Terminal table of the ``roofline`` JSON section (view-model only; no pandas, no analyses).

Every string from the trace (kernel names, GPU name) goes through ``clean_text`` (ANSI escapes and
control characters removed) and is shortened to fit the column.
"""
from __future__ import annotations

from nsys_diag.report.formatting import (MISSING, fmt_count, fmt_ns, fmt_number, fmt_rate,
                                         fmt_share)
from nsys_diag.model.text import clean_text

_BOUND_LABEL = {"memory": "memory", "compute": "compute", "latency": "latency",
                "under_occupied": "under-occupied", "balanced": "balanced", "unknown": "unknown"}
_PEAK_LABEL = {"fp64": "FP64", "fp32": "FP32", "fp16": "FP16", "tensor_fp16": "TC FP16/BF16",
               "tensor_tf32": "TC TF32", "tensor_fp8": "TC FP8", "tensor_int8": "TC INT8",
               "tensor_fp64": "TC FP64"}
NAME_WIDTH = 44
MAX_ROWS = 20


def _short(text, width: int) -> str:
    s = clean_text(str(text if text is not None else ""), 10_000).replace("\n", " ")
    return s if len(s) <= width else s[: width - 1] + "…"


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


def render_roofline_table(roofline_json: dict | None, *, max_rows: int = MAX_ROWS) -> str:
    """Plain-text roofline summary + per-kernel table for the terminal."""
    rl = roofline_json or {}
    if not rl.get("available"):
        reason = rl.get("reason") or "no Nsight Compute data"
        lines = [f"Roofline: unavailable — {_short(reason, 400)}"]
        if rl.get("hint"):
            lines.append(f"  hint: {_short(rl['hint'], 600)}")
        return "\n".join(lines)

    gpu = _short(rl.get("gpu") or "GPU unknown", 60)
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
    lines.append(f"  Peak source: {_short(peaks.get('provenance') or MISSING, 200)}")
    basis = rl.get("time_basis") or "ncu"
    lines.append(_share_line(rl.get("time_weighted") or {}, basis=basis,
                             matched_share=rl.get("matched_share")))
    tc = rl.get("tensor_core_share_by_time")
    if tc is not None:
        lines.append(f"  Tensor Cores (counters: {_short(rl.get('tensor_evidence') or '', 80)}): "
                     f"{fmt_share(tc)} of kernel time")
    kernels = rl.get("kernels") or []
    header = (f"  {'Kernel':<{NAME_WIDTH}} {'Launch':>6} {'Time':>9} {'FLOP/s':>11} "
              f"{'DRAM B/s':>10} {'FLOP/B':>7} {'Bound':<14} {'TC':>4}")
    lines += ["", header, "  " + "-" * (len(header) - 2)]
    for k in kernels[:max_rows]:
        time_ns = k.get("timeline_time_ns") if basis == "timeline" else k.get("time_ns")
        bound = _BOUND_LABEL.get(k.get("bound") or "unknown", str(k.get("bound")))
        tcs = k.get("tensor_core_share")
        lines.append(
            f"  {_short(k.get('name'), NAME_WIDTH):<{NAME_WIDTH}} {fmt_count(k.get('launches')):>6} "
            f"{fmt_ns(time_ns):>9} {fmt_rate(k.get('achieved_flop_per_s'), 'FLOP'):>11} "
            f"{fmt_rate(k.get('achieved_dram_bytes_per_s')):>10} {fmt_number(k.get('ai_dram')):>7} "
            f"{_short(bound, 14):<14} {fmt_share(tcs) if tcs is not None else MISSING:>4}")
    if len(kernels) > max_rows:
        lines.append(f"  … {len(kernels) - max_rows} more kernels in the JSON/HTML report")
    unmatched = rl.get("unmatched") or []
    if unmatched:
        names = ", ".join(_short(u.get("name"), 40) for u in unmatched[:5])
        more = f" (+{len(unmatched) - 5} more)" if len(unmatched) > 5 else ""
        lines.append(f"  Not profiled by ncu: {names}{more}")
    for note in (rl.get("notes") or [])[:5]:
        lines.append(f"  note: {_short(note, 300)}")
    if rl.get("hint"):
        lines.append(f"  hint: {_short(rl['hint'], 600)}")
    return "\n".join(lines)
