"""The replay wired into ``analyze``: the ``replay`` section, in memory and streamed alike."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nsys_diag.app.analyze import analyze_path
from nsys_diag.app.replay import canonical, span_frames
from nsys_diag.model.options import AnalyzeOptions

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


def _what_if(view: dict, wid: str) -> dict:
    return next(w for w in view["replay"]["what_if"] if w["id"] == wid)


def test_worked_example_replays_its_steps_and_prices_the_input_wait():
    view = analyze_path(str(SAMPLES / "worked_example.sqlite"))
    r = view["replay"]
    assert r["available"] is True and r["fidelity"]["basis"] == "steps"
    assert abs(r["fidelity"]["error_pct"]) < 5
    step = view["steps"]["median_ms"]
    assert _what_if(view, "instant_input")["saves_ms_per_step"] == pytest.approx(420, rel=0.1)
    assert sum(c["ms_per_step"] for c in r["critical_path"]) == pytest.approx(
        r["fidelity"]["replayed_ms"], rel=0.02)
    median = next(s for s in r["fidelity"]["steps"] if s["kind"] == "median")
    assert median["replayed_ms"] == pytest.approx(step, rel=0.05)


def test_each_process_has_its_replay_and_the_top_level_is_the_headline():
    view = analyze_path(str(SAMPLES / "multi_gpu.sqlite"))
    rows = view["processes"]
    assert len(rows) >= 2 and all(p["replay"]["available"] for p in rows)
    head = next(p for p in rows if p["is_headline"])
    assert view["replay"] == head["replay"]


def test_streamed_replay_equals_in_memory():
    path = str(SAMPLES / "multi_gpu.sqlite")
    whole = analyze_path(path, generated_at="2026-01-01T00:00:00Z")
    streamed = analyze_path(path, AnalyzeOptions(chunk_rows=1000),
                            generated_at="2026-01-01T00:00:00Z")
    assert streamed["trace"].get("chunks", {}).get("count", 0) > 1
    assert streamed["replay"] == whole["replay"]
    assert [p["replay"] for p in streamed["processes"]] == [p["replay"] for p in whole["processes"]]


def test_no_replay_env_turns_it_off(monkeypatch):
    monkeypatch.setenv("NSYS_DIAG_NO_REPLAY", "1")
    view = analyze_path(str(SAMPLES / "worked_example.sqlite"))
    assert view["replay"]["available"] is False
    assert "NSYS_DIAG_NO_REPLAY" in view["replay"]["reason"]


def test_no_gpu_work_is_unavailable_with_a_reason():
    view = analyze_path(str(SAMPLES / "no_cuda.sqlite"))
    assert view["replay"]["available"] is False and view["replay"]["reason"]


def test_a_failing_read_is_unavailable_not_a_crash(monkeypatch):
    import nsys_diag.loaders.nsys_replay as nr

    def broken(*a, **k):
        raise ValueError("broken table")

    monkeypatch.setattr(nr, "read_replay_columns", broken)
    view = analyze_path(str(SAMPLES / "worked_example.sqlite"))
    assert view["replay"]["available"] is False and "broken table" in view["replay"]["reason"]


def _frame(**cols) -> pd.DataFrame:
    return pd.DataFrame({k: np.asarray(v) for k, v in cols.items()})


def test_a_span_keeps_the_launch_of_its_work_and_follows_work_queued_past_its_end():
    ops = _frame(start_ns=[50, 150, 210, 400], end_ns=[60, 170, 260, 500],
                 correlation_id=[1, 2, 3, 4], launch_start_ns=[5, 90, 120, 300])
    empty = ops.iloc[:0]
    api = _frame(start_ns=[5, 90, 120, 300], end_ns=[8, 95, 125, 305],
                 correlation_id=[1, 2, 3, 4], global_tid=[1, 1, 1, 1])
    nvtx = _frame(start_ns=[0, 100], end_ns=[10, 200], closed=[True, True], global_tid=[1, 1])
    f = {"kernels": ops, "memcpy": empty, "memset": empty, "sync": empty, "api": api,
         "nvtx": nvtx, "osrt": None}
    got, end = span_frames(f, (100, 200, 300))
    assert end == 260  # the kernel launched in the step runs past its end
    assert got["kernels"]["correlation_id"].tolist() == [2, 3]
    assert got["api"]["correlation_id"].tolist() == [2, 3]  # 2 launched before the step
    assert got["nvtx"]["start_ns"].tolist() == [100]
    _, capped = span_frames(f, (100, 200, 220))
    assert capped == 220


def test_canonical_rows_do_not_depend_on_their_source_order():
    a = _frame(start_ns=[3, 1, 2], end_ns=[4, 2, 3])
    b = _frame(start_ns=[2, 3], end_ns=[3, 4])
    assert canonical([a]).equals(canonical([b, a.iloc[::-1]]))


def test_fired_findings_carry_the_saving_of_their_what_if():
    view = analyze_path(str(SAMPLES / "worked_example.sqlite"))
    fired = [f for f in view["findings"] if f["fired"]]
    inp = next(f for f in fired if f["cause"] == "input")
    assert inp["saves_ms_per_step"] == _what_if(view, "overlapped_input")["saves_ms_per_step"]
    assert all("saves_ms_per_step" not in f for f in view["findings"] if not f["fired"])


def test_a_finding_without_a_what_if_says_why(monkeypatch):
    monkeypatch.setenv("NSYS_DIAG_NO_REPLAY", "1")
    view = analyze_path(str(SAMPLES / "worked_example.sqlite"))
    inp = next(f for f in view["findings"] if f["fired"])
    assert inp["saves_ms_per_step"] is None and "not available" in inp["saves_reason"]


def test_streamed_spans_read_as_chunks_hold_the_rows_of_a_plain_windowed_read(monkeypatch):
    """``span_reader`` (zone map, the skeleton's NVTX and threads) keeps the rows ``span_frames``
    takes from a plain read of each span."""
    from nsys_diag.app import replay as AR
    from nsys_diag.loaders import load_trace
    from nsys_diag.loaders import zone_map as Z
    from nsys_diag.loaders.nsys_db import NsysDb

    monkeypatch.setattr(Z, "BLOCK_ROWS", 16)
    monkeypatch.setattr(Z, "MIN_ZONED_ROWS", 32)
    path = str(SAMPLES / "worked_example.sqlite")
    skeleton = load_trace(path, kernel_detail=False, skeleton=True)
    with NsysDb(path) as db:
        zones = Z.build_zone_map(db)
    assert zones.tables
    read = AR.span_reader(path, skeleton, zones)
    whole = load_trace(path, kernel_detail=False)
    (gpid,) = sorted(set(whole.kernels["global_pid"].tolist()))
    s = whole.kernels["start_ns"].to_numpy(np.int64)
    spans = [(int(np.quantile(s, q)), int(np.quantile(s, q + 0.1)), int(np.quantile(s, q + 0.2)))
             for q in (0.1, 0.5)]
    for span in spans:
        plain, _ = span_frames(AR._frames_of(AR._read_span(path, span), gpid), span)
        chunked, _ = span_frames(AR._frames_of(read(span), gpid), span)
        for name in AR.FRAMES:
            if plain[name] is None:
                assert chunked[name] is None
                continue
            assert len(plain[name]) > 0 or name in ("memset", "osrt", "sync")
            assert canonical([chunked[name]]).equals(canonical([plain[name]])), name
