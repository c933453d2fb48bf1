"""The analysis JSON: ``to_json(view)`` — sorted keys, no NaN/Infinity (a stray one is a bug)."""
from __future__ import annotations

import json
from pathlib import Path

from nsys_diag.model.jsonsafe import escape_invisible

SCHEMA_RESOURCE = ("nsys_diag.schemas", "analysis.schema.json")


def to_json(view: dict) -> str:
    """Deterministic JSON text of the view (``allow_nan=False``: a NaN raises ValueError)."""
    return escape_invisible(json.dumps(view, sort_keys=True, allow_nan=False, indent=2,
                                       ensure_ascii=False)) + "\n"


def schema_path() -> Path:
    """Path of the shipped JSON Schema (``nsys_diag/schemas/analysis.schema.json``)."""
    return Path(__file__).resolve().parents[1] / "schemas" / "analysis.schema.json"


def load_schema() -> dict:
    return json.loads(schema_path().read_text(encoding="utf-8"))
