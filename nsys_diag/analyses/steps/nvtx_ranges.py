"""GPU time projected onto NVTX ranges (the ``nvtx_ranges`` section): where kernel time goes per
range name — with ``emit_nvtx`` / module ranges, per layer or module.

* **Attribution** (like ``nsys stats nvtx_gpu_proj_sum``): a kernel belongs to the NVTX ranges
  open on its launching thread when its launch call started (``kernels.launch_global_tid`` /
  ``launch_start_ns``) — every enclosing range, the innermost being its *own* range. A kernel
  launched on a thread with no range open then (autograd's backward thread, a worker) falls back
  to the ranges open at that moment on the process's *range thread* (the steps' thread, else the
  thread with most ranges): the cross-thread attribution of the phase table's ``gpu_work_ms``
  (``steps/phases.py``). Kernels without a launch call are not attributed.
* **Groups**: (domain, name), the name normalised as the phases' (``, op_id = N`` / ``, seq = N``
  stripped) and a trailing counter collapsed to ``*`` (``ProfilerStep#12`` → ``ProfilerStep#*``,
  ``layer_3`` → ``layer_*``).
* Per group, over the analysed window (ranges and kernels overlapping it, clipped to it):
  ``count`` ranges; ``cpu_ms`` their summed wall time; ``gpu_ms`` the union of the intervals of
  the kernels attributed to the group's ranges or to ranges nested in them, per GPU, summed over
  GPUs (overlapping kernels count once); ``gpu_self_ms`` the same for the kernels whose own
  (innermost) range is of the group; ``share`` = ``gpu_ms`` / the union of every kernel's
  interval (per GPU, summed) — so a step range's share is about 1 and shares do not sum to 1.
* The top ``MAX_RANGE_ROWS`` groups by ``gpu_ms`` (then ``cpu_ms``, name), ``groups`` the total.

Cost (vectorised; loops over threads and devices only): the kernels are taken in (device, start)
order (no sort when the loader's order is it already); each thread's ranges become a table of the
groups open between consecutive range boundaries, so a kernel's groups are one ``searchsorted``
of its launch time; consecutive kernels of one device with the same groups form a *run*, and each
group's union is summed over its runs (a run after the earlier ones adds its union beyond their
latest end: a prefix lookup), so the per-group work scales with runs, not kernels. About 0.2 s of
CPU for 2M kernels (docs/performance.md).

Streamed exactly (``partial_nvtx_ranges``/``merge_nvtx_ranges``): the NVTX ranges are whole in
every chunk and each chunk sees every kernel overlapping it, so each chunk measures the unions
inside its own window; the integer ns sum over chunks to the in-memory ones.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.engine.declaration import Declaration, declare
from nsys_diag.analyses.steps.detection import StepsResult
from nsys_diag.analyses.steps.repeat import normalized_names
from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.model.contracts import MISSING
from nsys_diag.model.vocabulary import HINT_ADD_NVTX
from nsys_diag.model.schema_types import List, Obj, Section

MAX_RANGE_ROWS = 30
"""Groups listed at most (longest GPU time first)."""
_COUNTER_RE = re.compile(r"(?<=[#_ :\-])\d+(\s*)$")
_MAX_LEVELS = 64
"""Nesting levels followed at most (deeper ranges count for their level-64 ancestor)."""


def group_name(text: str) -> str:
    """``ProfilerStep#12`` → ``ProfilerStep#*``: a trailing counter collapsed to ``*``."""
    return _COUNTER_RE.sub(r"*\1", text).strip()


@dataclass(frozen=True)
class NvtxRangeRow:
    domain: str
    name: str
    count: int
    cpu_ns: int
    gpu_ns: int
    gpu_self_ns: int
    share: float | None

    def to_json(self) -> dict:
        return {"name": self.name, "domain": self.domain, "count": self.count,
                "cpu_ms": self.cpu_ns / 1e6, "gpu_ms": self.gpu_ns / 1e6,
                "gpu_self_ms": self.gpu_self_ns / 1e6, "share": self.share}


