"""Tensor Core use: evidence fusion of kernel names, nsys GPU metrics and ncu counters.

Sources, strongest first (the strongest available one gives ``share_of_kernel_time``; the others
are reported beside it and disagreements are said out loud). ``basis`` says in words which one
was used and how ("Tensor pipes active 38% of cycles while GEMMs ran …").

1. ``counters`` — ncu per-kernel tensor-pipe counters summarised by the caller as
   ``{"tensor_core_share_by_time": float 0..1, "source": "ncu"}`` (kernel time in kernels with
   tensor-pipe activity / kernel time). Confidence ``high``.
2. nsys GPU metrics ``Tensor Active [Throughput %]`` — the *level* (mean fraction of cycles),
   never "any sample > 0" (a run at 1% Tensor Active is not "on Tensor Cores"). Readings in
   ``tensor_counters``:

   * ``tensor_active_during_gemm`` — mean Tensor Active over the samples taken while GEMM-family
     kernels ran on that device (union of their intervals). GEMM-family: GEMM/conv/attention by
     name, plus generated kernels whose names cannot tell (Triton ``triton_tem_*``/``triton_mm*``,
     generic CUTLASS ``Kernel``/``Kernel2``, nvFuser ``nvfuser_*``/``kernelN``) unless their
     names say pointwise/reduction/copy/communication;
   * ``engaged`` — that level ≥ ``Thresholds.tensor_active_engaged`` (True/False; None without
     Tensor Active samples or without GEMM time);
   * per kernel name, only where the sampling period resolves kernels (a kernel ≥ 2 × the
     sampling period running alone for a whole sampled period).

   ``share_of_kernel_time`` (same key and meaning: the share of kernel time in kernels judged to
   run on Tensor Cores) then judges each GEMM-family name by its own level when resolved, else by
   ``engaged`` (names that say CUDA cores keep saying so); every other kernel (pointwise,
   reductions, copies, communication) is never Tensor Core time. Confidence ``high`` when most
   GEMM time is resolved per kernel, else ``medium``.
3. Kernel names (``kernel_catalog``): Σ duration of Tensor-Core-named kernels / Σ kernel duration.
   Confidence ``medium`` when the names decide (TC or CUDA cores) for at least
   ``th.tc_name_known_min_share`` of the time of GEMM/conv/attention and generated kernels, else
   ``low``.

GEMM figures: ``gemm_share`` = GEMM+conv+attention time / kernel time (names);
``tc_share_of_gemm`` = Tensor-Core-named part of that time; ``non_tc_gemm_share`` = GEMM/conv
kernels whose names show a CUDA-core path (``*sgemm*``, ``*_ffma``, ``gemv``, ``scudnn`` …) plus,
from GPU metrics, GEMM-family kernels the names cannot decide that ran with Tensor Active below
the engaged level while the SMs were busy (SM Active ≥ ``th.tc_busy_sm_active``) / kernel time —
listed in ``non_tc_gemm_kernels`` with their evidence ("Tensor Active 1% while it ran"),
``non_tc_gemm_source`` says which. Other undecided kernels are listed apart
(``unknown_tc_kernels``), never counted as missing Tensor Cores.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys_diag.model.jsonsafe import fnum, ratio
from nsys_diag.analyses.kernels.catalog import MATMUL_CATEGORIES, display_name
from nsys_diag.analyses.kernels.table import UNNAMED, filter_window, kernel_name_stats
from nsys_diag.analyses.kernels.tensor_counters import (RowNames, TensorLevels, kernel_union_membership,
                                                metric_samples, tensor_levels)
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import HINT_CAPTURE_CUDA_NVTX, NON_TC_ADVICE

LIST_LIMIT = 20
"""Rows kept in each kernel list of the JSON."""


@dataclass(frozen=True)
class TensorCoreResult:
    """Tensor Core use. Shares are fractions 0..1 of total kernel time unless named otherwise.

    ``source``: "ncu" | "gpu_metrics" | "kernel_names" (what ``share_of_kernel_time`` comes from);
    ``tensor_active_mean``: mean GPU-metrics Tensor Active during kernels (fraction, None if not
    sampled); ``tensor_active_during_gemm``: the same over GEMM-family kernel time, and
    ``engaged`` that level against ``Thresholds.tensor_active_engaged``; ``basis``: how the share
    was judged, in words; kernel lists hold dicts {name, short_name, share, category, evidence}.
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
    tensor_active_during_gemm: float | None = None
    tensor_active_gemm_samples: int = 0
    engaged: bool | None = None
    basis: str = ""
    non_tc_gemm_source: str | None = None
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
            "tensor_active_during_gemm": fnum(self.tensor_active_during_gemm),
            "tensor_active_gemm_samples": int(self.tensor_active_gemm_samples),
            "engaged": None if self.engaged is None else bool(self.engaged),
            "basis": self.basis,
            "non_tc_gemm_source": self.non_tc_gemm_source,
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


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _lvl(x: float | None) -> str:
    """A Tensor/SM Active level as a percentage of cycles: 38%, 0.4%."""
    if x is None or not np.isfinite(x):
        return "n/a"
    return f"{100 * x:.0f}%" if x >= 0.1 else f"{100 * x:.1f}%"


