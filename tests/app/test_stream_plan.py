"""``app/stream_plan``: chunk ends from the sampled start times, and the guard that makes the
chunks left smaller when a chunk cost more memory per row than the estimate said."""
from __future__ import annotations

import numpy as np
import pytest

from nsys_diag.app import stream_plan as SP
from nsys_diag.app.stream_plan import BudgetGuard, ChunkPlan

MB = 2**20


def _plan(rows=1_000_000, chunk_rows=250_000):
    return ChunkPlan(np.arange(0, 10_000, 1, dtype=np.int64) * 1_000, rows, chunk_rows)


def test_targets_split_the_rows_evenly():
    plan = _plan()
    t = plan.targets()
    assert len(t) == 3 and t == sorted(t)
    assert np.allclose(t, [2_500_000, 5_000_000, 7_500_000], atol=1_000)
    assert plan.targets(None, 2_000_000) == []  # one chunk


def test_targets_after_a_time_cover_only_what_is_left():
    plan = _plan()
    t = plan.targets(5_000_000, 125_000)  # half the rows left, in chunks of an eighth
    assert len(t) == 3 and all(x > 5_000_000 for x in t)


class FakeMemory:
    def __init__(self, monkeypatch, rss, peak):
        self.rss, self.peak = rss, peak
        monkeypatch.setattr(SP, "_rss_now", lambda: self.rss)
        monkeypatch.setattr(SP, "_peak_rss", lambda: self.peak)


def test_first_chunk_is_a_probe_of_half_the_planned_rows(monkeypatch):
    FakeMemory(monkeypatch, 100 * MB, 100 * MB)
    guard = BudgetGuard(_plan(), 1024 * MB)
    t = guard.first_targets()
    assert abs(t[0] - 1_250_000) <= 1_000 and t[1:] == _plan().targets()
    assert guard.planned == t


def test_a_costly_chunk_makes_the_rest_finer(monkeypatch):
    mem = FakeMemory(monkeypatch, 100 * MB, 100 * MB)
    guard = BudgetGuard(_plan(), 600 * MB, retained=20 * MB)
    pending = guard.first_targets()[1:]
    mem.peak = 100 * MB + 125_000 * 4000  # the probe's 125,000 rows cost 4,000 B each
    finer = guard(0, 125_000, 1_250_000, pending)
    allowed = int((600 * MB * SP.GUARD_SHARE - 100 * MB - 20 * MB) / 4000)
    assert guard.chunk_rows == allowed < 250_000
    assert len(finer) > len(pending) and finer == sorted(finer) and finer[0] > 1_250_000
    assert guard.replans == 1 and guard.planned == [1_250_000, *finer]


def test_a_chunk_within_the_budget_changes_nothing(monkeypatch):
    mem = FakeMemory(monkeypatch, 100 * MB, 100 * MB)
    guard = BudgetGuard(_plan(), 4096 * MB)
    pending = guard.first_targets()[1:]
    mem.peak = 100 * MB + 125_000 * 200
    assert guard(0, 125_000, 1_250_000, pending) == pending
    assert guard.replans == 0


def test_no_new_peak_no_measure(monkeypatch):
    """A chunk below the skeleton's own peak says nothing of its cost: the plan stays."""
    mem = FakeMemory(monkeypatch, 100 * MB, 900 * MB)
    guard = BudgetGuard(_plan(), 600 * MB)
    pending = guard.first_targets()[1:]
    mem.rss = 300 * MB
    assert guard(0, 125_000, 1_250_000, pending) == pending


def test_never_smaller_than_the_split_floor(monkeypatch):
    mem = FakeMemory(monkeypatch, 100 * MB, 100 * MB)
    guard = BudgetGuard(_plan(), 200 * MB)
    pending = guard.first_targets()[1:]
    mem.peak = 100 * MB + 125_000 * 100_000  # hopeless: the budget holds nearly no row
    guard(0, 125_000, 1_250_000, pending)
    assert guard.chunk_rows == max(SP.MIN_GUARD_ROWS, 250_000 // SP.MAX_SPLIT)


@pytest.mark.skipif(SP._rss_now() is None, reason="no /proc/self/statm")
def test_memory_readings_are_real():
    assert SP._rss_now() > 10 * MB and SP._peak_rss() >= SP._rss_now() // 2


def test_without_memory_readings_the_plan_is_kept(monkeypatch):
    """No ``resource`` module (Windows): no probe, no re-plan."""
    monkeypatch.setattr(SP, "_peak_rss", lambda: None)
    guard = BudgetGuard(_plan(), 600 * MB)
    assert guard.base is None
    t = guard.first_targets()
    assert t == _plan().targets()
    assert guard(0, 125_000, t[0], t[1:]) == t[1:] and guard.replans == 0
