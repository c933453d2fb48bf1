"""Statistics for ``compare``: is the candidate really different from the baseline?

Every metric is compared as a *distribution* of samples, never as two single numbers:

* per-step samples (step time, per-step phase time …) of one run, or
* several runs per side (a directory of traces): a **hierarchical (cluster) bootstrap** resamples
  runs with replacement and then steps within each chosen run, so run-to-run variation widens the
  interval as it should (steps of one run are not independent of each other).

The confidence interval is a percentile bootstrap of ``stat(candidate) - stat(baseline)`` with
``n_boot`` replicates, vectorised as a ``(replicates × samples)`` index matrix (chunked to bound
memory) and deterministic for a given seed (each metric derives its own stream from
``(seed, metric name)``, so adding a metric never changes another metric's interval).

A change is **significant** only when both hold:

1. the interval of the difference excludes 0, and
2. ``|relative delta|`` exceeds a *noise floor* derived from the baseline itself:
   ``max(min_rel_change, effect_size_floor × robust CV of the baseline samples,
   CV of the per-run statistics when the baseline has ≥ 2 runs)``.

``explain_delta`` ranks components (phases, kernels) by their share of the step-time delta.
Pure numpy: no I/O, no pandas.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

MAD_TO_SIGMA = 1.4826
"""σ ≈ 1.4826·MAD for normal data (Iglewicz & Hoaglin)."""
MEANAD_TO_SIGMA = 1.2533
"""σ ≈ 1.2533·mean absolute deviation; used when MAD is 0 (Iglewicz & Hoaglin)."""


@dataclass(frozen=True)
class CompareSettings:
    """The numbers the comparison uses (documented here, in one place)."""

    n_boot: int = 2000
    """Bootstrap replicates. 2000 gives stable 95% percentile intervals (Efron & Tibshirani
    recommend ≥ 1000 for percentile intervals)."""
    confidence: float = 0.95
    """Two-sided confidence level of the intervals."""
    min_rel_change: float = 0.01
    """Changes below 1% are never called: below what profiler overhead, clocks and thermals
    reproduce between identical runs (a judgement, stated as such)."""
    effect_size_floor: float = 0.2
    """A change must exceed 0.2 × the baseline's robust step-to-step standard deviation: Cohen's
    "small effect" (d = 0.2); smaller shifts are buried in the step jitter however many steps."""
    max_chunk_elements: int = 2_000_000
    """Bootstrap index matrices are built in chunks of at most this many elements (memory bound)."""


DEFAULT_SETTINGS = CompareSettings()


# ------------------------------------------------------------------------------------ samples
def as_runs(samples) -> list[np.ndarray]:
    """Normalise a side's samples to a list of 1-D float arrays (one per run).

    Accepts a 1-D array-like (one run) or a sequence of array-likes (several runs). NaNs and
    empty runs are dropped.
    """
    if samples is None:
        return []
    if isinstance(samples, np.ndarray) and samples.ndim == 1:
        groups = [samples]
    elif len(samples) > 0 and np.ndim(samples[0]) == 0:
        groups = [np.asarray(samples, dtype=float)]
    else:
        groups = list(samples)
    out = []
    for g in groups:
        a = np.asarray(g, dtype=float).ravel()
        a = a[np.isfinite(a)]
        if a.size:
            out.append(a)
    return out


def _stat(values: np.ndarray, stat: str, axis=None, nan: bool = False):
    if stat == "median":
        return (np.nanmedian if nan else np.median)(values, axis=axis)
    if stat == "mean":
        return (np.nanmean if nan else np.mean)(values, axis=axis)
    raise ValueError(f"unknown statistic {stat!r} (median | mean)")


def pooled_stat(runs: Sequence[np.ndarray], stat: str = "median") -> float | None:
    """The statistic over all samples of all runs pooled; None without samples."""
    if not runs:
        return None
    return float(_stat(np.concatenate(runs), stat))


def bootstrap_replicates(runs: Sequence[np.ndarray], stat: str, n_boot: int,
                         rng: np.random.Generator,
                         max_chunk_elements: int = DEFAULT_SETTINGS.max_chunk_elements) -> np.ndarray:
    """``n_boot`` bootstrap replicates of ``stat`` over the pooled samples of ``runs``.

    One run: resample its samples with replacement (a ``(B × n)`` index matrix).
    Several runs: resample runs with replacement, then samples within each chosen run (cluster
    bootstrap). Runs of unequal length are padded with NaN and the NaN-aware statistic is used.
    """
    if not runs:
        raise ValueError("no samples")
    out = np.empty(n_boot, dtype=float)
    if len(runs) == 1:
        x = runs[0]
        n = x.size
        chunk = max(1, max_chunk_elements // n)
        for lo in range(0, n_boot, chunk):
            b = min(chunk, n_boot - lo)
            idx = rng.integers(0, n, size=(b, n))
            out[lo:lo + b] = _stat(x[idx], stat, axis=1)
        return out

    lens = np.array([r.size for r in runs], dtype=np.int64)
    n_runs, width = len(runs), int(lens.max())
    padded = np.full((n_runs, width), np.nan)
    for i, r in enumerate(runs):  # a loop over runs (a handful), not over samples
        padded[i, : r.size] = r
    ragged = bool((lens != width).any())
    chunk = max(1, max_chunk_elements // (n_runs * width))
    cols = np.arange(width)
    for lo in range(0, n_boot, chunk):
        b = min(chunk, n_boot - lo)
        run_idx = rng.integers(0, n_runs, size=(b, n_runs))            # (b, R)
        run_len = lens[run_idx]                                          # (b, R)
        step_idx = (rng.random((b, n_runs, width)) * run_len[..., None]).astype(np.int64)
        vals = padded[run_idx[..., None], step_idx]                      # (b, R, M)
        if ragged:
            vals = np.where(cols[None, None, :] < run_len[..., None], vals, np.nan)
        out[lo:lo + b] = _stat(vals.reshape(b, n_runs * width), stat, axis=1, nan=ragged)
    return out


def robust_cv(values: np.ndarray) -> float:
    """Robust coefficient of variation: 1.4826·MAD / |median| (1.2533·meanAD when MAD is 0).

    0 for a constant sample; ``inf`` when the median is 0 but the values vary.
    """
    v = np.asarray(values, dtype=float)
    if v.size < 2:
        return 0.0
    med = float(np.median(v))
    dev = np.abs(v - med)
    mad = float(np.median(dev))
    sigma = MAD_TO_SIGMA * mad if mad > 0 else MEANAD_TO_SIGMA * float(dev.mean())
    if sigma == 0:
        return 0.0
    return sigma / abs(med) if med != 0 else math.inf


def noise_floor(runs: Sequence[np.ndarray], stat: str = "median",
                settings: CompareSettings = DEFAULT_SETTINGS) -> float:
    """Smallest relative change (fraction) worth calling for this baseline.

    ``max(min_rel_change, effect_size_floor × robust CV of the pooled samples, CV of the per-run
    statistics)`` — the last term only with ≥ 2 baseline runs (run-to-run variation).
    """
    if not runs:
        return settings.min_rel_change
    floor = settings.min_rel_change
    step_cv = robust_cv(np.concatenate(runs))
    if math.isfinite(step_cv):
        floor = max(floor, settings.effect_size_floor * step_cv)
    if len(runs) >= 2:
        per_run = np.array([_stat(r, stat) for r in runs])
        m = float(np.mean(per_run))
        if m != 0:
            floor = max(floor, float(np.std(per_run, ddof=1)) / abs(m))
    return floor


# ------------------------------------------------------------------------------------ compare
@dataclass(frozen=True)
class MetricComparison:
    """Baseline vs candidate for one metric. Relative fields are percentages."""

    name: str
    unit: str
    stat: str
    baseline: float | None
    candidate: float | None
    delta: float | None
    delta_pct: float | None
    ci_low: float | None
    ci_high: float | None
    ci_low_pct: float | None
    ci_high_pct: float | None
    significant: bool
    noise_floor_pct: float | None
    change: str
    """"worse" | "better" | "changed" (significant, no preferred direction) | "none" | "n/a"."""
    method: str
    """"steps" | "runs" | "runs+steps" (hierarchical) | "none" (too few samples for an interval);
    the window rates (``compare_window``) write "bins" where the samples are 10 ms bins."""
    n_baseline: int
    n_candidate: int
    runs_baseline: int
    runs_candidate: int
    note: str = ""
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        def num(x):
            return None if x is None or not math.isfinite(x) else float(x)

        return {
            "name": self.name, "unit": self.unit, "stat": self.stat,
            "baseline": num(self.baseline), "candidate": num(self.candidate),
            "delta": num(self.delta), "delta_pct": num(self.delta_pct),
            "ci_low": num(self.ci_low), "ci_high": num(self.ci_high),
            "ci_low_pct": num(self.ci_low_pct), "ci_high_pct": num(self.ci_high_pct),
            # null when not tested: no interval could be computed (method "none")
            "significant": None if self.method == "none" else bool(self.significant),
            "noise_floor_pct": num(self.noise_floor_pct),
            "change": self.change, "method": self.method,
            "n_baseline": self.n_baseline, "n_candidate": self.n_candidate,
            "runs_baseline": self.runs_baseline, "runs_candidate": self.runs_candidate,
            "note": self.note, **self.extra,
        }


def metric_rng(seed: int, name: str) -> np.random.Generator:
    """A generator that depends only on ``seed`` and the metric's name."""
    return np.random.default_rng(np.random.SeedSequence([int(seed) & 0xFFFFFFFF,
                                                          zlib.crc32(name.encode("utf-8"))]))


