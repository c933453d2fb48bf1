"""Compact terminal summary of a view: verdict, phase table, top gaps (plain text, no colour).

Every string that comes from the trace goes through ``clean_terminal`` (ANSI escapes, control and
bidi characters removed); a column in the middle of a line is truncated to fit it, the last one is
not (``fit_line`` wraps a line to the terminal, it never cuts).
"""
from __future__ import annotations

from nsys_diag.report.render_common import format_label, kernels_only
from nsys_diag.report.replay_render import (projection as verdict_projection, verdict_what_if,
                                            waits_on_text, what_if_rows)
from nsys_diag.report.formatting import (MISSING, fmt_count, fmt_ms, fmt_pct, fmt_share, scaling_line)
from nsys_diag.model.text import terminal_line
from nsys_diag.model.vocabulary import gpu_named
from nsys_diag.report.tables import gap_groups, step_list
from nsys_diag.report.evidence import (evidence_text, finding_cost, finding_saving, fired_findings,
                                      unfired_summary)

NAME_COL = 28
TOP_GAPS_SHOWN = 5
RECS_SHOWN = 6
"""The advice shown (the Markdown summary's MAX_FIXES); any more: '+N more' points to the report."""
EVIDENCE_SHOWN = 5
FINDINGS_SHOWN = 4


def _c(s, n: int | None = None) -> str:
    return terminal_line(s, n)


