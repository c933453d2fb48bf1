"""Binned timeline strips for the report: the representative (median) step and the worst step.

Each strip has the CPU phase row (exclusive phase instances) and, per GPU, the fraction of each
bin covered by kernels (``busy``) and by copies (``copy``), 0..1. All strips share one bin width,
chosen so that the longest strip has at most ``MAX_BINS`` bins. Without steps, one strip covers the
analysed window (label ``window``), and ``window_bins`` holds fixed 10 ms bins of the window with
per-bin busy fraction, kernel time per category, Tensor Core and exposed-communication time and the
top kernel families (``analyses/timeline/window_bins.py``), which ``compare`` resamples when there are no
steps to resample.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline.busy import DeviceBusy, Window
from nsys_diag.analyses.base import is_available
from nsys_diag.analyses.timeline.window_bins import build_window_bins
from typing import TYPE_CHECKING
from dataclasses import field
from nsys_diag.analyses.kernels.catalog import catalogue
from nsys_diag.analyses.kernels.table import UNNAMED
from nsys_diag.analyses.engine.declaration import Declaration, FinishContext, declare
from nsys_diag.analyses.timeline.window_bins import (binned_sum, empty_bins, exposed_comm, row_attrs,
                                                     top_families, window_edges)
from nsys_diag.model.schema_types import Enum, Leaf, List, Map, Obj, Section, Str
from nsys_diag.model.vocabulary import HINT_ADD_NVTX

if TYPE_CHECKING:  # the span type only: the engine's context imports the analyses
    from nsys_diag.analyses.engine.context import ChunkInputs

MAX_BINS = 200


@dataclass(frozen=True)
class TimelineResult:
    bin_ns: int
    strips: tuple[dict, ...]
    window_bins: dict | None = None

    available = True

    def to_json(self) -> dict:
        out = {"available": True, "bin_ns": self.bin_ns, "max_bins": MAX_BINS,
               "strips": list(self.strips)}
        if self.window_bins is not None:
            out["window_bins"] = self.window_bins
        return out


Pick = tuple[str, "int | None", int, int]
"""(label, analysed step index or None, start ns, end ns) of one strip."""


def bin_grid(start: int, end: int, bin_ns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bin starts, bin ends, bin widths as float) of a strip ``[start, end)``: bins of
    ``bin_ns``, the last one cut at ``end``."""
    n = max(int(np.ceil((end - start) / bin_ns)), 1)
    bs = start + np.arange(n, dtype=np.int64) * bin_ns
    be = np.minimum(bs + bin_ns, end)
    return bs, be, np.maximum(be - bs, 1).astype(np.float64)


