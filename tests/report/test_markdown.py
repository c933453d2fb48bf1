"""The Markdown summary (nsys_diag/report/markdown.py): fits a PR comment, no links, escaped."""
from __future__ import annotations

import re

import pytest
from sample_views import (ALL_VIEWS, GENERATED_AT, HOSTILE_KERNEL, hostile_view, input_bound_view,
                          input_bound_with_advice, large_view)

from nsys_diag.report.markdown import MAX_LINES, md_text, render_markdown

WJ = "\u2060"


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    return {name: render_markdown(build()) for name, build in ALL_VIEWS.items()}


@pytest.mark.parametrize("name", list(ALL_VIEWS))
def test_fits_a_pr_comment_without_links(rendered, name):
    md = rendered[name]
    lines = md.splitlines()
    assert 5 <= len(lines) < 60
    assert md.endswith("\n")
    assert "http://" not in md and "https://" not in md and "www." not in md
    assert not re.search(r"\]\(", md.replace("\\]", ""))  # no [text](url) links
    assert not re.search(r"<(?!/?sub>)[a-zA-Z/!]", md)  # no raw HTML but our <sub> footer


def test_worked_example_content(rendered):
    md = rendered["input_bound"]
    lines = md.splitlines()
    assert lines[0] == "### nsys-diag: Input bound (high confidence)"
    assert lines[2].startswith("> The GPU waits for input: data loading takes 52%")
    assert "**Will more GPUs help?** Adding GPUs will not help" in md
    assert "**If fixed** ≈ 420 ms per step, 1.9× faster" in md
    assert "| Phase | Canonical | Mean / step | Share | GPU busy in it |" in md
    assert "| data loading | data | 420 ms | 52% | 2.0% |" in md
    assert "| optimizer.step | optimizer | 30 ms | 3.8% | 85% |" in md
    assert "**GPU idle** 4.96 s in 1,840 gaps, by cause: waiting on input 4.12 s (83%)" in md
    fixes = [ln for ln in lines if re.match(r"\d+\. ", ln)]
    assert len(fixes) == 4 and fixes[0].startswith("1. Raise DataLoader num\\_workers")
    assert "- ⚠️ No GPU metrics were sampled" in md
    # a rule row says its own threshold and whether it held (issue 15: never a bare "(< 50%)")
    assert "- utilization = 38.1% — rule &lt; 50.0%: met, kernel timeline" in md
    assert lines[-1] == f"<sub>nsys-diag 0.1.0 · worked\\_example.sqlite · nsys 2024.5.1 · {GENERATED_AT}</sub>"


def test_insufficient_data_says_why(rendered):
    md = rendered["sparse"]
    assert md.startswith("### nsys-diag: Insufficient data (low confidence)")
    assert "_No phase breakdown: No NVTX ranges and no repeating GPU pattern" in md
    assert "Re-capture with: nsys profile -t cuda,nvtx,osrt" in md
    assert "**Step**" not in md  # no invented numbers


def test_hostile_strings_are_inert(rendered):
    md = rendered["hostile"]
    assert "<img" not in md and "<b>" not in md and "</script>" not in md and "<svg" not in md
    assert "&lt;/script&gt;&lt;img src=x onerror=alert\\(1\\)&gt;" not in md  # '(' is left alone
    assert "&lt;b&gt;bold&lt;/b&gt;" in md
    assert "\x1b" not in md and "[31m" not in md
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", md)
    assert "@everyone" not in md and f"@{WJ}everyone" in md
    # every table row keeps its cells (five in the phase table, seven in the roofline table):
    # pipes inside names are escaped
    rows = [ln for ln in md.splitlines() if ln.startswith("| ")]
    assert rows and all(len(re.findall(r"(?<!\\)\|", r)) in (6, 8) for r in rows)
    # no unescaped backtick can open a code span, no fence can start a line
    assert not re.search(r"(?<!\\)`", md)
    assert not any(ln.lstrip().startswith("```") for ln in md.splitlines())
    assert "2. \\`\\`\\` close fence" in md


