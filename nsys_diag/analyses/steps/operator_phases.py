"""Forward and backward phases of a PyTorch profiler trace that has no ranges naming them.

A torch.profiler trace marks its steps (``ProfilerStep#N``) and, by itself, the data loader's
``enumerate(DataLoader)#…`` and ``Optimizer.step#…`` / ``Optimizer.zero_grad#…`` ranges — but
forward and backward only when the user wraps them in ``record_function``. Its host operators
(``TraceBundle.cpu_ops``) still say where they were. Heuristic, per step, applied only when no
NVTX range inside the steps maps to ``forward`` or ``backward`` (user ranges always win):

* **backward**: from the first to the last autograd engine operator
  (``autograd::engine::evaluate_function: …``, on whichever thread runs it) starting in the step,
  the end clipped to the step;
* **forward**: from the first to the last host operator of the step's thread that starts in the
  step before backward (the whole step when it has none), outside the thread's other ranges of
  that step (data loading, ``zero_grad``…), its end clipped to the backward start and the step.

The two are added as closed ranges of the step's thread, named ``INFERRED_FORWARD`` /
``INFERRED_BACKWARD`` (their canonical phases are ``forward`` / ``backward`` by the built-in
patterns), so the phase breakdown, the per-step phases and the gaps' phase attribution all read
them as they read user ranges. The NVTX frame comes back sorted as the contract keeps it and the
steps' ``is_step_row`` mask follows the new row order. An nsys export has no host operators: its
frames come back unchanged.
"""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.gaps.rows import name_mask
from nsys_diag.analyses.steps.detection import StepsResult
from nsys_diag.analyses.steps.phase_names import canonical_phase
from nsys_diag.analyses.timeline import intervals as iv

PhaseMap = tuple[tuple[str, tuple[str, ...]], ...]
"""User phase patterns as ``AnalyzeOptions.phase_map`` holds them: (canonical, regexes) pairs."""

INFERRED_FORWARD = "forward (inferred from host operators)"
INFERRED_BACKWARD = "backward (autograd engine operators)"
AUTOGRAD_OP_RE = re.compile(r"^autograd::engine::evaluate_function")
"""Host operators of autograd's backward pass (one per backward node, e.g.
``autograd::engine::evaluate_function: AddmmBackward0``)."""


def with_operator_phases(nvtx: pd.DataFrame, cpu_ops: pd.DataFrame | None,
                         steps: StepsResult | Unavailable, phase_map: PhaseMap | None = None
                         ) -> tuple[pd.DataFrame, StepsResult | Unavailable]:
    """(NVTX frame, steps) with the inferred forward/backward ranges added (module docstring);
    both unchanged when the trace has no host operators, no steps, or ranges naming either
    phase."""
    if cpu_ops is None or not len(cpu_ops) or not isinstance(steps, StepsResult) \
            or not steps.count or _names_a_pass(nvtx, steps, phase_map):
        return nvtx, steps
    st_s, st_e = steps.starts_ns.astype(np.int64), steps.ends_ns.astype(np.int64)
    bw_lo, bw_hi = _backward_spans(cpu_ops, st_s, st_e)
    fw_lo, fw_hi = _forward_spans(nvtx, cpu_ops, steps, bw_lo)
    rows = _range_rows(nvtx, steps, [(fw_lo, fw_hi, INFERRED_FORWARD),
                                     (bw_lo, bw_hi, INFERRED_BACKWARD)])
    if rows is None:
        return nvtx, steps
    return _joined(nvtx, steps, rows)


def _step_row_mask(nvtx: pd.DataFrame, steps: StepsResult) -> np.ndarray:
    return steps.is_step_row if steps.is_step_row.size == len(nvtx) else np.zeros(len(nvtx), bool)


def _in_steps(starts: np.ndarray, steps: StepsResult) -> np.ndarray:
    """Per start: the position of the step containing it, -1 for none."""
    return iv.containing_interval(starts, steps.starts_ns, steps.ends_ns)


def _inner_rows(nvtx: pd.DataFrame, steps: StepsResult) -> np.ndarray:
    """The NVTX rows that are no step but start inside one."""
    return (_in_steps(nvtx["start_ns"].to_numpy(np.int64), steps) >= 0) \
        & ~_step_row_mask(nvtx, steps)


def _names_a_pass(nvtx: pd.DataFrame, steps: StepsResult, phase_map: PhaseMap | None) -> bool:
    """Whether a non-step NVTX range starting inside a step maps to ``forward`` or ``backward``."""
    if not len(nvtx):
        return False
    names = pd.unique(nvtx["text"].astype(str).to_numpy()[_inner_rows(nvtx, steps)])
    return any(canonical_phase(str(n), phase_map) in ("forward", "backward") for n in names)


