"""From the analysis view (docs/JSON.md) to what the HTML and Markdown renderers draw.

Three steps, all pure:

* ``clean_view(view, limits)`` (report/clean.py) — a copy safe to embed and render, every list
  capped by the contract's ``LIST_CAPS``.
* ``normalize(view)`` (report/contract.py) — the same dict with every key of the contract present
  (``None``/empty defaults), and each optional section carrying ``available``/``reason``/``hint``.
* ``build_page(view)`` — display-ready structures: section list with availability, metric cards,
  and tables whose cells are already formatted (report/tables.py; templates do no arithmetic).

The names other modules imported from here before the split stay importable.
"""
from __future__ import annotations

from typing import Any

from nsys_diag.model.vocabulary import KINETO_FORMAT, KINETO_LABEL, NCU_CSV_FORMAT
from nsys_diag.model.jsonsafe import finite
from nsys_diag.model.vocabulary import (HINT_CAPTURE_CUDA, NON_TC_CHECK, SYNC_COPIES_NOTE,
                                        VERDICT_TITLES, hint_for)
from nsys_diag.report.render_common import kernels_only
from nsys_diag.report.replay_render import projection as replay_projection, replay_page
from nsys_diag.report.roofline_text import fallback_pairings, gpu_label, peaks_source_text
from nsys_diag.report.clean import (
    DEFAULT_LIMITS,
    MINIMAL_LIMITS,
    TIGHT_LIMITS,
    Limits,
    clean_text,
    clean_view,
)
from nsys_diag.report.contract import SECTIONS, SPEC, VERDICT_TONES, Section, normalize, normalize_as
from nsys_diag.report.evidence import (finding_cost, finding_saving, fired_findings, row_role,
                                      rule_text, unfired_summary)
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
from nsys_diag.report.tables import (
    loader_block,
    CAUSE_LABELS,
    CAUSES,
    comm_table,
    device_table,
    fmt_frac_or_rate,
    gap_table,
    gpu_table,
    kernel_table,
    memory_table,
    meter,
    metrics_phase_table,
    nvtx_range_table,
    phase_table,
    process_table,
    roofline_table,
    step_outlier_table,
    tables_table,
    transfer_table,
    step_list,
    cell,
    segments,
    slug,
    table,
)

__all__ = ["CAUSES", "CAUSE_LABELS", "DEFAULT_LIMITS", "MINIMAL_LIMITS", "SECTIONS", "SPEC",
           "TIGHT_LIMITS", "VERDICT_TITLES", "VERDICT_TONES", "Limits", "Section", "build_page",
           "cell", "clean_text", "clean_view", "finite", "normalize", "segments", "slug", "table"]


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
    phases_status: dict = v["phases_status"] if isinstance(v.get("phases_status"), dict) else {}
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
        status["kernels"] = na("No CUDA kernels in the analysed window.",
                               _worded(v, HINT_CAPTURE_CUDA))
    status["roofline"] = of(v["roofline"])
    status["transfers"] = of(v["transfers"])
    status["replay"] = of(v["replay"])
    return status


NCU_FORMATS = (NCU_CSV_FORMAT,)
"""``trace.format`` values of a kernel-only input (an Nsight Compute CSV analysed alone)."""
NCU_LEAD = ("verdict", "roofline", "kernels")
"""An ncu-only page leads with these, in this order."""
TIMELINE_SECTIONS = ("phases", "steps", "metrics", "gaps", "timeline", "transfers", "replay")
"""Sections that need an nsys timeline: folded into one line on an ncu-only page."""


def section_order(ncu_only: bool, status: dict | None = None) -> list[str]:
    """Section keys in render order: SECTIONS' order, or for an ncu-only input the roofline right
    after the verdict and the timeline sections left out (``_folded`` names them), the kernel
    table too when it has nothing to show."""
    keys = [k for k, _ in SECTIONS]
    if not ncu_only:
        return keys
    lead = [k for k in NCU_LEAD if k != "kernels" or (status or {}).get(k, {}).get("available", True)]
    return lead + [k for k in keys if k not in NCU_LEAD and k not in TIMELINE_SECTIONS]


