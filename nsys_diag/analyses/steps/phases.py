"""Phase breakdown of steps: exclusive time per top-level NVTX range, mapped to canonical phases.

* **Phase ranges** are the NVTX ranges on the step's thread that start inside an analysed step and
  are not nested in another such range (top level; nested time counted once). Ending past the step
  they are clipped to it. If that thread has none, ranges of every thread of the process are used.
  Partially overlapping top-level ranges (start/end ranges) give the overlap to the one that
  started first, so the breakdown is exclusive. Step time covered by no phase is ``other``.
* **Names** are normalised for grouping: ``, op_id = N`` / ``, seq = N`` suffixes and a trailing
  ``_N`` / ``#N`` / `` N`` counter are stripped (``micro_batch_3`` → ``micro_batch``).
* **Canonical phase** (``CANONICAL_PHASES``): the first matching pattern of ``--phase-map`` (user),
  then of ``DEFAULT_PHASE_PATTERNS`` (case-insensitive regex search, tried in that order).
* Per phase, averaged over the analysed steps (a phase absent from a step counts 0 there):
  ``mean_ms`` wall time; ``share`` = mean_ms / mean step ms (shares sum to 1);
  ``gpu_busy_ms`` = kernel (compute) busy time inside the phase's wall-clock span, mean over the
  process's GPUs (≤ mean_ms); ``gpu_work_ms`` = durations of the kernels whose launch call lies in
  the phase span — on **any thread of the process** (autograd's backward thread included; CUDA
  graph kernels carry their ``cudaGraphLaunch`` call) — per GPU; that work may run later.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.analyses.base import Unavailable, is_available
from nsys_diag.analyses.timeline.busy import DeviceBusy, mean_covered_per_window
from nsys_diag.analyses.steps.detection import StepsResult, normalize_name, normalized_names
from nsys_diag.model.contracts import MISSING
from nsys_diag.analyses.steps.phase_names import DEFAULT_PHASE_PATTERNS, canonical_phase, parse_phase_map
from nsys_diag.model.vocabulary import CANONICAL_PHASES

__all__ = ["DEFAULT_PHASE_PATTERNS", "MAX_PHASE_ROWS", "PhaseRow", "PhasesResult", "analyze_phases",
           "canonical_phase", "explain_outliers", "parse_phase_map", "phase_group_name",
           "phase_rows"]


MAX_PHASE_ROWS = 15
"""Distinct phase names beyond the 15 longest are folded into one row per canonical phase."""

_TRAILING_COUNTER_RE = re.compile(r"[ _#:\-]+\d+\s*$")


def phase_group_name(text: str) -> str:
    return _TRAILING_COUNTER_RE.sub("", normalize_name(text)) or str(text)


@dataclass(frozen=True)
class PhaseRow:
    name: str
    canonical: str
    mean_ms: float
    share: float
    gpu_busy_ms: float | None  # None when the process has no GPU activity
    gpu_work_ms: float | None
    count: int

    @property
    def gpu_busy_share(self) -> float | None:
        if self.gpu_busy_ms is None or self.mean_ms <= 0:
            return None
        return min(self.gpu_busy_ms / self.mean_ms, 1.0)

    def to_json(self) -> dict:
        return {"name": self.name, "canonical": self.canonical, "mean_ms": self.mean_ms,
                "share": self.share, "gpu_busy_ms": self.gpu_busy_ms,
                "gpu_busy_share": self.gpu_busy_share, "gpu_work_ms": self.gpu_work_ms,
                "count": self.count}


@dataclass(frozen=True)
class PhasesResult:
    """Rows (one per phase name, then ``other``) and the exclusive phase instances.

    Instances (``inst_*`` arrays, disjoint, sorted by start): effective span after exclusivity,
    row index into ``rows`` and analysed-step position. ``per_step_ns``: analysed steps × rows
    matrix of exclusive ns (last column = other).
    """

    rows: tuple[PhaseRow, ...]
    step_mean_ms: float
    inst_starts_ns: np.ndarray
    inst_ends_ns: np.ndarray
    inst_row: np.ndarray
    inst_step: np.ndarray
    analysed_indices: np.ndarray
    per_step_ns: np.ndarray
    unattributed_kernels: int = 0
    thread_scope: str = "step_thread"  # or "all_threads"

    available = True

    def to_json(self) -> list[dict]:
        return [r.to_json() for r in self.rows]

    def canonical_intervals(self, canonical: str) -> tuple[np.ndarray, np.ndarray]:
        """Instance spans (sorted, disjoint) whose row maps to ``canonical``."""
        rows = np.array([r.canonical == canonical for r in self.rows], bool)
        m = rows[self.inst_row] if self.inst_row.size else np.zeros(0, bool)
        return self.inst_starts_ns[m], self.inst_ends_ns[m]

    def canonical_ms(self, canonical: str) -> float:
        return float(sum(r.mean_ms for r in self.rows if r.canonical == canonical))

    def canonical_share(self, canonical: str) -> float:
        return float(sum(r.share for r in self.rows if r.canonical == canonical))

    def phase_windows(self) -> pd.DataFrame:
        """DataFrame[phase, start_ns, end_ns] of every instance (for per-phase GPU metrics)."""
        names = np.array([r.name for r in self.rows], dtype=object)
        return pd.DataFrame({"phase": names[self.inst_row] if self.inst_row.size else [],
                             "start_ns": self.inst_starts_ns, "end_ns": self.inst_ends_ns})

    def dominant_excess_phase(self, step_index: int) -> str | None:
        """Phase whose time in step ``step_index`` exceeds its mean the most (for outliers)."""
        pos = np.flatnonzero(self.analysed_indices == step_index)
        if pos.size == 0 or self.per_step_ns.size == 0:
            return None
        excess = self.per_step_ns[pos[0]] / 1e6 - np.array([r.mean_ms for r in self.rows])
        j = int(np.argmax(excess))
        return self.rows[j].name if excess[j] > 0 else None


def _top_level(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Indices (sorted by start, then longest first) of ranges not contained in an earlier one."""
    order = np.lexsort((-ends, starts))
    e = ends[order]
    prev = np.concatenate(([np.iinfo(np.int64).min], np.maximum.accumulate(e)[:-1]))
    return order[e > prev]