def covered_bins(busy: dict[int, DeviceBusy], bs: np.ndarray, be: np.ndarray
                 ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per device (sorted): (compute ns, copy ns) covered in each bin (int64)."""
    # perf: no re-merge of 2M intervals
    return {int(d): (b.covered_per_window("compute", bs, be), b.covered_per_window("copy", bs, be))
            for d, b in sorted(busy.items())}  # handful of devices


def devices_json(covered: dict[int, tuple[np.ndarray, np.ndarray]], width: np.ndarray
                 ) -> list[dict]:
    """The ``devices`` of a strip: covered ns per bin ÷ bin width, 0..1 rounded to 4 digits."""
    return [{"device_id": int(d), "busy": np.round(comp / width, 4).tolist(),
             "copy": np.round(copy / width, 4).tolist()} for d, (comp, copy) in covered.items()]


def _bins(busy: dict[int, DeviceBusy], start: int, end: int, bin_ns: int) -> list[dict]:
    bs, be, width = bin_grid(start, end, bin_ns)
    return devices_json(covered_bins(busy, bs, be), width)


def timeline_picks(steps, window: Window) -> list[Pick]:
    """The strips to draw: the representative (median) and worst analysed steps, or the window."""
    picks: list[Pick] = []
    if is_available(steps) and steps.analysed_count:
        idx = np.flatnonzero(steps.analysed_mask)
        dur = steps.durations_ns[idx]
        med = np.median(dur)
        rep = int(idx[int(np.argmin(np.abs(dur - med)))])
        worst = int(idx[int(np.argmax(dur))])
        picks.append(("representative", rep, int(steps.starts_ns[rep]), int(steps.ends_ns[rep])))
        if worst != rep:
            picks.append(("worst", worst, int(steps.starts_ns[worst]), int(steps.ends_ns[worst])))
    elif window.duration_ns > 0:
        picks.append(("window", None, window.start_ns, window.end_ns))
    return picks


def strip_bin_ns(picks: list[Pick]) -> int:
    """The one bin width of every strip: the longest strip in at most ``MAX_BINS`` bins."""
    return max(int(np.ceil(max(e - s for _, _, s, e in picks) / MAX_BINS)), 1)


def strip_json(pick: Pick, phases, devices: list[dict]) -> dict:
    """One strip: its span, the phase instances of its step and the per-device bins."""
    label, step_index, s, e = pick
    ph = []
    if is_available(phases) and step_index is not None:
        m = phases.inst_step == step_index
        for a, b_, r in zip(phases.inst_starts_ns[m].tolist(), phases.inst_ends_ns[m].tolist(),
                            phases.inst_row[m].tolist()):  # phase instances of one step
            row = phases.rows[r]
            ph.append({"name": row.name, "canonical": row.canonical, "start_ns": int(a),
                       "end_ns": int(b_)})
    return {"label": label, "step_index": step_index, "start_ns": int(s), "end_ns": int(e),
            "duration_ms": (e - s) / 1e6, "phases": ph, "devices": devices}


def build_timeline(steps, phases, busy: dict[int, DeviceBusy], window: Window,
                   kernels: pd.DataFrame | None = None,
                   name_table: pd.DataFrame | None = None) -> TimelineResult | None:
    """Strips for the representative and worst analysed steps (or the window, then with
    ``window_bins`` when ``kernels`` — the kernels of the window — and their name table are given)."""
    picks = timeline_picks(steps, window)
    if not picks:
        return None
    bin_ns = strip_bin_ns(picks)
    strips = [strip_json(p, phases, _bins(busy, p[2], p[3], bin_ns)) for p in picks]  # ≤ 2
    wbins = None
    if picks[0][0] == "window" and kernels is not None:
        wbins = build_window_bins(kernels, name_table if name_table is not None else
                                  pd.DataFrame(), busy, window)
    return TimelineResult(bin_ns, tuple(strips), wbins)


# ---------------------------------------------------------------------- streamed: partial per span, merge
# The timeline, streamed: every chunk fills the global bin grids with its own integer ns, the
# merge adds them and finishes exactly as ``timeline.build_timeline`` does.
#
# * **Strips** (the representative and worst steps, or the window): the strips and their bin width
#   depend on the steps and the window only (global); per strip and device, a chunk gives the
#   compute and copy ns its busy intervals (the whole ones clipped to the chunk's window) cover in
#   each bin — integer sums over chunks equal the whole ones exactly, and the division by the bin
#   width and the rounding happen once, at merge time. The phase row comes from the merged phases.
# * **Window bins** (``window_bins.py``, without steps: 10 ms bins of the window): busy ns per
#   device (as the strips), then over the chunk's **owned** kernels that meet the window (a kernel
#   crossing an edge counts once, in full, in the chunk holding its start) the kernel ns per
#   category, on Tensor Cores and per kernel family, and — from every kernel the chunk sees —
#   the exposed communication time clipped to the chunk's window. Families are ranked at merge
#   time by their total ns (ties by name), so a chunk keeps the series of every family it saw,
#   over the bins its kernels and window touch only.
#
# Kernel categories and Tensor Core flags: ``name_table`` (the kernel table's) when the caller has
# it, else the chunk's own name table — the catalogue of each kernel name with the short name of
# its first row, which equals the whole table's whenever a kernel name always carries the same
# short name (nsys derives both from one symbol).
#
# Partial size: O(strip bins × devices) + O(window bins touched × (categories + families)).
Series = dict[str, np.ndarray]


@dataclass(frozen=True)
class WindowBinsPart:
    """One chunk's share of the window bins: int64 ns per bin for bins ``[b0, b0 + width)``."""

    b0: int
    busy: dict[int, np.ndarray]
    category_ns: Series = field(default_factory=dict)
    tensor_core_ns: np.ndarray | None = None
    exposed_comm_ns: np.ndarray | None = None
    family_total_ns: dict[str, int] = field(default_factory=dict)
    family_ns: Series = field(default_factory=dict)
    has_kernels: bool = False


@dataclass(frozen=True)
class TimelinePart:
    """One chunk: per strip, per device (compute, copy) ns covered in each bin (int64)."""

    strips: tuple[dict[int, tuple[np.ndarray, np.ndarray]], ...]
    window_bins: WindowBinsPart | None


def chunk_name_table(kernels: pd.DataFrame) -> pd.DataFrame:
    """``name``, ``category``, ``tensor_core`` of each kernel name in ``kernels`` (the catalogue
    of the name with the short name of its first row, as ``kernels.kernel_name_stats``)."""
    if not len(kernels):
        return pd.DataFrame({"name": [], "category": [], "tensor_core": []})
    names, shorts = kernels["name"], kernels["short_name"]
    names = names if isinstance(names.dtype, pd.CategoricalDtype) else names.astype("category")
    shorts = shorts if isinstance(shorts.dtype, pd.CategoricalDtype) else shorts.astype("category")
    codes, first = np.unique(names.cat.codes.to_numpy(), return_index=True)
    cat_names = np.asarray(names.cat.categories, dtype=object)
    cat_shorts = np.asarray(shorts.cat.categories, dtype=object)
    sc = shorts.cat.codes.to_numpy()[first]
    name_vals = np.where(codes >= 0, cat_names[np.maximum(codes, 0)] if len(cat_names) else "",
                         UNNAMED).astype(object)
    short_vals = np.where(sc >= 0, cat_shorts[np.maximum(sc, 0)] if len(cat_shorts) else "",
                          "").astype(object)
    cat = catalogue(name_vals, short_vals)
    return pd.DataFrame({"name": name_vals, "category": cat["category"].to_numpy(),
                         "tensor_core": cat["tensor_core"].to_numpy(dtype=bool)})


def _bin_span(starts: np.ndarray, ends: np.ndarray, lo: int, hi: int, w_start: int, bin_ns: int,
              n: int) -> tuple[int, int]:
    """Bins ``[b0, b1)`` of the grid that ``[lo, hi)`` and the intervals touch."""
    if starts.size:
        lo, hi = min(lo, int(starts.min())), max(hi, int(ends.max()))
    b0 = min(max((lo - w_start) // bin_ns, 0), n)
    b1 = min(max(-((w_start - hi) // bin_ns), 0), n)
    return int(b0), int(max(b1, b0))


def _window_bins_part(ci: ChunkInputs, name_table: pd.DataFrame | None) -> WindowBinsPart | None:
    w, cw = ci.window, ci.chunk_window
    if w.duration_ns <= 0:
        return None
    bin_ns, edges = window_edges(w)
    n = len(edges) - 1
    seen = ci.frames["kernels"]
    s_all, e_all = seen["start_ns"].to_numpy(np.int64), seen["end_ns"].to_numpy(np.int64)
    in_w = (s_all < w.end_ns) & (e_all > w.start_ns)
    k = seen.loc[in_w]
    s, e = s_all[in_w], e_all[in_w]
    own = (s >= ci.lo_ns) & (s < ci.hi_ns)
    b0, b1 = _bin_span(s[own], e[own], cw.start_ns, cw.end_ns, w.start_ns, bin_ns, n)
    sub = edges[b0:b1 + 1]
    bs, be = sub[:-1], sub[1:]
    busy = {int(d): np.asarray(b.covered_per_window("compute", bs, be), np.int64)
            for d, b in ci.busy.items()}
    if not len(k) or b1 <= b0:
        return WindowBinsPart(b0, busy)
    table = name_table if name_table is not None else chunk_name_table(k)
    category, tc, family = row_attrs(k, table)
    # every kernel the chunk sees: a kernel begun in an earlier chunk may leave comm exposed here
    exposed = exposed_comm(k, category, sub, clip_to=(cw.start_ns, cw.end_ns))
    if not own.any():
        return WindowBinsPart(b0, busy, exposed_comm_ns=exposed)
    so, eo, co, fo = s[own], e[own], category[own], family[own]
    cats = {str(c): binned_sum(so[co == c], eo[co == c], sub) for c in sorted(set(co.tolist()))}
    totals = pd.Series(eo - so).groupby(fo).sum()
    fams = {str(f): binned_sum(so[fo == f], eo[fo == f], sub) for f in totals.index if f}
    return WindowBinsPart(b0, busy, cats, binned_sum(so[tc[own]], eo[tc[own]], sub), exposed,
                          {str(f): int(v) for f, v in totals.items()}, fams, True)


def partial_timeline(ci: ChunkInputs, *, name_table: pd.DataFrame | None = None
                     ) -> TimelinePart | None:
    """The chunk's ns in the timeline's bins (None when the process has no strip to draw).
    ``name_table``: the kernel table's (``KernelsResult.table``) when known; else the chunk's."""
    picks = timeline_picks(ci.steps, ci.window)
    if not picks:
        return None
    bin_ns = strip_bin_ns(picks)
    strips = []
    for _, _, s, e in picks:  # ≤ 2 strips
        bs, be, _ = bin_grid(s, e, bin_ns)
        strips.append(covered_bins(ci.busy, bs, be))
    wb = _window_bins_part(ci, name_table) if picks[0][0] == "window" else None
    return TimelinePart(tuple(strips), wb)


def _dense(n: int, pieces: list[tuple[int, np.ndarray | None]]) -> np.ndarray:
    out = np.zeros(n, np.int64)
    for b0, arr in pieces:  # one per chunk
        if arr is not None and arr.size:
            out[b0:b0 + arr.size] += arr
    return out


def _merge_window_bins(parts: list[WindowBinsPart], window) -> dict | None:
    """``build_window_bins`` of the whole window from the chunks' parts."""
    grid = empty_bins(window)
    if grid is None:
        return None
    bin_ns, edges, out = grid
    n = len(edges) - 1
    if n == 0:
        return out
    devices = list(parts[0].busy) if parts else []
    if devices:
        per_dev = [_dense(n, [(p.b0, p.busy.get(d)) for p in parts]) for d in devices]
        out["busy"] = np.round(np.mean(per_dev, axis=0) / bin_ns, 4).tolist()
    else:
        out["busy"] = [0.0] * n
    with_k = [p for p in parts if p.has_kernels]
    if not with_k:
        out["tensor_core_ns"] = out["exposed_comm_ns"] = [0] * n
        return out
    for cat in sorted({c for p in with_k for c in p.category_ns}):  # ≤ 8 categories
        out["category_ns"][cat] = _dense(n, [(p.b0, p.category_ns.get(cat)) for p in with_k]).tolist()
    out["tensor_core_ns"] = _dense(n, [(p.b0, p.tensor_core_ns) for p in with_k]).tolist()
    out["exposed_comm_ns"] = _dense(n, [(p.b0, p.exposed_comm_ns) for p in parts]).tolist()
    totals: dict[str, int] = {}
    for p in with_k:
        for f, v in p.family_total_ns.items():  # the chunk's families
            totals[f] = totals.get(f, 0) + v
    ranked = top_families(pd.Series(dict(sorted(totals.items())), dtype=np.int64))
    for fam in ranked:  # ≤ TOP_FAMILIES
        out["kernel_ns"][fam] = _dense(n, [(p.b0, p.family_ns.get(fam)) for p in with_k]).tolist()
    return out


def merge_timeline(parts: list[TimelinePart | None], *, steps, phases, window
                   ) -> TimelineResult | None:
    """``build_timeline`` of the whole process: ``steps`` and ``phases`` merged (global),
    ``window`` the process's analysed window; ``parts`` in any order."""
    picks = timeline_picks(steps, window)
    if not picks:
        return None
    got = [p for p in parts if p is not None]
    bin_ns = strip_bin_ns(picks)
    strips = []
    for i, pick in enumerate(picks):  # ≤ 2 strips
        _, _, width = bin_grid(pick[2], pick[3], bin_ns)
        covered: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for p in got:  # one per chunk
            for d, (comp, copy) in p.strips[i].items():  # a handful of devices
                c0, c1 = covered.get(d, (0, 0))
                covered[d] = (comp + c0, copy + c1)
        strips.append(strip_json(pick, phases, devices_json(dict(sorted(covered.items())), width)))
    wbins = None
    if picks[0][0] == "window":
        wbins = _merge_window_bins([p.window_bins for p in got if p.window_bins is not None],
                                   window)
    return TimelineResult(bin_ns, tuple(strips), wbins)


# -------------------------------------------------------------------------------- declaration
def _finish_timeline(states, ctx: FinishContext) -> TimelineResult | None:
    r = ctx.results
    return merge_timeline(list(states), steps=r["steps"], phases=r["phases"],
                          window=ctx.glob.window)


_BIN_SERIES = List("int")
TIMELINE_SPEC = Section(Obj({
    "bin_ns": Leaf({"type": "integer", "minimum": 1}), "strips": List(Obj({
        "label": Enum("representative", "worst", "window"), "step_index": "int?",
        "start_ns": "int", "end_ns": "int",
        "phases": List(Obj({"name": "str", "canonical": Str(default="other"), "start_ns": "int",
                            "end_ns": "int"})),
        "devices": List(Obj({"device_id": "int", "busy": List("share", max_items=200)},
                            carried={"copy": List("share")}))},
        carried={"duration_ms": "num"})),
    "window_bins": Obj({"start_ns": "int", "bin_ns": "int", "count": "int", "busy": List("share"),
                        "tensor_core_ns": _BIN_SERIES, "exposed_comm_ns": _BIN_SERIES,
                        "category_ns": Map(_BIN_SERIES), "kernel_ns": Map(_BIN_SERIES)},
                       null=True, fill=False,
                       doc="10 ms bins of a window without steps (analyses/timeline/window_bins.py)")},
    carried={"max_bins": "int"}, optional=("window_bins",)),
    "No step to draw.", HINT_ADD_NVTX,
    per_process=True)
"""The ``timeline`` section of the analysis JSON (model/schema_types.py)."""

TIMELINE = declare(Declaration(
    "timeline", section="timeline", spec=TIMELINE_SPEC, reads=("steps", "phases"),
    partial=lambda span, **_: partial_timeline(span), finish=_finish_timeline, rank=10,
    whole_reads=("steps", "phases", "busy", "kernel_table"),
    whole=lambda p, st, ph, busy, kt: build_timeline(st, ph, busy, p.window, kernels=kt[0],
                                                     name_table=kt[1].table)))
"""The window's strips and bins (the ``timeline`` section)."""