def test_long_inputs_are_capped():
    view = large_view()
    view["verdict"]["recommendations"] = [f"fix {i}" for i in range(50)]
    view["verdict"]["evidence"] = view["verdict"]["evidence"] * 20
    view["phases"] = view["phases"] * 10
    view["data_quality"] = [{"code": "w", "message": "m" * 5000, "count": 1, "severity": "warning"}] * 30
    md = render_markdown(view)
    assert len(md.splitlines()) <= MAX_LINES
    assert "… 52 more" in md and "… and 26 more" in md
    assert max(len(ln) for ln in md.splitlines()) < 1000


def test_lines_never_exceed_the_limit_even_with_many_blocks():
    view = hostile_view()
    view["verdict"]["headline"] = "h\n" * 200
    md = render_markdown(view)
    assert len(md.splitlines()) <= MAX_LINES
    assert md.splitlines()[0].startswith("### nsys-diag:")


@pytest.mark.parametrize("raw, out", [
    ("a|b", "a\\|b"),
    ("`x`", "\\`x\\`"),
    ("<b>x</b>", "&lt;b&gt;x&lt;/b&gt;"),
    ("a & b", "a &amp; b"),
    ("line1\nline2\r\n\tline3", "line1 line2 line3"),
    ("\x1b[31mred\x1b[0m", "red"),
    ("a\x00b\x07c", "a\ufffdb\ufffdc"),
    ("[x](javascript:alert(1))", f"\\[x\\](javascript{WJ}:alert(1))"),
    ("see https://evil.example", f"see https{WJ}://evil.example"),
    ("www.evil.example", f"www{WJ}.evil.example"),
    ("@team", f"@{WJ}team"),
    ("snake_case *bold*", "snake\\_case \\*bold\\*"),
    ("# not a heading", "\\# not a heading"),
    (None, "—"),
])
def test_md_text(raw, out):
    assert md_text(raw) == out


def test_md_text_at_line_start_escapes_block_markers():
    assert md_text("1. not a list", line_start=True) == "1\\. not a list"
    assert md_text("- not a bullet", line_start=True) == "\\- not a bullet"
    assert md_text("1. inline", line_start=False) == "1. inline"
    assert len(md_text("x" * 1000, 50)) == 50


def test_deterministic():
    assert render_markdown(input_bound_view()) == render_markdown(input_bound_view())
    assert HOSTILE_KERNEL not in render_markdown(hostile_view())


def test_end_to_end_worked_example(tmp_path):
    synth = pytest.importorskip("nsys_diag.synth")
    from nsys_diag.app.analyze import analyze_path

    trace = synth.write_preset(tmp_path / "worked_example.sqlite", "worked_example")
    md = render_markdown(analyze_path(str(trace), generated_at=GENERATED_AT))
    assert md.startswith("### nsys-diag: Input bound")
    assert "| data\\_loading | data | 420 ms | 52% |" in md
    assert len(md.splitlines()) < 60


def test_the_idle_line_sums_the_causes_it_does_not_name():
    """Six causes: the four largest by name, the other two as one entry, so the line adds up to
    the idle total it states."""
    v = input_bound_view()
    md = render_markdown(v)
    line = next(ln for ln in md.splitlines() if ln.startswith("**GPU idle**"))
    assert "2 smaller causes 157 ms" in line  # launch 96 + transfer 61
    named = re.findall(r"(\d[\d,.]*) (ms|s) \(", line)
    total = sum(float(x.replace(",", "")) * (1000 if u == "s" else 1) for x, u in named)
    assert total == pytest.approx(sum(v["gaps"]["by_cause"].values()), rel=0.01)


def test_advice_left_out_is_counted():
    md = render_markdown(input_bound_with_advice(8))
    assert "6. Fix number 6." in md and "Fix number 7." not in md
    assert "_(+2 more in the HTML report)_" in md