def _phase_instances(nvtx: pd.DataFrame, steps: StepsResult, st_s: np.ndarray, st_e: np.ndarray):
    """Top-level NVTX ranges inside the analysed steps (clipped to them, made exclusive) →
    (NVTX row index, step position, effective start ns, end ns, thread scope)."""
    starts = nvtx["start_ns"].to_numpy(np.int64)
    ends = nvtx["end_ns"].to_numpy(np.int64)
    step_rows = steps.is_step_row if steps.is_step_row.size == len(nvtx) else np.zeros(len(nvtx), bool)
    in_step = iv.containing_interval(starts, st_s, st_e)
    cand = (in_step >= 0) & ~step_rows
    scope = "step_thread"
    on_thread = cand & (nvtx["global_tid"].to_numpy(np.int64) == steps.global_tid)
    if on_thread.any():
        cand = on_thread
    elif cand.any():
        scope = "all_threads"
    idx = np.flatnonzero(cand)
    c_step = in_step[idx]
    c_s = starts[idx]
    c_e = np.minimum(ends[idx], st_e[c_step])
    ok = c_e > c_s
    idx, c_step, c_s, c_e = idx[ok], c_step[ok], c_s[ok], c_e[ok]
    top = _top_level(c_s, c_e)
    idx, c_step, c_s, c_e = idx[top], c_step[top], c_s[top], c_e[top]
    # exclusivity between partially overlapping top-level ranges: the earlier one keeps the overlap
    prev_end = np.concatenate(([np.iinfo(np.int64).min], np.maximum.accumulate(c_e)[:-1]))
    eff_s = np.maximum(c_s, prev_end)
    keep = c_e > eff_s
    return idx[keep], c_step[keep], eff_s[keep], c_e[keep], scope


def _instance_groups(nvtx: pd.DataFrame, idx: np.ndarray) -> tuple[pd.Index, np.ndarray]:
    """(sorted group names, group of each instance): names normalised once per category."""
    text = nvtx["text"]
    if not isinstance(text.dtype, pd.CategoricalDtype):
        text = text.astype("category")
    # only the categories used by phase instances (the table may hold millions of op names)
    used_codes, inst_cat = np.unique(text.cat.codes.to_numpy()[idx], return_inverse=True)
    raw = text.cat.categories[used_codes].astype(str) if used_codes.size else pd.Index([], dtype=object)
    names = normalized_names(raw).str.replace(_TRAILING_COUNTER_RE, "", regex=True)
    names = names.where(names != "", raw)
    group_names = pd.Index(pd.unique(names)).sort_values() if len(names) else pd.Index([], dtype=object)
    inst_group = (group_names.get_indexer(names)[inst_cat.reshape(-1)] if idx.size
                  else np.zeros(0, np.int64)).astype(np.int64)
    return group_names, inst_group


