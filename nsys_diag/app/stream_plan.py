"""Where a streamed export's chunks end, and keeping a sequential pass within ``--memory-budget``.

``ChunkPlan`` places chunk ends at quantiles of a strided sample of the kernel + API rows' start
times. Its chunk size comes from the file-based estimate (``app/stream.py:stream_chunk_rows``),
which is a measurement on typical exports; an export of another shape can need more memory per
row (measured: 1.8× with two GPU processes, whose rows are split per process; 2.2× with rows in
no time order, which the analyses sort). ``BudgetGuard`` corrects for it while the pass runs:

* the first chunk is a probe of half the planned rows (its cost per row, which carries the
  pass's one-time costs, stands until a later chunk sets a peak);
* after a chunk that raised the process's peak memory, that peak over the memory before the
  pass, per row of the chunk, is the measured cost of a row (an over-estimate: it includes what
  the pass keeps across chunks — on the safe side);
* when the budget (``GUARD_SHARE`` of it, less the memory before the pass and what the pass
  keeps by its end: ``retained`` bytes) allows fewer rows than the chunks left hold, the rest
  of the export is re-planned in smaller chunks (at most ``MAX_SPLIT`` times smaller than
  planned) — never larger, so a pass only ever gets safer;
* the next chunk is read while one is analysed (``driver.run_pass``, read-ahead) only once a
  cost per row is measured and two chunks fit at it; two costs are then measured — per row of
  the rows held at once (both chunks: what sizes two chunks held together) and per row of the
  analysed chunk alone (what sizes one chunk at a time: a chunk read ahead holds its rows, not
  their analysis) — and the chunks left are made smaller (to ``READ_AHEAD_MIN_SHARE`` of the
  planned size at most) when that lets two fit; a pass that may not read ahead (one usable CPU)
  sizes them for one at a time.

Linux only (``/proc/self/statm`` and ``getrusage``); elsewhere the plan is kept as it is (no
``resource`` module is imported on Windows). The
answers do not depend on where the chunks end (docs/streaming.md, Exactness).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

GUARD_SHARE = 0.92
"""Share of the budget a chunk may bring the process's memory to (the rest: the spread of the
per-row cost between chunks)."""
PROBE_SHARE = 0.5
"""The first chunk holds this share of the planned rows (the probe of the cost per row)."""
MIN_GUARD_ROWS = 10_000
"""No re-plan makes chunks smaller than this (``app/stream.py:MIN_CHUNK_ROWS``)."""
MAX_SPLIT = 8
"""Nor smaller than the planned chunk over this: when even such chunks do not fit, what the pass
holds is the budget's problem, not the chunk size (docs/streaming.md, Limits)."""


READ_AHEAD_PAIR_SHARE = 0.45
"""With read-ahead each chunk is planned to this share of the rows the room holds at once (two
chunks, and the spread of a chunk's rows around its planned size)."""
READ_AHEAD_MIN_SHARE = 0.5
"""The next chunk is read while one is analysed (``driver.run_pass``) when two chunks fit the
room at the measured cost per row; the chunks left are made up to this share of the planned
size smaller to let two fit (measured on the 8M ``launch_bound`` export: a chunk's read and its
analysis take about as long, so overlapping them saves more than smaller chunks cost); below
it, one chunk at a time of all the room."""


@dataclass(frozen=True)
class ChunkPlan:
    """Where chunks end: quantiles of a strided sample of the kernel + API rows' start times
    (``read_window.sample_event_starts``), so that each chunk holds about ``chunk_rows`` rows."""

    starts: Any
    """Sorted sample of start times (ns, int64 array)."""
    rows: int
    """Kernel + API rows of the export."""
    chunk_rows: int

    def targets(self, after_ns: int | None = None, chunk_rows: int | None = None) -> list[int]:
        """Session times (ns) at which the chunks should end — of the span after ``after_ns``
        (None: the whole export), each chunk about ``chunk_rows`` rows (default: the plan's);
        [] for one chunk."""
        import numpy as np

        starts = self.starts if after_ns is None else \
            self.starts[np.searchsorted(self.starts, int(after_ns), side="right"):]
        if starts.size < 2 or not self.starts.size:
            return []
        left = self.rows * starts.size / self.starts.size
        n_chunks = int(np.ceil(left / max(int(chunk_rows or self.chunk_rows), 1)))
        if n_chunks <= 1:
            return []
        q = np.arange(1, n_chunks) / n_chunks
        return [int(t) for t in np.unique(np.quantile(starts, q, method="nearest")
                                          .astype(np.int64))]


