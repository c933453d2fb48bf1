"""The view-model: ``build_view(meta, suite, …) -> dict`` exactly as documented in docs/JSON.md.

Every renderer (HTML, Markdown, terminal, JSON) reads this dict and nothing else. It holds only
JSON types (no numpy/pandas, no NaN/Infinity: unknown numbers are ``None``). The top-level
sections describe the **headline process** (the slowest one when the file holds several ranks);
``processes`` lists every analysed process.

Privacy: ``trace.path`` is the file name only, and host facts/command line are included only
with ``options.include_host_info``; the environment is never included.
"""
from __future__ import annotations

import os
from typing import Any

from nsys_diag._version import __version__
from nsys_diag.analyses.diagnosis.pricing import OUTCOMES, savings_of, unpriced_reason, upper_bounds_of
from nsys_diag.analyses.steps.step_phases import per_step_phase_ms
from nsys_diag.model.jsonsafe import jsonable
from nsys_diag.model.vocabulary import (HINT_CAPTURE_CUDA, HINT_NCU, hint_for,
                                        hint_wording)
from nsys_diag.report.quantities import attach_paths
from nsys_diag.report.contract import (PROCESS_KEYS, SCHEMA_VERSION, apply_aliases,
                                      unavailable)

__all__ = ["PROCESS_KEYS", "SCHEMA_VERSION", "build_view", "jsonable", "process_name"]


def _section(result, *, missing_reason: str = "not analysed") -> dict:
    """A result's JSON, or ``{available: false, reason, hint}``."""
    if result is None:
        return unavailable(missing_reason)
    j = result.to_json()
    if isinstance(j, dict):
        j = dict(j)
        if "available" not in j:
            j["available"] = bool(getattr(result, "available", True))
        if j["available"] is False:
            j.setdefault("reason", getattr(result, "reason", "") or missing_reason)
            j.setdefault("hint", getattr(result, "hint", "") or "")
    return j


def process_name(name, include_host_info: bool):
    """Process names can be paths (``/home/me/venv/bin/python``): the basename unless
    ``include_host_info`` (privacy, as in ``inspect``)."""
    if not name or include_host_info:
        return name
    return str(name).rstrip("/").rsplit("/", 1)[-1] or name


def _read_window(rec) -> dict | None:
    """The window the loader read (``--window`` or the memory budget), None: the whole export."""
    if not isinstance(rec, dict):
        return None
    out = {"start_ns": int(rec["start_ns"]), "end_ns": int(rec["end_ns"]),
           "reason": str(rec.get("reason", "window"))}
    for key in ("row_fraction", "kernel_share", "kernel_time_share"):
        if rec.get(key) is not None:
            out[key] = round(float(rec[key]), 4)
    return out


def _trace(meta, suite, include_host_info: bool) -> dict:
    procs = [{"pid": p.pid, "name": process_name(p.name, include_host_info)}
             for p in suite.processes if p.pid != -1]
    out = {
        "path": meta.path if include_host_info else os.path.basename(str(meta.path)),
        "format": meta.format,
        "nsys_version": meta.nsys_version or None,
        "schema_version": meta.schema_version or None,
        "gpus": list(suite.gpus),
        "processes": procs,
        "capture_span_ns": int(max(meta.capture_end_ns - meta.capture_start_ns, 0)),
        "session_start_utc_ns": meta.session_start_utc_ns,
        "tables": {str(k): int(v) for k, v in sorted(meta.tables.items())},
        "read_window": _read_window(meta.extra.get("read_window")),
    }
    chunks = meta.extra.get("chunks")
    if isinstance(chunks, dict):  # streamed chunk by chunk (app/stream.py)
        out["chunks"] = {k: chunks.get(k) for k in ("count", "max_rows", "passes",
                                                    "inexact_cuts", "chunk_rows")}
    if include_host_info:
        out["host"] = {str(k): str(v) for k, v in sorted(meta.host.items())}
        out["command_line"] = meta.command_line
    return out


def _kernels_block(kres) -> dict:
    if getattr(kres, "available", False):
        j = kres.to_json()
        return {"kernels": j.get("kernels", []), "kernels_total": j.get("kernels_total", 0),
                "kernel_categories": j.get("kernel_categories", []),
                "kernel_summary": j.get("kernel_summary")}
    return {"kernels": [], "kernels_total": 0, "kernel_categories": [], "kernel_summary": None}


def _quality(suite, head) -> list[dict]:
    """The file's and the headline process's data-quality items, each once."""
    items, seen = [], set()
    for q in list(suite.data_quality) + list(head.data_quality):
        key = (q.code, q.message)
        if key in seen:
            continue
        seen.add(key)
        items.append(q.to_json())
    return items


