"""Training steps from NVTX: which ranges are steps, their durations, warm-up/incomplete/outliers.

Detection order
---------------
1. ``--step-range NAME``: NVTX text equal to NAME, else matching NAME as a case-insensitive regex
   (full match).
2. Built-in step names (case-insensitive): ``ProfilerStep#N``, ``step``, ``step_N``, ``step N``,
   ``train_step[_N]``, ``training_step[_N]``, ``iter[_N]``, ``iteration[_N]``, ``train_iter[_N]``.
   Names are grouped into families by stripping the trailing number; a family nested inside
   another (≥ 80% of its ranges inside the other's: micro-batches of gradient accumulation) loses,
   then ``ProfilerStep#N`` wins, then the family with the most ranges (ties: longest total time).
   Only the thread holding most of the family's ranges is kept, and nested/overlapping ranges are
   dropped so steps are disjoint.
3. A detected repeat — a loop iteration, never a layer: on one thread, the top-level NVTX name
   that recurs ≥ 5 times at the longest regular period (median absolute deviation of its
   start-to-start spacing ≤ 25% of the median) marks the start of each step; ties go to the name
   that occurs first (the head of the cycle). Layer, module and op ranges never qualify
   (``LAYER_RANGE_RE``: autograd Functions such as ``FlashAttnFunc``, ``*Backward*``, any name with
   ``::`` such as ``FSDP::*``/``aten::*``, ``nn.Module`` classes such as ``LlamaDecoderLayer``),
   nor a name nested in a larger unmarked cycle (its long gaps recur at a fixed stride and hold
   the rest of the iteration's GPU work).

Without steps the result is ``Unavailable`` with the reason, and the caller analyses the whole
window (``detect_steps`` is the one function ``analyze`` and ``inspect`` both call).

When consecutive step ranges leave substantial time between them (median gap > 5% of the median
step, e.g. the data loader runs before the ``step`` range opens), each step is extended to the next
step's start ("period" boundaries) and the last step, whose period is unknown, is incomplete.

Classification (thresholds in ``Thresholds``): the first ``warmup_steps`` steps, and further leading
steps slower than ``outlier_factor`` × median, are warm-up; an unterminated step, or a last step
holding fewer than ``incomplete_step_kernel_frac`` of the median step's kernels, is incomplete.
Both are excluded from the averages. Outliers (modified z-score > ``outlier_mad_k`` and at least
``outlier_factor`` × median, or faster than median / ``outlier_factor``) stay **in** the averages —
a checkpoint every N steps is a real cost — and are listed, with "periodic (every N steps)" when
they recur at a fixed stride. All times are integer ns; ``*_ms`` properties are float ms.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.steps.repeat import (  # noqa: F401  (re-exported: phases, inventory)
    FRAMEWORK_RANGE_RE, LAYER_RANGE_RE, REPEAT_MAX_SPREAD, REPEAT_MIN_COUNT, as_category,
    kernels_per_step, normalize_name, normalized_categories, normalized_names, regex_hits,
    repeat_steps)
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import HINT_CAPTURE_STEPS, HINT_MARK_STEPS

STEP_NAME_RE = re.compile(
    r"^\s*(?:profilerstep\s*#\s*\d+"
    r"|(?:train(?:ing)?[ _\-.]?)?step(?:[ _#:\-]*\d+)?"
    r"|(?:train(?:ing)?[ _\-.]?)?iter(?:ation)?(?:[ _#:\-]*\d+)?)\s*$",
    re.IGNORECASE,
)
"""Built-in step range names (see module docstring)."""

PERIOD_GAP_FRAC = 0.05
"""Median gap between step ranges above 5% of the median step → period boundaries (the TB
plugin's DataLoader 5% rule: anything that large outside the step would hide the loader)."""
STEP_KINDS = ("warmup", "normal", "outlier", "incomplete", "unselected")

WHOLE_WINDOW = ", so the whole window is analysed as one"
"""What a run without steps does, ending the reason (``selection`` drops it from a --steps
error: there nothing is analysed)."""


@dataclass(frozen=True)
class StepOutlier:
    index: int
    duration_ns: int
    ratio_to_median: float
    reason: str


@dataclass(frozen=True)
class StepsResult:
    """Detected steps (all of them, in time order) and their classification.

    ``starts_ns``/``ends_ns``: int64 arrays, disjoint and sorted. ``kinds``: one of ``STEP_KINDS``
    per step; steps with kind ``normal`` or ``outlier`` are *analysed* (they define the averages and
    the analysed window).
    """

    source: str  # "nvtx:<family>" | "user:<name>" | "repeat:<name>"
    range_name: str
    boundary: str  # "range" | "period"
    global_tid: int
    starts_ns: np.ndarray
    ends_ns: np.ndarray
    kinds: tuple[str, ...]
    kernel_counts: np.ndarray
    payloads: np.ndarray
    outliers: tuple[StepOutlier, ...] = ()
    notes: tuple[tuple[str, str, str], ...] = ()  # (code, message, severity) for data quality
    is_step_row: np.ndarray = field(default_factory=lambda: np.zeros(0, bool), repr=False)
    """Boolean mask over the NVTX frame passed in: rows that are step ranges (not phases)."""

    available = True

    # ------------------------------------------------------------------ derived
    @property
    def count(self) -> int:
        return int(self.starts_ns.size)

    @property
    def durations_ns(self) -> np.ndarray:
        return self.ends_ns - self.starts_ns

    @property
    def analysed_mask(self) -> np.ndarray:
        k = np.asarray(self.kinds, dtype=object)
        return (k == "normal") | (k == "outlier")

    @property
    def analysed_starts_ns(self) -> np.ndarray:
        return self.starts_ns[self.analysed_mask]

    @property
    def analysed_ends_ns(self) -> np.ndarray:
        return self.ends_ns[self.analysed_mask]

    @property
    def analysed_count(self) -> int:
        return int(self.analysed_mask.sum())

    @property
    def analysed_durations_ns(self) -> np.ndarray:
        return self.durations_ns[self.analysed_mask]

    @property
    def total_analysed_ns(self) -> int:
        return int(self.analysed_durations_ns.sum())

    @property
    def mean_ms(self) -> float | None:
        d = self.analysed_durations_ns
        return float(d.mean()) / 1e6 if d.size else None

    @property
    def median_ms(self) -> float | None:
        d = self.analysed_durations_ns
        return float(np.median(d)) / 1e6 if d.size else None

    def indices(self, kind: str) -> list[int]:
        return [i for i, k in enumerate(self.kinds) if k == kind]

    def to_json(self) -> dict:
        d = self.analysed_durations_ns.astype(np.float64) / 1e6

        def stat(f) -> float | None:
            return float(f(d)) if d.size else None

        return {
            "available": True,
            "count": self.count,
            "analysed_count": self.analysed_count,
            "source": self.source,
            "range_name": self.range_name,
            "boundary": self.boundary,
            "mean_ms": stat(np.mean),
            "median_ms": stat(np.median),
            "p90_ms": stat(lambda x: np.percentile(x, 90)),
            "max_ms": stat(np.max),
            "min_ms": stat(np.min),
            "warmup": self.indices("warmup"),
            "incomplete": self.indices("incomplete"),
            "outliers": [
                {"index": o.index, "duration_ms": o.duration_ns / 1e6,
                 "ratio_to_median": o.ratio_to_median, "reason": o.reason}
                for o in self.outliers
            ],
            "per_step": [
                {"index": i, "start_ns": int(s), "duration_ms": float(e - s) / 1e6, "kind": k}
                for i, (s, e, k) in enumerate(zip(self.starts_ns.tolist(), self.ends_ns.tolist(),
                                                  self.kinds))
            ],
        }


# ------------------------------------------------------------------------------------ helpers
def step_family(text: str) -> str:
    """``train_step_12`` → ``train_step_N``; ``ProfilerStep#3`` → ``ProfilerStep#N``."""
    t = str(text).strip()
    m = re.search(r"\d+\s*$", t)
    return (t[: m.start()] + "N") if m else t


def _rows_of(cat: pd.Series, hit_per_category) -> np.ndarray:
    """Boolean row mask from a boolean per category (codes −1 = missing → False)."""
    hit = np.asarray(hit_per_category, dtype=bool)
    codes = cat.cat.codes.to_numpy()
    if hit.size == 0:
        return np.zeros(codes.size, bool)
    return (codes >= 0) & hit[np.maximum(codes, 0)]


def _codes_matching(cat: pd.Series, rx: re.Pattern, *, full: bool = False) -> np.ndarray:
    """Rows whose text matches ``rx`` (``match``, or ``fullmatch``), evaluated once per category."""
    hits = regex_hits(cat.cat.categories, rx.pattern, ignore_case=bool(rx.flags & re.IGNORECASE),
                      full=full)
    return _rows_of(cat, hits)


def _disjoint(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Mask keeping ranges that start after every earlier range ended (drops nested/overlaps)."""
    if starts.size == 0:
        return np.zeros(0, bool)
    prev_end = np.concatenate(([np.iinfo(np.int64).min], np.maximum.accumulate(ends)[:-1]))
    return (starts >= prev_end) & (ends > starts)


# ---------------------------------------------------------------------------------- detection
def _user_rows(nvtx: pd.DataFrame, name: str) -> np.ndarray:
    text = as_category(nvtx["text"])
    exact = _rows_of(text, text.cat.categories.astype(str) == name)
    if exact.any():
        return exact
    try:
        rx = re.compile(name, re.IGNORECASE)
    except re.error:
        return exact
    return _codes_matching(text, rx, full=True)


NESTED_FAMILY_SHARE = 0.8
"""A step family whose ranges lie ≥ 80% inside another family's ranges is the inner loop
(micro-batches of gradient accumulation inside ``ProfilerStep#N``): the outer family wins."""


def _inside_other_family(mine: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bool:
    """≥ ``NESTED_FAMILY_SHARE`` of the ranges in ``mine`` start inside ranges of other families."""
    if not mine.any() or mine.all():
        return False
    ms, me = iv.merge_intervals(starts[~mine], ends[~mine])
    # strictly inside: a range starting exactly where an outer one starts is still nested
    s, e = starts[mine], ends[mine]
    which = iv.containing_interval(s, ms, me)
    inside = (which >= 0) & (e <= me[np.maximum(which, 0)]) & ~(
        (s == ms[np.maximum(which, 0)]) & (e == me[np.maximum(which, 0)]))
    return float(inside.mean()) >= NESTED_FAMILY_SHARE


def _named_step_rows(nvtx: pd.DataFrame) -> tuple[np.ndarray, str]:
    """Rows of the chosen built-in step family, and the family's display name."""
    text = as_category(nvtx["text"])
    is_step = _codes_matching(text, STEP_NAME_RE)
    if not is_step.any():
        return is_step, ""
    codes = text.cat.codes.to_numpy()[is_step]
    used = np.unique(codes)  # the few step-like categories
    fam_of_code = dict(zip(used.tolist(), (step_family(str(text.cat.categories[c])) for c in used)))
    fam = pd.Series(codes).map(fam_of_code).to_numpy(object)
    dur = (nvtx["end_ns"].to_numpy() - nvtx["start_ns"].to_numpy())[is_step]
    stats = pd.DataFrame({"fam": fam, "dur": dur}).groupby("fam", sort=True)["dur"].agg(["size", "sum"])
    stats["profiler"] = [f.lower().startswith("profilerstep") for f in stats.index]
    starts = nvtx["start_ns"].to_numpy(np.int64)[is_step]
    ends = nvtx["end_ns"].to_numpy(np.int64)[is_step]
    stats["outer"] = [not _inside_other_family(fam == f, starts, ends) for f in stats.index]
    stats = stats.sort_values(["outer", "profiler", "size", "sum"], ascending=False,
                              kind="stable")
    chosen = str(stats.index[0])
    rows = is_step.copy()
    rows[is_step] = fam == chosen
    return rows, chosen


# ------------------------------------------------------------------------------------ analysis
STEP_HINT = HINT_MARK_STEPS
Notes = list[tuple[str, str, str]]


def _range_steps(nvtx: pd.DataFrame, rows: np.ndarray, notes: Notes):
    """Steps from step ranges (``rows``): the ranges of the thread holding most of them, disjoint,
    in time order; with gaps between them (median gap > ``PERIOD_GAP_FRAC`` × median step) each
    step is extended to the next one's start (``boundary`` "period").
    → (starts ns, ends ns, closed, payloads, thread, boundary, is_step_row)."""
    starts_all = nvtx["start_ns"].to_numpy(np.int64)
    ends_all = nvtx["end_ns"].to_numpy(np.int64)
    tids_all = nvtx["global_tid"].to_numpy(np.int64)
    is_step_row = np.zeros(len(nvtx), bool)
    tid = int(pd.Series(tids_all[rows]).mode().iloc[0])
    rows &= tids_all == tid
    idx = np.flatnonzero(rows)
    idx = idx[np.argsort(starts_all[idx], kind="stable")]
    idx = idx[_disjoint(starts_all[idx], ends_all[idx])]
    is_step_row[np.flatnonzero(rows)] = True
    starts, ends = starts_all[idx], ends_all[idx]
    closed = nvtx["closed"].to_numpy(bool)[idx]
    payloads = nvtx["payload"].to_numpy(np.float64)[idx]
    boundary = "range"
    if starts.size >= 3:
        gaps = starts[1:] - ends[:-1]
        med_dur = float(np.median(ends - starts))
        if float(np.median(gaps)) > PERIOD_GAP_FRAC * med_dur:
            boundary = "period"
            ends = np.append(starts[1:], ends[-1]).astype(np.int64)
            notes.append(("step_gaps", f"step ranges leave {np.median(gaps) / 1e6:.3g} ms "
                          "between consecutive steps (median); each step was extended to the "
                          "next step's start so that time is analysed", "info"))
    return starts, ends, closed, payloads, tid, boundary, is_step_row


def _incomplete(dur: np.ndarray, closed: np.ndarray, boundary: str, source: str,
                kcount: np.ndarray, th: Thresholds, notes: Notes) -> np.ndarray:
    """Kinds "normal" / "incomplete": unterminated; the last of extended or repeat steps when
    short (< 0.8 × median); the last with < ``incomplete_step_kernel_frac`` of the median kernels."""
    n = dur.size
    kinds = np.array(["normal"] * n, dtype=object)
    kinds[~closed] = "incomplete"
    if boundary == "period" and n:
        kinds[-1] = "incomplete"
    if source.startswith("repeat") and n >= 3:
        if dur[-1] < 0.8 * np.median(dur[:-1]):
            kinds[-1] = "incomplete"
    if n >= 2 and kcount[:-1].size and np.median(kcount[:-1]) > 0:
        if kcount[-1] < th.incomplete_step_kernel_frac * np.median(kcount[:-1]):
            kinds[-1] = "incomplete"
    if any(k == "incomplete" for k in kinds):
        notes.append(("incomplete_steps", f"{int((kinds == 'incomplete').sum())} incomplete "
                      "step(s) (unterminated or cut by the capture) excluded from averages",
                      "info"))
    return kinds


def _select(kinds: np.ndarray, starts: np.ndarray, ends: np.ndarray, options: AnalyzeOptions,
            th: Thresholds, notes: Notes) -> None:
    """Marks (in place) steps outside the user's ``--steps``/``--window`` "unselected", else the
    first ``warmup_steps`` complete steps — and following ones slower than ``outlier_factor`` ×
    the median — "warmup"."""
    n = kinds.size
    dur = ends - starts
    sel = None  # the user's selection (--steps and/or --window): no warm-up guessing then
    if options.steps is not None:
        first, last = options.steps
        sel = np.zeros(n, bool)
        sel[first: n if last is None else last + 1] = True
    if options.window_ns is not None:  # only steps lying wholly inside --window
        lo, hi = options.window_ns
        inside = (starts >= lo) & (ends <= hi)
        sel = inside if sel is None else sel & inside
    if sel is not None:
        kinds[~sel & (kinds != "incomplete")] = "unselected"
        return
    complete = np.flatnonzero(kinds == "normal")
    # with ≥ 2 complete steps the first is warm-up (compilation, autotuning, allocator growth):
    # one warm step analysed beats averaging the warm-up in
    if complete.size >= max(2, th.warmup_steps + 1):
        kinds[complete[: th.warmup_steps]] = "warmup"
        rest = complete[th.warmup_steps:]
        med = float(np.median(dur[rest]))
        for i in rest:  # a handful of leading steps at most; stops at the first fast one
            if dur[i] > th.outlier_factor * med and (kinds[: i] != "normal").all():
                kinds[i] = "warmup"
            else:
                break
    elif complete.size == 1:
        notes.append(("single_step", "only one complete step: warm-up effects are included "
                      "and no step statistics are possible", "warning"))
    if th.warmup_steps >= 1 and complete.size == th.warmup_steps + 1:
        notes.append(("few_steps", f"only {complete.size} complete steps: the first is warm-up, "
                      "so one step is analysed (capture more steps for step statistics)",
                      "warning"))


def _outliers(kinds: np.ndarray, dur: np.ndarray, normal: np.ndarray,
              th: Thresholds) -> list[StepOutlier]:
    """Slow/fast steps among ≥ 3 normal ones: robust z (MAD) beyond ``outlier_mad_k`` and a ratio
    to the median beyond ``outlier_factor``; marked "outlier" in ``kinds`` (in place)."""
    outliers: list[StepOutlier] = []
    if normal.size < 3:
        return outliers
    d = dur[normal].astype(np.float64)
    med = float(np.median(d))
    mad = float(np.median(np.abs(d - med)))
    if mad > 0:
        z = 0.6745 * (d - med) / mad
    else:  # perfectly regular steps: any deviation is "infinitely" unusual; the ratio decides
        z = np.where(d > med, np.inf, np.where(d < med, -np.inf, 0.0))
    ratio = d / med if med > 0 else np.ones_like(d)
    slow = (z > th.outlier_mad_k) & (ratio >= th.outlier_factor)
    fast = (z < -th.outlier_mad_k) & (ratio <= 1.0 / th.outlier_factor)
    slow_idx = normal[slow]
    periodic = ""
    if slow_idx.size >= 2:
        strides = np.diff(slow_idx)
        if np.all(strides == strides[0]):
            periodic = f"periodic (every {int(strides[0])} steps)"
    for i, r, is_slow in zip(normal[slow | fast], ratio[slow | fast], slow[slow | fast]):
        reason = (periodic or "slow step") if is_slow else "fast step"
        outliers.append(StepOutlier(int(i), int(dur[i]), float(r), reason))
        kinds[i] = "outlier"
    return outliers


def analyze_steps(nvtx: pd.DataFrame, kernels: pd.DataFrame, *, options: AnalyzeOptions | None = None,
                  th: Thresholds | None = None) -> StepsResult | Unavailable:
    """Find the steps of one process (``nvtx``/``kernels`` already restricted to it)."""
    options = options or AnalyzeOptions()
    th = th or Thresholds()
    hint = STEP_HINT
    if len(nvtx) == 0:
        where = "the --window range" if options.window_ns is not None else "the trace"
        return Unavailable(f"no NVTX ranges in {where}, so steps cannot be found",
                           HINT_CAPTURE_STEPS)
    notes: Notes = []
    if options.step_range:
        rows = _user_rows(nvtx, options.step_range)
        if not rows.any():
            top = as_category(nvtx["text"]).value_counts().head(5)
            names = ", ".join(f"{n!s} ({c})" for n, c in top.items())
            return Unavailable(f"no NVTX range matches --step-range {options.step_range!r}",
                               f"most frequent NVTX ranges: {names}")
        source, range_name = f"user:{options.step_range}", options.step_range
    else:
        rows, fam = _named_step_rows(nvtx)
        source, range_name = f"nvtx:{fam}", fam

    if rows.any():
        starts, ends, closed, payloads, tid, boundary, is_step_row = _range_steps(nvtx, rows, notes)
    else:
        if options.step_range:
            return Unavailable("no usable step ranges", hint)  # pragma: no cover - guarded above
        rep = repeat_steps(nvtx, kernels)
        if rep is None:
            return Unavailable("no NVTX range looks like a step and no NVTX pattern repeats "
                               "(layer, module and op ranges are never steps)" + WHOLE_WINDOW,
                               hint)
        starts, ends, tid, head = rep
        source, range_name, boundary = f"repeat:{head}", head, "range"
        closed = np.ones(starts.size, bool)
        payloads = np.full(starts.size, np.nan)
        is_step_row = np.zeros(len(nvtx), bool)
        notes.append(("steps_from_repeat", f"no step ranges: steps were inferred from the repeating "
                      f"NVTX range {head!r} (lower confidence)", "warning"))

    kcount = kernels_per_step(kernels, starts, ends)
    dur = ends - starts
    kinds = _incomplete(dur, closed, boundary, source, kcount, th, notes)
    _select(kinds, starts, ends, options, th, notes)
    normal = np.flatnonzero(kinds == "normal")
    if normal.size == 0:
        return Unavailable("no complete step to analyse (every step is unterminated, cut or "
                           "outside --steps)", hint)
    outliers = _outliers(kinds, dur, normal, th)
    return StepsResult(
        source=source, range_name=range_name, boundary=boundary, global_tid=int(tid),
        starts_ns=starts.astype(np.int64), ends_ns=ends.astype(np.int64),
        kinds=tuple(str(k) for k in kinds), kernel_counts=kcount, payloads=payloads,
        outliers=tuple(outliers), notes=tuple(notes), is_step_row=is_step_row,
    )


def detect_steps(nvtx: pd.DataFrame, kernels: pd.DataFrame, options: AnalyzeOptions | None = None,
                 th: Thresholds | None = None) -> StepsResult | Unavailable:
    """The one step detector: what ``analyze`` analyses and what ``inspect`` may promise
    (``nvtx``/``kernels`` of one process; see the module docstring)."""
    return analyze_steps(nvtx, kernels, options=options, th=th)
