"""What the reports show of the causal replay (the ``replay`` section, docs/analyses.md "Causal
replay"): what a step waits on (its critical path by kind, a stacked bar) and what each fix would
save (the what-if table: "fix X: A → B ms, range"). Shared by the HTML, Markdown and terminal
renderers; pure, on the view dict.
"""
from __future__ import annotations

from nsys_diag.analyses.diagnosis.pricing import covers_part_of
from nsys_diag.model.jsonsafe import finite
from nsys_diag.model.vocabulary import CRITICAL_PATH_KIND_LABELS
from nsys_diag.report.formatting import fmt_ms, fmt_pct

KIND_LABELS = CRITICAL_PATH_KIND_LABELS
"""Critical-path kinds in words (unknown kinds show as they are; host CPU time by its phase)."""
MAX_WHAT_IFS = 5
"""What-if rows shown (largest saving first)."""
MIN_SAVING_SHARE = 0.005
"""What-ifs saving less than 0.5% of the step, and critical-path parts under 0.5% of it, are not
shown."""


def replay_of(view: dict) -> dict | None:
    """The ``replay`` section when it is available, else None."""
    r = view.get("replay")
    return r if isinstance(r, dict) and r.get("available") else None


PACED_HOST_SHARE = 0.5
PACED_GPU_BUSY = 0.8
"""``pace_note``: host rows holding ≥ 50% of the path while the GPU ran ≥ 80% of their time."""


def waits_on(view: dict) -> list[dict]:
    """The critical path per step by kind: ``[{kind, label, ms, share, gpu_busy_share, note}]``,
    largest first; host rows carry how much of their time the GPU was running (``note``: "GPU
    busy 97% meanwhile"), the other kinds None and ""."""
    r = replay_of(view)
    if r is None:
        return []
    by: dict[tuple[str, str], float] = {}
    busy: dict[tuple[str, str], float] = {}
    for row in r.get("critical_path") or []:
        key = (row["kind"], row.get("phase") or "" if row["kind"] == "host_cpu" else "")
        ms = finite(row.get("ms_per_step")) or 0.0
        by[key] = by.get(key, 0.0) + ms
        b = finite(row.get("gpu_busy_share"))
        if b is not None:
            busy[key] = busy.get(key, 0.0) + b * ms
    total = sum(by.values())
    rows = []
    for (k, phase), ms in by.items():
        if not total or ms / total < MIN_SAVING_SHARE:
            continue
        b_ms = busy.get((k, phase))
        share_busy = min(1.0, b_ms / ms) if b_ms is not None and ms else None
        rows.append({"kind": k, "label": KIND_LABELS.get(k, k) + (f" ({phase})" if phase else ""),
                     "ms": ms, "share": ms / total, "gpu_busy_share": share_busy,
                     "note": (f"GPU busy {fmt_pct(share_busy)} meanwhile"
                              if share_busy is not None else "")})
    return sorted(rows, key=lambda x: (-x["ms"], x["label"]))


def pace_note(view: dict) -> str:
    """When the host holds most of the path while the GPU ran through most of that time: the
    host keeps pace with a busy GPU rather than starving it, so a faster host gains only the
    GPU's idle part (the what-ifs price it). "" otherwise."""
    rows = [x for x in waits_on(view) if x["gpu_busy_share"] is not None]
    host = sum(x["share"] for x in rows)
    if host < PACED_HOST_SHARE:
        return ""
    busy = sum(x["share"] * x["gpu_busy_share"] for x in rows) / host
    if busy < PACED_GPU_BUSY:
        return ""
    return (f"The host's own time is {fmt_pct(host)} of the path, but the GPU ran through "
            f"{fmt_pct(busy)} of it: the host keeps pace with a busy GPU rather than starving "
            f"it, so a faster host gains only the GPU's idle part (the what-ifs price it).")


def what_if_rows(view: dict) -> list[dict]:
    """The what-ifs worth showing, largest saving first: ``{id, change, before_ms, after_ms,
    saves_ms, range, share}`` (display strings for the times)."""
    r = replay_of(view)
    if r is None:
        return []
    rows = []
    for w in r.get("what_if") or []:
        saves, after = finite(w.get("saves_ms_per_step")), finite(w.get("step_ms_after"))
        share = finite(w.get("saves_share")) or 0.0
        if saves is None or after is None or share < MIN_SAVING_SHARE:
            continue
        lo, hi = (list(w.get("saves_range_ms") or []) + [None, None])[:2]
        rows.append({"id": w["id"], "change": w.get("change") or w["id"],
                     "before": fmt_ms(after + saves), "after": fmt_ms(after),
                     "saves": fmt_ms(saves), "share": fmt_pct(share),
                     "range": _range_text(lo, hi), "_saves": saves})
    rows.sort(key=lambda x: (-x["_saves"], x["id"]))
    return rows[:MAX_WHAT_IFS]


def _range_text(lo, hi) -> str:
    """"40 ms–60 ms" (the saving's min and max over the replayed steps, ms); "" when a side is
    missing or both read the same (one value is not a range)."""
    if lo is None or hi is None:
        return ""
    a, b = fmt_ms(lo), fmt_ms(hi)
    return "" if a == b else f"{a}–{b}"


def _priced_what_if(view: dict) -> tuple[dict, float, float] | None:
    """The ``replay.what_if`` row the verdict is priced by (its evidence ``replay.what_if``, the
    one behind its "projected step if fixed") with its ``saves_ms_per_step`` and
    ``step_ms_after`` (both finite); else None."""
    ev = (view.get("verdict") or {}).get("evidence") or []
    wid = next((e.get("value") for e in ev if isinstance(e, dict)
                and e.get("metric") == "replay.what_if"), None)
    if wid is None:
        return None
    r = replay_of(view)
    for w in (r or {}).get("what_if") or []:
        if w.get("id") == wid:
            saves, after = finite(w.get("saves_ms_per_step")), finite(w.get("step_ms_after"))
            return None if saves is None or after is None else (w, saves, after)
    return None


