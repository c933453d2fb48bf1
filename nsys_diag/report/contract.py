"""The report contract: every JSON section of the analysis view, in one place.

``build_view`` (report/view.py) produces the view; ``normalize``, ``clean_view``/caps
(report/clean.py) and every renderer (HTML, Markdown, terminal, JSON) read what this module
declares:

* ``SPEC`` — each key of the view with its default (``None``/empty); a ``Section`` marks an
  optional section, with the ``reason``/``hint`` of its unavailable form
  ``{available: false, reason, hint}``;
* ``unavailable(reason, hint)`` — that form, built in one place;
* ``LIST_CAPS`` — which lists the report caps, and by which ``Limits`` field;
* ``ALIASES`` — the extra names the JSON keeps for compatibility (keys are only ever added): each
  alias → its canonical key. Analyses emit canonical names only; ``apply_aliases`` adds the rest.
* ``SECTIONS`` — the report's sections in page order.

``json_schema()`` generates ``nsys_diag/schemas/analysis.schema.json`` from ``SPEC`` and the types
of report/schema_types.py. ``python -m nsys_diag.report.contract`` prints the generated key
reference of docs/JSON.md (``--write`` updates that file and the schema);
tests/report/test_contract.py proves the committed docs and schema equal the generated ones.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from nsys_diag.analyses.kernels.names import kernel_base_name
from nsys_diag.model.vocabulary import (GAP_CAUSES, HINT_GPU_METRICS, NSYS_CAPTURE_COMMAND,
                                        VERDICT_CODES)
from nsys_diag.report.json_out import schema_path
from nsys_diag.report.schema_types import (NULLABLE_SECTIONS, OPTIONAL, PROCESS_KEYS, TYPES, enum,
                                           expand)

SCHEMA_VERSION = 1
"""``schema_version`` of the analysis JSON."""

SECTION_KEYS = ("tensor_cores", "transfers", "gpu_metrics", "throughput", "communication",
                "memory", "roofline")
"""Optional analysis sections that ``build_view`` copies from a result's ``to_json``."""


@dataclass(frozen=True)
class Section:
    """An optional section of the view: ``None`` or ``available: false`` → unavailable, shown
    with ``reason`` and ``hint`` (what to capture) unless the view carries its own."""

    spec: dict
    reason: str
    hint: str = ""


_Section = Section  # the name page.py used


def unavailable(reason: str, hint: str = "") -> dict:
    """The unavailable form of any section: ``{available: false, reason, hint}``."""
    return {"available": False, "reason": reason, "hint": hint}


_NSYS_HINT = NSYS_CAPTURE_COMMAND

_GPU_ROW = {"device_id": None, "name": None, "utilization": None, "compute_busy_ms": None,
            "copy_busy_ms": None, "busy_ms": None, "idle_ms": None}
_METRICS_ROW = {"phase": None, "sm_active": None, "tensor_active": None, "dram_bandwidth": None,
                "pcie_rx": None, "pcie_tx": None}
_EVIDENCE = {"metric": None, "value": None, "threshold": None, "comparison": None, "source": None,
             "fired": None, "role": None}
_ADVICE = {"text": None, "because": [None]}
_XFER = {"count": None, "bytes": None, "time_ms": None, "gb_per_s": None, "expected_gb_per_s": None}

