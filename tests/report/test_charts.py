"""Chart geometry (nsys_diag/report/charts.py): coordinates in range, bounded element counts,
unavailable data → no chart, deterministic."""
from __future__ import annotations

import copy
import json
import re

import pytest
from sample_views import compute_bound_view, input_bound_view, large_view, sparse_view

from nsys_diag.report.charts import (
    HALF_WIDTH,
    MAX_STEP_MARKERS,
    MAX_STEP_POINTS,
    WIDTH,
    chart_model,
    nice_ticks,
)
from nsys_diag.report.page import clean_view

_NUM = re.compile(r"-?\d+(?:\.\d+)?")


def _path_points(d: str) -> list[tuple[float, float]]:
    nums = [float(x) for x in _NUM.findall(d)]
    return list(zip(nums[::2], nums[1::2]))


@pytest.mark.parametrize("lo, hi", [(0, 1), (0, 803.1 * 1.08), (0, 4200), (3, 17), (0, 0.004), (0, 1e9)])
def test_nice_ticks_cover_the_range_with_round_steps(lo, hi):
    ticks = nice_ticks(lo, hi)
    assert ticks[0] <= lo and ticks[-1] >= hi
    steps = {round(b - a, 9) for a, b in zip(ticks, ticks[1:])}
    assert len(steps) == 1
    (step,) = steps
    mantissa = step / 10 ** __import__("math").floor(__import__("math").log10(step))
    assert round(mantissa, 6) in (1, 2, 2.5, 5, 10)
    assert 2 <= len(ticks) <= 12


def test_phase_bar_segments_are_proportional_to_shares():
    view = input_bound_view()
    bar = chart_model(view)["phases"]
    shares = [p["share"] for p in view["phases"] if p["share"] > 0]
    assert [s["w"] for s in bar["segments"]] == pytest.approx([s * WIDTH for s in shares], abs=0.1)
    xs = [s["x"] for s in bar["segments"]]
    assert xs == sorted(xs) and xs[0] == 0
    assert bar["segments"][-1]["x"] + bar["segments"][-1]["w"] <= WIDTH + 0.2
    assert bar["segments"][0]["cls"] == "ph-data"
    assert "52%" in bar["segments"][0]["label"]  # the widest segment is labelled in place
    assert len(bar["legend"]) == len(shares)


def test_phase_bar_rescales_shares_that_sum_above_one():
    view = input_bound_view()
    for p in view["phases"]:
        p["share"] = 0.5
    bar = chart_model(view)["phases"]
    assert sum(s["w"] for s in bar["segments"]) == pytest.approx(WIDTH, abs=0.5)


def test_step_chart_marks_warmup_outliers_and_incomplete():
    view = compute_bound_view()
    chart = chart_model(view)["steps"]
    kinds = [m["cls"] for m in chart["markers"]]
    assert kinds.count("pt-outlier") == 1 and kinds.count("pt-warmup") == 1
    assert len(chart["shades"]) == 1  # warm-up step 0 shaded
    shade = chart["shades"][0]
    outlier = next(m for m in chart["markers"] if m["cls"] == "pt-outlier")
    assert shade["x"] >= chart["plot"]["x"] and not shade["x"] <= outlier["x"] <= shade["x"] + shade["w"]
    # the warm-up step (980 ms) is > 1.6× every other step: drawn clipped at the top, labelled
    warm = next(m for m in chart["markers"] if m["cls"] == "pt-warmup")
    assert warm["y"] == chart["plot"]["y"] and "980 ms" in warm["label"]
    pts = _path_points(chart["line"])
    assert len(pts) == len(view["steps"]["per_step"])
    p = chart["plot"]
    assert all(p["x"] <= x <= p["x2"] and p["y"] <= y <= p["y2"] for x, y in pts)
    assert chart["median"]["label"] == "median 312 ms"


def test_step_chart_without_clipping_when_warmup_is_modest():
    view = input_bound_view()
    view["steps"]["per_step"][0]["duration_ms"] = 900.0
    chart = chart_model(view)["steps"]
    assert all(m["label"] == "" for m in chart["markers"])


