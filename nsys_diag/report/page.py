"""From the analysis view (docs/JSON.md) to what the HTML and Markdown renderers draw.

Three steps, all pure:

* ``clean_view(view, limits)`` — a copy safe to embed and render: every string stripped of ANSI
  escape sequences and control characters (lone surrogates from undecodable traces replaced),
  long strings shortened, NaN/inf turned into ``None``, and every list capped (top-N kernels,
  top gaps, steps…) so the report stays small for any trace size. This copy is also the JSON blob
  embedded in the HTML.
* ``normalize(view)`` — the same dict with every key docs/JSON.md lists present (``None``/empty
  defaults), and each optional section carrying ``available``/``reason``/``hint``. Templates run
  under ``StrictUndefined``; normalizing first means a view from an older or partial analysis still
  renders (a missing value shows as "—", a missing section as "unavailable: why").
* ``build_page(view)`` — display-ready structures: section list with availability, metric cards,
  and tables whose cells are already formatted (templates do no arithmetic).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from nsys_diag.model.jsonsafe import finite  # noqa: F401  (re-exported for renderers)
from nsys_diag.report.formatting import (
    MISSING,
    fmt_bytes,
    fmt_count,
    fmt_ms,
    fmt_ns,
    fmt_number,
    fmt_pct,
    fmt_rate,
    fmt_ratio,
    fmt_share,
    fmt_value,
)

# ------------------------------------------------------------------------------------- limits


@dataclass(frozen=True)
class Limits:
    """Caps that keep a report small whatever the trace size (the view is capped already; these
    are the renderer's own guard)."""

    max_rows: int = 200  # kernels (and roofline kernels) shown
    max_gaps: int = 50  # top idle gaps listed
    max_steps: int = 5000  # per-step points kept (the chart bins them further)
    max_list: int = 100  # any other list (data-quality items, hints, devices, processes…)
    max_bins: int = 400  # timeline bins per device, histogram bins
    max_tables: int = 200  # trace.tables entries
    max_str: int = 2000  # characters per string


DEFAULT_LIMITS = Limits()
TIGHT_LIMITS = Limits(max_rows=50, max_gaps=20, max_steps=1000, max_list=30, max_bins=200,
                      max_tables=60, max_str=400)
MINIMAL_LIMITS = Limits(max_rows=20, max_gaps=10, max_steps=200, max_list=10, max_bins=100,
                        max_tables=20, max_str=160)

# ---------------------------------------------------------------------------------- cleaning

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufeff\u202a-\u202e\u2066-\u2069]")


def clean_text(text: str, max_len: int = DEFAULT_LIMITS.max_str) -> str:
    """Text from a trace made safe to display anywhere: ANSI escape sequences removed, control
    characters (C0 except tab/newline/carriage return, DEL, C1), bidi overrides and lone surrogates replaced by
    U+FFFD, and the result cut to ``max_len`` characters with an ellipsis. HTML/Markdown escaping
    is the renderer's job; this only removes what no renderer can show."""
    text = _ANSI.sub("", text)
    text = _CONTROL.sub("\ufffd", text)
    if len(text) > max_len:
        text = text[: max(max_len - 1, 0)] + "…"
    return text


def _cap_list(items: list, n: int) -> list:
    return items[:n]


def _clean(obj, limits: Limits):
    """Recursive copy with clean strings, finite numbers and every list capped at
    ``limits.max_steps`` (the largest explicit cap), whatever section it sits in."""
    if isinstance(obj, str):
        return clean_text(obj, limits.max_str)
    if isinstance(obj, bool) or obj is None:
        return obj
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {clean_text(str(k), 200): _clean(v, limits) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v, limits) for v in obj[: limits.max_steps]]
    # numpy scalars and anything else exotic: go through float/str
    try:
        f = float(obj)
        return f if math.isfinite(f) else None
    except (TypeError, ValueError):
        return clean_text(str(obj), limits.max_str)


def _capped(view: dict, limits: Limits) -> dict:
    """Shallow-structural copy of ``view`` with the known big lists cut to ``limits``."""
    v = dict(view)

    def sub(key):
        x = v.get(key)
        return dict(x) if isinstance(x, dict) else x

    if isinstance(v.get("kernels"), list):
        v["kernels"] = _cap_list(v["kernels"], limits.max_rows)
    steps = sub("steps")
    if isinstance(steps, dict):
        for key in ("per_step",):
            if isinstance(steps.get(key), list):
                steps[key] = _cap_list(steps[key], limits.max_steps)
        for key in ("outliers", "warmup", "incomplete"):
            if isinstance(steps.get(key), list):
                steps[key] = _cap_list(steps[key], limits.max_list)
        v["steps"] = steps
    gaps = sub("gaps")
    if isinstance(gaps, dict):
        if isinstance(gaps.get("top"), list):
            gaps["top"] = _cap_list(gaps["top"], limits.max_gaps)
        if isinstance(gaps.get("histogram"), list):
            gaps["histogram"] = _cap_list(gaps["histogram"], limits.max_bins)
        v["gaps"] = gaps
    tl = sub("timeline")
    if isinstance(tl, dict) and isinstance(tl.get("strips"), list):
        strips = []
        for s in tl["strips"][:4]:
            if not isinstance(s, dict):
                continue
            s = dict(s)
            if isinstance(s.get("phases"), list):
                s["phases"] = s["phases"][: limits.max_list]
            if isinstance(s.get("devices"), list):
                devs = []
                for d in s["devices"][:16]:
                    if isinstance(d, dict):
                        d = dict(d)
                        if isinstance(d.get("busy"), list):
                            d["busy"] = d["busy"][: limits.max_bins]
                    devs.append(d)
                s["devices"] = devs
            strips.append(s)
        tl["strips"] = strips
        v["timeline"] = tl
    tc = sub("tensor_cores")
    if isinstance(tc, dict):
        for key, val in list(tc.items()):  # non_tc_gemm_kernels, tc_kernels, evidence_list…
            if isinstance(val, list):
                tc[key] = val[: limits.max_list]
        v["tensor_cores"] = tc
    rl = sub("roofline")
    if isinstance(rl, dict):
        for key, val in list(rl.items()):  # kernels, matches, unmatched…: all top-N lists
            if isinstance(val, list):
                rl[key] = val[: limits.max_rows]
        v["roofline"] = rl
    gm = sub("gpu_metrics")
    if isinstance(gm, dict):
        for key in ("per_device", "per_phase"):
            if isinstance(gm.get(key), list):
                gm[key] = gm[key][: limits.max_list]
        v["gpu_metrics"] = gm
    tr = sub("trace")
    if isinstance(tr, dict):
        if isinstance(tr.get("tables"), dict):
            tr["tables"] = dict(list(tr["tables"].items())[: limits.max_tables])
        for key in ("gpus", "processes"):
            if isinstance(tr.get(key), list):
                tr[key] = tr[key][: limits.max_list]
        v["trace"] = tr
    for key in ("phases", "processes", "data_quality", "capture_hints", "kernel_categories"):
        if isinstance(v.get(key), list):
            v[key] = v[key][: limits.max_list]
    vd = sub("verdict")
    if isinstance(vd, dict):
        for key in ("evidence", "recommendations", "secondary"):
            if isinstance(vd.get(key), list):
                vd[key] = vd[key][: limits.max_list]
        v["verdict"] = vd
    for key in ("communication", "memory"):
        x = sub(key)
        if isinstance(x, dict) and isinstance(x.get("per_device"), list):
            x["per_device"] = x["per_device"][: limits.max_list]
            v[key] = x
    return v