def _attach_step_phases(steps: dict, phases_result) -> None:
    """Add ``phases{canonical: ms}`` to each analysed entry of ``steps.per_step`` (computed by
    ``analyses.step_phases``) so compare can bootstrap phases over steps."""
    per_step = steps.get("per_step") if isinstance(steps, dict) else None
    if not per_step:
        return
    by_index = per_step_phase_ms(phases_result)
    for entry in per_step:
        phases = by_index.get(int(entry.get("index", -1)))
        if phases is not None:
            entry["phases"] = phases


def _findings(verdict) -> list[dict]:
    """Every finding of the headline process (fired first, by cost), see analyses/diagnosis/findings.py."""
    fn = getattr(verdict, "findings_json", None)
    return fn() if callable(fn) else []


def with_savings(findings: list[dict], replay) -> list[dict]:
    """Each fired finding with ``saves_ms_per_step`` from the replay's what-if for its cause
    (``analyses/diagnosis/pricing.py``: the same prices as the verdict's), ``saves_share`` (of
    the mean analysed step, or of the window) and ``saves_basis`` (``step`` / ``window``: what
    the saving is of); ``None`` and ``saves_reason`` when there is none — a what-if that found
    nothing of its cause to change prices nothing. An unpriced cause whose fix another what-if
    bounds from above (``pricing.UPPER_BOUND``) also gets ``saves_upper_bound_ms`` and
    ``saves_upper_bound_what_if``."""
    if not any(f.get("fired") for f in findings):
        return findings
    priced, bounds = savings_of(replay), upper_bounds_of(replay)
    for f in findings:
        if not f.get("fired") or f.get("cause") in OUTCOMES:  # no fix of the run to price
            continue
        cause = str(f.get("cause"))
        w = priced.get(cause)
        if w is not None and w.prices:
            f.update(saves_ms_per_step=w.saves_ms, saves_share=w.saves_share, saves_basis=w.per)
            continue
        f["saves_ms_per_step"] = None
        if not getattr(replay, "available", False):
            f["saves_reason"] = f"the replay is not available: {getattr(replay, 'reason', '')}"
        elif w is not None:
            f["saves_reason"] = f"nothing in this trace for its what-if ({w.what_if}) to change"
        else:
            f["saves_reason"] = unpriced_reason(cause)
        bound = bounds.get(cause)
        if bound is not None:
            f.update(saves_upper_bound_ms=bound.saves_ms, saves_upper_bound_what_if=bound.what_if,
                     saves_basis=bound.per, saves_share=bound.saves_share)
    return findings


def _window_view(p) -> dict:
    """The analysed window, and — when it is a selection (steps, ``--window``) — how much of the
    capture's kernel work it covers (``coverage``: the window's kernels and kernel time beside
    the capture's, from the launch-shape sample; absent when the capture's totals are unknown),
    and ``capture``: the whole capture's kernel time (ms), kernel count and GPU busy share that
    the abstain rule reads (absent without a launch-shape sample)."""
    out = p.window.to_json()
    vin = getattr(p, "verdict_inputs", None)
    kres = p.kernels
    total_ms = getattr(vin, "capture_kernel_ms", None)
    total_n = getattr(vin, "capture_kernel_count", None)
    busy = getattr(vin, "capture_busy_share", None)
    if total_ms is not None and total_n is not None and busy is not None:
        out["capture"] = {"kernel_ms": float(total_ms), "kernels": int(total_n),
                          "busy_share": float(busy)}
    if out.get("source") not in ("steps", "user") or total_ms is None or total_n is None \
            or not hasattr(kres, "kernel_count"):
        return out
    n, ms = int(kres.kernel_count), float(kres.total_ns) / 1e6
    n_out, ms_out = max(int(total_n) - n, 0), max(float(total_ms) - ms, 0.0)
    what = "the selected steps cover" if out["source"] == "steps" else "the --window range covers"
    text = (f"{what} {n:,} of the capture's {int(total_n):,} kernels ({ms:,.1f} of "
            f"{float(total_ms):,.1f} ms of kernel time)")
    text += (f"; {n_out:,} kernels ({ms_out:,.1f} ms) are left out" if n_out or ms_out >= 0.05
             else "")
    out["coverage"] = {"kernels": n, "kernel_ms": ms, "capture_kernels": int(total_n),
                       "capture_kernel_ms": float(total_ms), "text": text}
    return out