def test_step_chart_bins_long_runs():
    view = large_view(n_kernels=10, n_steps=20_000)
    view["steps"]["per_step"][123]["kind"] = "outlier"
    view["steps"]["per_step"][123]["duration_ms"] = 5000.0
    chart = chart_model(view)["steps"]  # 20k steps: no clean_view cap here, the chart bins itself
    assert chart["binned"] is True
    assert len(_path_points(chart["line"])) <= MAX_STEP_POINTS
    assert chart["band"].endswith("Z")
    assert len(chart["markers"]) <= MAX_STEP_MARKERS
    assert any(m["cls"] == "pt-outlier" for m in chart["markers"])


def test_cause_bars_sorted_and_scaled():
    chart = chart_model(input_bound_view())["causes"]
    rows = chart["rows"]
    assert rows[0]["label"] == "Waiting on input" and rows[0]["cls"] == "cause-input"
    widths = [r["w"] for r in rows]
    assert widths == sorted(widths, reverse=True)
    assert chart["width"] == HALF_WIDTH
    assert max(r["x"] + r["w"] for r in rows) <= HALF_WIDTH
    assert "4.12 s (83%)" in rows[0]["value"]


def test_histogram_bars_fit_the_plot():
    chart = chart_model(input_bound_view())["histogram"]
    p = chart["plot"]
    assert len(chart["bars"]) == 6
    tallest = max(chart["bars"], key=lambda b: b["h"])
    assert tallest["title"].startswith("gaps 100 ms to 1 s") and tallest["y"] >= p["y"]
    # x labels sit at bin edges, one per edge, left to right, far enough apart not to collide
    xs = [t["x"] for t in chart["xticks"]]
    assert xs == sorted(xs) and xs[0] == p["x"]
    assert [t["label"] for t in chart["xticks"]][:2] == ["1µs", "10µs"]
    widest = max(len(t["label"]) for t in chart["xticks"]) * 6.4
    assert min(b - a for a, b in zip(xs, xs[1:])) > widest
    assert chart["xtick_y"] > p["y2"] + 16  # below the "0" y tick
    for b in chart["bars"]:
        assert p["x"] <= b["x"] and b["x"] + b["w"] <= p["x2"] + 0.1
        assert b["y"] + b["h"] == pytest.approx(p["y2"], abs=0.2)
    assert chart["bars"][0]["count"] == "n=1,204"


def test_timeline_is_binned_one_path_per_device():
    view = compute_bound_view()
    strips = chart_model(view)["timeline"]
    assert [s["title"] for s in strips] == ["Representative step (step 5)", "Slowest step (step 9)"]
    for s in strips:
        busy_rows = [r for r in s["rows"] if r["kind"] == "busy"]
        assert len(busy_rows) == 2  # two GPUs, one path each — never one element per kernel
        phases = next(r for r in s["rows"] if r["kind"] == "phases")
        assert len(phases["rects"]) == 6
        for r in busy_rows:
            for x, y in _path_points(r["path"]):
                assert s["track_x"] - 0.1 <= x <= s["track_x"] + s["track_w"] + 0.1
                assert r["y"] - 0.1 <= y <= r["y"] + r["h"] + 0.1
    assert strips[1]["rows"][1]["mean"] == "49%"  # GPU idle during the checkpoint


