"""Sampled GPU metrics (nsys ``--gpu-metrics-devices``): SM, Tensor, DRAM, PCIe, NVLink activity.

Metric names are matched with tolerant regexes (names differ across nsys versions and GPU
architectures, e.g. ``SM Active`` vs ``SMs Active``, Turing ``Tensor Active / FP16 Active``) and
keyed by the bracketed unit: only percentage metrics (``[Throughput %]``, ``[%]``) become
canonical keys, reported as **fractions 0..1** (value / 100). Other units (``[MHz]``, ``[Avg …]``)
are reported raw, per metric name, in ``other``.

Canonical keys: ``sm_active``, ``tensor_active``, ``dram_read``, ``dram_write``,
``dram_bandwidth`` (= read + write, capped at 1), ``pcie_rx``, ``pcie_tx``, ``nvlink_rx``,
``nvlink_tx`` (sum of the user-data request/response metrics of a direction, per sample, capped at
1), ``gr_active``, ``gpu_active``, ``sm_issue``, ``warps_in_flight``.

Means are sample means (samples are ~evenly spaced, default ≈10 kHz, so a sample mean is a time
mean). "overall" averages all devices' samples; "per_device" one device; "per_phase" the samples
whose timestamp falls inside any window of the phase (windows merged per phase, membership by
``searchsorted`` — vectorised).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.analyses.timeline.spacing import Spacing, median_spacing, spacing_of
from nsys_diag.analyses.timeline.arrays import all_equal, contiguous_run
from nsys_diag.model.jsonsafe import fnum
from nsys_diag.analyses.base import Unavailable, is_available
from nsys_diag.analyses.engine.declaration import Declaration, FinishContext, declare
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import HINT_GPU_METRICS
from typing import TYPE_CHECKING
from nsys_diag.analyses.steps.phases import PhasesResult
from nsys_diag.model.schema_types import List, Map, Obj, Section, Span

if TYPE_CHECKING:  # the span type only: the engine's context imports the analyses
    from nsys_diag.analyses.engine.context import ChunkInputs

CAPTURE_HINT = HINT_GPU_METRICS

CANONICAL_KEYS = ("sm_active", "tensor_active", "dram_bandwidth", "dram_read", "dram_write",
                  "pcie_rx", "pcie_tx", "nvlink_rx", "nvlink_tx", "gr_active", "gpu_active",
                  "sm_issue", "warps_in_flight")
"""Keys of every canonical metric dict (value None when not sampled)."""

_METRIC_PATTERNS: tuple[tuple[str, re.Pattern], ...] = tuple(
    (key, re.compile(p, re.IGNORECASE)) for key, p in (
        ("sm_active", r"^\s*SMs?\s+Active"),
        ("tensor_active", r"^\s*Tensor\s+(?:Pipe\s+)?Active"),
        ("dram_read", r"DRAM\s+Read\s+(?:Bandwidth|Throughput)"),
        ("dram_write", r"DRAM\s+Write\s+(?:Bandwidth|Throughput)"),
        ("pcie_rx", r"PCIe\s+RX\s+Throughput"),
        ("pcie_tx", r"PCIe\s+TX\s+Throughput"),
        ("nvlink_rx", r"^\s*NVLink\s+RX(?!.*Protocol)"),
        ("nvlink_tx", r"^\s*NVLink\s+TX(?!.*Protocol)"),
        ("gr_active", r"^\s*GR\s+Active"),
        ("gpu_active", r"^\s*GPU\s+Active"),
        ("sm_issue", r"^\s*SM\s+Issue"),
        ("warps_in_flight", r"^\s*Compute\s+Warps\s+in\s+Flight"),
    )
)
_SUMMED_KEYS = ("nvlink_rx", "nvlink_tx")  # several metrics per sample add up to one key
_UNIT_RE = re.compile(r"\[([^\]]*)\]\s*$")


def metric_unit(name: str) -> str:
    """The bracketed unit of a metric name ('' when none)."""
    m = _UNIT_RE.search(name)
    return m.group(1).strip() if m else ""


def is_percent_unit(unit: str) -> bool:
    return "%" in unit


def canonical_key(name: str) -> str:
    """Canonical key of a percentage metric name, '' when unknown or not a percentage."""
    if not is_percent_unit(metric_unit(name)):
        return ""
    for key, pat in _METRIC_PATTERNS:
        if pat.search(name):
            return key
    return ""


_KEY_INDEX = {k: i for i, k in enumerate(CANONICAL_KEYS)}


def metric_categorical(gpu_metrics: pd.DataFrame) -> pd.Series:
    metric = gpu_metrics["metric"]
    return metric if isinstance(metric.dtype, pd.CategoricalDtype) else metric.astype("category")


def metric_key_index(gpu_metrics: pd.DataFrame) -> np.ndarray:
    """Per sample row, the index into ``CANONICAL_KEYS`` of its canonical key, -1 for other
    metrics (int8) — classified once per metric name (perf, bench: no 1M-element object array)."""
    metric = metric_categorical(gpu_metrics)
    table = np.array([_KEY_INDEX.get(canonical_key(str(c)), -1) for c in metric.cat.categories]
                     + [-1], dtype=np.int8)
    return table[metric.cat.codes.to_numpy()]  # code -1 (missing name) → the trailing -1


def canonical_samples(gpu_metrics: pd.DataFrame) -> pd.DataFrame:
    """Long frame ``ts_ns, device_id, key, value`` (value as a fraction 0..1) for canonical keys.

    ``key`` is categorical (categories: the keys present, in ``CANONICAL_KEYS`` order). Metrics
    summed into one key (NVLink user data) are added per (device, timestamp).
    """
    if gpu_metrics.empty:
        return pd.DataFrame({"ts_ns": np.array([], np.int64), "device_id": np.array([], np.int64),
                             "key": np.array([], object), "value": np.array([], float)})
    kidx = metric_key_index(gpu_metrics)
    keep = kidx >= 0
    every = bool(keep.all())

    def col(name: str, dtype) -> np.ndarray:
        a = gpu_metrics[name].to_numpy(dtype=dtype)
        return a if every else a[keep]  # perf (bench): no copy when every metric is canonical

    kk = kidx if every else kidx[keep]
    present = np.flatnonzero(np.bincount(kk, minlength=len(CANONICAL_KEYS)))
    remap = np.full(len(CANONICAL_KEYS), -1, np.int8)
    remap[present] = np.arange(present.size)
    frame = pd.DataFrame({
        "ts_ns": col("ts_ns", np.int64),
        "device_id": col("device_id", np.int64),
        # perf (bench): categorical from codes, not a column of 1M Python strings
        "key": pd.Categorical.from_codes(remap[kk], categories=pd.Index(
            [CANONICAL_KEYS[i] for i in present], dtype=object)),
        "value": col("value", float) / 100.0,
    }, copy=False)
    summed = np.isin(kk, [_KEY_INDEX[k] for k in _SUMMED_KEYS])
    if summed.any():
        agg = (frame.loc[summed].groupby(["ts_ns", "device_id", "key"], sort=False)["value"].sum()
               .clip(upper=1.0).reset_index())
        frame = pd.concat([frame.loc[~summed], agg], ignore_index=True)
    if not np.isnan(frame["value"].to_numpy()).any():
        return frame  # perf (bench): dropna would copy the whole frame
    return frame.dropna(subset=["value"])


def _grouped_means(samples: pd.DataFrame, group: np.ndarray | None = None, n_groups: int = 1
                   ) -> list[dict[str, float | None]]:
    """``_means`` of each group of sample rows (``group``: 0..n_groups-1 per row, None = one
    group) in one pass. A (group, key) mean is pandas' groupby mean over that group's rows in row
    order, so each equals ``_means`` of the group's rows exactly."""
    if samples.empty or n_groups == 0:
        return [_means(samples.iloc[:0]) for _ in range(n_groups)]
    n_keys = len(CANONICAL_KEYS)
    kcat = samples["key"]
    kcat = kcat if isinstance(kcat.dtype, pd.CategoricalDtype) else kcat.astype("category")
    # perf (bench): codes in the smallest integer type pandas keeps for that many categories
    # (int8 up to 126): no 8 MB int64 codes for a million samples, no conversion in from_codes
    dtype = _code_dtype(n_groups * n_keys)
    to_key: np.ndarray = np.array([_KEY_INDEX[str(c)] for c in kcat.cat.categories], dtype)
    codes = to_key[kcat.cat.codes.to_numpy()]
    if group is not None:
        offset: np.ndarray = np.asarray(group).astype(dtype)
        offset *= n_keys  # < n_groups * n_keys: fits the type
        codes += offset
        del offset
    # perf (bench): one groupby on a categorical with every (group, key) as a category: no
    # hashing, no per-group copies of the samples (codes are in range by construction)
    grouper = pd.Categorical.from_codes(codes, categories=np.arange(n_groups * n_keys),
                                        validate=False)
    means = (pd.Series(samples["value"].to_numpy(), copy=False)
             .groupby(grouper, sort=True, observed=False).mean().to_numpy().reshape(n_groups, n_keys))
    return means_dicts(means)


