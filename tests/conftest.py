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