SPEC: dict[str, Any] = {
    "schema_version": None,
    "tool": {"name": "nsys-diag", "version": None},
    "generated_at": None,
    "trace": {"path": None, "format": None, "nsys_version": None, "schema_version": None,
              "gpus": [{"id": None, "name": None, "sm_count": None, "memory_bytes": None,
                        "memory_bandwidth_bytes_per_s": None, "compute_capability": None}],
              "processes": [{"pid": None, "name": None}],
              "capture_span_ns": None, "session_start_utc_ns": None, "tables": {},
              "chunks": {"count": None, "max_rows": None, "passes": None, "inexact_cuts": None,
                         "chunk_rows": None}},
    "window": {"start_ns": None, "end_ns": None, "duration_ms": None, "source": None},
    "steps": Section(
        {"count": None, "analysed_count": None, "source": None, "range_name": None, "mean_ms": None,
         "median_ms": None, "p90_ms": None, "max_ms": None, "min_ms": None, "warmup": [None],
         "incomplete": [None],
         "outliers": [{"index": None, "duration_ms": None, "ratio_to_median": None, "reason": None}],
         "per_step": [{"index": None, "start_ns": None, "duration_ms": None, "kind": None}]},
        "No training steps were found.",
        "Mark each step with an NVTX range (see nsys_diag.annotate) and capture with -t nvtx."),
    "phases": [{"name": None, "canonical": "other", "mean_ms": None, "share": None, "gpu_busy_ms": None,
                "gpu_busy_share": None, "gpu_work_ms": None, "count": None}],
    "gpu": Section(
        {"utilization": None, "compute_busy_ms": None, "copy_busy_ms": None, "busy_ms": None,
         "idle_ms": None, "window_ms": None, "copy_only_ms": None, "per_device": [_GPU_ROW]},
        "No GPU activity in the analysed window.", "Capture CUDA activity: " + _NSYS_HINT),
    "gaps": Section(
        {"count": None, "total_ms": None, "min_gap_ns": None,
         "by_cause": dict.fromkeys(GAP_CAUSES), "by_cause_detail": dict.fromkeys(GAP_CAUSES),
         "first_kernel_ns": None,
         "histogram": [{"lo_ns": None, "hi_ns": None, "count": None, "total_ms": None}],
         "top": [{"start_ns": None, "duration_ms": None, "device_id": None, "cause": None,
                  "cpu_activity": None, "phase": None,
                  "evidence": [{"cause": None, "ms": None, "detail": None}]}],
         "cpu_samples_available": None,
         "other_top_frames": [{"frame": None, "samples": None, "share": None}]},
        "GPU idle gaps could not be computed.", "Capture CUDA activity: " + _NSYS_HINT),
    "timeline": Section(
        {"bin_ns": None,
         "strips": [{"label": None, "step_index": None, "start_ns": None, "end_ns": None,
                     "phases": [{"name": None, "canonical": "other", "start_ns": None, "end_ns": None}],
                     "devices": [{"device_id": None, "busy": [None]}]}],
         "window_bins": None},
        "No step to draw.", "Mark steps with NVTX ranges and capture with -t cuda,nvtx."),
    "kernels": [{"name": None, "short_name": None, "count": None, "total_ns": None, "mean_ns": None,
                 "median_ns": None, "max_ns": None, "share": None, "category": None, "tensor_core": None}],
    "kernels_total": None,
    "tensor_cores": Section(
        {"share_of_kernel_time": None, "gemm_share": None, "tc_share_of_gemm": None, "evidence": None,
         "confidence": None, "non_tc_gemm_share": None, "source": None, "evidence_list": [None], "advice": None,
         "non_tc_gemm_kernels": [{"name": None, "share": None}],
         "tensor_active_during_gemm": None, "engaged": None, "basis": None,
         "non_tc_gemm_source": None},
        "Tensor Core use could not be assessed (no kernels).", "Capture CUDA activity: " + _NSYS_HINT),
    "transfers": Section(
        {"by_kind": {"H2D": _XFER, "D2H": _XFER, "D2D": _XFER, "P2P": _XFER}, "pageable_count": None,
         "pageable_bytes": None, "sync_copies": None},
        "No memory transfers in the analysed window.", "Capture CUDA activity (-t cuda)."),
    "gpu_metrics": Section(
        {"per_device": [{}], "overall": {"sm_active": None, "tensor_active": None, "dram_bandwidth": None,
                                         "pcie_rx": None, "pcie_tx": None},
         "per_phase": [_METRICS_ROW]},
        "No GPU metrics were sampled.",
        HINT_GPU_METRICS),
    "throughput": Section(
        {"batch_size": None, "source": None, "loader_samples_per_s": None, "model_samples_per_s": None,
         "bottleneck": None},
        "Batch size unknown.", "Pass --batch-size N to compare loader and model throughput."),
    "mfu": Section(
        {"flops_per_step": None, "flops_source": None, "step_ms": None, "samples_per_s": None,
         "achieved_tflops": None, "peak_tflops": None, "peak_precision": None, "gpu": None,
         "mfu": None, "assumptions": [None]},
        "Model FLOPs unknown.", "Pass --model-flops-per-step N (or --model-flops-per-sample N "
        "with --batch-size) to report achieved TFLOP/s and MFU."),
    "scaling": [{"gpus": None, "step_ms": None, "allreduce_ms": None, "samples_per_s": None,
                 "efficiency": None, "assumptions": [None]}],
    "scaling_reason": None,
    "loader": Section(
        {"workers": None, "busy_share": None, "state": None, "basis": None, "saturated_at": None,
         "idle_below": None, "window_ms": None,
         "per_worker": [{"pid": None, "tid": None, "name": None, "busy_share": None, "basis": None,
                         "evidence": None}]},
        "No DataLoader worker processes or threads in the export.",
        "Capture the workers too (nsys traces child processes by default) with NVTX ranges, "
        "-t osrt or --sample=process-tree."),
    "communication": Section(
        {"per_device": [{"device_id": None, "comm_ms": None, "hidden_ms": None, "exposed_ms": None}],
         "exposed_share": None},
        "No communication kernels (single GPU or no NCCL).", ""),
    "memory": Section(
        {"per_device": [{"device_id": None, "peak_bytes": None, "device_bytes": None, "peak_share": None}],
         "advice": None},
        "GPU memory usage was not captured.", "nsys profile --cuda-memory-usage=true …"),
    "roofline": Section(
        {"source": None, "device": None, "clock_source": None, "memory_level": None,
         "roofs": [{"name": None, "kind": None, "value": None}],
         "kernels": [{"name": None, "short_name": None, "launches": None, "time_share": None,
                      "arithmetic_intensity": None, "achieved_flops_per_s": None, "sm_pct": None,
                      "mem_pct": None, "bound": None, "precision": None}],
         "kernels_total": None, "notes": [None], "peaks_source": None,
         "matches": [{"timeline_name": None, "ncu_names": [None], "level": None,
                      "duration_ratio": None, "launches": None, "ncu_launches": None,
                      "launch_config": None, "timeline_launch_config": None}]},
        "No Nsight Compute data was given.",
        "ncu --set full --csv --page raw -o kernels python train.py, then: "
        "nsys-diag analyze TRACE --ncu kernels.csv"),
    "processes": [{"pid": None, "name": None, "steps_mean_ms": None, "verdict_code": None}],  # + sections
    "verdict": {"code": "insufficient_data", "headline": None, "confidence": None, "scale_advice": None,
                "evidence": [_EVIDENCE],
                "recommendations": [None], "projected_step_ms_if_fixed": None, "secondary": [None],
                "advice": [_ADVICE], "finding": None},
    "findings": [{"code": None, "cause": None, "severity": "info", "fired": False,
                  "share_of_window": None, "per_step_ms": None, "threshold": None,
                  "evidence": [_EVIDENCE], "advice": [_ADVICE], "headline": None}],
    "data_quality": [{"code": None, "message": None, "count": None, "severity": "info", "hint": None}],
    "thresholds": {},
    "capture_hints": [None],
    "capabilities": {"steps": None, "phases": None, "gpu_activity": None, "nvtx_ranges": None,
                     "gpu_metrics": None, "tensor_active_metric": None, "ncu": None,
                     "gpu_memory_events": None, "osrt": None, "cpu_samples": None,
                     "processes": [{"pid": None, "steps": None, "analysed_steps": None,
                                    "steps_source": None, "steps_reason": None, "phases": None,
                                    "phases_reason": None}]},
}

