"""The whole analysed window per device/stream lane, downsampled (the ``timeline_lanes`` section).

The window is cut into at most ``MAX_COLUMNS`` equal columns (``bin_ns`` = the window ÷
``MAX_COLUMNS``, rounded up to a whole ns). A lane is one (device, stream): its kernels, by kernel
category (``analyses/kernels/catalog.py``: GEMM, attention, communication — NCCL —, …), and its
copies (memcpy and memset, class ``copy``): kernels and copies of one stream share its lane
(``analyze`` reads the kernels' ``stream_id``, ``loaders/nsys_specs.KERNEL_DETAIL_COLUMNS``).
Kernels without a stream id (``stream_id`` -1: an input that records none — an export without
``streamId``, an ncu CSV or a Kineto trace without streams) make one lane per device, beside
their copies' stream lanes. Per lane and column the analysis keeps the ns of each
class that ran there (integer ns, summed over the ops: ``window_bins.binned_sum``); the finish
reduces a column to its *dominant* class (most ns) and its *occupancy* (ns of every class ÷ the
column's width, capped at 1; 0 is idle), quantised to quarters so runs of like columns merge into
one drawn element: each lane is a list of ``runs`` ``[first column, columns, class, occupancy]``,
idle columns left out — at most ``MAX_COLUMNS`` per lane, a few dozen on a steady trace.

The ``MAX_LANES`` lanes with the most busy ns are kept; the other streams are summed into one
"other streams" lane per device (``stream_id`` None, ``streams`` how many): at most
``MAX_LANES`` + one per device, whatever the stream count. The analysed steps' edges are marked
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
from nsys_diag.model.schema_types import Enum, Leaf, List, Map, Obj, Section

MAX_COLUMNS = 1200
"""Columns of the window (the drawn width of a lane: ~1 column per pixel of a wide report)."""
MAX_LANES = 12
"""Lanes kept (most busy first); the other streams of a device are summed into one lane."""
MAX_STEP_MARKS = 400
"""Step edges marked at most (evenly sampled beyond)."""
COPY = "copy"
CLASSES = tuple(CATEGORIES) + (COPY,)
"""The lane classes: the kernel categories, then copies (memcpy, memset)."""
SLICE_ROWS = 262_144
"""Ops binned at a time (perf: bounds the temporaries to a few MB whatever the export's size)."""
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


def _kernel_classes(kernels: pd.DataFrame, name_table: pd.DataFrame | None) -> np.ndarray:
    """The class index of each kernel (its category's; ``other`` when unknown), looked up once
    per distinct name (perf: no per-kernel strings)."""
    names = kernels["name"]
    if not isinstance(names.dtype, pd.CategoricalDtype):
        names = names.astype("category")
    cats = pd.Index(names.cat.categories.astype(str))
    other = CLASSES.index("other")
    if name_table is not None and len(name_table):
        tab = name_table.drop_duplicates("name").set_index("name")["category"]
        idx = pd.Index(CLASSES).get_indexer(tab.reindex(cats).fillna("other").astype(str))
        of_name = np.where(idx >= 0, idx, other).astype(np.int64)
    else:
        of_name = np.full(len(cats), other, np.int64)
    codes = names.cat.codes.to_numpy()
    return np.append(of_name, other)[np.where(codes >= 0, codes, len(cats))]


def _columns_ns(group: np.ndarray, s: np.ndarray, e: np.ndarray, edges: np.ndarray,
                n_groups: int) -> np.ndarray:
    """groups × columns: the ns of the intervals ``[s, e)`` (inside the grid) in each column.
    Perf: an interval inside one column (most kernels) is one weight; a longer one adds its
    first and last partial columns and, through a difference array, the full ones between."""
    lo, n = int(edges[0]), edges.size - 1
    width = int(edges[1] - edges[0]) if n > 1 else int(edges[-1] - edges[0])
    cs, ce = (s - lo) // width, (e - 1 - lo) // width
    cs, ce = np.minimum(cs, n - 1), np.minimum(ce, n - 1)
    cells = n_groups * n
    one = cs == ce
    w = np.where(one, e - s, edges[cs + 1] - s)  # the first (or only) column
    acc = np.bincount(group * n + cs, weights=w, minlength=cells)
    many = np.flatnonzero(~one)
    if many.size:
        g, a, b = group[many], cs[many], ce[many]
        acc += np.bincount(g * n + b, weights=e[many] - edges[b], minlength=cells)
        diff = np.bincount(g * n + a + 1, minlength=cells) - np.bincount(g * n + b, minlength=cells)
        full = np.cumsum(diff.reshape(n_groups, n), axis=1) * width  # columns strictly between
        acc += full.reshape(-1)
    return np.rint(acc).astype(np.int64).reshape(n_groups, n)  # float64 sums of ns: exact < 2**53


def lane_sums(kernels: pd.DataFrame, copies: list[pd.DataFrame], name_table: pd.DataFrame | None,
              window: Window) -> LanesPart:
    """The ns per (lane, class) in each column of ``window`` of the given ops (each whole; the
    parts outside the window are not counted): the kernels by class, the copies as ``copy``."""
    edges = column_edges(window)
    sets = [(kernels, None)] + [(c, CLASSES.index(COPY)) for c in copies]
    return merge_parts([_op_sums(f.iloc[i:i + SLICE_ROWS], cls, name_table, edges)
                        for f, cls in sets for i in range(0, len(f), SLICE_ROWS)])


def _codes(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(code of each key, the distinct keys): the offsets from the smallest key when they span
    few values (perf: streams and devices are small numbers, so no hash is needed), else a
    hash (``pd.factorize``)."""
    lo, hi = int(key.min()), int(key.max())
    if hi - lo < 1 << 16:
        dense = key - lo
        present = np.flatnonzero(np.bincount(dense, minlength=hi - lo + 1))
        remap = np.zeros(hi - lo + 1, np.int64)
        remap[present] = np.arange(present.size)
        return remap[dense], present + lo
    codes, uniq = pd.factorize(key)
    return codes.astype(np.int64), np.asarray(uniq, np.int64)


def _op_sums(ops: pd.DataFrame, cls: int | None, name_table: pd.DataFrame | None,
             edges: np.ndarray) -> LanesPart:
    """``lane_sums`` of one frame of ops (kernels when ``cls`` is None, else all of class
    ``cls``). Vectorised: one code per (lane, class) key, weighted counts per column (perf: the
    frame's columns are read in place, never stacked)."""
    s = np.maximum(ops["start_ns"].to_numpy(np.int64), edges[0])
    e = np.minimum(ops["end_ns"].to_numpy(np.int64), edges[-1])
    keep = e > s
    if not keep.any():
        return LanesPart({}, {})
    every = bool(keep.all())
    dev = ops["device_id"].to_numpy(np.int64)
    stream = ops["stream_id"].to_numpy(np.int64)
    d0, s0 = int(dev.min()), int(stream.min())
    n_st = int(stream.max()) - s0 + 1
    key = ((dev - d0) * n_st + (stream - s0)) << 4  # (lane, class) as one int64, class < 16
    key += _kernel_classes(ops, name_table) if cls is None else cls
    if not every:
        key, s, e = key[keep], s[keep], e[keep]
    codes, uniq = _codes(key)
    grid = _columns_ns(codes, s, e, edges, len(uniq))
    out = {(int((k >> 4) // n_st) + d0, int((k >> 4) % n_st) + s0, int(k & 15)): grid[i]
           for i, k in enumerate(uniq.tolist())}  # lanes × classes present
    ops_of: dict[Lane, int] = {}
    for (d, st, _), c in zip(out, np.bincount(codes, minlength=len(uniq)).tolist()):
        ops_of[(d, st)] = ops_of.get((d, st), 0) + int(c)
    return LanesPart(out, ops_of)


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


TIMELINE_LANES_SPEC = Section(Obj({
    "start_ns": "int", "end_ns": "int", "bin_ns": Leaf({"type": "integer", "minimum": 1}),
    "columns": "int", "classes": List(Enum(*CLASSES)),
    "lanes": List(Obj({"device_id": "int",
                       "stream_id": Leaf({"type": "integer"}, null=True, doc=(
                           "the lane's CUDA stream (kernels and copies of it); -1: kernels of an "
                           "input that records no stream ids; null: the device's other streams, "
                           "summed (streams: how many)")),
                       "streams": "int", "ops": "int",
                       "busy_ms": "num", "class_ms": Map("num", names=CLASSES),
                       "runs": List(List("int", min_items=4, max_items=4))})),
    "step_marks": List("int"), "steps": "int"}),
    "No GPU activity in the analysed window.", per_process=True,
    doc="the whole analysed window per (device, stream) lane in at most 1,200 columns: runs of "
    "[first column, columns, class index, occupancy in quarters 1..4] (analyses/timeline/lanes.py)")
"""The ``timeline_lanes`` section of the analysis JSON (model/schema_types.py)."""

TIMELINE_LANES = declare(Declaration(
    "timeline_lanes", section="timeline_lanes", spec=TIMELINE_LANES_SPEC, reads=("steps",),
    partial=lambda span, **_: partial_lanes(span), finish=_finish, rank=11,
    whole_reads=("steps", "kernel_table"),
    whole=lambda p, st, kt: analyze_lanes(kt[0], p.frames["memcpy"], p.frames["memset"],
                                          kt[1].table, p.window, st)))
"""The whole window per device/stream lane (the ``timeline_lanes`` section)."""
