"""The job replay: ranks step by step with collectives as barriers, the straggler fixed at the
median rank's phase times (known answers built by hand)."""
from __future__ import annotations

import numpy as np
import pytest

from nsys_diag.analyses.job.job_replay import job_what_ifs, straggler_fixed
from nsys_diag.analyses.job.job_verdict import job_verdict
from nsys_diag.analyses.job.ranks import RankInput, analyze_ranks


def _rank(i: int, phases: dict[str, list[float]], comm_ms: float | None = None) -> RankInput:
    arr = {p: np.asarray(v, float) for p, v in phases.items()}
    steps = np.sum(list(arr.values()), axis=0)
    return RankInput(rank=i, label=f"r{i}", step_ms=steps, step_index=np.arange(steps.size),
                     phase_ms={p: float(v.mean()) for p, v in arr.items()}, comm_ms=comm_ms,
                     step_phase_ms=arr)


def _equalised(n: int = 4, slow: int = 2, data_slow: list[float] | None = None) -> list:
    """Ranks whose steps the all-reduce equalises: the straggler's extra data time is the
    others' extra wait in communication."""
    data_slow = data_slow or [60.0, 80.0, 100.0]
    out = []
    for i in range(n):
        data = data_slow if i == slow else [10.0] * 3
        comm = [2.0 + d - 10.0 for d in data_slow] if i != slow else [2.0] * 3
        out.append(_rank(i, {"data": data, "forward": [30.0] * 3, "backward": [40.0] * 3,
                             "communication": comm}))
    return out


def test_the_replay_reproduces_the_equalised_job_step():
    w = straggler_fixed(_equalised(), 2, "data")
    assert w["measured_ms"] == pytest.approx(np.mean([132.0, 152.0, 172.0]))
    assert w["error_pct"] == pytest.approx(0.0, abs=1e-9)
    assert w["barrier"] == "communication phase" and w["steps"] == 3


def test_fixing_the_straggler_saves_its_excess_step_by_step():
    w = straggler_fixed(_equalised(), 2, "data")
    # each step the straggler's data (60/80/100 ms) becomes the median rank's 10 ms
    assert w["saves_range_ms"] == pytest.approx([50.0, 90.0])
    assert w["saves_ms_per_step"] == pytest.approx(70.0)
    assert w["step_ms_after"] == pytest.approx(82.0)  # 10 + 30 + 40 + the 2 ms collective
    assert w["saves_share"] == pytest.approx(70.0 / 152.0)
    assert "rank 2 at the median rank's phase times" in w["change"]


def test_without_a_barrier_the_job_is_its_slowest_rank():
    ranks = [_rank(i, {"data": [10.0] * 4, "forward": [f] * 4})
             for i, f in enumerate([90.0, 92.0, 91.0, 160.0])]
    w = straggler_fixed(ranks, 3, "forward")
    assert w["barrier"].startswith("none")
    # the straggler at the median forward (91.5) no longer sets the pace: rank 1 (102) does
    assert w["step_ms_after"] == pytest.approx(102.0)
    assert w["saves_ms_per_step"] == pytest.approx(68.0)


def test_nccl_kernel_time_is_the_barrier_without_a_communication_phase():
    # a 100 ms forward on every rank holds the all-reduce: rank 1 computes 95 ms and waits 5 in
    # it, the others compute 55 and wait 45 for rank 1
    ranks = [_rank(i, {"forward": [100.0] * 2}, comm_ms=5.0 if i == 1 else 45.0)
             for i in range(3)]
    w = straggler_fixed(ranks, 1)
    assert w["barrier"] == "NCCL kernel time per step"
    assert w["replayed_ms"] == pytest.approx(100.0)  # max(95, 55) + min(5, 45)
    assert w["step_ms_after"] == pytest.approx(60.0)  # 55 + the 5 ms collective


def test_ranks_whose_steps_are_not_equalised_did_not_wait_at_a_barrier():
    # NCCL kernels on every rank, but rank 3's steps are 70% longer: nobody waited for it
    ranks = [_rank(i, {"data": [10.0] * 3, "forward": [120.0 if i == 3 else 60.0] * 3},
                   comm_ms=2.0 if i == 3 else 8.0) for i in range(4)]
    w = straggler_fixed(ranks, 3, "forward")
    assert w["barrier"].startswith("none (the ranks' steps differ by")
    assert w["step_ms_after"] == pytest.approx(70.0) and w["error_pct"] == 0


def test_no_straggler_no_what_if_and_unknown_ranks_none():
    assert job_what_ifs(_equalised(), []) == []
    assert straggler_fixed(_equalised(), 9) is None
    assert straggler_fixed(_equalised()[:1], 0) is None


def test_the_job_verdict_takes_its_projection_from_the_replay():
    inputs = _equalised(n=8, data_slow=[190.0, 190.0, 190.0])
    ranks = analyze_ranks(inputs)
    rows = [{"rank": i, "verdict": "communication_bound"} for i in range(8)]
    what_if = job_what_ifs(inputs, ranks["stragglers"])
    job = job_verdict(ranks, rows, what_if)
    assert job["basis"] == "straggler" and job["bound_by"]["rank"] == 2
    assert job["projected_step_ms_if_fixed"] == pytest.approx(what_if[0]["step_ms_after"])
    assert job["what_if"] == what_if
    assert any(e["metric"] == "job.what_if.straggler_fixed.step_ms_after"
               for e in job["evidence"])
    assert job_verdict(ranks, rows)["what_if"] == []  # without the replay: the formula
