"""Renderers of ``compare``: terminal text, Markdown and HTML.

They read the JSON-able compare document built by ``app/compare.py`` and nothing else; trace text
is escaped through ``report/render_common.py``.
"""
from __future__ import annotations


from nsys_diag.report.compare_html import distribution_chart, ms_row_texts
from nsys_diag.model.vocabulary import EXPLAIN_OTHER
from nsys_diag.report.formatting import MISSING, fmt_ms, fmt_pct, fmt_signed
from nsys_diag.report.render_common import (MD_MAX_LINES, clean_doc, md_code, md_escape, page_frame,
                                          text_safe)
from nsys_diag.report.tables import cell, table


def _signed_pct(x) -> str:
    return MISSING if x is None else f"{fmt_signed(x)}%"


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
        txt = f"{fmt_signed(d * 100)} pts"
    elif m.get("unit") == "ms/s":
        txt = f"{d:+.3g} ms/s"
    else:
        txt = f"{d:+.3g}"
    if m.get("delta_pct") is not None:
        txt += f" ({fmt_signed(m['delta_pct'])}%)"
    return txt


def _fmt_ci(m: dict) -> str:
    if m.get("ci_low") is None:
        return "n/a"
    if m.get("ci_low_pct") is not None:
        return f"{fmt_signed(m['ci_low_pct'])}% … {fmt_signed(m['ci_high_pct'])}%"
    if m.get("unit") == "share":
        return f"{fmt_signed(m['ci_low'] * 100)} … {fmt_signed(m['ci_high'] * 100)} pts"
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
        return f"{name[len('window.kernel_ms_per_s.'):]} kernel time per second"
    if name.startswith("window.kernel."):
        return f"kernel {name[len('window.kernel.'):].removesuffix('_ms_per_s')} time per second"
    return name


def _value_texts(m: dict) -> dict:
    """Baseline and candidate texts of a metric row; ms rows share one unit (compare_html)."""
    if m.get("unit") == "ms":
        t = ms_row_texts(m)
        return {"value_baseline": t["value_baseline"], "value_candidate": t["value_candidate"]}
    return {"value_baseline": _fmt_metric_value(m.get("baseline"), m.get("unit", "")),
            "value_candidate": _fmt_metric_value(m.get("candidate"), m.get("unit", ""))}


def compare_rows(doc: dict, limit: int = 24, *, every: bool = False) -> list[dict]:
    """Metric rows for tables: step time, phases, GPU busy, Tensor Cores, then idle causes and
    kernels that changed (significant first, then by |Δ%|), capped at ``limit``. ``every``: then
    the other metrics too (those that did not change), so a table can show all of them."""
    metrics = doc.get("metrics") or []
    head = [m for m in metrics if m["name"] in ("step_time_ms", "gpu_busy", "tensor_core_share")
            or (m["name"].startswith("phase.") and (m.get("baseline") or m.get("candidate")))]
    head.sort(key=lambda m: 0 if m["name"] == "step_time_ms" else 1 if m["name"].startswith("phase.")
              else 2)
    tail = [m for m in metrics if m["name"].startswith(("gaps.", "kernel."))
            and (m.get("significant") or (m.get("delta") or 0) != 0)]
    tail.sort(key=lambda m: (not m.get("significant"), -abs(m.get("delta_pct") or 0.0), m["name"]))
    rows = head + tail
    if every:
        listed = {id(m) for m in rows}
        rows += [m for m in metrics if id(m) not in listed]
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
                         else f"{fmt_signed(e['share_of_delta'] * 100, 0)}%"))
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


def _comparable(doc: dict) -> bool:
    """Whether the pair is comparable (the JSON's ``comparability.comparable``; true when absent)."""
    return bool((doc.get("comparability") or {}).get("comparable", True))


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
        line += f" (95% CI {fmt_signed(st['ci_low_pct'])}% … {fmt_signed(st['ci_high_pct'])}%)"
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