def _ordered_sections(order: list[str]) -> list[tuple[str, str]]:
    labels = dict(SECTIONS)
    return [(k, labels[k]) for k in order]


def _folded(ncu_only: bool) -> dict | None:
    """The one line that stands for the timeline sections on an ncu-only page."""
    if not ncu_only:
        return None
    labels = dict(SECTIONS)
    names = ", ".join(labels[k] for k in TIMELINE_SECTIONS)
    return {"keys": list(TIMELINE_SECTIONS),
            "line": f"Timeline sections need an nsys trace ({names}): this input is an Nsight Compute "
                    "CSV of individual kernels. Analyse an nsys export with `--ncu` to join both."}


def _threshold_rows(v: dict) -> list[dict]:
    return [{"name": k, "value": fmt_number(val) if not isinstance(val, str) else val}
            for k, val in sorted(v["thresholds"].items())]


def _evidence_row(e: dict) -> dict:
    metric = e["metric"] or ""
    return {"metric": metric.replace("_", " ") if metric else MISSING,
            "value": fmt_value(e["value"], metric),
            "role": row_role(e),
            "rule": rule_text(e) or "(context)",
            "fired": e.get("fired"),
            # kept for templates/tests of earlier versions
            "comparison": "for context" if (e["comparison"] or "") == "info" else (e["comparison"] or ""),
            "threshold": fmt_value(e["threshold"], metric) if e["threshold"] is not None else "",
            "source": e["source"] or ""}


def _evidence_rows(v: dict) -> list[dict]:
    return [_evidence_row(e) for e in v["verdict"]["evidence"]]


def _findings(v: dict) -> dict:
    """Fired findings (severity, cost, headline, evidence rows) and the folded rest."""
    fired = [{"cause": str(f.get("cause") or MISSING).replace("_", " "),
              "severity": str(f.get("severity") or "info"),
              "code": VERDICT_TITLES.get(str(f.get("code")), str(f.get("code") or MISSING)),
              "cost": finding_cost(f), "headline": f.get("headline") or "",
              "saving": finding_saving(f, (v.get("steps") or {}).get("mean_ms")),
              "evidence": [_evidence_row(normalize_as(e, "evidence_row"))
                           for e in (f.get("evidence") or []) if isinstance(e, dict)]}
             for f in fired_findings(v)]
    return {"fired": fired, "rest": unfired_summary(v)}


