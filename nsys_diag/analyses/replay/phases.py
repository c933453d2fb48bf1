"""The phase a replayed moment belongs to: the outermost non-step NVTX ranges of the step's
thread (default domain), named by their canonical phase (``steps/phase_names.py``) or, when none
maps, by their family name (``layer_3`` → ``layer_N``). Captured ns."""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

import numpy as np
import pandas as pd

from nsys_diag.analyses.steps.detection import step_family
from nsys_diag.analyses.steps.phase_names import canonical_phase
from nsys_diag.analyses.steps.repeat import normalize_name

PhaseRanges = tuple["np.ndarray | Sequence[int]", "np.ndarray | Sequence[int]", list[str]]
"""(starts, ends, names) of disjoint phase ranges, sorted (arrays or lists)."""


def phase_ranges(nvtx: pd.DataFrame, global_tid: int, is_step_row: np.ndarray | None,
                 phase_map=None) -> PhaseRanges:
    """(starts, ends, phase names) of the outermost non-step NVTX ranges of ``global_tid``,
    sorted and disjoint: the phase of a time on the critical path. The name is the canonical
    phase (``phase_names``; ``phase_map``: the user's ``--phase-map`` first) when the range maps
    to one, else the range's family name."""
    if not len(nvtx):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), []
    keep = nvtx["global_tid"].to_numpy(np.int64) == global_tid
    if is_step_row is not None and is_step_row.size == len(nvtx):
        keep &= ~is_step_row
    default = (nvtx["domain"].astype(str) == "").to_numpy()
    if (keep & default).any():  # library domains (NCCL, MPI …) wrap calls, they are no phases
        keep &= default
    sub = nvtx.loc[keep]
    s, e = sub["start_ns"].to_numpy(np.int64), sub["end_ns"].to_numpy(np.int64)
    order = np.lexsort((-e, s))
    s, e = s[order], e[order]
    texts = sub["text"].astype(str).to_numpy()[order]
    if not s.size:
        return s, e, []
    prior = np.maximum.accumulate(e)
    top = np.ones(s.size, bool)
    top[1:] = e[1:] > prior[:-1]
    top[1:] &= s[1:] >= prior[:-1]  # partly overlapping ranges: the first one keeps the time
    names = []
    for t in texts[top].tolist():
        norm = normalize_name(t)
        canon = canonical_phase(norm, phase_map)
        names.append(canon if canon != "other" else step_family(norm))
    return s[top], e[top], names


def phase_at(ranges: PhaseRanges, t: int) -> str:
    """The phase name at captured time ``t`` ('' outside every range)."""
    s, e, names = ranges
    j = bisect_right(s, t) - 1
    return names[j] if j >= 0 and t < e[j] else ""


def phase_split(ranges: PhaseRanges, a: int, b: int) -> list[tuple[str, int]]:
    """Captured interval [a, b] cut by the phase ranges: (phase name, ns) pieces in time order
    ('' for the parts outside every range); their lengths add up to ``b - a``."""
    s, e, names = ranges
    if b <= a:
        return []
    lo = bisect_right(e, a)
    hi = bisect_left(s, b)
    out, t = [], a
    for j in range(lo, hi):
        x0, x1 = max(int(s[j]), a), min(int(e[j]), b)
        if x1 <= x0:
            continue
        if x0 > t:
            out.append(("", x0 - t))
        out.append((names[j], x1 - max(x0, t)))
        t = max(t, x1)
    if b > t:
        out.append(("", b - t))
    return out


WAIT_PHASES = ("backward",)
"""Canonical phases in which the step thread blocks on the process's other threads: PyTorch's
``loss.backward()`` returns when the autograd engine's threads have run the whole backward."""


def wait_spans(ranges: PhaseRanges) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the phase ranges in which the step thread waits for the process's other
    threads (``WAIT_PHASES``), sorted by start."""
    s, e = np.asarray(ranges[0], np.int64), np.asarray(ranges[1], np.int64)
    keep = np.array([n in WAIT_PHASES for n in ranges[2]], bool)
    return (s[keep], e[keep]) if keep.size else (s[:0], e[:0])
