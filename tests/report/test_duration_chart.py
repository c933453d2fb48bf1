"""The kernel-duration chart (``id="kernel-durations"``, issue 28 item 6)."""
from __future__ import annotations

from sample_views import input_bound_view

from nsys_diag.report.duration_chart import TOP_KERNELS, _fit, kernel_durations


def _k(name, lo, med, mean, hi, total):
    return {"name": name, "short_name": name, "count": 10, "total_ns": total, "min_ns": lo,
            "median_ns": med, "mean_ns": mean, "max_ns": hi, "share": 0.1, "category": "gemm"}


def test_rows_on_a_log_axis_from_min_to_max_with_the_median_between():
    v = {"kernels": [_k("gemm", 1_000_000, 2_000_000, 3_000_000, 20_000_000, 9),
                     _k("ew", 2_000, 3_000, 3_100, 10_000, 5)]}
    m = kernel_durations(v)
    assert [r["label"] for r in m["rows"]] == ["gemm", "ew"]
    for r in m["rows"]:
        assert m["x0"] <= r["x_min"] <= r["x_median"] <= r["x_max"] <= m["x1"]
    g, e = m["rows"]
    assert g["x_mean"] > g["x_median"]  # a long tail: the mean right of the median
    # one decade is one fixed width: 1 ms → 10 ms as wide as 1 µs → 10 µs
    ticks = {t["label"]: t["x"] for t in m["ticks"]}
    assert abs((ticks["1ms"] - ticks["100µs"]) - (ticks["10µs"] - ticks["1µs"])) < 0.2
    assert ticks["1µs"] <= e["x_min"] and g["x_max"] <= max(ticks.values())
    assert g["value"] == "2 ms" and "median 2 ms" in g["title"]


def test_top_kernels_only_and_none_without_two_ranges():
    v = {"kernels": [_k(f"k{i}", 1_000, 2_000, 2_000, 3_000, 100 - i) for i in range(TOP_KERNELS + 5)]}
    assert len(kernel_durations(v)["rows"]) == TOP_KERNELS
    assert kernel_durations({"kernels": v["kernels"][:1]}) is None
    assert kernel_durations({"kernels": [_k("a", 0, 0, 0, 0, 1), _k("b", None, None, None, None, 1)]}) is None


def test_labels_are_cut_in_the_middle_so_names_stay_distinct():
    a, b = _fit("vectorized_elementwise_kernel<4, Gelu>", 20), _fit("vectorized_elementwise_kernel<4, Add>", 20)
    assert a != b and len(a) == len(b) == 20 and "…" in a


def test_the_report_view_draws_it():
    from nsys_diag.report.charts import chart_model

    m = chart_model(input_bound_view())["kernel_durations"]
    assert m is None or len(m["rows"]) >= 2
