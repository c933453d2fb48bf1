"""Renderers of the ``batch`` index: terminal text, Markdown and HTML (``compare`` renders in
``report/compare_render.py``).

They read the JSON-able ``index.json`` documents built by ``app/batch_index.py`` and nothing
else; trace text is escaped through ``report/render_common.py``.
"""
from __future__ import annotations


from nsys_diag.report.formatting import MISSING, fmt_ms, fmt_pct, fmt_share
from nsys_diag.report.tables import cell, table
from nsys_diag.report.render_common import (HTML_MAX_ROWS, clean_doc, md_code, md_escape,
                                          page_frame, text_safe)


# ------------------------------------------------------------------------------ index: terminal
CONFIDENCE_ORDER = {"low": 1, "medium": 2, "high": 3}
"""Sort key of the index's confidence column (unknown: 0, first)."""
TEXT_MAX_ROWS = 40
"""Traces listed in ``batch``'s terminal table (the index files list them all)."""


def render_index_text(index: dict, max_rows: int = TEXT_MAX_ROWS) -> list[str]:
    """``batch``'s per-trace table for the terminal: trace, verdict, confidence, median step
    (plain text, every trace string made printable; none when nothing was analysed)."""
    rows = index.get("traces") or []
    if not rows:
        return []
    cells = [(text_safe(r.get("label"), 60), text_safe(r.get("verdict") or MISSING, 40),
              text_safe(r.get("confidence") or MISSING, 10), fmt_ms(r.get("step_median_ms")))
             for r in rows[:max_rows]]
    head = ("trace", "verdict", "confidence", "median step")
    widths = [max(len(head[i]), *(len(c[i]) for c in cells)) for i in range(4)]

    def line(c) -> str:
        return "  ".join([c[0].ljust(widths[0]), c[1].ljust(widths[1]), c[2].ljust(widths[2]),
                          c[3].rjust(widths[3])]).rstrip()

    out = [line(head)] + [line(c) for c in cells]
    if len(rows) > max_rows:
        out.append(f"… and {len(rows) - max_rows} more traces in index.html / index.json")
    return out


# ------------------------------------------------------------------------------ index: markdown
def _phase_header(c: str) -> str:
    return md_escape(c, 20)


def render_index_markdown(index: dict, max_rows: int = 40) -> str:
    """The batch index as Markdown: one row per trace (capped), skipped inputs, stragglers."""
    c = index.get("counts") or {}
    cols = index.get("phase_columns") or []
    out = [f"### nsys-diag batch: {c.get('found', 0)} traces — {c.get('ok', 0)} analysed "
           f"({c.get('from_cache', 0)} from cache), {c.get('skipped', 0)} skipped", ""]
    job = index.get("job") or {}
    if job.get("available"):
        out += [f"**Job: `{md_code(job.get('verdict'))}`** — {md_escape(job.get('headline'), 200)}"]
        out += [f"- {md_escape(e.get('text'), 200)}" for e in job.get("evidence") or []] + [""]
    header = ["trace", "verdict", "confidence", "step (median)"] + \
        [_phase_header(p) for p in cols] + ["GPU busy", "Tensor Cores"]
    out.append("| " + " | ".join(header) + " |")
    out.append("|" + "|".join(["---", "---", "---"] + ["---:"] * (len(header) - 3)) + "|")
    rows = index.get("traces") or []
    for r in rows[:max_rows]:
        cells = [md_escape(r.get("label"), 60), f"`{md_code(r.get('verdict'))}`",
                 md_escape(r.get("confidence") or MISSING, 10), fmt_ms(r.get("step_median_ms"))]
        cells += [fmt_share((r.get("phase_shares") or {}).get(p)) for p in cols]
        cells += [fmt_pct(r.get("gpu_busy")), fmt_pct(r.get("tensor_core_share"))]
        out.append("| " + " | ".join(cells) + " |")
    if len(rows) > max_rows:
        out.append(f"\n… and {len(rows) - max_rows} more traces in index.html / index.json")
    skipped = index.get("skipped") or []
    if skipped:
        out += ["", f"**Skipped ({len(skipped)}):**"]
        for s in skipped[:15]:
            out.append(f"- {md_escape(s.get('label'), 80)}: {md_escape(s.get('reason'), 160)}")
        if len(skipped) > 15:
            out.append(f"- … {len(skipped) - 15} more in index.json")
    ranks = index.get("ranks") or {}
    if ranks.get("available"):
        sp = ranks.get("spread") or {}
        out += ["", f"**Ranks:** {ranks.get('count')} (identity from {md_escape(ranks.get('source'), 60)}); "
                    f"median step {fmt_ms(sp.get('median_ms'))}, slowest/median "
                    f"{sp.get('max_over_median') or 0:.2f}×"]
        for s in ranks.get("stragglers") or []:
            out.append(f"- straggler rank {s['rank']} ({md_escape(s.get('label'), 60)}): "
                       f"loses {fmt_ms(s.get('phase_excess_ms'))} per step in "
                       f"{md_escape(s.get('phase') or MISSING, 30)}")
        if not ranks.get("stragglers"):
            out.append("- no straggler")
    return "\n".join(out) + "\n"


