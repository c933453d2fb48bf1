"""The replay views: what a step waits on, and the what-if table, in HTML, Markdown and text."""
from __future__ import annotations

from pathlib import Path

import pytest

from nsys_diag.app.analyze import analyze_path
from nsys_diag.report.html_report import render_html
from nsys_diag.report.markdown import render_markdown
from nsys_diag.report.replay_render import waits_on, what_if_rows
from nsys_diag.report.text import render_text

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


@pytest.fixture(scope="module")
def view():
    return analyze_path(str(SAMPLES / "worked_example.sqlite"),
                        generated_at="2026-01-01T00:00:00Z")


def test_waits_on_adds_up_to_the_replayed_step(view):
    rows = waits_on(view)
    assert rows and sum(r["share"] for r in rows) == pytest.approx(1.0, abs=0.02)
    assert any("(data)" in r["label"] for r in rows)  # host CPU time named by its phase


def test_the_largest_what_if_comes_first_with_before_and_after(view):
    rows = what_if_rows(view)
    assert rows[0]["id"] == "instant_input"
    assert rows[0]["before"] == "800 ms" and rows[0]["after"] == "380 ms"


def test_every_report_shows_the_replay(view):
    html = render_html(view)
    sec = html[html.index('id="sec-replay"'):]
    sec = sec[:sec.index("</section>")]
    assert "replay-bar" in sec and 'id="tbl-what-if"' in sec and "800 ms" in sec
    md = render_markdown(view)
    assert "**What the step waits on**" in md and "800 ms → 380 ms" in md
    assert any(line.startswith("Replay ") for line in render_text(view).splitlines())


def test_an_unavailable_replay_shows_no_replay_lines(view, monkeypatch):
    off = dict(view, replay={"available": False, "reason": "off", "hint": ""})
    assert "What the step waits on" not in render_markdown(off)
    assert not any(line.startswith("Replay ") for line in render_text(off).splitlines())
    assert "Not available" in render_html(off).split('id="sec-replay"')[1].split("</section>")[0]


def test_a_capture_hint_is_shown_escaped_in_html_and_markdown(view):
    hint = "capture with `--cuda-graph-trace=node` <b>now</b>"
    hinted = dict(view, replay=dict(view["replay"], capture_hints=[hint]))
    sec = render_html(hinted).split('id="sec-replay"')[1].split("</section>")[0]
    assert "To replay more of it" in sec and "--cuda-graph-trace=node" in sec
    assert "<b>now</b>" not in sec
    md = render_markdown(hinted)
    assert "to replay more of it" in md and "--cuda-graph-trace=node" in md
    assert "<b>now</b>" not in md
    assert "To replay more of it" not in render_html(view).split('id="sec-replay"')[1]


def test_the_text_replay_line_shows_the_what_if_the_verdict_is_priced_by(view):
    """The terminal's one replay line agrees with "Projected step if fixed": the worked example's
    verdict is priced by overlapped_input (800 → 420 ms), not the larger instant_input."""
    text = render_text(view)
    line = next(x for x in text.splitlines() if x.startswith("Replay "))
    projected = view["verdict"]["projected_step_ms_if_fixed"]
    assert projected == pytest.approx(420, rel=0.01)
    assert line.endswith("800 ms → 420 ms")
    assert "Projected step if fixed: 420 ms" in text


def test_a_what_if_without_a_verdict_price_shows_the_largest_saving(view):
    ev = [e for e in view["verdict"]["evidence"] if e.get("metric") != "replay.what_if"]
    plain = dict(view, verdict=dict(view["verdict"], evidence=ev))
    line = next(x for x in render_text(plain).splitlines() if x.startswith("Replay "))
    assert line.endswith("800 ms → 380 ms")