def launched_work(kernels: pd.DataFrame, eff_s: np.ndarray, eff_e: np.ndarray,
                   st_s: np.ndarray, st_e: np.ndarray) -> tuple[np.ndarray, float, int]:
    """Kernel ns launched inside each instance (any thread of the process), kernel ns launched
    in the steps but in no instance, and the number of kernels without a launch call."""
    inst_work = np.zeros(eff_s.size, np.float64)
    if not len(kernels):
        return inst_work, 0.0, 0
    ls = kernels["launch_start_ns"].to_numpy(np.int64)
    has = ls != MISSING
    unattributed = int(has.size - np.count_nonzero(has))
    if not unattributed and iv.is_sorted(ls):
        # perf (bench): launch calls in time order: the kernels launched inside a window are one
        # run of rows, summed from integer prefix sums (equal to the float row sums: integers
        # below 2^53 ns, 104 days, add exactly in any order)
        cum = iv.covered_prefix(kernels["start_ns"].to_numpy(np.int64),
                                kernels["end_ns"].to_numpy(np.int64))  # kernel ns before row i

        def launched_in(s: np.ndarray, e: np.ndarray) -> np.ndarray:
            return cum[np.searchsorted(ls, e, side="left")] - cum[np.searchsorted(ls, s, side="left")]

        inst_ns = launched_in(eff_s, eff_e)
        # instances lie inside their (disjoint) steps: in steps but in no instance = the rest
        return inst_ns.astype(np.float64), float(int(launched_in(st_s, st_e).sum())
                                                 - int(inst_ns.sum())), unattributed
    kd = (kernels["end_ns"].to_numpy(np.int64) - kernels["start_ns"].to_numpy(np.int64))
    if unattributed:  # perf (bench): no copy of 2M launch times when every kernel has one
        ls, kd = ls[has], kd[has]
    del has
    order = np.argsort(eff_s, kind="stable")
    which = iv.containing_interval(ls, eff_s[order], eff_e[order])
    hit = which >= 0
    # per instance, kernel durations summed in row order (what np.add.at did), bin 0 = none
    which += 1
    work = np.bincount(which, weights=kd.astype(np.float64), minlength=eff_s.size + 1)
    del which
    inst_work[order] = work[1:]
    in_steps = iv.containing_interval(ls, st_s, st_e) >= 0
    in_steps &= ~hit
    return inst_work, float(kd.sum(where=in_steps)), unattributed


def _row_map(present: np.ndarray, total_by_group: np.ndarray, mean_offset: np.ndarray,
             group_names: pd.Index, phase_map) -> tuple[list[str], list[str], np.ndarray]:
    """(row names, their canonical phases, group → row): the ``MAX_PHASE_ROWS`` longest groups in
    time order, rarer names folded into one row per canonical phase."""
    ranked = present[np.argsort(-total_by_group[present], kind="stable")]
    kept, folded = ranked[:MAX_PHASE_ROWS], ranked[MAX_PHASE_ROWS:]
    row_names: list[str] = []
    row_canon: list[str] = []
    group_to_row = np.full(len(group_names), -1, np.int64)
    for g in sorted(kept, key=lambda g: (mean_offset[g], group_names[g])):  # ≤ 15 rows
        group_to_row[g] = len(row_names)
        row_names.append(str(group_names[g]))
        row_canon.append(canonical_phase(str(group_names[g]), phase_map))
    if folded.size:
        fold_canon = [canonical_phase(str(group_names[g]), phase_map) for g in folded]
        for canon in CANONICAL_PHASES:  # fixed handful
            members = [g for g, c in zip(folded, fold_canon) if c == canon]
            if members:
                group_to_row[members] = len(row_names)
                row_names.append(f"{len(members)} more {canon} ranges")
                row_canon.append(canon)
    return row_names, row_canon, group_to_row


def phase_rows(per_row: np.ndarray, row_names: list[str], row_canon: list[str],
               row_busy: np.ndarray, row_work: np.ndarray, row_count: np.ndarray,
               other_busy: float, other_work_ns: float, step_ns: np.ndarray, n_dev: int,
               has_busy: bool) -> list[PhaseRow]:
    """One :class:`PhaseRow` per row plus ``other`` (step time in no phase), means per step.

    ``per_row``: analysed steps × (rows + other) exclusive ns; ``row_busy``: per row, the
    *unclamped* sum over its instances of the compute-busy ns (mean over devices) — clamped to the
    row's wall time here; ``row_work``: per row, kernel ns launched inside its instances (all
    devices); ``other_busy`` / ``other_work_ns``: the same for step time in no instance. Shared by
    ``analyze_phases`` and the chunk merge (``steps/phases_spans.py``)."""
    n_steps, n_rows = per_row.shape[0], len(row_names)
    mean_step_ns = float(step_ns.mean())
    rows = []
    for j in range(n_rows + 1):  # ≤ 22 rows
        is_other = j == n_rows
        mean_ns = float(per_row[:, j].sum()) / n_steps
        busy_ns = (max(other_busy, 0.0) if is_other else float(row_busy[j])) / n_steps
        work_ns = (other_work_ns if is_other else float(row_work[j])) / n_steps / n_dev
        rows.append(PhaseRow(
            name="other" if is_other else row_names[j],
            canonical="other" if is_other else row_canon[j],
            mean_ms=mean_ns / 1e6,
            share=mean_ns / mean_step_ns if mean_step_ns > 0 else 0.0,
            gpu_busy_ms=min(busy_ns, mean_ns) / 1e6 if has_busy else None,
            gpu_work_ms=work_ns / 1e6 if has_busy else None,
            count=0 if is_other else int(row_count[j]),
        ))
    return rows


