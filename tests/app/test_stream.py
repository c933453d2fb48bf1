"""Streaming (``--memory-mode stream``): the whole export analysed chunk by chunk gives the
in-memory answers — counts, per-step rows, verdict and evidence identical, sums to 1e-9."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from nsys_diag.app.analyze import analyze_path
from nsys_diag.app.options import build_options

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
TRACES = sorted(p.name for p in SAMPLES.glob("*.sqlite"))
IGNORED = {"generated_at"}
"""Keys that legitimately differ (the run's own time)."""


def _view(path: Path, **kw) -> dict:
    view = analyze_path(str(path), build_options(**kw), generated_at="t")
    return json.loads(json.dumps(view, default=str))


def assert_same(a, b, where="$"):
    """Equal JSON: ints/strings/lists identical, floats to relative 1e-9."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert set(a) - IGNORED == set(b) - IGNORED, f"{where}: keys {set(a) ^ set(b)}"
        for k in a:
            if k not in IGNORED:
                assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{where}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert a is not None and b is not None, f"{where}: {a!r} vs {b!r}"
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), f"{where}: {a!r} vs {b!r}"
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


def _without_chunks(view: dict) -> dict:
    view = dict(view)
    view["trace"] = {k: v for k, v in view["trace"].items() if k != "chunks"}
    return view


@pytest.mark.parametrize("name", TRACES)
@pytest.mark.parametrize("chunk_rows", [400, 1500])
def test_streamed_equals_in_memory(name, chunk_rows):
    whole = _view(SAMPLES / name, memory_budget="none")
    streamed = _view(SAMPLES / name, chunk_rows=chunk_rows)
    assert streamed["trace"]["read_window"] is None
    chunks = streamed["trace"].get("chunks")
    assert chunks is not None and chunks["count"] >= 1
    assert_same(whole, _without_chunks(streamed))


def test_small_chunks_make_many_chunks():
    streamed = _view(SAMPLES / "worked_example.sqlite", chunk_rows=300)
    assert streamed["trace"]["chunks"]["count"] >= 5
