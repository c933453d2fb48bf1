"""Terminal summary: what it shows, and that trace strings cannot drive the terminal."""
from __future__ import annotations

import re

import pytest

import handframes as hf
from handframes import MS
from nsys_diag.analyses.suite import run_suite
from nsys_diag.model.bundle import TraceBundle, TraceMeta
from nsys_diag.model.text import escape_markdown, terminal_line
from nsys_diag.report.text import render_text
from nsys_diag.report.view import build_view

WORKED = [("data_loading", 420 * MS), ("forward", 180 * MS), ("backward", 150 * MS),
          ("optimizer_step", 30 * MS), ("logging", 20 * MS)]
CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _view(b):
    return build_view(b.meta, run_suite(b), generated_at="2026-11-30T00:00:00Z")


def _worked():
    kr = []
    for i in range(6):  # 4 back-to-back kernels a step: ≥ min_kernels_to_diagnose in the window
        for j in range(4):
            f = 10 * MS + i * 800 * MS + 420 * MS + j * 37 * MS
            kr.append(dict(start_ns=f, end_ns=f + 37 * MS, launch_start_ns=f, name="nvjet_tst_128x256"))
    return hf.bundle(nvtx=hf.nvtx(hf.steps_and_phases(6, WORKED)), kernels=hf.kernels(kr),
                     gpus=hf.gpus(1))


def test_summary_shows_verdict_phase_table_and_top_gaps():
    out = render_text(_view(_worked()))
    assert out.endswith("\n")
    assert "VERDICT  input_bound" in out
    assert "Projected step if fixed: 420 ms (now 800 ms)" in out
    lines = out.splitlines()
    row = next(line for line in lines if line.startswith("data_loading"))
    assert "data" in row and "420 ms" in row and "52%" in row
    assert any(line.startswith("other") for line in lines)
    assert "Gaps" in out and "input" in out
    gap_rows = [line for line in lines if "data_loading" in line and "input" in line]
    assert gap_rows  # the top gaps name the phase the CPU was in
    assert "Try, in order:" in out and " 1. " in out
    assert "window 4 s (steps)" in out


def test_insufficient_data_summary_prints_the_capture_command():
    out = render_text(_view(TraceBundle(meta=TraceMeta(path="x.sqlite", format="nsys-sqlite"))))
    assert "VERDICT  insufficient_data" in out
    assert "Capture with" in out and "nsys profile -t cuda,nvtx" in out
    assert "Steps    none" in out


def test_trace_strings_are_stripped_of_escapes_and_controls():
    evil = "phase\x1b[2J\x1b]0;pwned\x07\rX\u202eY\x00"
    rows = hf.steps_and_phases(4, [(evil, 10 * MS), ("forward", 10 * MS)])
    b = hf.bundle(nvtx=hf.nvtx(rows), kernels=hf.kernels([dict(start_ns=15 * MS, end_ns=19 * MS,
                                                                launch_start_ns=15 * MS)]))
    out = render_text(_view(b))
    assert "\x1b" not in out and "\u202e" not in out and not CTRL.search(out.replace("\n", ""))
    assert "phase XY" in out  # \r became a space, the rest was removed


def test_multi_process_summary_lists_ranks():
    out = render_text(_view(hf.two_process_bundle()))
    assert "the slowest of 2" in out
    assert "* pid 101" in out and "  pid 100" in out


def test_renders_sparse_and_hostile_hand_views():
    sample_views = pytest.importorskip("sample_views")
    for make in ("sparse_view", "hostile_view", "input_bound_view"):
        out = render_text(getattr(sample_views, make)())
        assert "VERDICT" in out
        assert "\x1b" not in out and not CTRL.search(out.replace("\n", ""))


@pytest.mark.parametrize("raw,clean", [
    ("a\x1b[31mred\x1b[0m", "ared"), ("x\ny", "x y"), ("tab\there", "tab here"),
    ("bell\x07", "bell"), ("rtl\u202eoverride", "rtloverride"), (None, ""),
    ("\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\", "link"),
])
def test_clean_terminal(raw, clean):
    assert terminal_line(raw) == clean


def test_clean_terminal_truncates_and_keeps_newlines_on_request():
    assert terminal_line("abcdef", max_len=4) == "abc…"
    assert terminal_line("a\r\nb", keep_newlines=True) == "a\nb"


def test_escape_markdown():
    assert escape_markdown("a|b `c` <d> @all") == "a\\|b \\`c\\` \\<d\\> &#64;all"


def test_fit_line_wraps_at_the_width_and_never_cuts():
    from nsys_diag.report.text import fit_line

    long_word = "/very/long/path/" + "x" * 60
    line = "   - " + " ".join(f"word{i}" for i in range(40)) + " " + long_word + " end"
    parts = fit_line(line, 40)
    assert len(parts) > 3 and all(len(p) <= 40 for p in parts if long_word not in p)
    assert " ".join(" ".join(parts).split()) == " ".join(line.split())  # every word kept, in order
    assert any(p.strip() == long_word for p in parts)  # a word longer than the width stays whole
    assert all(p.startswith("     ") for p in parts[1:])  # continuation indented past the line's own
    assert fit_line(line, None) == [line] and fit_line("short", 40) == ["short"]
    report = "report: " + long_word
    assert fit_line(report, 40) == [report]  # label: value lines are never broken


def test_the_replay_line_states_the_priced_change_whole(tmp_path):
    """Our own words are wrapped by the terminal, never cut: the what-if the verdict is priced by
    appears whole on the Replay line (it was cut at 60 characters)."""
    import json

    from click.testing import CliRunner

    from conftest import SAMPLE_TRACES
    from nsys_diag.cli import main

    out = tmp_path / "a.json"
    res = CliRunner().invoke(main, ["analyze", str(SAMPLE_TRACES / "worked_example.sqlite"),
                                    "--no-html", "--json", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    wid = next(e["value"] for e in doc["verdict"]["evidence"] if e["metric"] == "replay.what_if")
    change = next(w["change"] for w in doc["replay"]["what_if"] if w["id"] == wid)
    assert len(change) > 60
    replay = next(line for line in res.output.splitlines() if line.startswith("Replay"))
    assert f"if {change}:" in replay



def test_six_recommendations_are_shown_and_the_rest_counted():
    from sample_views import input_bound_with_advice

    out = render_text(input_bound_with_advice(8))
    assert "   6. Fix number 6." in out and "Fix number 7." not in out
    assert "(+2 more in the HTML/JSON report)" in out
