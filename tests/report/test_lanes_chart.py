"""The whole-run timeline (``id="timeline"``, issue 28 item 6): lanes, steps, idle gaps."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nsys_diag.analyses.timeline.lanes import CLASSES
from nsys_diag.report.charts import nice_ticks
from nsys_diag.report.lanes_chart import LABEL_CHAR_W, LABEL_MAX_W, LABEL_W, ROW_H, WIDTH, lane_chart

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
GEMM, COPY = CLASSES.index("gemm"), CLASSES.index("copy")


def _view(runs, *, gaps=None, marks=(0, 500_000, 1_000_000)):
    return {"timeline_lanes": {
        "available": True, "start_ns": 0, "end_ns": 1_000_000, "bin_ns": 1_000, "columns": 1000,
        "classes": list(CLASSES), "steps": 2, "step_marks": list(marks),
        "lanes": [{"device_id": 0, "stream_id": 7, "streams": 1, "ops": 3, "busy_ms": 0.5,
                   "class_ms": {"gemm": 0.4, "copy": 0.1}, "runs": runs},
                  {"device_id": 1, "stream_id": None, "streams": 3, "ops": 9, "busy_ms": 0.1,
                   "class_ms": {"gemm": 0.1}, "runs": [[0, 100, GEMM, 4]]}]},
        "gaps": gaps or {"available": False}}


def test_runs_are_drawn_by_class_with_their_occupancy_as_height():
    m = lane_chart(_view([[0, 500, GEMM, 4], [500, 100, COPY, 2], [900, 50, GEMM, 1]]), nice_ticks)
    first = m["rows"][0]
    assert [p["cls"] for p in first["paths"]] == ["cat-gemm", "cat-copy"]  # one path per class
    gemm, copy = first["paths"]
    x0, tw = m["track_x"], m["track_w"]
    assert x0 + tw == WIDTH - 44
    rects = re.findall(r"M([\d.]+),([\d.]+)h([\d.]+)v([\d.]+)", gemm["d"])
    assert [(float(x), float(h)) for x, _, _, h in rects] == [(x0, ROW_H), (round(x0 + 0.9 * tw, 1), ROW_H / 4)]
    assert float(rects[0][2]) == pytest.approx(tw / 2, abs=0.1)
    assert re.findall(r"v([\d.]+)", copy["d"]) == [str(ROW_H / 2)]
    assert first["label"] == "GPU 0 · stream 7" and m["rows"][1]["label"] == "GPU 1 · others (3)"
    assert m["rows"][1]["title"].startswith("GPU 1 · 3 other streams, summed: busy")
    assert first["value"] == "50%" and m["steps"] == 2
    assert m["steps_path"].count("M") == 3  # the step edges, one path
    assert {it["label"] for it in m["legend"]} == {"GEMM", "copies (memcpy/memset)"}


def test_the_label_column_fits_the_longest_lane_label():
    short = lane_chart(_view([[0, 10, GEMM, 4]]), nice_ticks)
    v = _view([[0, 10, GEMM, 4]])
    v["timeline_lanes"]["lanes"][0]["stream_id"] = 123456
    v["timeline_lanes"]["lanes"][0]["device_id"] = 10
    long = lane_chart(v, nice_ticks)
    assert long["rows"][0]["label"] == "GPU 10 · stream 123456"
    assert long["track_x"] > short["track_x"] >= LABEL_W  # the tracks start further right
    assert long["track_x"] >= 8 + LABEL_CHAR_W * len("GPU 10 · stream 123456")
    assert long["track_x"] + long["track_w"] == short["track_x"] + short["track_w"] == WIDTH - 44
    v["timeline_lanes"]["lanes"][0]["stream_id"] = 10 ** 40  # bounded whatever the label
    assert lane_chart(v, nice_ticks)["track_x"] == LABEL_MAX_W
    v["timeline_lanes"]["lanes"][0]["stream_id"] = -1  # an input that records no streams
    row = lane_chart(v, nice_ticks)["rows"][0]
    assert row["label"] == "GPU 10 · kernels" and "records no stream ids" in row["title"]


def test_the_longest_idle_gaps_are_marked_by_cause():
    gaps = {"available": True, "top": [
        {"start_ns": 100_000, "duration_ms": 0.2, "cause": "input", "device_id": 0},
        {"start_ns": 2_000_000, "duration_ms": 0.1, "cause": "sync", "device_id": 0}]}  # outside
    m = lane_chart(_view([[0, 10, GEMM, 4]], gaps=gaps), nice_ticks)
    assert [g["cls"] for g in m["gaps"]] == ["cause-input"] and m["gap_row"]["label"] == "longest idle"
    assert m["gaps"][0]["title"].startswith("GPU 0 idle 0.2 ms: Waiting on input")
    assert [it["label"] for it in m["legend"]][-1] == "idle: Waiting on input"  # a key for the colours


def test_nothing_to_draw_gives_no_chart():
    assert lane_chart({"timeline_lanes": {"available": False}}, nice_ticks) is None
    v = _view([])
    v["timeline_lanes"]["lanes"] = []
    assert lane_chart(v, nice_ticks) is None


def test_the_report_of_a_trace_has_the_whole_run_timeline(tmp_path):
    from nsys_diag.app.analyze import analyze_command
    out = tmp_path / "r.html"
    analyze_command(str(SAMPLES / "multi_gpu.sqlite"), html_out=str(out), json_out=str(tmp_path / "r.json"))
    html = out.read_text()
    assert len(html.encode()) < 2 * 1024 * 1024
    i = html.index('<div id="timeline">')
    body = html[i: html.index("</div>", html.index("</figure>", i))]
    assert '<svg class="chart timeline lanes"' in body and 'class="step-mark"' in body
    paths = body.count("<path class=\"cat-")
    assert 1 <= paths <= 2 * len(CLASSES) * 14  # bounded by lanes × classes, not by kernels
    # one lane per CUDA stream: each GPU's kernels ran on streams 7 and 13 (NCCL)
    labels = re.findall(r'<text class="row-label"[^>]*>([^<]*)</text>', body)
    dev = re.match(r"GPU (\d+)", labels[0]).group(1)
    assert {f"GPU {dev} · stream 7", f"GPU {dev} · stream 13"} <= set(labels)
    doc = json.loads((tmp_path / "r.json").read_text())
    for p in doc["processes"]:
        streams = {ln["stream_id"] for ln in p["timeline_lanes"]["lanes"]}
        assert streams == {7, 13}, streams
        nccl = [ln for ln in p["timeline_lanes"]["lanes"] if ln["stream_id"] == 13]
        assert set(nccl[0]["class_ms"]) == {"communication"}


def test_the_critical_paths_waits_are_a_thin_lane_coloured_by_kind():
    v = _view([[0, 10, GEMM, 4]])
    v["replay"] = {"available": True, "critical_path_segments": [
        {"start_ns": 100_000, "end_ns": 400_000, "kind": "host_cpu", "name": ""},
        {"start_ns": 400_000, "end_ns": 450_000, "kind": "blocking_wait",
         "name": "cudaStreamSynchronize"},
        {"start_ns": 3_000_000, "end_ns": 3_100_000, "kind": "launch", "name": "x"}]}  # outside
    m = lane_chart(v, nice_ticks)
    assert m["path_row"]["label"] == "critical path waits"
    assert [w["cls"] for w in m["waits"]] == ["cp-host-cpu", "cp-blocking-wait"]
    x0, tw = m["track_x"], m["track_w"]
    assert m["waits"][0]["x"] == pytest.approx(x0 + 0.1 * tw, abs=0.1)
    assert m["waits"][0]["w"] == pytest.approx(0.3 * tw, abs=0.1)
    assert m["waits"][1]["title"] == "waits on blocking waits (cudaStreamSynchronize): 50 µs"
    labels = [it["label"] for it in m["legend"]]
    assert labels[-2:] == ["waits on: host CPU", "waits on: blocking waits"]
    assert m["height"] > lane_chart(_view([[0, 10, GEMM, 4]]), nice_ticks)["height"]


def test_no_replay_no_waits_lane():
    v = _view([[0, 10, GEMM, 4]])
    v["replay"] = {"available": False, "reason": "off"}
    m = lane_chart(v, nice_ticks)
    assert m["waits"] == [] and m["path_row"] is None