@dataclass(frozen=True)
class NvtxRangesResult:
    """The top groups (``rows``), how many groups there are, the kernel ns they share."""

    rows: tuple[NvtxRangeRow, ...]
    groups: int
    kernel_ns: int
    unattributed_kernels: int

    available = True

    def to_json(self) -> dict:
        return {"ranges": [r.to_json() for r in self.rows], "groups": self.groups,
                "kernel_ms": self.kernel_ns / 1e6, "unattributed_kernels": self.unattributed_kernels}


@dataclass(frozen=True)
class NvtxRangesPart:
    """One window's integer sums: per group key (domain, name) → [count, cpu, gpu, self] ns."""

    sums: dict
    kernel_ns: int
    unattributed: int


# ------------------------------------------------------------------------------ the ranges
def _ranges(nvtx: pd.DataFrame, lo: int, hi: int):
    """The NVTX ranges overlapping ``[lo, hi)``: (starts, ends, tids, group keys, group of each)."""
    s = nvtx["start_ns"].to_numpy(np.int64)
    e = nvtx["end_ns"].to_numpy(np.int64)
    keep = np.flatnonzero((s < hi) & (e > lo) & (e > s))
    text = nvtx["text"].astype(str).to_numpy(object)[keep]
    domain = nvtx["domain"].astype(str).to_numpy(object)[keep]
    uniq, inv = np.unique(text, return_inverse=True) if keep.size else (np.zeros(0, object), np.zeros(0, np.int64))
    names = np.asarray([group_name(n) or raw for n, raw in zip(normalized_names(uniq), uniq)], dtype=object)
    names = names[inv] if keep.size else names
    keys = pd.MultiIndex.from_arrays([domain, names]) if keep.size else pd.MultiIndex.from_arrays([[], []])
    codes, groups = pd.factorize(keys) if keep.size else (np.zeros(0, np.int64), keys)
    return (s[keep], e[keep], nvtx["global_tid"].to_numpy(np.int64)[keep], list(groups),
            np.asarray(codes, np.int64))


