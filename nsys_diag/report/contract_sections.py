"""The key order of the analysis JSON and the specs of the sections no analysis declares
(model/schema_types.py).

``SECTION_ORDER`` is the one list of the JSON's top-level keys, in order: section name → the
report's own spec, or ``DECLARED`` for a section whose spec is declared beside its analysis
(``Declaration.spec``); ``report/contract.py`` assembles the two into ``SPEC``.
``per_process=True`` marks the sections that describe one process (``contract.PROCESS_KEYS`` is
derived from it); a ``Section`` is optional (``null=True``: may also be ``null``). Each key is
declared once, with its type and its default; the analyses' ``to_json`` write the values. Units
follow docs/JSON.md: ``*_ns`` integer ns, ``*_ms`` float ms, shares fractions 0..1.
"""
from __future__ import annotations

from nsys_diag.analyses.diagnosis.program import FRAMEWORKS
from nsys_diag.analyses.kernels.gpu_fill import HINT_NO_SHAPE
from nsys_diag.analyses.gaps.spans import GPU_ROW
from nsys_diag.analyses.transfers import TRANSFER_KIND
from nsys_diag.analyses.gpu_metrics import METRICS_ROW
from nsys_diag.model.vocabulary import HINT_CAPTURE_WORKERS
from nsys_diag.model.schema_types import (Const, Enum, Int, Leaf, List, Map, Node, Obj, Ref,
                                           Section, Span, Str)

VERDICT_CODE = Ref("verdict_code")
TIMESTAMP = {"type": "string", "pattern": "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$"}
SPAN = Span()


def unit(**kw) -> Leaf:
    """A fraction that is exactly within 0..1."""
    return Leaf({"type": "number", "minimum": 0, "maximum": 1}, **kw)


def evidence() -> List:
    """The evidence rows of a verdict or a finding."""
    return List(EVIDENCE_ROW)


EVIDENCE_ROW = Obj({"metric": "str", "value": "scalar", "threshold": "num?", "comparison": "str",
                    "source": "str", "fired": "bool?", "role": Enum("rule", "context")},
                   carried={"unit": "str", "path": "str"}, optional=("unit", "path"),
                   doc="path: RFC 6901 pointer to the same value in this document "
                       "(report/quantities.py)")
ADVICE_ROW = Obj({"text": "str+", "because": List("str")})
ROW_SPECS: dict[str, Node] = {"transfer_kind": TRANSFER_KIND, "gpu_device": GPU_ROW,
                              "metrics_phase": METRICS_ROW, "evidence_row": EVIDENCE_ROW}
"""Row specs the renderers normalize one at a time (``contract.normalize_as``)."""

TRACE = Obj({
    "path": "str", "format": "str", "nsys_version": "str?", "schema_version": "str?",
    "gpus": List(Obj({"id": "int", "name": "str", "name_known": "bool", "sm_count": "int?",
                      "memory_bytes": "int?", "memory_bandwidth_bytes_per_s": "num?",
                      "compute_capability": "str?"},
                     doc="name_known: false when the name is the placeholder 'GPU <id>' (neither "
                         "the input nor --gpu names the GPU)")),
    "processes": List(Obj({"pid": "int", "name": "str"})),
    "capture_span_ns": "int", "session_start_utc_ns": "int?",
    "tables": Map("int", doc="rows per table of the export"),
    "chunks": Obj({"count": "int", "max_rows": "int", "passes": "int", "inexact_cuts": "int",
                   "chunk_rows": "int?"},
                  doc="present when the export was streamed chunk by chunk (--memory-mode "
                      "stream): the whole export was analysed")},
    carried={
        "read_window": Obj({"start_ns": "int", "end_ns": "int",
                            "reason": Enum("window", "memory_budget"),
                            "row_fraction": unit(),
                            "kernel_share": unit(doc="kernel rows read / kernel rows in the export"),
                            "kernel_time_share": Leaf({"type": "number", "minimum": 0},
                                                      doc="kernel time read / kernel time in "
                                                          "the export")},
                           optional=("row_fraction", "kernel_share", "kernel_time_share"), null=True,
                           doc="the span the loader read: --window, or the middle window that fits "
                               "--memory-budget; null = the whole export"),
        "host": Map("str", doc="host facts (--include-host-info only)"),
        "command_line": Str(null=True, doc="--include-host-info only")},
    optional=("schema_version", "session_start_utc_ns", "read_window", "chunks", "host",
              "command_line"))

