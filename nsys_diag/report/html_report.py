"""The self-contained HTML report: one file, no network, deterministic.

``render_html(view)`` turns an analysis view (docs/JSON.md) into a complete page: the Jinja
environment is built once (``FileSystemLoader(templates_dir())``, ``autoescape=True``,
``StrictUndefined``), CSS and JS are inlined raw through the ``asset(name)`` global, numbers are
formatted by the ``fmt_*`` filters, chart geometry comes from ``charts.chart_model`` and table cells
from ``page.build_page`` — templates do no arithmetic. The view itself (cleaned and capped) is
embedded as ``<script type="application/json" id="nsys-diag-data">`` with ``<``, ``>``, ``&`` and
``'`` escaped to ``\\u00XX`` by Jinja's ``tojson``, so a kernel named ``</script>`` stays data.

Size: the view is capped (top-N rows, binned charts, shortened strings); if the page still exceeds
``MAX_HTML_BYTES`` it is re-rendered with tighter caps. Determinism: nothing here reads the clock
(``generated_at`` comes from the view), JSON keys are sorted, all orderings are explicit.
"""
from __future__ import annotations

from functools import lru_cache

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from nsys_diag.report import formatting
from nsys_diag.report.charts import chart_model
from nsys_diag.report.clean import DEFAULT_LIMITS, MINIMAL_LIMITS, TIGHT_LIMITS, Limits, clean_view
from nsys_diag.report.contract import SECTIONS
from nsys_diag.report.page import build_page
from nsys_diag.report.process_panels import process_panels
from nsys_diag.report.tables import segments
from nsys_diag.report.templates_path import templates_dir

MAX_HTML_BYTES = 2_000_000
"""Hard ceiling on the report size (bytes, UTF-8), whatever the trace size."""

_ASSET_NAMES = frozenset({"report.css", "report.js"})


_BREAK_AFTER = ("_", "/", "::", ",")


def wbr(text: object) -> Markup:
    """``text`` escaped, with a line-break opportunity (``<wbr>``) after ``_``, ``/``, ``::`` and
    ``,``: long identifiers (verdict codes, kernel names, paths) wrap at a word-like boundary
    instead of overflowing their cell or breaking mid-word."""
    out = str(escape(str(text if text is not None else "")))
    for sep in _BREAK_AFTER:
        out = out.replace(sep, sep + "<wbr>")
    return Markup(out)


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The Jinja environment, built once per process."""
    root = templates_dir()
    env = Environment(
        loader=FileSystemLoader(str(root)),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.policies["json.dumps_kwargs"] = {"sort_keys": True, "separators": (",", ":"), "allow_nan": False}
    env.filters.update(formatting.FILTERS)
    env.filters["segments"] = segments
    env.filters["wbr"] = wbr

    assets: dict[str, Markup] = {}

    def asset(name: str) -> Markup:
        """Raw contents of ``templates/assets/<name>`` (CSS/JS), not parsed by Jinja."""
        if name not in _ASSET_NAMES:
            raise ValueError(f"unknown asset {name!r}")
        if name not in assets:
            text = (root / "assets" / name).read_text(encoding="utf-8")
            closer = "</style" if name.endswith(".css") else "</script"
            if closer in text.lower():
                raise ValueError(f"asset {name} must not contain {closer}")
            assets[name] = Markup(text)
        return assets[name]

    env.globals["asset"] = asset
    return env


def nav_sections() -> list[dict]:
    """The report's sections (key, id, label) in page order, for other pages' navigation."""
    return [{"key": k, "id": f"sec-{k}", "label": label, "available": True} for k, label in SECTIONS]


def render_document(template: str, *, page: dict, data: dict, **context) -> str:
    """Render any page extending ``base.html``.

    ``page`` needs ``title``, ``tool`` {name, version}, ``generated_at`` and ``sections``
    [{id, label, available}] (the nav); ``data`` is embedded as the JSON blob. Extra keyword
    arguments are passed to the template (``compare.html`` / ``batch_index.html`` use this).
    All strings must already be clean (see ``report.clean.clean_text``); escaping is Jinja's.
    """
    return environment().get_template(template).render(page=page, data=data, **context)


def _body(view: dict) -> str:
    """The report body (the sections, no page frame) of one process's view."""
    return environment().get_template("partials/_body.html").render(
        page=build_page(view), data=view, charts=chart_model(view))


def _render_once(view: dict, template: str, limits: Limits) -> str:
    data = clean_view(view, limits)
    page = build_page(data)
    charts = chart_model(data)
    panels = process_panels(data, _body) if template == "report.html" else []
    return render_document(template, page=page, data=data, charts=charts, panels=panels)


def render_html(view: dict, *, template: str = "report.html") -> str:
    """The report for ``view`` (docs/JSON.md) as one self-contained HTML string (< 2 MB)."""
    html = ""
    for limits in (DEFAULT_LIMITS, TIGHT_LIMITS, MINIMAL_LIMITS):
        html = _render_once(view, template, limits)
        if len(html.encode("utf-8")) <= MAX_HTML_BYTES:
            return html
    return html