def means_dicts(means: np.ndarray) -> list[dict[str, float | None]]:
    """Per row of ``means`` (groups × ``CANONICAL_KEYS``, NaN where a key has no sample), the
    canonical-key dict of ``_means`` (``dram_bandwidth`` = read + write, capped at 1)."""
    n_groups = means.shape[0]
    out = []
    for g in range(n_groups):  # a handful of devices / phases
        d: dict[str, float | None] = {k: fnum(means[g, i]) for i, k in enumerate(CANONICAL_KEYS)}
        r, w = d["dram_read"], d["dram_write"]
        d["dram_bandwidth"] = None  # read + write, as in _means
        if r is not None or w is not None:
            d["dram_bandwidth"] = min(1.0, (r or 0.0) + (w or 0.0))
        out.append(d)
    return out


def _code_dtype(n_categories: int) -> type:
    """The integer type pandas stores ``n_categories`` categorical codes in (int8 below 127)."""
    for dtype in (np.int8, np.int16, np.int32):
        if n_categories < np.iinfo(dtype).max:
            return dtype
    return np.int64


def _means(samples: pd.DataFrame) -> dict[str, float | None]:
    """Canonical-key → mean fraction; ``dram_bandwidth`` = read + write (capped at 1)."""
    out: dict[str, float | None] = {k: None for k in CANONICAL_KEYS}
    if not samples.empty:
        means = samples.groupby("key", sort=False)["value"].mean()
        for key, val in means.items():
            out[str(key)] = fnum(val)
    r, w = out["dram_read"], out["dram_write"]
    if r is not None or w is not None:
        out["dram_bandwidth"] = min(1.0, (r or 0.0) + (w or 0.0))
    return out


