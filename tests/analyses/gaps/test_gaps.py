"""Utilization and gap causes on hand-built frames (every number computed by hand)."""
from __future__ import annotations

import pytest

import handframes as hf
from handframes import MS, US
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.timeline.busy import Window, device_busy
from nsys_diag.analyses.gaps.causes import analyze_gaps, analyze_utilization
from nsys_diag.model.vocabulary import GAP_CAUSES
from nsys_diag.analyses.steps.phases import analyze_phases
from nsys_diag.analyses.steps.detection import analyze_steps
from nsys_diag.model import contracts as C
from nsys_diag.model.thresholds import Thresholds

TH = Thresholds()
EMPTY_API = C.API.empty()
EMPTY_SYNC = C.SYNC.empty()


def _busy(kernels, memcpy=None, window=Window(0, 100 * MS, "user")):
    memcpy = memcpy if memcpy is not None else C.MEMCPY.empty()
    return device_busy(kernels, memcpy, C.MEMSET.empty(), window), window


def test_utilization_counts_kernels_only_and_reports_copy_only_time():
    k = hf.kernels([dict(start_ns=0, end_ns=10 * MS), dict(start_ns=5 * MS, end_ns=20 * MS)])
    m = hf.memcpy([dict(start_ns=15 * MS, end_ns=40 * MS)])
    busy, w = _busy(k, m)
    u = analyze_utilization(busy, w, hf.gpus(1))
    d = u.per_device[0]
    assert d.compute_ns == 20 * MS  # union, not 25 ms of summed durations
    assert d.copy_ns == 25 * MS and d.busy_ns == 40 * MS
    assert d.copy_only_ns == 20 * MS
    assert u.utilization == pytest.approx(0.2)
    j = u.to_json()
    assert j["copy_only_ms"] == pytest.approx(20.0) and j["idle_ms"] == pytest.approx(80.0)
    assert j["per_device"][0]["name"] == "NVIDIA H100 80GB HBM3"


def test_utilization_is_a_mean_over_devices():
    k = hf.kernels([dict(start_ns=0, end_ns=50 * MS, device_id=0),
                    dict(start_ns=0, end_ns=10 * MS, device_id=1)])
    busy, w = _busy(k)
    u = analyze_utilization(busy, w)
    assert u.utilization == pytest.approx(0.3)
    assert [d.device_id for d in u.per_device] == [0, 1]


def test_window_clips_busy_time():
    k = hf.kernels([dict(start_ns=0, end_ns=100 * MS)])
    busy, w = _busy(k, window=Window(40 * MS, 60 * MS, "user"))
    assert analyze_utilization(busy, w).utilization == pytest.approx(1.0)


def test_gaps_transfer_sync_launch_other_and_histogram():
    k = hf.kernels([
        dict(start_ns=0, end_ns=10 * MS),
        # gap 10–30 ms: a copy runs 10–20 (transfer), CPU blocked in a sync 20–25, then host
        # work with the queue drained until the next launch (host_cpu)
        dict(start_ns=30 * MS, end_ns=40 * MS),
        # gap 40 ms – 40.02 ms: 20 µs, next kernel launched after the gap began → launch
        dict(start_ns=40 * MS + 20 * US, end_ns=60 * MS, launch_start_ns=40 * MS + 5 * US,
             launch_end_ns=40 * MS + 15 * US),
        # gap 60 – 60.0005 ms: 500 ns < min_gap (1 µs): ignored
        dict(start_ns=60 * MS + 500, end_ns=100 * MS),
    ])
    m = hf.memcpy([dict(start_ns=10 * MS, end_ns=20 * MS)])
    api = hf.api([dict(start_ns=20 * MS, end_ns=25 * MS, name="cudaStreamSynchronize"),
                  dict(start_ns=40 * MS + 5 * US, end_ns=40 * MS + 15 * US, name="cudaLaunchKernel")])
    busy, w = _busy(k, m)
    g = analyze_gaps(busy, k, api, EMPTY_SYNC, Unavailable("no phases"), w, th=TH)
    assert g.count == 2
    assert g.by_cause_ns["transfer"] == 10 * MS
    # the copy ended before the sync began: the call waits for no GPU work; its 5 ms and the 5 ms
    # after it are the host's own time, and 5 µs of the next gap before the launch
    assert g.by_cause_ns["sync"] == 0
    assert g.by_cause_ns["host_cpu"] == 10 * MS + 5 * US
    assert g.by_cause_ns["other"] == 0
    assert g.by_cause_ns["launch"] == 15 * US
    assert g.total_ns == pytest.approx(20 * MS + 20 * US)
    assert g.top[0].evidence[0]["cause"] in ("transfer", "sync")
    assert sum(g.by_cause_ns.values()) == pytest.approx(g.total_ns)
    j = g.to_json()
    hist = {h["lo_ns"]: h["count"] for h in j["histogram"]}
    assert hist[10_000] == 1 and hist[10_000_000] == 1 and sum(hist.values()) == 2
    assert j["top"][0]["cause"] == "transfer" and j["top"][0]["duration_ms"] == pytest.approx(20.0)
    assert j["top"][1]["cause"] == "launch"
    assert "cudaLaunchKernel" in j["top"][1]["cpu_activity"]
    assert j["by_cause_share"]["transfer"] == pytest.approx(0.1)
    assert list(j["by_cause"]) == list(GAP_CAUSES)