def test_a_saving_equal_in_every_replayed_step_shows_no_range(view):
    """Both replayed steps save the same: "range 420 ms–420 ms" says nothing; a real spread
    still shows."""
    md = render_markdown(view)
    assert "420 ms–420 ms" not in md and "(saves 420 ms)" in md
    spread = [dict(w, saves_range_ms=[300.0, 450.0]) if w["id"] == "instant_input" else w
              for w in view["replay"]["what_if"]]
    rows = what_if_rows(dict(view, replay=dict(view["replay"], what_if=spread)))
    assert next(r for r in rows if r["id"] == "instant_input")["range"] == "300 ms–450 ms"


def test_a_host_that_keeps_pace_with_a_busy_gpu_is_said_so_in_every_report():
    """healthy_tc's path is host time the GPU ran through (compute-bound): each host row says how
    busy the GPU was meanwhile and the pace note says a faster host gains only the idle part; the
    worked example's host starves the GPU, so it gets no such note."""
    from nsys_diag.report.replay_render import pace_note

    healthy = analyze_path(str(SAMPLES / "healthy_tc.sqlite"), generated_at="t")
    note = pace_note(healthy)
    assert note and "keeps pace with a busy GPU" in note
    rows = [r for r in waits_on(healthy) if r["kind"] == "host_cpu"]
    assert rows and all(r["note"].startswith("GPU busy") for r in rows)
    phrase = "the host keeps pace with a busy GPU rather than starving it"
    assert phrase in render_html(healthy) and phrase in render_markdown(healthy)
    worked = analyze_path(str(SAMPLES / "worked_example.sqlite"), generated_at="t")
    assert pace_note(worked) == ""
    data = next(r for r in waits_on(worked) if "(data)" in r["label"])
    assert data["gpu_busy_share"] < 0.05


def test_a_window_priced_projection_is_labelled_as_the_window(tmp_path):
    """Without steps the replay prices the replayed window: the verdict's "if fixed" figure is a
    window, shown beside the window as measured, never as a step (cutlass_pageable: a CUDA C
    program without NVTX); a stepped run keeps "step" (mpi_saxpy)."""
    from nsys_diag.report.replay_render import projection
    from nsys_diag.synth import programs

    win = analyze_path(str(programs.write_case("cutlass_pageable", tmp_path / "w.sqlite")),
                       generated_at="t")
    proj = projection(win)
    assert proj is not None and proj["per"] == "window"
    assert proj["now_ms"] == pytest.approx(win["replay"]["fidelity"]["measured_ms"], rel=0.05)
    assert proj["fixed_ms"] == win["verdict"]["projected_step_ms_if_fixed"] < proj["now_ms"]
    text, md, page = render_text(win), render_markdown(win), render_html(win)
    assert "Projected window if fixed" in text and "Projected step" not in text
    assert "for the window" in md and "per step" not in md.split("**If fixed**")[1][:40]
    assert "Window if fixed" in page and "Step time if fixed" not in page
    stepped = analyze_path(str(programs.write_case("mpi_saxpy", tmp_path / "s.sqlite")),
                           generated_at="t")
    assert projection(stepped)["per"] == "step"
    assert "Projected step if fixed" in render_text(stepped)


def test_the_fidelity_says_what_its_figures_are_of():
    """The replayed steps' mean (not the analysed mean step the what-ifs are priced on), or the
    part of the window a budgeted window replay covers."""
    from nsys_diag.report.replay_render import fidelity_text

    steps = {"available": True, "fidelity": {
        "basis": "steps", "measured_ms": 252.0, "replayed_ms": 252.0, "error_pct": 0.0,
        "steps": [{"index": 0}, {"index": 1}, {"index": 3}]}}
    assert fidelity_text({"replay": steps}).endswith(", the mean of 3 replayed steps")
    part = {"available": True, "fidelity": {"basis": "window", "measured_ms": 6800.0,
                                            "replayed_ms": 6800.0, "error_pct": 0.0, "steps": []}}
    text = fidelity_text({"replay": part, "window": {"duration_ms": 6960.0}})
    assert text.endswith(", the first 6.8 s of the 6.96 s window")
    assert fidelity_text({"replay": part, "window": {"duration_ms": 6800.0}}).endswith("(+0.0%)")
