"""The job verdict from the cross-rank section: straggler's cause, projection, common verdict."""
from __future__ import annotations

import numpy as np
import pytest

from nsys_diag.analyses.job.job_verdict import job_verdict
from nsys_diag.analyses.job.ranks import RankInput, analyze_ranks


def _ranks(steps: list[float], phases: list[dict], comm: list[float] | None = None) -> dict:
    inputs = [RankInput(rank=i, label=f"r{i}", step_ms=np.full(6, s) + np.arange(6) * 0.01,
                        phase_ms=p, comm_ms=None if comm is None else comm[i])
              for i, (s, p) in enumerate(zip(steps, phases))]
    return analyze_ranks(inputs)


def _rows(codes: list[str]) -> list[dict]:
    return [{"rank": i, "verdict": c} for i, c in enumerate(codes)]


def test_equalised_steps_straggler_in_data_projects_minus_its_excess():
    # collectives equalise the step (300 ms on all 8 ranks); rank 2 spends 180 ms more in data,
    # the others wait those 180 ms in the all-reduce
    normal = {"data": 20.0, "forward": 60.0, "backward": 40.0, "communication": 180.0}
    slow = {"data": 200.0, "forward": 60.0, "backward": 40.0, "communication": 0.0}
    ranks = _ranks([300.0] * 8, [normal, normal, slow] + [normal] * 5)
    job = job_verdict(ranks, _rows(["communication_bound"] * 2 + ["input_bound"]
                                   + ["communication_bound"] * 5))
    assert job["verdict"] == "input_bound" and job["basis"] == "straggler"
    assert job["bound_by"] == {"rank": 2, "phase": "data"}
    assert job["headline"].startswith("input-bound on rank 2: the other 7 ranks wait 180 ms per step")
    assert job["projected_step_ms_if_fixed"] == pytest.approx(300.0 - 180.0, abs=0.1)
    assert any("communication-bound ×7" in e["text"] for e in job["evidence"])


def test_unequal_steps_projection_is_capped_by_the_slowest_other_rank():
    phases = [{"data": 10.0, "forward": 90.0}, {"data": 10.0, "forward": 92.0},
              {"data": 10.0, "forward": 91.0}, {"data": 10.0, "forward": 160.0}]
    ranks = _ranks([100.0, 102.0, 101.0, 170.0], phases)
    job = job_verdict(ranks, _rows(["compute_bound"] * 3 + ["compute_bound_no_tensor_cores"]))
    assert job["bound_by"] == {"rank": 3, "phase": "forward"}
    assert job["verdict"] == "compute_bound_no_tensor_cores"  # compute family: its own code kept
    # 170 − (160 − 91.5 median forward) = 101.5 < the slowest other rank (102)
    assert job["projected_step_ms_if_fixed"] == pytest.approx(102.0, abs=0.1)
    assert job["current_step_ms"] == pytest.approx(170.0, abs=0.1)


def test_straggler_whose_own_verdict_is_elsewhere_is_named_by_its_phase():
    normal = {"data": 10.0, "forward": 50.0}
    ranks = _ranks([60.0] * 5 + [120.0], [normal] * 5 + [{"data": 70.0, "forward": 50.0}])
    job = job_verdict(ranks, _rows(["overhead_bound"] * 6))
    assert job["verdict"] == "input_bound"
    assert any("reads overhead-bound" in e["text"] for e in job["evidence"])


def test_no_straggler_common_verdict():
    p = {"data": 5.0, "forward": 50.0}
    job = job_verdict(_ranks([55.0, 55.2, 55.1], [p] * 3), _rows(["compute_bound"] * 3))
    assert job["verdict"] == "compute_bound" and job["basis"] == "common"
    assert job["bound_by"] == {"rank": None, "phase": "forward"}
    assert "all 3 ranks agree" in job["headline"] and job["projected_step_ms_if_fixed"] is None


def test_no_straggler_disagreeing_ranks_take_the_most_expensive_and_say_so():
    p = {"data": 5.0, "forward": 50.0}
    job = job_verdict(_ranks([55.0, 55.4, 55.1], [p] * 3),
                      _rows(["compute_bound", "input_bound", "compute_bound"]))
    assert job["verdict"] == "input_bound" and job["basis"] == "most_expensive"
    assert job["bound_by"]["rank"] == 1
    assert "most expensive rank" in job["headline"] and "compute-bound ×2" in job["headline"]


def test_unavailable_without_ranks():
    for ranks in (None, {"available": False}):
        job = job_verdict(ranks, [])
        assert job["available"] is False and job["verdict"] is None and job["evidence"] == []
