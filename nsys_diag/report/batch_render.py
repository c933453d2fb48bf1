"""Renderers for ``batch`` (the index) and ``compare``: Markdown, terminal text, HTML.

They read the JSON-able documents built by ``nsys_diag.batch`` (``index.json`` / compare JSON)
and nothing else. Every trace-controlled string (paths, kernel names, headlines) is escaped for
its medium: Markdown cells get HTML entities for ``<>&|`` and backslash escapes for Markdown
punctuation, control characters are dropped; HTML goes through Jinja autoescape.
"""
from __future__ import annotations

import math

from nsys_diag.model.text import markdown_cell, markdown_code_span, printable
from nsys_diag.report.clean import clean_text
from nsys_diag.report.compare_html import distribution_chart, ms_row_texts
from nsys_diag.report.formatting import MISSING, fmt_ms, fmt_pct, fmt_share
from nsys_diag.report.tables import cell, table

MD_MAX_LINES = 60
"""Compare Markdown must fit a PR comment."""

def md_escape(text: object, limit: int = 80) -> str:
    """One Markdown-table-safe line for an untrusted string (``model.text.markdown_cell``)."""
    return markdown_cell(text, limit)


def md_code(text: object, limit: int = 60) -> str:
    """Content for an inline code span (``model.text.markdown_code_span``); empty → '—'."""
    return markdown_code_span(text, limit) or MISSING


def text_safe(text: object, limit: int = 120) -> str:
    """Terminal text, every non-printable character as '?' (``model.text.printable``)."""
    return printable(text, limit)


def _signed_pct(x) -> str:
    return MISSING if x is None else f"{x:+.1f}%"


def _fmt_metric_value(value, unit: str) -> str:
    if value is None:
        return MISSING
    if unit == "ms":
        return fmt_ms(value)
    if unit == "share":
        return fmt_pct(value)
    if unit == "ms/s":
        return f"{value:.3g} ms/s"
    return f"{value:.3g}"


def _fmt_delta(m: dict) -> str:
    d = m.get("delta")
    if d is not None and m.get("unit") == "ms":
        return ms_row_texts(m)["delta_text"]
    if d is None:
        return MISSING
    if m.get("unit") == "ms":
        txt = ("+" if d >= 0 else "−") + fmt_ms(abs(d))
    elif m.get("unit") == "share":
        txt = f"{d * 100:+.1f} pts"
    elif m.get("unit") == "ms/s":
        txt = f"{d:+.3g} ms/s"
    else:
        txt = f"{d:+.3g}"
    if m.get("delta_pct") is not None:
        txt += f" ({m['delta_pct']:+.1f}%)"
    return txt


def _fmt_ci(m: dict) -> str:
    if m.get("ci_low") is None:
        return "n/a"
    if m.get("ci_low_pct") is not None:
        return f"{m['ci_low_pct']:+.1f}% … {m['ci_high_pct']:+.1f}%"
    if m.get("unit") == "share":
        return f"{m['ci_low'] * 100:+.1f} … {m['ci_high'] * 100:+.1f} pts"
    return f"{m['ci_low']:+.3g} … {m['ci_high']:+.3g}"


def _change_word(m: dict) -> str:
    return {"worse": "worse", "better": "better", "changed": "changed",
            "none": "no significant change",
            "n/a": "n/a"}.get(str(m.get("change")), "")


NA_NOTE = ("n/a: one value per side, so no interval (run-level metrics of a single run); pass a "
           "directory of runs per side to get intervals for them.")


def metric_label(name: str) -> str:
    """Human label of a compare metric name (``phase.data_ms`` → ``data phase``)."""
    if name == "step_time_ms":
        return "step time"
    if name == "gpu_busy":
        return "GPU busy"
    if name == "tensor_core_share":
        return "Tensor Core share"
    if name.startswith("phase."):
        return f"{name[6:].removesuffix('_ms')} phase"
    if name.startswith("gaps."):
        return f"idle: {name[5:].removesuffix('_ms')}"
    if name.startswith("kernel."):
        return f"kernel {name[7:].removesuffix('_ms')}"
    if name == "window.gpu_busy":
        return "GPU busy (per 10 ms bin)"
    if name == "window.tensor_core_share":
        return "Tensor Core share of kernel time"
    if name == "window.exposed_comm_ms_per_s":
        return "exposed communication per second"
    if name.startswith("window.kernel_ms_per_s."):
        return f"{name[len('window.kernel_ms_per_s.'):]} kernels per second"
    if name.startswith("window.kernel."):
        return f"kernel {name[len('window.kernel.'):].removesuffix('_ms_per_s')} per second"
    return name