def process_sections(p, loader=None) -> dict:
    """The per-process sections (``contract.PROCESS_KEYS``) of one ``ProcessAnalysis``; ``loader``: the
    DataLoader workers to show (the process's own when None)."""
    steps = _section(p.steps)
    _attach_step_phases(steps, p.phases)
    phases = p.phases.to_json() if getattr(p.phases, "available", False) else []
    loader = loader if loader is not None else getattr(p, "loader", None)
    return {
        "window": _window_view(p),
        "steps": steps,
        "phases": phases,
        "phases_status": ({"available": True} if phases else _section(p.phases)
                          if not getattr(p.phases, "available", False)
                          else unavailable("no phase ranges")),
        "gpu": (_section(p.utilization) if p.devices
                else unavailable("no GPU activity in this process", HINT_CAPTURE_CUDA)),
        "gaps": _section(p.gaps),
        "timeline": _section(p.timeline, missing_reason="no steps and no GPU activity"),
        **_kernels_block(p.kernels),
        "tensor_cores": _section(p.tensor_cores),
        "transfers": _section(p.transfers),
        "gpu_metrics": _section(p.gpu_metrics),
        "throughput": _section(p.throughput),
        "mfu": p.mfu if p.mfu is not None else {"available": False,
                                                "reason": "not analysed", "hint": ""},
        "scaling": p.scaling[0], "scaling_reason": p.scaling[1],
        "loader": _section(loader, missing_reason="not analysed"),
        "communication": _section(p.communication),
        "memory": _section(p.memory),
        "nvtx_ranges": _section(p.nvtx_ranges, missing_reason="not analysed"),
        "timeline_lanes": _section(getattr(p, "timeline_lanes", None), missing_reason="not analysed"),
        "gpu_fill": _section(p.gpu_fill, missing_reason="not analysed"),
        "roofline": (apply_aliases("roofline", _section(p.roofline)) if p.roofline is not None
                     else unavailable("no Nsight Compute data", HINT_NCU)),
        "replay": _section(getattr(p, "replay", None), missing_reason="not analysed"),
        "verdict": p.verdict.to_json(),
        "findings": with_savings(_findings(p.verdict), getattr(p, "replay", None)),
        "data_quality": [q.to_json() for q in p.data_quality],
    }


def _process_rows(suite, host_info: bool) -> list[dict]:
    """``processes[]``: one row per analysed process when there are two or more — its summary
    (pid, name, devices, steps, verdict code…) and its full sections (``PROCESS_KEYS``)."""
    if len(suite.processes) < 2:
        return []
    rows = []
    for i, p in enumerate(suite.processes):  # one per GPU process (rank)
        row = dict(p.summary(), is_headline=(i == suite.headline_index))
        row["name"] = process_name(row.get("name"), host_info)
        row.update(process_sections(p))
        rows.append(row)
    return rows


def _headline_sections(suite, host_info: bool) -> dict:
    """The headline process's sections with ``processes`` in its place (after ``roofline``: the
    per-trace JSON of a batch run keeps its key order)."""
    out = {}
    for key, value in process_sections(suite.headline, loader=getattr(suite, "loader", None)).items():
        if key == "verdict":
            out["processes"] = _process_rows(suite, host_info)
        if key != "data_quality":
            out[key] = value
    return out


def build_view(bundle_meta, suite, *, generated_at: str, options=None) -> dict:
    """The analysis JSON / view-model (see docs/JSON.md)."""
    options = options if options is not None else suite.options
    head = suite.headline
    host_info = bool(getattr(options, "include_host_info", False))
    view: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "nsys-diag", "version": __version__},
        "generated_at": generated_at,
        "trace": _trace(bundle_meta, suite, bool(getattr(options, "include_host_info", False))),
        "scope": {"pid": head.pid if head.pid != -1 else None,
                  "name": process_name(head.name, host_info) or None,
                  "devices": list(head.devices), "process_count": len(suite.processes),
                  "headline_rule": "slowest process (largest mean step; else most GPU compute)",
                  "headline_by": ("step_time" if getattr(head.steps, "available", False)
                                  else "gpu_compute")},
        **_headline_sections(suite, host_info),
        "data_quality": _quality(suite, head),
        "thresholds": suite.thresholds.to_dict(),
        "capture_hints": list(suite.capture_hints),
        "program": (suite.program.to_json() if getattr(suite, "program", None) is not None
                    else None),
        "capabilities": (suite.capabilities.to_json()
                         if getattr(suite, "capabilities", None) is not None else {}),
    }
    view = jsonable(view)
    framework = getattr(getattr(suite, "program", None), "framework", None)
    if hint_wording(bundle_meta.format, framework) != "pytorch":
        view = worded_for_program(view, bundle_meta.format, framework)
    return attach_paths(view)


def worded_for_program(node: Any, trace_format: str | None, framework: str | None) -> Any:
    """``node`` with every capture hint worded for the input format and the program that ran
    (``vocabulary.hint_for``): on a PyTorch profiler trace, torch.profiler's way of recording it
    or that it needs an Nsight Systems capture; for a compiled program, NVTX's C API and command
    lines that run ``./app``; for another framework, no PyTorch names. One pass over the view
    (its tables are bounded by ``--max-rows``)."""
    if isinstance(node, dict):
        return {k: worded_for_program(v, trace_format, framework) for k, v in node.items()}
    if isinstance(node, list):
        return [worded_for_program(v, trace_format, framework) for v in node]
    return hint_for(node, trace_format, framework) if isinstance(node, str) else node
