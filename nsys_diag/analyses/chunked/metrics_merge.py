"""GPU metrics (``analyze_gpu_metrics``) of a process from its chunks: ``partial_gpu_metrics``
per chunk, ``merge_gpu_metrics`` at the end — the same ``GpuMetricsResult`` as the in-memory
suite; and the sampling periods both it and the Tensor Core levels need.

Samples are the process's devices' (``suite._process_metrics``: every sample when the process
has no device) inside the window; a chunk owns those with ``ts`` in ``[lo, hi)``. Means are
Σ values / Σ samples per (group, canonical key) — overall, per device, per phase (a sample
belongs to a phase when its ``ts`` lies in one of the phase's merged windows, which are global:
the NVTX part of the phases) — so merged means equal the in-memory ones to float rounding
(relative 1e-15). A part is O(devices × phases × keys + metric names).

Sampling periods are medians of sample spacings: a part keeps, per (metric, device), the first
and last timestamp and the distinct positive spacings with their counts (``Spacing``); the merge
adds the spacings across chunk edges and takes the exact median. That is O(distinct spacings),
a handful for an evenly sampling nsys (one value in every sample trace). "The first row's metric
and device" (whose spacing the in-memory code measures) is the earliest chunk's first row: the
in-memory one when rows are in time order, as nsys writes them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.chunked.context import ChunkInputs
from nsys_diag.analyses.gpu_metrics import (CANONICAL_KEYS, CAPTURE_HINT, GpuMetricsResult,
                                            is_percent_unit, metric_categorical, canonical_samples,
                                            means_dicts, metric_unit)
from nsys_diag.analyses.steps.phases import PhasesResult
from nsys_diag.model.jsonsafe import fnum

N_KEYS = len(CANONICAL_KEYS)
_KEY = {k: i for i, k in enumerate(CANONICAL_KEYS)}


@dataclass(frozen=True)
class Spacing:
    """Sorted timestamps of one sample series in one chunk: first, last, and the distinct
    positive spacings (ns) with their counts."""

    first: int
    last: int
    values: np.ndarray
    counts: np.ndarray


def spacing_of(ts: np.ndarray) -> Spacing | None:
    if not ts.size:
        return None
    t = np.sort(ts)
    d = np.diff(t)
    values, counts = np.unique(d[d > 0], return_counts=True)
    return Spacing(int(t[0]), int(t[-1]), values.astype(np.int64), counts.astype(np.int64))


def median_spacing(series: list[Spacing | None]) -> int | None:
    """``int(np.median(positive diffs))`` of the series' timestamps all together (chunks in time
    order); None without any positive spacing."""
    vals, cnts, prev = [], [], None
    for s in series:  # one per chunk
        if s is None:
            continue
        if prev is not None and s.first > prev:
            vals.append(np.array([s.first - prev], np.int64))
            cnts.append(np.ones(1, np.int64))
        vals.append(s.values)
        cnts.append(s.counts)
        prev = s.last
    if not vals:
        return None
    v, c = np.concatenate(vals), np.concatenate(cnts)
    n = int(c.sum())
    if n == 0:
        return None
    order = np.argsort(v, kind="stable")
    v, cum = v[order], np.cumsum(c[order])
    hi = int(v[np.searchsorted(cum, n // 2 + 1)])  # the (n//2)-th value, 0-based
    if n % 2:
        return hi
    lo = int(v[np.searchsorted(cum, n // 2)])  # the (n//2 - 1)-th value
    return int((float(lo) + float(hi)) / 2)


def process_samples(gpu_metrics: pd.DataFrame | None, devices: tuple[int, ...]) -> pd.DataFrame:
    """``suite._process_metrics`` on one chunk's samples: those of the process's devices."""
    if gpu_metrics is None or not len(gpu_metrics) or not devices:
        return gpu_metrics if gpu_metrics is not None else pd.DataFrame()
    keep = np.isin(gpu_metrics["device_id"].to_numpy(), devices)
    return gpu_metrics if keep.all() else gpu_metrics.loc[keep].reset_index(drop=True)


@dataclass(frozen=True)
class MetricsPart:
    """One chunk's sums: ``sums``/``counts`` per group × key (group 0 overall, then one per
    device in ``devices``, then one per phase in ``phases``); rows of the process (``rows_all``)
    and inside the window (``rows``); per metric name its rows and, for non-percentage metrics,
    (Σ finite values, finite count); the spacings of each (metric, device) in the window and the
    first windowed row's (metric, device)."""

    devices: tuple[int, ...]
    phases: tuple[str, ...]
    sums: np.ndarray
    counts: np.ndarray
    canonical: int
    rows_all: int
    rows: int
    metric_rows: dict[str, int]
    other: dict[str, tuple[float, int]]
    spacings: dict[tuple[str | None, int], Spacing]
    first: tuple[str | None, int] | None