def clean_view(view: dict, limits: Limits = DEFAULT_LIMITS) -> dict:
    """A capped, cleaned copy of ``view`` (see module docstring). The input is not modified."""
    if not isinstance(view, dict):
        view = {}
    return _clean(_capped(view, limits), limits)


# ------------------------------------------------------------------------------ normalizing


class _Section:
    """Marks an optional section in the spec: ``None`` or ``available: false`` → unavailable."""

    def __init__(self, spec: dict, reason: str, hint: str = ""):
        self.spec, self.reason, self.hint = spec, reason, hint


_NSYS_HINT = "nsys profile -t cuda,nvtx,osrt --cuda-graph-trace=node -o report python train.py"

_GPU_ROW = {"device_id": None, "name": None, "utilization": None, "compute_busy_ms": None,
            "copy_busy_ms": None, "busy_ms": None, "idle_ms": None}
_METRICS_ROW = {"phase": None, "sm_active": None, "tensor_active": None, "dram_bandwidth": None,
                "pcie_rx": None, "pcie_tx": None}
_XFER = {"count": None, "bytes": None, "time_ms": None, "gb_per_s": None, "expected_gb_per_s": None}

SPEC = {
    "schema_version": None,
    "tool": {"name": "nsys-diag", "version": None},
    "generated_at": None,
    "trace": {"path": None, "format": None, "nsys_version": None, "schema_version": None,
              "gpus": [{"id": None, "name": None, "sm_count": None, "memory_bytes": None,
                        "memory_bandwidth_bytes_per_s": None, "compute_capability": None}],
              "processes": [{"pid": None, "name": None}],
              "capture_span_ns": None, "session_start_utc_ns": None, "tables": {}},
    "window": {"start_ns": None, "end_ns": None, "duration_ms": None, "source": None},
    "steps": _Section(
        {"count": None, "analysed_count": None, "source": None, "range_name": None, "mean_ms": None,
         "median_ms": None, "p90_ms": None, "max_ms": None, "min_ms": None, "warmup": [None],
         "incomplete": [None],
         "outliers": [{"index": None, "duration_ms": None, "ratio_to_median": None, "reason": None}],
         "per_step": [{"index": None, "start_ns": None, "duration_ms": None, "kind": None}]},
        "No training steps were found.",
        "Mark each step with an NVTX range (see nsys_diag.annotate) and capture with -t nvtx."),
    "phases": [{"name": None, "canonical": "other", "mean_ms": None, "share": None, "gpu_busy_ms": None,
                "gpu_busy_share": None, "gpu_work_ms": None, "count": None}],
    "gpu": _Section(
        {"utilization": None, "compute_busy_ms": None, "copy_busy_ms": None, "busy_ms": None,
         "idle_ms": None, "window_ms": None, "copy_only_ms": None, "per_device": [_GPU_ROW]},
        "No GPU activity in the analysed window.", "Capture CUDA activity: " + _NSYS_HINT),
    "gaps": _Section(
        {"count": None, "total_ms": None, "min_gap_ns": None,
         "by_cause": {"input": None, "transfer": None, "sync": None, "launch": None, "overhead": None,
                      "other": None},
         "histogram": [{"lo_ns": None, "hi_ns": None, "count": None, "total_ms": None}],
         "top": [{"start_ns": None, "duration_ms": None, "device_id": None, "cause": None,
                  "cpu_activity": None, "phase": None}]},
        "GPU idle gaps could not be computed.", "Capture CUDA activity: " + _NSYS_HINT),
    "timeline": _Section(
        {"bin_ns": None,
         "strips": [{"label": None, "step_index": None, "start_ns": None, "end_ns": None,
                     "phases": [{"name": None, "canonical": "other", "start_ns": None, "end_ns": None}],
                     "devices": [{"device_id": None, "busy": [None]}]}]},
        "No step to draw.", "Mark steps with NVTX ranges and capture with -t cuda,nvtx."),
    "kernels": [{"name": None, "short_name": None, "count": None, "total_ns": None, "mean_ns": None,
                 "median_ns": None, "max_ns": None, "share": None, "category": None, "tensor_core": None}],
    "kernels_total": None,
    "tensor_cores": _Section(
        {"share_of_kernel_time": None, "gemm_share": None, "tc_share_of_gemm": None, "evidence": None,
         "confidence": None, "non_tc_gemm_share": None, "source": None, "evidence_list": [None], "advice": None,
         "non_tc_gemm_kernels": [{"name": None, "share": None}]},
        "Tensor Core use could not be assessed (no kernels).", "Capture CUDA activity: " + _NSYS_HINT),
    "transfers": _Section(
        {"by_kind": {"H2D": _XFER, "D2H": _XFER, "D2D": _XFER, "P2P": _XFER}, "pageable_count": None,
         "pageable_bytes": None, "sync_copies": None},
        "No memory transfers in the analysed window.", "Capture CUDA activity (-t cuda)."),
    "gpu_metrics": _Section(
        {"per_device": [{}], "overall": {"sm_active": None, "tensor_active": None, "dram_bandwidth": None,
                                         "pcie_rx": None, "pcie_tx": None},
         "per_phase": [_METRICS_ROW]},
        "No GPU metrics were sampled.",
        "nsys profile --gpu-metrics-devices=all … (nsys ≥ 2023.x; older: --gpu-metrics-device=all)"),
    "throughput": _Section(
        {"batch_size": None, "source": None, "loader_samples_per_s": None, "model_samples_per_s": None,
         "bottleneck": None},
        "Batch size unknown.", "Pass --batch-size N to compare loader and model throughput."),
    "communication": _Section(
        {"per_device": [{"device_id": None, "comm_ms": None, "hidden_ms": None, "exposed_ms": None}],
         "exposed_share": None},
        "No communication kernels (single GPU or no NCCL).", ""),
    "memory": _Section(
        {"per_device": [{"device_id": None, "peak_bytes": None, "device_bytes": None, "peak_share": None}],
         "advice": None},
        "GPU memory usage was not captured.", "nsys profile --cuda-memory-usage=true …"),
    "roofline": _Section(
        {"source": None, "device": None, "clock_source": None, "memory_level": None,
         "roofs": [{"name": None, "kind": None, "value": None}],
         "kernels": [{"name": None, "short_name": None, "launches": None, "time_share": None,
                      "arithmetic_intensity": None, "achieved_flops_per_s": None, "sm_pct": None,
                      "mem_pct": None, "bound": None, "precision": None}],
         "kernels_total": None, "notes": [None]},
        "No Nsight Compute data was given.",
        "ncu --set full --csv --page raw -o kernels python train.py, then: "
        "nsys-diag analyze TRACE --ncu kernels.csv"),
    "processes": [{"pid": None, "name": None, "steps_mean_ms": None, "verdict_code": None}],
    "verdict": {"code": "insufficient_data", "headline": None, "confidence": None, "scale_advice": None,
                "evidence": [{"metric": None, "value": None, "threshold": None, "comparison": None,
                              "source": None}],
                "recommendations": [None], "projected_step_ms_if_fixed": None, "secondary": [None]},
    "data_quality": [{"code": None, "message": None, "count": None, "severity": "info", "hint": None}],
    "thresholds": {},
    "capture_hints": [None],
}