def _metric_cards(v: dict) -> list[dict]:
    """The core metric set, side by side: label, big value, meter fraction, detail lines."""
    gpu, tc, gm, tp = v["gpu"], v["tensor_cores"], v["gpu_metrics"], v["throughput"]
    cards: list[dict[str, Any]] = []
    if gpu["available"]:
        cards.append({"key": "gpu-busy", "label": "GPU compute busy", "value": fmt_pct(gpu["utilization"]),
                      "meter": meter(gpu["utilization"]),
                      "detail": [f"kernels running {fmt_ms(gpu['compute_busy_ms'])} of {fmt_ms(gpu['window_ms'])}",
                                 f"idle {fmt_ms(gpu['idle_ms'])}; copies only {fmt_ms(gpu['copy_only_ms'])}"]})
    if tc["available"]:
        basis = (f"from {str(tc['source']).replace('_', ' ')}" if tc["source"]
                 else f"evidence: {clean_text(str(tc['evidence'] or MISSING), 90)}")
        cards.append({"key": "tensor-cores", "label": "Tensor Core share of kernel time",
                      "value": fmt_pct(tc["share_of_kernel_time"]), "meter": meter(tc["share_of_kernel_time"]),
                      "detail": [f"{fmt_share(tc['tc_share_of_gemm'])} of GEMM/conv time on Tensor Cores",
                                 f"{basis} ({tc['confidence'] or 'unknown'} confidence)"]
                      + ([clean_text(str(tc["basis"]), 240)] if tc.get("basis") else [])})
    if gm["available"]:
        o = gm["overall"]
        for key, label in (("sm_active", "SM active"), ("tensor_active", "Tensor active"),
                           ("dram_bandwidth", "DRAM bandwidth"), ("pcie_rx", "PCIe RX"), ("pcie_tx", "PCIe TX")):
            if finite(o.get(key)) is None:
                continue
            f = float(o[key])
            cards.append({"key": slug(key), "label": label, "value": fmt_frac_or_rate(f),
                          "meter": meter(f) if f is not None and f <= 1 else None,
                          "detail": ["sampled GPU metrics, " + ("share of peak" if f <= 1 else "bytes per second")]})
    if tp["available"]:
        lo, mo = finite(tp["loader_samples_per_s"]), finite(tp["model_samples_per_s"])
        top = max([x for x in (lo, mo) if x is not None] or [0.0])
        cards.append({"key": "throughput", "label": "Loader vs model throughput",
                      "value": (tp["bottleneck"] or MISSING) + (" limits" if tp["bottleneck"] else ""),
                      "meter": None,
                      "bars": [{"key": "loader", "label": "loader", "value": fmt_rate(lo, "samples"),
                                "width": meter(lo / top) if lo is not None and top else None},
                               {"key": "model", "label": "model", "value": fmt_rate(mo, "samples"),
                                "width": meter(mo / top) if mo is not None and top else None}],
                      "detail": [f"batch size {fmt_count(tp['batch_size'])} ({tp['source'] or 'given'})"]})
    comm = v["communication"]
    if comm["available"]:
        cards.append({"key": "communication", "label": "Exposed communication", "value": fmt_pct(comm["exposed_share"]),
                      "meter": meter(comm["exposed_share"]),
                      "detail": ["share of step time where NCCL runs with no compute beside it"]})
    mem = v["memory"]
    if mem["available"]:
        peaks = [float(d["peak_share"]) for d in mem["per_device"] if finite(d["peak_share"]) is not None]
        peak = max(peaks) if peaks else None
        cards.append({"key": "memory", "label": "Peak GPU memory", "value": fmt_pct(peak), "meter": meter(peak),
                      # the one memory tip of a report is the verdict's (worded for the
                      # program, never a larger batch beside an input-bound verdict)
                      "detail": ["of device memory, highest GPU"]})
    for c in cards:
        c.setdefault("bars", [])
    return cards


def _verdict(v: dict, ncu_only: bool = False) -> dict:
    vd, steps = v["verdict"], v["steps"]
    code = vd["code"] or "insufficient_data"
    proj = replay_projection(v)
    projection = None
    if proj is not None:
        projection = {"now": fmt_ms(proj["now_ms"]), "fixed": fmt_ms(proj["fixed_ms"]),
                      "per": proj["per"],
                      "speedup": fmt_ratio(proj["speedup"]) if proj["speedup"] else None}
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
    if ncu_only:  # kernels without a timeline: no step, busy or idle time to show
        kpis = [k for k in kpis if k["label"] == "Tensor Cores"]
    return {"code": code, "title": VERDICT_TITLES.get(code, code), "tone": VERDICT_TONES.get(code, "warn"),
            "headline": vd["headline"] or "No headline in this analysis.",
            "confidence": vd["confidence"] or "unknown", "scale_advice": vd["scale_advice"],
            "recommendations": [r for r in vd["recommendations"] if r],
            "secondary": [VERDICT_TITLES.get(c, c) for c in vd["secondary"] if c],
            "evidence": _evidence_rows(v), "projection": projection, "kpis": kpis,
            "findings": _findings(v)}