def predicted_line(doc: dict) -> str | None:
    """"predicted vs measured: the baseline's replay predicted 380 ms per step for instant_input
    (…); the candidate measured 390 ms (prediction −2.6%)" — None when unavailable."""
    p = doc.get("predicted") or {}
    if not p.get("available"):
        return None
    err = p.get("error_pct")
    return (f"predicted vs measured: the baseline's replay predicted "
            f"{fmt_ms(p.get('predicted_step_ms'))} per step for {p.get('what_if')} "
            f"({p.get('change')}); the candidate measured {fmt_ms(p.get('candidate_step_ms'))}"
            + (f" (prediction {err:+.1f}%)" if err is not None else ""))


# ------------------------------------------------------------------------------ compare: text
def rest_row(rest: list[dict]) -> dict:
    """The explain rows of one group not listed, summed into one row (so the listed rows and it
    add up to the delta) named as the JSON names the group's remainder row — ``kind`` "other",
    ``model.vocabulary.EXPLAIN_OTHER`` — and which it holds: ``label``, ``also`` (the other rows
    summed in, as the JSON names them; '' for none), ``delta_text``, ``share_text``. Strings are
    not escaped (each renderer escapes its way)."""
    other = [e for e in rest if e.get("kind") == "other"]
    group = (rest[0].get("group") or "phases") if rest else "phases"
    label = str(other[0].get("name") if other else EXPLAIN_OTHER.get(group, "other"))
    named = [str(e.get("label") or e.get("name")) for e in rest if e.get("kind") != "other"]
    listed = ", ".join(named[:4]) + (f", … (+{len(named) - 4})" if len(named) > 4 else "")
    delta = sum(float(e.get("delta") or 0.0) for e in rest)
    shares = [float(x) for e in rest if (x := e.get("share_of_delta")) is not None]
    t = ms_row_texts({"baseline": None, "candidate": None, "delta": delta})
    return {"label": label, "also": listed, "delta_text": t["delta_text"],
            "share_text": f"{fmt_signed(sum(shares) * 100, 0)}%" if len(shares) == len(rest)
            and shares else MISSING}


def _rest_line(rest: list[dict]) -> str:
    """'other (remaining kernels, and time outside kernels): −1.2 ms per step (+6% of the delta);
    with kernel a, kernel b (rows of the JSON explain[])' — the rows not listed, in one line."""
    r = rest_row(rest)
    share = f" ({r['share_text']} of the delta)" if r["share_text"] != MISSING else ""
    also = f"; with {text_safe(r['also'], None)} (rows of the JSON explain[])" if r["also"] else ""
    return f"{text_safe(r['label'], None)}: {r['delta_text']} per step{share}{also}"