def fit_line(line: str, width: int | None) -> list[str]:
    """``line`` wrapped to ``width`` terminal columns, between words only (a word longer than the
    width keeps its own line whole: paths and commands stay copyable), the continuation lines
    indented two columns past the line's own indent; nothing is ever cut. A ``label: value`` line
    of one value (``report: PATH``) is never broken. ``width`` None (output not a terminal, no
    ``COLUMNS``): the whole line."""
    if width is None or len(line) <= width or len(line.split()) <= 2:
        return [line]
    import textwrap

    indent = " " * min(len(line) - len(line.lstrip(" ")), max(width // 2, 0))
    return textwrap.wrap(line, width=max(width, len(indent) + 12), subsequent_indent=indent + "  ",
                         break_on_hyphens=False, break_long_words=False, replace_whitespace=False) or [line]


def _gpu_names(gpus: list[dict]) -> list[str]:
    """The GPUs as the header names them: the distinct names; the GPUs whose name the input does
    not give (``name_known`` false: the name is a placeholder) as one entry, ``name unknown``
    (``names unknown`` for several), with their compute capability where the input gives one."""
    named = [gpu_named(g) for g in gpus]
    known = sorted({_c(g["name"], 40) for g, ok in zip(gpus, named) if ok})
    unknown = [g for g, ok in zip(gpus, named) if not ok]
    if unknown:
        caps = sorted({_c(g["compute_capability"], 8) for g in unknown
                       if g.get("compute_capability")})
        word = "names unknown" if len(unknown) > 1 else "name unknown"
        known.append(word + (f", compute capability {', '.join(caps)}" if caps else ""))
    return known


def _header(v: dict) -> list[str]:
    t = v.get("trace", {})
    gpus = t.get("gpus") or []
    names = _gpu_names(gpus)
    gpu_txt = f"{len(gpus)} GPU" + ("s" if len(gpus) != 1 else "") + (f" ({', '.join(names)})"
                                                                       if names else "")
    w = v.get("window") or {}
    source = format_label(t) or f"nsys {_c(t.get('nsys_version') or 'version unknown')}"
    line = f"nsys-diag · {_c(t.get('path'), 60)} · {source}" + (f" · {gpu_txt}" if gpus else "")
    win = f"window {fmt_ms(w.get('duration_ms'))} ({w.get('source', '?')})"
    scope = v.get("scope") or {}
    if (scope.get("process_count") or 1) > 1:
        which = "slowest" if scope.get("headline_by") == "step_time" else "busiest"
        win += (f" · process {scope.get('pid')} ({_c(scope.get('name'), 30)}), the {which} of "
                f"{scope.get('process_count')}")
    if kernels_only(t):  # kernels without a timeline: no window to state
        return [line]
    cover = (w.get("coverage") or {}).get("text")
    return [line, win] + ([f"         {_c(cover)}"] if cover else [])


def _verdict(v: dict) -> list[str]:
    vd = v.get("verdict") or {}
    out = ["", f"VERDICT  {vd.get('code', '?')}  (confidence: {vd.get('confidence', '?')})",
           f"  {_c(vd.get('headline'))}"]
    if vd.get("scale_advice"):
        out.append(f"  More GPUs? {_c(vd['scale_advice'])}")
    projection = None if vd.get("quantities") else scaling_line(v.get("scaling"))
    if projection:  # unless the scale advice already quotes the projection (its quantities)
        out.append(f"             {projection}")
    proj = verdict_projection(v)
    if proj is not None:
        now = f" (now {fmt_ms(proj['now_ms'])})" if proj["now_ms"] is not None else ""
        out.append(f"  Projected {proj['per']} if fixed: {fmt_ms(proj['fixed_ms'])}{now}")
    ev = vd.get("evidence") or []
    if ev:
        out.append("  Evidence:")
        out += [f"   - {_c(evidence_text(e))}" for e in ev[:EVIDENCE_SHOWN]]
    recs = vd.get("recommendations") or []
    if recs:
        out.append("  Try, in order:")
        out += [f"   {i}. {_c(r)}" for i, r in enumerate(recs[:RECS_SHOWN], 1)]
        if len(recs) > RECS_SHOWN:
            out.append(f"   (+{len(recs) - RECS_SHOWN} more in the HTML/JSON report)")
    if vd.get("secondary"):
        out.append(f"  Also (secondary verdicts): {_c(', '.join(str(c) for c in vd['secondary']))}")
    return out


def _findings(v: dict) -> list[str]:
    """Fired findings with severity, cost and rule rows; the rest folded into one line."""
    fired = fired_findings(v)
    rest = unfired_summary(v)
    if not fired and not rest:
        return []
    out = ["", "Findings"]
    for f in fired[:FINDINGS_SHOWN]:
        cost = finding_cost(f)
        out.append(f"  [{_c(f.get('severity'), 8)}] {_c(f.get('cause'), 24)}"
                   + (f" · {cost}" if cost else "") + f" → {_c(f.get('code'), 30)}")
        if f.get("headline"):
            out.append(f"      {_c(f['headline'])}")
        saving = finding_saving(f, (v.get("steps") or {}).get("mean_ms"))
        if saving:
            out.append(f"      {_c(saving)}")
        out += [f"      - {_c(evidence_text(e))}" for e in (f.get("evidence") or [])[:3]]
    if len(fired) > FINDINGS_SHOWN:
        out.append(f"  (+{len(fired) - FINDINGS_SHOWN} more fired findings in the HTML/JSON report)")
    if rest:
        out.append(f"  {_c(rest)}")
    return out


def _steps(v: dict) -> list[str]:
    s = v.get("steps") or {}
    if not s.get("available"):
        return ["", f"Steps    none — {_c(s.get('reason'))}"]
    line = (f"Steps    {s.get('analysed_count')} analysed of {s.get('count')} "
            f"({_c(s.get('source'), 50)}) · mean {fmt_ms(s.get('mean_ms'))} · median "
            f"{fmt_ms(s.get('median_ms'))} · p90 {fmt_ms(s.get('p90_ms'))} · max {fmt_ms(s.get('max_ms'))}")
    out = ["", line]
    extra = []
    if s.get("warmup"):
        extra.append(f"warm-up {step_list(s['warmup'], 4)}")
    if s.get("incomplete"):
        extra.append(f"incomplete {step_list(s['incomplete'], 4)}")
    for o in (s.get("outliers") or [])[:3]:
        extra.append(f"outlier #{o['index']} {fmt_ms(o['duration_ms'])} "
                     f"({o['ratio_to_median']:.1f}× median, {_c(o['reason'])})")
    if extra:
        out.append("         " + " · ".join(extra))
    return out


def _phases(v: dict) -> list[str]:
    rows = v.get("phases") or []
    if not rows:
        st = v.get("phases_status") or {}
        return [f"Phases   none — {_c(st.get('reason') or 'no phase ranges')}"] if st else []
    out = ["", f"{'Phase':<{NAME_COL}} {'canonical':<13} {'ms/step':>9} {'share':>7} "
               f"{'GPU busy':>9} {'GPU work':>9}"]
    for r in rows:
        out.append(f"{_c(r.get('name'), NAME_COL):<{NAME_COL}} {r.get('canonical', ''):<13} "
                   f"{fmt_ms(r.get('mean_ms')):>9} {fmt_share(r.get('share')):>7} "
                   f"{fmt_share(r.get('gpu_busy_share')):>9} {fmt_ms(r.get('gpu_work_ms')):>9}")
    out.append("  (GPU busy: kernels running during the phase's wall-clock span; GPU work: kernel "
               "time launched from it)")
    return out


def _gpu(v: dict) -> list[str]:
    g = v.get("gpu") or {}
    if not g.get("available"):
        return ["", f"GPU      {_c(g.get('reason') or 'no GPU activity')}"]
    line = (f"GPU      utilization {fmt_pct(g.get('utilization'))} (kernels {fmt_ms(g.get('compute_busy_ms'))}"
            f" of {fmt_ms(g.get('window_ms'))}) · copies {fmt_ms(g.get('copy_busy_ms'))}")
    if (g.get("copy_only_ms") or 0) > 0:
        line += f" · copy-only (SMs idle) {fmt_ms(g.get('copy_only_ms'))}"
    tc = v.get("tensor_cores") or {}
    out = ["", line]
    if tc.get("available"):
        out.append(f"         Tensor Cores {fmt_pct(tc.get('share_of_kernel_time'))} of kernel time "
                   f"({_c(tc.get('source') or 'names')}, confidence {tc.get('confidence')})")
        if tc.get("basis"):
            out.append(f"           basis: {_c(tc.get('basis'))}")
    mfu = v.get("mfu") or {}
    if mfu.get("available") and mfu.get("mfu") is not None:
        out.append(f"         MFU {fmt_pct(mfu['mfu'])} · {mfu['achieved_tflops']:.1f} TFLOP/s of "
                   f"{mfu['peak_tflops']:.0f} ({_c(mfu.get('peak_precision'))} dense peak, "
                   f"{_c(mfu.get('gpu'))})")
    ld = v.get("loader") or {}
    if ld.get("available") and ld.get("workers"):
        out.append(f"         DataLoader {ld['workers']} workers busy {fmt_pct(ld.get('busy_share'))} "
                   f"of the window ({_c(ld.get('state'))}; {_c(ld.get('basis'))})")
    return out


def _gaps(v: dict) -> list[str]:
    gp = v.get("gaps") or {}
    if not gp.get("available"):
        return []
    by = gp.get("by_cause") or {}
    total = sum(x for x in by.values() if x) or 0.0
    causes = " · ".join(f"{c} {fmt_ms(ms)}" for c, ms in sorted(by.items(), key=lambda kv: -(kv[1] or 0))
                        if ms)
    out = ["", f"Gaps     {fmt_count(gp.get('count'))} idle gaps ≥ {gp.get('min_gap_ns', 0) / 1000:g} µs, "
               f"{fmt_ms(total)} per GPU: {causes or MISSING}"]
    groups = gap_groups(gp.get("top") or [])[:TOP_GAPS_SHOWN]
    if groups:
        out.append(f"  {'idle':>9}  {'gaps':>4}  {'cause':<17} {'GPU':>3}  {'phase':<20} CPU was")
        for t in groups:
            n = f"×{t['count']}" if t["count"] > 1 else "1"
            out.append(f"  {fmt_ms(t.get('duration_ms')):>9}  {n:>4}  {t.get('cause', ''):<17} "
                       f"{t.get('device_id', ''):>3}  {_c(t.get('phase') or MISSING, 20):<20} "
                       f"{_c(t.get('cpu_activity'))}")
    return out


def _replay(v: dict) -> list[str]:
    """One line: what the step waits on and one what-if (causal replay): the one the verdict is
    priced by, so the line agrees with "Projected step if fixed", else the largest saving."""
    waits = waits_on_text(v, top=3)
    if not waits:
        return []
    priced = verdict_what_if(v)
    best = [priced] if priced is not None else what_if_rows(v)[:1]
    fix = (f"; if {_c(best[0]['change'])}: {best[0]['before']} → {best[0]['after']}"
           if best else "")
    return ["", f"Replay   waits on {waits}{fix}"]


def _processes(v: dict) -> list[str]:
    rows = v.get("processes") or []
    if not rows:
        return []
    out = ["", "Processes (ranks)"]
    for p in rows:
        mark = "*" if p.get("is_headline") else " "
        out.append(f" {mark} pid {p.get('pid')} {_c(p.get('name'), 20):<20} GPUs {p.get('devices')} "
                   f"step {fmt_ms(p.get('steps_mean_ms'))} · util {fmt_pct(p.get('utilization'))} · "
                   f"{p.get('verdict_code')}{_row_loader(p)}")
    return out


def _row_loader(p: dict) -> str:
    """`` · loader 2 workers 95% saturated`` for a process row with its own workers."""
    ld = p.get("loader") or {}
    if not ld.get("available") or not ld.get("workers"):
        return ""
    return (f" · loader {ld['workers']} workers {fmt_pct(ld.get('busy_share'))} "
            f"{_c(ld.get('state'), 12)}")


def _quality(v: dict) -> list[str]:
    items = [q for q in (v.get("data_quality") or []) if q.get("severity") == "warning"]
    out = []
    if items:
        out += ["", "Data quality"]
        out += [f"  ! {_c(q.get('message'))}" for q in items[:5]]
    hints = v.get("capture_hints") or []
    if (v.get("verdict") or {}).get("code") == "insufficient_data" and hints:
        out += ["", "Capture with"] + [f"  {_c(h)}" for h in hints]
    return out


def _roofline(v: dict) -> list[str]:
    roof = v.get("roofline")
    if not isinstance(roof, dict) or not roof.get("available", False):
        return []
    from nsys_diag.report.roofline_text import render_roofline_table

    return ["", *render_roofline_table(roof).rstrip("\n").split("\n")]


def _ncu_kernels(v: dict) -> list[str]:
    """An Nsight Compute CSV read alone without roofline counters: its kernels and the counters
    it holds (``roofline_text.ncu_kernel_rows``: none otherwise)."""
    from nsys_diag.report.roofline_text import render_ncu_kernels

    lines = render_ncu_kernels(v)
    return ["", *lines] if lines else []


def render_text(view: dict) -> str:
    """The terminal summary (ends with a newline).

    An ncu-only input (no timeline) shows the verdict and the roofline table, not the empty
    timeline sections.
    """
    kernel_level_only = kernels_only(view.get("trace") or {})
    timeline = [] if kernel_level_only else (_steps(view) + _phases(view) + _gpu(view)
                                             + _gaps(view) + _replay(view) + _processes(view))
    lines = (_header(view) + _verdict(view) + _findings(view) + timeline + _roofline(view)
             + _ncu_kernels(view) + _quality(view))
    return "\n".join(lines) + "\n"