def _phase_groups(ts: np.ndarray, phase_windows: pd.DataFrame | None
                  ) -> tuple[tuple[str, ...], list[np.ndarray]]:
    """(phase names in first-appearance order, per phase the mask of ``ts`` inside it)."""
    if phase_windows is None or phase_windows.empty:
        return (), []
    names, masks = [], []
    for phase, win in phase_windows.groupby("phase", sort=False):  # a handful of phases
        ms, me = iv.merge_intervals(win["start_ns"].to_numpy(), win["end_ns"].to_numpy())
        names.append(str(phase))
        masks.append(iv.containing_interval(ts, ms, me) >= 0)
    return tuple(names), masks


def _sums(samples: pd.DataFrame, groups: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Σ value and sample count per (group mask, canonical key)."""
    sums = np.zeros((len(groups), N_KEYS))
    counts = np.zeros((len(groups), N_KEYS), np.int64)
    if samples.empty:
        return sums, counts
    kcat = samples["key"]
    kcat = kcat if isinstance(kcat.dtype, pd.CategoricalDtype) else kcat.astype("category")
    to_key = np.array([_KEY[str(c)] for c in kcat.cat.categories], np.int64)
    key = to_key[kcat.cat.codes.to_numpy()]
    val = samples["value"].to_numpy(float)
    for g, m in enumerate(groups):  # overall, devices, phases: a handful
        sums[g] = np.bincount(key[m], weights=val[m], minlength=N_KEYS)
        counts[g] = np.bincount(key[m], minlength=N_KEYS)
    return sums, counts


def _names_and_spacings(frame: pd.DataFrame):
    metric = metric_categorical(frame)
    codes, cats = metric.cat.codes.to_numpy(), metric.cat.categories
    names = np.array([None] + [str(c) for c in cats], dtype=object)[codes + 1]
    dev = frame["device_id"].to_numpy(np.int64)
    ts = frame["ts_ns"].to_numpy(np.int64)
    values = frame["value"].to_numpy(float)
    rows: dict[str, int] = {}
    other: dict[str, tuple[float, int]] = {}
    spacings: dict[tuple[str | None, int], Spacing] = {}
    for c in np.unique(codes).tolist():  # a handful of metric names
        sel = codes == c
        name = "nan" if c < 0 else str(cats[c])
        rows[name] = rows.get(name, 0) + int(sel.sum())
        if c < 0:
            other[name] = (0.0, 0)  # a missing name is reported without a value
        elif not is_percent_unit(metric_unit(name)):
            v = values[sel]
            fin = ~np.isnan(v)
            other[name] = (float(v[fin].sum()), int(fin.sum()))
        for d in np.unique(dev[sel]).tolist():  # a handful of devices
            sp = spacing_of(ts[sel & (dev == d)])
            if sp is not None:
                spacings[(None if c < 0 else str(cats[c]), int(d))] = sp
    first = (names[0], int(dev[0])) if len(frame) else None
    return rows, other, spacings, first


def partial_gpu_metrics(ci: ChunkInputs, *, phase_windows: pd.DataFrame | None = None
                        ) -> MetricsPart:
    """The chunk's GPU-metric sums. ``phase_windows``: the process's phase instances
    (``PhasesResult.phase_windows()``); by default the chunk's phases' (their NVTX part is
    global)."""
    if phase_windows is None and isinstance(ci.phases, PhasesResult):
        phase_windows = ci.phases.phase_windows()
    every = process_samples(ci.frames.get("gpu_metrics"), ci.devices)
    rows_all = int(len(every))
    frame = every
    if rows_all:
        ts = every["ts_ns"].to_numpy(np.int64)
        inside = (ts >= ci.window.start_ns) & (ts < ci.window.end_ns)
        frame = every if inside.all() else every.loc[inside].reset_index(drop=True)
    samples = canonical_samples(frame)
    devices = tuple(int(d) for d in np.unique(frame["device_id"].to_numpy())) if len(frame) else ()
    s_ts = samples["ts_ns"].to_numpy(np.int64)
    s_dev = samples["device_id"].to_numpy(np.int64)
    phases, masks = _phase_groups(s_ts, phase_windows)
    groups = [np.ones(s_ts.size, bool), *[s_dev == d for d in devices], *masks]
    sums, counts = _sums(samples, groups)
    rows, other, spacings, first = (_names_and_spacings(frame) if len(frame)
                                    else ({}, {}, {}, None))
    return MetricsPart(devices, phases, sums, counts, int(len(samples)), rows_all,
                       int(len(frame)), rows, other, spacings, first)


def _means(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def merge_gpu_metrics(parts: list[MetricsPart], *, window: tuple[int, int]
                      ) -> GpuMetricsResult | Unavailable:
    """The process's ``GpuMetricsResult``; ``window``: the analysed window (ns)."""
    if not sum(p.rows_all for p in parts):
        return Unavailable("no GPU metrics were sampled in this capture", CAPTURE_HINT)
    live = [p for p in parts if p.rows]
    if not live:
        return Unavailable("no GPU metric samples inside the analysed window", CAPTURE_HINT)
    devices = sorted({d for p in live for d in p.devices})
    phases = next((p.phases for p in parts if p.phases), ())
    n_groups = 1 + len(devices) + len(phases)
    sums = np.zeros((n_groups, N_KEYS))
    counts = np.zeros((n_groups, N_KEYS), np.int64)
    for p in live:  # one per chunk
        rows = [0, *[1 + devices.index(d) for d in p.devices],
                *[1 + len(devices) + phases.index(ph) for ph in p.phases]]
        sums[rows] += p.sums
        counts[rows] += p.counts
    dicts = means_dicts(_means(sums, counts))
    overall = dicts[0]
    per_device = (((devices[0], dict(overall)),) if len(devices) == 1
                  else tuple(zip(devices, dicts[1:1 + len(devices)])))
    canonical = sum(p.canonical for p in live)
    per_phase = tuple(zip(phases, dicts[1 + len(devices):])) if canonical and phases else ()
    metric_rows: dict[str, int] = {}
    other: dict[str, list] = {}
    for p in live:  # one per chunk
        for k, v in p.metric_rows.items():
            metric_rows[k] = metric_rows.get(k, 0) + v
        for k, (s, n) in p.other.items():
            acc = other.setdefault(k, [0.0, 0])
            acc[0] += s
            acc[1] += n
    names = tuple(sorted(metric_rows))
    first = live[0].first
    period = None
    if sum(p.rows for p in live) >= 2 and first is not None and first[0] is not None:
        period = median_spacing([p.spacings.get(first) for p in live])
    return GpuMetricsResult(
        overall=overall, per_device=per_device, per_phase=per_phase, metrics=names,
        sample_count=sum(p.rows for p in live), sample_period_ns=period,
        other={k: (fnum(s / n) if n else None) for k, (s, n) in
               ((k, other[k]) for k in names if k in other)},
        window=(int(window[0]), int(window[1])))
