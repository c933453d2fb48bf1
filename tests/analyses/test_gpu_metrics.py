"""GPU metrics: tolerant names, fractions, per device / per phase means."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from kernel_frames import US, gpu_metrics
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.gpu_metrics import (
    CANONICAL_KEYS,
    analyze_gpu_metrics,
    canonical_key,
    metric_unit,
)
from nsys_diag.model.contracts import GPU_METRICS
from nsys_diag.model.thresholds import Thresholds

TH = Thresholds()
P = 100 * US  # sample period


@pytest.mark.parametrize("name,key", [
    ("SMs Active [Throughput %]", "sm_active"),
    ("SM Active [Throughput %]", "sm_active"),
    ("Tensor Active [Throughput %]", "tensor_active"),
    ("Tensor Active / FP16 Active [Throughput %]", "tensor_active"),
    ("DRAM Read Bandwidth [Throughput %]", "dram_read"),
    ("DRAM Write Bandwidth [Throughput %]", "dram_write"),
    ("PCIe RX Throughput [Throughput %]", "pcie_rx"),
    ("PCIe TX Throughput [Throughput %]", "pcie_tx"),
    ("NVLink RX Responses User Data [Throughput %]", "nvlink_rx"),
    ("NVLink TX Requests User Data [Throughput %]", "nvlink_tx"),
    ("NVLink RX Requests Protocol Data [Throughput %]", ""),
    ("GR Active [Throughput %]", "gr_active"),
    ("SM Issue [Throughput %]", "sm_issue"),
    ("Compute Warps in Flight [Throughput %]", "warps_in_flight"),
    ("Compute Warps in Flight [Avg Warps per Cycle]", ""),  # not a percentage: raw only
    ("GPC Clock Frequency [MHz]", ""),
])
def test_name_matching(name, key):
    assert canonical_key(name) == key


def test_metric_unit():
    assert metric_unit("GPC Clock Frequency [MHz]") == "MHz"
    assert metric_unit("no unit") == ""


def _samples():
    rows = []
    for i in range(10):  # t = 0 .. 0.9 ms
        t = i * P
        rows += [
            (t, 0, "SMs Active [Throughput %]", 80.0 if i < 5 else 40.0),
            (t, 0, "Tensor Active [Throughput %]", 50.0 if i < 5 else 0.0),
            (t, 0, "DRAM Read Bandwidth [Throughput %]", 30.0),
            (t, 0, "DRAM Write Bandwidth [Throughput %]", 10.0),
            (t, 0, "PCIe RX Throughput [Throughput %]", 2.0),
            (t, 0, "NVLink RX Requests User Data [Throughput %]", 10.0),
            (t, 0, "NVLink RX Responses User Data [Throughput %]", 5.0),
            (t, 0, "GPC Clock Frequency [MHz]", 1980.0),
            (t, 1, "SM Active [Throughput %]", 20.0),  # older singular spelling
        ]
    return gpu_metrics(rows)


def test_overall_per_device_and_units():
    r = analyze_gpu_metrics(_samples(), th=TH)
    assert not isinstance(r, Unavailable)
    o = r.overall
    assert set(o) == set(CANONICAL_KEYS)
    assert o["sm_active"] == pytest.approx((5 * 0.8 + 5 * 0.4 + 10 * 0.2) / 20)
    assert o["tensor_active"] == pytest.approx(0.25)
    assert o["dram_bandwidth"] == pytest.approx(0.4)
    assert o["pcie_rx"] == pytest.approx(0.02) and o["pcie_tx"] is None
    assert o["nvlink_rx"] == pytest.approx(0.15)  # requests + responses user data
    dev = dict(r.per_device)
    assert dev[0]["sm_active"] == pytest.approx(0.6) and dev[1]["sm_active"] == pytest.approx(0.2)
    assert dev[1]["tensor_active"] is None
    assert r.other["GPC Clock Frequency [MHz]"] == pytest.approx(1980.0)
    assert r.sample_period_ns == P
    j = r.to_json()
    json.dumps(j, allow_nan=False)
    assert j["available"] is True and j["overall"]["dram_bandwidth"] == pytest.approx(0.4)
    assert [d["device_id"] for d in j["per_device"]] == [0, 1]


def test_per_phase_with_many_windows():
    phases = pd.DataFrame({
        "phase": ["forward", "backward", "forward"],
        "start_ns": [0, 2 * P, 4 * P],            # forward: [0,2P) ∪ [4P,5P) → samples 0,1,4
        "end_ns": [2 * P, 4 * P, 5 * P],          # backward: [2P,4P) → samples 2,3
    })
    r = analyze_gpu_metrics(_samples(), phases, th=TH)
    per = dict(r.per_phase)
    assert per["forward"]["tensor_active"] == pytest.approx(0.5)
    assert per["backward"]["dram_bandwidth"] == pytest.approx(0.4)
    # device 1 samples (SM 20%) fall in the windows too: forward SM = (3×0.8 + 3×0.2) / 6
    assert per["forward"]["sm_active"] == pytest.approx(0.5)
    assert r.to_json()["per_phase"][0]["phase"] == "forward"


def test_window_filters_samples():
    r = analyze_gpu_metrics(_samples(), th=TH, window=(5 * P, 10 * P))
    assert r.overall["tensor_active"] == pytest.approx(0.0)
    assert isinstance(analyze_gpu_metrics(_samples(), th=TH, window=(10**12, 10**12 + 1)),
                      Unavailable)


def test_empty_is_unavailable_with_capture_hint():
    r = analyze_gpu_metrics(GPU_METRICS.empty(), th=TH)
    assert isinstance(r, Unavailable)
    j = r.to_json()
    assert j["available"] is False and "--gpu-metrics-devices" in j["hint"]


def test_only_unknown_metrics():
    r = analyze_gpu_metrics(gpu_metrics([(0, 0, "GPC Clock Frequency [MHz]", 1500.0)]), th=TH)
    assert all(v is None for v in r.overall.values())
    json.dumps(r.to_json(), allow_nan=False)


def test_real_traces_have_no_gpu_metrics(shared):
    from nsys_diag.loaders import load_trace

    b = load_trace(shared("nsys/fastvideo_train_2xh100_2026.2.sqlite"))
    assert isinstance(analyze_gpu_metrics(b.gpu_metrics, th=TH), Unavailable)


@pytest.mark.parametrize("n_groups", [1, 9, 10, 40])  # 13 keys × 10 groups passes int8's range
def test_grouped_means_equal_each_groups_own_means_for_any_code_width(n_groups):
    import numpy as np

    from nsys_diag.analyses.gpu_metrics import _code_dtype, _grouped_means, _means, canonical_samples

    rng = np.random.default_rng(n_groups)
    names = ["SM Active [Throughput %]", "Tensor Active [Throughput %]",
             "DRAM Read Bandwidth [Throughput %]", "GPC Clock Frequency [MHz]"]
    rows = [(int(t), 0, names[int(m)], float(v)) for t, m, v in
            zip(range(0, 3_000 * 10, 10), rng.integers(0, 4, 3_000), rng.random(3_000) * 100)]
    samples = canonical_samples(gpu_metrics(rows))
    group = rng.integers(0, n_groups, len(samples))
    got = _grouped_means(samples, group, n_groups)
    assert got == [_means(samples.loc[group == g]) for g in range(n_groups)]  # exact floats
    assert np.iinfo(_code_dtype(n_groups * 13)).max > n_groups * 13