def _norm(value, spec):
    if isinstance(spec, _Section):
        if not isinstance(value, dict) or value.get("available") is False:
            src = value if isinstance(value, dict) else {}
            out = _norm({}, spec.spec)
            out.update({"available": False,
                        "reason": src.get("reason") or spec.reason,
                        "hint": src.get("hint") if src.get("hint") is not None else spec.hint})
            return out
        out = _norm(value, spec.spec)
        out["available"] = True
        out.setdefault("reason", None)
        out.setdefault("hint", None)
        return out
    if isinstance(spec, dict):
        src = value if isinstance(value, dict) else {}
        out = dict(src)  # keep extra keys (added by newer analyses)
        for key, sub in spec.items():
            out[key] = _norm(src.get(key), sub)
        return out
    if isinstance(spec, list):
        if not isinstance(value, list):
            return []
        (item,) = spec
        return [_norm(v, item) for v in value if not (isinstance(item, dict) and not isinstance(v, dict))]
    return spec if value is None else value


def normalize(view: dict) -> dict:
    """``view`` with every key of docs/JSON.md present (see module docstring). Idempotent."""
    return _norm(view if isinstance(view, dict) else {}, SPEC)


# ------------------------------------------------------------------------------ vocabulary

VERDICT_TITLES = {
    "compute_bound": "Compute bound",
    "compute_bound_no_tensor_cores": "Compute bound — Tensor Cores unused",
    "input_bound": "Input bound",
    "memory_bound": "Memory bound",
    "overhead_bound": "Overhead bound",
    "launch_bound": "Launch bound",
    "communication_bound": "Communication bound",
    "insufficient_data": "Insufficient data",
}
VERDICT_TONES = {"compute_bound": "good", "insufficient_data": "neutral"}  # else "warn"

CAUSES = (
    ("input", "Waiting on input"),
    ("transfer", "Memory transfers"),
    ("sync", "Host synchronization"),
    ("launch", "Launch overhead"),
    ("overhead", "Overhead phase"),
    ("other", "Other"),
)
CAUSE_LABELS = dict(CAUSES)

SECTIONS = (
    ("verdict", "Verdict"),
    ("phases", "Step breakdown"),
    ("steps", "Steps"),
    ("metrics", "Core metrics"),
    ("gaps", "GPU idle"),
    ("timeline", "Timeline"),
    ("kernels", "Kernels"),
    ("roofline", "Roofline"),
    ("transfers", "Transfers"),
    ("capture", "Capture"),
    ("data-quality", "Data quality"),
)
"""Every section of the report, in page order; ids are ``sec-<key>``."""

_SLUG = re.compile(r"[^a-z0-9]+")


def slug(text) -> str:
    """CSS-class-safe token (a-z, 0-9, '-') for a category or phase name."""
    s = _SLUG.sub("-", str(text or "other").lower()).strip("-")
    return s[:40] or "other"


