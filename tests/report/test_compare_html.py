"""The compare page: a distribution chart of both sides, one unit per metric row."""
from __future__ import annotations

import re

import numpy as np

from nsys_diag.report.compare_render import compare_rows, explain_rows, render_compare_html
from nsys_diag.report.compare_html import CHAR_PX, distribution_chart, ms_row_texts, row_unit


def _doc(**sides) -> dict:
    rng = np.random.default_rng(0)
    base = {"path": "a.sqlite", "runs": 1, "steps": 40,
            "step_ms": (100 + rng.normal(0, 2, 40)).tolist()}
    cand = {"path": "b.sqlite", "runs": 1, "steps": 40,
            "step_ms": (110 + rng.normal(0, 2, 40)).tolist()}
    base.update(sides.get("baseline", {}))
    cand.update(sides.get("candidate", {}))
    m = {"name": "kernel.tiny_ms", "unit": "ms", "baseline": 0.00518, "candidate": 0.0279,
         "delta": 0.02272, "delta_pct": 438.6, "significant": True, "change": "worse"}
    return {"kind": "compare", "baseline": base, "candidate": cand,
            "step_time": {"name": "step_time_ms", "unit": "ms", "baseline": 100.0, "candidate": 110.0,
                          "delta": 10.0, "delta_pct": 10.0, "change": "worse"},
            "metrics": [m], "explain": [{"kind": "kernel", "group": "kernels", "name": "tiny",
                                         "baseline": 0.00518, "candidate": 0.0279, "delta": 0.02272}]}


def _units(text: str) -> set[str]:
    return set(re.findall(r"\d\s*(µs|ms|ns|s)\b", text))


def test_row_unit_comes_from_the_largest_magnitude():
    assert row_unit([0.00518, 0.0279]) == (1e-3, "µs")
    assert row_unit([900.0, 1200.0])[1] == "s"
    assert row_unit([None, 0.5, -3.0])[1] == "ms"
    t = ms_row_texts({"baseline": 0.00518, "candidate": 0.0279, "delta": 0.02272})
    assert (t["value_baseline"], t["value_candidate"], t["delta_text"]) == ("5.18 µs", "27.9 µs", "+22.7 µs")


def test_metric_and_explain_rows_use_one_unit_per_row():
    doc = _doc()
    r = compare_rows(doc)[0]
    assert _units(r["value_baseline"] + r["value_candidate"] + r["delta_text"]) == {"µs"}
    e = explain_rows(doc)[0]
    assert _units(e["baseline_text"] + e["candidate_text"] + e["delta_text"]) == {"µs"}
    html = render_compare_html(doc)
    row = re.search(r"<tr[^>]*>(?:(?!</tr>).)*kernel tiny(?:(?!</tr>).)*</tr>", html, re.S)
    assert row and _units(re.sub(r"<[^>]+>", " ", row.group(0))) == {"µs"}


def test_step_distribution_chart_has_both_sides_and_non_overlapping_ticks():
    doc = _doc()
    chart = distribution_chart(doc)
    assert chart and chart["title"] == "step time"
    assert [r["role"] for r in chart["rows"]] == ["baseline", "candidate"]
    assert all(len(r["points"]) == 40 for r in chart["rows"])
    # the candidate's median sits right of the baseline's (110 vs 100 ms)
    assert chart["rows"][1]["box"]["median_x"] > chart["rows"][0]["box"]["median_x"]
    ticks = chart["ticks"]
    assert len(ticks) >= 2
    for a, b in zip(ticks, ticks[1:]):
        assert b["x"] - a["x"] > (a["width"] + b["width"]) / 2
    assert all(chart["x0"] - 1 <= t["x"] <= chart["x1"] + 1 for t in ticks)
    assert ticks[0]["width"] == len(ticks[0]["label"]) * CHAR_PX
    html = render_compare_html(doc)
    assert 'id="sec-distribution"' in html and html.count('class="dist-point"') == 80
    assert "<script src" not in html and "http" not in html.split("<body", 1)[-1].split("</svg>")[0]


def test_window_busy_distribution_when_a_side_has_no_steps():
    doc = _doc(baseline={"step_ms": [], "window_busy": [0.5, 0.6, 0.7] * 10},
               candidate={"window_busy": [0.8, 0.9] * 15})
    chart = distribution_chart(doc)
    assert chart and chart["title"] == "GPU busy per 10 ms bin"
    assert [t["label"] for t in chart["ticks"]][0] == "0%" and chart["ticks"][-1]["label"] == "100%"
    assert "GPU busy per 10 ms bin" in render_compare_html(doc)


def test_no_chart_without_samples():
    doc = _doc(baseline={"step_ms": []})
    assert distribution_chart(doc) is None
    assert 'id="sec-distribution"' not in render_compare_html(doc)
