"""The one sanitizer for text that comes from a trace (kernel names, NVTX ranges, process names,
file names, SQLite's own messages).

Trace strings are attacker-controlled in principle: anyone can name an NVTX range. Terminals
interpret ESC sequences and control characters; Markdown interprets ``|``, backticks, ``<`` …;
HTML escaping is Jinja's autoescape, after ``clean_text``. Every renderer starts from
``strip_unsafe``:

* ANSI/VT sequences (CSI ``ESC [`` and 8-bit ``\\x9b``, OSC ``ESC ]`` … BEL/ST, two-byte ``ESC x``)
  are removed;
* other C0/C1 control characters, DEL, zero-width and bidi-override characters, lone surrogates
  and the BOM are replaced by ``replacement``;
* tab, newline and carriage return are kept (the callers below decide what they become).
"""
from __future__ import annotations

import re

ANSI_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x9b[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?")
UNSAFE_CHARACTER = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff"
    r"\ud800-\udfff]")
_LINE_BREAKS = re.compile(r"\r\n|[\r\n\t]")
ELLIPSIS = "…"


def truncate(text: str, max_len: int | None) -> str:
    """``text`` cut to ``max_len`` characters, the last one an ellipsis when cut."""
    if max_len is not None and len(text) > max_len:
        return text[: max(max_len - 1, 0)] + ELLIPSIS
    return text


def strip_unsafe(text: object, replacement: str = "\ufffd") -> str:
    """``text`` (``None`` → ``""``) without escape sequences; unsafe characters → ``replacement``."""
    s = "" if text is None else str(text)
    return UNSAFE_CHARACTER.sub(replacement, ANSI_SEQUENCE.sub("", s))


def clean_text(text: object, max_len: int | None = None) -> str:
    """Trace text safe to display anywhere (HTML after autoescape, JSON): unsafe characters become
    U+FFFD, newlines and tabs are kept, cut to ``max_len``."""
    return truncate(strip_unsafe(text), max_len)


def terminal_line(text: object, max_len: int | None = None, *, keep_newlines: bool = False) -> str:
    """Trace text for a terminal: unsafe characters dropped, tabs (and newlines unless
    ``keep_newlines``) become spaces, cut to ``max_len``."""
    s = strip_unsafe(text, replacement="")
    s = s.replace("\t", " ").replace("\r", "") if keep_newlines else _LINE_BREAKS.sub(" ", s)
    return truncate(s, max_len)


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|<>~])")


def escape_markdown(text: object, max_len: int | None = None) -> str:
    """Trace text safe inside Markdown, tables included: one line, ``&`` as an entity, Markdown
    punctuation backslash-escaped, ``@`` as an entity (no @mentions in PR comments)."""
    s = terminal_line(text, max_len).replace("&", "&amp;")
    return _MD_SPECIAL.sub(r"\\\1", s).replace("@", "&#64;")


_UNSAFE_OR_BREAK_RUN = re.compile(UNSAFE_CHARACTER.pattern[:-1] + r"\t\n\r]+")
_EACH_BREAK = re.compile(r"[\t\n\r]")


def single_line(text: object, max_len: int | None = None) -> str:
    """Text for a one-line message (error messages quote file names and SQLite's own text): escape
    sequences dropped, every run of unsafe characters and line breaks becomes one space."""
    s = ANSI_SEQUENCE.sub("", "" if text is None else str(text))
    return truncate(_UNSAFE_OR_BREAK_RUN.sub(" ", s), max_len)


def printable(text: object, max_len: int | None = None, replacement: str = "?") -> str:
    """The strictest terminal form: every character Python does not call printable (controls,
    line breaks, format and non-ASCII space characters) becomes ``replacement``."""
    s = "" if text is None else str(text)
    return truncate("".join(ch if ch.isprintable() else replacement for ch in s), max_len)


# --------------------------------------------------------------------------- Markdown variants
WORD_JOINER = "\u2060"
"""Invisible; placed after ``@`` and inside URL schemes so trace text never mentions or links."""

_MD_INLINE_PUNCT = re.compile(r"([\\`*_\[\]|~#])")  # '(' is inert once '[' and ']' are escaped
_LIST_START = re.compile(r"^(\s*)(\d+)([.)])")
_SCHEME = re.compile(r"(?i)\b(https?|ftp|file|mailto|javascript|data)(:)")
_WWW = re.compile(r"(?i)\b(www)(\.)")
_BREAK_RUN = re.compile(r"[\r\n\t]+")


def markdown_text(text: object, max_len: int | None = None, *, line_start: bool = False) -> str:
    """Trace text as inert Markdown prose (the analysis summary): one line, ``&``/``<``/``>`` as
    entities, Markdown punctuation backslash-escaped, a word joiner after ``@`` and inside URL
    schemes / ``www.`` (no mentions, no autolinks). With ``line_start`` the text may open a line,
    so list/heading/quote markers are escaped too."""
    s = clean_text(_BREAK_RUN.sub(" ", "" if text is None else str(text)), max_len)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = _MD_INLINE_PUNCT.sub(r"\\\1", s)
    if line_start:
        s = _LIST_START.sub(r"\1\2\\\3", s)
        if s.lstrip().startswith(("-", "+", "=", ">")):
            s = "\\" + s.lstrip()
    return neutralise_links(s.replace("@", "@" + WORD_JOINER))


_MD_CELL_PUNCT = re.compile(r"([\\`*_\[\]~])")


def markdown_cell(text: object, max_len: int | None = 80) -> str:
    """Trace text for a Markdown table cell (batch index, compare): one stripped line, cut to
    ``max_len``, ``& < > |`` and ``@`` as entities, the remaining punctuation backslash-escaped,
    URLs neutralised (``neutralise_links``)."""
    s = _EACH_BREAK.sub(" ", strip_unsafe(text, replacement=" ")).strip()
    s = truncate(s, max_len)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "&#124;")
    return neutralise_links(_MD_CELL_PUNCT.sub(r"\\\1", s.replace("@", "&#64;")))


def neutralise_links(text: str) -> str:
    """``text`` with a word joiner inside every URL scheme (``https⁠://``) and ``www⁠.``, so that
    no Markdown renderer turns trace text into a live link."""
    s = _SCHEME.sub(lambda m: m.group(1) + WORD_JOINER + m.group(2), text)
    return _WWW.sub(lambda m: m.group(1) + WORD_JOINER + m.group(2), s)


def markdown_code_span(text: object, max_len: int | None = 60) -> str:
    """Content for an inline code span: no backticks (→ ``'``), no pipes (→ ``/``), no control
    characters, cut to ``max_len``; may be empty (the caller shows a placeholder)."""
    s = _EACH_BREAK.sub(" ", strip_unsafe(text, replacement=" "))
    return truncate(s.replace("`", "'").replace("|", "/"), max_len).strip()
