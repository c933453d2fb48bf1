"""The one availability check (``analyses/base.py``)."""
from __future__ import annotations

import numpy as np

from nsys_diag.analyses.base import Result, Unavailable, is_available
from nsys_diag.analyses.timeline.busy import Window
from nsys_diag.analyses.gaps.causes import analyze_utilization
from nsys_diag.analyses.transfers import TransfersResult


def test_unavailable_none_and_non_results_are_not_available():
    assert not is_available(Unavailable("no data", "capture it"))
    assert not is_available(None)
    assert not is_available(object())  # type: ignore[arg-type]


def test_a_result_is_available_by_its_own_flag():
    util = analyze_utilization({}, Window(0, 10, "user"))
    assert isinstance(util, Result) and is_available(util) is True
    assert not is_available(TransfersResult(available=False))  # the flag is a field here
    assert is_available(TransfersResult(available=True))
    assert isinstance(Unavailable("x"), Result)
    assert is_available(np.bool_(False)) is False  # type: ignore[arg-type]