PROCESS_ROW_KEYS = tuple(SPEC["processes"][0])
"""The summary keys of a ``processes[]`` row (the per-process sections, ``PROCESS_KEYS``, follow)."""
SPEC["processes"][0].update({k: SPEC[k] for k in PROCESS_KEYS if k in SPEC})


def _norm(value: Any, spec: Any) -> Any:
    """``value`` completed with the defaults of ``spec`` (extra keys are kept)."""
    if isinstance(spec, Section):
        return _norm_section(value, spec)
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


def _norm_section(value: Any, spec: Section) -> dict:
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


def normalize(view: dict) -> dict:
    """``view`` with every key of ``SPEC`` present (``None``/empty defaults), each optional section
    carrying ``available``/``reason``/``hint``. Templates run under ``StrictUndefined``; a view
    from an older or partial analysis still renders. Idempotent."""
    return _norm(view if isinstance(view, dict) else {}, SPEC)


def normalize_as(value: Any, key: str) -> Any:
    """One sub-structure normalized against a named row spec (``"transfer_kind"``)."""
    return _norm(value, ROW_SPECS[key])


ROW_SPECS = {"transfer_kind": _XFER, "gpu_device": _GPU_ROW, "metrics_phase": _METRICS_ROW,
             "evidence_row": _EVIDENCE}