def render_trace_html(view: dict) -> str:
    """The per-trace report (the same as ``analyze`` writes)."""
    from nsys_diag.report.html_report import render_html

    return render_html(view)


def _href(rel: str | None) -> str | None:
    """A relative, percent-encoded link (never a scheme or a network path)."""
    if not rel:
        return None
    from urllib.parse import quote

    parts = [p for p in str(rel).replace("\\", "/").split("/") if p not in ("", ".", "..")]
    return "./" + "/".join(quote(p, safe="") for p in parts) if parts else None


def _sort(x) -> str:
    return "" if x is None else repr(float(x))


def _index_model(index: dict) -> dict:

    cols = index.get("phase_columns") or []
    c = index.get("counts") or {}
    rows = []
    all_rows = index.get("traces") or []
    for r in all_rows[:HTML_MAX_ROWS]:
        shares = r.get("phase_shares") or {}
        rows.append({
            "label": r.get("label") or "", "href": _href(r.get("report_html")),
            "cached": bool(r.get("cached")),
            "verdict_text": r.get("verdict") or MISSING,
            "confidence_text": r.get("confidence") or MISSING,
            "confidence_sort": str(CONFIDENCE_ORDER.get(r.get("confidence"), 0)),
            "step_text": fmt_ms(r.get("step_median_ms")), "step_sort": _sort(r.get("step_median_ms")),
            "phase_cells": [{"text": fmt_share(shares.get(p)), "sort": _sort(shares.get(p))} for p in cols],
            "busy_text": fmt_pct(r.get("gpu_busy")), "busy_sort": _sort(r.get("gpu_busy")),
            "tc_text": fmt_pct(r.get("tensor_core_share")), "tc_sort": _sort(r.get("tensor_core_share")),
            "rank_text": MISSING if r.get("rank") is None else str(r.get("rank")),
            "rank_sort": "" if r.get("rank") is None else str(r.get("rank")),
        })
    ranks = index.get("ranks") or {}
    ranks_model = None
    if ranks.get("available"):
        sp = ranks.get("spread") or {}
        trows = []
        for r in ranks.get("rows") or []:
            shares = r.get("phase_shares") or {}
            trows.append([cell(r.get("rank"), r.get("rank")), cell(r.get("label"), cls="label"),
                          cell(fmt_ms(r.get("median_step_ms")), r.get("median_step_ms"))]
                         + [cell(fmt_share(shares.get(p)), shares.get(p)) for p in cols]
                         + [cell(fmt_ms(r.get("comm_ms")), r.get("comm_ms")),
                            cell(fmt_ms(r.get("start_skew_ms")), r.get("start_skew_ms")),
                            cell("straggler" if r.get("straggler") else "", int(bool(r.get("straggler"))))])
        columns = [("rank", True), ("trace", False), ("step (median)", True)] + \
            [(p, True) for p in cols] + [("NCCL/comm per step", True), ("start skew", True), ("status", False)]
        al = ranks.get("alignment") or {}
        ranks_model = {
            "line": (f"{ranks.get('count')} ranks (identity from {ranks.get('source')}); median step "
                     f"{fmt_ms(sp.get('median_ms'))}, fastest {fmt_ms(sp.get('min_ms'))}, slowest "
                     f"{fmt_ms(sp.get('max_ms'))} ({(sp.get('max_over_median') or 0):.2f}× the median), "
                     f"CV {fmt_pct(sp.get('cv'))}. Aligned by {al.get('basis', 'step index')} over "
                     f"{al.get('common_steps', 0)} common steps."),
            "stragglers": [{"rank": s.get("rank"), "label": s.get("label"),
                            "text": (f"median step {fmt_ms(s.get('median_step_ms'))}; loses "
                                     f"{fmt_ms(s.get('phase_excess_ms'))} per step in the "
                                     f"{s.get('phase') or '?'} phase"
                                     + (" (step times equalised by collectives; found by phase)"
                                        if s.get("kind") == "phase" else ""))}
                           for s in ranks.get("stragglers") or []],
            "chart": rank_steps_chart(ranks),
            "table": table("tbl-ranks", columns, trows,
                           fold=tuple(range(3, 3 + len(cols))) + (3 + len(cols) + 1,)),
            "note": " ".join(x for x in (ranks.get("note"), al.get("note")) if x),
        }
    skipped = index.get("skipped") or []
    tone = "warn" if skipped else "good"
    return {
        "counts_line": (f"{c.get('found', 0)} traces found: {c.get('ok', 0)} analysed "
                        f"({c.get('from_cache', 0)} from cache), {c.get('skipped', 0)} skipped"
                        + (f", {c.get('ignored')} ignored" if c.get("ignored") else "") + "."),
        "phase_columns": cols, "rows": rows, "total": len(all_rows),
        "more": len(all_rows) > len(rows), "ranks": ranks_model,
        "job": (index.get("job") or {}) if (index.get("job") or {}).get("available") else None,
        "skipped": skipped[:HTML_MAX_ROWS], "ignored": (index.get("ignored") or [])[:HTML_MAX_ROWS],
        "tone": tone, "chip": f"{c.get('skipped', 0)} skipped" if skipped else "all analysed",
    }


