"""The JSON types of the report contract: what ``contract.json_schema()`` turns into
``nsys_diag/schemas/analysis.schema.json``.

``TYPES`` maps a place in the analysis JSON to its type. Places are written as in
``contract.ALIASES``: ``a.b`` is key ``b`` of object ``a``, ``x[]`` every item of list ``x``. Every
key of ``contract.SPEC`` needs a type here (the generator raises otherwise); a place that is not in
``SPEC`` adds a key the JSON carries but the renderers do not read (``scope``, ``steps.boundary``…).
A type is a shorthand or a JSON Schema fragment:

* ``"int"``, ``"num"``, ``"str"``, ``"bool"``, ``"obj"`` — JSON types; ``"str+"`` a non-empty string;
* ``"share"`` — a fraction, a number in 0..1 (``1.000001`` absorbs float rounding);
* a trailing ``?`` allows ``null`` as well (``"num?"``);
* a ``dict`` — a JSON Schema fragment, taken as is for a leaf and merged over the generated
  ``object``/``array`` node of a key that has keys or items of its own.

``OPTIONAL`` lists the places an output may leave out; every other key is required. Units follow
docs/JSON.md: ``*_ns`` integer ns, ``*_ms`` float ms, shares fractions 0..1.
"""
from __future__ import annotations

import re
from typing import Any

from nsys_diag.model.vocabulary import CANONICAL_PHASES, GAP_CAUSES

VERDICT_CODE = {"$ref": "#/$defs/verdict_code"}
SHARE_MAX = 1.000001
"""Upper bound of a share: 1 plus float rounding."""


def enum(*values: str) -> dict:
    """A JSON Schema ``enum`` fragment."""
    return {"enum": list(values)}


_STEP_KINDS = enum("warmup", "normal", "outlier", "incomplete", "unselected")
_XFER = {"count": "int", "bytes": "int", "time_ms": "num", "gb_per_s": "num?",
         "expected_gb_per_s": "num?"}
_METRICS = {"sm_active": "num?", "tensor_active": "num?", "dram_bandwidth": "num?", "pcie_rx": "num?",
            "pcie_tx": "num?"}


def _under(prefix: str, table: dict[str, Any]) -> dict[str, Any]:
    return {f"{prefix}.{key}": value for key, value in table.items()}


