"""Per-step phase times: exclusive milliseconds per canonical phase in each analysed step.

``per_step_phase_ms(phases)`` reads the per-step matrix ``analyze_phases`` keeps
(``per_step_ns``: analysed step × phase row, integer ns, exclusive) and sums its columns by
canonical phase. compare bootstraps phase changes over these values.
"""
from __future__ import annotations

import numpy as np


def per_step_phase_ms(phases_result) -> dict[int, dict[str, float]]:
    """``{step index: {canonical phase: ms}}`` for every analysed step; ``{}`` when the phases
    result is unavailable or holds no per-step matrix. Canonical phases are sorted by name."""
    if not getattr(phases_result, "available", False):
        return {}
    matrix = getattr(phases_result, "per_step_ns", None)
    analysed = getattr(phases_result, "analysed_indices", None)
    if matrix is None or analysed is None or matrix.size == 0:
        return {}
    canon = [r.canonical for r in phases_result.rows]
    names = sorted(set(canon))
    columns = {c: np.array([j for j, k in enumerate(canon) if k == c]) for c in names}
    sums = {c: np.asarray(matrix)[:, columns[c]].sum(axis=1) for c in names}
    return {int(i): {c: float(sums[c][pos]) / 1e6 for c in names}
            for pos, i in enumerate(np.asarray(analysed).tolist())}
