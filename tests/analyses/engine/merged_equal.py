"""``assert_same``: a merged result's JSON equals the in-memory one — ints, strings, bools and
list order identical, floats equal to relative 1e-9."""
from __future__ import annotations

import math


def assert_same(merged, whole, path: str = "$") -> None:
    if isinstance(whole, float) and isinstance(merged, (int, float)) and not isinstance(merged, bool):
        assert math.isclose(merged, whole, rel_tol=1e-9, abs_tol=1e-12), (path, merged, whole)
        return
    assert type(merged) is type(whole), (path, type(merged), type(whole))
    if isinstance(whole, dict):
        assert list(merged) == list(whole), (path, list(merged), list(whole))
        for k in whole:
            assert_same(merged[k], whole[k], f"{path}.{k}")
    elif isinstance(whole, (list, tuple)):
        assert len(merged) == len(whole), (path, len(merged), len(whole))
        for i, (a, b) in enumerate(zip(merged, whole)):
            assert_same(a, b, f"{path}[{i}]")
    else:
        assert merged == whole, (path, merged, whole)
