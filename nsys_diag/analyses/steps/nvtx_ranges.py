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


def _enclosing(points: np.ndarray, s: np.ndarray, e: np.ndarray, level: np.ndarray) -> np.ndarray:
    """points × levels: the index (into ``s``) of the range of each level containing each point,
    -1 where none (one thread's ranges)."""
    depth = int(level.max()) + 1 if level.size else 0
    out = np.full((points.size, max(depth, 1)), -1, np.int64)
    for d in range(depth):
        idx = np.flatnonzero(level == d)
        idx = idx[np.argsort(s[idx], kind="stable")]
        ls, le = s[idx], e[idx]
        prev = np.concatenate(([np.iinfo(np.int64).min], np.maximum.accumulate(le)[:-1]))
        ls = np.maximum(ls, prev)  # disjoint: a partial overlap goes to the earlier range
        which = iv.containing_interval(points, ls, np.maximum(le, ls))
        out[:, d] = np.where(which >= 0, idx[np.maximum(which, 0)], -1)
    return out


def _range_thread(steps, tids: np.ndarray) -> int:
    if isinstance(steps, StepsResult):
        return int(steps.global_tid)
    if not tids.size:
        return -1
    vals, counts = np.unique(tids, return_counts=True)
    return int(vals[np.argmax(counts)])


# ------------------------------------------------------------------------------ attribution
def _attribute(kernels: pd.DataFrame, rs, re_, rt, steps) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kernel row, range index, is own range) triples of the kernels with a launch call."""
    ls = kernels["launch_start_ns"].to_numpy(np.int64)
    lt = kernels["launch_global_tid"].to_numpy(np.int64)
    has = ls != MISSING
    rows: list[np.ndarray] = []
    rngs: list[np.ndarray] = []
    own: list[np.ndarray] = []
    fallback = np.zeros(len(kernels), bool) & has
    main = _range_thread(steps, rt)
    for tid in np.unique(rt):
        on = np.flatnonzero(rt == tid)
        lev = _levels(rs[on], re_[on])
        k = np.flatnonzero(has & (lt == tid))
        enc = _enclosing(ls[k], rs[on], re_[on], lev)
        fallback[k[(enc < 0).all(axis=1)]] = True
        _collect(k, enc, on, rows, rngs, own)
    fallback |= has & ~np.isin(lt, np.unique(rt))
    on = np.flatnonzero(rt == main)
    if on.size and fallback.any():
        k = np.flatnonzero(fallback)
        enc = _enclosing(ls[k], rs[on], re_[on], _levels(rs[on], re_[on]))
        _collect(k, enc, on, rows, rngs, own)
    return _cat(rows, np.int64), _cat(rngs, np.int64), _cat(own, bool)


def _cat(parts: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)


def _collect(k, enc, on, rows, rngs, own) -> None:
    hit = enc >= 0
    if not hit.any():
        return
    deepest = hit.shape[1] - 1 - np.argmax(hit[:, ::-1], axis=1)
    r, d = np.nonzero(hit)
    rows.append(k[r])
    rngs.append(on[enc[r, d]])
    own.append(d == deepest[r])


def _union_ns(group: np.ndarray, device: np.ndarray, s: np.ndarray, e: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group: the length of the union of its intervals per device, summed over devices."""
    out = np.zeros(n_groups, np.int64)
    if not s.size:
        return out
    order = np.lexsort((s, device, group))
    g, d, s, e = group[order], device[order], s[order], e[order]
    seg_start = np.ones(g.size, bool)
    seg_start[1:] = (g[1:] != g[:-1]) | (d[1:] != d[:-1])
    seg = np.cumsum(seg_start) - 1
    lo = int(s.min())
    span = int(e.max()) - lo + 1
    if (int(seg[-1]) + 1) * span < 2 ** 62:  # perf: one running max over every segment
        off = seg.astype(np.int64) * span
        ss, ee = s - lo + off, e - lo + off
        prev = np.concatenate(([np.iinfo(np.int64).min], np.maximum.accumulate(ee)[:-1]))
        prev[seg_start] = np.iinfo(np.int64).min
        gain = np.maximum(ee - np.maximum(ss, prev), 0)
    else:  # windows of years: one segment at a time
        gain = np.zeros(s.size, np.int64)
        bounds = np.append(np.flatnonzero(seg_start), s.size)
        for i, j in zip(bounds[:-1], bounds[1:]):
            prev = np.concatenate(([np.iinfo(np.int64).min], np.maximum.accumulate(e[i:j])[:-1]))
            gain[i:j] = np.maximum(e[i:j] - np.maximum(s[i:j], prev), 0)
    np.add.at(out, g, gain)
    return out


