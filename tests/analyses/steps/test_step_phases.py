from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from nsys_diag.analyses.steps.step_phases import per_step_phase_ms


def _phases(matrix, analysed, canon):
    return SimpleNamespace(available=True, per_step_ns=np.array(matrix, dtype=np.int64),
                           analysed_indices=np.array(analysed),
                           rows=[SimpleNamespace(canonical=c) for c in canon])


def test_sums_rows_by_canonical_phase_in_ms_per_analysed_step():
    res = per_step_phase_ms(_phases([[1_000_000, 2_000_000, 500_000], [0, 4_000_000, 0]], [3, 5],
                                    ["forward", "backward", "forward"]))
    assert res == {3: {"backward": 2.0, "forward": 1.5}, 5: {"backward": 4.0, "forward": 0.0}}
    assert list(res[3]) == ["backward", "forward"]


def test_unavailable_or_empty_phases_give_nothing():
    assert per_step_phase_ms(None) == {}
    assert per_step_phase_ms(SimpleNamespace(available=False)) == {}
    assert per_step_phase_ms(_phases(np.zeros((0, 0)), [], [])) == {}
