"""The JSON Schema of the ``batch`` index (``index.json``): what ``nsys_diag/schemas/
batch_index.schema.json`` holds, generated from the shapes written down here.

The index is built by ``app/batch_index.py: build_index`` (rows, cross-rank section, job verdict:
``analyses/job/ranks.py``, ``analyses/job/job_verdict.py``). Keys are only ever added, never renamed;
every object is closed (an undeclared key fails validation), every map typed (spec language:
model/schema_types.py). Units: ``*_ms`` float ms, shares fractions 0..1.
``python -m nsys_diag.report.batch_schema --write`` regenerates the file (``python -m
nsys_diag.report.contract --write`` regenerates it with the other generated files);
tests/report/test_batch_schema.py proves the committed file equals the generated one and every
index the tests produce validates against it.
"""
from __future__ import annotations

from pathlib import Path

from nsys_diag.model.vocabulary import GAP_CAUSES, VERDICT_CODES
from nsys_diag.report.command_schemas import SCHEMAS_DIR, TOOL, document_schema, schema_json_text
from nsys_diag.report.contract_sections import TIMESTAMP
from nsys_diag.model.schema_types import Const, Enum, Leaf, List, Map, Obj, Section

INDEX_SCHEMA_VERSION = 1
"""``schema_version`` of ``index.json`` (``app/batch_index.py`` writes the same number)."""

_COUNT = Leaf({"type": "integer", "minimum": 0})
_CODE = Enum(*VERDICT_CODES, None)
_MS_MAP = Map("num")

TRACE_ROW = Obj({
    "label": "str", "kind": "str", "format": "str?", "verdict": _CODE, "headline": "str?",
    "confidence": Enum("high", "medium", "low", None), "steps": "int?", "step_median_ms": "num?",
    "phase_shares": Map("share?"), "gpu_busy": "share?", "tensor_core_share": "share?",
    "comm_ms_per_step": "num?", "processes": _COUNT, "report_html": "str?", "report_json": "str?",
    "cached": "bool", "sha256": "str", "rank": "int?"})
RANK_ROW = Obj({
    "rank": "int", "label": "str", "steps": "int", "median_step_ms": "num", "mean_step_ms": "num",
    "min_step_ms": "num", "p25_step_ms": "num", "p75_step_ms": "num", "max_step_ms": "num",
    "z": "num", "phase_ms": _MS_MAP, "phase_shares": Map("share?"), "comm_ms": "num?",
    "start_skew_ms": "num?", "straggler": "bool", "phase_gpu_ms": _MS_MAP, "gaps_ms": _MS_MAP},
    optional=("phase_gpu_ms", "gaps_ms", "min_step_ms", "p25_step_ms", "p75_step_ms",
              "max_step_ms"))
STRAGGLER = Obj({
    "rank": "int", "label": "str", "kind": Enum("phase", "step_time"), "median_step_ms": "num",
    "z": "num?", "excess_pct": "num?", "phase": "str?", "phase_excess_ms": "num?"},
    optional=("z", "excess_pct"))
RANKS = Section(Obj({
    "count": Leaf({"type": "integer", "minimum": 2}), "rows": List(RANK_ROW),
    "spread": Obj({"median_ms": "num", "min_ms": "num", "max_ms": "num", "max_over_median": "num?",
                   "cv": "num?", "phase_median_ms": _MS_MAP}),
    "stragglers": List(STRAGGLER),
    "alignment": Obj({"basis": "str", "common_steps": "int", "max_start_skew_ms": "num?",
                      "slowest_per_step": List(Obj({"rank": "int", "label": "str",
                                                    "steps_slowest": "int"})),
                      "note": "str"}),
    "communication": Obj({"available": "bool", "median_ms": "num?", "max_ms": "num?",
                          "min_ms": "num?", "lowest_rank": "int?", "note": "str"}),
    "source": "str?", "note": "str?", "assigned": Map("int?")},
    optional=("source", "note", "assigned")),
    "fewer than two ranks", null=True, doc="the cross-rank section (analyses/job/ranks.py)")
JOB = Obj({
    "available": "bool", "reason": "str?", "verdict": _CODE, "headline": "str?",
    "bound_by": Obj({"rank": "int?", "phase": "str?"}, null=True),
    "basis": Enum("straggler", "common", "most_expensive"),
    "cause": Obj({"kind": Enum("gpu_compute", "host"), "verdict": _CODE, "gpu_excess_ms": "num",
                  "host_excess_ms": "num", "gap_cause": Enum(*GAP_CAUSES, None)}, null=True),
    "current_step_ms": "num?", "projected_step_ms_if_fixed": "num?",
    "evidence": List(Obj({"text": "str", "metric": "str", "value": "scalar", "unit": "str"})),
    "what_if": List(Obj({
        "id": Enum("straggler_fixed"), "rank": "int", "phase": "str?", "change": "str",
        "steps": "int", "barrier": "str", "measured_ms": "num", "replayed_ms": "num",
        "error_pct": "num", "saves_ms_per_step": "num", "saves_range_ms": List("num"),
        "saves_share": "num", "step_ms_after": "num"}),
        doc="the job replay (analyses/job/job_replay.py): the ranks step by step with "
            "collectives as barriers; straggler_fixed: the straggler at the median rank's "
            "phase times")},
    optional=("basis", "current_step_ms", "what_if"),
    doc="the job verdict (analyses/job/job_verdict.py)")

INDEX = Obj({
    "schema_version": Const(INDEX_SCHEMA_VERSION), "kind": Const("batch_index"), "tool": TOOL,
    "generated_at": Leaf(TIMESTAMP), "roots": List("str"),
    "counts": Obj({k: _COUNT for k in ("found", "analysed", "from_cache", "ok", "skipped",
                                       "ignored")}),
    "phase_columns": List("str"), "traces": List(TRACE_ROW),
    "skipped": List(Obj({"label": "str", "reason": "str", "hint": "str?"}, optional=("hint",))),
    "ignored": List(Obj({"label": "str", "reason": "str"})),
    "ranks": RANKS, "job": JOB, "problems": List("str"), "exit_code": _COUNT})
"""``index.json``."""


def json_schema() -> dict:
    """The JSON Schema (draft 2020-12) of ``index.json``."""
    return document_schema(INDEX, "batch_index.schema.json",
                           f"nsys-diag batch index (schema_version {INDEX_SCHEMA_VERSION})",
                           "index.json written by `nsys-diag batch`; see docs/job.md. Keys are only "
                           "ever added, never renamed. Units: *_ms float ms, shares fractions 0..1. "
                           "Generated by `python -m nsys_diag.report.contract --write`.")


def schema_file() -> Path:
    """``nsys_diag/schemas/batch_index.schema.json`` (shipped in the package)."""
    return SCHEMAS_DIR / "batch_index.schema.json"


def schema_text() -> str:
    return schema_json_text(json_schema())


def main(argv: list[str] | None = None) -> int:
    """Print the schema; ``--write`` updates the shipped file."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m nsys_diag.report.batch_schema")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    if args.write:
        schema_file().write_text(schema_text(), encoding="utf-8")
    else:
        print(schema_text(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
