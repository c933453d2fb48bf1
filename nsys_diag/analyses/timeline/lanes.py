"""The whole analysed window per device/stream lane, downsampled (the ``timeline_lanes`` section).

The window is cut into at most ``MAX_COLUMNS`` equal columns (``bin_ns`` = the window ÷
``MAX_COLUMNS``, rounded up to a whole ns). A lane is one (device, stream): its kernels, by kernel
category (``analyses/kernels/catalog.py``: GEMM, attention, communication — NCCL —, …), and its
copies (memcpy and memset, class ``copy``). Per lane and column the analysis keeps the ns of each
class that ran there (integer ns, summed over the ops: ``window_bins.binned_sum``); the finish
reduces a column to its *dominant* class (most ns) and its *occupancy* (ns of every class ÷ the
column's width, capped at 1; 0 is idle), quantised to quarters so runs of like columns merge into
one drawn element: each lane is a list of ``runs`` ``[first column, columns, class, occupancy]``,
idle columns left out — at most ``MAX_COLUMNS`` per lane, a few dozen on a steady trace.

The ``MAX_LANES`` lanes with the most busy ns are kept; the others are summed into one lane per
device (``stream_id`` None, ``streams`` how many). The analysed steps' edges are marked
(``step_marks``, at most ``MAX_STEP_MARKS``: evenly sampled beyond that, ``steps`` the count).

Streamed exactly: the column grid depends on the window only (global), each chunk bins the ops
it owns (start in its span, whole: ``binned_sum`` keeps the parts inside the grid), the integer
ns add over chunks to the in-memory ones, and the finish runs once on the sum.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys_diag.analyses.base import Unavailable, is_available
from nsys_diag.analyses.engine.declaration import Declaration, FinishContext, declare
from nsys_diag.analyses.kernels.catalog import CATEGORIES
from nsys_diag.analyses.timeline.busy import Window
from nsys_diag.analyses.timeline.strips import chunk_name_table
from nsys_diag.analyses.timeline.window_bins import binned_sum, row_attrs

MAX_COLUMNS = 1200
"""Columns of the window (the drawn width of a lane: ~1 column per pixel of a wide report)."""
MAX_LANES = 12
"""Lanes kept (most busy first); the other streams of a device are summed into one lane."""
MAX_STEP_MARKS = 400
"""Step edges marked at most (evenly sampled beyond)."""
COPY = "copy"
CLASSES = tuple(CATEGORIES) + (COPY,)
"""The lane classes: the kernel categories, then copies (memcpy, memset)."""
LEVELS = 4
"""Occupancy quantised to quarters (1..4 of 4) for the runs."""

Lane = tuple[int, int]
"""(device id, stream id)."""


@dataclass(frozen=True)
class LanesPart:
    """Integer ns per (lane, class) in each column (full grid arrays), and ops per lane."""

    ns: dict[tuple[int, int, int], np.ndarray]
    ops: dict[Lane, int]


@dataclass(frozen=True)
class LanesResult:
    start_ns: int
    end_ns: int
    bin_ns: int
    columns: int
    lanes: tuple[dict, ...]
    step_marks: tuple[int, ...]
    steps: int

    available = True

    def to_json(self) -> dict:
        return {"start_ns": self.start_ns, "end_ns": self.end_ns, "bin_ns": self.bin_ns,
                "columns": self.columns, "classes": list(CLASSES), "lanes": list(self.lanes),
                "step_marks": list(self.step_marks), "steps": self.steps}


NO_WINDOW = Unavailable("the analysed window is empty", "")


def column_edges(window: Window) -> np.ndarray:
    """The column edges of the window (int64 ns, ``columns + 1`` of them, the last at its end)."""
    dur = int(window.end_ns) - int(window.start_ns)
    bin_ns = max(-(-dur // MAX_COLUMNS), 1)
    n = max(-(-dur // bin_ns), 1)
    edges = int(window.start_ns) + np.arange(n + 1, dtype=np.int64) * bin_ns
    edges[-1] = int(window.end_ns)
    return edges


def _ops(kernels: pd.DataFrame, copies: list[pd.DataFrame], name_table: pd.DataFrame | None):
    """(start, end, device, stream, class index) of every kernel and copy (vectorised)."""
    cols = ("start_ns", "end_ns", "device_id", "stream_id")
    parts = [np.stack([f[c].to_numpy(np.int64) for c in cols]) for f in [kernels, *copies] if len(f)]
    if not parts:
        return np.zeros((5, 0), np.int64)
    if len(kernels):
        cat = row_attrs(kernels, name_table if name_table is not None else pd.DataFrame())[0]
        idx = pd.Index(CLASSES).get_indexer(cat.astype(str))
        k_cls = np.where(idx >= 0, idx, CLASSES.index("other")).astype(np.int64)
    else:
        k_cls = np.zeros(0, np.int64)
    n_copy = sum(len(f) for f in copies)
    cls = np.concatenate((k_cls, np.full(n_copy, CLASSES.index(COPY), np.int64)))
    return np.vstack((np.concatenate(parts, axis=1), cls[None, :]))


def lane_sums(kernels: pd.DataFrame, copies: list[pd.DataFrame], name_table: pd.DataFrame | None,
              window: Window) -> LanesPart:
    """The ns per (lane, class) in each column of ``window`` of the given ops (each whole; the
    parts outside the window are not counted). Loops over (lane, class) groups only."""
    edges = column_edges(window)
    ops = _ops(kernels, copies, name_table)
    s, e = ops[0], ops[1]
    keep = (s < edges[-1]) & (e > edges[0]) & (e > s)
    ops = ops[:, keep]
    if not ops.shape[1]:
        return LanesPart({}, {})
    base = int(edges[0])  # relative ns: the prefix sums stay far from int64's range
    key = pd.MultiIndex.from_arrays([ops[2], ops[3], ops[4]])
    codes, groups = pd.factorize(key)
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.r_[True, np.diff(codes[order]) != 0, True])
    out: dict[tuple[int, int, int], np.ndarray] = {}
    for i, j in zip(bounds[:-1], bounds[1:]):  # lanes × classes present
        rows = order[i:j]
        d, st, c = groups[int(codes[order[i]])]
        out[(int(d), int(st), int(c))] = binned_sum(ops[0, rows] - base, ops[1, rows] - base,
                                                    edges - base)
    lanes, counts = np.unique(ops[2:4].T, axis=0, return_counts=True)
    return LanesPart(out, {(int(d), int(st)): int(c) for (d, st), c in zip(lanes, counts)})


def merge_parts(parts: list[LanesPart]) -> LanesPart:
    """The sum of the chunks' parts (integer ns: exact)."""
    ns: dict[tuple[int, int, int], np.ndarray] = {}
    ops: dict[Lane, int] = {}
    for p in parts:
        for k, v in p.ns.items():
            ns[k] = ns[k] + v if k in ns else v.copy()
        for lane, c in p.ops.items():
            ops[lane] = ops.get(lane, 0) + c
    return LanesPart(ns, ops)