def _value_texts(m: dict) -> dict:
    """Baseline and candidate texts of a metric row; ms rows share one unit (compare_html)."""
    if m.get("unit") == "ms":
        t = ms_row_texts(m)
        return {"value_baseline": t["value_baseline"], "value_candidate": t["value_candidate"]}
    return {"value_baseline": _fmt_metric_value(m.get("baseline"), m.get("unit", "")),
            "value_candidate": _fmt_metric_value(m.get("candidate"), m.get("unit", ""))}


def compare_rows(doc: dict, limit: int = 24) -> list[dict]:
    """Metric rows for tables: step time, phases, GPU busy, Tensor Cores, then idle causes and
    kernels that changed (significant first, then by |Δ%|), capped at ``limit``."""
    metrics = doc.get("metrics") or []
    head = [m for m in metrics if m["name"] in ("step_time_ms", "gpu_busy", "tensor_core_share")
            or (m["name"].startswith("phase.") and (m.get("baseline") or m.get("candidate")))]
    head.sort(key=lambda m: 0 if m["name"] == "step_time_ms" else 1 if m["name"].startswith("phase.")
              else 2)
    tail = [m for m in metrics if m["name"].startswith(("gaps.", "kernel."))
            and (m.get("significant") or (m.get("delta") or 0) != 0)]
    tail.sort(key=lambda m: (not m.get("significant"), -abs(m.get("delta_pct") or 0.0), m["name"]))
    rows = head + tail
    return [dict(m, label=metric_label(m["name"]), **_value_texts(m),
                 delta_text=_fmt_delta(m), ci_text=_fmt_ci(m), change_text=_change_word(m),
                 short_change={"none": "—", "n/a": "n/a"}.get(m.get("change"), _change_word(m)))
            for m in rows[:limit]]


def explain_rows(doc: dict, group: str | None = None) -> list[dict]:
    """Explain rows (of one ``group`` — phases | kernels — or all), with display texts."""
    rows = []
    for e in doc.get("explain") or []:
        if group is not None and (e.get("group") or "phases") != group:
            continue
        kind = e.get("kind")
        label = (f"{e['name']} phase" if kind == "phase" else f"kernel {e['name']}" if kind == "kernel"
                 else str(e.get("name")))
        t = ms_row_texts({"baseline": e.get("baseline"), "candidate": e.get("candidate"),
                          "delta": e.get("delta") or 0.0})
        rows.append(dict(e, label=label, delta_text=t["delta_text"],
                         baseline_text=t["value_baseline"], candidate_text=t["value_candidate"],
                         share_text=MISSING if e.get("share_of_delta") is None
                         else f"{e['share_of_delta'] * 100:+.0f}%"))
    return rows


def explain_groups(doc: dict) -> list[tuple[str, list[dict]]]:
    """(title, rows) per explain group present, phases first."""
    titles = {"phases": "by phase", "kernels": "by kernel (GPU time)"}
    return [(titles[g], rows) for g in ("phases", "kernels") if (rows := explain_rows(doc, g))]


def comparability_line(doc: dict) -> str | None:
    comp = doc.get("comparability") or {}
    if comp.get("score") is None:
        return None
    word = "comparable" if comp.get("comparable", True) else "NOT comparable"
    return (f"comparability {comp['score']:.2f} ({word}; cut-off {comp.get('min_score', 0.5):g}): "
            + "; ".join(str(r) for r in comp.get("reasons") or []))


def window_rate_rows(doc: dict) -> list[dict]:
    """Rows of the window-rate comparison (no steps on a side), formatted like metric rows."""
    wr = doc.get("window_rates") or {}
    return [dict(m, label=metric_label(m["name"]), **_value_texts(m),
                 delta_text=_fmt_delta(m), ci_text=_fmt_ci(m), change_text=_change_word(m),
                 short_change={"none": "—", "n/a": "n/a"}.get(m.get("change"), _change_word(m)))
            for m in wr.get("metrics") or []]


