"""Tensor Active *levels* from nsys GPU metrics, over kernel time, GEMM time and per kernel name.

nsys samples ``Tensor Active [Throughput %]`` (the fraction of cycles the tensor pipes were
active) and ``SM Active`` every sampling period (default ≈ 100 µs at 10 kHz); a sample is the
average over the period that ends at its timestamp. Three readings, all vectorised
(``searchsorted`` on merged or sorted intervals, a handful of per-device loops):

* **during kernels** — samples whose timestamp lies inside the union of the device's kernels: the
  mean level and the fraction of such samples with Tensor Active > 0 (kept as evidence);
* **during GEMMs** — samples inside the union of the device's GEMM-family kernels (the caller's
  mask: GEMM/conv/attention kernels and generated kernels whose names cannot tell): the mean
  Tensor Active level (``level_during_gemm``, a fraction 0..1) and the mean SM Active. When GEMMs
  are shorter than the sampling period the level mixes in their neighbours — that is why it is a
  *level* judged against a threshold, not a per-kernel verdict;
* **per kernel name** — only where the sampling period resolves kernels: a sample is attributed to
  a kernel when that kernel lasts ≥ 2 × the sampling period and it alone ran during the whole
  sampled period ``(ts - period, ts]`` on that device. Names with no such sample are unresolved.

Rows need not be in timestamp order (nsys ≥ 2025.6 no longer promises it): everything is sorted
here. Values are returned as fractions (percent / 100).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.analyses.timeline.arrays import all_equal
from nsys_diag.analyses.gpu_metrics import CANONICAL_KEYS, metric_key_index

RESOLVE_PERIODS = 2
"""A kernel is resolved by the samples when it lasts at least 2 sampling periods (a shorter one
never holds a whole sampled period to itself)."""


@dataclass(frozen=True)
class Samples:
    """One canonical metric's samples: timestamps (ns), devices and values (fractions)."""

    ts: np.ndarray
    dev: np.ndarray
    val: np.ndarray

    @property
    def size(self) -> int:
        return int(self.ts.size)


def metric_samples(gpu_metrics: pd.DataFrame | None, key: str) -> Samples | None:
    """The finite samples of canonical ``key`` (values / 100), None when it was not sampled."""
    if gpu_metrics is None or gpu_metrics.empty:
        return None
    sel = metric_key_index(gpu_metrics) == CANONICAL_KEYS.index(key)
    if not sel.any():
        return None
    val = gpu_metrics["value"].to_numpy(dtype=float)[sel] / 100.0
    ok = np.isfinite(val)
    ts = gpu_metrics["ts_ns"].to_numpy(dtype=np.int64)[sel][ok]
    dev = gpu_metrics["device_id"].to_numpy(dtype=np.int64)[sel][ok]
    if ts.size == 0:
        return None
    return Samples(ts, dev, val[ok])


def sample_period_ns(s: Samples) -> int | None:
    """Median positive spacing (ns) of the samples of the first device (sorted first)."""
    one = np.sort(s.ts[s.dev == s.dev[0]])
    d = np.diff(one)
    d = d[d > 0]
    return int(np.median(d)) if d.size else None


def _rows_of_device(k_dev: np.ndarray, d: int) -> np.ndarray | slice:
    """The rows of device ``d``: a slice of everything with one device (perf, bench: no 2M-row
    mask or copy), else the row indices."""
    if all_equal(k_dev):
        return slice(None) if k_dev[0] == d else slice(0, 0)
    return np.flatnonzero(k_dev == d)


def merged_by_device(devices, k_dev: np.ndarray, k_s: np.ndarray, k_e: np.ndarray) -> dict:
    """Per device, the merged union of its intervals (computed once, shared by every metric)."""
    out = {}
    for d in devices:  # a handful of devices
        rows = _rows_of_device(k_dev, int(d))
        out[int(d)] = iv.merge_intervals(k_s[rows], k_e[rows])
    return out