def render_compare_text(doc: dict) -> list[str]:
    """A few terminal lines (strings sanitised)."""
    b, c = doc.get("baseline") or {}, doc.get("candidate") or {}
    cl = comparability_line(doc)
    lines = [f"nsys-diag compare: {text_safe(cl, None)}", f"  result: {text_safe(doc.get('summary'), None)}"] \
        if cl and not _comparable(doc) else [f"nsys-diag compare: {text_safe(doc.get('summary'))}"]
    lines += [
             f"  baseline:  {text_safe(b.get('path'))} ({b.get('runs')} run(s), {b.get('steps')} steps)",
             f"  candidate: {text_safe(c.get('path'))} ({c.get('runs')} run(s), {c.get('steps')} steps)",
             "  " + step_line(doc)]
    for title, rows in explain_groups(doc):
        lines.append(f"  what explains it, {title}:")
        for e in rows[:5]:
            lines.append(f"    {text_safe(e['label'], None)}: {e['baseline_text']} → "
                         f"{e['candidate_text']}, {e['delta_text']} per step "
                         f"({e['share_text']} of the delta)")
        if len(rows) > 5:  # the rest in one line, so the lines add up to the delta
            lines.append("    " + _rest_line(rows[5:]))
    wl = window_rates_line(doc)
    if wl:
        lines.append("  " + text_safe(wl, None))
    for r in window_rate_rows(doc)[:8]:
        lines.append(f"    {text_safe(r['label'], 60)}: {r['value_baseline']} → "
                     f"{r['value_candidate']} ({r['delta_text']}; CI {r['ci_text']}) "
                     f"{r['change_text']}")
    if cl and _comparable(doc):
        lines.append("  " + text_safe(cl, None))
    pl = predicted_line(doc)
    if pl:
        lines.append("  " + text_safe(pl, None))
    vc = doc.get("verdict_change") or {}
    if vc.get("changed"):
        lines.append(f"  verdict: {vc.get('baseline')} → {vc.get('candidate')}")
    for s in doc.get("skipped") or []:
        lines.append(f"  skipped ({s['side']}) {text_safe(s['label'])}: {text_safe(s['reason'])}")
    for n in doc.get("notes") or []:
        lines.append(f"  note: {text_safe(n, None)}")
    g = gate_line(doc)
    if g:
        lines.append("  " + text_safe(g, None))
    return lines


# -------------------------------------------------------------------------- compare: markdown
def render_compare_markdown(doc: dict) -> str:
    """PR-comment-sized Markdown (< 60 lines)."""
    b, c = doc.get("baseline") or {}, doc.get("candidate") or {}
    cl = comparability_line(doc)
    if cl and not _comparable(doc):  # said first: every number below compares unlike runs
        out = [f"### nsys-diag compare: NOT comparable ({md_escape(doc.get('summary'), 160)})", "",
               "**" + md_escape(cl, 400) + "**", ""]
        cl = None
    else:
        out = [f"### nsys-diag compare: {md_escape(doc.get('summary'), 160)}", ""]
    out.append(f"**{step_line(doc)}**")
    g = gate_line(doc)
    if g:
        out.append("")
        loud = doc.get("regression") or not (doc.get("gate") or {"evaluated": True}).get("evaluated")
        out.append(("**" + md_escape(g, 400) + "**") if loud else md_escape(g, 400))
    if cl:
        out += ["", md_escape(cl, 400)]
    out += ["", "| metric | baseline | candidate | Δ | 95% CI | change |",
            "|---|---:|---:|---:|---:|---|"]
    md_limit = 12 if doc.get("explain") or doc.get("window_rates") else 22
    shown, every = compare_rows(doc, limit=md_limit), len(doc.get("metrics") or [])
    for r in shown:
        mark = "**" if r.get("significant") else ""
        out.append(f"| {mark}{md_escape(r['label'], 60)}{mark} | {r['value_baseline']} | "
                   f"{r['value_candidate']} | {r['delta_text']} | {r['ci_text']} | {r['change_text']} |")
    if len(shown) < every:
        out.append(f"\n<sub>Showing {len(shown)} of {every} metrics: the JSON (`metrics[]`) and "
                   "the HTML report hold them all.</sub>")
    if any(r.get("change") == "n/a" for r in shown):
        out.append(f"\n<sub>{NA_NOTE}</sub>")
    wl = window_rates_line(doc)
    if wl:
        out += ["", md_escape(wl, 300)]
        wrows = window_rate_rows(doc)[:10]
        if wrows:
            out += ["", "| rate | baseline | candidate | Δ | 95% CI | change |",
                    "|---|---:|---:|---:|---:|---|"]
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
        if len(rows) > 6:  # the rest in one row, so the rows add up to the delta
            r = rest_row(rows[6:])
            also = (f", with {md_escape(r['also'], 300)} (rows of the JSON explain[])"
                    if r["also"] else "")
            out.append(f"| {md_escape(r['label'], 70)}{also} | | | {r['delta_text']} | "
                       f"{r['share_text']} |")
    pl = predicted_line(doc)
    if pl:
        out += ["", md_escape(pl[:1].upper() + pl[1:], 400)]
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


