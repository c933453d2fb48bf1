"""Fixed-width time bins of the analysed window, for ``compare`` when a side has no steps.

Without steps there is no per-step sample to resample; ``compare`` then resamples these bins
(``analyses/batch_summary.window_rate_metrics``). Each bin is ``BIN_NS`` = 10 ms wide: short
enough that a few-second capture gives hundreds of samples, long enough to hold several kernels
of a typical training or inference loop (µs–ms kernels) so a bin is not all-or-nothing. Windows
longer than ``MAX_BINS`` × 10 ms (10 s) get wider bins, a multiple of 10 ms, so the JSON stays
small. Only whole bins count (the partial tail of the window is dropped).

Per bin (all integer ns unless stated):

* ``busy`` — fraction (0..1) of the bin some kernel ran, mean over the process's devices;
* ``category_ns[cat]`` — kernel time per kernel category (summed over kernels, so concurrent
  kernels add up);
* ``tensor_core_ns`` — kernel time in kernels judged to run on Tensor Cores (the kernel table's
  ``tensor_core`` flag, as ``tensor_cores.share_of_kernel_time`` counts it);
* ``exposed_comm_ns`` — communication-kernel time with no other kernel running on that device
  (as ``communication.exposed_ns``), summed over devices;
* ``kernel_ns[family]`` — kernel time of the ``TOP_FAMILIES`` largest kernel families (names
  normalised by ``kernel_names.normalize_kernel_name``, so both sides' families match).

Vectorised: per-bin sums come from a prefix function over sorted starts/ends (no loop over
kernels); loops run over devices, categories and the few top families only.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.analyses.timeline.busy import DeviceBusy, Window
from nsys_diag.analyses.kernels.names import normalize_kernel_name

BIN_NS = 10_000_000
"""Bin width (10 ms); see the module docstring for why."""
MAX_BINS = 1000
"""At most this many bins; longer windows get bins of a multiple of ``BIN_NS``."""
TOP_FAMILIES = 8
"""Kernel families with per-bin series (largest by time in the window)."""


def binned_sum(starts: np.ndarray, ends: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Σ over intervals of their overlap with each bin ``[edges[i], edges[i+1])`` (ns).

    ``F(t) = Σ clamp(t − s, 0, e − s) = Σ_{s<t} (t − s) − Σ_{e<t} (t − e)`` at each edge, from
    sorted starts/ends and their cumulative sums; the per-bin sums are ``diff(F)``. Overlapping
    intervals add up (kernel time, not coverage).
    """
    s = np.sort(np.asarray(starts, dtype=np.int64))
    e = np.sort(np.asarray(ends, dtype=np.int64))
    t = np.asarray(edges, dtype=np.int64)
    cs = np.concatenate(([0], np.cumsum(s)))
    ce = np.concatenate(([0], np.cumsum(e)))
    ns = np.searchsorted(s, t, side="left")
    ne = np.searchsorted(e, t, side="left")
    f = (ns * t - cs[ns]) - (ne * t - ce[ne])
    return np.diff(f).astype(np.int64)


def window_edges(window: Window) -> tuple[int, np.ndarray]:
    """(bin width ns, bin edges) of the window's whole bins (module docstring)."""
    dur = int(window.duration_ns)
    bin_ns = BIN_NS
    if dur > MAX_BINS * BIN_NS:
        bin_ns = BIN_NS * int(np.ceil(dur / (MAX_BINS * BIN_NS)))
    n = dur // bin_ns
    return bin_ns, window.start_ns + np.arange(n + 1, dtype=np.int64) * bin_ns


def row_attrs(kernels: pd.DataFrame, name_table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray,
                                                                         np.ndarray]:
    """Per kernel row: (category, tensor_core flag, family key), looked up per distinct name."""
    names = kernels["name"]
    if not isinstance(names.dtype, pd.CategoricalDtype):
        names = names.astype("category")
    cats = pd.Index(names.cat.categories.astype(str))
    tab = name_table.drop_duplicates("name").set_index("name") if len(name_table) else None
    if tab is not None:
        cat_of = tab["category"].reindex(cats).fillna("other").astype(str).to_numpy()
        tc_of = tab["tensor_core"].reindex(cats).fillna(False).astype(bool).to_numpy()
    else:
        cat_of = np.full(len(cats), "other", dtype=object)
        tc_of = np.zeros(len(cats), dtype=bool)
    fam_of = np.array([normalize_kernel_name(n) or n[:200] for n in cats], dtype=object)  # per name
    codes = names.cat.codes.to_numpy()
    ok = codes >= 0
    take = np.maximum(codes, 0)
    category = np.where(ok, cat_of[take] if len(cats) else "other", "other").astype(object)
    tc = np.where(ok, tc_of[take] if len(cats) else False, False).astype(bool)
    family = np.where(ok, fam_of[take] if len(cats) else "", "").astype(object)
    return category, tc, family