def _distinct_pairs(group: np.ndarray, row: np.ndarray, n_rows: int) -> np.ndarray:
    """The distinct (group, kernel row) pairs, as a 2 × N int64 array in no particular order
    (perf: one int64 key hashed by ``pd.unique``; ``np.unique(axis=1)`` sorts a structured view
    and cost seconds per million kernels)."""
    if not row.size:
        return np.zeros((2, 0), np.int64)
    width = max(int(n_rows), 1)
    key = pd.unique(group.astype(np.int64) * width + row.astype(np.int64))
    return np.stack([key // width, key % width])


def window_sums(nvtx: pd.DataFrame, kernels: pd.DataFrame, steps, window: tuple[int, int],
                kernel_window: tuple[int, int], count_ranges: bool = True) -> NvtxRangesPart:
    """The integer sums of the ranges overlapping ``window`` (``count_ranges``: their count and
    wall time clipped to it) and of the kernels' unions clipped to ``kernel_window`` (the
    analysed window, or a chunk's share of it)."""
    lo, hi = window
    rs, re_, rt, groups, code = _ranges(nvtx, lo, hi) if len(nvtx) else (
        np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), [], np.zeros(0, np.int64))
    n = len(groups)
    lo, hi = kernel_window
    ks = kernels["start_ns"].to_numpy(np.int64)
    ke = kernels["end_ns"].to_numpy(np.int64)
    inside = np.flatnonzero((ks < hi) & (ke > lo))
    k = kernels.iloc[inside] if inside.size < len(kernels) else kernels
    ks, ke = np.clip(ks[inside], lo, hi), np.clip(ke[inside], lo, hi)
    dev = k["device_id"].to_numpy(np.int64)
    kernel_ns = int(_union_ns(np.zeros(ks.size, np.int64), dev, ks, ke, 1)[0]) if ks.size else 0
    rows, rngs, own = _attribute(k, rs, re_, rt, steps) if n and len(k) else (
        np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool))
    # kernels without a launch call, each counted once: by the (chunk) window its first ns is in
    first = np.maximum(kernels["start_ns"].to_numpy(np.int64)[inside], window[0]) >= lo
    unattributed = int(np.count_nonzero(first & (k["launch_start_ns"].to_numpy(np.int64) == MISSING)))
    # a kernel counts once per group even when several of its enclosing ranges share the group
    pair = _distinct_pairs(code[rngs], rows, len(k))
    gpu = _union_ns(pair[0], dev[pair[1]], ks[pair[1]], ke[pair[1]], n)
    own_pair = _distinct_pairs(code[rngs[own]], rows[own], len(k))
    self_ns = _union_ns(own_pair[0], dev[own_pair[1]], ks[own_pair[1]], ke[own_pair[1]], n)
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
MAX_KERNELS = 200_000
"""Exports with more kernel rows than this get no projection in this version (perf: the
projection costs ≈ 2 µs per kernel, ×1.6 of a 2M-kernel analysis; ``make bench``)."""
KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"


def over_budget(bundle) -> Unavailable | None:
    """``Unavailable`` when the export holds more than ``MAX_KERNELS`` kernel rows (the file's
    count: the same fact in memory and streamed)."""
    n = int(bundle.meta.tables.get(KERNEL_TABLE, 0) or 0)
    if n <= MAX_KERNELS:
        return None
    return Unavailable(f"not computed: the export holds {n:,} kernels, more than the "
                       f"{MAX_KERNELS:,} the NVTX projection handles in this version",
                       "nsys stats --report nvtx_gpu_proj_sum gives the projection of a large export")


def _partial_in_budget(span):
    """A chunk's sums, or None when the chunk alone exceeds the budget (then the file does
    too, and ``finish`` reports the section as not computed)."""
    return None if len(span.frames["kernels"]) > MAX_KERNELS else partial_nvtx_ranges(span)


def _finish(states, ctx):
    return over_budget(ctx.bundle) or merge_nvtx_ranges([s for s in states if s is not None])


NVTX_RANGES = declare(Declaration(
    "nvtx_ranges", section="nvtx_ranges", partial=lambda span, **_: _partial_in_budget(span),
    finish=_finish, rank=12,
    whole=lambda p: over_budget(p.bundle) or analyze_nvtx_ranges(
        p.frames["nvtx"], p.frames["kernels"], p.steps, p.window)))
"""GPU time per NVTX range (the ``nvtx_ranges`` section)."""