def test_long_gap_with_late_launch_is_not_launch():
    k = hf.kernels([dict(start_ns=0, end_ns=10 * MS),
                    dict(start_ns=20 * MS, end_ns=100 * MS, launch_start_ns=19 * MS,
                         launch_end_ns=19 * MS + 10 * US)])
    busy, w = _busy(k)
    g = analyze_gaps(busy, k, EMPTY_API, EMPTY_SYNC, None, w, th=TH)
    assert g.by_cause_ns["launch"] == 0 and g.by_cause_ns["other"] == 10 * MS


def test_phase_causes_take_priority_over_copies_and_syncs():
    # two steps of 100 ms: data_loading [0, 60) with an H2D copy at 50–60, forward [60, 100)
    rows = []
    for i in range(4):
        s = i * 100 * MS
        rows += [dict(text=f"step_{i}", start_ns=s, end_ns=s + 100 * MS),
                 dict(text="data_loading", start_ns=s, end_ns=s + 60 * MS),
                 dict(text="forward", start_ns=s + 60 * MS, end_ns=s + 90 * MS),
                 dict(text="log_metrics", start_ns=s + 90 * MS, end_ns=s + 100 * MS)]
    nv = hf.nvtx(rows)
    k = hf.kernels([dict(start_ns=i * 100 * MS + 60 * MS, end_ns=i * 100 * MS + 90 * MS,
                         launch_start_ns=i * 100 * MS + 60 * MS) for i in range(4)])
    m = hf.memcpy([dict(start_ns=i * 100 * MS + 50 * MS, end_ns=i * 100 * MS + 60 * MS)
                   for i in range(4)])
    steps = analyze_steps(nv, k)
    w = Window(int(steps.analysed_starts_ns.min()), int(steps.analysed_ends_ns.max()), "steps")
    busy = device_busy(k, m, C.MEMSET.empty(), w)
    ph = analyze_phases(nv, steps, k, busy)
    g = analyze_gaps(busy, k, EMPTY_API, EMPTY_SYNC, ph, w, th=TH)
    n = steps.analysed_count
    assert g.by_cause_ns["input"] == n * 60 * MS  # the copy inside the data phase is input
    assert g.by_cause_ns["overhead"] == n * 10 * MS
    assert g.by_cause_ns["transfer"] == 0
    assert g.cause_share("input") == pytest.approx(0.6)
    assert g.dominant_cause() == "input"
    assert g.top[0].phase == "data_loading" and g.top[0].cause == "input"


def test_no_gaps_when_always_busy_and_empty_inputs():
    k = hf.kernels([dict(start_ns=0, end_ns=100 * MS)])
    busy, w = _busy(k)
    g = analyze_gaps(busy, k, EMPTY_API, EMPTY_SYNC, None, w, th=TH)
    assert g.count == 0 and g.total_ns == 0 and g.top == () and g.dominant_cause() is None
    busy, w = _busy(C.KERNELS.empty())
    assert busy == {}
    g = analyze_gaps(busy, C.KERNELS.empty(), EMPTY_API, EMPTY_SYNC, None, w, th=TH)
    assert g.count == 0
    assert analyze_utilization(busy, w).utilization == 0.0


def test_idle_device_in_window_is_one_big_gap():
    k = hf.kernels([dict(start_ns=0, end_ns=10 * MS, device_id=0)])
    w = Window(20 * MS, 30 * MS, "user")
    busy = device_busy(k, C.MEMCPY.empty(), C.MEMSET.empty(), w)
    g = analyze_gaps(busy, k, EMPTY_API, EMPTY_SYNC, None, w, th=TH)
    assert g.count == 1 and g.total_ns == 10 * MS


def test_sync_records_count_as_sync():
    """A CUPTI record of a device sync 10–14 ms while GPU 1 computes until 13 ms: GPU 0's gap
    is a wait for the GPU until then; no launch follows, so the rest is other."""
    k = hf.kernels([dict(start_ns=0, end_ns=10 * MS), dict(start_ns=20 * MS, end_ns=100 * MS),
                    dict(start_ns=0, end_ns=13 * MS, device_id=1),
                    dict(start_ns=20 * MS, end_ns=100 * MS, device_id=1)])
    sync = C.SYNC.validate(__import__("pandas").DataFrame([dict(
        start_ns=10 * MS, end_ns=14 * MS, device_id=0, context_id=1, stream_id=-1, correlation_id=5,
        global_pid=hf.GPID, pid=hf.PID, sync_kind="device", launch_global_tid=hf.TID_MAIN,
        launch_start_ns=10 * MS, launch_end_ns=14 * MS, launch_api="cudaDeviceSynchronize")]))
    busy, w = _busy(k)
    g = analyze_gaps(busy, k, EMPTY_API, sync, None, w, th=TH)
    per = {d["device_id"]: d["by_cause"] for d in g.per_device}
    assert per[0]["sync"] == 3 and per[0]["other"] == 7
