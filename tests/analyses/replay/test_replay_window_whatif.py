"""What-ifs of a capture without steps (replay basis ``window``): priced over the replayed
window, with known answers on generated cases whose step ranges are not written."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from nsys_diag.analyses.diagnosis.pricing import savings_of
from nsys_diag.analyses.replay.analysis import analyze_replay
from nsys_diag.analyses.replay.whatif import WHAT_IFS
from nsys_diag.loaders import load_trace
from nsys_diag.synth import replay_cases as rc
from tests.analyses.replay.replay_helpers import case_path, gpu_processes, process_frames


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("replay_window_whatif")


def _no_steps(name: str):
    """``REPLAY_CASES[name]`` without its step and phase ranges."""
    return lambda: dataclasses.replace(rc.REPLAY_CASES[name](), nvtx_steps=False)


def _window_replay(path: Path):
    bundle = load_trace(path)
    (gpid,) = gpu_processes(bundle)
    f = process_frames(bundle, gpid)
    return analyze_replay(f["kernels"], f["memcpy"], f["memset"], f["sync"], f["api"], f["nvtx"],
                          steps=None, osrt=f["osrt"], gpus=bundle.gpus)


def _what_if(result, wid: str) -> dict:
    (w,) = [w for w in result.to_json()["what_if"] if w["id"] == wid]
    return w


def test_no_host_sync_over_the_window_saves_the_gpu_work_every_item_waited_for(cases):
    scenario = _no_steps("item_per_layer")()
    r = _window_replay(case_path(cases, "item_per_layer_no_steps", _no_steps("item_per_layer")))
    assert r.basis == "window"
    w = _what_if(r, "no_host_sync")
    # every step (warm-up included: the window holds them all) waits for each layer's 2 ms
    expected_ms = scenario.steps * rc.ITEM_LAYERS * rc.ITEM_LAYER_GPU_NS / 1e6
    assert w["saves_ms_per_step"] == pytest.approx(expected_ms, rel=0.10)
    assert "window end" in w["change"]
    measured = r.fidelity()["measured_ms"]
    assert w["saves_share"] == pytest.approx(w["saves_ms_per_step"] / measured)
    assert w["step_ms_after"] == pytest.approx(measured - w["saves_ms_per_step"])


def test_syncs_that_wait_microseconds_save_almost_nothing_over_the_window(cases):
    r = _window_replay(case_path(cases, "microsecond_syncs_no_steps",
                                 _no_steps("microsecond_syncs")))
    assert r.basis == "window"
    assert _what_if(r, "no_host_sync")["saves_share"] < 0.05


def test_every_window_what_if_is_priced_consistently(cases):
    for name in ("item_per_layer", "sgemm_no_tensor_cores", "managed_memory_faults"):
        r = _window_replay(case_path(cases, f"{name}_no_steps", _no_steps(name)))
        got = r.to_json()["what_if"]
        assert [w["id"] for w in got] == list(WHAT_IFS)
        measured = r.fidelity()["measured_ms"]
        for w in got:
            lo, hi = w["saves_range_ms"]
            assert lo == hi == w["saves_ms_per_step"] >= 0  # one window: no range
            assert w["step_ms_after"] == pytest.approx(measured - w["saves_ms_per_step"])
        assert abs(r.error_pct) < 5


def test_tensor_cores_on_prices_the_window_of_sgemms(cases):
    r = _window_replay(case_path(cases, "sgemm_no_tensor_cores_no_steps",
                                 _no_steps("sgemm_no_tensor_cores")))
    assert _what_if(r, "tensor_cores_on")["saves_share"] > 0.10


def test_the_verdict_follows_the_windows_savings(cases):
    from nsys_diag.app.analyze import analyze_path

    view = analyze_path(str(case_path(cases, "item_per_layer_no_steps",
                                      _no_steps("item_per_layer"))))
    replay, verdict = view["replay"], view["verdict"]
    assert replay["fidelity"]["basis"] == "window" and not view["steps"].get("count")
    w = next(w for w in replay["what_if"] if w["id"] == "no_host_sync")
    # sync waits on queued work (not idle): the host's code after it is host_cpu, which no
    # what-if prices, so it decides by its measured cost; the sync's saving is still listed
    assert verdict["finding"] == "host_cpu"
    assert any(e["metric"] == "replay.unpriced" for e in verdict["evidence"])
    assert w["saves_ms_per_step"] > 0
    sync = next((f for f in view["findings"] if f["cause"] == "sync" and f["fired"]), None)
    assert sync is None or sync["saves_ms_per_step"] == pytest.approx(w["saves_ms_per_step"])


def test_savings_of_a_window_replay_say_they_are_of_the_window(cases):
    r = _window_replay(case_path(cases, "item_per_layer_no_steps", _no_steps("item_per_layer")))
    s = savings_of(r)["sync"]
    assert (s.basis, s.per) == ("window", "window")
    assert savings_of(r.to_json()["what_if"])["sync"].per == "step"  # bare rows: no basis known


def test_page_fault_migrations_follow_the_host_and_hold_up_no_sync(cases):
    """A stdpar program's 5,511 unified-memory migrations have no launching call (correlationId
    0): no sync waits for one that starts after it returned, and they move with the host's
    progress, so the capture replays exactly and removing the host I/O saves the I/O time on the
    critical path (before: a sync waited for every migration up to the next step's kernels, the
    replay ran 40% long and the saving came from that error)."""
    from nsys_diag.synth import programs
    path = programs.write_case("host_writes", cases / "host_writes.sqlite")
    r = _window_replay(path)
    doc = r.to_json()
    assert abs(doc["fidelity"]["error_pct"]) < 1.0
    path_io = sum(c["ms_per_step"] for c in doc["critical_path"] if c["kind"] == "host_io")
    assert path_io > 0
    assert _what_if(r, "instant_host_io")["saves_ms_per_step"] == pytest.approx(path_io, rel=0.05)
    assert not any(c["kind"] == "unexplained" for c in doc["critical_path"])