RANK_CHART_MAX_ROWS = 64
"""Ranks drawn one row each in the batch index's step-time chart (beyond: the first 64)."""


def rank_steps_chart(ranks: dict) -> dict | None:
    """The batch index's ``rank-steps`` box plot: one row per rank (up to
    ``RANK_CHART_MAX_ROWS``) — a whisker from its shortest to its longest step, a box over its
    middle half (p25 to p75), a dot at its median step time and a tick at its mean, the
    stragglers in the outlier colour, on one axis from 0 ms; None without two ranks with steps.
    Coordinates in the viewBox's user units (720 wide)."""
    from nsys_diag.model.jsonsafe import finite
    from nsys_diag.report.charts import nice_ticks

    rows = [r for r in ranks.get("rows") or [] if finite(r.get("median_step_ms")) is not None]
    if len(rows) < 2:
        return None
    rows = rows[:RANK_CHART_MAX_ROWS]
    width, label_w, value_w, row_h, top, axis_h = 720, 76, 84, 22, 8, 36
    x0, x1 = label_w, width - value_w
    hi = max(max(float(r["median_step_ms"]), float(finite(r.get("mean_step_ms")) or 0.0),
                 float(finite(r.get("max_step_ms")) or 0.0)) for r in rows)
    ticks = nice_ticks(0.0, hi * 1.05 or 1.0, 5)
    top_val = ticks[-1] or 1.0

    def x(ms) -> float:
        return round(x0 + (x1 - x0) * float(ms) / top_val, 1)

    out = []
    for i, r in enumerate(rows):
        y = top + i * row_h + row_h / 2
        mean = finite(r.get("mean_step_ms"))
        spread = [finite(r.get(k)) for k in ("min_step_ms", "p25_step_ms", "p75_step_ms",
                                             "max_step_ms")]
        box = None if any(v is None for v in spread) else [x(v) for v in spread]
        out.append({"label": f"rank {r.get('rank')}", "y": round(y, 1), "ty": round(y + 4, 1),
                    "x": x(r["median_step_ms"]), "mean_x": None if mean is None else x(mean),
                    "box": box,
                    "value": fmt_ms(r["median_step_ms"]),
                    "cls": "pt-outlier" if r.get("straggler") else "pt-normal",
                    "title": (f"rank {r.get('rank')} ({r.get('label')}): median step {fmt_ms(r['median_step_ms'])}, "
                              f"mean {fmt_ms(mean)}, {r.get('steps')} steps"
                              + (f", {fmt_ms(spread[0])} to {fmt_ms(spread[3])} (middle half "
                                 f"{fmt_ms(spread[1])} to {fmt_ms(spread[2])})" if box else "")
                              + (", straggler" if r.get("straggler") else ""))})
    axis_y = top + len(rows) * row_h + 4
    return {"width": width, "height": axis_y + axis_h, "rows": out, "x0": x0, "x1": x1, "value_x": width - 4,
            "axis_y": axis_y, "ticks": [{"x": x(t), "label": fmt_ms(t)} for t in ticks],
            "label": (f"Median step time of {len(rows)} ranks: fastest "
                      f"{fmt_ms(min(r['median_step_ms'] for r in rows))}, slowest "
                      f"{fmt_ms(max(r['median_step_ms'] for r in rows))}")}


def render_index_html(index: dict) -> str:
    """index.html: one row per trace with a link to its report, ranks, skipped inputs."""
    from nsys_diag.report.html_report import render_document

    data = clean_doc(index)
    idx = _index_model(data)
    sections = [("sec-job", "Job", idx["job"] is not None), ("sec-batch", "Traces", True),
                ("sec-ranks", "Ranks", idx["ranks"] is not None),
                ("sec-skipped", "Skipped", bool(idx["skipped"] or idx["ignored"]))]
    page = page_frame(data, "nsys-diag batch index", sections, "batch index")
    return render_document("batch_index.html", page=page, data=data, idx=idx)
