"""The report's GPU time per NVTX range (``id="nvtx-ranges"``, the ``nvtx_ranges`` section)."""
from __future__ import annotations

import copy

from sample_views import input_bound_view

from nsys_diag.report.html_report import render_html
from nsys_diag.report.page import clean_view
from nsys_diag.report.tables import nvtx_range_table


def _with_ranges(view: dict, n: int = 3) -> dict:
    v = copy.deepcopy(view)
    rows = [{"name": f"layer_{i}<b>", "domain": "" if i else "PyTorch", "count": 10 + i, "cpu_ms": 5.0,
             "gpu_ms": 40.0 - i, "gpu_self_ms": 20.0 - i, "share": (40.0 - i) / 100} for i in range(n)]
    v["nvtx_ranges"] = {"available": True, "ranges": rows, "groups": n + 7, "kernel_ms": 100.0,
                        "unattributed_kernels": 0}
    return v


def test_table_lists_the_ranges_and_says_how_many_there_are():
    t = nvtx_range_table(clean_view(_with_ranges(input_bound_view())))
    assert t is not None and len(t["rows"]) == 3 and t["total"] == 10
    first = t["rows"][0]
    assert first[0]["text"] == "layer_0<b>" and first[1]["text"] == "PyTorch"
    assert t["rows"][1][1]["text"] == "default"
    assert first[-1]["meter"] is not None  # the share has its inline bar


def test_report_shows_the_view_escaped_and_only_when_available():
    html = render_html(_with_ranges(input_bound_view()))
    assert 'id="nvtx-ranges"' in html and "GPU time per NVTX range" in html
    assert "layer_0&lt;b&gt;" in html and "layer_0<b>" not in html.split("<script")[0]
    v = input_bound_view()
    v["nvtx_ranges"] = {"available": False, "reason": "no NVTX ranges in the analysed window", "hint": ""}
    assert 'id="nvtx-ranges"' not in render_html(v)