# ------------------------------------------------------------------------------------- caps

LIST_CAPS: tuple[tuple[str, str | None, str], ...] = (
    ("kernels", None, "max_rows"),
    ("steps", "per_step", "max_steps"),
    ("steps", "outliers", "max_list"),
    ("steps", "warmup", "max_list"),
    ("steps", "incomplete", "max_list"),
    ("gaps", "top", "max_gaps"),
    ("gaps", "histogram", "max_bins"),
    ("tensor_cores", "*", "max_list"),  # non_tc_gemm_kernels, tc_kernels, evidence_list…
    ("roofline", "*", "max_rows"),  # kernels, matches, unmatched…: all top-N lists
    ("gpu_metrics", "per_device", "max_list"),
    ("loader", "per_worker", "max_list"),
    ("gpu_metrics", "per_phase", "max_list"),
    ("trace", "gpus", "max_list"),
    ("trace", "processes", "max_list"),
    ("phases", None, "max_list"),
    ("processes", None, "max_list"),
    ("data_quality", None, "max_list"),
    ("capture_hints", None, "max_list"),
    ("kernel_categories", None, "max_list"),
    ("verdict", "evidence", "max_list"),
    ("verdict", "recommendations", "max_list"),
    ("verdict", "secondary", "max_list"),
    ("verdict", "advice", "max_list"),
    ("findings", None, "max_list"),
    ("communication", "per_device", "max_list"),
    ("memory", "per_device", "max_list"),
)
"""(section, list key or ``None`` for a top-level list or ``"*"`` for every list in the section,
``Limits`` field). ``trace.tables`` (``max_tables``) and ``timeline.strips`` (4 strips, 16 devices,
``max_list`` phases, ``max_bins`` bins) are capped by report/clean.py's own rules."""

# ----------------------------------------------------------------------------------- aliases

ALIASES: dict[str, dict[str, str]] = {
    "roofline": {"device": "gpu"},
    "roofline.kernels[]": {
        "arithmetic_intensity": "ai_dram",
        "achieved_flops_per_s": "achieved_flop_per_s",
        "sm_pct": "sol_compute_pct",
        "mem_pct": "sol_memory_pct",
        "precision": "dominant_precision",
        "time_share": "timeline_share",  # joined to a timeline (analyses/roofline/ncu_join.py) only
    },
}
"""Alias → canonical key, per place in the view (``x[]``: every row of list ``x``). The JSON keeps
these names (keys are only ever added); they always hold the canonical key's value.

Two derived report keys sit beside them in ``roofline.kernels[]`` (``apply_aliases``): ``short_name``
(the kernel's base name) and ``time_share`` (``time_ns`` / the roofline's ``total_time_ns``; the
alias of ``timeline_share`` when the ncu data is joined to the timeline).
The Tensor Core share keeps one name per output: ``tensor_cores.share_of_kernel_time`` in the
analysis JSON, ``tensor_core_share`` in a batch index row (analyses/job/batch_summary.py) — the same
number; ``roofline.tensor_core_share_by_time`` and per-kernel ``tensor_core_share`` are ncu's own
measures, not aliases."""


ALIAS_PLACES: dict[str, str] = {"roofline.device": "source"}
"""Alias → the key it follows in the section's key order (else it is appended). Outputs that do
not sort their keys (a batch run's per-trace JSON) have always shown ``device`` right after
``source``; key order is part of those bytes."""


def _add_aliases(row: dict, table: dict[str, str], where: str = "") -> None:
    for alias, canonical in table.items():
        if canonical not in row:
            continue
        anchor = ALIAS_PLACES.get(f"{where}.{alias}")
        if anchor in row and alias not in row:
            items = list(row.items())
            at = list(row).index(anchor) + 1
            row.clear()
            row.update(items[:at] + [(alias, dict(items)[canonical])] + items[at:])
        else:
            row[alias] = row[canonical]


