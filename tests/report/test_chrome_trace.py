"""The Chrome-trace / Perfetto document of ``analyze --trace-out`` (report/chrome_trace.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from nsys_diag.app.analyze import analyze_path_with_bundle
from nsys_diag.app.options import build_options
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.report.chrome_trace import chrome_trace

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


@pytest.fixture(scope="module", params=["worked_example.sqlite", "multi_gpu.sqlite"])
def analysed(request):
    bundle, suite, _ = analyze_path_with_bundle(str(SAMPLES / request.param), build_options(),
                                                Thresholds(), "t")
    return bundle, suite


def _complete(doc):
    return [e for e in doc["traceEvents"] if e["ph"] == "X"]


def test_events_are_complete_events_in_microseconds_inside_the_window(analysed):
    bundle, suite = analysed
    doc = chrome_trace(bundle, suite, source="x")
    json.dumps(doc, allow_nan=False)  # plain JSON
    origin = doc["otherData"]["time_origin_ns"]
    span_us = max(p.window.end_ns for p in suite.processes) - origin
    events = _complete(doc)
    assert events and all(e["dur"] >= 0 and 0 <= e["ts"] <= span_us / 1e3 + 1e-3 for e in events)
    assert all(e["ts"] + e["dur"] <= span_us / 1e3 + 1e-3 for e in events)
    # every kernel in the window is there (nothing capped on a small trace), with its class
    p = suite.headline
    k = bundle.kernels
    k = k[(k["global_pid"] == p.global_pid) & (k["start_ns"] < p.window.end_ns) & (k["end_ns"] > p.window.start_ns)]
    kernel_cats = {"gemm", "conv", "attention", "elementwise", "reduction", "communication", "memory", "other"}
    mine = [e for e in events if e["cat"] in kernel_cats and e["pid"] < 2_000_000]
    assert len([e for e in mine if (e["pid"] - 1_000_000) // 1000 == suite.headline_index]) == len(k)
    assert doc["otherData"]["events_dropped"] == 0 and doc["otherData"]["note"] == "complete"


def test_tracks_are_named_streams_idle_steps_and_phases(analysed):
    bundle, suite = analysed
    doc = chrome_trace(bundle, suite)
    names = {(e["pid"], e.get("tid"), e["args"]["name"]) for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] in ("thread_name", "process_name")}
    labels = {n for _, _, n in names}
    assert {"steps", "NVTX phases", "idle (gap cause)"} <= labels
    assert any(n.startswith("stream ") for n in labels)
    assert any(n.startswith("GPU ") for n in labels)
    events = _complete(doc)
    cats = {e["cat"] for e in events}
    assert {"step", "nvtx_phase", "idle", "memcpy"} <= cats
    steps = [e for e in events if e["cat"] == "step"]
    analysed_steps = suite.headline.steps
    assert len(steps) >= 1 and all(e["args"]["kind"] in set(analysed_steps.kinds) for e in steps)
    idle = [e for e in events if e["cat"] == "idle"]
    assert idle and all(e["name"] in e["args"] or f"{e['name']}_ns" in e["args"] or e["name"] == "other"
                        for e in idle)
    # every event's track is named
    tracks = {(pid, tid) for pid, tid, _ in names}
    assert all((e["pid"], e["tid"]) in tracks for e in events)


def test_each_track_has_one_name_and_kernels_never_share_the_idle_track(analysed):
    """analyze reads the kernels' stream ids: each stream is a track named for it, and no (pid,
    tid) is named twice."""
    bundle, suite = analysed
    doc = chrome_trace(bundle, suite)
    named = [(e["pid"], e["tid"], e["args"]["name"]) for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"]
    assert len({(p, t) for p, t, _ in named}) == len(named)
    idle = {(p, t) for p, t, n in named if n == "idle (gap cause)"}
    kernels = {(e["pid"], e["tid"]) for e in _complete(doc)
               if e["pid"] < 2_000_000 and e["cat"] not in ("idle", "memcpy", "memset")}
    assert kernels and not kernels & idle
    streams = set(bundle.kernels["stream_id"].tolist())
    assert -1 not in streams
    names = {n for _, _, n in named}
    assert {f"stream {s}" for s in streams} <= names and "kernels (no stream id)" not in names


def test_kernels_without_a_stream_id_get_a_track_of_their_own(analysed):
    from dataclasses import replace

    bundle, suite = analysed
    stream_less = replace(bundle, kernels=bundle.kernels.assign(stream_id=-1))  # records none
    doc = chrome_trace(stream_less, suite)
    named = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    kernels = {(e["pid"], e["tid"]) for e in _complete(doc)
               if e["pid"] < 2_000_000 and e["cat"] not in ("idle", "memcpy", "memset")}
    assert kernels and {named[k] for k in kernels} == {"kernels (no stream id)"}


def test_capped_document_keeps_the_longest_and_says_so(analysed):
    bundle, suite = analysed
    full = _complete(chrome_trace(bundle, suite))
    doc = chrome_trace(bundle, suite, max_events=120)
    events = _complete(doc)
    meta = doc["otherData"]
    assert len(events) <= 120 == meta["max_events"]
    assert meta["events_dropped"] == len(full) - len(events) > 0
    assert "capped at 120 events" in meta["note"]
    def gpu_ops(evs, process):  # one analysed process's kernels, copies and memsets
        return [e["dur"] for e in evs if e["cat"] not in ("step", "nvtx_phase", "idle")
                and (e["pid"] - 1_000_000) // 1000 == process]

    for process in range(len(suite.processes)):  # the GPU operations kept are the longest ones
        kept, every = gpu_ops(events, process), sorted(gpu_ops(full, process), reverse=True)
        if kept:
            assert min(kept) >= every[len(kept) - 1] - 1e-3
    assert meta["shortest_gpu_op_kept_ns"] is not None


def test_the_replays_critical_path_waits_are_a_host_track(analysed):
    bundle, suite = analysed
    doc = chrome_trace(bundle, suite)
    p = suite.headline
    origin = doc["otherData"]["time_origin_ns"]
    waits = [e for e in _complete(doc) if e["cat"] == "critical_path"]
    segs = [s for s in p.replay.segments if s[1] > p.window.start_ns and s[0] < p.window.end_ns]
    assert segs, "the sample's replay has critical-path waits in its window"
    mine = [e for e in waits if e["pid"] == 2_000_000 + suite.headline_index]
    assert len(mine) == len(segs)
    first = min(mine, key=lambda e: e["ts"])
    a, _, kind, name = segs[0]
    assert first["ts"] == pytest.approx((max(a, p.window.start_ns) - origin) / 1e3)
    assert first["name"] == (f"{kind}: {name}" if name else kind)
    assert any(e["ph"] == "M" and e["args"].get("name") == "critical path waits"
               for e in doc["traceEvents"])
