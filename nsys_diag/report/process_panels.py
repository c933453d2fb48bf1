"""Per-process panels of the HTML report: a file with two or more GPU processes (one per rank)
shows each process's full report body, and the reader switches between them with tabs.

The tabs are radio inputs and labels driven by CSS alone (no JavaScript, nothing loaded: the page
works offline and with scripts off). The headline process comes first and is selected; its body is
the page's own (the navigation links to it). Every other process's body is rendered from its
``processes[]`` row (the same sections as the top level, report/view.py: ``process_sections``)
through the same partials, with its element ids prefixed ``p<i>-`` so they stay unique. Process
names are trace text: they arrive cleaned (report/clean.py) and Jinja escapes them.
"""
from __future__ import annotations

import re
from typing import Callable

from markupsafe import Markup

from nsys_diag.model.vocabulary import VERDICT_TITLES
from nsys_diag.report.contract import PROCESS_KEYS

_ID_ATTR = re.compile(r'\b(id|for|aria-labelledby|aria-describedby|aria-controls)="([^"]*)"')
_HREF = re.compile(r'href="#([^"]*)"')


def prefix_ids(html: str, prefix: str) -> str:
    """``html`` with every element id (and the attributes that name one: ``for``, ``aria-*``,
    ``href="#…"``) prefixed, so a second copy of the report body keeps ids unique. Trace text is
    escaped before this runs (``"`` is ``&#34;``), so only real attributes match."""
    html = _ID_ATTR.sub(lambda m: f'{m.group(1)}="' + " ".join(prefix + t for t in m.group(2).split())
                        + '"', html)
    return _HREF.sub(lambda m: f'href="#{prefix}{m.group(1)}"', html)


def process_view(data: dict, row: dict) -> dict:
    """The report view of one process: the file-level keys of ``data`` with the row's own
    sections (``PROCESS_KEYS``) and scope, and no process table of its own."""
    sub = dict(data)
    sub.update({k: row[k] for k in PROCESS_KEYS if k in row})
    sub["scope"] = dict(data.get("scope") or {}, pid=row.get("pid"), name=row.get("name"),
                        devices=list(row.get("devices") or []))
    sub["processes"] = []
    return sub


def _label(row: dict) -> dict:
    code = str(row.get("verdict_code") or "insufficient_data")
    name = str(row.get("name") or "process")
    return {"name": name, "pid": row.get("pid"), "verdict": VERDICT_TITLES.get(code, code),
            "headline": bool(row.get("is_headline"))}


def process_panels(data: dict, render_body: Callable[[dict], str]) -> list[dict]:
    """The tabs of a multi-process report, headline first: ``{index, name, pid, verdict,
    headline, body}`` (``body``: None for the headline — the page's own body — else the rendered,
    id-prefixed body of that process). Empty for a single-process report."""
    rows = [r for r in (data.get("processes") or []) if isinstance(r, dict)]
    if len(rows) < 2 or not all("verdict" in r for r in rows):
        return []
    rows.sort(key=lambda r: not r.get("is_headline"))  # stable: the headline first
    panels = []
    for i, row in enumerate(rows):  # one per GPU process
        body = None if i == 0 else Markup(prefix_ids(render_body(process_view(data, row)), f"p{i}-"))
        panels.append(dict(_label(row), index=i, body=body))
    return panels
