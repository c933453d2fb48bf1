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

``python -m nsys_diag.report.contract`` prints the generated key reference of docs/JSON.md
(``--write`` updates that file); tests/report/test_contract.py proves the committed docs and the
JSON Schema agree with this module.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nsys_diag.analyses.kernel_names import kernel_base_name
from nsys_diag.model.vocabulary import HINT_GPU_METRICS, NSYS_CAPTURE_COMMAND

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
_XFER = {"count": None, "bytes": None, "time_ms": None, "gb_per_s": None, "expected_gb_per_s": None}

SPEC: dict[str, Any] = {
    "schema_version": None,
    "tool": {"name": "nsys-diag", "version": None},
    "generated_at": None,
    "trace": {"path": None, "format": None, "nsys_version": None, "schema_version": None,
              "gpus": [{"id": None, "name": None, "sm_count": None, "memory_bytes": None,
                        "memory_bandwidth_bytes_per_s": None, "compute_capability": None}],
              "processes": [{"pid": None, "name": None}],
              "capture_span_ns": None, "session_start_utc_ns": None, "tables": {}},
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
         "by_cause": {"input": None, "transfer": None, "sync": None, "launch": None, "overhead": None,
                      "other": None},
         "histogram": [{"lo_ns": None, "hi_ns": None, "count": None, "total_ms": None}],
         "top": [{"start_ns": None, "duration_ms": None, "device_id": None, "cause": None,
                  "cpu_activity": None, "phase": None}]},
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
         "non_tc_gemm_kernels": [{"name": None, "share": None}]},
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


ROW_SPECS = {"transfer_kind": _XFER, "gpu_device": _GPU_ROW, "metrics_phase": _METRICS_ROW}

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
        "time_share": "timeline_share",  # joined to a timeline (analyses/ncu_join.py) only
    },
}
"""Alias → canonical key, per place in the view (``x[]``: every row of list ``x``). The JSON keeps
these names (keys are only ever added); they always hold the canonical key's value.

Two derived report keys sit beside them in ``roofline.kernels[]`` (``apply_aliases``): ``short_name``
(the kernel's base name) and ``time_share`` (``time_ns`` / the roofline's ``total_time_ns``; the
alias of ``timeline_share`` when the ncu data is joined to the timeline).
The Tensor Core share keeps one name per output: ``tensor_cores.share_of_kernel_time`` in the
analysis JSON, ``tensor_core_share`` in a batch index row (analyses/batch_summary.py) — the same
number; ``roofline.tensor_core_share_by_time`` and per-kernel ``tensor_core_share`` are ncu's own
measures, not aliases."""


ALIAS_AFTER: dict[str, dict[str, str]] = {"roofline": {"device": "source"}}
"""Where an alias sits in its dict (after this key): the place the JSON always had it, so files
written without sorted keys (batch's per-trace JSON) keep their bytes."""


def _add_aliases(row: dict, table: dict[str, str], after: dict[str, str] | None = None) -> None:
    for alias, canonical in table.items():
        if canonical not in row:
            continue
        value = row[canonical]
        anchor = (after or {}).get(alias)
        if anchor in row and alias not in row:
            items = list(row.items())
            at = list(row).index(anchor) + 1
            row.clear()
            row.update(items[:at] + [(alias, value)] + items[at:])
        else:
            row[alias] = value


def apply_aliases(section: str, data: Any) -> Any:
    """``data`` (one section's JSON) with the aliases of ``ALIASES`` and the derived report keys
    added, in place; returns it."""
    if not isinstance(data, dict) or data.get("available") is False:
        return data
    _add_aliases(data, ALIASES.get(section, {}), ALIAS_AFTER.get(section))
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


def main(argv: list[str] | None = None) -> int:
    """Print the key reference; ``--write [PATH]`` updates docs/JSON.md (or PATH) in place."""
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
