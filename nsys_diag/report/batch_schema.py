"""The JSON Schema of the ``batch`` index (``index.json``): what ``nsys_diag/schemas/
batch_index.schema.json`` holds, generated from the shapes written down here.

The index is built by ``app/batch_index.py: build_index`` (rows, cross-rank section, job verdict:
``analyses/job/ranks.py``, ``analyses/job/job_verdict.py``). Keys are only ever added, never renamed: every
object here allows extra keys. Units: ``*_ms`` float ms, shares fractions 0..1.
``python -m nsys_diag.report.batch_schema --write`` regenerates the file;
tests/report/test_batch_schema.py proves the committed file equals the generated one and every
index the tests produce validates against it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nsys_diag.model.vocabulary import GAP_CAUSES, VERDICT_CODES

INDEX_SCHEMA_VERSION = 1
"""``schema_version`` of ``index.json`` (``app/batch_index.py`` writes the same number)."""

_N = {"type": "number"}
_N0 = {"type": ["number", "null"]}
_I0 = {"type": ["integer", "null"]}
_S = {"type": "string"}
_S0 = {"type": ["string", "null"]}
_B = {"type": "boolean"}
_SHARE0 = {"type": ["number", "null"], "minimum": 0, "maximum": 1.000001}
_CODE0 = {"oneOf": [{"type": "null"}, {"enum": list(VERDICT_CODES)}]}


def obj(props: dict[str, Any], *, nullable: bool = False, optional: tuple[str, ...] = ()) -> dict:
    """An object with these properties, all required but ``optional`` (extra keys allowed)."""
    node: dict[str, Any] = {"type": ["object", "null"] if nullable else "object",
                            "properties": props,
                            "required": [k for k in props if k not in optional]}
    return node


def arr(items: dict) -> dict:
    return {"type": "array", "items": items}


def num_map(values: dict = _N0) -> dict:
    """An object of name → number (phases, gap causes…)."""
    return {"type": "object", "additionalProperties": values}


_ROW = obj({
    "label": _S, "kind": _S, "format": _S0, "verdict": _CODE0, "headline": _S0,
    "confidence": {"enum": ["high", "medium", "low", None]}, "steps": _I0, "step_median_ms": _N0,
    "phase_shares": num_map(_SHARE0), "gpu_busy": _SHARE0, "tensor_core_share": _SHARE0,
    "comm_ms_per_step": _N0, "processes": {"type": "integer", "minimum": 0},
    "report_html": _S0, "report_json": _S0, "cached": _B, "sha256": _S, "rank": _I0})
_RANK_ROW = obj({
    "rank": {"type": "integer"}, "label": _S, "steps": {"type": "integer"},
    "median_step_ms": _N, "mean_step_ms": _N, "z": _N, "phase_ms": num_map(_N),
    "phase_shares": num_map(_SHARE0), "comm_ms": _N0, "start_skew_ms": _N0, "straggler": _B,
    "phase_gpu_ms": num_map(_N), "gaps_ms": num_map(_N)},
    optional=("phase_gpu_ms", "gaps_ms"))
_STRAGGLER = obj({
    "rank": {"type": "integer"}, "label": _S, "kind": {"enum": ["phase", "step_time"]},
    "median_step_ms": _N, "z": _N0, "excess_pct": _N0, "phase": _S0, "phase_excess_ms": _N0},
    optional=("z", "excess_pct"))
_RANKS = {"oneOf": [
    {"type": "null"},
    obj({"available": {"const": False}, "reason": _S}, optional=()),
    obj({"available": {"const": True}, "count": {"type": "integer", "minimum": 2},
         "rows": arr(_RANK_ROW),
         "spread": obj({"median_ms": _N, "min_ms": _N, "max_ms": _N, "max_over_median": _N0,
                        "cv": _N0, "phase_median_ms": num_map(_N)}),
         "stragglers": arr(_STRAGGLER),
         "alignment": obj({"basis": _S, "common_steps": {"type": "integer"},
                           "max_start_skew_ms": _N0, "slowest_per_step": arr(obj({
                               "rank": {"type": "integer"}, "label": _S,
                               "steps_slowest": {"type": "integer"}})), "note": _S}),
         "communication": obj({"available": _B, "median_ms": _N0, "max_ms": _N0, "min_ms": _N0,
                               "lowest_rank": _I0, "note": _S}),
         "source": _S0, "note": _S0,
         "assigned": {"type": "object", "additionalProperties": _I0}},
        optional=("source", "note", "assigned")),
]}
_CAUSE = obj({"kind": {"enum": ["gpu_compute", "host"]}, "verdict": _CODE0,
              "gpu_excess_ms": _N, "host_excess_ms": _N,
              "gap_cause": {"enum": [*GAP_CAUSES, None]}}, nullable=True)
_JOB = obj({
    "available": _B, "reason": _S0, "verdict": _CODE0, "headline": _S0,
    "bound_by": obj({"rank": _I0, "phase": _S0}, nullable=True),
    "basis": {"enum": ["straggler", "common", "most_expensive"]}, "cause": _CAUSE,
    "current_step_ms": _N0, "projected_step_ms_if_fixed": _N0,
    "evidence": arr(obj({"text": _S, "metric": _S, "value": {"type": ["number", "string", "null"]},
                         "unit": _S}))},
    optional=("basis", "current_step_ms"))


def json_schema() -> dict:
    """The JSON Schema (draft 2020-12) of ``index.json``."""
    body = obj({
        "schema_version": {"const": INDEX_SCHEMA_VERSION},
        "kind": {"const": "batch_index"},
        "tool": obj({"name": {"const": "nsys-diag"}, "version": _S}),
        "generated_at": {"type": "string",
                         "pattern": "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$"},
        "roots": arr(_S),
        "counts": obj({k: {"type": "integer", "minimum": 0} for k in
                       ("found", "analysed", "from_cache", "ok", "skipped", "ignored")}),
        "phase_columns": arr(_S),
        "traces": arr(_ROW),
        "skipped": arr(obj({"label": _S, "reason": _S, "hint": _S0}, optional=("hint",))),
        "ignored": {"type": "array"},
        "ranks": _RANKS,
        "job": _JOB,
        "problems": arr(_S),
        "exit_code": {"type": "integer", "minimum": 0},
    })
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://nsys-diag.invalid/schemas/batch_index.schema.json",
            "title": f"nsys-diag batch index (schema_version {INDEX_SCHEMA_VERSION})",
            "description": "index.json written by `nsys-diag batch`; see docs/job.md. Keys are only "
                           "ever added, never renamed. Units: *_ms float ms, shares fractions 0..1. "
                           "Generated by `python -m nsys_diag.report.batch_schema --write`.",
            **body}


def schema_file() -> Path:
    """``nsys_diag/schemas/batch_index.schema.json`` (shipped in the package)."""
    return Path(__file__).resolve().parents[1] / "schemas" / "batch_index.schema.json"


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


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
