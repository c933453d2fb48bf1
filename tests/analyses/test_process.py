"""``diagnose_with_replay``: a process diagnosed again once its replay ran."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.diagnosis.verdict import VerdictInputs
from nsys_diag.analyses.process import diagnose_with_replay
from nsys_diag.model.thresholds import Thresholds

INPUTS = VerdictInputs(has_kernels=True, window_ms=8000.0, step_ms=800.0,
                       steps_source="nvtx:train_step_N", utilization=0.3,
                       gap_share={"input": 0.4, "sync": 0.15}, phase_share={"data": 0.5},
                       phase_ms={"data": 400.0}, analysed_steps=10)


class _Replay:
    available = True
    basis = "steps"

    def __init__(self, what_if: list[dict]):
        self.rows = what_if

    def to_json(self) -> dict:
        return {"what_if": self.rows, "critical_path": [
            {"kind": "host_cpu", "name": "", "phase": "data", "ms_per_step": 500.0, "share": 0.6}]}


def _w(wid: str, finding: str, ms: float) -> dict:
    return {"id": wid, "change": wid, "finding": finding, "saves_ms_per_step": ms,
            "saves_range_ms": [ms, ms], "saves_share": ms / 800.0, "step_ms_after": 800.0 - ms}


def test_the_replays_savings_decide_and_project():
    p = SimpleNamespace(verdict_inputs=INPUTS, replay=_Replay(
        [_w("no_host_sync", "sync", 250.0), _w("overlapped_input", "input", 90.0)]))
    vin, v = diagnose_with_replay(p, Thresholds())
    assert set(vin.savings) == {"sync", "input"} and vin.made_of[0][0] == "host_cpu"
    assert v.finding == "sync" and v.projected_step_ms_if_fixed == pytest.approx(550.0)


@pytest.mark.parametrize("replay, words", [
    (Unavailable("the replay is turned off (NSYS_DIAG_NO_REPLAY=1)"), "NSYS_DIAG_NO_REPLAY=1"),
    (None, "did not run"), (_Replay([]), "no what-ifs")])
def test_without_prices_the_cost_rule_decides_and_says_why(replay, words):
    vin, v = diagnose_with_replay(SimpleNamespace(verdict_inputs=INPUTS, replay=replay),
                                  Thresholds())
    assert vin.savings is None and words in str(vin.replay_reason)
    assert v.finding == "input"
    assert any(e.metric == "replay.unavailable_reason" and words in str(e.value)
               for e in v.evidence)