def _levels(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Nesting level of each range of one thread (0: top level); partial overlaps go to the
    range that started first, like the phases' exclusivity."""
    level = np.full(s.size, -1, np.int64)
    todo = np.arange(s.size)
    for depth in range(_MAX_LEVELS):
        if not todo.size:
            break
        top = _top(s[todo], e[todo])
        level[todo[top]] = depth
        todo = np.delete(todo, top)
    level[level < 0] = _MAX_LEVELS - 1
    return level


def _top(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    order = np.lexsort((-e, s))
    ee = e[order]
    prev = np.concatenate(([np.iinfo(np.int64).min], np.maximum.accumulate(ee)[:-1]))
    return order[ee > prev]


def _enclosing(points: np.ndarray, s: np.ndarray, e: np.ndarray, level: np.ndarray,
               code: np.ndarray) -> np.ndarray:
    """points × levels: the group (``code``) of the range of each level containing each point,
    -1 where none (one thread's ranges)."""
    depth = int(level.max()) + 1 if level.size else 0
    out = np.full((points.size, max(depth, 1)), -1, code.dtype)
    for d in range(depth):
        idx = np.flatnonzero(level == d)
        idx = idx[np.argsort(s[idx], kind="stable")]
        ls, le = s[idx], e[idx]
        prev = np.concatenate(([np.iinfo(np.int64).min], np.maximum.accumulate(le)[:-1]))
        ls = np.maximum(ls, prev)  # disjoint: a partial overlap goes to the earlier range
        which = iv.containing_interval(points, ls, np.maximum(le, ls))
        out[:, d] = np.append(code[idx], -1)[which]  # -1 (none) picks the appended -1
    return out


def _range_thread(steps, tids: np.ndarray) -> int:
    if isinstance(steps, StepsResult):
        return int(steps.global_tid)
    if not tids.size:
        return -1
    vals, counts = np.unique(tids, return_counts=True)
    return int(vals[np.argmax(counts)])


# ------------------------------------------------------------------------------ attribution
def _thread_table(s: np.ndarray, e: np.ndarray, code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One thread's ranges as (boundaries, table): every range starts and ends on a boundary,
    so the ranges containing a point depend only on the boundaries below it — row ``i`` of the
    table (levels wide, -1: none) holds the groups open from boundary ``i - 1`` on (row 0: before
    the first), found by ``searchsorted(boundaries, point, "right")``. Perf: one search per
    kernel instead of one per kernel and level."""
    bounds = np.unique(np.concatenate((s, e)))
    table = _enclosing(bounds, s, e, _levels(s, e), code)
    return bounds, np.concatenate((np.full((1, table.shape[1]), -1, table.dtype), table))


def _enclosing_rows(ls: np.ndarray, lt: np.ndarray, has: np.ndarray, rs, re_, rt,
                    code: np.ndarray, steps) -> tuple[np.ndarray, np.ndarray]:
    """(table, row): ``table[row]`` is the kernels × levels matrix of the group of the range of
    each level open on the kernel's launching thread at its launch, else (none there) on the
    range thread — the fallback; -1 where none; a kernel without a launch call has none (row 0).
    Perf (bench): the matrix itself is never built — a few thousand table rows and one index per
    kernel instead of a 2M × levels gather. The loops run over threads only."""
    code = code.astype(np.int32 if len(code) and int(code.max()) < 2 ** 31 else np.int64)
    threads = np.unique(rt)
    main = _range_thread(steps, rt)
    tables = {int(t): _thread_table(rs[rt == t], re_[rt == t], code[rt == t]) for t in threads}
    depth = max([t[1].shape[1] for t in tables.values()] + [1])
    # one table of every thread's rows (row 0: no range), each thread's rows from ``offset``
    offset, rows, at = {}, [np.full((1, depth), -1, code.dtype)], 1
    for tid, (_, table) in tables.items():
        offset[tid] = at
        rows.append(np.pad(table, ((0, 0), (0, depth - table.shape[1])), constant_values=-1))
        at += table.shape[0]
    combined = np.concatenate(rows)
    if len(tables) == 1 and main in tables:  # perf: one range thread, every kernel's fallback
        row = _search_right(tables[main][0], ls) + offset[main]
        row[~has] = 0
        return combined, row
    # the row of each kernel: its launching thread's, else (a miss) the range thread's
    known = (lt == threads[0]) if threads.size == 1 else np.isin(lt, threads)
    src = np.where(has & known, lt, main if main in tables else MISSING)
    src[~has] = MISSING
    row = np.zeros(ls.size, np.int64)
    for tid, (bounds, _) in tables.items():
        on = src == tid
        if tid == main and on.all():  # perf: every kernel from the range thread, no gather
            row = _search_right(bounds, ls) + offset[tid]
            continue
        k = np.flatnonzero(on)
        row[k] = np.searchsorted(bounds, ls[k], side="right") + offset[tid]
        if tid != main and main in tables:  # the range thread's own misses stay misses
            miss = k[combined[row[k]].max(axis=1) < 0]
            row[miss] = np.searchsorted(tables[main][0], ls[miss], side="right") + offset[main]
    return combined, row


def _search_right(bounds: np.ndarray, points: np.ndarray) -> np.ndarray:
    """``np.searchsorted(bounds, points, side="right")`` (int64). Perf (bench): points in
    ascending order (launch times, as the loaders give them) are searched from the small side —
    each of the few thousand bounds is placed among the points, and a running count of the bounds
    at or below each point is the answer (2M binary searches become 17k and one cumulative sum)."""
    if points.size < 2 or bounds.size * 8 > points.size or not bool(np.all(points[1:] >= points[:-1])):
        return np.searchsorted(bounds, points, side="right").astype(np.int64, copy=False)
    first = np.searchsorted(points, bounds, side="left")  # the first point at or above each bound
    return np.cumsum(np.bincount(first, minlength=points.size + 1)[:points.size], dtype=np.int64)


def _run_keys(table: np.ndarray, row: np.ndarray) -> np.ndarray:
    """Per kernel, an id equal between two kernels exactly when their rows of ``table[row]`` are
    equal (the distinct table rows numbered; perf: one index per kernel, no matrix compare)."""
    _, same = np.unique(table, axis=0, return_inverse=True)
    same = same.ravel()
    return same.astype(np.int32 if same.size < 2 ** 31 else np.int64)[row]


def _group_pairs(grp: np.ndarray) -> tuple[np.ndarray, ...]:
    """From each run's groups (runs × levels, -1: none): (group, run) of every distinct pair
    (a kernel counts once per group even when several of its ranges share the group), then
    (group, run) of the run's own (innermost) range; each sorted by group, runs ascending."""
    hit = grp >= 0
    deepest = hit.shape[1] - 1 - np.argmax(hit[:, ::-1], axis=1)
    own_r = np.flatnonzero(hit.any(axis=1))
    own_g = grp[own_r, deepest[own_r]]
    if grp.shape[1] > 1:
        grp = np.sort(grp, axis=1)
        grp[:, 1:][grp[:, 1:] == grp[:, :-1]] = -1  # repeats of a group in one run's row
    r, d = np.nonzero(grp >= 0)  # row-major: runs ascending
    g = grp[r, d]
    order, own = _stable_group_order(g), _stable_group_order(own_g)
    return g[order], r[order], own_g[own], own_r[own]


def _stable_group_order(g: np.ndarray) -> np.ndarray:
    """A stable sort by group (perf: a radix sort on 16-bit codes)."""
    if g.size and int(g.max()) < 2 ** 16:
        return np.argsort(g.astype(np.uint16), kind="stable")
    return np.argsort(g, kind="stable")


def _device_start_order(dev: np.ndarray, start: np.ndarray) -> np.ndarray | None:
    """The order of the kernels by (device, start); None when they are in it already (perf:
    one device and sorted starts, as the loaders give them, need no gather; several devices
    one stable radix sort by device)."""
    if start.size < 2 or bool(np.all(start[1:] >= start[:-1])):
        if not dev.size or int(dev.min()) == int(dev.max()):
            return None
        return _stable_group_order(dev - dev.min())
    return np.lexsort((start, dev))


def _kernel_columns(kernels: pd.DataFrame, lo: int, hi: int) -> dict[str, np.ndarray]:
    """The kernels overlapping ``[lo, hi)`` in (device, start) order: ``device``, ``start``
    (unclipped), ``s``/``e`` clipped to the window, ``launch``, ``tid`` (the launch call's)."""
    col = {c: kernels[c].to_numpy(np.int64) for c in
           ("start_ns", "end_ns", "device_id", "launch_start_ns", "launch_global_tid")}
    keep = (col["start_ns"] < hi) & (col["end_ns"] > lo)
    inside = None if keep.all() else np.flatnonzero(keep)
    order = _device_start_order(col["device_id"] if inside is None else col["device_id"][inside],
                                col["start_ns"] if inside is None else col["start_ns"][inside])
    rows: np.ndarray | slice | None = inside
    if order is not None:
        rows = order if inside is None else inside[order]
    elif inside is not None and inside.size and int(inside[-1]) - int(inside[0]) + 1 == inside.size:
        rows = slice(int(inside[0]), int(inside[-1]) + 1)  # perf: a view, no gather
    out = {k: (v if rows is None else v[rows]) for k, v in col.items()}
    return {"device": out["device_id"], "start": out["start_ns"],
            "s": _clip_view(out["start_ns"], lo, None), "e": _clip_view(out["end_ns"], None, hi),
            "launch": out["launch_start_ns"], "tid": out["launch_global_tid"]}


def _clip_view(v: np.ndarray, lo: int | None, hi: int | None) -> np.ndarray:
    """``v`` clipped to ``[lo, hi]``; ``v`` itself when nothing is out (perf: no copy)."""
    if v.size and ((lo is not None and int(v.min()) < lo) or (hi is not None and int(v.max()) > hi)):
        return np.clip(v, lo, hi)
    return v


def _sum_by(group: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Exact integer sums of ``values`` per ``group`` (sorted by group)."""
    out = np.zeros(n, np.int64)
    if values.size:
        first = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        out[group[first]] = np.add.reduceat(values, first)
    return out


# ------------------------------------------------------------------------------ unions
_NONE = np.iinfo(np.int64).min


def _prev_max(first: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Per element: the largest ``v`` among the earlier elements of its segment (segments begin
    where ``first``; ``first[0]`` is True), INT64 min for a segment's first element. Vectorised:
    each segment's values are shifted above the previous segment's, then one running max."""
    out = np.full(v.size, _NONE, np.int64)
    if v.size < 2:
        return out
    idx = np.flatnonzero(first)
    lo, hi = np.minimum.reduceat(v, idx), np.maximum.reduceat(v, idx)
    ext = hi - lo + 1
    if float(ext.sum()) < 2.0 ** 62:
        off = np.repeat(np.concatenate(([0], np.cumsum(ext)[:-1])) - lo, np.diff(np.append(idx, v.size)))
        run = v + off
        np.maximum.accumulate(run, out=run)
        out[1:] = run[:-1] - off[1:]
    else:  # segments spanning centuries together: one segment at a time
        for i, j in zip(idx, np.append(idx[1:], v.size)):
            out[i + 1:j] = np.maximum.accumulate(v[i:j - 1])
    out[first] = _NONE
    return out


@dataclass(frozen=True)
class _Runs:
    """Runs of kernels: consecutive kernels in (device, start) order, on one device, with the
    same enclosing groups. Per kernel (``kdev`` its device, ``starts``): ``cum`` the union length
    (ns) of its run's kernels up to it, ``reach`` their latest end; per run: ``first`` (its first
    kernel's index), ``start``, ``end`` (latest end), ``total`` (union length), ``device``."""

    kdev: np.ndarray
    starts: np.ndarray
    cum: np.ndarray
    reach: np.ndarray
    first: np.ndarray
    start: np.ndarray
    end: np.ndarray
    total: np.ndarray
    device: np.ndarray

    @staticmethod
    def build(dev: np.ndarray, s: np.ndarray, e: np.ndarray, key: np.ndarray) -> "_Runs":
        """``key``: per kernel, equal exactly when two kernels' enclosing groups are equal."""
        new = np.ones(dev.size, bool)
        new[1:] = dev[1:] != dev[:-1]
        new[1:] |= key[1:] != key[:-1]
        prev = _prev_max(new, e)
        gain = np.maximum(s, prev)  # perf: in place, two n-sized arrays
        np.subtract(e, gain, out=gain)
        np.maximum(gain, 0, out=gain)
        first = np.flatnonzero(new)
        total = np.add.reduceat(gain, first)
        np.maximum(prev, e, out=prev)
        return _Runs(dev, s, np.cumsum(gain, out=gain), prev, first, s[first],
                     np.maximum.reduceat(e, first), total, dev[first])

    def beyond(self, run: np.ndarray, m: np.ndarray) -> np.ndarray:
        """The union length (ns) of each ``run``'s kernels after ``m`` (INT64 min: all of it):
        the kernels before ``m`` cover their running union up to ``m``."""
        a = self.first[run]
        b = np.append(self.first[1:], self.starts.size)[run]
        i = np.empty(run.size, np.int64)
        dev = self.device[run]
        for dv in np.unique(dev):  # the kernels are sorted by device, then start
            on = dev == dv
            lo, hi = np.searchsorted(self.kdev, dv, "left"), np.searchsorted(self.kdev, dv, "right")
            i[on] = lo + np.searchsorted(self.starts[lo:hi], m[on], side="left") - 1
        i = np.minimum(i, b - 1)
        hit = i >= a
        ii = np.maximum(i, 0)
        before_a = np.where(a > 0, self.cum[np.maximum(a - 1, 0)], 0)
        cov = np.where(hit, self.cum[ii] - before_a - np.maximum(self.reach[ii] - m, 0), 0)
        return self.total[run] - cov


def _union_runs(runs: _Runs, group: np.ndarray, run: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group: the union length (ns) of its runs' kernels per device, summed over devices;
    ``(group, run)`` sorted by group, runs ascending within a group (a run's kernels all start
    after the earlier runs' on its device: their union reaches ``m``, the latest end so far)."""
    if not run.size:
        return np.zeros(n_groups, np.int64)
    dev = runs.device[run]
    seg = np.ones(run.size, bool)
    seg[1:] = (group[1:] != group[:-1]) | (dev[1:] != dev[:-1])
    m = _prev_max(seg, runs.end[run])
    return _sum_by(group, runs.beyond(run, m), n_groups)


def window_sums(nvtx: pd.DataFrame, kernels: pd.DataFrame, steps, window: tuple[int, int],
                kernel_window: tuple[int, int], count_ranges: bool = True) -> NvtxRangesPart:
    """The integer sums of the ranges overlapping ``window`` (``count_ranges``: their count and
    wall time clipped to it) and of the kernels' unions clipped to ``kernel_window`` (the
    analysed window, or a chunk's share of it). Perf: the kernels are put in (device, start)
    order once and cut into runs of the same groups (``_Runs``); the unions are then taken over
    runs, not kernels (a training step's kernels make a few runs per NVTX range)."""
    lo, hi = window
    rs, re_, rt, groups, code = _ranges(nvtx, lo, hi) if len(nvtx) else (
        np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), [], np.zeros(0, np.int64))
    n = len(groups)
    klo, khi = kernel_window
    k = _kernel_columns(kernels, klo, khi)
    ks, ke, ls, dev = k["s"], k["e"], k["launch"], k["device"]
    # kernels without a launch call, each counted once: by the (chunk) window its first ns is in
    no_call = ls == MISSING
    unattributed = int(np.count_nonzero(no_call if klo <= lo else no_call & (np.maximum(k["start"], lo) >= klo)))
    kernel_ns, gpu, self_ns = 0, np.zeros(n, np.int64), np.zeros(n, np.int64)
    if ks.size:
        table, row = np.full((1, 1), -1, np.int64), np.zeros(ks.size, np.int64)
        if n:
            table, row = _enclosing_rows(ls, k["tid"], ~no_call, rs, re_, rt, code, steps)
        runs = _Runs.build(dev, ks, ke, _run_keys(table, row))
        every = np.arange(runs.first.size)
        kernel_ns = int(_union_runs(runs, np.zeros(every.size, np.int64), every, 1)[0])
        g, r, own_g, own_r = _group_pairs(table[row[runs.first]])
        gpu, self_ns = _union_runs(runs, g, r, n), _union_runs(runs, own_g, own_r, n)
    counts = np.zeros(n, np.int64)
    cpu = np.zeros(n, np.int64)
    if count_ranges:
        counts += np.bincount(code, minlength=n)
        np.add.at(cpu, code, np.clip(re_, *window) - np.clip(rs, *window))  # integer ns: exact
    sums = {tuple(groups[i]): [int(counts[i]), int(cpu[i]), int(gpu[i]), int(self_ns[i])]
            for i in range(n) if count_ranges or gpu[i] or self_ns[i]}
    return NvtxRangesPart(sums, kernel_ns, unattributed)


def _rows(part: NvtxRangesPart) -> NvtxRangesResult:
    """The ranked rows of the summed integer ns (module docstring)."""
    items = sorted(part.sums.items(), key=lambda kv: (-kv[1][2], -kv[1][1], kv[0][1], kv[0][0]))
    total = part.kernel_ns
    rows = tuple(NvtxRangeRow(domain=str(k[0]), name=str(k[1]), count=v[0], cpu_ns=v[1], gpu_ns=v[2],
                              gpu_self_ns=v[3], share=(v[2] / total) if total else None)
                 for k, v in items[:MAX_RANGE_ROWS])
    return NvtxRangesResult(rows=rows, groups=len(items), kernel_ns=total,
                            unattributed_kernels=part.unattributed)


NO_RANGES = Unavailable("no NVTX ranges in the analysed window", HINT_ADD_NVTX)


def analyze_nvtx_ranges(nvtx: pd.DataFrame, kernels: pd.DataFrame, steps, window) -> NvtxRangesResult | Unavailable:
    """The ``nvtx_ranges`` section of one process over its analysed ``window`` (``Window``)."""
    w = (int(window.start_ns), int(window.end_ns))
    part = window_sums(nvtx, kernels, steps, w, w)
    return _rows(part) if part.sums else NO_RANGES


def partial_nvtx_ranges(span) -> NvtxRangesPart:
    """One chunk's sums: the kernels it sees, clipped to its share of the window; the ranges'
    count and wall time in the first chunk only (they are whole in every chunk)."""
    w = (int(span.window.start_ns), int(span.window.end_ns))
    cw = span.chunk_window
    return window_sums(span.frames["nvtx"], span.frames["kernels"], span.steps, w,
                       (int(cw.start_ns), int(cw.end_ns)), count_ranges=span.is_first)


def merge_nvtx_ranges(parts) -> NvtxRangesResult | Unavailable:
    """The in-memory result from the chunks' sums (integers: exact)."""
    sums: dict = {}
    for p in parts:
        for key, v in p.sums.items():
            acc = sums.setdefault(key, [0, 0, 0, 0])
            for i in range(4):
                acc[i] += v[i]
    part = NvtxRangesPart(sums, sum(p.kernel_ns for p in parts), sum(p.unattributed for p in parts))
    return _rows(part) if sums else NO_RANGES


# -------------------------------------------------------------------------------- declaration
NVTX_RANGES_SPEC = Section(Obj({
    "ranges": List(Obj({"name": "str", "domain": "str", "count": "int", "cpu_ms": "num", "gpu_ms": "num",
                        "gpu_self_ms": "num", "share": "share?"})),
    "groups": "int", "kernel_ms": "num", "unattributed_kernels": "int"}),
    "No NVTX ranges in the analysed window.", HINT_ADD_NVTX,
    per_process=True, doc="GPU time projected onto NVTX ranges, grouped by (domain, name): the "
    "kernels launched while a range was open on the launching thread (docs/analyses.md)")
"""The ``nvtx_ranges`` section of the analysis JSON (model/schema_types.py)."""

NVTX_RANGES: Declaration = declare(Declaration(
    "nvtx_ranges", section="nvtx_ranges", spec=NVTX_RANGES_SPEC,
    partial=lambda span, **_: partial_nvtx_ranges(span),
    finish=lambda states, ctx: merge_nvtx_ranges(states), rank=0, pooled=True,
    whole=lambda p: analyze_nvtx_ranges(p.frames["nvtx"], p.frames["kernels"], p.steps, p.window)))
"""GPU time per NVTX range (the ``nvtx_ranges`` section). In memory a pooled task of rank 0: it
reads no other result and is the suite's longest task, so it starts first on a worker thread
(perf, bench: run last on the suite's own thread it left the workers idle for ~0.3 s) — so
not ``engine.context.over_one_span``, which waits for ``busy`` and ``phases``; the equality of
the two is tested (tests/analyses/engine/test_context.py)."""
