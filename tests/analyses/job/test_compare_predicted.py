"""Predicted vs measured on hand-made summaries: which cause the candidate changed, the
baseline's prediction for it, and when there is nothing to show."""
from __future__ import annotations

import pytest

from nsys_diag.analyses.job.compare_predicted import predicted_vs_measured


def _run(steps: list[float], saves: dict[str, float]) -> dict:
    base = sum(steps) / len(steps)
    return {"per_step": {"duration_ms": steps},
            "what_if": [{"id": k, "finding": "sync" if k == "no_host_sync" else "input",
                         "change": f"{k} words", "saves_ms_per_step": v,
                         "step_ms_after": base - v} for k, v in saves.items()]}


def test_the_what_if_whose_saving_fell_most_names_the_change():
    base = [_run([100.0, 100.0], {"instant_input": 40.0, "no_host_sync": 10.0})]
    cand = [_run([62.0, 62.0], {"instant_input": 1.0, "no_host_sync": 10.0})]
    p = predicted_vs_measured(base, cand)
    assert p["available"] and p["what_if"] == "instant_input" and p["finding"] == "input"
    assert p["predicted_step_ms"] == pytest.approx(60.0)
    assert p["candidate_step_ms"] == pytest.approx(62.0)
    assert p["error_pct"] == pytest.approx(100 * (60.0 - 62.0) / 62.0)
    assert p["measured_saves_ms"] == pytest.approx(38.0) and p["candidate_saves_ms"] == 1.0


def test_several_runs_are_averaged():
    base = [_run([100.0], {"no_host_sync": 30.0}), _run([110.0], {"no_host_sync": 40.0})]
    cand = [_run([70.0], {"no_host_sync": 0.0})]
    p = predicted_vs_measured(base, cand)
    assert p["predicted_step_ms"] == pytest.approx((70.0 + 70.0) / 2)
    assert p["predicted_saves_ms"] == pytest.approx(35.0)


def test_nothing_to_show_says_why():
    same = [_run([100.0], {"instant_input": 40.0})]
    p = predicted_vs_measured(same, [_run([99.0], {"instant_input": 38.0})])
    assert not p["available"] and "changed no cause" in p["reason"]
    assert p["predicted_step_ms"] is None
    no_replay = [{"per_step": {"duration_ms": [100.0]}, "what_if": []}]
    assert "no replay what-ifs on the candidate" in predicted_vs_measured(same, no_replay)["reason"]
    no_steps = [{"per_step": {"duration_ms": []}, "what_if": []}]
    assert "no steps" in predicted_vs_measured(no_steps, same)["reason"]
    old = [{"per_step": {"duration_ms": [90.0]}}]  # a summary from before the replay
    assert not predicted_vs_measured(old, same)["available"]