def _compare_model(doc: dict) -> dict:

    mrows = []
    for r in compare_rows(doc, limit=10_000, every=True):
        mrows.append([cell(r["label"], cls="label"), cell(r["value_baseline"], r.get("baseline")),
                      cell(r["value_candidate"], r.get("candidate")),
                      cell(r["delta_text"], r.get("delta_pct") if r.get("delta_pct") is not None
                           else r.get("delta")),
                      cell(r["ci_text"], r.get("ci_low_pct")),
                      cell(r["short_change"], r.get("change"), title=r.get("note") or None)])
    metrics = table("tbl-metrics", [("metric", False), ("baseline", True), ("candidate", True),
                                    ("Δ", True), ("95% CI of Δ", True), ("change", False)], mrows,
                    total=len(doc.get("metrics") or []), fold=(1, 2))
    erows = []
    for e in explain_rows(doc):
        share = e.get("share_of_delta")
        meter = None if share is None else max(0.0, min(100.0, abs(share) * 100))
        erows.append([cell("kernels" if e.get("group") == "kernels" else "phases"),
                      cell(e["label"], cls="label"), cell(e["baseline_text"], e.get("baseline")),
                      cell(e["candidate_text"], e.get("candidate")),
                      cell(e["delta_text"], e.get("delta")),
                      cell(e["share_text"], share, meter=meter),
                      cell(MISSING if e.get("significant") is None
                           else "yes" if e.get("significant") else "no")])
    explain = table("tbl-explain", [("group", False), ("component", False),
                                    ("baseline ms/step", True), ("candidate ms/step", True),
                                    ("Δ ms/step", True), ("share of Δ (signed)", True),
                                    ("significant", False)], erows, fold=(0, 2, 3, 6))
    wrows = [[cell(r["label"], cls="label"), cell(r["value_baseline"], r.get("baseline")),
              cell(r["value_candidate"], r.get("candidate")),
              cell(r["delta_text"], r.get("delta")), cell(r["ci_text"], r.get("ci_low")),
              cell(r["short_change"], r.get("change"), title=r.get("note") or None)]
             for r in window_rate_rows(doc)]
    wtable = table("tbl-window-rates", [("rate", False), ("baseline", True), ("candidate", True),
                                        ("Δ", True), ("95% CI of Δ", True), ("change", False)], wrows,
                   fold=(1, 2))
    gate = doc.get("gate") or {"evaluated": True}
    unevaluable = doc.get("fail_on_regression_pct") is not None and not gate.get("evaluated")
    b, c = doc.get("baseline") or {}, doc.get("candidate") or {}
    vc = doc.get("verdict_change") or {}
    st = doc.get("step_time") or {}
    s = doc.get("settings") or {}
    regression = bool(doc.get("regression"))
    if regression:
        tone, chip = "warn", "regression"
    elif not _comparable(doc):  # before "slower"/"faster": those compare unlike runs
        tone, chip = "warn", "not comparable"
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
        "predicted_line": predicted_line(doc) or "",
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
    from nsys_diag.report.html_report import render_document

    data = clean_doc(doc)
    cmp = _compare_model(data)
    sections = [("sec-summary", "Summary", True),
                ("sec-distribution", "Distribution", bool(cmp["distribution"])),
                ("sec-metrics", "Metrics", True),
                ("sec-window", "Window rates", bool(cmp["window_line"])),
                ("sec-explain", "Explanation", bool(cmp["explain"]["rows"])),
                ("sec-method", "Method", True)]
    b, c = data.get("baseline") or {}, data.get("candidate") or {}
    page = page_frame(data, "nsys-diag compare", sections,
                 f"{b.get('path') or 'baseline'} → {c.get('path') or 'candidate'}")
    return render_document("compare.html", page=page, data=data, cmp=cmp)
