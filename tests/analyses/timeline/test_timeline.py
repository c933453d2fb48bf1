"""Timeline strips: representative and worst step, ≤ 200 bins, busy fractions."""
from __future__ import annotations

import pytest

import handframes as hf
from handframes import MS
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.timeline.busy import Window, device_busy
from nsys_diag.analyses.steps.phases import analyze_phases
from nsys_diag.analyses.steps.detection import analyze_steps
from nsys_diag.analyses.timeline.strips import MAX_BINS, build_timeline
from nsys_diag.model import contracts as C


def test_representative_and_worst_strips():
    rows, t = [], 0
    durs = [500, 100, 100, 100, 300, 100]
    for i, d in enumerate(durs):
        rows += [dict(text=f"step_{i}", start_ns=t, end_ns=t + d * MS),
                 dict(text="forward", start_ns=t, end_ns=t + d * MS // 2)]
        t += d * MS
    k = hf.kernels([dict(start_ns=s, end_ns=s + 25 * MS) for s in (500 * MS, 600 * MS, 800 * MS)])
    nv = hf.nvtx(rows)
    st = analyze_steps(nv, k)
    w = Window(int(st.analysed_starts_ns.min()), int(st.analysed_ends_ns.max()), "steps")
    busy = device_busy(k, C.MEMCPY.empty(), C.MEMSET.empty(), w)
    ph = analyze_phases(nv, st, k, busy)
    tl = build_timeline(st, ph, busy, w)
    labels = [(s["label"], s["step_index"]) for s in tl.strips]
    assert labels == [("representative", 1), ("worst", 4)]
    assert tl.bin_ns == 300 * MS // MAX_BINS
    rep = tl.strips[0]
    assert len(rep["devices"][0]["busy"]) == 67  # ceil(100 ms / 1.5 ms)
    assert sum(rep["devices"][0]["busy"]) * tl.bin_ns == pytest.approx(25 * MS, rel=0.01)
    assert rep["phases"] == [{"name": "forward", "canonical": "forward", "start_ns": 500 * MS,
                              "end_ns": 550 * MS}]
    assert all(len(d["busy"]) <= MAX_BINS for s in tl.strips for d in s["devices"])


def test_window_strip_without_steps_and_nothing_when_empty():
    k = hf.kernels([dict(start_ns=0, end_ns=10 * MS)])
    w = Window(0, 20 * MS, "gpu_activity")
    busy = device_busy(k, C.MEMCPY.empty(), C.MEMSET.empty(), w)
    tl = build_timeline(Unavailable("x"), Unavailable("x"), busy, w)
    assert [s["label"] for s in tl.strips] == ["window"]
    b = tl.strips[0]["devices"][0]["busy"]
    assert len(b) == MAX_BINS and b[0] == 1.0 and b[-1] == 0.0
    assert build_timeline(Unavailable("x"), Unavailable("x"), {}, Window(0, 0, "capture")) is None