def build_page(view: dict) -> dict:
    """Everything the templates need besides charts. ``view`` should come from ``clean_view``."""
    v = normalize(view)
    status = _section_status(v)
    warnings = [d for d in v["data_quality"] if d["severity"] == "warning"]
    trace = v["trace"]
    tool = v["tool"]
    title_name = str(trace["path"] or "trace").replace("\\", "/").rsplit("/", 1)[-1]
    ncu_only = str(trace["format"] or "") in NCU_FORMATS
    order = section_order(ncu_only, status)
    return {
        "title": f"nsys-diag — {title_name}",
        "trace_name": title_name,
        "tool": {"name": tool["name"] or "nsys-diag", "version": tool["version"] or MISSING},
        "generated_at": v["generated_at"] or MISSING,
        "sections": [{"key": k, "id": f"sec-{k}", "label": label, **status[k]}
                     for k, label in _ordered_sections(order)],
        "order": order,
        "ncu_only": ncu_only,
        "folded": _folded(ncu_only),
        "status": status,
        "verdict": _verdict(v, ncu_only),
        "warnings": warnings,
        "data_quality": v["data_quality"],
        "steps": v["steps"],
        "steps_summary": _steps_summary(v),
        "phase_table": phase_table(v),
        "outlier_table": step_outlier_table(v),
        "cards": _metric_cards(v),
        "device_table": device_table(v) if len(v["gpu"]["per_device"]) > 1 else None,
        "metrics_phase_table": metrics_phase_table(v) if v["gpu_metrics"]["available"]
        and v["gpu_metrics"]["per_phase"] else None,
        "metrics_hint": None if v["gpu_metrics"]["available"] else v["gpu_metrics"]["hint"],
        "comm_table": comm_table(v) if v["communication"]["available"] else None,
        "loader": loader_block(v),
        "memory_table": memory_table(v) if v["memory"]["available"] else None,
        "process_table": process_table(v) if len(v["processes"]) > 1 else None,
        "gaps": {"count": fmt_count(v["gaps"]["count"]), "total": fmt_ms(v["gaps"]["total_ms"]),
                 "min_gap": fmt_ns(v["gaps"]["min_gap_ns"])},
        "gap_table": gap_table(v),
        "kernel_table": kernel_table(v),
        "nvtx_range_table": nvtx_range_table(v),
        "kernel_summary": _kernel_summary(v),
        "kernel_categories": sorted({str(k["category"] or "other") for k in v["kernels"]}),
        "tensor_cores": v["tensor_cores"],
        "tc_evidence": [e for e in v["tensor_cores"]["evidence_list"] if e]
        or ([v["tensor_cores"]["evidence"]] if v["tensor_cores"]["evidence"] else []),
        "non_tc": [{"name": k["name"], "share": fmt_share(k["share"])}
                   for k in v["tensor_cores"]["non_tc_gemm_kernels"]],
        "non_tc_share": fmt_share(v["tensor_cores"]["non_tc_gemm_share"]),
        "non_tc_check": _worded(v, NON_TC_CHECK),
        "roofline": v["roofline"],
        "roofline_table": roofline_table(v) if v["roofline"]["available"] else None,
        "roofline_pairings": fallback_pairings(v["roofline"]) if v["roofline"]["available"] else [],
        "roofline_gpu": gpu_label(v["roofline"]) if v["roofline"]["available"] else "",
        "roofline_peaks": peaks_source_text(v["roofline"]) if v["roofline"]["available"] else "",
        "transfer_table": transfer_table(v) if v["transfers"]["available"] else None,
        "transfers": {"pageable_count": fmt_count(v["transfers"]["pageable_count"]),
                      "pageable_bytes": fmt_bytes(v["transfers"]["pageable_bytes"]),
                      "sync_copies": fmt_count(v["transfers"]["sync_copies"]),
                      "sync_note": _worded(v, SYNC_COPIES_NOTE),
                      "has_pageable": bool(finite(v["transfers"]["pageable_count"])),
                      **_pageable_note(v),
                      "has_sync": bool(finite(v["transfers"]["sync_copies"]))},
        "capture": _capture(v),
        "replay": replay_page(v),
        "gpu_table": gpu_table(v),
        "tables_table": tables_table(v),
        "thresholds": _threshold_rows(v),
        "capture_hints": [h for h in v["capture_hints"] if h],
    }


def _worded(v: dict, note: str) -> str:
    """A report note worded for the input format and the program that ran (``hint_for``)."""
    return hint_for(note, v["trace"].get("format"), (v.get("program") or {}).get("framework"))


PIN_HOW = {"pytorch": "pin_memory=True, non_blocking=True",
           "cuda": "cudaMallocHost or cudaHostRegister, then cudaMemcpyAsync",
           "openmp_offload": "page-locked host buffers for the target update copies",
           "openacc": "pinned host memory, e.g. -gpu=pinned"}
"""How the transfers note says "pin it", by ``program.framework`` (others: the neutral words)."""