def apply_aliases(section: str, data: Any) -> Any:
    """``data`` (one section's JSON) with the aliases of ``ALIASES`` and the derived report keys
    added, in place; returns it."""
    if not isinstance(data, dict) or data.get("available") is False:
        return data
    _add_aliases(data, ALIASES.get(section, {}), section)
    rows_key = section + ".kernels[]"
    if rows_key in ALIASES and isinstance(data.get("kernels"), list):
        total = data.get("total_time_ns")
        for row in data["kernels"]:
            row["short_name"] = kernel_base_name(row["name"]) or row["name"]
            row["time_share"] = row["time_ns"] / total if total else None
            _add_aliases(row, ALIASES[rows_key])
    return data


# ---------------------------------------------------------------------------------- sections

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

VERDICT_TONES = {"compute_bound": "good", "insufficient_data": "neutral"}  # else "warn"

# ------------------------------------------------------------------- generated key reference

DOC_BEGIN = "<!-- key reference: generated by `python -m nsys_diag.report.contract --write` -->"
DOC_END = "<!-- end of generated key reference -->"


def _keys(spec: Any) -> str:
    """``a, b{c, d}, e[{f}]``: the keys a spec declares, nested."""
    if isinstance(spec, Section):
        spec = spec.spec
    if isinstance(spec, list):
        inner = _keys(spec[0]) if spec and isinstance(spec[0], (dict, Section)) else ""
        return f"[{{{inner}}}]" if inner else "[]"
    if isinstance(spec, dict):
        return ", ".join(k + (_keys(v) if isinstance(v, (dict, list, Section)) and _keys(v) else "")
                         if not isinstance(v, dict) else f"{k}{{{_keys(v)}}}" if v else k
                         for k, v in spec.items())
    return ""


def key_reference() -> str:
    """The key reference of docs/JSON.md, generated from ``SPEC`` and ``ALIASES``."""
    out = [DOC_BEGIN, "", "## Key reference", "",
           "Every key the renderers read (they default to `null`/empty when absent); optional "
           "sections carry `available` and, when unavailable, `reason` and `hint`.", "",
           "| Key | Keys inside | When unavailable: reason · hint |", "|---|---|---|"]
    for key, spec in SPEC.items():
        inner = _keys(spec).replace("|", "\\|")
        if key == "processes":
            inner = ("[{" + ", ".join(PROCESS_ROW_KEYS) + ", and with two or more processes each "
                     "one's own " + ", ".join(k for k in PROCESS_KEYS if k in SPEC) + "}]")
        na = (f"{spec.reason} · {spec.hint}".replace("|", "\\|").rstrip(" ·")
              if isinstance(spec, Section) else "")
        out.append(f"| `{key}` | {inner} | {na} |")
    out += ["", "Aliases (same value as the canonical key, kept because keys are never dropped):", "",
            "| Where | Alias | Canonical key |", "|---|---|---|"]
    for where, table in ALIASES.items():
        out += [f"| `{where}` | `{alias}` | `{canonical}` |" for alias, canonical in table.items()]
    return "\n".join(out + ["", DOC_END]) + "\n"


def docs_with_reference(text: str) -> str:
    """docs/JSON.md's ``text`` with its generated block replaced (appended when missing)."""
    if DOC_BEGIN in text and DOC_END in text:
        head, rest = text.split(DOC_BEGIN, 1)
        tail = rest.split(DOC_END, 1)[1].lstrip("\n")
        return head + key_reference() + tail
    return text.rstrip("\n") + "\n\n" + key_reference()

# ------------------------------------------------------------------------ generated JSON Schema

_UNAVAILABLE_SCHEMA = {"type": "object",
                       "properties": {"available": {"const": False}, "reason": {"type": "string"},
                                      "hint": {"type": "string"}},
                       "required": ["available", "reason"]}


