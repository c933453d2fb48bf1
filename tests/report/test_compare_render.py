"""The compare terminal summary: the explain lines add up to the step-time delta (the rows not
listed are summed into one line)."""
from __future__ import annotations

import re

from nsys_diag.report.compare_render import _fmt_delta, render_compare_text


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
    # each summed row named as the JSON names it, the remainder row included
    assert "kernel k5" in rest and "other (remaining kernels, and time outside kernels)" in rest
    assert re.search(r"\(-40% of the delta\)", rest)


def _incomparable_doc(**kw) -> dict:
    metrics = [{"name": f"kernel.k{i}_ms", "unit": "ms", "baseline": 1.0, "candidate": 1.0, "delta": 0.0,
                "delta_pct": 0.0, "change": "none", "significant": False} for i in range(30)]
    metrics.insert(0, {"name": "step_time_ms", "unit": "ms", "baseline": 100.0, "candidate": 130.0,
                       "delta": 30.0, "delta_pct": 30.0, "change": "worse", "significant": True})
    return {"summary": "candidate 30% slower", "baseline": {"path": "a", "runs": 1, "steps": 9},
            "candidate": {"path": "b", "runs": 1, "steps": 9}, "metrics": metrics,
            "step_time": {"baseline": 100.0, "candidate": 130.0, "delta": 30.0, "delta_pct": 30.0,
                          "significant": True},
            "comparability": {"score": 0.06, "comparable": False, "min_score": 0.5,
                              "reasons": ["kernel mix differs"]}, **kw}


def test_an_incomparable_pair_says_so_first():
    from nsys_diag.report.compare_render import _compare_model, render_compare_markdown

    doc = _incomparable_doc()
    lines = render_compare_text(doc)
    assert "NOT comparable" in lines[0] and "kernel mix differs" in lines[0]
    assert "candidate 30% slower" in lines[1]
    md = render_compare_markdown(doc).splitlines()
    assert "NOT comparable" in md[0] and "kernel mix differs" in md[2]
    model = _compare_model(doc)
    assert model["chip"] == "not comparable" and model["tone"] == "warn"
    doc["comparability"]["comparable"] = True
    assert _compare_model(doc)["chip"] == "slower" and "NOT" not in render_compare_text(doc)[0]


def test_the_html_metrics_table_has_every_metric_and_a_header_on_every_column():
    from nsys_diag.report.compare_render import _compare_model

    doc = _incomparable_doc()
    table = _compare_model(doc)["metrics"]
    assert table["shown"] == table["total"] == len(doc["metrics"])  # the page's JS collapses and shows all
    assert all(c["label"] for c in table["columns"])
    assert _compare_model(doc)["explain"]["columns"] and all(c["label"] for c in _compare_model(doc)["explain"]["columns"])


def test_rates_per_second_are_labelled_as_time_per_second():
    from nsys_diag.report.compare_render import metric_label

    assert metric_label("window.kernel_ms_per_s.attention") == "attention kernel time per second"
    assert metric_label("window.kernel.nvjet_ms_per_s") == "kernel nvjet time per second"


def test_a_change_that_rounds_to_zero_has_no_minus_sign():
    """A tiny negative share of the delta or GPU-busy change prints "+0%" / "+0.0 pts (+0.0%)",
    not "-0%" / "-0.0 pts (-0.0%)"; a real negative change keeps its sign."""
    rows = [_row("k0", -20.0, 1.002), _row("k1", 0.048, -0.0024)]
    busy = {"name": "gpu_busy", "unit": "share", "baseline": 0.935, "candidate": 0.93499,
            "delta": -0.00001, "delta_pct": -0.001, "change": "n/a"}
    doc = {"summary": "x", "baseline": {"path": "a", "runs": 1, "steps": 9},
           "candidate": {"path": "b", "runs": 1, "steps": 9}, "explain": rows, "metrics": [busy]}
    text = "\n".join(render_compare_text(doc))
    assert "(+0% of the delta)" in text and "-0%" not in text
    assert "(+100% of the delta)" in text
    assert _fmt_delta(busy) == "+0.0 pts (+0.0%)"
    assert _fmt_delta(dict(busy, delta=-0.012, delta_pct=-1.3)) == "-1.2 pts (-1.3%)"


def test_the_markdown_tables_head_every_column_and_say_what_they_leave_out():
    from nsys_diag.report.compare_render import render_compare_markdown

    doc = _incomparable_doc(notes=["x" * 300])
    md = render_compare_markdown(doc).splitlines()
    head = next(line for line in md if line.startswith("| metric"))
    assert all(cell.strip() for cell in head.strip("|").split("|"))
    shown = sum(1 for line in md if line.startswith("| ") and not line.startswith("| metric"))
    assert f"Showing {shown} of {len(doc['metrics'])} metrics" in "\n".join(md)
    text = render_compare_text(doc)
    assert any(("x" * 300) in line for line in text)  # a note is wrapped by the terminal, never cut
