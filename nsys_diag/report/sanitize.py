"""Escaping helpers for text that comes from a trace (kernel names, NVTX ranges, process names).

Trace strings are attacker-controlled in principle (anyone can name an NVTX range). Terminals
interpret ESC sequences and control characters, Markdown interprets ``|``, backticks, ``<`` …;
HTML escaping is Jinja's autoescape. ``clean_terminal`` is for anything printed to a terminal.
"""
from __future__ import annotations

import re

_ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def clean_terminal(s: object, *, max_len: int | None = None, keep_newlines: bool = False) -> str:
    """``s`` without ANSI escape sequences, control characters or bidi overrides.

    Tabs become spaces; newlines become spaces unless ``keep_newlines``. ``max_len`` truncates
    with an ellipsis.
    """
    text = "" if s is None else str(s)
    text = _ANSI_RE.sub("", text)
    text = text.replace("\t", " ")
    if not keep_newlines:
        text = text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    text = _CONTROL_RE.sub("", text)
    if max_len is not None and len(text) > max_len:
        text = text[: max(max_len - 1, 0)] + "…"
    return text


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|<>~])")


def escape_markdown(s: object, *, max_len: int | None = None) -> str:
    """Text safe inside Markdown (tables included): control chars stripped, specials escaped."""
    text = clean_terminal(s, max_len=max_len)
    text = text.replace("&", "&amp;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return text.replace("@", "&#64;")  # no @mentions in PR comments
