"""analyses/selection.py on small hand-made frames."""
from __future__ import annotations

import pandas as pd
import pytest

from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.selection import (check_steps, check_window, frequent_range_names,
                                          step_range_matches)
from nsys_diag.model.errors import UsageError
from nsys_diag.model.options import AnalyzeOptions


def _nvtx(*texts):
    return pd.DataFrame({"text": pd.Categorical(list(texts) + [], categories=sorted(set(texts)) + ["unused"])})


def test_step_range_matches_exact_text_then_a_full_regex():
    nv = _nvtx("ProfilerStep#1", "ProfilerStep#2", "forward")
    assert step_range_matches(nv, "forward")
    assert step_range_matches(nv, "profilerstep#\\d+")
    assert not step_range_matches(nv, "Profiler")  # a full match, not a prefix
    assert not step_range_matches(nv, "unused")    # a category no row uses
    assert not step_range_matches(nv, "([")        # bad regex: no match, no crash


def test_frequent_range_names_collapse_numbers_and_skip_unused():
    nv = _nvtx("ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3", "forward", "forward", "x")
    assert frequent_range_names(nv) == "ProfilerStep#<n> (3), forward (2), x (1)"


class _Steps:
    available = True

    def __init__(self, count):
        self.count = count


@pytest.mark.parametrize("sel,ok", [((0, 9), True), ((3, -1), True), ((9, 9), True),
                                    ((10, 12), False), ((5, 10), False)])
def test_check_steps_against_the_detected_count(sel, ok):
    opts = AnalyzeOptions(steps=sel)
    if ok:
        check_steps(opts, _Steps(10))
    else:
        with pytest.raises(UsageError, match="the trace has steps 0–9"):
            check_steps(opts, _Steps(10))


def test_check_steps_without_detected_steps_names_the_reason():
    with pytest.raises(UsageError, match="no steps were detected in process 7: no NVTX"):
        check_steps(AnalyzeOptions(steps=(0, 1)), Unavailable("no NVTX ranges", ""), " in process 7")


def test_check_window_needs_an_overlap_with_the_capture():
    check_window((5, 20), (10, 100))
    check_window(None, (10, 100))
    check_window((500, 600), None)  # span unknown: nothing to check against
    with pytest.raises(UsageError, match="outside the capture: it spans 0.000 s – 2.000 s .*"
                                         "events from 0.500 s to 1.500 s"):
        check_window((3 * 10**9, 4 * 10**9), (0, 2 * 10**9), (5 * 10**8, 15 * 10**8))