def test_roofline_points_sized_by_share_and_inside_the_plot():
    view = compute_bound_view()
    chart = chart_model(view)["roofline"]
    p = chart["plot"]
    assert chart["not_plotted"] == 1  # the kernel without intensity
    shares = {k["short_name"]: k["time_share"] for k in view["roofline"]["kernels"]}
    pts = chart["points"]
    assert len(pts) == 7
    for a, b in zip(pts, pts[1:]):
        assert a["r"] >= b["r"]
    for pt in pts:
        assert p["x"] <= pt["x"] <= p["x2"] and p["y"] <= pt["y"] <= p["y2"]
    assert pts[0]["label"].startswith("sm90_xmma_gemm") and shares["sm90_xmma_gemm_bf16bf16_bf16f32"] == 0.41
    assert sum(1 for pt in pts if pt["label"]) == 5
    kinds = sorted(line["cls"] for line in chart["lines"])
    assert kinds == ["roof-compute", "roof-compute", "roof-mem", "roof-mem"]
    # a memory roof rises to the right; a compute roof is flat
    mem = next(line for line in chart["lines"] if line["cls"] == "roof-mem")
    assert mem["y2"] < mem["y1"] and mem["x2"] > mem["x1"]
    comp = next(line for line in chart["lines"] if line["cls"] == "roof-compute")
    assert comp["y1"] == comp["y2"]


def test_roofline_labels_cover_no_dot_and_no_other_label():
    """Labels are placed beside their dot, clear of every dot and of each other (issue 28)."""
    from nsys_diag.report.charts import _place_labels

    # a crowded cluster: five labelled dots in a 60-unit square, two big dots beside them
    dots = [{"x": 300.0 + 12 * i, "y": 200.0 + 10 * (i % 3), "r": 4.0, "label": f"kernel_{i}"} for i in range(5)]
    dots += [{"x": 390.0, "y": 200.0, "r": 14.0, "label": ""}, {"x": 240.0, "y": 190.0, "r": 14.0, "label": ""}]
    for d in dots:
        d["lx"], d["ly"] = d["x"] + d["r"] + 3, d["y"] + 4
    labelled = [d for d in dots if d["label"]]
    _place_labels(labelled, 720, 20, 400, dots=dots)
    boxes = [(d["lx"], d["lx"] + 6.3 * len(d["label"]), d["ly"] - 10, d["ly"] + 3) for d in labelled]

    def overlap(a, b):
        return a[0] < b[1] and a[1] > b[0] and a[2] < b[3] and a[3] > b[2]

    for i, a in enumerate(boxes):
        assert not any(overlap(a, b) for b in boxes[i + 1:])
        assert not any(overlap(a, (d["x"] - d["r"], d["x"] + d["r"], d["y"] - d["r"], d["y"] + d["r"])) for d in dots)


def test_roofline_skips_unusable_roofs_and_points():
    view = compute_bound_view()
    view["roofline"]["roofs"] = [{"name": "FP32", "kind": "compute", "value": 6.7e13},
                                 {"name": "DRAM", "kind": "memory", "value": 3.35e12},
                                 {"name": "L1", "kind": "memory", "value": None},
                                 {"name": "odd", "kind": "compute", "value": -1}]
    view["roofline"]["kernels"][0]["arithmetic_intensity"] = 0.0
    chart = chart_model(view)["roofline"]
    assert sorted(line["cls"] for line in chart["lines"]) == ["roof-compute", "roof-mem"]
    assert chart["not_plotted"] == 2 and len(chart["points"]) == 6


def test_unavailable_sections_give_no_chart():
    charts = chart_model(sparse_view())
    assert charts == {"phases": None, "steps": None, "causes": None, "histogram": None, "timeline": [], "lanes": None,
                      "kernels": None, "kernel_durations": None, "roofline": None}
    assert chart_model({}) == charts  # an empty view is "nothing to draw", not an error


def test_chart_model_is_deterministic_and_json_safe():
    view = compute_bound_view()
    a = json.dumps(chart_model(copy.deepcopy(view)), sort_keys=True, allow_nan=False)
    b = json.dumps(chart_model(clean_view(view)), sort_keys=True, allow_nan=False)
    assert a == b


def test_kernel_bars_top_ten_coloured_by_category():
    chart = chart_model(input_bound_view())["kernels"]
    assert len(chart["rows"]) == 10
    assert chart["rows"][0]["cls"] == "cat-gemm"
    assert {r["cls"] for r in chart["rows"]} >= {"cat-gemm", "cat-attention", "cat-elementwise"}
