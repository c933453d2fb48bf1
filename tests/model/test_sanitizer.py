"""The one sanitizer (model/text.py) and its renderer variants."""
from __future__ import annotations

from nsys_diag.model.errors import printable_line
from nsys_diag.model.text import (
    WORD_JOINER,
    markdown_cell,
    markdown_code_span,
    markdown_text,
    printable,
    single_line,
    terminal_line,
)


def test_terminal_line_keeps_newlines_on_request_but_never_carriage_returns():
    assert terminal_line("a\r\nb\x1b[31mc", keep_newlines=True) == "a\nbc"
    assert terminal_line("a\r\nb\tc") == "a b c"


def test_single_line_turns_runs_of_breaks_and_controls_into_one_space():
    assert single_line("bad\r\n\x07file\x1b[2J", 8) == "bad file"
    assert printable_line("x" * 3000).endswith("…") and len(printable_line("x" * 3000)) == 2000


def test_markdown_text_is_inert():
    s = markdown_text("1. a_b <i> @all http://x www.y", line_start=True)
    assert s.startswith("1\\. a\\_b &lt;i&gt; @" + WORD_JOINER)
    assert "http" + WORD_JOINER + "://x" in s and "www" + WORD_JOINER + ".y" in s


def test_markdown_cell_and_code_span():
    assert markdown_cell(" a|b <c> @d_e\n") == "a&#124;b &lt;c&gt; &#64;d\\_e"
    assert markdown_cell("x" * 100, 10) == "x" * 9 + "…"
    assert markdown_code_span("a`b|c\x07") == "a'b/c"
    assert markdown_code_span("") == ""


def test_printable_replaces_every_non_printable_character():
    assert printable("a\tb\u00a0c\x1b", 120) == "a?b?c?"
    assert printable("abcdef", 4) == "abc…"
