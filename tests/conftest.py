"""Shared fixtures. Real traces come from ../shared/traces (skipped cleanly when absent)."""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = REPO.parent / "shared" / "traces"
SAMPLE_TRACES = REPO / "sample_traces"


def shared_trace(rel: str) -> Path:
    """Path of a real trace in ../shared/traces; skips the test when it is not there."""
    p = SHARED_TRACES / rel
    if not p.exists():
        pytest.skip(f"../shared/traces/{rel} not present")
    return p


@pytest.fixture
def shared():
    return shared_trace


_INDEX_VALIDATOR = None


def _index_validator():
    global _INDEX_VALIDATOR
    if _INDEX_VALIDATOR is None:
        import jsonschema

        from nsys_diag.report.batch_schema import json_schema
        _INDEX_VALIDATOR = jsonschema.Draft202012Validator(json_schema())
    return _INDEX_VALIDATOR


@pytest.fixture(autouse=True)
def _every_batch_index_validates(monkeypatch):
    """Every ``index.json`` a test produces validates against the batch index JSON Schema
    (nsys_diag/schemas/batch_index.schema.json): ``build_index`` is wrapped to check it."""
    from nsys_diag.app import batch, batch_index

    original = batch_index.build_index

    def checked(*args, **kwargs):
        index = original(*args, **kwargs)
        errors = sorted(_index_validator().iter_errors(index), key=lambda e: list(e.path))
        assert not errors, [(list(e.path), e.message[:200]) for e in errors[:5]]
        return index

    monkeypatch.setattr(batch_index, "build_index", checked)
    monkeypatch.setattr(batch, "build_index", checked)


@pytest.fixture(autouse=True)
def _no_terminal_width(monkeypatch):
    """Terminal output wraps at ``COLUMNS`` (issue 28): tests see whole lines unless they set it
    themselves, whatever the shell or a test runner's workers export."""
    monkeypatch.delenv("COLUMNS", raising=False)