THROUGHPUT = Section(Obj({
    "batch_size": "num", "source": "str", "loader_samples_per_s": "num?",
    "model_samples_per_s": "num?", "bottleneck": Enum("loader", "model")},
    carried={"data_ms": "num", "step_ms": "num", "step_samples_per_s": "num?"}),
    "Batch size unknown.", "Pass --batch-size N to compare loader and model throughput.",
    null=True, per_process=True)

MFU = Section(Obj({
    "flops_per_step": "num", "flops_source": "str", "step_ms": "num", "samples_per_s": "num?",
    "achieved_tflops": "num", "peak_tflops": "num?", "peak_precision": "str?", "gpu": "str?",
    "mfu": "num?", "assumptions": List("str")}),
    "Model FLOPs unknown.", "Pass --model-flops-per-step N (or --model-flops-per-sample N "
    "with --batch-size) to report achieved TFLOP/s and MFU.", per_process=True)

SCALING = List(Obj({"gpus": "int", "step_ms": "num", "allreduce_ms": "num", "samples_per_s": "num?",
                    "efficiency": "num?", "assumptions": List("str"),
                    "basis": Enum("replay", "formula"), "exposed_ms": "num"},
                   optional=("basis", "exposed_ms")), per_process=True)

LOADER = Section(Obj({
    "workers": "int", "busy_share": "share", "state": Enum("saturated", "busy", "idle"),
    "basis": "str", "saturated_at": "share", "idle_below": "share", "window_ms": "num",
    "per_worker": List(Obj({"pid": "int", "tid": "int?", "name": "str", "busy_share": "share",
                            "basis": Enum("nvtx", "cpu_samples", "osrt"), "evidence": "str"},
                           carried={"parent_pid": "int?",
                                    "attributed_by": Enum("thread", "parent", "nearest_pid")},
                           optional=("parent_pid", "attributed_by")))}),
    "No DataLoader worker processes or threads in the export.",
    HINT_CAPTURE_WORKERS, per_process=True)

_FILL_KERNEL = Obj({"name": "str", "launches": "int", "blocks": "int", "threads_per_block": "int",
                    "regs_per_thread": "int", "smem_bytes": "int", "blocks_per_sm": "int",
                    "fill": "share", "time_share": "share"},
                   carried={"limited_by": Enum("grid", "blocks_per_sm", "threads", "registers",
                                               "shared_memory"),
                            "underfilled": "bool"})
GPU_FILL = Section(Obj({
    "kernels": List(_FILL_KERNEL), "underfilled_share": "share", "basis": "str"},
    carried={"tiny_block_share": "share", "small_grid_share": "share", "sm_count": "int",
             "limits": Obj({"max_threads_per_sm": "int", "max_blocks_per_sm": "int",
                            "registers_per_sm": "int", "smem_per_sm_bytes": "int",
                            "source": "str"}),
             "sampled_launches": "int", "launches": "int"}),
    "No kernel launch configuration in this export.", HINT_NO_SHAPE, null=True,
    per_process=True, doc="how much of the GPU's resident threads the launches can occupy "
                          "(analyses/kernels/gpu_fill.py); shares of kernel time")

PROGRAM = Obj({
    "framework": Enum(*FRAMEWORKS), "libraries": List("str"),
    "evidence": List(Obj({"signal": "str", "detail": "str", "share": "share?"}))},
    carried={"framework_share": "share?", "techniques": List("str"),
             "flash_attention_share": "share", "basis": "str"},
    null=True, doc="what ran: framework, libraries and techniques in use, by name heuristics "
                   "(analyses/diagnosis/program.py)")

_REPLAY_STEP = Obj({"index": "int", "kind": "str", "start_ns": "int", "measured_ms": "num",
                    "replayed_ms": "num", "error_pct": "num", "unexplained_ms": "num",
                    "operations": "int", "inferred_edges": "int", "explicit_edges": "int"})