def exposed_comm(kernels: pd.DataFrame, category: np.ndarray, edges: np.ndarray,
                 clip_to: tuple[int, int] | None = None) -> np.ndarray:
    """Per bin: communication-kernel time with no other kernel on that device, summed (ns).
    ``clip_to``: count only the exposed time inside ``[lo, hi)`` (a chunk's window)."""
    out = np.zeros(len(edges) - 1, dtype=np.int64)
    comm = category == "communication"
    if not comm.any():
        return out
    dev = kernels["device_id"].to_numpy()
    s, e = kernels["start_ns"].to_numpy(np.int64), kernels["end_ns"].to_numpy(np.int64)
    for d in np.unique(dev[comm]):  # handful of devices
        on = dev == d
        cs, ce = iv.merge_intervals(s[on & comm], e[on & comm])
        os_, oe = iv.merge_intervals(s[on & ~comm], e[on & ~comm])
        xs, xe = iv.subtract_merged(cs, ce, os_, oe)
        if clip_to is not None:
            xs, xe = iv.clip_merged(xs, xe, clip_to[0], clip_to[1])
        out += iv.covered_length_per_window_merged(xs, xe, edges[:-1], edges[1:]).astype(np.int64)
    return out


def top_families(ns_by_family: pd.Series) -> list[str]:
    """The ``TOP_FAMILIES`` largest named families of kernel ns per family (index sorted by
    name): ties keep name order."""
    dur = ns_by_family.sort_values(ascending=False, kind="stable")
    return [f for f in dur.index if f][:TOP_FAMILIES]


def empty_bins(window: Window) -> tuple[int, np.ndarray, dict] | None:
    """(bin width ns, bin edges, the window-bins dict with its series still empty) of
    ``window``; None without a window (shared with the streamed merge,
    ``timeline/strips.py``)."""
    if window.duration_ns <= 0:
        return None
    bin_ns, edges = window_edges(window)
    n = len(edges) - 1
    out: dict = {"bin_ns": int(bin_ns), "start_ns": int(window.start_ns), "count": int(n),
                 "busy": [], "category_ns": {}, "tensor_core_ns": [], "exposed_comm_ns": [],
                 "kernel_ns": {}}
    return int(bin_ns), edges, out


def build_window_bins(kernels: pd.DataFrame, name_table: pd.DataFrame,
                      busy: dict[int, DeviceBusy], window: Window) -> dict | None:
    """The per-bin series of the window (module docstring); None without a window."""
    grid = empty_bins(window)
    if grid is None:
        return None
    bin_ns, edges, out = grid
    n = len(edges) - 1
    if n == 0:
        return out
    bs, be = edges[:-1], edges[1:]
    if busy:
        frac = np.mean([b.covered_per_window("compute", bs, be) for b in busy.values()], axis=0)
        out["busy"] = np.round(frac / bin_ns, 4).tolist()
    else:
        out["busy"] = [0.0] * n
    if not len(kernels):
        out["tensor_core_ns"] = out["exposed_comm_ns"] = [0] * n
        return out
    s, e = kernels["start_ns"].to_numpy(np.int64), kernels["end_ns"].to_numpy(np.int64)
    category, tc, family = row_attrs(kernels, name_table)
    for cat in sorted(set(category.tolist())):  # ≤ 8 categories
        m = category == cat
        out["category_ns"][str(cat)] = binned_sum(s[m], e[m], edges).tolist()
    out["tensor_core_ns"] = binned_sum(s[tc], e[tc], edges).tolist()
    out["exposed_comm_ns"] = exposed_comm(kernels, category, edges).tolist()
    for fam in top_families(pd.Series(e - s).groupby(family).sum()):
        m = family == fam
        out["kernel_ns"][str(fam)] = binned_sum(s[m], e[m], edges).tolist()
    return out
