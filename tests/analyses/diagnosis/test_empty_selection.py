"""A ``--window`` that holds none of the capture's GPU work: the tool says the selection is empty
and how to widen it — never that the export lacks CUDA or must be re-captured."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from nsys_diag.app.analyze import analyze_path
from nsys_diag.app.options import build_options
from nsys_diag.model.vocabulary import WIDEN_WINDOW_HINT

SAMPLE = Path(__file__).resolve().parents[3] / "sample_traces" / "worked_example.sqlite"


def _doc(**kw) -> dict:
    return json.loads(json.dumps(analyze_path(str(SAMPLE), build_options(**kw), generated_at="t"),
                                 default=str))


@pytest.mark.parametrize("budget", ["none", "150M"])
def test_a_window_without_kernels_says_the_selection_missed_them(budget):
    doc = _doc(window="0:1us", memory_budget=budget, chunk_rows=500)
    v = doc["verdict"]
    assert v["code"] == "insufficient_data"
    whole = _doc(memory_budget="none")["window"]["capture"]["kernels"]
    assert f"the capture's {whole:,} kernels" in v["headline"]
    assert "analysed window" in v["headline"] and "export holds no" not in v["headline"]
    assert v["recommendations"] == [WIDEN_WINDOW_HINT + "."]
    assert not any("Re-capture" in r for r in v["recommendations"])
    assert doc["capture_hints"] == [WIDEN_WINDOW_HINT]
    assert "analysed window" in v["scale_advice"]
    if budget == "none":  # the load warnings name the window's lack, not the export's
        texts = [q["message"] for q in doc["data_quality"]]
        assert not any("export holds no" in t for t in texts), texts
        assert any(t.startswith("the analysed window holds no kernel") for t in texts)


def test_a_window_with_kernels_keeps_the_usual_verdict():
    doc = _doc(window="1s:", memory_budget="none")
    assert doc["verdict"]["code"] != "insufficient_data"
    assert WIDEN_WINDOW_HINT not in doc["capture_hints"]
