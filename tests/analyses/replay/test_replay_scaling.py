"""The data-parallel replay behind "More GPUs?" (``analyses/replay/scaling.py``): the measured
collectives scaled by 2(N−1)/N, exposed communication as measured (generated two-rank cases)."""
from __future__ import annotations

from pathlib import Path

import pytest

from nsys_diag.analyses.replay.scaling import SCALE_GPUS, ring
from nsys_diag.synth import replay_cases as rc
from tests.analyses.replay.replay_helpers import case_path, replay_trace


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("replay_scaling")


def _rows(result) -> dict:
    return {r.gpus: r for r in result.scaling}


def test_an_exposed_allreduce_adds_its_scaled_time_to_the_step(cases):
    for r in replay_trace(case_path(cases, "allreduce_after_backward"), ranks=2):
        rows = _rows(r)
        assert sorted(rows) == list(SCALE_GPUS) and r.ranks == 2
        measured = rc.ALLREDUCE_NS / 1e6
        for n in SCALE_GPUS:  # the collective's time scaled from the two ranks captured
            assert rows[n].collective_ms == pytest.approx(measured * ring(n) / ring(2), rel=1e-3)
        # nothing hides it: every ms more of all-reduce is a ms more of step
        assert rows[4].step_ms - rows[2].step_ms == pytest.approx(measured * 0.5, rel=0.01)
        assert rows[8].step_ms - rows[2].step_ms == pytest.approx(measured * 0.75, rel=0.01)
        assert rows[1].exposed_ms == 0
        assert rows[2].exposed_ms == pytest.approx(measured, rel=0.03)
        assert rows[2].step_ms - rows[1].step_ms == pytest.approx(rows[2].exposed_ms, rel=1e-9)


def test_a_hidden_allreduce_stays_hidden_while_it_fits_beside_backward(cases):
    for r in replay_trace(case_path(cases, "allreduce_hidden_in_backward"), ranks=2):
        rows = _rows(r)
        assert rows[8].collective_ms == pytest.approx(rc.HIDDEN_ALLREDUCE_NS / 1e6 * 1.75,
                                                      rel=1e-3)
        assert rows[8].collective_ms < rc.BACKWARD_NS / 1e6  # still fits beside backward
        for n in SCALE_GPUS:
            assert rows[n].exposed_ms == pytest.approx(0, abs=0.05)
            assert rows[n].step_ms == pytest.approx(rows[1].step_ms, rel=1e-3)


def test_no_projection_without_the_rank_count_or_without_collectives(cases):
    for r in replay_trace(case_path(cases, "allreduce_after_backward")):  # ranks unknown
        assert r.scaling == () and r.ranks is None
    (r,) = replay_trace(case_path(cases, "input_bound_loop"), ranks=2)  # no collectives
    assert r.scaling == ()