def _method(runs: Sequence[np.ndarray]) -> str:
    if len(runs) >= 2:
        return "runs+steps" if max(r.size for r in runs) > 1 else "runs"
    return "steps"


def _resamplable(runs: Sequence[np.ndarray]) -> bool:
    return len(runs) >= 2 or (len(runs) == 1 and runs[0].size >= 2)


def compare_metric(name: str, baseline, candidate, *, stat: str = "median", unit: str = "",
                   higher_is_worse: bool | None = True, seed: int = 0, abs_floor: float = 0.0,
                   settings: CompareSettings = DEFAULT_SETTINGS) -> MetricComparison:
    """Compare one metric's samples (``baseline``/``candidate``: one array or a list of runs).

    ``abs_floor`` is the smallest absolute change worth calling when the baseline statistic is 0
    (relative change undefined). ``higher_is_worse`` labels the direction (None: no preference).
    """
    b_runs, c_runs = as_runs(baseline), as_runs(candidate)
    n_b = int(sum(r.size for r in b_runs))
    n_c = int(sum(r.size for r in c_runs))
    b_stat, c_stat = pooled_stat(b_runs, stat), pooled_stat(c_runs, stat)
    common: dict[str, Any] = dict(name=name, unit=unit, stat=stat, n_baseline=n_b, n_candidate=n_c,
                  runs_baseline=len(b_runs), runs_candidate=len(c_runs))
    if b_stat is None or c_stat is None:
        side = "baseline" if b_stat is None else "candidate"
        return MetricComparison(baseline=b_stat, candidate=c_stat, delta=None, delta_pct=None,
                                ci_low=None, ci_high=None, ci_low_pct=None, ci_high_pct=None,
                                significant=False, noise_floor_pct=None, change="n/a",
                                method="none", note=f"no samples in the {side}", **common)

    delta = c_stat - b_stat
    rel = delta / abs(b_stat) if b_stat != 0 else None
    floor = noise_floor(b_runs, stat, settings)
    if not (_resamplable(b_runs) and _resamplable(c_runs)):
        return MetricComparison(
            baseline=b_stat, candidate=c_stat, delta=delta,
            delta_pct=None if rel is None else 100 * rel, ci_low=None, ci_high=None,
            ci_low_pct=None, ci_high_pct=None, significant=False, noise_floor_pct=100 * floor,
            change="n/a", method="none",
            note="one sample per side: no confidence interval (give several steps or runs)",
            **common)

    rng = metric_rng(seed, name)
    rb = bootstrap_replicates(b_runs, stat, settings.n_boot, rng, settings.max_chunk_elements)
    rc = bootstrap_replicates(c_runs, stat, settings.n_boot, rng, settings.max_chunk_elements)
    alpha = 1.0 - settings.confidence
    q = [alpha / 2, 1 - alpha / 2]
    d = rc - rb
    ci_low, ci_high = (float(v) for v in np.quantile(d, q))
    ci_low_pct = ci_high_pct = None
    if b_stat != 0:
        if np.all(rb > 0) or np.all(rb < 0):
            rel_reps = d / np.abs(rb)  # ratio per replicate: the bootstrap of the relative change
        else:
            rel_reps = d / abs(b_stat)
        ci_low_pct, ci_high_pct = (100 * float(v) for v in np.quantile(rel_reps, q))

    excludes_zero = ci_low > 0 or ci_high < 0
    if rel is not None:
        beyond_noise = abs(rel) > floor
    else:
        beyond_noise = abs(delta) > abs_floor
    significant = bool(excludes_zero and beyond_noise)
    if not significant:
        change = "none"
    elif higher_is_worse is None:
        change = "changed"
    else:
        change = "worse" if (delta > 0) == higher_is_worse else "better"
    note = ""
    if excludes_zero and not beyond_noise:
        note = "interval excludes 0 but the change is within the baseline's noise floor"
    return MetricComparison(
        baseline=b_stat, candidate=c_stat, delta=delta,
        delta_pct=None if rel is None else 100 * rel, ci_low=ci_low, ci_high=ci_high,
        ci_low_pct=ci_low_pct, ci_high_pct=ci_high_pct, significant=significant,
        noise_floor_pct=100 * floor, change=change,
        method=_method(b_runs) if _method(b_runs) == _method(c_runs) else "runs+steps",
        note=note, **common)


