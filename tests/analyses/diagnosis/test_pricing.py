"""The one map from the replay's what-ifs to the findings they price."""
from __future__ import annotations

import pytest

from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.diagnosis.pricing import (PREFERRED_WHAT_IF, PRICED_AS, made_of,
                                                  savings_of, unavailable_reason)
from nsys_diag.analyses.replay.whatif import WHAT_IFS


def _row(wid: str, finding: str, ms: float, step: float = 100.0) -> dict:
    return {"id": wid, "change": wid, "finding": finding, "saves_ms_per_step": ms,
            "saves_range_ms": [ms / 2, ms * 2], "saves_share": ms / step,
            "step_ms_after": step - ms}


def test_a_cause_with_two_what_ifs_takes_the_one_its_advice_achieves():
    rows = [_row("instant_input", "input", 60.0), _row("overlapped_input", "input", 40.0)]
    for order in (rows, rows[::-1]):
        s = savings_of(order)["input"]
        assert s.what_if == PREFERRED_WHAT_IF["input"] == "overlapped_input"
        assert (s.saves_ms, s.step_ms_after, s.saves_range_ms) == (40.0, 60.0, (20.0, 80.0))


def test_aliases_are_priced_by_the_what_if_of_their_cause():
    got = savings_of([_row("hidden_communication", "communication", 30.0)])
    assert got["exposed_communication"] is got["communication"]
    assert set(PRICED_AS.values()) <= {cause for _, cause in WHAT_IFS.values()}


def test_every_preferred_what_if_exists_and_prices_its_cause():
    for cause, wid in PREFERRED_WHAT_IF.items():
        assert WHAT_IFS[wid][1] == cause


def test_an_unavailable_replay_prices_nothing_and_says_why():
    off = Unavailable("the replay is turned off (NSYS_DIAG_NO_REPLAY=1)")
    assert savings_of(off) == {} and savings_of(None) == {} and made_of(off) == ()
    assert "NSYS_DIAG_NO_REPLAY" in unavailable_reason(off)
    assert unavailable_reason(None) == "the replay did not run"


def test_made_of_sums_the_critical_path_by_kind():
    class R:
        available = True

        def to_json(self):
            return {"critical_path": [
                {"kind": "host_cpu", "name": "a", "phase": "", "ms_per_step": 30.0, "share": 0.3},
                {"kind": "gpu_compute", "name": "gemm", "phase": "", "ms_per_step": 25.0,
                 "share": 0.25},
                {"kind": "host_cpu", "name": "b", "phase": "", "ms_per_step": 20.0, "share": 0.2},
                {"kind": "launch", "name": "", "phase": "", "ms_per_step": 5.0, "share": 0.05}]}
    got = made_of(R(), top=2)
    assert [k for k, _, _ in got] == ["host_cpu", "gpu_compute"]
    assert got[0][1:] == pytest.approx((50.0, 0.5))


def test_a_what_if_that_saves_nothing_anywhere_prices_nothing():
    got = savings_of([_row("hidden_communication", "communication", 0.0),
                      _row("no_host_sync", "sync", 0.5)])
    assert not got["communication"].prices and got["sync"].prices


def test_changed_tells_a_zero_price_from_nothing_to_change():
    zero = _row("hidden_communication", "communication", 0.0) | {"saves_range_ms": [0.0, 0.0]}
    assert not savings_of([zero])["communication"].prices  # rows written before the key
    moved = savings_of([zero | {"changed": True}])["exposed_communication"]
    assert moved.prices and moved.not_limiting(0.01)
    assert not savings_of([zero | {"changed": False}])["communication"].prices
    assert not savings_of([_row("no_host_sync", "sync", 5.0) | {"changed": True}])[
        "sync"].not_limiting(0.01)  # 5% of the step: limiting


def test_exposed_communication_on_a_host_paced_real_step_is_not_limiting():
    """A torch.profiler trace (HTA test data) whose step the host paces: 26% of it is exposed
    SendRecv communication, yet the replay moves the collectives behind backward and the step
    stays as long — so no communication advice and no secondary communication verdict."""
    import json
    from pathlib import Path

    from nsys_diag import api

    trace = Path(__file__).resolve().parents[2] / "loaders/kineto_traces/hta_sampled_rank-0.json.gz"
    doc = json.loads(api.analyze(trace).to_json())
    hidden = next(w for w in doc["replay"]["what_if"] if w["id"] == "hidden_communication")
    assert hidden["changed"] and hidden["saves_ms_per_step"] < 0.01 * doc["steps"]["mean_ms"]
    f = next(f for f in doc["findings"] if f["cause"] == "exposed_communication")
    assert f["fired"] and f["severity"] == "info" and f["advice"] == []
    assert any(e["metric"] == "replay.not_limiting" for e in f["evidence"])
    v = doc["verdict"]
    assert "communication_bound" not in v["secondary"]
    assert not any("ommunicat" in r for r in v["recommendations"])
