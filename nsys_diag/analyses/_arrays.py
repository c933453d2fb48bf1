"""Small numpy helpers for the 2M-row hot paths (perf, bench): cheap checks before costly work."""
from __future__ import annotations

import numpy as np
import pandas as pd


def all_equal(a: np.ndarray) -> bool:
    """Every value of a non-empty array is the same (one pass, one boolean temporary)."""
    return bool(a.size) and bool(a[0] == a[-1]) and bool((a == a[0]).all())


def unique_ints(a: np.ndarray) -> list[int]:
    """Distinct values of an integer array in first-appearance order (as ``pd.unique``), as
    Python ints; O(n) with no hashing when every value is the same (one GPU, one process)."""
    if all_equal(a):
        return [int(a[0])]
    return [int(x) for x in pd.unique(a)]


def contiguous_run(keep: np.ndarray) -> tuple[int, int] | None:
    """``(first, stop)`` when the True values of a boolean mask form one contiguous run (or
    there are none: ``(0, 0)``), else None — such a selection is a slice, not a copy."""
    idx = np.flatnonzero(keep)
    if idx.size == 0:
        return 0, 0
    if int(idx[-1]) - int(idx[0]) + 1 == idx.size:
        return int(idx[0]), int(idx[-1]) + 1
    return None