def window_rates_line(doc: dict) -> str | None:
    wr = doc.get("window_rates")
    if not isinstance(wr, dict):
        return None
    if not wr.get("available"):
        return f"window rates: not compared — {wr.get('reason')}"
    bins = wr.get("bins") or {}
    return (f"step time was not available; window rates over {bins.get('baseline')} vs "
            f"{bins.get('candidate')} bins of 10 ms ({wr.get('note')})")


def step_line(doc: dict) -> str:
    st = doc.get("step_time") or {}
    if st.get("baseline") is None or st.get("candidate") is None:
        return "step time: not available (no steps on one side)"
    line = (f"step time (median): {fmt_ms(st['baseline'])} → {fmt_ms(st['candidate'])}, "
            f"{_signed_pct(st.get('delta_pct'))}")
    if st.get("ci_low_pct") is not None:
        line += f" (95% CI {st['ci_low_pct']:+.1f}% … {st['ci_high_pct']:+.1f}%)"
    return line + f" — {_change_word(st)}"


def gate_line(doc: dict) -> str | None:
    pct = doc.get("fail_on_regression_pct")
    if pct is None:
        return None
    gate = doc.get("gate") or {"evaluated": True}
    if doc.get("regression"):
        return (f"REGRESSION: the candidate is slower by more than {pct:g}% with confidence "
                f"(exit code {doc.get('exit_code')})")
    if not gate.get("evaluated"):
        tail = (" — allowed by --allow-unevaluable" if gate.get("allow_unevaluable") else "")
        return (f"gate --fail-on-regression {pct:g}%: NOT EVALUABLE (exit code "
                f"{doc.get('exit_code')}{tail}): {gate.get('reason')}")
    return f"gate --fail-on-regression {pct:g}%: passed"


# ------------------------------------------------------------------------------ compare: text
def render_compare_text(doc: dict) -> list[str]:
    """A few terminal lines (strings sanitised)."""
    b, c = doc.get("baseline") or {}, doc.get("candidate") or {}
    lines = [f"nsys-diag compare: {text_safe(doc.get('summary'))}",
             f"  baseline:  {text_safe(b.get('path'))} ({b.get('runs')} run(s), {b.get('steps')} steps)",
             f"  candidate: {text_safe(c.get('path'))} ({c.get('runs')} run(s), {c.get('steps')} steps)",
             "  " + step_line(doc)]
    for title, rows in explain_groups(doc):
        lines.append(f"  what explains it, {title}:")
        for e in rows[:5]:
            lines.append(f"    {text_safe(e['label'], 60)}: {e['baseline_text']} → "
                         f"{e['candidate_text']}, {e['delta_text']} per step "
                         f"({e['share_text']} of the delta)")
    wl = window_rates_line(doc)
    if wl:
        lines.append("  " + text_safe(wl, 240))
    for r in window_rate_rows(doc)[:8]:
        lines.append(f"    {text_safe(r['label'], 60)}: {r['value_baseline']} → "
                     f"{r['value_candidate']} ({r['delta_text']}; CI {r['ci_text']}) "
                     f"{r['change_text']}")
    cl = comparability_line(doc)
    if cl:
        lines.append("  " + text_safe(cl, 300))
    vc = doc.get("verdict_change") or {}
    if vc.get("changed"):
        lines.append(f"  verdict: {vc.get('baseline')} → {vc.get('candidate')}")
    for s in doc.get("skipped") or []:
        lines.append(f"  skipped ({s['side']}) {text_safe(s['label'])}: {text_safe(s['reason'])}")
    for n in doc.get("notes") or []:
        lines.append(f"  note: {text_safe(n, 200)}")
    g = gate_line(doc)
    if g:
        lines.append("  " + text_safe(g, 400))
    return lines