def is_regression(step_time: MetricComparison, fail_pct: float) -> bool:
    """True when the candidate is slower by more than ``fail_pct`` % *with confidence*.

    Requires a significant slowdown whose relative interval's lower bound exceeds ``fail_pct``.
    """
    return bool(step_time.significant and step_time.delta is not None and step_time.delta > 0
                and step_time.ci_low_pct is not None and step_time.ci_low_pct > fail_pct)


# ------------------------------------------------------------------------------------ explain
@dataclass(frozen=True)
class Contribution:
    """One component's part in the step-time delta (``delta`` in the step's unit, e.g. ms).

    ``baseline``/``candidate``: the component's mean per step on each side (None for ``other``).
    """

    kind: str  # "phase" | "kernel" | "other"
    name: str
    delta: float
    share_of_delta: float | None  # signed fraction of the total delta; None when it is 0
    significant: bool | None = None
    baseline: float | None = None
    candidate: float | None = None
    group: str = ""

    def to_json(self) -> dict:
        def num(x):
            return None if x is None or not math.isfinite(x) else float(x)

        return {"kind": self.kind, "name": self.name, "delta": float(self.delta),
                "share_of_delta": num(self.share_of_delta), "significant": self.significant,
                "baseline": num(self.baseline), "candidate": num(self.candidate),
                "group": self.group}