def _runs(per_class: np.ndarray, width: np.ndarray) -> list[list[int]]:
    """``[first column, columns, class, level]`` runs of like columns (idle ones left out)."""
    total = per_class.sum(axis=0)
    occ = np.minimum(total / width, 1.0)
    level = np.where(total > 0, np.maximum(np.ceil(occ * LEVELS - 1e-9), 1), 0).astype(np.int64)
    dom = np.where(level > 0, np.argmax(per_class, axis=0), -1)
    change = np.flatnonzero(np.r_[True, (dom[1:] != dom[:-1]) | (level[1:] != level[:-1])])
    ends = np.r_[change[1:], dom.size]
    keep = dom[change] >= 0
    return np.stack([change[keep], (ends - change)[keep], dom[change][keep], level[change][keep]],
                    axis=1).tolist()


def _lane_json(device: int, stream: int | None, streams: int, ops: int, per_class: np.ndarray,
               width: np.ndarray) -> dict:
    ns = per_class.sum(axis=1)
    return {"device_id": device, "stream_id": stream, "streams": streams, "ops": ops,
            "busy_ms": float(np.minimum(per_class.sum(axis=0), width).sum()) / 1e6,
            "class_ms": {CLASSES[c]: float(ns[c]) / 1e6 for c in np.flatnonzero(ns)},
            "runs": _runs(per_class, width)}