# -------------------------------------------------------------------------- compare: markdown
def render_compare_markdown(doc: dict) -> str:
    """PR-comment-sized Markdown (< 60 lines)."""
    b, c = doc.get("baseline") or {}, doc.get("candidate") or {}
    out = [f"### nsys-diag compare: {md_escape(doc.get('summary'), 160)}", ""]
    out.append(f"**{step_line(doc)}**")
    g = gate_line(doc)
    if g:
        out.append("")
        loud = doc.get("regression") or not (doc.get("gate") or {"evaluated": True}).get("evaluated")
        out.append(("**" + md_escape(g, 400) + "**") if loud else md_escape(g, 400))
    cl = comparability_line(doc)
    if cl:
        out += ["", md_escape(cl, 400)]
    out += ["", "| metric | baseline | candidate | Δ | 95% CI | |", "|---|---:|---:|---:|---:|---|"]
    md_limit = 12 if doc.get("explain") or doc.get("window_rates") else 22
    for r in compare_rows(doc, limit=md_limit):
        mark = "**" if r.get("significant") else ""
        out.append(f"| {mark}{md_escape(r['label'], 60)}{mark} | {r['value_baseline']} | "
                   f"{r['value_candidate']} | {r['delta_text']} | {r['ci_text']} | {r['change_text']} |")
    if any(r.get("change") == "n/a" for r in compare_rows(doc, limit=md_limit)):
        out.append(f"\n<sub>{NA_NOTE}</sub>")
    wl = window_rates_line(doc)
    if wl:
        out += ["", md_escape(wl, 300)]
        wrows = window_rate_rows(doc)[:10]
        if wrows:
            out += ["", "| rate | baseline | candidate | Δ | 95% CI | |", "|---|---:|---:|---:|---:|---|"]
            for r in wrows:
                out.append(f"| {md_escape(r['label'], 60)} | {r['value_baseline']} | "
                           f"{r['value_candidate']} | {r['delta_text']} | {r['ci_text']} | "
                           f"{r['change_text']} |")
    for title, rows in explain_groups(doc):
        out += ["", f"**What explains the step-time delta, {title}** (mean per step):", "",
                "| component | baseline | candidate | Δ | share of Δ |", "|---|---:|---:|---:|---:|"]
        for e in rows[:6]:
            sig = " (significant)" if e.get("significant") else ""
            out.append(f"| {md_escape(e['label'], 70)}{sig} | {e['baseline_text']} | "
                       f"{e['candidate_text']} | {e['delta_text']} | {e['share_text']} |")
    vc = doc.get("verdict_change") or {}
    if vc.get("baseline") or vc.get("candidate"):
        word = "changed" if vc.get("changed") else "unchanged"
        out += ["", f"Verdict: `{md_code(vc.get('baseline'))}` → "
                    f"`{md_code(vc.get('candidate'))}` ({word})"]
    notes = list(doc.get("notes") or [])
    if doc.get("skipped"):
        notes.append(f"{len(doc['skipped'])} input(s) skipped (see the JSON)")
    for n in notes[:3]:
        out.append(f"> {md_escape(n, 200)}")
    s = doc.get("settings") or {}
    out += ["", f"<sub>baseline: {md_escape(b.get('path'), 60)} ({b.get('runs')} run(s), "
                f"{b.get('steps')} steps) · candidate: {md_escape(c.get('path'), 60)} "
                f"({c.get('runs')} run(s), {c.get('steps')} steps) · bootstrap "
                f"{s.get('n_boot')}× seed {s.get('seed')} · nsys-diag "
                f"{md_escape((doc.get('tool') or {}).get('version'), 20)}</sub>"]
    return "\n".join(out[:MD_MAX_LINES - 1]) + "\n"


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


# ------------------------------------------------------------------------------------- HTML
HTML_MAX_ROWS = 1000
"""Index rows drawn in the HTML page (index.json keeps them all); keeps the page < 2 MB."""


def _clean_doc(obj, max_list: int = HTML_MAX_ROWS):
    """Recursive copy with display-safe strings (report.clean.clean_text), finite numbers, capped lists."""

    if isinstance(obj, str):
        return clean_text(obj, 2000)
    if isinstance(obj, bool) or obj is None or isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {clean_text(str(k), 200): _clean_doc(v, max_list) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean_doc(v, max_list) for v in obj[:max_list]]
    return clean_text(str(obj), 2000)