def analyze_phases(nvtx: pd.DataFrame, steps: StepsResult | Unavailable, kernels: pd.DataFrame,
                   busy: dict[int, DeviceBusy], *, phase_map=None) -> PhasesResult | Unavailable:
    """Exclusive per-step phase breakdown of one process (frames restricted to it)."""
    if not isinstance(steps, StepsResult):
        return Unavailable("phases need steps: " + getattr(steps, "reason", "no steps"),
                           getattr(steps, "hint", ""))
    a_idx = np.flatnonzero(steps.analysed_mask)
    st_s, st_e = steps.starts_ns[a_idx], steps.ends_ns[a_idx]
    n_steps = a_idx.size
    step_ns = (st_e - st_s).astype(np.int64)
    idx, c_step, eff_s, eff_e, scope = _phase_instances(nvtx, steps, st_s, st_e)
    group_names, inst_group = _instance_groups(nvtx, idx)
    n_groups = len(group_names)
    dur = (eff_e - eff_s).astype(np.int64)

    per_step = np.zeros((n_steps, n_groups), np.int64)
    np.add.at(per_step, (c_step, inst_group), dur)
    counts = np.bincount(inst_group, minlength=n_groups)
    # order rows by mean offset of the phase from its step start (time order inside a step)
    offset = (eff_s - st_s[c_step]).astype(np.float64)
    off_sum = np.bincount(inst_group, weights=offset, minlength=n_groups)
    mean_offset = np.where(counts > 0, off_sum / np.maximum(counts, 1), np.inf)
    present = np.flatnonzero(counts > 0)

    # GPU busy per instance (mean over devices) and GPU work launched inside each instance
    inst_busy = mean_covered_per_window(busy, eff_s, eff_e, "compute")
    inst_work, other_work_ns, unattributed = launched_work(kernels, eff_s, eff_e, st_s, st_e)
    step_busy = mean_covered_per_window(busy, st_s, st_e, "compute")

    row_names, row_canon, group_to_row = _row_map(present, per_step.sum(axis=0), mean_offset,
                                                  group_names, phase_map)
    n_rows = len(row_names)
    inst_row = group_to_row[inst_group] if inst_group.size else np.zeros(0, np.int64)
    per_row = np.zeros((n_steps, n_rows + 1), np.int64)
    if inst_row.size:
        np.add.at(per_row, (c_step, inst_row), dur)
    per_row[:, n_rows] = step_ns - per_row[:, :n_rows].sum(axis=1)
    row_busy = np.bincount(inst_row, weights=inst_busy, minlength=n_rows) if inst_row.size else np.zeros(n_rows)
    row_work = np.bincount(inst_row, weights=inst_work, minlength=n_rows) if inst_row.size else np.zeros(n_rows)
    row_count = np.bincount(inst_row, minlength=n_rows) if inst_row.size else np.zeros(n_rows, np.int64)
    rows = phase_rows(per_row, row_names, row_canon, row_busy, row_work, row_count,
                 float(step_busy.sum() - inst_busy.sum()), other_work_ns, step_ns,
                 max(len(busy), 1), bool(busy))
    order = np.argsort(eff_s, kind="stable")
    return PhasesResult(
        rows=tuple(rows), step_mean_ms=float(step_ns.mean()) / 1e6,
        inst_starts_ns=eff_s[order], inst_ends_ns=eff_e[order], inst_row=inst_row[order],
        inst_step=a_idx[c_step][order], analysed_indices=a_idx, per_step_ns=per_row,
        unattributed_kernels=unattributed, thread_scope=scope,
    )


def explain_outliers(steps, phases):
    """``steps`` with each outlier's reason naming the phase that grew the most in that step
    (``PhasesResult.dominant_excess_phase``, e.g. ``save_checkpoint``); ``steps`` unchanged
    without outliers or phases."""
    if not is_available(steps) or not steps.outliers or not is_available(phases):
        return steps
    import dataclasses

    out = []
    for o in steps.outliers:  # a handful of outlier steps
        ph = phases.dominant_excess_phase(o.index)
        out.append(dataclasses.replace(o, reason=f"{o.reason}: {ph}") if ph else o)
    return dataclasses.replace(steps, outliers=tuple(out))