REPLAY = Section(Obj({
    "fidelity": Obj({"basis": Enum("steps", "window"), "measured_ms": "num", "replayed_ms": "num",
                     "error_pct": "num", "unexplained_share": "num", "steps": List(_REPLAY_STEP)},
                    doc="the replay against the capture: error_pct signed (positive: the replay "
                        "is slower); per step or per slice of the window"),
    "unexplained_ms": "num", "unexplained_share": "num",
    "critical_path": List(Obj({"kind": "str", "name": "str", "phase": "str",
                               "ms_per_step": "num", "share": "num",
                               "gpu_busy_share": "num?"}),
                          doc="what each replayed step waits on, every ns once"),
    "what_if": List(Obj({"id": "str", "change": "str", "finding": "str",
                         "saves_ms_per_step": "num", "saves_range_ms": List("num"),
                         "saves_share": "num", "step_ms_after": "num", "changed": "bool"}),
                    doc="one change per replay, priced over the analysed steps (basis window: "
                        "over the replayed window — saves_ms_per_step is then ms over that "
                        "window, saves_share and step_ms_after of the measured window); "
                        "changed: the change applied to a replayed step at all (false: its "
                        "zero saving says nothing about its cause)"),
    "critical_path_segments": List(Obj({"start_ns": "int", "end_ns": "int", "kind": "str",
                                        "name": "str"}),
                                   doc="the replayed steps' critical-path waits (blocking_wait, "
                                       "host_cpu, launch, memory_management, host_io, "
                                       "transfer) on the capture's clock: the 300 longest, by "
                                       "start")},
    carried={"inferred_edges": "int", "explicit_edges": "int", "notes": List("str"),
             "capture_hints": List("str", doc="what to capture for what the model lacked "
                                             "(graph node tracing, CUDA event records)")}),
    "The causal replay was not run.", "", per_process=True,
    doc="Causal replay of the process (analyses/replay, docs/analyses.md \"Causal replay\")")

VERDICT = Obj({
    "code": Ref("verdict_code", default="insufficient_data"), "headline": "str+",
    "confidence": Enum("high", "medium", "low"), "scale_advice": "str+", "evidence": evidence(),
    "recommendations": List("str", min_items=1), "projected_step_ms_if_fixed": "num?",
    "secondary": List(VERDICT_CODE), "advice": List(ADVICE_ROW), "finding": "str?"},
    carried={"quantities": List(Obj({"name": "str", "value": "scalar", "unit": "str",
                                     "path": "str"}),
                                doc="the numbers the scale advice states beyond the evidence "
                                    "rows, each with the JSON pointer that holds it "
                                    "(report/quantities.py)")},
    optional=("quantities",), per_process=True)

FINDINGS = List(Obj({
    "code": VERDICT_CODE, "cause": "str+",
    "severity": Enum("info", "warning", "critical", default="info"),
    "fired": Leaf({"type": "boolean"}, default=False), "share_of_window": "num?",
    "per_step_ms": "num?", "threshold": "num?", "evidence": evidence(), "advice": List(ADVICE_ROW),
    "headline": "str?"},
    carried={"saves_ms_per_step": Leaf({"type": ["number", "null"]},
                                       doc="fired findings: what fixing it saves per step, from "
                                           "the replay's what-if (null: saves_reason)"),
             "saves_reason": "str?",
             "saves_share": Leaf({"type": "number"},
                                 doc="fired findings: the saving (or its upper bound) as a "
                                     "share of the mean analysed step, or of the window"),
             "saves_basis": Leaf({"enum": ["step", "window"]},
                                 doc="what the saving is of: per mean analysed step, or over "
                                     "the replayed window (no steps)"),
             "saves_upper_bound_ms": Leaf({"type": "number"},
                                          doc="unpriced findings: the most their fix can save "
                                              "(ms per step or over the window), from the "
                                              "what-if that bounds it (analyses/diagnosis/"
                                              "pricing.py UPPER_BOUND)"),
             "saves_upper_bound_what_if": "str?"},
    optional=("saves_ms_per_step", "saves_reason", "saves_share", "saves_basis",
              "saves_upper_bound_ms", "saves_upper_bound_what_if")), per_process=True)

CAPABILITIES = Obj({
    "steps": "bool?", "phases": "bool?", "gpu_activity": "bool?", "nvtx_ranges": "int?",
    "gpu_metrics": "bool?", "tensor_active_metric": "bool?", "ncu": "bool?",
    "gpu_memory_events": "bool?", "osrt": "bool?", "cpu_samples": "bool?",
    "processes": List(Obj({"pid": "int?", "steps": "int?", "analysed_steps": "int?",
                           "steps_source": "str?", "steps_reason": "str?", "phases": "int?",
                           "phases_reason": "str?"}))},
    doc="What the export can answer: the capability probe shared with `inspect` "
        "(analyses/capabilities.py).")