def _page(doc: dict, title: str, sections: list[tuple[str, str, bool]], trace_name: str) -> dict:
    tool = doc.get("tool") or {"name": "nsys-diag", "version": ""}
    return {"title": title, "tool": {"name": tool.get("name", "nsys-diag"),
                                     "version": tool.get("version", "")},
            "generated_at": doc.get("generated_at") or "",
            "sections": [{"id": i, "label": label, "available": ok} for i, label, ok in sections],
            "trace_name": trace_name}


def render_trace_html(view: dict) -> str:
    """The per-trace report (the same as ``analyze`` writes)."""
    from nsys_diag.report.html import render_html

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
            trows.append([cell(r.get("rank"), r.get("rank")), cell(r.get("label")),
                          cell(fmt_ms(r.get("median_step_ms")), r.get("median_step_ms"))]
                         + [cell(fmt_share(shares.get(p)), shares.get(p)) for p in cols]
                         + [cell(fmt_ms(r.get("comm_ms")), r.get("comm_ms")),
                            cell(fmt_ms(r.get("start_skew_ms")), r.get("start_skew_ms")),
                            cell("straggler" if r.get("straggler") else "", int(bool(r.get("straggler"))))])
        columns = [("rank", True), ("trace", False), ("step (median)", True)] + \
            [(p, True) for p in cols] + [("NCCL/comm per step", True), ("start skew", True), ("", False)]
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
            "table": table("tbl-ranks", columns, trows),
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


def render_index_html(index: dict) -> str:
    """index.html: one row per trace with a link to its report, ranks, skipped inputs."""
    from nsys_diag.report.html import render_document

    data = _clean_doc(index)
    idx = _index_model(data)
    sections = [("sec-job", "Job", idx["job"] is not None), ("sec-batch", "Traces", True),
                ("sec-ranks", "Ranks", idx["ranks"] is not None),
                ("sec-skipped", "Skipped", bool(idx["skipped"] or idx["ignored"]))]
    page = _page(data, "nsys-diag batch index", sections, "batch index")
    return render_document("batch_index.html", page=page, data=data, idx=idx)