def _frac(x):
    """A fraction clamped to 0..1 for meters (None stays None)."""
    f = finite(x)
    return None if f is None else max(0.0, min(1.0, f))


def _fmt_frac_or_rate(x) -> str:
    """GPU-metric values: fractions of peak (≤ 1) as percent, larger numbers as bytes/s."""
    f = finite(x)
    if f is None:
        return MISSING
    return fmt_pct(f) if f <= 1.0 else fmt_rate(f)


def segments(text) -> list[tuple[bool, str]]:
    """Split prose on backticks: [(is_code, text), …] so hints like "run `nsys profile …`" show
    their commands as code (the template escapes every part)."""
    parts = str(text if text is not None else "").split("`")
    if len(parts) % 2 == 0:  # unbalanced: keep the last backtick literal
        parts[-2:] = [parts[-2] + "`" + parts[-1]]
    return [(i % 2 == 1, p) for i, p in enumerate(parts) if p]


# ----------------------------------------------------------------------------------- tables


def cell(text, sort=None, title=None, cls=None, swatch=None, meter=None) -> dict:
    """One table cell: display ``text``; ``sort`` is the raw value the JS sorter uses; ``swatch`` a
    colour class shown as a small square before the text; ``meter`` a width in percent for an
    inline bar behind numbers."""
    return {"text": MISSING if text is None else str(text), "sort": "" if sort is None else sort,
            "title": title, "cls": cls, "swatch": swatch, "meter": meter}


def table(tid: str, columns: list[tuple[str, bool]], rows: list[list[dict]], *, total=None,
          caption=None, filterable=False) -> dict:
    """A table model for ``macros/tables.html``: ``columns`` are (label, numeric) pairs."""
    shown = len(rows)
    total = shown if total is None else max(int(total), shown)
    return {"id": tid, "columns": [{"label": lab, "num": num} for lab, num in columns], "rows": rows,
            "shown": shown, "total": total, "caption": caption, "filterable": filterable}


def _yes_no(flag) -> str:
    return MISSING if flag is None else ("yes" if flag else "no")


# ------------------------------------------------------------------------------------ page


def _section_status(v: dict) -> dict:
    """Availability + reason + hint for every section of SECTIONS."""
    gpu, steps = v["gpu"], v["steps"]

    def ok():
        return {"available": True, "reason": None, "hint": None}

    def na(reason, hint):
        return {"available": False, "reason": reason, "hint": hint}

    def of(sec):
        return ok() if sec["available"] else na(sec["reason"], sec["hint"])

    status = {"verdict": ok(), "capture": ok(), "data-quality": ok()}
    phases_status = v.get("phases_status") if isinstance(v.get("phases_status"), dict) else {}
    if v["phases"]:
        status["phases"] = ok()
    elif phases_status.get("available") is False and phases_status.get("reason"):
        status["phases"] = na(phases_status["reason"], phases_status.get("hint") or steps["hint"])
    elif not steps["available"]:
        status["phases"] = na(steps["reason"], steps["hint"])
    else:
        status["phases"] = na("No phase ranges inside the steps.",
                              "Wrap data loading, forward, backward and optimizer in NVTX ranges "
                              "(see nsys_diag.annotate).")
    status["steps"] = of(steps)
    status["metrics"] = of(gpu)
    status["gaps"] = of(v["gaps"])
    status["timeline"] = of(v["timeline"])
    if v["kernels"]:
        status["kernels"] = ok()
    elif not gpu["available"]:
        status["kernels"] = na(gpu["reason"], gpu["hint"])
    else:
        status["kernels"] = na("No CUDA kernels in the analysed window.", "Capture with -t cuda.")
    status["roofline"] = of(v["roofline"])
    status["transfers"] = of(v["transfers"])
    return status


def _kernel_table(v: dict) -> dict:
    rows = []
    for k in v["kernels"]:
        name = k["name"] or k["short_name"] or MISSING
        short = k["short_name"] or name
        cat = k["category"] or "other"
        tc = k["tensor_core"]
        rows.append([
            cell(short, str(short).lower(), title=name if name != short else None, cls="name"),
            cell(cat, cat, swatch="cat-" + slug(cat), cls="nowrap"),
            cell(_yes_no(tc), {True: 1, False: 0}.get(tc, -1), cls="tc-" + _yes_no(tc).replace(MISSING, "na")),
            cell(fmt_count(k["count"]), finite(k["count"])),
            cell(fmt_ns(k["total_ns"]), finite(k["total_ns"])),
            cell(fmt_share(k["share"]), finite(k["share"])),
            cell(fmt_ns(k["mean_ns"]), finite(k["mean_ns"])),
            cell(fmt_ns(k["median_ns"]), finite(k["median_ns"])),
            cell(fmt_ns(k["max_ns"]), finite(k["max_ns"])),
        ])
    cols = [("Kernel", False), ("Category", False), ("Tensor Cores", False), ("Launches", True),
            ("Total", True), ("Share", True), ("Mean", True), ("Median", True), ("Max", True)]
    total = v["kernels_total"] if finite(v["kernels_total"]) is not None else len(rows)
    return table("tbl-kernels", cols, rows, total=total, filterable=True,
                 caption="Kernels by total GPU time (share of all kernel time).")


def _phase_table(v: dict) -> dict:
    rows = []
    for p in v["phases"]:
        canonical = p["canonical"] or "other"
        rows.append([
            cell(p["name"], str(p["name"] or "").lower(), cls="name", swatch="ph-" + slug(canonical)),
            cell(canonical, canonical),
            cell(fmt_ms(p["mean_ms"]), finite(p["mean_ms"])),
            cell(fmt_share(p["share"]), finite(p["share"]), cls="has-meter", meter=_meter(p["share"])),
            cell(fmt_ms(p["gpu_busy_ms"]), finite(p["gpu_busy_ms"])),
            cell(fmt_share(p["gpu_busy_share"]), finite(p["gpu_busy_share"]), cls="has-meter",
                 meter=_meter(p["gpu_busy_share"])),
            cell(fmt_ms(p["gpu_work_ms"]), finite(p["gpu_work_ms"])),
        ])
    cols = [("Phase", False), ("Canonical", False), ("Mean per step", True), ("Share of step", True),
            ("GPU busy in its span", True), ("GPU busy share", True), ("GPU work launched", True)]
    return table("tbl-phases", cols, rows,
                 caption="Mean time per step, exclusive (nested ranges counted once). "
                         "“GPU busy in its span”: kernel time inside the phase's wall-clock span; "
                         "“GPU work launched”: kernel time launched from it, which may run later.")


