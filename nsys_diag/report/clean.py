"""``clean_view(view, limits)``: a copy of the analysis view safe to embed and render.

Every string goes through the one sanitizer (``model.text.clean_text``: ANSI escape sequences
removed, control/bidi/zero-width characters and lone surrogates replaced by U+FFFD) and is cut to
``limits.max_str``; NaN/inf become ``None``; every list the contract names in ``LIST_CAPS`` is
capped (top-N kernels, top gaps, steps…) so the report stays small for any trace size. This copy
is also the JSON blob embedded in the HTML.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from nsys_diag.model import text as _text
from nsys_diag.report.contract import LIST_CAPS


@dataclass(frozen=True)
class Limits:
    """Caps that keep a report small whatever the trace size (the view is capped already; these
    are the renderer's own guard)."""

    max_rows: int = 200  # kernels (and roofline kernels) shown
    max_gaps: int = 50  # top idle gaps listed
    max_steps: int = 5000  # per-step points kept (the chart bins them further)
    max_list: int = 100  # any other list (data-quality items, hints, devices, processes…)
    max_bins: int = 400  # timeline bins per device, histogram bins
    max_tables: int = 200  # trace.tables entries
    max_str: int = 2000  # characters per string


DEFAULT_LIMITS = Limits()
TIGHT_LIMITS = Limits(max_rows=50, max_gaps=20, max_steps=1000, max_list=30, max_bins=200,
                      max_tables=60, max_str=400)
MINIMAL_LIMITS = Limits(max_rows=20, max_gaps=10, max_steps=200, max_list=10, max_bins=100,
                        max_tables=20, max_str=160)


def clean_text(text: object, max_len: int | None = DEFAULT_LIMITS.max_str) -> str:
    """Trace text safe to display anywhere (``model.text.clean_text``), cut to ``max_len``
    characters (default ``DEFAULT_LIMITS.max_str``). HTML/Markdown escaping is the renderer's job."""
    return _text.clean_text(text, max_len)


def _clean(obj: Any, limits: Limits) -> Any:
    """Recursive copy with clean strings, finite numbers and every list capped at
    ``limits.max_steps`` (the largest explicit cap), whatever section it sits in."""
    if isinstance(obj, str):
        return clean_text(obj, limits.max_str)
    if isinstance(obj, bool) or obj is None:
        return obj
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {clean_text(str(k), 200): _clean(v, limits) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v, limits) for v in obj[: limits.max_steps]]
    # numpy scalars and anything else exotic: go through float/str
    try:
        f = float(obj)
        return f if math.isfinite(f) else None
    except (TypeError, ValueError):
        return clean_text(str(obj), limits.max_str)


def _cap_section(v: dict, section: str, key: str | None, n: int) -> None:
    """Cap one list of ``LIST_CAPS`` in ``v`` (sections are copied before they change)."""
    x = v.get(section)
    if key is None:
        if isinstance(x, list):
            v[section] = x[:n]
        return
    if not isinstance(x, dict):
        return
    x = dict(x)
    for k in (list(x) if key == "*" else [key]):
        if isinstance(x.get(k), list):
            x[k] = x[k][:n]
    v[section] = x


def _cap_timeline(tl: dict, limits: Limits) -> dict:
    """At most 4 strips, 16 devices a strip, ``max_list`` phases and ``max_bins`` bins."""
    tl = dict(tl)
    strips = []
    for s in tl["strips"][:4]:
        if not isinstance(s, dict):
            continue
        s = dict(s)
        if isinstance(s.get("phases"), list):
            s["phases"] = s["phases"][: limits.max_list]
        if isinstance(s.get("devices"), list):
            devs = []
            for d in s["devices"][:16]:
                if isinstance(d, dict):
                    d = dict(d)
                    if isinstance(d.get("busy"), list):
                        d["busy"] = d["busy"][: limits.max_bins]
                devs.append(d)
            s["devices"] = devs
        strips.append(s)
    tl["strips"] = strips
    return tl


def _capped_sections(view: dict, limits: Limits) -> dict:
    """Copy of ``view`` (or of one ``processes[]`` row) with ``LIST_CAPS`` and the timeline caps
    applied."""
    v = dict(view)
    for section, key, cap in LIST_CAPS:
        _cap_section(v, section, key, getattr(limits, cap))
    tl = v.get("timeline")
    if isinstance(tl, dict) and isinstance(tl.get("strips"), list):
        v["timeline"] = _cap_timeline(tl, limits)
    return v


def _capped(view: dict, limits: Limits) -> dict:
    """Shallow-structural copy of ``view`` with the contract's big lists cut to ``limits``, in
    every ``processes[]`` row's own sections too."""
    v = _capped_sections(view, limits)
    if isinstance(v.get("processes"), list):
        v["processes"] = [_capped_sections(p, limits) if isinstance(p, dict) else p
                          for p in v["processes"]]
    tr = v.get("trace")
    if isinstance(tr, dict) and isinstance(tr.get("tables"), dict):
        tr = dict(tr)
        tr["tables"] = dict(list(tr["tables"].items())[: limits.max_tables])
        v["trace"] = tr
    return v


def clean_view(view: dict, limits: Limits = DEFAULT_LIMITS) -> dict:
    """A capped, cleaned copy of ``view`` (see module docstring). The input is not modified."""
    if not isinstance(view, dict):
        view = {}
    return _clean(_capped(view, limits), limits)