@dataclass(frozen=True)
class GpuMetricsResult:
    """Mean GPU metric values (fractions 0..1) overall, per device and per phase.

    ``metrics``: every metric name sampled; ``other``: mean raw value (in the bracketed unit) of
    non-percentage metrics, keyed by full name; ``sample_period_ns``: median spacing of one
    metric's samples on one device.
    """

    overall: dict
    per_device: tuple[tuple[int, dict], ...]
    per_phase: tuple[tuple[str, dict], ...]
    metrics: tuple[str, ...]
    sample_count: int
    sample_period_ns: int | None
    other: dict = field(default_factory=dict)
    window: tuple[int, int] | None = None

    available = True

    def to_json(self) -> dict:
        return {
            "available": True,
            "overall": dict(self.overall),
            "per_device": [{"device_id": int(d), **m} for d, m in self.per_device],
            "per_phase": [{"phase": str(p), **m} for p, m in self.per_phase],
            "metrics": list(self.metrics),
            "other": {k: fnum(v) for k, v in self.other.items()},
            "sample_count": int(self.sample_count),
            "sample_period_ns": self.sample_period_ns,
            "window": None if self.window is None else [int(self.window[0]), int(self.window[1])],
        }


def _sample_period(frame: pd.DataFrame) -> int | None:
    """Median spacing (ns) of the first row's metric on the first row's device."""
    if len(frame) < 2:
        return None
    codes = metric_categorical(frame).cat.codes.to_numpy()
    if codes[0] < 0:  # a missing metric name matches nothing
        return None
    dev = frame["device_id"].to_numpy()
    one = frame["ts_ns"].to_numpy(dtype=np.int64)[(codes == codes[0]) & (dev == dev[0])]
    d = np.diff(np.sort(one))
    d = d[d > 0]
    return int(np.median(d)) if d.size else None


