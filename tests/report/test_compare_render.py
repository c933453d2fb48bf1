"""The compare terminal summary: the explain lines add up to the step-time delta (the rows not
listed are summed into one line)."""
from __future__ import annotations

import re

from nsys_diag.report.compare_render import render_compare_text


def _row(name: str, delta: float, share: float) -> dict:
    return {"kind": "kernel", "name": name, "delta": delta, "share_of_delta": share,
            "baseline": max(-delta, 0.0), "candidate": max(delta, 0.0), "group": "kernels"}


def test_rows_beyond_the_first_five_are_summed_into_one_line():
    # step delta −20 ms: both signs, ranked by absolute size, plus an other row
    deltas = [120.0, -120.0, 72.0, -60.0, -40.0, 5.0, 2.0, 1.0]
    rows = [_row(f"k{i}", d, d / -20.0) for i, d in enumerate(deltas)]
    rows.append(_row("other (remaining kernels, and time outside kernels)", 0.0, 0.0))
    doc = {"summary": "x", "baseline": {"path": "a", "runs": 1, "steps": 9},
           "candidate": {"path": "b", "runs": 1, "steps": 9}, "explain": rows}
    lines = render_compare_text(doc)
    listed = [ln for ln in lines if ln.startswith("    kernel k")]
    assert len(listed) == 5 and ("-" in listed[1] or "−" in listed[1])  # both signs listed
    (rest,) = [ln for ln in lines if "the other" in ln]
    assert "the other 4 row(s)" in rest and ": +8 ms per step" in rest
    assert re.search(r"\(-40% of the delta\)", rest)