def _compare_model(doc: dict) -> dict:

    mrows = []
    for r in compare_rows(doc, limit=200):
        mrows.append([cell(r["label"]), cell(r["value_baseline"], r.get("baseline")),
                      cell(r["value_candidate"], r.get("candidate")),
                      cell(r["delta_text"], r.get("delta_pct") if r.get("delta_pct") is not None
                           else r.get("delta")),
                      cell(r["ci_text"], r.get("ci_low_pct")),
                      cell(r["short_change"], r.get("change"), title=r.get("note") or None)])
    metrics = table("tbl-metrics", [("metric", False), ("baseline", True), ("candidate", True),
                                    ("Δ", True), ("95% CI of Δ", True), ("", False)], mrows,
                    total=len(doc.get("metrics") or []))
    erows = []
    for e in explain_rows(doc):
        share = e.get("share_of_delta")
        meter = None if share is None else max(0.0, min(100.0, abs(share) * 100))
        erows.append([cell("kernels" if e.get("group") == "kernels" else "phases"),
                      cell(e["label"]), cell(e["baseline_text"], e.get("baseline")),
                      cell(e["candidate_text"], e.get("candidate")),
                      cell(e["delta_text"], e.get("delta")),
                      cell(e["share_text"], share, meter=meter),
                      cell(MISSING if e.get("significant") is None
                           else "yes" if e.get("significant") else "no")])
    explain = table("tbl-explain", [("group", False), ("component", False),
                                    ("baseline ms/step", True), ("candidate ms/step", True),
                                    ("Δ ms/step", True), ("share of Δ (signed)", True),
                                    ("significant", False)], erows)
    wrows = [[cell(r["label"]), cell(r["value_baseline"], r.get("baseline")),
              cell(r["value_candidate"], r.get("candidate")),
              cell(r["delta_text"], r.get("delta")), cell(r["ci_text"], r.get("ci_low")),
              cell(r["short_change"], r.get("change"), title=r.get("note") or None)]
             for r in window_rate_rows(doc)]
    wtable = table("tbl-window-rates", [("rate", False), ("baseline", True), ("candidate", True),
                                        ("Δ", True), ("95% CI of Δ", True), ("", False)], wrows)
    gate = doc.get("gate") or {"evaluated": True}
    unevaluable = doc.get("fail_on_regression_pct") is not None and not gate.get("evaluated")
    b, c = doc.get("baseline") or {}, doc.get("candidate") or {}
    vc = doc.get("verdict_change") or {}
    st = doc.get("step_time") or {}
    s = doc.get("settings") or {}
    regression = bool(doc.get("regression"))
    if regression:
        tone, chip = "warn", "regression"
    elif unevaluable:
        tone, chip = "warn", "gate not evaluable"
    elif st.get("significant"):
        tone, chip = ("warn", "slower") if (st.get("delta") or 0) > 0 else ("good", "faster")
    else:
        tone, chip = "neutral", "no significant change"
    kpis = [
        {"label": "baseline step", "value": fmt_ms(st.get("baseline")),
         "note": f"median of {st.get('n_baseline', 0)} steps, {b.get('runs', 0)} run(s)"},
        {"label": "candidate step", "value": fmt_ms(st.get("candidate")),
         "note": f"median of {st.get('n_candidate', 0)} steps, {c.get('runs', 0)} run(s)"},
        {"label": "Δ step time", "value": _signed_pct(st.get("delta_pct")),
         "note": _change_word(st)},
        {"label": "95% CI of Δ", "value": _fmt_ci(st), "note": f"noise floor "
         f"{(st.get('noise_floor_pct') or 0):.1f}%" if st.get("noise_floor_pct") is not None else ""},
    ]
    return {
        "kpis": kpis, "distribution": distribution_chart(doc),
        "na_note": NA_NOTE if any(m.get("change") == "n/a" for m in doc.get("metrics") or []) else "",
        "summary": doc.get("summary") or "", "step_line": step_line(doc), "gate_line": gate_line(doc),
        "regression": regression, "tone": tone, "chip": chip, "unevaluable": unevaluable,
        "comparability_line": comparability_line(doc) or "",
        "comparable": bool((doc.get("comparability") or {}).get("comparable", True)),
        "window_line": window_rates_line(doc) or "", "window_rates": wtable,
        "confidence": f"{int(100 * (s.get('confidence') or 0.95))}%",
        "sides": [{"role": "baseline", "path": b.get("path"), "runs": b.get("runs"),
                   "steps": b.get("steps"), "verdict": vc.get("baseline")},
                  {"role": "candidate", "path": c.get("path"), "runs": c.get("runs"),
                   "steps": c.get("steps"), "verdict": vc.get("candidate")}],
        "verdict": (f"{vc.get('baseline') or MISSING} → {vc.get('candidate') or MISSING} ("
                    + ("changed" if vc.get("changed") else "unchanged") + ")"),
        "metrics": metrics, "explain": explain, "explain_basis": doc.get("explain_basis") or "",
        "notes": doc.get("notes") or [], "skipped": doc.get("skipped") or [],
        "method": (f"Percentile bootstrap, {s.get('n_boot')} replicates, seed {s.get('seed')}: over "
                   "steps for one run per side, over runs then steps (cluster bootstrap) for several. "
                   f"Noise floor: max({100 * (s.get('min_rel_change') or 0):.0f}%, "
                   f"{s.get('effect_size_floor')} × the baseline's robust step-to-step CV, the "
                   "baseline's run-to-run CV)."),
    }


def render_compare_html(doc: dict) -> str:
    """The comparison page (templates/compare.html)."""
    from nsys_diag.report.html import render_document

    data = _clean_doc(doc)
    cmp = _compare_model(data)
    sections = [("sec-summary", "Summary", True),
                ("sec-distribution", "Distribution", bool(cmp["distribution"])),
                ("sec-metrics", "Metrics", True),
                ("sec-window", "Window rates", bool(cmp["window_line"])),
                ("sec-explain", "Explanation", bool(cmp["explain"]["rows"])),
                ("sec-method", "Method", True)]
    b, c = data.get("baseline") or {}, data.get("candidate") or {}
    page = _page(data, "nsys-diag compare", sections,
                 f"{b.get('path') or 'baseline'} → {c.get('path') or 'candidate'}")
    return render_document("compare.html", page=page, data=data, cmp=cmp)
