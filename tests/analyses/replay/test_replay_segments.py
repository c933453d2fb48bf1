"""The critical path's waits with their times (``replay.critical_path_segments``): the segments
the timeline marks, on the capture's clock."""
from __future__ import annotations


import pytest

from nsys_diag.analyses.replay.analysis import MAX_PATH_SEGMENTS, keep_segments
from nsys_diag.model.vocabulary import CRITICAL_PATH_WAIT_KINDS
from nsys_diag.synth import replay_cases as rc
from tests.analyses.replay.replay_helpers import case_path, replay_trace


@pytest.fixture(scope="module")
def item(tmp_path_factory):
    (r,) = replay_trace(case_path(tmp_path_factory.mktemp("replay_segments"), "item_per_layer"))
    return r


def test_each_items_python_is_a_host_cpu_wait_after_its_sync(item):
    segs = item.to_json()["critical_path_segments"]
    steps = item.to_json()["fidelity"]["steps"]
    # every replayed step: 3 ms of Python after each layer's .item() (with the layer's 200 µs
    # of slack; the last layer's runs on into the backward phase's CPU time)
    python = [s for s in segs if s["kind"] == "host_cpu"
              and rc.ITEM_PYTHON_NS * 0.99 <= s["end_ns"] - s["start_ns"]
              <= rc.ITEM_PYTHON_NS + 250_000]
    assert len(python) >= (rc.ITEM_LAYERS - 1) * len(steps)
    syncs = [s for s in segs if s["kind"] == "blocking_wait"]
    assert syncs and all(s["name"] == "cudaStreamSynchronize" for s in syncs)
    for p in python:  # each starts where its .item()'s sync returned
        assert any(s["kind"] == "blocking_wait" and s["end_ns"] == p["start_ns"] for s in segs)


def test_segments_are_waits_inside_the_replayed_steps_in_start_order(item):
    j = item.to_json()
    segs = j["critical_path_segments"]
    assert 0 < len(segs) <= MAX_PATH_SEGMENTS
    assert {s["kind"] for s in segs} <= set(CRITICAL_PATH_WAIT_KINDS)
    assert [s["start_ns"] for s in segs] == sorted(s["start_ns"] for s in segs)
    spans = [(s["start_ns"], s["start_ns"] + s["measured_ms"] * 1e6 * 1.05)
             for s in j["fidelity"]["steps"]]
    for s in segs:
        assert s["end_ns"] > s["start_ns"]
        assert any(a <= s["start_ns"] and s["end_ns"] <= b for a, b in spans)
    # per kind no more than the replayed steps' walked paths hold of that kind (the same walk)
    for kind in CRITICAL_PATH_WAIT_KINDS:
        seg_ns = sum(s["end_ns"] - s["start_ns"] for s in segs if s["kind"] == kind)
        walked_ns = sum(ns for step in item.steps for key, ns in step.path_ns if key[0] == kind)
        assert 0 < seg_ns <= walked_ns + 1 or seg_ns == walked_ns == 0


def test_the_longest_segments_are_kept_in_start_order():
    segs = [(i * 100, i * 100 + d, "host_cpu", "") for i, d in enumerate([5, 50, 1, 40, 40])]
    assert keep_segments(segs, 3) == (segs[1], segs[3], segs[4])
    assert keep_segments([], 3) == ()
