"""The kernels of an Nsight Compute CSV read alone (no timeline): the kernel table, the Tensor
Core share from the tensor pipe and each kernel's SM-throughput / tensor-pipe evidence.

An ncu CSV has one row per profiled launch and no timeline, so nothing here is placed in time:
the launches are laid back to back (``start_ns`` = the running sum of the durations before it)
only so that the kernel table (``analyze_kernels``: count, total, mean, median per name) and the
Tensor Core analysis can read durations the way they read an nsys export. No timeline analysis
(gaps, utilization, steps) sees these rows.

Units: durations in integer ns (``gpu__time_duration.sum`` in s × 1e9, rounded); percentages as
ncu prints them (0..100, % of peak); shares 0..1.

Heuristics, each from the counters only:

* a launch ran on Tensor Cores when its tensor-pipe metric (any of ``metrics.TENSOR_PCT_STEMS``'s
  ``.avg.pct_of_peak_sustained_*`` forms) is above 0%; ``tensor_core_share_by_time`` is the
  kernel time of such launches over all profiled kernel time (the ``counters`` input of
  ``tensor_cores.analyze_tensor_cores``);
* per kernel name, ``tensor_pipe_pct`` and ``sm_throughput_pct`` are duration-weighted means of
  its launches (None when ncu did not export the metric).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from nsys_diag.analyses.kernels.table import KernelsResult, analyze_kernels
from nsys_diag.analyses.kernels.tensor_cores import TensorCoreResult, analyze_tensor_cores
from nsys_diag.analyses.roofline.metrics import SM_PCT, TENSOR_PCT_STEMS, MetricTable, wide_metrics
from nsys_diag.model import contracts as C
from nsys_diag.model.thresholds import Thresholds

__all__ = ["NcuKernels", "ncu_kernel_frame", "ncu_kernels", "tensor_pipe_names"]

_DURATION = ("gpu__time_duration.sum", "Duration [s]")
_PCT_SUFFIXES = (".avg.pct_of_peak_sustained_active", ".avg.pct_of_peak_sustained_elapsed",
                 ".sum.pct_of_peak_sustained_active", ".sum.pct_of_peak_sustained_elapsed")


def tensor_pipe_names() -> tuple[str, ...]:
    """Every tensor-pipe utilisation metric name (% of peak) a CSV may hold, newest first."""
    return tuple(stem + suffix for stem in TENSOR_PCT_STEMS for suffix in _PCT_SUFFIXES)


@dataclass(frozen=True)
class NcuKernels:
    """The kernel rows (a ``KERNELS`` frame, launches back to back), their kernel table and their
    Tensor Core result; ``counters`` is the tensor-pipe summary (None without the metric)."""

    frame: pd.DataFrame
    kernels: KernelsResult
    tensor_cores: TensorCoreResult
    counters: dict | None


def _launch_frame(ncu_launches: pd.DataFrame, m: MetricTable) -> tuple[pd.DataFrame, np.ndarray,
                                                                        np.ndarray, np.ndarray]:
    """(KERNELS frame of the launches with a duration, their tensor-pipe %, SM throughput %,
    whether each has a tensor-pipe reading) — back to back from 0 ns."""
    launches = ncu_launches.drop_duplicates("launch_id").set_index("launch_id")
    dur_s = m.get(*_DURATION).to_numpy(np.float64)
    keep = np.isfinite(dur_s) & (dur_s > 0)
    dur = np.rint(dur_s[keep] * 1e9).astype(np.int64)
    start = np.concatenate([[0], np.cumsum(dur)[:-1]]).astype(np.int64) if dur.size else dur
    names = launches["kernel_name"].astype(str).to_numpy(dtype=object)[keep]
    out = C.KERNELS.empty().reindex(range(int(dur.size)))
    ints = {c.name: np.full(dur.size, C.MISSING, dtype=np.int64)
            for c in C.KERNELS.columns if c.dtype == "int64"}
    ints["start_ns"], ints["end_ns"] = start, start + dur
    ints["device_id"] = launches["device_id"].to_numpy(np.int64)[keep]
    for col, vals in ints.items():
        out[col] = vals
    out["name"] = pd.Categorical(names)
    out["short_name"] = pd.Categorical(names)
    out["launch_api"] = pd.Categorical(np.full(dur.size, "", dtype=object))
    tensor = m.get(*tensor_pipe_names()).to_numpy(np.float64)[keep]
    sm = m.get(*SM_PCT).to_numpy(np.float64)[keep]
    return out, tensor, sm, np.isfinite(tensor)


def _weighted(names: pd.Series, dur: np.ndarray, pct: np.ndarray) -> dict[str, float | None]:
    """Duration-weighted mean of ``pct`` per name (None where no launch has a reading)."""
    ok = np.isfinite(pct)
    if not ok.any():
        return {}
    df = pd.DataFrame({"name": names.astype(str).to_numpy()[ok], "w": dur[ok].astype(float),
                       "wx": dur[ok] * pct[ok]})
    g = df.groupby("name", sort=False)[["w", "wx"]].sum()
    return {str(n): float(wx / w) if w > 0 else None for n, w, wx in zip(g.index, g["w"], g["wx"])}


def _with_evidence(kres: KernelsResult, tensor: dict, sm: dict) -> KernelsResult:
    """The kernel table with each name's ncu readings and, where the tensor pipe was measured,
    the Tensor Core flag and its evidence from the counter (counters win over names)."""
    t = kres.table.copy()
    names = t["name"].astype(str)
    tp = names.map(tensor).astype(float)
    t["tensor_pipe_pct"] = tp
    t["sm_throughput_pct"] = names.map(sm).astype(float)
    measured = tp.notna().to_numpy()
    if measured.any():
        on = measured & (tp.fillna(0.0).to_numpy() > 0)
        t.loc[measured, "tensor_core"] = on[measured]
        t.loc[measured, "tc_basis"] = np.where(on[measured], "ncu_tensor_pipe", "ncu_no_tensor_pipe")
        t.loc[measured, "tc_evidence"] = [f"ncu: tensor pipe {v:.0f}% of peak" for v in tp[measured]]
    return replace(kres, table=t)


def ncu_kernel_frame(ncu_launches: pd.DataFrame, ncu_metrics: pd.DataFrame) -> pd.DataFrame:
    """The profiled launches as a ``KERNELS`` frame, back to back from 0 ns (the program
    detection's kernel time per name; see the module docstring)."""
    launches = ncu_launches.drop_duplicates("launch_id")
    m = MetricTable(wide_metrics(ncu_metrics, pd.Index(launches["launch_id"].to_numpy())))
    return _launch_frame(ncu_launches, m)[0]


def ncu_kernels(ncu_launches: pd.DataFrame, ncu_metrics: pd.DataFrame, *, th: Thresholds,
                max_rows: int = 200) -> NcuKernels:
    """The kernels of an ncu CSV read alone (see the module docstring)."""
    launches = ncu_launches.drop_duplicates("launch_id")
    m = MetricTable(wide_metrics(ncu_metrics, pd.Index(launches["launch_id"].to_numpy())))
    frame, tensor, sm, has_tensor = _launch_frame(ncu_launches, m)
    dur = (frame["end_ns"] - frame["start_ns"]).to_numpy(np.int64)
    kres = analyze_kernels(frame, th=th, max_rows=max_rows)
    counters = None
    total = int(dur.sum())
    if has_tensor.any() and total > 0:
        on = has_tensor & (np.nan_to_num(tensor) > 0)
        counters = {"tensor_core_share_by_time": float(dur[on].sum()) / total,
                    "source": "ncu"}
    kres = _with_evidence(kres, _weighted(frame["name"], dur, tensor),
                          _weighted(frame["name"], dur, sm))
    tc = analyze_tensor_cores(frame, None, th=th, counters=counters, name_table=kres.table)
    return NcuKernels(frame, kres, tc, counters)
