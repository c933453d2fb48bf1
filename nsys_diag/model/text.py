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
    s = s.replace("\t", " ") if keep_newlines else _LINE_BREAKS.sub(" ", s)
    return truncate(s, max_len)


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|<>~])")


def escape_markdown(text: object, max_len: int | None = None) -> str:
    """Trace text safe inside Markdown, tables included: one line, ``&`` as an entity, Markdown
    punctuation backslash-escaped, ``@`` as an entity (no @mentions in PR comments)."""
    s = terminal_line(text, max_len).replace("&", "&amp;")
    return _MD_SPECIAL.sub(r"\\\1", s).replace("@", "&#64;")