def mean_delta(baseline, candidate) -> float | None:
    """Difference of pooled means (means are additive: phase deltas sum to the step delta)."""
    b, c = as_runs(baseline), as_runs(candidate)
    if not b or not c:
        return None
    return float(np.concatenate(c).mean() - np.concatenate(b).mean())


def explain_delta(total_delta: float, components: Iterable[tuple], *, top: int = 8,
                  group: str = "", other_name: str = "other") -> list[Contribution]:
    """Rank components of ``total_delta`` by absolute size, both signs, and close with ``other``.

    ``components``: ``(kind, name, delta, significant[, baseline, candidate])``. The ``top``
    largest by ``|delta|`` are kept; one ``other`` row holds ``total_delta − Σ kept``, so the rows
    always add up to the total (to float rounding) — an offsetting component is never dropped
    silently: it is either listed or inside ``other``. ``share_of_delta`` is signed (a component
    that went against the total has a negative share); None when the total is 0.
    """
    rows = []
    for comp in components:
        kind, name, delta, sig = comp[:4]
        base, cand = (tuple(comp[4:6]) + (None, None))[:2]
        if delta is None or not math.isfinite(delta) or delta == 0:
            continue
        share = delta / total_delta if total_delta else None
        rows.append(Contribution(kind, name, float(delta), share, sig, base, cand, group))
    rows.sort(key=lambda r: (-abs(r.delta), r.kind, r.name))
    kept = rows[:top]
    rest = float(total_delta) - float(sum(r.delta for r in kept))
    if kept and (abs(rest) > 1e-9 * max(1.0, abs(total_delta)) or len(rows) > len(kept)):
        kept.append(Contribution("other", other_name, rest,
                                 rest / total_delta if total_delta else None, None, None, None,
                                 group))
    return kept