def _meter(fraction) -> str | None:
    """Width in percent (string with one decimal) for an inline meter, or None."""
    f = _frac(fraction)
    return None if f is None else f"{f * 100:.1f}"


def _gap_table(v: dict) -> dict:
    w0 = finite(v["window"]["start_ns"])
    rows = []
    for g in v["gaps"]["top"]:
        start = finite(g["start_ns"])
        rel = None if start is None or w0 is None else (start - w0) / 1e6
        cause = g["cause"] or "other"
        rows.append([
            cell(fmt_ms(rel), rel),
            cell(fmt_ms(g["duration_ms"]), finite(g["duration_ms"])),
            cell(MISSING if g["device_id"] is None else g["device_id"], finite(g["device_id"])),
            cell(CAUSE_LABELS.get(cause, cause), cause, swatch="cause-" + slug(cause), cls="nowrap"),
            cell(g["phase"], str(g["phase"] or "").lower(), cls="name"),
            cell(g["cpu_activity"], str(g["cpu_activity"] or "").lower(), cls="name"),
        ])
    cols = [("Start", True), ("Length", True), ("GPU", True), ("Cause", False),
            ("Phase", False), ("What the CPU was doing", False)]
    return table("tbl-gaps", cols, rows, total=v["gaps"]["count"] if rows else None,
                 caption="Longest GPU idle intervals; start is measured from the start of the analysed window.")


def _step_outlier_table(v: dict) -> dict:
    rows = [[cell(o["index"], finite(o["index"])), cell(fmt_ms(o["duration_ms"]), finite(o["duration_ms"])),
             cell(fmt_ratio(o["ratio_to_median"]), finite(o["ratio_to_median"])), cell(o["reason"], None, cls="name")]
            for o in v["steps"]["outliers"]]
    return table("tbl-outliers", [("Step", True), ("Duration", True), ("× median", True), ("Why", False)], rows,
                 caption="Outlier steps, listed rather than silently averaged away.")


def _transfer_table(v: dict) -> dict:
    rows = []
    for kind, t in v["transfers"]["by_kind"].items():
        if not isinstance(t, dict) or not finite(t.get("count")):
            continue
        t = _norm(t, _XFER)
        got, exp = finite(t["gb_per_s"]), finite(t["expected_gb_per_s"])
        of_peak = None if got is None or not exp else got / exp
        rows.append([
            cell(kind, kind, cls="name"),
            cell(fmt_count(t["count"]), finite(t["count"])),
            cell(fmt_bytes(t["bytes"]), finite(t["bytes"])),
            cell(fmt_ms(t["time_ms"]), finite(t["time_ms"])),
            cell(fmt_rate(None if got is None else got * 1e9), got),
            cell(fmt_rate(None if exp is None else exp * 1e9), exp),
            cell(fmt_share(of_peak), of_peak),
        ])
    cols = [("Kind", False), ("Copies", True), ("Bytes", True), ("Time", True), ("Achieved", True),
            ("Expected link peak", True), ("Of peak", True)]
    return table("tbl-transfers", cols, rows)


def _device_table(v: dict) -> dict:
    rows = [[cell(d["device_id"], finite(d["device_id"])), cell(d["name"], str(d["name"] or ""), cls="name"),
             cell(fmt_pct(d["utilization"]), finite(d["utilization"]), cls="has-meter", meter=_meter(d["utilization"])),
             cell(fmt_ms(d["compute_busy_ms"]), finite(d["compute_busy_ms"])),
             cell(fmt_ms(d["copy_busy_ms"]), finite(d["copy_busy_ms"])),
             cell(fmt_ms(d["idle_ms"]), finite(d["idle_ms"]))]
            for d in v["gpu"]["per_device"]]
    cols = [("GPU", True), ("Name", False), ("Compute busy", True), ("Kernels", True), ("Copies", True),
            ("Idle", True)]
    return table("tbl-devices", cols, rows)


def _metrics_phase_table(v: dict) -> dict:
    rows = [[cell(p["phase"], str(p["phase"] or "").lower(), cls="name"),
             cell(_fmt_frac_or_rate(p["sm_active"]), finite(p["sm_active"])),
             cell(_fmt_frac_or_rate(p["tensor_active"]), finite(p["tensor_active"])),
             cell(_fmt_frac_or_rate(p["dram_bandwidth"]), finite(p["dram_bandwidth"])),
             cell(_fmt_frac_or_rate(p["pcie_rx"]), finite(p["pcie_rx"])),
             cell(_fmt_frac_or_rate(p["pcie_tx"]), finite(p["pcie_tx"]))]
            for p in v["gpu_metrics"]["per_phase"]]
    cols = [("Phase", False), ("SM active", True), ("Tensor active", True), ("DRAM bandwidth", True),
            ("PCIe RX", True), ("PCIe TX", True)]
    return table("tbl-metrics-phase", cols, rows, caption="GPU metrics (sampled counters) per phase.")


def _comm_table(v: dict) -> dict:
    rows = [[cell(d["device_id"], finite(d["device_id"])), cell(fmt_ms(d["comm_ms"]), finite(d["comm_ms"])),
             cell(fmt_ms(d["hidden_ms"]), finite(d["hidden_ms"])), cell(fmt_ms(d["exposed_ms"]), finite(d["exposed_ms"]))]
            for d in v["communication"]["per_device"]]
    return table("tbl-comm", [("GPU", True), ("Communication", True), ("Hidden behind compute", True),
                              ("Exposed", True)], rows)