def _per_step_bounds(pos: np.ndarray, s: np.ndarray, e: np.ndarray, n: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Per step: (smallest start, largest end) of the rows at step positions ``pos`` (≥ 0);
    steps without rows get (int64 max, int64 min)."""
    lo = np.full(n, np.iinfo(np.int64).max, np.int64)
    hi = np.full(n, np.iinfo(np.int64).min, np.int64)
    ok = pos >= 0
    np.minimum.at(lo, pos[ok], s[ok])
    np.maximum.at(hi, pos[ok], e[ok])
    return lo, hi


def _backward_spans(cpu_ops: pd.DataFrame, st_s: np.ndarray, st_e: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Per step: the span of its autograd engine operators, clipped to the step (lo ≥ hi: none)."""
    bw = np.flatnonzero(name_mask(cpu_ops["text"], AUTOGRAD_OP_RE))
    s = cpu_ops["start_ns"].to_numpy(np.int64)[bw]
    e = cpu_ops["end_ns"].to_numpy(np.int64)[bw]
    pos = iv.containing_interval(s, st_s, st_e)
    lo, hi = _per_step_bounds(pos, s, e, st_s.size)
    return lo, np.minimum(hi, st_e)


def _forward_spans(nvtx: pd.DataFrame, cpu_ops: pd.DataFrame, steps: StepsResult,
                   bw_lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per step: the span of the step thread's host operators before backward and outside the
    thread's other ranges in the steps, clipped to the backward start and the step."""
    st_e = steps.ends_ns.astype(np.int64)
    s = cpu_ops["start_ns"].to_numpy(np.int64)
    e = cpu_ops["end_ns"].to_numpy(np.int64)
    pos = _in_steps(s, steps)
    keep = (pos >= 0) & (cpu_ops["global_tid"].to_numpy(np.int64) == steps.global_tid)
    keep[keep] = s[keep] < bw_lo[pos[keep]]
    r_s, r_e = _other_ranges(nvtx, steps)
    if r_s.size:
        keep &= iv.containing_interval(s, r_s, r_e) < 0
    lo, hi = _per_step_bounds(np.where(keep, pos, -1), s, e, st_e.size)
    return lo, np.minimum(np.minimum(hi, st_e), bw_lo)


def _other_ranges(nvtx: pd.DataFrame, steps: StepsResult) -> tuple[np.ndarray, np.ndarray]:
    """The step thread's non-step NVTX ranges inside the steps, merged (disjoint, sorted)."""
    if not len(nvtx):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    s = nvtx["start_ns"].to_numpy(np.int64)
    e = nvtx["end_ns"].to_numpy(np.int64)
    pick = _inner_rows(nvtx, steps) \
        & (nvtx["global_tid"].to_numpy(np.int64) == steps.global_tid) & (e > s)
    return iv.merge_intervals(s[pick], e[pick])


def _range_rows(nvtx: pd.DataFrame, steps: StepsResult,
                spans: list[tuple[np.ndarray, np.ndarray, str]]) -> pd.DataFrame | None:
    """The inferred ranges as NVTX rows of the step's thread (its process ids and domain taken
    from a step row), or None when no step has one."""
    starts, ends, names = [], [], []
    for lo, hi, name in spans:
        ok = hi > lo
        starts.append(lo[ok])
        ends.append(hi[ok])
        names.extend([name] * int(ok.sum()))
    if not names:
        return None
    step_rows = np.flatnonzero(_step_row_mask(nvtx, steps))
    like = nvtx.iloc[int(step_rows[0])] if step_rows.size else None
    n = len(names)
    ident = {c: (like[c] if like is not None and c in nvtx else -1)
             for c in ("global_pid", "pid", "tid")}
    return pd.DataFrame({
        "start_ns": np.concatenate(starts), "end_ns": np.concatenate(ends), "closed": True,
        "text": pd.Categorical(names), "domain": like["domain"] if like is not None else "",
        "kind": "push_pop", "global_tid": steps.global_tid, "end_global_tid": steps.global_tid,
        **{c: np.full(n, v) for c, v in ident.items()}, "payload": np.nan})


def _joined(nvtx: pd.DataFrame, steps: StepsResult, rows: pd.DataFrame
            ) -> tuple[pd.DataFrame, StepsResult]:
    """``nvtx`` and ``rows`` as one frame sorted by start, longest first (stable), and the
    steps with ``is_step_row`` in that order."""
    rows = rows[[c for c in nvtx.columns if c in rows]].astype(
        {c: nvtx[c].dtype for c in nvtx.columns if c in rows and c != "text"})
    text = union_categoricals([nvtx["text"].astype("category"), rows["text"]])
    both = pd.concat([nvtx.drop(columns="text"), rows.drop(columns="text")], ignore_index=True)
    both.insert(list(nvtx.columns).index("text"), "text", text)
    mask = np.concatenate([_step_row_mask(nvtx, steps), np.zeros(len(rows), bool)])
    order = np.lexsort((-both["end_ns"].to_numpy(np.int64), both["start_ns"].to_numpy(np.int64)))
    out = both.iloc[order].reset_index(drop=True)
    return out, dataclasses.replace(steps, is_step_row=mask[order])