def _step_marks(steps, window: Window) -> tuple[tuple[int, ...], int]:
    if not is_available(steps) or not getattr(steps, "analysed_count", 0):
        return (), 0
    idx = np.flatnonzero(steps.analysed_mask)
    marks = np.unique(np.concatenate((steps.starts_ns[idx], steps.ends_ns[idx])).astype(np.int64))
    marks = marks[(marks >= window.start_ns) & (marks <= window.end_ns)]
    if marks.size > MAX_STEP_MARKS:
        marks = marks[np.linspace(0, marks.size - 1, MAX_STEP_MARKS).round().astype(np.int64)]
    return tuple(int(m) for m in marks), int(idx.size)


def finish_lanes(part: LanesPart, window: Window, steps) -> LanesResult | Unavailable:
    """The ranked, run-length lanes of the summed ns (module docstring)."""
    if window.duration_ns <= 0:
        return NO_WINDOW
    edges = column_edges(window)
    width = np.diff(edges).astype(np.float64)
    grid: dict[Lane, np.ndarray] = {}
    for (d, st, c), v in part.ns.items():
        grid.setdefault((d, st), np.zeros((len(CLASSES), width.size), np.int64))[c] += v
    ranked = sorted(grid, key=lambda ln: (-int(grid[ln].sum()), ln))
    lanes = [_lane_json(d, st, 1, part.ops.get((d, st), 0), grid[(d, st)], width)
             for d, st in ranked[:MAX_LANES]]
    rest: dict[int, list[Lane]] = {}
    for ln in ranked[MAX_LANES:]:
        rest.setdefault(ln[0], []).append(ln)
    for d, lns in sorted(rest.items()):  # one lane per device for the other streams
        lanes.append(_lane_json(d, None, len(lns), sum(part.ops.get(ln, 0) for ln in lns),
                                np.sum([grid[ln] for ln in lns], axis=0), width))
    marks, n_steps = _step_marks(steps, window)
    return LanesResult(int(window.start_ns), int(window.end_ns), int(edges[1] - edges[0]),
                       int(width.size), tuple(lanes), marks, n_steps)


def analyze_lanes(kernels: pd.DataFrame, memcpy: pd.DataFrame, memset: pd.DataFrame,
                  name_table: pd.DataFrame | None, window: Window, steps) -> LanesResult | Unavailable:
    """The ``timeline_lanes`` section of one process (in memory)."""
    if window.duration_ns <= 0:
        return NO_WINDOW
    return finish_lanes(lane_sums(kernels, [memcpy, memset], name_table, window), window, steps)


def partial_lanes(span) -> LanesPart | None:
    """One chunk's ns: the ops it owns (start in its span); kernel categories from the chunk's
    name table (as the timeline's window bins)."""
    if span.window.duration_ns <= 0:
        return None
    k = span.owned("kernels")
    return lane_sums(k, [span.owned("memcpy"), span.owned("memset")], chunk_name_table(k),
                     span.window)


def _finish(states, ctx: FinishContext):
    return finish_lanes(merge_parts([s for s in states if s is not None]), ctx.glob.window,
                        ctx.results["steps"])


TIMELINE_LANES = declare(Declaration(
    "timeline_lanes", section="timeline_lanes", reads=("steps",),
    partial=lambda span, **_: partial_lanes(span), finish=_finish, rank=11,
    whole_reads=("steps", "kernel_table"),
    whole=lambda p, st, kt: analyze_lanes(kt[0], p.frames["memcpy"], p.frames["memset"],
                                          kt[1].table, p.window, st)))
"""The whole window per device/stream lane (the ``timeline_lanes`` section)."""