def _memory_table(v: dict) -> dict:
    rows = [[cell(d["device_id"], finite(d["device_id"])), cell(fmt_bytes(d["peak_bytes"]), finite(d["peak_bytes"])),
             cell(fmt_bytes(d["device_bytes"]), finite(d["device_bytes"])),
             cell(fmt_share(d["peak_share"]), finite(d["peak_share"]), cls="has-meter", meter=_meter(d["peak_share"]))]
            for d in v["memory"]["per_device"]]
    return table("tbl-memory", [("GPU", True), ("Peak allocated", True), ("Device memory", True),
                                ("Peak share", True)], rows)


def _process_table(v: dict) -> dict:
    rows = [[cell(p["pid"], finite(p["pid"])), cell(p["name"], str(p["name"] or ""), cls="name"),
             cell(fmt_ms(p["steps_mean_ms"]), finite(p["steps_mean_ms"])),
             cell(VERDICT_TITLES.get(p["verdict_code"], p["verdict_code"]), p["verdict_code"])]
            for p in v["processes"]]
    return table("tbl-processes", [("PID", True), ("Process", False), ("Mean step", True), ("Verdict", False)],
                 rows, caption="Per process (rank); the headline comes from the slowest.")


def _roofline_table(v: dict) -> dict:
    rows = []
    for k in v["roofline"]["kernels"]:
        name = k["name"] or k["short_name"] or MISSING
        short = k["short_name"] or name
        bound = k["bound"] or "unknown"
        rows.append([
            cell(short, str(short).lower(), title=name if name != short else None, cls="name"),
            cell(fmt_share(k["time_share"]), finite(k["time_share"])),
            cell(fmt_number(k["arithmetic_intensity"]), finite(k["arithmetic_intensity"])),
            cell(fmt_rate(k["achieved_flops_per_s"], "FLOP"), finite(k["achieved_flops_per_s"])),
            cell(fmt_number(k["sm_pct"]) + ("%" if finite(k["sm_pct"]) is not None else ""), finite(k["sm_pct"])),
            cell(fmt_number(k["mem_pct"]) + ("%" if finite(k["mem_pct"]) is not None else ""), finite(k["mem_pct"])),
            cell(bound, bound, swatch="bound-" + slug(bound), cls="nowrap"),
            cell(k["precision"], k["precision"]),
        ])
    cols = [("Kernel", False), ("Time share", True), ("FLOP/byte", True), ("Achieved", True), ("SM %", True),
            ("Memory %", True), ("Bound", False), ("Precision", False)]
    total = v["roofline"]["kernels_total"]
    return table("tbl-roofline", cols, rows, total=total if finite(total) is not None else None,
                 caption="Per kernel, from Nsight Compute: arithmetic intensity against DRAM bytes and the "
                         "speed-of-light bound (ncu's rule: ≥ 80% of a unit's peak is its bound; "
                         "everything < 60% is latency-bound).")


def _gpu_table(v: dict) -> dict:
    rows = [[cell(g["id"], finite(g["id"])), cell(g["name"], str(g["name"] or ""), cls="name"),
             cell(g["compute_capability"], str(g["compute_capability"] or "")),
             cell(fmt_count(g["sm_count"]), finite(g["sm_count"])),
             cell(fmt_bytes(g["memory_bytes"]), finite(g["memory_bytes"])),
             cell(fmt_rate(g["memory_bandwidth_bytes_per_s"]), finite(g["memory_bandwidth_bytes_per_s"]))]
            for g in v["trace"]["gpus"]]
    return table("tbl-gpus", [("Id", True), ("GPU", False), ("CC", False), ("SMs", True), ("Memory", True),
                              ("Memory bandwidth", True)], rows)


def _tables_table(v: dict) -> dict:
    items = sorted(v["trace"]["tables"].items(), key=lambda kv: (str(kv[0]).lower(), str(kv[0])))
    rows = [[cell(name, str(name).lower(), cls="name"), cell(fmt_count(n), finite(n))] for name, n in items]
    return table("tbl-tables", [("Table", False), ("Rows", True)], rows)


def _threshold_rows(v: dict) -> list[dict]:
    return [{"name": k, "value": fmt_number(val) if not isinstance(val, str) else val}
            for k, val in sorted(v["thresholds"].items())]


def _evidence_rows(v: dict) -> list[dict]:
    rows = []
    for e in v["verdict"]["evidence"]:
        metric = e["metric"] or ""
        comparison = e["comparison"] or ""
        rows.append({"metric": metric.replace("_", " ") if metric else MISSING,
                     "value": fmt_value(e["value"], metric),
                     "comparison": "for context" if comparison == "info" else comparison,
                     "threshold": fmt_value(e["threshold"], metric) if e["threshold"] is not None else "",
                     "source": e["source"] or ""})
    return rows