TYPES: dict[str, Any] = {
    "schema_version": {"const": 1},
    "tool.name": {"const": "nsys-diag"},
    "tool.version": "str",
    "generated_at": {"type": "string",
                     "pattern": "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$"},
    # ------------------------------------------------------------------------------ trace
    "trace.path": "str", "trace.format": "str", "trace.nsys_version": "str?",
    "trace.schema_version": "str?",
    "trace.gpus[].id": "int", "trace.gpus[].name": "str", "trace.gpus[].sm_count": "int?",
    "trace.gpus[].memory_bytes": "int?", "trace.gpus[].memory_bandwidth_bytes_per_s": "num?",
    "trace.gpus[].compute_capability": "str?",
    "trace.processes[].pid": "int", "trace.processes[].name": "str",
    "trace.capture_span_ns": "int", "trace.session_start_utc_ns": "int?",
    "trace.tables": {"type": "object", "additionalProperties": {"type": "integer"}},
    "trace.read_window": {"type": ["object", "null"],
                          "description": "the span the loader read: --window, or the middle window "
                                         "that fits --memory-budget; null = the whole export"},
    "trace.read_window.start_ns": "int", "trace.read_window.end_ns": "int",
    "trace.read_window.reason": enum("window", "memory_budget"),
    "trace.read_window.row_fraction": {"type": "number", "minimum": 0, "maximum": 1},
    "trace.read_window.kernel_share": {"type": "number", "minimum": 0, "maximum": 1,
                                       "description": "kernel rows read / kernel rows in the export"},
    "trace.read_window.kernel_time_share": {"type": "number", "minimum": 0,
                                            "description": "kernel time read / kernel time in the export"},
    "trace.chunks": {"type": "object",
                     "description": "present when the export was streamed chunk by chunk "
                                    "(--memory-mode stream): the whole export was analysed"},
    "trace.chunks.count": "int", "trace.chunks.max_rows": "int", "trace.chunks.passes": "int",
    "trace.chunks.inexact_cuts": "int", "trace.chunks.chunk_rows": "int?",
    "scope.pid": "int?", "scope.name": "str?", "scope.devices[]": "int", "scope.process_count": "int",
    "window.start_ns": "int", "window.end_ns": "int", "window.duration_ms": "num",
    "window.source": enum("steps", "gpu_activity", "user", "capture"),
    # ------------------------------------------------------------------------------ steps
    "steps.count": "int", "steps.analysed_count": "int", "steps.source": "str",
    "steps.range_name": "str", "steps.boundary": enum("range", "period"),
    "steps.mean_ms": "num?", "steps.median_ms": "num?", "steps.p90_ms": "num?", "steps.max_ms": "num?",
    "steps.min_ms": "num?", "steps.warmup[]": "int", "steps.incomplete[]": "int",
    "steps.outliers[].index": "int", "steps.outliers[].duration_ms": "num",
    "steps.outliers[].ratio_to_median": "num", "steps.outliers[].reason": "str",
    "steps.per_step[].index": "int", "steps.per_step[].start_ns": "int",
    "steps.per_step[].duration_ms": "num", "steps.per_step[].kind": _STEP_KINDS,
    "steps.per_step[].phases": {"type": "object",
                                "description": "exclusive ms per canonical phase in this step "
                                               "(analysed steps only)",
                                "additionalProperties": {"type": "number"}},
    "phases[].name": "str", "phases[].canonical": enum(*CANONICAL_PHASES), "phases[].mean_ms": "num",
    "phases[].share": "share", "phases[].gpu_busy_ms": "num?", "phases[].gpu_busy_share": "share?",
    "phases[].gpu_work_ms": "num?", "phases[].count": "int",
    "phases_status.available": "bool",
    # -------------------------------------------------------------------------- gpu, gaps
    "gpu.utilization": "share", "gpu.compute_busy_ms": "num", "gpu.copy_busy_ms": "num",
    "gpu.busy_ms": "num", "gpu.idle_ms": "num", "gpu.window_ms": "num", "gpu.copy_only_ms": "num",
    "gpu.per_device[].device_id": "int", "gpu.per_device[].name": "str",
    "gpu.per_device[].utilization": "share", "gpu.per_device[].compute_busy_ms": "num",
    "gpu.per_device[].copy_busy_ms": "num", "gpu.per_device[].busy_ms": "num",
    "gpu.per_device[].idle_ms": "num",
    "gaps.count": "int", "gaps.total_ms": "num", "gaps.min_gap_ns": "int",
    **{f"gaps.by_cause.{cause}": "num" for cause in GAP_CAUSES},
    "gaps.histogram[].lo_ns": "int", "gaps.histogram[].hi_ns": "int?", "gaps.histogram[].count": "int",
    "gaps.histogram[].total_ms": "num",
    "gaps.top[].start_ns": "int", "gaps.top[].duration_ms": "num", "gaps.top[].device_id": "int",
    "gaps.top[].cause": enum(*GAP_CAUSES), "gaps.top[].cpu_activity": "str", "gaps.top[].phase": "str?",
    "gaps.top[].evidence[].cause": enum(*GAP_CAUSES), "gaps.top[].evidence[].ms": "num",
    "gaps.top[].evidence[].detail": "str",
    **{f"gaps.by_cause_detail.{cause}": "str?" for cause in GAP_CAUSES},
    "gaps.first_kernel_ns": "int?", "gaps.cpu_samples_available": "bool",
    "gaps.other_top_frames[].frame": "str", "gaps.other_top_frames[].samples": "int",
    "gaps.other_top_frames[].share": "share",
    # ---------------------------------------------------------------------------- timeline
    "timeline.bin_ns": {"type": "integer", "minimum": 1},
    "timeline.window_bins": {"type": ["object", "null"],
                             "description": "10 ms bins of a window without steps (analyses/timeline/window_bins.py)"},
    "timeline.strips[].label": enum("representative", "worst", "window"),
    "timeline.strips[].step_index": "int?", "timeline.strips[].start_ns": "int",
    "timeline.strips[].end_ns": "int",
    "timeline.strips[].phases[].name": "str", "timeline.strips[].phases[].canonical": "str",
    "timeline.strips[].phases[].start_ns": "int", "timeline.strips[].phases[].end_ns": "int",
    "timeline.strips[].devices[].device_id": "int",
    "timeline.strips[].devices[].busy": {"maxItems": 200},
    "timeline.strips[].devices[].busy[]": "share",
    # ----------------------------------------------------------------------------- kernels
    "kernels[].name": "str", "kernels[].short_name": "str", "kernels[].count": "int",
    "kernels[].total_ns": "int", "kernels[].mean_ns": "int", "kernels[].median_ns": "int",
    "kernels[].max_ns": "int", "kernels[].share": "share?", "kernels[].category": "str",
    "kernels[].tensor_core": "bool",
    "kernels_total": "int",
    "tensor_cores.share_of_kernel_time": "share?", "tensor_cores.gemm_share": "share?",
    "tensor_cores.tc_share_of_gemm": "share?", "tensor_cores.evidence": "str",
    "tensor_cores.confidence": "str", "tensor_cores.non_tc_gemm_share": "share?",
    "tensor_cores.source": "str", "tensor_cores.evidence_list[]": "str", "tensor_cores.advice": "str?",
    "tensor_cores.tensor_active_during_gemm": "share?", "tensor_cores.engaged": "bool?",
    "tensor_cores.basis": "str?", "tensor_cores.non_tc_gemm_source": "str?",
    "tensor_cores.non_tc_gemm_kernels[].name": "str", "tensor_cores.non_tc_gemm_kernels[].share": "share",
    # ---------------------------------------------------------------- transfers, metrics…
    **{key: value for kind in ("H2D", "D2H", "D2D", "P2P")
       for key, value in _under(f"transfers.by_kind.{kind}", _XFER).items()},
    "transfers.pageable_count": "int", "transfers.pageable_bytes": "int", "transfers.sync_copies": "int",
    "gpu_metrics.per_device[].device_id": "int",
    **_under("gpu_metrics.overall", _METRICS),
    "gpu_metrics.per_phase[].phase": "str",
    **_under("gpu_metrics.per_phase[]", _METRICS),
    "throughput.batch_size": "num", "throughput.source": "str",
    "throughput.loader_samples_per_s": "num?", "throughput.model_samples_per_s": "num?",
    "throughput.bottleneck": enum("loader", "model"),
    "communication.per_device[].device_id": "int", "communication.per_device[].comm_ms": "num",
    "communication.per_device[].hidden_ms": "num", "communication.per_device[].exposed_ms": "num",
    "communication.exposed_share": "share?",
    "memory.per_device[].device_id": "int", "memory.per_device[].peak_bytes": "int",
    "memory.per_device[].device_bytes": "int?", "memory.per_device[].peak_share": "share?",
    "memory.advice": "str?",
    # ---------------------------------------------------------------------------- roofline
    "roofline.source": "str", "roofline.device": "str?", "roofline.clock_source": "str",
    "roofline.memory_level": "str",
    "roofline.roofs[].name": "str", "roofline.roofs[].kind": "str", "roofline.roofs[].value": "num",
    "roofline.kernels[].name": "str", "roofline.kernels[].short_name": "str",
    "roofline.kernels[].launches": "int", "roofline.kernels[].time_share": "share?",
    "roofline.kernels[].arithmetic_intensity": "num?", "roofline.kernels[].achieved_flops_per_s": "num?",
    "roofline.kernels[].sm_pct": "num?", "roofline.kernels[].mem_pct": "num?",
    "roofline.kernels[].bound": "str", "roofline.kernels[].precision": "str?",
    "roofline.kernels_total": "int", "roofline.notes[]": "str",
    "roofline.peaks_source": enum("ncu_peak_metrics", "gpu_option", "csv_gpu",
                                  "csv_device_attributes", "trace_gpu", "none"),
    "roofline.matches[].timeline_name": "str", "roofline.matches[].ncu_names[]": "str",
    "roofline.matches[].level": enum("signature", "base", "family"),
    "roofline.matches[].duration_ratio": "num?", "roofline.matches[].launches": "int",
    "roofline.matches[].ncu_launches": "int",
    "roofline.matches[].launch_config": enum("same", "different", "unknown"),
    "roofline.matches[].timeline_launch_config": "str?",
    # --------------------------------------------------------------- processes, verdict…
    "processes[].pid": "int", "processes[].name": "str", "processes[].devices[]": "int",
    "processes[].steps_mean_ms": "num?", "processes[].utilization": "share?",
    "processes[].verdict_code": VERDICT_CODE, "processes[].is_headline": "bool",
    "verdict.code": VERDICT_CODE, "verdict.headline": "str+",
    "verdict.confidence": enum("high", "medium", "low"), "verdict.scale_advice": "str+",
    "verdict.evidence[].metric": "str", "verdict.evidence[].value": {"type": ["number", "string", "null"]},
    "verdict.evidence[].threshold": "num?", "verdict.evidence[].comparison": "str",
    "verdict.evidence[].source": "str",
    "verdict.recommendations": {"minItems": 1}, "verdict.recommendations[]": "str",
    "verdict.projected_step_ms_if_fixed": "num?", "verdict.secondary[]": VERDICT_CODE,
    "verdict.evidence[].fired": "bool?", "verdict.evidence[].role": enum("rule", "context"),
    "verdict.advice[].text": "str+", "verdict.advice[].because[]": "str", "verdict.finding": "str?",
    # --------------------------------------------------------------------------- findings
    "findings[].code": VERDICT_CODE, "findings[].cause": "str+",
    "findings[].severity": enum("info", "warning", "critical"), "findings[].fired": "bool",
    "findings[].share_of_window": "num?", "findings[].per_step_ms": "num?",
    "findings[].threshold": "num?", "findings[].headline": "str?",
    "findings[].evidence[].metric": "str",
    "findings[].evidence[].value": {"type": ["number", "string", "null"]},
    "findings[].evidence[].threshold": "num?", "findings[].evidence[].comparison": "str",
    "findings[].evidence[].source": "str", "findings[].evidence[].fired": "bool?",
    "findings[].evidence[].role": enum("rule", "context"),
    "findings[].advice[].text": "str+", "findings[].advice[].because[]": "str",
    "data_quality[].code": "str", "data_quality[].message": "str", "data_quality[].count": "int",
    "data_quality[].severity": enum("info", "warning"), "data_quality[].hint": "str?",
    "thresholds": {"type": "object", "additionalProperties": {"type": "number"}},
    "capture_hints[]": "str",
    # --------------------------------------------------------------------------------- mfu
    **_under("mfu", {"flops_per_step": "num", "flops_source": "str", "step_ms": "num",
                     "samples_per_s": "num?", "achieved_tflops": "num", "peak_tflops": "num?",
                     "peak_precision": "str?", "gpu": "str?", "mfu": "num?"}),
    "mfu.assumptions[]": "str",
    # ----------------------------------------------------------------------------- scaling
    **_under("scaling[]", {"gpus": "int", "step_ms": "num", "allreduce_ms": "num",
                           "samples_per_s": "num?", "efficiency": "num?"}),
    "scaling[].assumptions[]": "str", "scaling_reason": "str?",
    # ------------------------------------------------------------------------------ loader
    **_under("loader", {"workers": "int", "busy_share": "share",
                        "state": enum("saturated", "busy", "idle"), "basis": "str",
                        "saturated_at": "share", "idle_below": "share", "window_ms": "num"}),
    **_under("loader.per_worker[]", {"pid": "int", "tid": "int?", "name": "str",
                                     "busy_share": "share",
                                     "basis": enum("nvtx", "cpu_samples", "osrt"),
                                     "evidence": "str", "parent_pid": "int?",
                                     "attributed_by": enum("thread", "parent", "nearest_pid")}),
    # ----------------------------------------------------------------------- capabilities
    "capabilities": {"description": "What the export can answer: the capability probe shared "
                                    "with `inspect` (analyses/capabilities.py)."},
    **_under("capabilities", {"steps": "bool?", "phases": "bool?", "gpu_activity": "bool?",
                              "nvtx_ranges": "int?", "gpu_metrics": "bool?",
                              "tensor_active_metric": "bool?", "ncu": "bool?",
                              "gpu_memory_events": "bool?", "osrt": "bool?",
                              "cpu_samples": "bool?"}),
    **_under("capabilities.processes[]", {"pid": "int?", "steps": "int?", "analysed_steps": "int?",
                                          "steps_source": "str?", "steps_reason": "str?",
                                          "phases": "int?", "phases_reason": "str?"}),
}
"""Place → type of every key of the analysis JSON the schema describes."""