def _rss_now() -> int | None:
    """Resident memory of this process now (bytes); None where ``/proc`` is absent."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _peak_rss() -> int | None:
    """Peak resident memory of this process so far (bytes; ``ru_maxrss`` is KiB on Linux);
    None without the ``resource`` module (Windows)."""
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


class BudgetGuard:
    """``driver.Replan`` of a sequential pass under ``budget`` bytes (module docstring;
    ``retained``: what the pass keeps across chunks by its end; ``read_ahead``: whether the pass
    may read a chunk ahead — False with one usable CPU, so chunks are never sized for two);
    ``planned``: the latest full list of targets (a second pass runs them)."""

    def __init__(self, plan: ChunkPlan, budget: int, retained: int = 0, read_ahead: bool = True):
        self.plan, self.budget, self.retained = plan, int(budget), int(retained)
        self.reads_ahead = bool(read_ahead)
        self.chunk_rows = plan.chunk_rows
        self.per_row = 0.0
        """Measured cost per row of the rows held at once (a chunk's, and the next one's when it
        was read ahead): what two chunks held together are sized by."""
        self.per_row_alone = 0.0
        """Measured cost per row of the analysed chunk's rows alone (the peak over them: with a
        chunk read ahead an over-estimate) — what one chunk at a time is sized by, since a chunk
        read ahead holds its rows but not their analysis."""
        self.probe_only = True
        """Whether the costs are still the probe's (module docstring)."""
        self.planned: list[int] = []
        self.replans = 0
        self.begin()

    def begin(self) -> None:
        """Take the memory before a pass (the skeleton read, the zone map built) as its base
        (None where it cannot be measured: the guard then keeps the plan)."""
        peak = _peak_rss()
        self.base = _rss_now() if peak is not None else None
        self.peak = peak or 0

    def first_targets(self) -> list[int]:
        """The plan's targets, the first chunk cut to the probe (``PROBE_SHARE``)."""
        targets = self.plan.targets()
        if targets and self.base is not None:
            probe = self.plan.targets(None, max(MIN_GUARD_ROWS,
                                                int(self.chunk_rows * PROBE_SHARE)))
            if probe and probe[0] < targets[0]:
                targets = [probe[0], *targets]
        self.planned = targets
        return list(targets)

    def room(self) -> float:
        """Bytes the chunks held at once may take: ``GUARD_SHARE`` of the budget less the memory
        before the pass and what the pass keeps by its end."""
        return self.budget * GUARD_SHARE - (self.base or 0) - self.retained

    def read_ahead(self, rows: int) -> bool:
        """Whether the next chunk (about ``chunk_rows`` rows) may be read while a chunk of
        ``rows`` rows is analysed: only when the pass may read ahead, once a chunk's cost per
        row is measured (never beside the probe), and when both fit the room at that cost."""
        return self.reads_ahead and self.base is not None and self.per_row > 0 and \
            self.per_row * (rows + self.chunk_rows) <= self.room()

    def __call__(self, index: int, rows: int, next_lo: int, pending: list[int],
                 ahead_rows: int = 0) -> list[int]:
        """The targets after ``next_lo`` (``pending``, or finer: module docstring); ``rows``:
        the analysed chunk's, ``ahead_rows``: those of the chunk read ahead (0: none)."""
        peak = _peak_rss()
        if self.base is None or peak is None or rows <= 0:
            return pending
        if peak > self.peak:  # this chunk set the peak: its cost per row is measured
            self._measured((peak - self.base) / (rows + ahead_rows), (peak - self.base) / rows)
            self.peak = peak
        if self.per_row <= 0:
            return pending
        wanted = self._wanted_rows()
        if wanted >= self.chunk_rows:
            return pending
        self.chunk_rows = wanted
        finer = self.plan.targets(next_lo, self.chunk_rows)
        self.replans += 1
        # the targets the pass has taken: one a chunk, this one's and the one read ahead
        self.planned = self.planned[:index + 1 + (1 if ahead_rows else 0)] + finer
        return finer

    def _measured(self, at_once: float, alone: float) -> None:
        """Take a chunk's measured costs per row: the first ones (the probe's, which carry the
        pass's one-time costs — the analyses' first use of their modules and buffers: 230
        against 152 B per row of the next chunk on the 8M ``launch_bound`` export) stand until
        a later chunk sets a peak; from then on the largest measured."""
        if not self.probe_only:
            self.per_row = max(self.per_row, at_once)
            self.per_row_alone = max(self.per_row_alone, alone)
            return
        if self.per_row > 0:  # a measurement after the probe's: it replaces it
            self.probe_only = False
        self.per_row, self.per_row_alone = at_once, alone

    def _wanted_rows(self) -> int:
        """Chunk rows for the room: two chunks of at least ``READ_AHEAD_MIN_SHARE`` of the
        planned size read one ahead of the other (at the held-at-once cost), else one chunk of
        all of it (at the chunk-alone cost); never larger than now, never below the split
        floor."""
        floor = max(MIN_GUARD_ROWS, self.plan.chunk_rows // MAX_SPLIT)
        if self.chunk_rows <= floor:
            return self.chunk_rows
        if self.reads_ahead:
            pair = int(self.room() / self.per_row * READ_AHEAD_PAIR_SHARE)
            if pair >= max(floor, int(self.plan.chunk_rows * READ_AHEAD_MIN_SHARE)):
                return min(self.chunk_rows, pair)
        return max(floor, min(self.chunk_rows, int(self.room() / self.per_row_alone)))