POINTWISE_CATEGORIES = ("elementwise", "reduction", "memory", "communication")
"""Categories never judged Tensor Core time by counters, whatever the level while they ran."""


def gemm_family(cat: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """Per name: GEMM/conv/attention by name, or a kernel whose name cannot tell its math path
    (basis ``unknown``: Triton templates, nvFuser, generic CUTLASS) and does not say pointwise,
    reduction, copy or communication."""
    return np.isin(cat, MATMUL_CATEGORIES) | ((basis == "unknown")
                                              & ~np.isin(cat, POINTWISE_CATEGORIES))


@dataclass(frozen=True)
class _Judgement:
    """Counters' verdict per name row: judged Tensor Core, CUDA-core GEMM by counters (with the
    evidence text), the share of GEMM-family time judged per kernel, and ``engaged``."""

    is_tc: np.ndarray
    non_tc: np.ndarray
    evidence: np.ndarray
    resolved_frac: float
    engaged: bool | None


def _judge_by_counters(tot: np.ndarray, basis: np.ndarray, family: np.ndarray,
                       lv: TensorLevels, th: Thresholds) -> _Judgement:
    """Judge each GEMM-family name by its own Tensor Active level when the samples resolve it,
    else by the level over all GEMM time (``engaged``); pointwise and other kernels never count.
    A name that cannot tell (or claims Tensor Cores) is a CUDA-core GEMM when its level is below
    ``tensor_active_engaged`` while SM Active ≥ ``tc_busy_sm_active``."""
    level = lv.level_during_gemm
    engaged = None if level is None else bool(level >= th.tensor_active_engaged)
    resolved = family & (lv.name_samples > 0)
    own = np.where(resolved, lv.name_level, np.nan)
    is_tc = np.zeros(tot.size, dtype=bool)
    is_tc[resolved] = own[resolved] >= th.tensor_active_engaged
    rest = family & ~resolved
    if engaged is True:
        is_tc[rest] = basis[rest] != "no_tc"
    # counters say CUDA cores: low level with busy SMs, only where names cannot (or wrongly) tell
    undecided = family & np.isin(basis, ("unknown", "tc"))
    sm_own = np.where(resolved, lv.name_sm, np.nan)
    low_own = resolved & (own < th.tensor_active_engaged) & (sm_own >= th.tc_busy_sm_active)
    sm_busy = lv.sm_during_gemm is not None and lv.sm_during_gemm >= th.tc_busy_sm_active
    low_all = rest & (basis == "unknown") & bool(engaged is False and sm_busy)
    non_tc = undecided & (low_own | low_all)
    evidence = np.full(tot.size, "", dtype=object)
    for i in np.flatnonzero(non_tc):  # ≤ a few dozen GEMM-family names
        if resolved[i]:
            evidence[i] = (f"Tensor Active {_lvl(own[i])} while it ran, SM Active "
                           f"{_lvl(sm_own[i])} (GPU metrics)")
        else:
            evidence[i] = (f"Tensor Active {_lvl(level)} while GEMMs ran, SM Active "
                           f"{_lvl(lv.sm_during_gemm)} (GPU metrics; the kernel is too short for "
                           "the sampling period to resolve it alone)")
    fam_ns = int(tot[family].sum())
    return _Judgement(is_tc=is_tc, non_tc=non_tc, evidence=evidence,
                      resolved_frac=float(tot[resolved].sum()) / fam_ns if fam_ns else 0.0,
                      engaged=engaged)


def _metrics_basis(lv: TensorLevels, j: _Judgement, th: Thresholds) -> str:
    """The words behind a GPU-metrics share: the level while GEMMs ran and how kernels were judged."""
    if lv.level_during_gemm is None:
        return (f"no GEMM/conv/attention kernel time to judge; Tensor pipes active "
                f"{_lvl(lv.kernel_level)} of cycles while kernels ran (GPU metrics)")
    period = f"{lv.period_ns / 1e6:.3g} ms" if lv.period_ns else "the sampling period"
    verdict = "engaged" if j.engaged else "not engaged"
    return (f"Tensor pipes active {_lvl(lv.level_during_gemm)} of cycles while GEMMs ran "
            f"(GPU metrics, {lv.gemm_samples} samples; Tensor Cores {verdict} at ≥ "
            f"{_lvl(th.tensor_active_engaged)}); GEMM-family kernels judged one by one for "
            f"{_pct(j.resolved_frac)} of their time (kernels ≥ 2 × the {period} sampling "
            "period), by that level for the rest; pointwise kernels never count")


def _tc_share_and_evidence(tc_rows: pd.DataFrame, name_share: float, counters_share: float | None,
                           counters_source: str, lv: TensorLevels | None,
                           judged: tuple[float, _Judgement] | None, known_frac: float,
                           unknown_share: float, th: Thresholds
                           ) -> tuple[float, str, str, list[str], str]:
    """(Tensor Core share of kernel time, its source, confidence, evidence lines, basis): hardware
    counters (ncu) win over GPU metrics (Tensor Active level while GEMMs ran), which win over the
    kernel-name heuristic (confidence by the share of GEMM time the names can decide)."""
    evidence: list[str] = []
    if len(tc_rows):
        top = tc_rows.head(3)
        evidence.append("Tensor Core kernels by name: " + ", ".join(
            f"{display_name(str(n), str(s), 48)} ({_pct(sh)})"
            for n, s, sh in zip(top["name"], top["short_name"], top["share"])))
    else:
        evidence.append("no kernel name shows a Tensor Core path")
    names_line = f"kernel names: {_pct(name_share)} of kernel time in Tensor Core kernels"
    metrics_line = "" if lv is None else (
        f"GPU metrics: Tensor Active {_lvl(lv.level_during_gemm)} of cycles while GEMMs ran, "
        f"{_lvl(lv.kernel_level)} while any kernel ran ({lv.kernel_samples} samples)")

    if counters_share is not None:
        share, source, confidence = counters_share, counters_source, "high"
        basis = (f"{source} tensor-pipe counters: {_pct(counters_share)} of kernel time in kernels "
                 "with tensor-pipe activity")
        evidence.insert(0, f"{basis} (counters win over names; {names_line})")
        if metrics_line:
            evidence.append(metrics_line)
    elif lv is not None and judged is not None:
        share, j = judged
        source = "gpu_metrics"
        confidence = "high" if j.resolved_frac >= 0.5 or lv.level_during_gemm is None else "medium"
        basis = _metrics_basis(lv, j, th)
        evidence.insert(0, f"{metrics_line}; judged Tensor Core time {_pct(share)} of kernel time "
                           f"(metrics win over names; {names_line})")
        if (name_share > 0) != (share > 0) or (j.engaged is False and name_share > 0):
            evidence.append("kernel names and GPU metrics disagree; the GPU metrics are used")
    else:
        share, source = name_share, "kernel_names"
        confidence = "medium" if known_frac >= th.tc_name_known_min_share else "low"
        basis = ("kernel names only (no GPU metrics or ncu counters): time in kernels whose names "
                 "show a Tensor Core path")
        evidence.insert(0, f"{names_line} (name heuristic; no GPU metrics or ncu counters)")
        if unknown_share:
            evidence.append(f"names cannot decide for {_pct(unknown_share)} of kernel time "
                            "(generated or unmarked GEMM kernels)")
    return share, source, confidence, evidence, basis


def kernel_row_names(kernels: pd.DataFrame, table: pd.DataFrame) -> RowNames:
    """Per kernel row, its row in the name table (-1 when the name is not in it): a lookup over
    the name's category codes (a row without a name: the table's ``UNNAMED`` row)."""
    names = kernels["name"]
    if not isinstance(names.dtype, pd.CategoricalDtype):
        names = names.astype("category")
    table_names = pd.Index(table["name"].astype(str))
    idx = table_names.get_indexer(names.cat.categories.astype(str))
    missing = int(table_names.get_indexer([UNNAMED])[0])
    return RowNames(names.cat.codes.to_numpy(), np.append(idx, missing).astype(np.int64))


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
    if int(table["total_ns"].sum()) <= 0:
        return tensor_result(table, None, th=th, counters=counters)
    family = gemm_family(table["category"].to_numpy(dtype=object),
                         table["tc_basis"].to_numpy(dtype=object))
    ta = metric_samples(gpu_metrics, "tensor_active")  # once for both readings below
    inside = None
    if window is None and busy is not None and busy_window is not None and gpu_metrics is not None:
        inside = kernel_union_membership(gpu_metrics, busy, busy_window, k, ta)
    lv = tensor_levels(k, kernel_row_names(k, table), family, gpu_metrics, kernel_inside=inside,
                       tensor_active=ta, longest_ns=int(table["max_ns"].max()))
    return tensor_result(table, lv, th=th, counters=counters)


def tensor_result(table: pd.DataFrame, lv: TensorLevels | None, *, th: Thresholds,
                  counters: dict | None = None) -> TensorCoreResult:
    """The ``TensorCoreResult`` of a kernel name table and its Tensor Active readings (``lv``:
    None without Tensor Active samples) — shared with the chunked merge
    (``kernels/tensor_spans.py``)."""
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
    family = gemm_family(cat, basis)
    name_share = float(tot[is_tc].sum()) / total
    gemm_ns = int(tot[matmul].sum())
    non_tc_names = np.isin(cat, ("gemm", "conv")) & (basis == "no_tc")
    non_tc_attn = (cat == "attention") & (basis == "no_tc")
    unknown = basis == "unknown"
    relevant_ns = int(tot[matmul | unknown].sum())
    unknown_ns = int(tot[unknown].sum())
    known_frac = 1.0 - unknown_ns / relevant_ns if relevant_ns > 0 else 1.0
    judged, non_tc, evidence_col = _counter_judgement(table, tot, basis, family, lv, non_tc_names,
                                                      total, th)
    counters_share = _ncu_share(counters)

    tc_rows = table.loc[is_tc]
    share, source, confidence, evidence, basis_text = _tc_share_and_evidence(
        tc_rows, name_share, counters_share, str((counters or {}).get("source", "ncu")),
        lv, judged, known_frac, unknown_ns / total, th)

    non_tc_share = float(tot[non_tc].sum()) / total
    listed = table.assign(tc_evidence=evidence_col)
    return TensorCoreResult(
        available=True,
        share_of_kernel_time=share,
        source=source,
        confidence=confidence,
        evidence=tuple(evidence),
        name_share_of_kernel_time=name_share,
        metrics_share_of_kernel_time=None if judged is None else judged[0],
        counters_share_of_kernel_time=counters_share,
        tensor_active_mean=None if lv is None else lv.kernel_level,
        tensor_active_samples=0 if lv is None else lv.kernel_samples,
        tensor_active_during_gemm=None if lv is None else lv.level_during_gemm,
        tensor_active_gemm_samples=0 if lv is None else lv.gemm_samples,
        engaged=None if judged is None else judged[1].engaged,
        basis=basis_text,
        non_tc_gemm_source=_non_tc_source(non_tc_share, judged, non_tc_names),
        gemm_share=gemm_ns / total,
        tc_share_of_gemm=ratio(int(tot[matmul & is_tc].sum()), gemm_ns),
        non_tc_gemm_share=non_tc_share,
        non_tc_attention_share=float(tot[non_tc_attn].sum()) / total,
        unknown_tc_share=unknown_ns / total,
        non_tc_gemm_kernels=_kernel_list(listed.loc[non_tc]),
        unknown_tc_kernels=_kernel_list(table.loc[unknown]),
        tc_kernels=_kernel_list(tc_rows),
        kernel_total_ns=total,
        advice=NON_TC_ADVICE if non_tc_share > 0 else "",
    )


def _counter_judgement(table: pd.DataFrame, tot: np.ndarray, basis: np.ndarray, family: np.ndarray,
                       lv, non_tc_names: np.ndarray, total: int, th: Thresholds):
    """With GPU-metric levels (``lv``): (share judged on Tensor Cores by the level, the judgement),
    the kernels on CUDA cores by names or counters, and their evidence column. Without: names only."""
    evidence_col = table["tc_evidence"].to_numpy(dtype=object).copy()
    if lv is None:
        return None, non_tc_names, evidence_col
    j = _judge_by_counters(tot, basis, family, lv, th)
    evidence_col[j.non_tc] = j.evidence[j.non_tc]
    return (float(tot[j.is_tc].sum()) / total, j), non_tc_names | j.non_tc, evidence_col


def _non_tc_source(non_tc_share: float, judged, non_tc_names: np.ndarray) -> str | None:
    """What says the CUDA-core GEMM time is CUDA-core: names, GPU metrics or both."""
    if non_tc_share <= 0:
        return None
    by_counters = judged is not None and bool(judged[1].non_tc.any())
    if by_counters:
        return "kernel_names+gpu_metrics" if non_tc_names.any() else "gpu_metrics"
    return "kernel_names"


def _ncu_share(counters: dict | None) -> float | None:
    """ncu's Tensor Core share of kernel time (``tensor_core_share_by_time``), when given."""
    if counters and counters.get("tensor_core_share_by_time") is not None:
        return fnum(counters["tensor_core_share_by_time"])
    return None
