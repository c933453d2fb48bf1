"""GPU memory: running-sum peak per device and batch-size advice."""
from __future__ import annotations

import json

import pytest

from kernel_frames import gpu_memory, gpus
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.memory import analyze_memory
from nsys_diag.model.contracts import GPU_MEMORY, GPUS
from nsys_diag.model.thresholds import Thresholds

TH = Thresholds()
GiB = 1 << 30


def _events(peak_gib: int):
    return gpu_memory([
        (10, 0, 2 * GiB, "alloc"),
        (20, 0, (peak_gib - 2) * GiB, "alloc"),   # peak here
        (30, 0, (peak_gib - 2) * GiB, "free"),
        (40, 0, 1 * GiB, "alloc"),
        (50, 0, 123, "other"),
        (15, 1, 1 * GiB, "alloc"),
    ])


def test_headroom_advice_and_peak():
    r = analyze_memory(_events(20), gpus(["NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"],
                                         memory=80 * GiB), th=TH)
    assert not isinstance(r, Unavailable)
    d = {x.device_id: x for x in r.per_device}
    assert d[0].peak_bytes == 20 * GiB and d[0].peak_ts_ns == 20
    assert d[0].peak_share == pytest.approx(0.25)
    assert d[0].alloc_count == 3 and d[0].free_count == 1
    assert d[1].peak_bytes == GiB
    assert r.advice_code == "headroom" and "batch" in r.advice
    j = r.to_json()
    json.dumps(j, allow_nan=False)
    assert j["per_device"][0]["device_bytes"] == 80 * GiB
    assert j["max_peak_share"] == pytest.approx(0.25)


def test_near_full_and_ok():
    g = gpus(["A", "B"], memory=80 * GiB)
    near = analyze_memory(_events(76), g, th=TH)
    assert near.advice_code == "near_full" and "checkpointing" in near.advice
    ok = analyze_memory(_events(60), g, th=TH)
    assert ok.advice_code == "ok" and ok.advice == ""
    # thresholds are honoured
    assert analyze_memory(_events(60), g, th=TH.with_overrides(memory_near_full_frac=0.7)
                          ).advice_code == "near_full"


def test_frees_of_preexisting_allocations_raise_the_baseline():
    ev = gpu_memory([(10, 0, 4 * GiB, "free"), (20, 0, 6 * GiB, "alloc"), (30, 0, 1 * GiB, "free")])
    r = analyze_memory(ev, GPUS.empty(), th=TH)
    x = r.per_device[0]
    assert x.preexisting_bytes == 4 * GiB
    assert x.peak_bytes == 6 * GiB  # -4 + 6 = 2 above the dip of -4
    assert x.peak_share is None and r.advice_code == "unknown"
    json.dumps(r.to_json(), allow_nan=False)


def test_equal_timestamps_keep_export_order():
    ev = gpu_memory([(10, 0, GiB, "alloc"), (10, 0, GiB, "free"), (10, 0, GiB, "alloc")])
    assert analyze_memory(ev, None, th=TH).per_device[0].peak_bytes == GiB


def test_empty_is_unavailable():
    r = analyze_memory(GPU_MEMORY.empty(), GPUS.empty(), th=TH)
    assert isinstance(r, Unavailable)
    assert "--cuda-memory-usage=true" in r.to_json()["hint"]


def test_real_fastvideo_has_no_memory_events(shared):
    from nsys_diag.loaders import load_trace

    b = load_trace(shared("nsys/fastvideo_train_2xh100_2026.2.sqlite"))
    assert isinstance(analyze_memory(b.gpu_memory, b.gpus, th=TH), Unavailable)


def test_an_impossible_peak_share_is_bad_data_not_advice():
    """A peak of 10^8 × the device's memory said "GPU memory nearly full (10846978750% peak)":
    beyond ``IMPLAUSIBLE_PEAK_SHARE`` a device gets no share, no advice and a quality item."""
    from nsys_diag.analyses.diagnosis.data_quality import memory_quality
    from nsys_diag.analyses.memory import IMPLAUSIBLE_PEAK_SHARE

    g = gpus(["A", "B"], memory=GiB)
    r = analyze_memory(gpu_memory([(10, 0, 10**8 * GiB, "alloc"), (15, 1, GiB // 2, "alloc")]),
                       g, th=TH)
    assert [d.device_id for d in r.implausible] == [0]
    assert r.max_peak_share == pytest.approx(0.5) and r.advice_code == "ok"
    (item,) = memory_quality(r)
    assert item.code == "implausible_memory_peak" and item.severity == "warning"
    assert "GPU 0" in item.message and "GPU 1" not in item.message
    edge = analyze_memory(gpu_memory([(10, 0, int(IMPLAUSIBLE_PEAK_SHARE * GiB), "alloc")]),
                          g, th=TH)
    assert edge.implausible == () and edge.advice_code == "near_full"
    assert memory_quality(edge) == []
