"""``compare`` without steps: window-normalised rates, and the comparability of a pair.

**Window rates.** When a side has no steps there is no step time to compare (and the
``--fail-on-regression`` gate is not evaluable). What stays comparable are rates normalised by
the window: each trace summary carries fixed-width bins of its window (``timeline.window_bins``,
10 ms, ``analyses/timeline/window_bins.py``), and every bin is one sample. Per metric, the statistic is the
**mean over bins** (equal-width bins: a time-weighted rate) and its interval is
``compare_stats``' bootstrap over bins (cluster bootstrap over runs, then bins, with several
runs). Bins of one run are not independent (load is autocorrelated), so these intervals are on
the optimistic side; the report says so. A side with fewer than ``MIN_BINS`` bins (200 ms) gets
no rates, and says so.

**Comparability.** ``comparability(baseline, candidate)`` scores a pair 0..1: the kernel-name mix
(share of kernel time in kernel families present on both sides, time-weighted, the mean of both
sides), × 0.5 when the GPU models differ, × 0.75 when the step counts are more than 4× apart.
Below ``Thresholds.comparability_min_score`` the pair is incomparable (reasoning beside it).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from nsys_diag.analyses.job.compare_stats import DEFAULT_SETTINGS, CompareSettings, compare_metric
from nsys_diag.model.vocabulary import KINETO_FORMAT, KINETO_NOT_IN_FORMAT

MIN_BINS = 20
"""Fewest bins per side for window rates: with fewer, a percentile bootstrap interval rests on a
handful of values (Efron & Tibshirani's rule of thumb wants ≥ 20 samples)."""
GPU_MISMATCH_FACTOR = 0.5
"""Score factor for different GPU models (see ``Thresholds.comparability_min_score``)."""
STEP_RATIO_MIN = 0.25
"""Step counts further apart than 4× (ratio < 0.25) suggest different workloads or windows."""
STEP_MISMATCH_FACTOR = 0.75
"""Score factor for step counts further apart than 4×."""
Getter = Callable[[dict, dict], Any]


# ---------------------------------------------------------------------------- comparability
def _family_ns(side: Sequence[dict]) -> tuple[dict[str, float], float]:
    fams: dict[str, float] = {}
    total = 0.0
    for s in side:
        for k in s.get("kernels") or []:
            fams[k["key"]] = fams.get(k["key"], 0.0) + float(k.get("total_ns") or 0)
        total += float(s.get("kernel_total_ns") or sum(float(k.get("total_ns") or 0)
                                                       for k in s.get("kernels") or []))
    return fams, total


def _format_reasons(baseline: Sequence[dict], candidate: Sequence[dict]) -> list[str]:
    """What differs when the two sides are different trace formats (an nsys export against a
    PyTorch profiler trace): the score is unchanged (the same program gives the same kernels,
    steps and phases in both), the report says what only one side can hold."""
    fb = sorted({str(s.get("format")) for s in baseline if s.get("format")})
    fc = sorted({str(s.get("format")) for s in candidate if s.get("format")})
    if not fb or not fc or fb == fc or KINETO_FORMAT not in fb + fc:
        return []
    return [f"formats differ: {', '.join(fb)} vs {', '.join(fc)} — {KINETO_NOT_IN_FORMAT}, so "
            "metric-based findings (Tensor Core activity, OS-runtime and CPU-sample causes) come "
            "from one side only; kernels, steps and phases compare as they are"]


def comparability(baseline: Sequence[dict], candidate: Sequence[dict]) -> dict:
    """``{score, reasons[], checks}`` of a pair of run sets (module docstring)."""
    reasons: list[str] = []
    score = 1.0
    fb, tb = _family_ns(baseline)
    fc, tc = _family_ns(candidate)
    mix = None
    if tb > 0 and tc > 0:
        common = set(fb) & set(fc)
        mix = 0.5 * (sum(fb[k] for k in common) / tb + sum(fc[k] for k in common) / tc)
        mix = min(max(mix, 0.0), 1.0)
        score *= mix
        reasons.append(f"kernel mix: {100 * mix:.0f}% of kernel time is in kernel families "
                       "common to both sides")
    elif tb > 0 or tc > 0:
        mix = 0.0
        score = 0.0
        reasons.append(f"kernel mix: the {'candidate' if tb > 0 else 'baseline'} side has no GPU "
                       "kernels at all")
    else:
        reasons.append("kernel mix: no GPU kernels on either side (not checked)")
    gb = sorted({g for s in baseline for g in s.get("gpus") or []})
    gc = sorted({g for s in candidate for g in s.get("gpus") or []})
    gpu_match = None
    if gb and gc:
        gpu_match = gb == gc
        if not gpu_match:
            score *= GPU_MISMATCH_FACTOR
            reasons.append(f"GPU model differs: {', '.join(gb)} vs {', '.join(gc)}")
    else:
        reasons.append("GPU model unknown on "
                       + ("both sides" if not gb and not gc else
                          "the baseline side" if not gb else "the candidate side") + " (not checked)")
    reasons += _format_reasons(baseline, candidate)
    nb = sum(int(s.get("steps", {}).get("analysed_count") or 0) for s in baseline)
    nc = sum(int(s.get("steps", {}).get("analysed_count") or 0) for s in candidate)
    step_ratio = None
    if nb and nc:
        step_ratio = min(nb, nc) / max(nb, nc)
        if step_ratio < STEP_RATIO_MIN:
            score *= STEP_MISMATCH_FACTOR
            reasons.append(f"step counts differ more than 4×: {nb} vs {nc} analysed steps")
    elif nb or nc:
        reasons.append(f"steps on one side only: {nb} vs {nc} analysed steps")
    return {"score": round(float(score), 4), "reasons": reasons,
            "checks": {"kernel_mix": None if mix is None else round(float(mix), 4),
                       "gpu_match": gpu_match, "gpus_baseline": gb, "gpus_candidate": gc,
                       "steps_baseline": nb, "steps_candidate": nc,
                       "step_count_ratio": None if step_ratio is None else round(step_ratio, 4)}}


# ----------------------------------------------------------------------------- window rates
def _bins(s: dict) -> dict | None:
    b = s.get("window_bins")
    return b if isinstance(b, dict) and int(b.get("count") or 0) > 0 else None


def _series(side: Sequence[dict], get) -> list[np.ndarray]:
    """One array of per-bin samples per run (runs without bins or without the series skipped)."""
    out = []
    for s in side:
        b = _bins(s)
        if b is None:
            continue
        v = get(b, s)
        if v is not None:
            out.append(np.asarray(v, dtype=float))
    return out


def _rate(key: str, sub: str | None = None, family: bool = False) -> Getter:
    """Getter of a ns-per-bin series as ms of kernel time per second of window. A family that is
    not among a trace's binned top families counts as 0 only when the trace does not list it at
    all (else it is unknown there: None)."""
    def get(b: dict, s: dict):
        src = b.get(key)
        if sub is not None:
            src = (src or {}).get(sub)
            if src is None and family and sub in {k["key"] for k in s.get("kernels") or []}:
                return None
        if src is None or len(src) == 0:
            return np.zeros(int(b["count"]))
        return np.asarray(src, dtype=float) / float(b["bin_ns"]) * 1e3
    return get


def _tc_share(b: dict, s: dict):
    """Per bin with kernel time: Tensor Core kernel time / kernel time (0..1)."""
    cats = b.get("category_ns") or {}
    if not cats:
        return None
    total = np.sum([np.asarray(v, dtype=float) for v in cats.values()], axis=0)
    tc = np.asarray(b.get("tensor_core_ns") or np.zeros(total.size), dtype=float)
    keep = total > 0
    return tc[keep] / total[keep] if keep.any() else None


def window_rate_metrics(baseline: Sequence[dict], candidate: Sequence[dict], *, seed: int = 0,
                        settings: CompareSettings = DEFAULT_SETTINGS) -> dict:
    """The window-rate comparison (module docstring): ``{available, reason, bins, bin_ns,
    min_bins, metrics[], note}``; metrics are ``MetricComparison.to_json()`` rows."""
    nbins = {role: sum(int((_bins(s) or {}).get("count") or 0) for s in side)
             for role, side in (("baseline", baseline), ("candidate", candidate))}
    widths = {role: sorted({int(b["bin_ns"]) for s in side if (b := _bins(s))})
              for role, side in (("baseline", baseline), ("candidate", candidate))}
    out: dict = {"available": False, "reason": None, "bins": nbins, "bin_ns": widths,
                 "min_bins": MIN_BINS, "metrics": [],
                 "note": "mean over fixed-width bins of the window; intervals resample the bins "
                         "(bins of one run are autocorrelated, so the intervals are optimistic)"}
    stepped = [r for r, side in (("baseline", baseline), ("candidate", candidate))
               if any((s.get("steps") or {}).get("analysed_count") for s in side)]
    if stepped:
        out["reason"] = (f"the {' and '.join(stepped)} side has steps, so its window is not "
                         "binned: window rates compare two sides without steps")
        return out
    short = [r for r, n in nbins.items() if n < MIN_BINS]
    if short:
        out["reason"] = ("fewer than {} time bins on the {} side{} (a window of at least {} ms is "
                         "needed)").format(MIN_BINS, " and ".join(short), "s" if len(short) > 1 else "",
                                           MIN_BINS * 10)
        return out
    specs: list[tuple[str, Getter, str, bool | None]] = [
        ("window.gpu_busy", lambda b, s: b.get("busy") or None, "share", False)]
    cats = sorted({c for side in (baseline, candidate) for s in side
                   for c in ((_bins(s) or {}).get("category_ns") or {})})
    specs += [(f"window.kernel_ms_per_s.{c}", _rate("category_ns", c), "ms/s", None) for c in cats]
    specs += [("window.tensor_core_share", _tc_share, "share", False),
              ("window.exposed_comm_ms_per_s", _rate("exposed_comm_ns"), "ms/s", True)]
    fams = sorted({f for side in (baseline, candidate) for s in side
                   for f in ((_bins(s) or {}).get("kernel_ns") or {})})
    specs += [(f"window.kernel.{f}_ms_per_s", _rate("kernel_ns", f, family=True), "ms/s", None) for f in fams]
    for name, get, unit, worse in specs:  # a handful of metrics
        sb, sc = _series(baseline, get), _series(candidate, get)
        if not sb or not sc:
            continue
        m = compare_metric(name, sb, sc, stat="mean", unit=unit, higher_is_worse=worse, seed=seed,
                           abs_floor=0.01 if unit == "share" else 1.0, settings=settings)
        row = m.to_json()
        if row["method"] == "steps":  # the samples here are 10 ms bins of the window, not steps
            row["method"] = "bins"
        out["metrics"].append(row)
    out["available"] = bool(out["metrics"])
    if not out["metrics"]:
        out["reason"] = "no rate could be computed on both sides"
    return out
