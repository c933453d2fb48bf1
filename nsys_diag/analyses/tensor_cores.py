"""Tensor Core use: evidence fusion of kernel names, nsys GPU metrics and ncu counters.

Sources, strongest first (the strongest available one gives ``share_of_kernel_time``; the others
are reported beside it and disagreements are said out loud):

1. ``counters`` — ncu per-kernel tensor-pipe counters summarised by the caller as
   ``{"tensor_core_share_by_time": float 0..1, "source": "ncu"}`` (kernel time in kernels with
   tensor-pipe activity / kernel time). Confidence ``high``.
2. nsys GPU metrics ``Tensor Active [Throughput %]``: samples taken while a kernel ran on that
   device (union of kernel intervals per device). Share = fraction of those samples with
   Tensor Active > 0 (samples are integer %, so > 0 means ≥ 1 %): an estimate of the share of
   kernel time with Tensor Core activity. Also the mean Tensor Active during kernels.
   Confidence ``high``.
3. Kernel names (``kernel_catalog``): Σ duration of Tensor-Core-named kernels / Σ kernel duration.
   Confidence ``medium`` when the names decide (TC or CUDA cores) for at least
   ``th.tc_name_known_min_share`` of the time of GEMM/conv/attention and generated kernels, else
   ``low``.

GEMM figures always come from names: ``gemm_share`` = GEMM+conv+attention time / kernel time;
``tc_share_of_gemm`` = Tensor-Core-named part of that time; ``non_tc_gemm_share`` = GEMM/conv
kernels whose names show a CUDA-core path (``*sgemm*``, ``*_ffma``, ``gemv``, ``scudnn`` …) / kernel
time — listed in ``non_tc_gemm_kernels`` ("check dtype/AMP/alignment"). Kernels the names cannot
decide are listed apart (``unknown_tc_kernels``), never counted as missing Tensor Cores.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys_diag.analyses import intervals as iv
from nsys_diag.model.jsonsafe import fnum, ratio
from nsys_diag.analyses.gpu_metrics import CANONICAL_KEYS, metric_key_index
from nsys_diag.analyses.kernel_catalog import MATMUL_CATEGORIES, display_name
from nsys_diag.analyses.kernels import filter_window, kernel_name_stats
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import HINT_CAPTURE_CUDA_NVTX

LIST_LIMIT = 20
"""Rows kept in each kernel list of the JSON."""

NON_TC_ADVICE = ("GEMM/conv kernels ran on CUDA cores: check dtype (FP32 → AMP bf16/fp16 or "
                 "TF32), autocast coverage and shape alignment (multiples of 8/16)")


@dataclass(frozen=True)
class TensorCoreResult:
    """Tensor Core use. Shares are fractions 0..1 of total kernel time unless named otherwise.

    ``source``: "ncu" | "gpu_metrics" | "kernel_names" (what ``share_of_kernel_time`` comes from);
    ``tensor_active_mean``: mean GPU-metrics Tensor Active during kernels (fraction, None if not
    sampled); kernel lists hold dicts {name, short_name, share, category, evidence}.
    """

    available: bool
    share_of_kernel_time: float | None = None
    source: str = "kernel_names"
    confidence: str = "low"
    evidence: tuple[str, ...] = ()
    name_share_of_kernel_time: float | None = None
    metrics_share_of_kernel_time: float | None = None
    counters_share_of_kernel_time: float | None = None
    tensor_active_mean: float | None = None
    tensor_active_samples: int = 0
    gemm_share: float | None = None
    tc_share_of_gemm: float | None = None
    non_tc_gemm_share: float | None = None
    non_tc_attention_share: float | None = None
    unknown_tc_share: float | None = None
    non_tc_gemm_kernels: tuple[dict, ...] = ()
    unknown_tc_kernels: tuple[dict, ...] = ()
    tc_kernels: tuple[dict, ...] = ()
    kernel_total_ns: int = 0
    reason: str = ""
    hint: str = ""
    advice: str = ""
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        out = {
            "available": bool(self.available),
            "share_of_kernel_time": fnum(self.share_of_kernel_time),
            "source": self.source,
            "confidence": self.confidence,
            "evidence": "; ".join(self.evidence),
            "evidence_list": list(self.evidence),
            "name_share_of_kernel_time": fnum(self.name_share_of_kernel_time),
            "metrics_share_of_kernel_time": fnum(self.metrics_share_of_kernel_time),
            "counters_share_of_kernel_time": fnum(self.counters_share_of_kernel_time),
            "tensor_active_mean": fnum(self.tensor_active_mean),
            "tensor_active_samples": int(self.tensor_active_samples),
            "gemm_share": fnum(self.gemm_share),
            "tc_share_of_gemm": fnum(self.tc_share_of_gemm),
            "non_tc_gemm_share": fnum(self.non_tc_gemm_share),
            "non_tc_attention_share": fnum(self.non_tc_attention_share),
            "unknown_tc_share": fnum(self.unknown_tc_share),
            "non_tc_gemm_kernels": [dict(k) for k in self.non_tc_gemm_kernels],
            "unknown_tc_kernels": [dict(k) for k in self.unknown_tc_kernels],
            "tc_kernels": [dict(k) for k in self.tc_kernels],
            "advice": self.advice,
        }
        if not self.available:
            out["reason"] = self.reason
            out["hint"] = self.hint
        return out


def _kernel_list(rows: pd.DataFrame) -> tuple[dict, ...]:
    return tuple(
        {"name": str(r["name"]), "short_name": str(r["short_name"]),
         "label": display_name(str(r["name"]), str(r["short_name"])),
         "share": fnum(r["share"]), "total_ns": int(r["total_ns"]),
         "category": str(r["category"]), "evidence": str(r["tc_evidence"])}
        for r in rows.head(LIST_LIMIT).to_dict("records")
    )


def _tensor_active_during_kernels(kernels: pd.DataFrame, gpu_metrics: pd.DataFrame | None,
                                  busy: dict | None = None, busy_window: tuple[int, int] | None = None
                                  ) -> tuple[float | None, float | None, int]:
    """(mean Tensor Active, fraction of samples with Tensor Active > 0, samples used) while kernels
    ran on the sample's device; (None, None, 0) when Tensor Active was not sampled.

    ``busy``/``busy_window``: see ``analyze_tensor_cores``.
    """
    if gpu_metrics is None or gpu_metrics.empty or kernels.empty:
        return None, None, 0
    is_ta = metric_key_index(gpu_metrics) == CANONICAL_KEYS.index("tensor_active")
    if not is_ta.any():
        return None, None, 0
    # perf (bench): the three columns it reads, not a copy of the whole frame
    ts = gpu_metrics["ts_ns"].to_numpy(dtype=np.int64)[is_ta]
    dev = gpu_metrics["device_id"].to_numpy(dtype=np.int64)[is_ta]
    val = gpu_metrics["value"].to_numpy(dtype=float)[is_ta]
    inside = np.zeros(ts.size, dtype=bool)
    k_dev = kernels["device_id"].to_numpy(dtype=np.int64)
    k_s = kernels["start_ns"].to_numpy(dtype=np.int64)
    k_e = kernels["end_ns"].to_numpy(dtype=np.int64)
    if busy is not None and busy_window is not None:
        lo, hi = int(busy_window[0]), int(busy_window[1])
        edge = (k_s < lo) | (k_e > hi)  # kernels crossing the window's edges (a few)
        e_dev, e_s, e_e = k_dev[edge], k_s[edge], k_e[edge]
        for d in np.unique(dev):  # a handful of devices
            sel = np.flatnonzero(dev == d)
            t = ts[sel]
            b = busy.get(int(d))
            # inside the window the kernels' union is the busy compute union; outside it only
            # kernels crossing an edge can hold a sample
            mid = (t >= lo) & (t < hi)
            if b is not None:
                inside[sel[mid]] = iv.containing_interval(t[mid], b.compute_starts,
                                                          b.compute_ends) >= 0
            ms, me = iv.merge_intervals(e_s[e_dev == d], e_e[e_dev == d])
            inside[sel[~mid]] = iv.containing_interval(t[~mid], ms, me) >= 0
    else:
        for d in np.unique(dev):  # a handful of devices
            ms, me = iv.merge_intervals(k_s[k_dev == d], k_e[k_dev == d])
            sel = dev == d
            inside[sel] = iv.containing_interval(ts[sel], ms, me) >= 0
    inside &= np.isfinite(val)
    n = int(inside.sum())
    if n == 0:
        return None, None, 0
    return float(val[inside].mean()) / 100.0, float((val[inside] > 0).mean()), n


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _tc_share_and_evidence(tc_rows: pd.DataFrame, name_share: float, counters_share: float | None,
                           counters_source: str, metrics: tuple, known_frac: float,
                           unknown_share: float, th: Thresholds) -> tuple[float, str, str, list[str]]:
    """(Tensor Core share of kernel time, its source, confidence, evidence lines): hardware
    counters (ncu) win over GPU metrics (Tensor Active during kernels), which win over the
    kernel-name heuristic (confidence by the share of GEMM time the names can decide)."""
    ta_mean, ta_share, ta_n = metrics
    evidence: list[str] = []
    if len(tc_rows):
        top = tc_rows.head(3)
        evidence.append("Tensor Core kernels by name: " + ", ".join(
            f"{display_name(str(n), str(s), 48)} ({_pct(sh)})"
            for n, s, sh in zip(top["name"], top["short_name"], top["share"])))
    else:
        evidence.append("no kernel name shows a Tensor Core path")
    names_line = f"kernel names: {_pct(name_share)} of kernel time in Tensor Core kernels"

    if counters_share is not None:
        share, source, confidence = counters_share, counters_source, "high"
        evidence.insert(0, f"{source} counters: {_pct(counters_share)} of kernel time in kernels "
                           f"with tensor-pipe activity (counters win over names; {names_line})")
        if ta_share is not None:
            evidence.append(f"GPU metrics: Tensor Active > 0 in {_pct(ta_share)} of samples "
                            f"during kernels (mean {_pct(ta_mean)})")
    elif ta_share is not None:
        share, source, confidence = ta_share, "gpu_metrics", "high"
        evidence.insert(0, f"GPU metrics: Tensor Active > 0 in {_pct(ta_share)} of {ta_n} samples "
                           f"taken while kernels ran (mean Tensor Active {_pct(ta_mean)}); "
                           f"metrics win over names ({names_line})")
        if (name_share > 0) != (ta_share > 0):
            evidence.append("kernel names and GPU metrics disagree; the GPU metrics are used")
    else:
        share, source = name_share, "kernel_names"
        confidence = "medium" if known_frac >= th.tc_name_known_min_share else "low"
        evidence.insert(0, f"{names_line} (name heuristic; no GPU metrics or ncu counters)")
        if unknown_share:
            evidence.append(f"names cannot decide for {_pct(unknown_share)} of kernel time "
                            "(generated or unmarked GEMM kernels)")
    return share, source, confidence, evidence


def analyze_tensor_cores(kernels: pd.DataFrame, gpu_metrics: pd.DataFrame | None, *,
                         th: Thresholds, counters: dict | None = None,
                         window: tuple[int, int] | None = None,
                         name_table: pd.DataFrame | None = None,
                         busy: dict | None = None,
                         busy_window: tuple[int, int] | None = None) -> TensorCoreResult:
    """Tensor Core use with evidence and confidence (see module docstring).

    ``name_table``: ``kernel_name_stats`` of the same kernels when the caller already has it
    (perf: the kernels analysis computes it too; ignored when ``window`` is given).
    ``busy``/``busy_window``: ``device_busy(…, Window(*busy_window))`` of a frame whose kernels
    overlapping ``busy_window`` are exactly ``kernels`` (perf, bench: the merged kernel
    intervals are reused instead of merging 2M kernels again; ignored when ``window`` is given).
    """
    k = filter_window(kernels, window)
    table = name_table if name_table is not None and window is None else kernel_name_stats(k)
    total = int(table["total_ns"].sum())
    if total <= 0:
        return TensorCoreResult(
            available=False, reason="no GPU kernels in the analysed window",
            hint=HINT_CAPTURE_CUDA_NVTX)

    tot = table["total_ns"].to_numpy(dtype=np.int64)
    is_tc = table["tensor_core"].to_numpy(dtype=bool)
    basis = table["tc_basis"].to_numpy(dtype=object)
    cat = table["category"].to_numpy(dtype=object)
    matmul = np.isin(cat, MATMUL_CATEGORIES)
    gemm_conv = np.isin(cat, ("gemm", "conv"))

    name_share = float(tot[is_tc].sum()) / total
    gemm_ns = int(tot[matmul].sum())
    non_tc_gemm = gemm_conv & (basis == "no_tc")
    non_tc_attn = (cat == "attention") & (basis == "no_tc")
    unknown = basis == "unknown"
    relevant_ns = int(tot[matmul | unknown].sum())
    unknown_ns = int(tot[unknown].sum())
    known_frac = 1.0 - unknown_ns / relevant_ns if relevant_ns > 0 else 1.0

    ta_mean, ta_share, ta_n = _tensor_active_during_kernels(
        k, gpu_metrics, *((busy, busy_window) if window is None else (None, None)))
    counters_share = None
    if counters and counters.get("tensor_core_share_by_time") is not None:
        counters_share = fnum(counters["tensor_core_share_by_time"])

    tc_rows = table.loc[is_tc]
    share, source, confidence, evidence = _tc_share_and_evidence(
        tc_rows, name_share, counters_share, str((counters or {}).get("source", "ncu")),
        (ta_mean, ta_share, ta_n), known_frac, unknown_ns / total, th)

    non_tc_share = float(tot[non_tc_gemm].sum()) / total
    advice = NON_TC_ADVICE if non_tc_share > 0 else ""
    return TensorCoreResult(
        available=True,
        share_of_kernel_time=share,
        source=source,
        confidence=confidence,
        evidence=tuple(evidence),
        name_share_of_kernel_time=name_share,
        metrics_share_of_kernel_time=ta_share,
        counters_share_of_kernel_time=counters_share,
        tensor_active_mean=ta_mean,
        tensor_active_samples=ta_n,
        gemm_share=gemm_ns / total,
        tc_share_of_gemm=ratio(int(tot[matmul & is_tc].sum()), gemm_ns),
        non_tc_gemm_share=non_tc_share,
        non_tc_attention_share=float(tot[non_tc_attn].sum()) / total,
        unknown_tc_share=unknown_ns / total,
        non_tc_gemm_kernels=_kernel_list(table.loc[non_tc_gemm]),
        unknown_tc_kernels=_kernel_list(table.loc[unknown]),
        tc_kernels=_kernel_list(tc_rows),
        kernel_total_ns=total,
        advice=advice,
    )