def verdict_what_if(view: dict) -> dict | None:
    """The what-if row the verdict is priced by (``_priced_what_if``) for display:
    ``{id, change, before, after}``, else None."""
    priced = _priced_what_if(view)
    if priced is None:
        return None
    w, saves, after = priced
    return {"id": w["id"], "change": w.get("change") or w["id"],
            "before": fmt_ms(after + saves), "after": fmt_ms(after)}


SPEEDUP_SHOWN = 1.0001
"""A projected speed-up is shown only above this ratio (now / fixed): equal times are no gain."""


def projection(view: dict) -> dict | None:
    """The verdict's "if fixed" figures in the basis they were priced in: ``{per, now_ms,
    fixed_ms, speedup}`` — ``per`` ``step`` (now: the mean step) or ``window`` (a replay without
    steps prices the replayed window: now is that window before the priced fix, else as
    measured); ``speedup`` now / fixed when above ``SPEEDUP_SHOWN``, else None; None without a
    projection."""
    vd = view.get("verdict") or {}
    fixed = finite(vd.get("projected_step_ms_if_fixed"))
    if fixed is None:
        return None
    per = _per(view)
    steps = view.get("steps") or {}
    now = finite(steps.get("mean_ms")) if per == "step" and steps.get("available") else None
    if per == "window":
        priced = _priced_what_if(view)
        now = (priced[1] + priced[2] if priced is not None else
               finite(((replay_of(view) or {}).get("fidelity") or {}).get("measured_ms")))
    speedup = now / fixed if now and fixed > 0 else None
    return {"per": per, "now_ms": now, "fixed_ms": fixed,
            "speedup": speedup if speedup is not None and speedup > SPEEDUP_SHOWN else None}


def fidelity_text(view: dict) -> str:
    """"replayed 812 ms vs 800 ms measured (+1.5%)" or ""."""
    r = replay_of(view)
    if r is None:
        return ""
    f = r.get("fidelity") or {}
    err = finite(f.get("error_pct"))
    return (f"replayed {fmt_ms(f.get('replayed_ms'))} vs {fmt_ms(f.get('measured_ms'))} measured"
            + (f" ({err:+.1f}%)" if err is not None else "") + _replayed_what(view, f))


def _replayed_what(view: dict, f: dict) -> str:
    """What the fidelity figures are of: ``, the mean of 3 replayed steps`` (not the analysed
    mean step the what-ifs are priced on), or — a window replay that covers only the start of the
    analysed window (its operation budget) — ``, the first 6.8 s of the 6.96 s window``."""
    steps = [s for s in f.get("steps") or [] if isinstance(s, dict)]
    if f.get("basis") == "steps":
        n = len(steps)
        return f", the mean of {n} replayed step{'s' if n != 1 else ''}" if n else ""
    measured = finite(f.get("measured_ms"))
    window = finite((view.get("window") or {}).get("duration_ms"))
    if covers_part_of(window, measured):
        return f", the first {fmt_ms(measured)} of the {fmt_ms(window)} window"
    return ""


def capture_hints(view: dict) -> list[str]:
    """What to capture for what the replay's model lacked (``replay.capture_hints``)."""
    r = replay_of(view)
    return [str(h) for h in (r.get("capture_hints") or [])] if r is not None else []


def waits_on_text(view: dict, top: int = 4) -> str:
    """"host CPU 62% · GPU compute 30% · …" or ""."""
    rows = waits_on(view)[:top]
    return " · ".join(f"{x['label']} {fmt_pct(x['share'])}"
                      + (f" ({x['note']})" if x["note"] else "") for x in rows)


__all__ = ["KIND_LABELS", "replay_of", "replay_page", "waits_on", "what_if_rows", "fidelity_text",
           "waits_on_text", "capture_hints", "verdict_what_if", "pace_note",
           "projection"]


def _per(view: dict) -> str:
    """What the replay's figures are of: ``window`` for a replay without steps (basis
    ``window``: its what-ifs price the replayed window), else ``step``."""
    rp = replay_of(view)
    return "window" if ((rp or {}).get("fidelity") or {}).get("basis") == "window" else "step"


def replay_page(view: dict) -> dict:
    """What ``templates/partials/_replay.html`` draws: the stacked bar of what the step waits on
    (``segments``: label, width %, ms, share; colour by kind) and the what-if table."""
    from nsys_diag.report.tables import cell, table

    segments = [{"label": x["label"], "kind": x["kind"], "ms": fmt_ms(x["ms"]),
                 "share": fmt_pct(x["share"]), "width": round(100 * x["share"], 2),
                 "note": x["note"]}
                for x in waits_on(view)]
    rows = [[cell(w["change"], w["id"], cls="label"), cell(w["before"], None),
             cell(w["after"], None), cell(w["saves"], w["_saves"]), cell(w["range"] or None),
             cell(w["share"], w["_saves"])] for w in what_if_rows(view)]
    per = _per(view)
    cols = [("Fix", False), (f"{per.capitalize()} now", True), (f"{per.capitalize()} after", True),
            ("Saves", True), ("Range", True), (f"Of the {per}", True)]
    return {"segments": segments, "fidelity": fidelity_text(view), "hints": capture_hints(view),
            "per": per, "pace_note": pace_note(view),
            "what_if_table": table("tbl-what-if", cols, rows, fold=(4,)) if rows else None}
