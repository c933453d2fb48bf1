"""Bad or partial data: the replay says why it cannot run (available: false), never crashes."""
from __future__ import annotations

from pathlib import Path

import pytest

from nsys_diag.analyses.base import is_available
from tests.analyses.replay.replay_helpers import case_path, edited_copy, replay_trace


@pytest.fixture(scope="module")
def item(tmp_path_factory) -> Path:
    return case_path(tmp_path_factory.mktemp("replay_bad"), "item_per_layer")


def _reason(path: Path) -> str:
    (r,) = replay_trace(path)
    assert not is_available(r)
    j = r.to_json()
    assert j["available"] is False and j["reason"]
    return j["reason"]


def test_no_correlation_ids(item, tmp_path):
    bad = edited_copy(item, tmp_path / "nocorr.sqlite", *(
        f"UPDATE {t} SET correlationId = NULL" for t in (
            "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
            "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_RUNTIME")))
    assert "correlation" in _reason(bad)


def test_no_sync_table(item, tmp_path):
    bad = edited_copy(item, tmp_path / "nosync.sqlite",
                      "DROP TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
    assert "SYNCHRONIZATION" in _reason(bad)


def test_overlapping_calls(item, tmp_path):
    bad = edited_copy(item, tmp_path / "overlap.sqlite",
                      "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = start - 4000000 "
                      "WHERE rowid % 3 = 0")
    assert "overlap" in _reason(bad)


def test_clock_skew(item, tmp_path):
    bad = edited_copy(item, tmp_path / "skew.sqlite", *(
        f"UPDATE {t} SET start = start - 5000000, end = end - 5000000" for t in (
            "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY")))
    assert "clock skew" in _reason(bad)


def test_kernel_streams_not_read(item):
    from nsys_diag.analyses.replay.analysis import analyze_replay
    from nsys_diag.analyses.steps.detection import detect_steps
    from nsys_diag.loaders import load_trace
    from tests.analyses.replay.replay_helpers import gpu_processes, process_frames

    bundle = load_trace(item, kernel_detail=False)
    f = process_frames(bundle, gpu_processes(bundle)[0])
    r = analyze_replay(f["kernels"], f["memcpy"], f["memset"], f["sync"], f["api"], f["nvtx"],
                       steps=detect_steps(f["nvtx"], f["kernels"]))
    assert not is_available(r) and "stream ids" in r.reason


def test_kernel_contexts_not_read_are_refused_unless_no_gpu_row_has_one(item):
    """``analyze`` reads the kernels' stream ids but not their contexts: a stream is (device,
    context, stream), so kernels of context -1 beside copies and syncs of context 1 would make
    two streams of one; an export without context ids at all (every row -1) still replays."""
    from nsys_diag.analyses.replay.analysis import analyze_replay
    from nsys_diag.analyses.steps.detection import detect_steps
    from nsys_diag.loaders import load_trace
    from tests.analyses.replay.replay_helpers import gpu_processes, process_frames

    bundle = load_trace(item, kernel_detail=False)
    f = process_frames(bundle, gpu_processes(bundle)[0])
    assert (f["kernels"]["stream_id"] >= 0).all() and (f["kernels"]["context_id"] < 0).all()

    def replay(frames):
        return analyze_replay(frames["kernels"], frames["memcpy"], frames["memset"],
                              frames["sync"], frames["api"], frames["nvtx"],
                              steps=detect_steps(frames["nvtx"], frames["kernels"]))

    assert "stream ids" in replay(f).reason
    none = dict(f, **{k: f[k].assign(context_id=-1) for k in ("memcpy", "memset", "sync")})
    assert is_available(replay(none))


def test_turned_off_by_the_environment(item, monkeypatch):
    monkeypatch.setenv("NSYS_DIAG_NO_REPLAY", "1")
    assert "NSYS_DIAG_NO_REPLAY" in _reason(item)


@pytest.mark.parametrize("edit", [
    "DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE rowid % 3 = 0",  # calls missing (time cut)
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + 50000000, \"end\" = \"end\" + 50000000"
    " WHERE rowid % 10 = 0",  # rows out of their stream's submission order
])
def test_partial_data_still_replays_without_a_cycle(item, tmp_path, edit):
    """GPU work whose launching call is missing is pinned, work out of submission order is
    waited for in submission order: the edges stay acyclic and the replay runs."""
    (r,) = replay_trace(edited_copy(item, tmp_path / "partial.sqlite", edit))
    assert is_available(r), r.to_json()
    assert r.error_pct >= 0  # the capture can only contradict edges, making the replay longer