def _phase_labels(ts: np.ndarray, windows: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray | None:
    """Per timestamp, the index of the phase whose (merged) windows contain it, -1 for none —
    one binary search over every phase's windows when no two phases overlap (the exclusive
    phase instances never do); None when they overlap."""
    s = np.concatenate([w[0] for w in windows]) if windows else np.zeros(0, np.int64)
    e = np.concatenate([w[1] for w in windows]) if windows else np.zeros(0, np.int64)
    phase = np.repeat(np.arange(len(windows)), [w[0].size for w in windows])
    order = np.argsort(s, kind="stable")
    s, e, phase = s[order], e[order], phase[order]
    if s.size > 1 and not (s[1:] >= e[:-1]).all():
        return None
    if s.size == 0:
        return np.full(ts.size, -1, np.int64)
    which = iv.containing_interval(ts, s, e)
    return np.append(phase, -1)[which]  # window → phase; -1 (no window) picks the trailing -1


def analyze_gpu_metrics(gpu_metrics: pd.DataFrame, phase_windows: pd.DataFrame | None = None, *,
                        th: Thresholds, window: tuple[int, int] | None = None
                        ) -> GpuMetricsResult | Unavailable:
    """Mean SM/Tensor/DRAM/PCIe/NVLink activity (see module docstring).

    ``phase_windows``: columns ``phase, start_ns, end_ns`` (several windows per phase allowed).
    ``window``: keep only samples with ``start <= ts_ns < end``. ``th`` is accepted for interface
    symmetry (no threshold is applied here; the verdict compares these means with thresholds).
    """
    del th  # no rule here
    if gpu_metrics is None or gpu_metrics.empty:
        return Unavailable("no GPU metrics were sampled in this capture", CAPTURE_HINT)
    frame = gpu_metrics
    if window is not None:
        ts = frame["ts_ns"].to_numpy(dtype=np.int64)
        inside = (ts >= int(window[0])) & (ts < int(window[1]))
        run = contiguous_run(inside)  # perf (bench): samples in time order make the window a slice
        frame = frame.iloc[run[0]:run[1]] if run is not None else frame.loc[inside]
        if frame.empty:
            return Unavailable("no GPU metric samples inside the analysed window", CAPTURE_HINT)

    samples = canonical_samples(frame)
    overall = _grouped_means(samples)[0]
    frame_dev = frame["device_id"].to_numpy(dtype=np.int64)
    if all_equal(frame_dev):  # perf (bench): one GPU: its means are the overall means
        per_device: tuple[tuple[int, dict[str, float | None]], ...] = (
            (int(frame_dev[0]), dict(overall)),)
    else:
        devices = np.unique(frame_dev)
        s_dev = samples["device_id"].to_numpy(dtype=np.int64)
        per_device = tuple(zip((int(d) for d in devices), _grouped_means(
            samples, np.searchsorted(devices, s_dev), devices.size)))
    per_phase: list[tuple[str, dict]] = []
    if phase_windows is not None and not phase_windows.empty and not samples.empty:
        ts = samples["ts_ns"].to_numpy(dtype=np.int64)
        names, windows = [], []
        for phase, win in phase_windows.groupby("phase", sort=False):  # a handful of phases
            names.append(str(phase))
            windows.append(iv.merge_intervals(win["start_ns"].to_numpy(), win["end_ns"].to_numpy()))
        label = _phase_labels(ts, windows)
        if label is not None:
            label += 1  # group 0: samples outside every phase
            per_phase = list(zip(names, _grouped_means(samples, label, len(names) + 1)[1:]))
        else:
            for name, (ms, me) in zip(names, windows):  # a handful of phases
                mask = iv.containing_interval(ts, ms, me) >= 0
                per_phase.append((name, _means(samples.loc[mask])))

    metric = metric_categorical(frame)
    codes, cats = metric.cat.codes.to_numpy(), metric.cat.categories
    count = np.bincount(codes.astype(np.intp) + 1, minlength=len(cats) + 1)  # [0]: missing name
    code_of = {str(cats[c]): c for c in np.flatnonzero(count[1:])}
    metric_names = tuple(sorted(set(code_of) | ({"nan"} if count[0] else set())))
    values = frame["value"].to_numpy(dtype=float)
    other: dict[str, float | None] = {}
    for name in metric_names:  # a handful of metric names
        if not is_percent_unit(metric_unit(name)):
            vals = values[codes == code_of[name]] if name in code_of else values[:0]
            other[name] = fnum(np.nanmean(vals)) if vals.size else None
    return GpuMetricsResult(
        overall=overall,
        per_device=per_device,
        per_phase=tuple(per_phase),
        metrics=metric_names,
        sample_count=int(len(frame)),
        sample_period_ns=_sample_period(frame),
        other=other,
        window=None if window is None else (int(window[0]), int(window[1])),
    )


# ---------------------------------------------------------------------- streamed: partial per span, merge
# GPU metrics (``analyze_gpu_metrics``) of a process from its chunks: ``partial_gpu_metrics``
# per chunk, ``merge_gpu_metrics`` at the end — the same ``GpuMetricsResult`` as the in-memory
# suite; and the sampling periods both it and the Tensor Core levels need.
#
# Samples are the process's devices' (``suite._process_metrics``: every sample when the process
# has no device) inside the window; a chunk owns those with ``ts`` in ``[lo, hi)``. Means are
# Σ values / Σ samples per (group, canonical key) — overall, per device, per phase (a sample
# belongs to a phase when its ``ts`` lies in one of the phase's merged windows, which are global:
# the NVTX part of the phases) — so merged means equal the in-memory ones to float rounding
# (relative 1e-15). A part is O(devices × phases × keys + metric names).
#
# Sampling periods are medians of sample spacings: a part keeps, per (metric, device), the first
# and last timestamp and the distinct positive spacings with their counts (``Spacing``); the merge
# adds the spacings across chunk edges and takes the exact median. That is O(distinct spacings),
# a handful for an evenly sampling nsys (one value in every sample trace). "The first row's metric
# and device" (whose spacing the in-memory code measures) is the earliest chunk's first row: the
# in-memory one when rows are in time order, as nsys writes them.
N_KEYS = len(CANONICAL_KEYS)


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
    to_key = np.array([_KEY_INDEX[str(c)] for c in kcat.cat.categories], np.int64)
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


def _span_means(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
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
    dicts = means_dicts(_span_means(sums, counts))
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


# -------------------------------------------------------------------------------- declaration
def _finish_gpu_metrics(states, ctx: FinishContext) -> GpuMetricsResult | Unavailable:
    w = ctx.glob.window
    return merge_gpu_metrics(list(states), window=(w.start_ns, w.end_ns))


def _whole_gpu_metrics(p, phases) -> GpuMetricsResult | Unavailable:
    return analyze_gpu_metrics(p.metrics, phases.phase_windows() if is_available(phases) else None,
                               th=p.th, window=p.window_ns)


def metrics(read: tuple[str, ...] = ("sm_active", "tensor_active", "dram_bandwidth", "pcie_rx",
                                     "pcie_tx"), **keys) -> Obj:
    """The spec of a row of GPU metric means (``CANONICAL_KEYS``; None: not sampled)."""
    return Obj({**keys, **{k: "num?" for k in read}},
               carried={k: "num?" for k in CANONICAL_KEYS if k not in read})


METRICS_ROW = metrics(phase="str")
"""One ``gpu_metrics.per_phase`` row (the renderers also normalize one alone)."""
GPU_METRICS_SPEC = Section(Obj({
    "per_device": List(metrics(read=(), device_id="int")), "overall": metrics(),
    "per_phase": List(METRICS_ROW)},
    carried={"metrics": List("str"), "other": Map("num?"), "sample_count": "int",
             "sample_period_ns": "int?", "window": Span()}),
    "No GPU metrics were sampled.", HINT_GPU_METRICS, null=True, per_process=True)
"""The ``gpu_metrics`` section of the analysis JSON (model/schema_types.py)."""

GPU_METRICS = declare(Declaration(
    "gpu_metrics", section="gpu_metrics", spec=GPU_METRICS_SPEC,
    partial=lambda span, **_: partial_gpu_metrics(span),
    finish=_finish_gpu_metrics, rank=5, pooled=True, whole_reads=("phases",),
    whole=_whole_gpu_metrics))
"""Sampled GPU metrics over the window, per device and phase (the ``gpu_metrics`` section)."""