def _metric_cards(v: dict) -> list[dict]:
    """The core metric set, side by side: label, big value, meter fraction, detail lines."""
    gpu, tc, gm, tp = v["gpu"], v["tensor_cores"], v["gpu_metrics"], v["throughput"]
    cards = []
    if gpu["available"]:
        cards.append({"key": "gpu-busy", "label": "GPU compute busy", "value": fmt_pct(gpu["utilization"]),
                      "meter": _meter(gpu["utilization"]),
                      "detail": [f"kernels running {fmt_ms(gpu['compute_busy_ms'])} of {fmt_ms(gpu['window_ms'])}",
                                 f"idle {fmt_ms(gpu['idle_ms'])}; copies only {fmt_ms(gpu['copy_only_ms'])}"]})
    if tc["available"]:
        basis = (f"from {str(tc['source']).replace('_', ' ')}" if tc["source"]
                 else f"evidence: {clean_text(str(tc['evidence'] or MISSING), 90)}")
        cards.append({"key": "tensor-cores", "label": "Tensor Core share of kernel time",
                      "value": fmt_pct(tc["share_of_kernel_time"]), "meter": _meter(tc["share_of_kernel_time"]),
                      "detail": [f"{fmt_share(tc['tc_share_of_gemm'])} of GEMM/conv time on Tensor Cores",
                                 f"{basis} ({tc['confidence'] or 'unknown'} confidence)"]})
    if gm["available"]:
        o = gm["overall"]
        for key, label in (("sm_active", "SM active"), ("tensor_active", "Tensor active"),
                           ("dram_bandwidth", "DRAM bandwidth"), ("pcie_rx", "PCIe RX"), ("pcie_tx", "PCIe TX")):
            if finite(o.get(key)) is None:
                continue
            f = finite(o[key])
            cards.append({"key": slug(key), "label": label, "value": _fmt_frac_or_rate(f),
                          "meter": _meter(f) if f is not None and f <= 1 else None,
                          "detail": ["sampled GPU metrics, " + ("share of peak" if f <= 1 else "bytes per second")]})
    if tp["available"]:
        lo, mo = finite(tp["loader_samples_per_s"]), finite(tp["model_samples_per_s"])
        top = max([x for x in (lo, mo) if x is not None] or [0.0])
        cards.append({"key": "throughput", "label": "Loader vs model throughput",
                      "value": (tp["bottleneck"] or MISSING) + (" limits" if tp["bottleneck"] else ""),
                      "meter": None,
                      "bars": [{"key": "loader", "label": "loader", "value": fmt_rate(lo, "samples"),
                                "width": _meter(lo / top) if lo is not None and top else None},
                               {"key": "model", "label": "model", "value": fmt_rate(mo, "samples"),
                                "width": _meter(mo / top) if mo is not None and top else None}],
                      "detail": [f"batch size {fmt_count(tp['batch_size'])} ({tp['source'] or 'given'})"]})
    comm = v["communication"]
    if comm["available"]:
        cards.append({"key": "communication", "label": "Exposed communication", "value": fmt_pct(comm["exposed_share"]),
                      "meter": _meter(comm["exposed_share"]),
                      "detail": ["share of step time where NCCL runs with no compute beside it"]})
    mem = v["memory"]
    if mem["available"]:
        peaks = [finite(d["peak_share"]) for d in mem["per_device"] if finite(d["peak_share"]) is not None]
        peak = max(peaks) if peaks else None
        cards.append({"key": "memory", "label": "Peak GPU memory", "value": fmt_pct(peak), "meter": _meter(peak),
                      "detail": [mem["advice"] or "of device memory, highest GPU"]})
    for c in cards:
        c.setdefault("bars", [])
    return cards


def _verdict(v: dict) -> dict:
    vd, steps = v["verdict"], v["steps"]
    code = vd["code"] or "insufficient_data"
    proj = finite(vd["projected_step_ms_if_fixed"])
    cur = finite(steps["mean_ms"]) if steps["available"] else None
    projection = None
    if proj is not None:
        speedup = cur / proj if cur and proj > 0 else None
        projection = {"now": fmt_ms(cur), "fixed": fmt_ms(proj),
                      "speedup": fmt_ratio(speedup) if speedup and speedup > 1.0001 else None}
    gpu, tc = v["gpu"], v["tensor_cores"]
    kpis = [
        {"label": "Mean step", "value": fmt_ms(steps["mean_ms"]) if steps["available"] else MISSING,
         "note": (f"median {fmt_ms(steps['median_ms'])} · p90 {fmt_ms(steps['p90_ms'])}"
                  if steps["available"] else "no steps found")},
        {"label": "GPU compute busy", "value": fmt_pct(gpu["utilization"]) if gpu["available"] else MISSING,
         "note": f"idle {fmt_ms(gpu['idle_ms'])}" if gpu["available"] else "no GPU activity"},
        {"label": "Tensor Cores", "value": fmt_pct(tc["share_of_kernel_time"]) if tc["available"] else MISSING,
         "note": "of kernel time" if tc["available"] else "not assessed"},
        {"label": "GPU idle", "value": fmt_ms(v["gaps"]["total_ms"]) if v["gaps"]["available"] else MISSING,
         "note": (f"{fmt_count(v['gaps']['count'])} gaps" if v["gaps"]["available"] else "not computed")},
    ]
    return {"code": code, "title": VERDICT_TITLES.get(code, code), "tone": VERDICT_TONES.get(code, "warn"),
            "headline": vd["headline"] or "No headline in this analysis.",
            "confidence": vd["confidence"] or "unknown", "scale_advice": vd["scale_advice"],
            "recommendations": [r for r in vd["recommendations"] if r],
            "secondary": [VERDICT_TITLES.get(c, c) for c in vd["secondary"] if c],
            "evidence": _evidence_rows(v), "projection": projection, "kpis": kpis}


