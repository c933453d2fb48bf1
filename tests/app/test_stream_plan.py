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


def test_no_read_ahead_before_a_cost_is_measured(monkeypatch):
    """Beside the probe nothing is read ahead: its cost per row is not known yet."""
    FakeMemory(monkeypatch, 100 * MB, 100 * MB)
    guard = BudgetGuard(_plan(), 4096 * MB)
    guard.first_targets()
    assert guard.per_row == 0 and not guard.read_ahead(125_000)


def test_read_ahead_when_two_chunks_fit(monkeypatch):
    mem = FakeMemory(monkeypatch, 100 * MB, 100 * MB)
    guard = BudgetGuard(_plan(), 1024 * MB)
    pending = guard.first_targets()[1:]
    mem.peak = 100 * MB + 125_000 * 1000  # 1,000 B a row: two chunks of 250,000 fit easily
    assert guard(0, 125_000, 1_250_000, pending) == pending
    assert guard.read_ahead(250_000)
    # at 5,000 B a row the room (~842 MB) holds 176,000 rows: two chunks of half the planned
    # size do not fit, so the chunks left take all of it, one at a time
    tight = BudgetGuard(_plan(), 1024 * MB)
    pending = tight.first_targets()[1:]
    mem.peak = 100 * MB + 125_000 * 5000
    tight(0, 125_000, 1_250_000, pending)
    assert tight.chunk_rows == int(tight.room() / 5000)
    assert not tight.read_ahead(tight.chunk_rows)


def test_chunks_made_smaller_so_that_two_fit(monkeypatch):
    """Room for 1.5 planned chunks at once: the chunks left are cut to 45% of that (two chunks
    and their spread), which is more than half the planned size, so they are read one ahead."""
    mem = FakeMemory(monkeypatch, 100 * MB, 100 * MB)
    room_rows = 375_000
    per_row = 2000
    budget = int((100 * MB + room_rows * per_row) / SP.GUARD_SHARE) + 1
    guard = BudgetGuard(_plan(), budget)
    pending = guard.first_targets()[1:]
    mem.peak = 100 * MB + 125_000 * per_row
    finer = guard(0, 125_000, 1_250_000, pending)
    assert guard.chunk_rows == int(room_rows * SP.READ_AHEAD_PAIR_SHARE) < 250_000
    assert len(finer) > len(pending)
    assert guard.read_ahead(guard.chunk_rows)


def test_the_probe_cost_gives_way_to_the_next_measured(monkeypatch):
    """The probe carries the pass's one-time costs: the next chunk that sets a peak replaces its
    cost per row even when lower; after that the largest measured cost holds."""
    mem = FakeMemory(monkeypatch, 100 * MB, 100 * MB)
    guard = BudgetGuard(_plan(), 4096 * MB)
    pending = guard.first_targets()[1:]
    mem.peak = 100 * MB + 125_000 * 3000
    guard(0, 125_000, 1_250_000, pending)
    assert guard.per_row == pytest.approx(3000)
    mem.peak = 100 * MB + 250_000 * 2000
    guard(1, 250_000, 3_750_000, pending[1:])
    assert guard.per_row == pytest.approx(2000)
    mem.peak = 100 * MB + 300_000 * 1900  # a new peak at a lower cost: the larger one stays
    guard(2, 300_000, 6_250_000, pending[2:])
    assert guard.per_row == pytest.approx(2000)


def test_one_chunk_at_a_time_is_sized_by_the_chunk_alone(monkeypatch):
    """Measured with a chunk read ahead, the held-at-once cost is per row of both chunks — yet a
    chunk read ahead holds its rows, not their analysis: when two no longer fit, one chunk at a
    time is sized by the peak over the analysed chunk's rows alone (never by the lower pair
    figure, which would overshoot the room on every chunk left)."""
    mem = FakeMemory(monkeypatch, 100 * MB, 100 * MB)
    guard = BudgetGuard(_plan(), 1024 * MB)
    pending = guard.first_targets()[1:]
    mem.peak = 100 * MB + 125_000 * 1000
    guard(0, 125_000, 1_250_000, pending)  # the probe
    mem.peak = 100 * MB + 250_000 * 1000
    guard(1, 250_000, 3_750_000, pending[1:])  # replaces the probe's cost
    # a costlier chunk analysed with the next one read ahead: 4,000 B per row of the two
    mem.peak = 100 * MB + 500_000 * 4000
    guard(2, 250_000, 6_250_000, pending[2:], ahead_rows=250_000)
    assert guard.per_row == pytest.approx(4000) and guard.per_row_alone == pytest.approx(8000)
    assert guard.chunk_rows == int(guard.room() / 8000)  # one at a time, by the chunk alone
    # (two such chunks fit the room at the held-at-once cost: reading ahead stays allowed)
    assert guard.per_row * 2 * guard.chunk_rows <= guard.room()


def test_no_read_ahead_no_chunks_sized_for_two(monkeypatch):
    """A pass that may not read ahead (one usable CPU) sizes its chunks for one at a time."""
    mem = FakeMemory(monkeypatch, 100 * MB, 100 * MB)
    room_rows, per_row = 375_000, 2000
    budget = int((100 * MB + room_rows * per_row) / SP.GUARD_SHARE) + 1
    guard = BudgetGuard(_plan(), budget, read_ahead=False)
    pending = guard.first_targets()[1:]
    mem.peak = 100 * MB + 125_000 * per_row
    assert guard(0, 125_000, 1_250_000, pending) == pending  # 375,000 fit: the plan stays
    assert guard.chunk_rows == 250_000 and not guard.read_ahead(125_000)


@pytest.mark.parametrize("ahead", [False, True])
def test_a_replan_keeps_the_targets_the_pass_has_taken(monkeypatch, ahead):
    """The second pass runs ``planned``: it keeps every target the first pass took — the
    finished chunk's own (its cut lies before it) and the one of the chunk read ahead."""
    mem = FakeMemory(monkeypatch, 100 * MB, 100 * MB)
    guard = BudgetGuard(_plan(), 600 * MB)
    first = guard.first_targets()
    mem.peak = 100 * MB + 125_000 * 4000
    cut = first[0] - 5_000  # where chunk 0 was cut, before its target
    if ahead:
        guard(0, 125_000, first[1], first[2:], ahead_rows=125_000)
        assert guard.planned[:2] == first[:2]
    else:
        guard(0, 125_000, cut, first[1:])
        assert guard.planned[0] == first[0]
    assert guard.replans == 1 and guard.planned == sorted(guard.planned)