PROCESS_KEYS = ("window", "steps", "phases", "phases_status", "gpu", "gaps", "timeline",
                "kernels", "kernels_total", "kernel_categories", "kernel_summary", "tensor_cores",
                "transfers", "gpu_metrics", "throughput", "mfu", "scaling", "scaling_reason",
                "loader", "communication", "memory", "roofline", "verdict", "findings",
                "data_quality")
"""The sections that describe one process. The top level holds the headline process's; with two
or more analysed processes every ``processes[]`` row holds its own as well (same keys, same
shapes: ``processes[].verdict``, ``processes[].steps``…), next to the row's summary keys. Their
places are copied under ``processes[].`` here (``_in_rows``)."""


def _in_rows(places) -> dict[str, Any]:
    """``places`` of the per-process sections, also under ``processes[].``."""
    return {f"processes[].{p}": places[p] for p in places
            if re.split(r"[.\[]", p, maxsplit=1)[0] in PROCESS_KEYS}


TYPES.update(_in_rows(TYPES))

OPTIONAL = frozenset({
    "trace.schema_version", "trace.session_start_utc_ns", "trace.read_window",
    "trace.read_window.row_fraction", "trace.read_window.kernel_share",
    "trace.read_window.kernel_time_share", "trace.chunks", "scope.name", "steps.per_step[].phases", "phases_status",
    "processes[].utilization", "data_quality[].hint", "timeline.window_bins",
    "loader.per_worker[].parent_pid", "loader.per_worker[].attributed_by",
})
"""Places an output may leave out (all other keys are required where their object is present)."""
OPTIONAL = OPTIONAL | frozenset(_in_rows(dict.fromkeys(OPTIONAL)))

NULLABLE_SECTIONS = frozenset({"gpu_metrics", "throughput", "communication", "memory", "roofline"})
NULLABLE_SECTIONS = NULLABLE_SECTIONS | frozenset(_in_rows(dict.fromkeys(NULLABLE_SECTIONS)))
"""Optional sections the JSON may also give as ``null`` (besides the unavailable form)."""

_JSON_TYPES = {"int": "integer", "num": "number", "str": "string", "bool": "boolean",
               "obj": "object", "share": "number", "str+": "string"}


def expand(short: Any) -> dict:
    """The JSON Schema fragment of a type (a shorthand or a fragment, copied)."""
    if isinstance(short, dict):
        return dict(short)
    base = short.rstrip("?")
    out: dict[str, Any] = {"type": [_JSON_TYPES[base], "null"] if short.endswith("?")
                           else _JSON_TYPES[base]}
    if base == "share":
        out.update(minimum=0, maximum=SHARE_MAX)
    if base == "str+":
        out["minLength"] = 1
    return out