def build_page(view: dict) -> dict:
    """Everything the templates need besides charts. ``view`` should come from ``clean_view``."""
    v = normalize(view)
    status = _section_status(v)
    warnings = [d for d in v["data_quality"] if d["severity"] == "warning"]
    trace = v["trace"]
    tool = v["tool"]
    title_name = str(trace["path"] or "trace").replace("\\", "/").rsplit("/", 1)[-1]
    return {
        "title": f"nsys-diag — {title_name}",
        "trace_name": title_name,
        "tool": {"name": tool["name"] or "nsys-diag", "version": tool["version"] or MISSING},
        "generated_at": v["generated_at"] or MISSING,
        "sections": [{"key": k, "id": f"sec-{k}", "label": label, **status[k]} for k, label in SECTIONS],
        "status": status,
        "verdict": _verdict(v),
        "warnings": warnings,
        "data_quality": v["data_quality"],
        "steps": v["steps"],
        "steps_summary": _steps_summary(v),
        "phase_table": _phase_table(v),
        "outlier_table": _step_outlier_table(v),
        "cards": _metric_cards(v),
        "device_table": _device_table(v) if len(v["gpu"]["per_device"]) > 1 else None,
        "metrics_phase_table": _metrics_phase_table(v) if v["gpu_metrics"]["available"]
        and v["gpu_metrics"]["per_phase"] else None,
        "metrics_hint": None if v["gpu_metrics"]["available"] else v["gpu_metrics"]["hint"],
        "comm_table": _comm_table(v) if v["communication"]["available"] else None,
        "memory_table": _memory_table(v) if v["memory"]["available"] else None,
        "process_table": _process_table(v) if len(v["processes"]) > 1 else None,
        "gaps": {"count": fmt_count(v["gaps"]["count"]), "total": fmt_ms(v["gaps"]["total_ms"]),
                 "min_gap": fmt_ns(v["gaps"]["min_gap_ns"])},
        "gap_table": _gap_table(v),
        "kernel_table": _kernel_table(v),
        "kernel_summary": _kernel_summary(v),
        "kernel_categories": sorted({str(k["category"] or "other") for k in v["kernels"]}),
        "tensor_cores": v["tensor_cores"],
        "tc_evidence": [e for e in v["tensor_cores"]["evidence_list"] if e]
        or ([v["tensor_cores"]["evidence"]] if v["tensor_cores"]["evidence"] else []),
        "non_tc": [{"name": k["name"], "share": fmt_share(k["share"])}
                   for k in v["tensor_cores"]["non_tc_gemm_kernels"]],
        "non_tc_share": fmt_share(v["tensor_cores"]["non_tc_gemm_share"]),
        "roofline": v["roofline"],
        "roofline_table": _roofline_table(v) if v["roofline"]["available"] else None,
        "transfer_table": _transfer_table(v) if v["transfers"]["available"] else None,
        "transfers": {"pageable_count": fmt_count(v["transfers"]["pageable_count"]),
                      "pageable_bytes": fmt_bytes(v["transfers"]["pageable_bytes"]),
                      "sync_copies": fmt_count(v["transfers"]["sync_copies"]),
                      "has_pageable": bool(finite(v["transfers"]["pageable_count"])),
                      "has_sync": bool(finite(v["transfers"]["sync_copies"]))},
        "capture": _capture(v),
        "gpu_table": _gpu_table(v),
        "tables_table": _tables_table(v),
        "thresholds": _threshold_rows(v),
        "capture_hints": [h for h in v["capture_hints"] if h],
    }


def _kernel_summary(v: dict) -> str | None:
    """'2,400 launches of 4 kernels, 7.68 ms; 100% of launches shorter than 10 µs (100% of time)'."""
    ks = v.get("kernel_summary")
    if not isinstance(ks, dict) or finite(ks.get("count")) is None:
        return None
    line = f"{fmt_count(ks.get('count'))} launches of {fmt_count(ks.get('names'))} kernels, {fmt_ns(ks.get('total_ns'))}"
    if finite(ks.get("small_fraction")) is not None:
        line += (f"; {fmt_share(ks.get('small_fraction'))} of launches shorter than {fmt_ns(ks.get('small_kernel_ns'))}"
                 f" ({fmt_share(ks.get('small_time_share'))} of kernel time)")
    return line + "."


def _steps_summary(v: dict) -> list[dict]:
    s = v["steps"]
    if not s["available"]:
        return []
    return [
        {"label": "Steps", "value": f"{fmt_count(s['analysed_count'])} analysed of {fmt_count(s['count'])}"},
        {"label": "Source", "value": s["source"] or MISSING},
        {"label": "Mean", "value": fmt_ms(s["mean_ms"])},
        {"label": "Median", "value": fmt_ms(s["median_ms"])},
        {"label": "p90", "value": fmt_ms(s["p90_ms"])},
        {"label": "Min – max", "value": f"{fmt_ms(s['min_ms'])} – {fmt_ms(s['max_ms'])}"},
        {"label": "Warm-up", "value": _index_list(s["warmup"])},
        {"label": "Incomplete", "value": _index_list(s["incomplete"])},
    ]


def _index_list(items: list) -> str:
    vals = [str(i) for i in items if i is not None]
    if not vals:
        return "none"
    return ", ".join(vals[:12]) + (f" … (+{len(vals) - 12})" if len(vals) > 12 else "")


def _capture(v: dict) -> list[dict]:
    t, w = v["trace"], v["window"]
    procs = ", ".join(f"{p['name'] or '?'} ({p['pid']})" for p in t["processes"][:8])
    if len(t["processes"]) > 8:
        procs += f" … (+{len(t['processes']) - 8})"
    scope = v.get("scope") if isinstance(v.get("scope"), dict) else {}
    analysed = []
    if scope.get("pid") is not None or scope.get("name"):
        who = f"{scope.get('name') or '?'} (pid {scope.get('pid') if scope.get('pid') is not None else '?'})"
        if (finite(scope.get("process_count")) or 0) > 1:
            who += (f" — the headline of {fmt_count(scope.get('process_count'))} processes"
                    + (f" ({scope['headline_rule']})" if scope.get("headline_rule") else ""))
        analysed = [{"label": "Analysed process", "value": who}]
    return analysed + [
        {"label": "Trace", "value": t["path"] or MISSING},
        {"label": "Format", "value": t["format"] or MISSING},
        {"label": "nsys version", "value": t["nsys_version"] or "unknown"},
        {"label": "Export schema", "value": t["schema_version"] or "unknown"},
        {"label": "Capture span", "value": fmt_ns(t["capture_span_ns"])},
        {"label": "Analysed window",
         "value": f"{fmt_ms(w['duration_ms'])} ({w['source'] or 'unknown'}), "
                  f"{fmt_ns(w['start_ns'])} → {fmt_ns(w['end_ns'])} on the session timeline"},
        {"label": "Processes", "value": procs or MISSING},
    ]
