"""Human formatting of view-model numbers (nsys_diag/report/formatting.py)."""
from __future__ import annotations

import math

import pytest

from nsys_diag.report.formatting import (
    MISSING,
    fmt_bytes,
    fmt_count,
    fmt_ms,
    fmt_ns,
    fmt_number,
    fmt_pct,
    fmt_rate,
    fmt_ratio,
    fmt_share,
    fmt_signed,
    fmt_value,
)

ALL = (fmt_number, fmt_count, fmt_ns, fmt_ms, fmt_bytes, fmt_rate, fmt_pct, fmt_share, fmt_ratio)


@pytest.mark.parametrize("fn", ALL)
@pytest.mark.parametrize("bad", [None, float("nan"), float("inf"), -math.inf, "abc", True, [1]])
def test_unknown_values_render_as_a_dash(fn, bad):
    assert fn(bad) == MISSING


@pytest.mark.parametrize("ns, text", [
    (0, "0 ns"), (850, "850 ns"), (999, "999 ns"), (1_000, "1 µs"), (12_500, "12.5 µs"),
    (3_200_000, "3.2 ms"), (420_000_000, "420 ms"), (1_250_000_000, "1.25 s"), (86_400 * 10**9, "86,400 s"),
])
def test_fmt_ns_picks_the_readable_unit(ns, text):
    assert fmt_ns(ns) == text


@pytest.mark.parametrize("ms, text", [
    (420.0, "420 ms"), (12.5, "12.5 ms"), (0.35, "0.35 ms"), (1250.0, "1.25 s"), (0.0, "0 ms"),
    (0.004, "4 µs"), (800.07, "800 ms"), (999.96, "1,000 ms"),
])
def test_fmt_ms(ms, text):
    assert fmt_ms(ms) == text


@pytest.mark.parametrize("n, text", [
    (0, "0 B"), (512, "512 B"), (1_500, "1.5 kB"), (4_026_531_840, "4.03 GB"), (2_039_000_000_000, "2.04 TB"),
])
def test_fmt_bytes_uses_si_prefixes(n, text):
    assert fmt_bytes(n) == text


def test_fmt_rate_units():
    assert fmt_rate(2.0e12) == "2 TB/s"
    assert fmt_rate(3.1e14, "FLOP") == "310 TFLOP/s"
    assert fmt_rate(152.4, "samples") == "152 samples/s"
    assert fmt_rate(5333.0, "samples") == "5.33 k samples/s"
    assert fmt_rate(1500.0, "") == "1.5 k/s"
    assert fmt_rate(0.5) == "0.5 B/s"


@pytest.mark.parametrize("x, pct, share", [
    (0.525, "52.5%", "52%"), (0.0375, "3.8%", "3.8%"), (1.0, "100.0%", "100%"), (0.0, "0.0%", "0%"),
    (0.00001, "0.0%", "<0.1%"), (0.999, "99.9%", "100%"),
])
def test_fmt_pct_and_share(x, pct, share):
    assert fmt_pct(x) == pct
    assert fmt_share(x) == share


def test_fmt_count_and_number():
    assert fmt_count(1234567) == "1,234,567"
    assert fmt_count(12.6) == "13"
    assert fmt_number(0.012345) == "0.0123"
    assert fmt_number(123456.7) == "123,457"
    assert fmt_number(1.5) == "1.5"
    assert fmt_ratio(1.9048) == "1.9×"
    assert fmt_ratio(1.96) == "1.96×"


@pytest.mark.parametrize("metric, value, text", [
    ("gpu.utilization", 0.24, "24.0%"),
    ("phases.data_share", 0.525, "52.5%"),
    ("step_ms", 800.0, "800 ms"),
    ("replay.saves_ms_per_step", 380.001, "380 ms"),
    ("min_gap_ns", 1000, "1 µs"),
    ("peak_bytes", 2_000_000, "2 MB"),
    ("dram_bytes_per_s", 1e12, "1 TB/s"),
    ("loader_samples_per_s", 1500.0, "1.5 k/s"),
    ("kernel_count", 12, "12"),
    ("anything", "text stays", "text stays"),
    ("share_but_not_a_fraction", 3.5, "3.5"),
    ("flag", True, "yes"),
])
def test_fmt_value_infers_units_from_the_metric_name(metric, value, text):
    assert fmt_value(value, metric) == text


@pytest.mark.parametrize("x, decimals, text", [
    (-0.0004, 1, "+0.0"), (-0.2, 0, "+0"), (0.0, 1, "+0.0"), (-0.05, 1, "-0.1"), (1.26, 1, "+1.3"),
    (-3.0, 0, "-3"),
])
def test_fmt_signed_never_prints_minus_zero(x, decimals, text):
    assert fmt_signed(x, decimals) == text


def test_the_memory_table_states_peak_and_device_size_in_one_unit():
    from nsys_diag.report.tables import memory_table

    v = {"memory": {"per_device": [{"device_id": 0, "peak_bytes": 32_212_254_720,
                                    "device_bytes": 85_045_460_992, "peak_share": 0.379}]}}
    row = memory_table(v)["rows"][0]
    texts = [c["text"] if isinstance(c, dict) else str(c) for c in row]
    assert texts[1] == "30 GiB" and texts[2].endswith("GiB")
