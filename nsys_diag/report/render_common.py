"""What the ``batch`` and ``compare`` renderers share: escaping of trace text for Markdown cells,
code spans and terminals, the display-safe copy of a document for HTML, and the page frame.

Every trace-controlled string (paths, kernel names, headlines) is escaped for its medium: Markdown
cells get HTML entities for ``<>&|`` and backslash escapes for Markdown punctuation, control
characters are dropped; HTML goes through Jinja autoescape.
"""
from __future__ import annotations

import math

from nsys_diag.model.text import markdown_cell, markdown_code_span, printable
from nsys_diag.model.vocabulary import KINETO_FORMAT, KINETO_LABEL, NCU_CSV_FORMAT, NCU_CSV_LABEL
from nsys_diag.report.clean import clean_text
from nsys_diag.report.formatting import MISSING

MD_MAX_LINES = 60
"""Compare Markdown must fit a PR comment."""


def md_escape(text: object, limit: int = 80) -> str:
    """One Markdown-table-safe line for an untrusted string (``model.text.markdown_cell``)."""
    return markdown_cell(text, limit)


def md_code(text: object, limit: int = 60) -> str:
    """Content for an inline code span (``model.text.markdown_code_span``); empty → '—'."""
    return markdown_code_span(text, limit) or MISSING


def format_label(trace: dict) -> str | None:
    """How the reports name a trace's format when it is not an nsys export (the renderer then
    states the nsys version itself): the Kineto and ncu-CSV labels, else None."""
    return {KINETO_FORMAT: KINETO_LABEL, NCU_CSV_FORMAT: NCU_CSV_LABEL}.get(str(trace.get("format") or ""))


def kernels_only(trace: dict) -> bool:
    """The input is an Nsight Compute CSV alone: kernels, no timeline."""
    return trace.get("format") == NCU_CSV_FORMAT


def text_safe(text: object, limit: int | None = 120) -> str:
    """Terminal text, every non-printable character as '?' (``model.text.printable``); cut to
    ``limit`` characters (None: whole — the line wraps, ``text.fit_line``)."""
    return printable(text, limit)


HTML_MAX_ROWS = 1000
"""Index rows drawn in the HTML page (index.json keeps them all); keeps the page < 2 MB."""


def clean_doc(obj, max_list: int = HTML_MAX_ROWS):
    """Recursive copy with display-safe strings (report.clean.clean_text), finite numbers, capped lists."""

    if isinstance(obj, str):
        return clean_text(obj, 2000)
    if isinstance(obj, bool) or obj is None or isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {clean_text(str(k), 200): clean_doc(v, max_list) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_doc(v, max_list) for v in obj[:max_list]]
    return clean_text(str(obj), 2000)


def page_frame(doc: dict, title: str, sections: list[tuple[str, str, bool]], trace_name: str) -> dict:
    tool = doc.get("tool") or {"name": "nsys-diag", "version": ""}
    return {"title": title, "tool": {"name": tool.get("name", "nsys-diag"),
                                     "version": tool.get("version", "")},
            "generated_at": doc.get("generated_at") or "",
            "sections": [{"id": i, "label": label, "available": ok} for i, label, ok in sections],
            "trace_name": trace_name}
