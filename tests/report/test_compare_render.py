"""The compare terminal summary: the explain lines add up to the step-time delta (the rows not
listed are summed into one line)."""
from __future__ import annotations

import re

from nsys_diag.report.compare_render import _fmt_delta, render_compare_text


def _row(name: str, delta: float, share: float) -> dict:
    return {"kind": "kernel", "name": name, "delta": delta, "share_of_delta": share,
            "baseline": max(-delta, 0.0), "candidate": max(delta, 0.0), "group": "kernels"}


OTHER_KERNELS = "other (remaining kernels, and time outside kernels)"


def _explain_doc(rows: list[dict]) -> dict:
    return {"summary": "x", "baseline": {"path": "a", "runs": 1, "steps": 9},
            "candidate": {"path": "b", "runs": 1, "steps": 9}, "explain": rows}


def _other(name: str, delta: float, share: float, group: str = "kernels") -> dict:
    """The JSON's remainder row of a group (``kind`` "other", no side values)."""
    return {"kind": "other", "name": name, "delta": delta, "share_of_delta": share,
            "baseline": None, "candidate": None, "group": group}


def test_rows_beyond_the_first_five_are_summed_into_the_rows_remainder_named_as_in_the_json():
    # step delta −20 ms: both signs, ranked by absolute size, plus the JSON's remainder row
    deltas = [120.0, -120.0, 72.0, -60.0, -40.0, 5.0, 2.0, 1.0]
    rows = [_row(f"k{i}", d, d / -20.0) for i, d in enumerate(deltas)]
    rows.append(_other(OTHER_KERNELS, 0.5, -0.025))
    lines = render_compare_text(_explain_doc(rows))
    listed = [ln for ln in lines if ln.startswith("    kernel k")]
    assert len(listed) == 5 and ("-" in listed[1] or "−" in listed[1])  # both signs listed
    assert not any("the other" in ln or "row(s)" in ln for ln in lines)
    (rest,) = [ln for ln in lines if ln.startswith("    other")]
    # the remainder row as the JSON names it, summing the rows not listed (5 + 2 + 1 + 0.5 ms)
    assert rest.startswith(f"    {OTHER_KERNELS}: +8.5 ms per step")
    assert re.search(r"\(-42% of the delta\)", rest)
    # the rows summed into it are named as the JSON names them
    assert rest.endswith("; with kernel k5, kernel k6, kernel k7 (rows of the JSON explain[])")


def test_the_remainder_row_alone_is_shown_as_the_json_has_it():
    rows = [_row(f"k{i}", d, d / 6.0) for i, d in enumerate([3.0, 2.0, 1.0, 0.5, 0.25])]
    rows.append(_other(OTHER_KERNELS, -0.75, -0.125))
    (rest,) = [ln for ln in render_compare_text(_explain_doc(rows)) if ln.startswith("    other")]
    assert rest == f"    {OTHER_KERNELS}: −750 µs per step (-12% of the delta)"


def test_phases_without_a_remainder_row_take_the_groups_name():
    rows = [dict(_row(f"p{i}", 1.0, 1 / 7), kind="phase", group="phases") for i in range(7)]
    (rest,) = [ln for ln in render_compare_text(_explain_doc(rows)) if ln.startswith("    other")]
    assert rest.startswith("    other (not covered by phases): +2 ms per step")
    assert "with p5 phase, p6 phase" in rest


def test_the_markdown_remainder_row_is_named_as_in_the_json_with_its_delta_in_its_column():
    from nsys_diag.report.compare_render import render_compare_markdown

    deltas = [120.0, -120.0, 72.0, -60.0, -40.0, 30.0, 2.0, 1.0]
    rows = [_row(f"k{i}", d, d / -20.0) for i, d in enumerate(deltas)]
    rows.append(_other(OTHER_KERNELS, 0.5, -0.025))
    doc = dict(_explain_doc(rows), step_time={"baseline": 100.0, "candidate": 80.0})
    md = render_compare_markdown(doc).splitlines()
    (rest,) = [ln for ln in md if ln.startswith("| other")]
    cells = [c.strip() for c in rest.strip().strip("|").split("|")]
    assert cells[0] == f"{OTHER_KERNELS}, with kernel k6, kernel k7 (rows of the JSON explain[])"
    assert cells[1:] == ["", "", "+3.5 ms", "-18%"]


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