def _pageable_note(v: dict) -> dict:
    """The transfers note on pageable copies, from the quantities it states: "pin it" only when
    the pageable copies move at least ``pageable_copy_min_bytes`` or run at least
    ``pageable_copy_min_window_share`` of the window (the pinned-memory advice's own bars; below
    both the staging copy costs too little to change the allocation), worded for the program;
    else the count, bytes and copy time, said to be too little to matter."""
    t = v["transfers"]
    th = v.get("thresholds") or {}
    n, size = finite(t.get("pageable_count")), finite(t.get("pageable_bytes"))
    share = finite(t.get("pageable_window_share"))
    bar = finite(th.get("pageable_copy_min_bytes")) or (1 << 20)
    share_bar = finite(th.get("pageable_copy_min_window_share")) or 0.01
    if not n:
        return {"pageable_worth_pinning": False, "pageable_text": ""}
    what = f"{fmt_count(n)} copies ({fmt_bytes(size or 0)}) used pageable host memory"
    if share is not None:
        what += f", {fmt_share(share)} of the window"
    if (size or 0) < bar and (share is None or share < share_bar):
        under = f"under {fmt_bytes(bar)}" + (f" and {fmt_share(share_bar)} of the window"
                                              if share is not None else "")
        return {"pageable_worth_pinning": False,
                "pageable_text": f"{what}: {under}, too little to be worth pinning."}
    how = PIN_HOW.get(str((v.get("program") or {}).get("framework") or ""),
                      "page-locked (pinned) host memory with asynchronous copies")
    return {"pageable_worth_pinning": True,
            "pageable_text": f"{what}: pin it ({how}) so copies run asynchronously at full speed."}


def _kernel_summary(v: dict) -> str | None:
    """'2,400 launches of 4 kernels, 7.68 ms; 100% of launches shorter than 10 µs (100% of time)'."""
    ks = v.get("kernel_summary")
    if not isinstance(ks, dict) or finite(ks.get("count")) is None:
        return None
    line = (f"{fmt_count(ks.get('count'))} launches of {fmt_count(ks.get('names'))} kernels, "
            f"{fmt_ns(ks.get('total_ns'))}")
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
        {"label": "Warm-up (excluded)", "value": step_list(s["warmup"])},
        {"label": "Incomplete (excluded)", "value": step_list(s["incomplete"])},
    ]


def _capture(v: dict) -> list[dict]:
    t, w = v["trace"], v["window"]
    procs = ", ".join(f"{p['name'] or '?'} ({p['pid']})" for p in t["processes"][:8])
    if len(t["processes"]) > 8:
        procs += f" … (+{len(t['processes']) - 8})"
    scope: dict = v["scope"] if isinstance(v.get("scope"), dict) else {}
    analysed: list[dict] = []
    if scope.get("pid") is not None or scope.get("name"):
        who = f"{scope.get('name') or '?'} (pid {scope.get('pid') if scope.get('pid') is not None else '?'})"
        if (finite(scope.get("process_count")) or 0) > 1:
            who += (f" — the headline of {fmt_count(scope.get('process_count'))} processes"
                    + (f" ({scope['headline_rule']})" if scope.get("headline_rule") else ""))
        analysed = [{"label": "Analysed process", "value": who}]
    head = analysed + [{"label": "Trace", "value": t["path"] or MISSING},
                       {"label": "Format", "value": t["format"] or MISSING}]
    if kernels_only(t):  # a kernel CSV has no nsys version, schema, timeline or window
        return head + ([{"label": "Processes", "value": procs}] if procs else [])
    return head + [
        {"label": "nsys version", "value": KINETO_LABEL if t["format"] == KINETO_FORMAT
         else t["nsys_version"] or "unknown"},
        {"label": "Export schema", "value": t["schema_version"] or "unknown"},
        {"label": "Capture span", "value": fmt_ns(t["capture_span_ns"])},
        {"label": "Analysed window",
         "value": f"{fmt_ms(w['duration_ms'])} ({w['source'] or 'unknown'}), "
                  f"{fmt_ns(w['start_ns'])} → {fmt_ns(w['end_ns'])} on the session timeline"
                  + (f"; {(w.get('coverage') or {}).get('text')}"
                     if (w.get("coverage") or {}).get("text") else "")},
        {"label": "Processes", "value": procs or MISSING},
    ]