def _place(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


def _extra_keys(place: str, spec_keys: Any) -> list[str]:
    """Keys directly under ``place`` that only ``TYPES`` declares (the JSON has them, ``SPEC``
    does not), in ``TYPES`` order."""
    prefix = place + "." if place else ""
    out: list[str] = []
    for path in TYPES:
        if path.startswith(prefix):
            key = re.split(r"[.\[]", path[len(prefix):], maxsplit=1)[0]
            if key and key not in spec_keys and key not in out:
                out.append(key)
    return out


def _shape(place: str) -> Any:
    """The spec-like shape of a key only ``TYPES`` declares: object, list or leaf."""
    if any(p.startswith(place + ".") for p in TYPES):
        return {}
    if any(p.startswith(place + "[].") for p in TYPES):
        return [{}]
    return [None] if place + "[]" in TYPES else None


def _schema_node(place: str, spec: Any, used: set[str]) -> dict:
    """The schema of the key at ``place``, declared by ``spec`` and typed by ``TYPES``."""
    if isinstance(spec, Section):
        return _section_schema(place, spec, used)
    if isinstance(spec, dict):
        node = _object_schema(place, spec, used)
    elif isinstance(spec, list):
        node = {"type": "array", "items": _schema_node(place + "[]", spec[0] if spec else None, used)}
    elif place not in TYPES:
        raise KeyError(f"{place}: no type in report/schema_types.py TYPES")
    else:
        node = {}
    if place in TYPES:
        used.add(place)
        node.update(expand(TYPES[place]))
    return node


def _object_schema(place: str, spec: dict, used: set[str]) -> dict:
    """An object: the keys of ``spec`` and those only ``TYPES`` adds, required unless
    ``OPTIONAL``."""
    keys = list(spec) + _extra_keys(place, spec)
    node: dict[str, Any] = {"type": "object"}
    props = {k: _schema_node(_place(place, k), spec[k] if k in spec else _shape(_place(place, k)), used)
             for k in keys}
    required = [k for k in keys if _place(place, k) not in OPTIONAL]
    if props:
        node["properties"] = props
    if required:
        node["required"] = required
    return node


def _section_schema(place: str, spec: Section, used: set[str]) -> dict:
    """An optional section: its unavailable form, or ``available: true`` with all its keys."""
    body = _object_schema(place, spec.spec, used)
    body["properties"] = {"available": {"const": True}, **body.get("properties", {})}
    body["required"] = ["available", *body.get("required", [])]
    options: list[dict] = [{"$ref": "#/$defs/unavailable"}, body]
    if place in NULLABLE_SECTIONS:
        options.insert(0, {"type": "null"})
    return {"oneOf": options}


def json_schema() -> dict:
    """The JSON Schema of ``analyze --json`` (draft 2020-12), generated from ``SPEC`` and
    ``TYPES``; raises when a key of ``SPEC`` has no type or a type names no key."""
    used: set[str] = set()
    root = _object_schema("", SPEC, used)
    stale = [p for p in TYPES if p not in used]
    if stale:
        raise KeyError(f"types for places the contract does not have: {stale}")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://nsys-diag.invalid/schemas/analysis.schema.json",
            "title": f"nsys-diag analysis (schema_version {SCHEMA_VERSION})",
            "description": "Output of `nsys-diag analyze --json`; see docs/JSON.md. Keys are only "
                           "ever added, never renamed. Units: *_ns integer ns, *_ms float ms, shares "
                           "fractions 0..1. Generated by `python -m nsys_diag.report.contract --write`.",
            "$defs": {"unavailable": _UNAVAILABLE_SCHEMA, "verdict_code": enum(*VERDICT_CODES)},
            **root}


def schema_text() -> str:
    """The committed text of ``nsys_diag/schemas/analysis.schema.json``."""
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print the key reference; ``--write [PATH]`` updates docs/JSON.md (or PATH) in place and
    writes the generated JSON Schema."""
    import argparse
    from pathlib import Path

    ap = argparse.ArgumentParser(prog="python -m nsys_diag.report.contract")
    ap.add_argument("--write", nargs="?", const="docs/JSON.md", default=None)
    args = ap.parse_args(argv)
    if args.write is None:
        print(key_reference(), end="")
        return 0
    path = Path(args.write)
    path.write_text(docs_with_reference(path.read_text(encoding="utf-8")), encoding="utf-8")
    schema_path().write_text(schema_text(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