def inside_merged(s: Samples, merged: dict) -> np.ndarray:
    """Per sample: its timestamp lies inside its device's merged intervals (``merged_by_device``)."""
    inside = np.zeros(s.size, dtype=bool)
    for d in np.unique(s.dev):  # a handful of devices
        ms, me = merged.get(int(d), (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        if ms.size:
            sel = s.dev == d
            inside[sel] = iv.containing_interval(s.ts[sel], ms, me) >= 0
    return inside


def inside_union(s: Samples, k_dev: np.ndarray, k_s: np.ndarray, k_e: np.ndarray) -> np.ndarray:
    """Per sample: its timestamp lies inside the union of its device's intervals."""
    return inside_merged(s, merged_by_device(np.unique(s.dev), k_dev, k_s, k_e))


_NO_END = np.iinfo(np.int64).min


def running_ends_by_device(devices, k_dev: np.ndarray, k_s: np.ndarray, k_e: np.ndarray,
                           rows: np.ndarray) -> dict:
    """Per device: (its interval starts in order, the running maximum of the ends of the
    ``rows``-selected intervals up to each — INT64 min before the first), what
    ``inside_running`` tests samples against (ns).

    perf (bench): membership in the union of a subset (the GEMM-family kernels) without
    copying the subset's three columns and merging it — one int64 array per device."""
    out = {}
    for d in devices:  # a handful of devices
        r = _rows_of_device(k_dev, int(d))
        starts, ends, sel = k_s[r], k_e[r], rows[r]
        if not iv.is_sorted(starts):
            order = np.argsort(starts, kind="stable")
            starts, ends, sel = starts[order], ends[order], sel[order]
        run = np.where(sel, ends, _NO_END)
        np.maximum.accumulate(run, out=run)
        out[int(d)] = (starts, run)
    return out


def inside_running(s: Samples, runs: dict) -> np.ndarray:
    """Per sample: its timestamp lies inside the union of its device's selected intervals
    (``running_ends_by_device``) — some selected interval has start <= ts < end, exactly
    ``inside_merged`` of their merged union (empty intervals never hold a sample)."""
    inside = np.zeros(s.size, dtype=bool)
    for d in np.unique(s.dev):  # a handful of devices
        starts, run = runs.get(int(d), (None, None))
        if starts is None or not starts.size:
            continue
        sel = np.flatnonzero(s.dev == d)
        t = s.ts[sel]
        i = np.searchsorted(starts, t, side="right")
        inside[sel] = (i > 0) & (run[np.maximum(i - 1, 0)] > t)
    return inside


@dataclass(frozen=True)
class RowNames:
    """Per kernel row, its row in the caller's name table (-1: none), kept as a lookup over the
    rows' small name codes: row ``i`` is ``lut[codes[i]]`` (code -1 picks the last entry).

    perf (bench): the name table row of 2M kernels is never materialised; per-name masks
    become one boolean gather over the codes."""

    codes: np.ndarray
    lut: np.ndarray

    @staticmethod
    def of(row_name: np.ndarray, n_names: int) -> "RowNames":
        """From a plain per-row array of name rows (-1: none) into a table of ``n_names``."""
        return RowNames(np.asarray(row_name), np.append(np.arange(n_names, dtype=np.int64), -1))

    def mask(self, per_name: np.ndarray) -> np.ndarray:
        """Per kernel row: it has a name row and ``per_name`` (bool per name row) holds there."""
        lut_ok = (self.lut >= 0) & per_name[np.maximum(self.lut, 0)]
        return lut_ok[self.codes]

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The name rows of the kernel rows ``rows`` (int64, -1: none)."""
        return self.lut[self.codes[rows]]


@dataclass(frozen=True)
class DeviceOrder:
    """One device's kernels sorted by start: row indices, starts, ends and the sorted ends."""

    order: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    ends_sorted: np.ndarray


def device_orders(devices, k_dev: np.ndarray, k_s: np.ndarray, k_e: np.ndarray) -> dict:
    """Per device, its kernels in start order (perf, bench: computed once for every metric, and
    rows already in order — the usual export — need no argsort of 2M starts)."""
    out = {}
    for d in devices:  # a handful of devices
        rows = _rows_of_device(k_dev, int(d))
        rows = np.arange(k_s.size)[rows] if isinstance(rows, slice) else rows
        if rows.size == 0:
            continue
        starts = k_s[rows]
        order = rows if iv.is_sorted(starts) else rows[np.argsort(starts, kind="stable")]
        ss, se = k_s[order], k_e[order]
        out[int(d)] = DeviceOrder(order, ss, se, se if iv.is_sorted(se) else np.sort(se))
    return out


def attribute_to_kernels(s: Samples, k_dev: np.ndarray, k_s: np.ndarray, k_e: np.ndarray,
                         period: int, orders: dict | None = None) -> np.ndarray:
    """Per sample, the row index of the one kernel that ran alone on its device for the whole
    sampled period ``(ts - period, ts]`` and lasts ≥ ``RESOLVE_PERIODS`` × ``period``; -1 if none.

    Per device: kernels sorted by start; the kernel started last at or before ``ts - period`` must
    also be the last started at or before ``ts`` (no start in between), still run at ``ts``, and
    be the only kernel running at both ends of the period (start-count minus end-count == 1).
    """
    out = np.full(s.size, -1, dtype=np.int64)
    long_enough = (k_e - k_s) >= RESOLVE_PERIODS * period
    if period <= 0 or not long_enough.any():
        return out
    if orders is None:
        orders = device_orders(np.unique(s.dev), k_dev, k_s, k_e)
    for d in np.unique(s.dev):  # a handful of devices
        dev_order = orders.get(int(d))
        if dev_order is None:
            continue
        order, ss, se = dev_order.order, dev_order.starts, dev_order.ends
        ends_sorted = dev_order.ends_sorted
        sel = np.flatnonzero(s.dev == d)
        t1 = s.ts[sel]
        t0 = t1 - period

        c1 = np.searchsorted(ss, t1, side="right") - 1
        c0 = np.searchsorted(ss, t0, side="right") - 1
        ok = (c1 >= 0) & (c1 == c0)
        ok &= (_running(ss, ends_sorted, t1) == 1) & (_running(ss, ends_sorted, t0) == 1)
        c1 = np.maximum(c1, 0)
        ok &= se[c1] > t1
        hit = order[c1]
        ok &= long_enough[hit]
        out[sel[ok]] = hit[ok]
    return out


def _running(starts_sorted: np.ndarray, ends_sorted: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Per time, the number of intervals with start <= t < end."""
    return (np.searchsorted(starts_sorted, t, side="right")
            - np.searchsorted(ends_sorted, t, side="right"))


def per_group_mean(values: np.ndarray, group: np.ndarray, n_groups: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(mean value per group — NaN for groups without samples —, samples per group); rows with
    group -1 are ignored."""
    ok = group >= 0
    counts = np.bincount(group[ok], minlength=n_groups)[:n_groups]
    sums = np.bincount(group[ok], weights=values[ok], minlength=n_groups)[:n_groups]
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return means, counts


@dataclass(frozen=True)
class TensorLevels:
    """Counter readings for one set of kernels (fractions 0..1; None when not measurable).

    ``name_level``/``name_sm``/``name_samples``: per row of the caller's name table (NaN / 0 where
    the name is unresolved).
    """

    kernel_level: float | None
    kernel_share_positive: float | None
    kernel_samples: int
    level_during_gemm: float | None
    sm_during_gemm: float | None
    gemm_samples: int
    period_ns: int | None
    name_level: np.ndarray
    name_sm: np.ndarray
    name_samples: np.ndarray


def _mean(x: np.ndarray) -> float | None:
    return float(x.mean()) if x.size else None


def tensor_levels(kernels: pd.DataFrame, row_name: np.ndarray | RowNames, gemm_name: np.ndarray,
                  gpu_metrics: pd.DataFrame | None, *, kernel_inside: np.ndarray | None = None,
                  tensor_active: Samples | None = None,
                  longest_ns: int | None = None) -> TensorLevels | None:
    """Tensor Active readings of ``kernels`` (see module docstring); None without Tensor Active.

    ``row_name``: per kernel row, its row in the name table (-1: none), as an array or a
    ``RowNames``; ``gemm_name``: per name row, whether it is GEMM-family. ``kernel_inside``: per
    Tensor Active sample, already known membership in the kernels' union (perf: the suite's
    merged busy intervals); ``tensor_active``: its ``metric_samples`` when the caller already
    took them (perf: one pass over a million samples); ``longest_ns``: the longest kernel's
    duration (ns) when the caller knows it (perf: the name table's ``max_ns``).
    """
    ta = tensor_active if tensor_active is not None else metric_samples(gpu_metrics, "tensor_active")
    if ta is None or kernels.empty:
        return None
    sm = metric_samples(gpu_metrics, "sm_active")
    k_dev = kernels["device_id"].to_numpy(dtype=np.int64)
    k_s = kernels["start_ns"].to_numpy(dtype=np.int64)
    k_e = kernels["end_ns"].to_numpy(dtype=np.int64)
    n_names = int(gemm_name.size)
    names = row_name if isinstance(row_name, RowNames) else RowNames.of(row_name, n_names)
    inside = kernel_inside if kernel_inside is not None else inside_union(ta, k_dev, k_s, k_e)
    k_vals = ta.val[inside]
    gemm_rows = names.mask(gemm_name)
    devices = np.unique(ta.dev)
    in_gemm = np.zeros(ta.size, bool)
    sm_gemm = None
    if gemm_rows.any():
        runs = running_ends_by_device(devices, k_dev, k_s, k_e, gemm_rows)
        in_gemm = inside_running(ta, runs)
        sm_gemm = None if sm is None else _mean(sm.val[inside_running(sm, runs)])
        del runs
    del gemm_rows
    period = sample_period_ns(ta)
    name_level = np.full(n_names, np.nan)
    name_sm = np.full(n_names, np.nan)
    name_n = np.zeros(n_names, dtype=np.int64)
    if longest_ns is None:
        longest_ns = int((k_e - k_s).max())
    if period and longest_ns >= RESOLVE_PERIODS * period:
        orders = device_orders(devices, k_dev, k_s, k_e)
        hit = attribute_to_kernels(ta, k_dev, k_s, k_e, period, orders)
        group = np.where(hit >= 0, names.take(np.maximum(hit, 0)), -1)
        name_level, name_n = per_group_mean(ta.val, group, n_names)
        if sm is not None:
            hit_sm = attribute_to_kernels(sm, k_dev, k_s, k_e, period, orders)
            g_sm = np.where(hit_sm >= 0, names.take(np.maximum(hit_sm, 0)), -1)
            name_sm, _ = per_group_mean(sm.val, g_sm, n_names)
    return TensorLevels(
        kernel_level=_mean(k_vals),
        kernel_share_positive=float((k_vals > 0).mean()) if k_vals.size else None,
        kernel_samples=int(k_vals.size),
        level_during_gemm=_mean(ta.val[in_gemm]),
        sm_during_gemm=sm_gemm,
        gemm_samples=int(in_gemm.sum()),
        period_ns=period,
        name_level=name_level, name_sm=name_sm, name_samples=name_n,
    )


def kernel_union_membership(gpu_metrics: pd.DataFrame, busy: dict, busy_window: tuple[int, int],
                            kernels: pd.DataFrame, tensor_active: Samples | None = None
                            ) -> np.ndarray | None:
    """Per Tensor Active sample, inside the kernels' union, reusing the suite's merged busy
    intervals inside ``busy_window`` (perf, bench: 2M kernels are not merged again); outside the
    window only kernels crossing its edges can hold a sample. None without Tensor Active.
    ``tensor_active``: the samples when already taken (as in ``tensor_levels``)."""
    ta = tensor_active if tensor_active is not None else metric_samples(gpu_metrics, "tensor_active")
    if ta is None:
        return None
    k_dev = kernels["device_id"].to_numpy(dtype=np.int64)
    k_s = kernels["start_ns"].to_numpy(dtype=np.int64)
    k_e = kernels["end_ns"].to_numpy(dtype=np.int64)
    lo, hi = int(busy_window[0]), int(busy_window[1])
    edge = (k_s < lo) | (k_e > hi)  # kernels crossing the window's edges (a few)
    e_dev, e_s, e_e = k_dev[edge], k_s[edge], k_e[edge]
    inside = np.zeros(ta.size, dtype=bool)
    for d in np.unique(ta.dev):  # a handful of devices
        sel = np.flatnonzero(ta.dev == d)
        t = ta.ts[sel]
        mid = (t >= lo) & (t < hi)
        b = busy.get(int(d))
        if b is not None:
            inside[sel[mid]] = iv.containing_interval(t[mid], b.compute_starts, b.compute_ends) >= 0
        ms, me = iv.merge_intervals(e_s[e_dev == d], e_e[e_dev == d])
        inside[sel[~mid]] = iv.containing_interval(t[~mid], ms, me) >= 0
    return inside
