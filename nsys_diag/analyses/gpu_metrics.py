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

from nsys_diag.analyses import intervals as iv
from nsys_diag.analyses._jsonsafe import fnum
from nsys_diag.analyses.base import Unavailable
from nsys_diag.model.thresholds import Thresholds

CAPTURE_HINT = ("capture GPU metrics with `nsys profile --gpu-metrics-devices=all` "
                "(`--gpu-metrics-device=all` on nsys before 2023.x)")

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


def _is_percent(unit: str) -> bool:
    return "%" in unit


def canonical_key(name: str) -> str:
    """Canonical key of a percentage metric name, '' when unknown or not a percentage."""
    if not _is_percent(metric_unit(name)):
        return ""
    for key, pat in _METRIC_PATTERNS:
        if pat.search(name):
            return key
    return ""


def metric_keys(gpu_metrics: pd.DataFrame) -> np.ndarray:
    """Canonical key per sample row ('' for other metrics) — classified once per metric name."""
    metric = gpu_metrics["metric"]
    if not isinstance(metric.dtype, pd.CategoricalDtype):
        metric = metric.astype("category")
    cats = [str(c) for c in metric.cat.categories]
    keys = np.array([canonical_key(c) for c in cats] + [""], dtype=object)
    codes = metric.cat.codes.to_numpy()
    return keys[np.where(codes >= 0, codes, len(cats))]


def _as_categorical(values: np.ndarray) -> pd.Categorical:
    """Categorical of an object array of a few distinct strings (perf: hashes the Python strings
    once, never converts them to an Arrow string column)."""
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    return pd.Categorical.from_codes(codes, categories=pd.Index(np.asarray(uniques, dtype=object),
                                                                dtype=object))


def canonical_samples(gpu_metrics: pd.DataFrame) -> pd.DataFrame:
    """Long frame ``ts_ns, device_id, key, value`` (value as a fraction 0..1) for canonical keys.

    Metrics summed into one key (NVLink user data) are added per (device, timestamp).
    """
    if gpu_metrics.empty:
        return pd.DataFrame({"ts_ns": np.array([], np.int64), "device_id": np.array([], np.int64),
                             "key": np.array([], object), "value": np.array([], float)})
    keys = metric_keys(gpu_metrics)
    keep = keys != ""
    frame = pd.DataFrame({
        "ts_ns": gpu_metrics["ts_ns"].to_numpy(dtype=np.int64)[keep],
        "device_id": gpu_metrics["device_id"].to_numpy(dtype=np.int64)[keep],
        "key": _as_categorical(keys[keep]),  # perf (bench): not a column of 1M Python strings
        "value": gpu_metrics["value"].to_numpy(dtype=float)[keep] / 100.0,
    })
    summed = frame["key"].isin(_SUMMED_KEYS).to_numpy()
    if summed.any():
        agg = (frame.loc[summed].groupby(["ts_ns", "device_id", "key"], sort=False)["value"].sum()
               .clip(upper=1.0).reset_index())
        frame = pd.concat([frame.loc[~summed], agg], ignore_index=True)
    return frame.dropna(subset=["value"])


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


def _in_windows(ts: np.ndarray, starts, ends) -> np.ndarray:
    """Mask of timestamps inside the union of ``[starts, ends)`` windows."""
    ms, me = iv.merge_intervals(starts, ends)
    return iv.containing_interval(ts, ms, me) >= 0


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
    if len(frame) < 2:
        return None
    first = frame[["metric", "device_id"]].iloc[0]
    one = frame.loc[(frame["metric"] == first["metric"]) & (frame["device_id"] == first["device_id"]),
                    "ts_ns"].to_numpy(dtype=np.int64)
    d = np.diff(np.sort(one))
    d = d[d > 0]
    return int(np.median(d)) if d.size else None


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
        frame = frame.loc[(ts >= int(window[0])) & (ts < int(window[1]))]
        if frame.empty:
            return Unavailable("no GPU metric samples inside the analysed window", CAPTURE_HINT)

    samples = canonical_samples(frame)
    overall = _means(samples)
    devices = np.unique(frame["device_id"].to_numpy(dtype=np.int64))
    per_device = tuple(
        (int(d), _means(samples.loc[samples["device_id"].to_numpy() == d])) for d in devices
    )
    per_phase: list[tuple[str, dict]] = []
    if phase_windows is not None and not phase_windows.empty and not samples.empty:
        ts = samples["ts_ns"].to_numpy(dtype=np.int64)
        for phase, win in phase_windows.groupby("phase", sort=False):  # a handful of phases
            mask = _in_windows(ts, win["start_ns"].to_numpy(), win["end_ns"].to_numpy())
            per_phase.append((str(phase), _means(samples.loc[mask])))

    metric_names = tuple(sorted({str(m) for m in frame["metric"].unique()}))
    other: dict[str, float | None] = {}
    for name in metric_names:  # a handful of metric names
        if not _is_percent(metric_unit(name)):
            vals = frame.loc[frame["metric"] == name, "value"].to_numpy(dtype=float)
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