SCOPE = Obj({"pid": "int?", "name": "str?", "devices": List("int"), "process_count": "int",
             "headline_rule": "str", "headline_by": Enum("step_time", "gpu_compute")},
            optional=("headline_rule", "headline_by"), read=False)

PHASES_STATUS = Obj({"available": "bool", "reason": "str", "hint": "str"},
                    optional=("reason", "hint"), read=False, per_process=True)

KERNEL_CATEGORIES = List(Obj({"category": "str", "count": "int", "total_ns": "int",
                              "share": "share?", "tensor_core_ns": "int"}),
                         read=False, per_process=True)

KERNEL_SUMMARY = Obj({"count": "int", "names": "int", "total_ns": "int", "small_count": "int",
                      "small_kernel_ns": "int", "small_fraction": "share?",
                      "small_time_share": "share?", "window": SPAN},
                     null=True, read=False, per_process=True)

PROCESS_ROW = {"pid": "int", "name": "str", "steps_mean_ms": "num?", "verdict_code": VERDICT_CODE}
"""The summary keys of a ``processes[]`` row the renderers read (its sections follow)."""
PROCESS_ROW_CARRIED = {"devices": List("int"), "steps_count": "int", "steps_median_ms": "num?",
                       "utilization": "share?", "window_ms": "num", "headline": "str",
                       "confidence": Enum("high", "medium", "low"), "is_headline": "bool"}
PROCESS_ROW_OPTIONAL = ("utilization",)

DECLARED = None
"""In ``SECTION_ORDER``: the section's spec is declared beside its analysis (``Declaration.spec``,
analyses/engine/declaration.py)."""

SECTION_ORDER: dict[str, Node | None] = {
    "schema_version": Const(1),
    "tool": Obj({"name": Const("nsys-diag", default="nsys-diag"), "version": "str"}),
    "generated_at": Leaf(TIMESTAMP),
    "trace": TRACE,
    "scope": SCOPE,
    "window": Obj({"start_ns": "int", "end_ns": "int", "duration_ms": "num",
                   "source": Enum("steps", "gpu_activity", "user", "capture")},
                  carried={"coverage": Obj({"kernels": "int", "kernel_ms": "num",
                                            "capture_kernels": "int", "capture_kernel_ms": "num",
                                            "text": "str"},
                                           doc="how much of the capture's kernel work a step "
                                               "selection or --window covers (report/view.py)"),
                           "capture": Obj({"kernel_ms": "num", "kernels": "int",
                                           "busy_share": "share"},
                                          doc="the whole capture's kernel time and GPU busy "
                                              "share the abstain rule reads (report/view.py)")},
                  optional=("coverage", "capture"), per_process=True),
    "steps": DECLARED,
    "phases": DECLARED,
    "phases_status": PHASES_STATUS,
    "gpu": DECLARED,
    "gaps": DECLARED,
    "timeline": DECLARED,
    "kernels": DECLARED,
    "kernels_total": Int(per_process=True),
    "kernel_categories": KERNEL_CATEGORIES,
    "kernel_summary": KERNEL_SUMMARY,
    "tensor_cores": DECLARED,
    "transfers": DECLARED,
    "gpu_metrics": DECLARED,
    "throughput": THROUGHPUT,
    "mfu": MFU,
    "scaling": SCALING,
    "scaling_reason": Str(null=True, per_process=True),
    "loader": LOADER,
    "communication": DECLARED,
    "memory": DECLARED,
    "nvtx_ranges": DECLARED,
    "timeline_lanes": DECLARED,
    "gpu_fill": GPU_FILL,
    "roofline": DECLARED,
    "replay": REPLAY,
    "processes": List(Obj()),  # its rows: report/contract.py (summary keys + each process's sections)
    "verdict": VERDICT,
    "findings": FINDINGS,
    "data_quality": DECLARED,
    "thresholds": Map("num"),
    "capture_hints": List("str"),
    "program": PROGRAM,
    "capabilities": CAPABILITIES,
}
"""Every top-level key of the analysis JSON, in order: key → the report's own spec, or
``DECLARED`` (the analysis declares it). ``report/contract.py`` assembles ``SPEC`` from it."""
