"""Small numpy helpers of the 2M-row hot paths (``analyses/timeline/arrays.py``)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nsys_diag.analyses.timeline.arrays import all_equal, contiguous_run, exact_sum, unique_ints


def test_all_equal():
    assert all_equal(np.array([3, 3, 3])) and all_equal(np.array([7]))
    assert not all_equal(np.array([], np.int64))
    assert not all_equal(np.array([3, 4, 3])) and not all_equal(np.array([1, 1, 2]))


@pytest.mark.parametrize("values", [[], [5], [5, 5, 5], [2, 1, 2, 3, 1], [0, 1 << 40, 0]])
def test_unique_ints_is_pd_unique_as_ints(values):
    a = np.array(values, np.int64)
    got = unique_ints(a)
    assert got == [int(x) for x in pd.unique(a)]
    assert all(type(x) is int for x in got)


@pytest.mark.parametrize("mask,want", [
    ([], (0, 0)), ([False, False], (0, 0)), ([True, True], (0, 2)),
    ([False, True, True, False], (1, 3)), ([True, False, True], None), ([False, False, True], (2, 3)),
])
def test_contiguous_run(mask, want):
    m = np.array(mask, bool)
    assert contiguous_run(m) == want
    if want is not None:  # the run selects exactly the True rows
        assert np.flatnonzero(m).tolist() == list(range(*want))


@pytest.mark.parametrize("seed", range(6))
def test_contiguous_run_on_random_masks_matches_the_index_array(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    m = np.zeros(n, bool)
    a, b = sorted(rng.integers(0, n + 1, 2))
    m[a:b] = True
    if seed % 2:  # a hole: no longer one run
        m[rng.integers(0, n)] = not m[rng.integers(0, n)]
    idx = np.flatnonzero(m)
    want = (0, 0) if idx.size == 0 else (
        (int(idx[0]), int(idx[-1]) + 1) if idx[-1] - idx[0] + 1 == idx.size else None)
    assert contiguous_run(m) == want


@pytest.mark.parametrize("mask", [[True, True, False], [False, True, True, False],
                                  [True, False, True], [False, False, False], [True, True, True]])
def test_take_rows_is_loc_and_reset_index(mask):
    from nsys_diag.analyses.timeline.arrays import take_rows

    df = pd.DataFrame({"a": np.arange(len(mask)), "b": list("xyzw")[:len(mask)]})
    m = np.array(mask, bool)
    pd.testing.assert_frame_equal(take_rows(df, m), df.loc[m].reset_index(drop=True))


@pytest.mark.parametrize("values", [[], [5], [1 << 62] * 4, [(1 << 63) - 1] * 3 + [-7],
                                    list(range(-1000, 3000, 7)), [-(1 << 63), 1, (1 << 40) + 3]])
def test_exact_sum_never_wraps(values):
    assert exact_sum(np.array(values, dtype=np.int64)) == sum(values)
