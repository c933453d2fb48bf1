"""Chart geometry for the HTML report, computed from the view-model.

``chart_model(view)`` returns plain dicts of SVG coordinates (user units of each chart's viewBox,
rounded to 0.1) and pre-formatted labels; ``templates/macros/svg.html`` only draws them, so no
arithmetic happens in templates. Every chart is bounded in element count whatever the trace size:
steps are binned beyond ``MAX_STEP_POINTS``, timelines are already binned by the analysis (one path
per device row, never one element per kernel), tables and bars are top-N.

Colours are CSS classes (``ph-<canonical>``, ``cause-<cause>``, ``cat-<category>``,
``bound-<bound>``) so that ``assets/report.css`` owns the (colour-blind-safe) palette and dark mode.
"""
from __future__ import annotations

import math
from typing import cast

import numpy as np

from nsys_diag.report.formatting import fmt_ms, fmt_number, fmt_ns, fmt_rate, fmt_share
from nsys_diag.analyses.kernels.labels import distinct_labels
from nsys_diag.model.jsonsafe import finite
from nsys_diag.model.vocabulary import GAP_CAUSE_LABELS as CAUSES
from nsys_diag.report.contract import normalize
from nsys_diag.report.duration_chart import kernel_durations
from nsys_diag.report.lanes_chart import lane_chart
from nsys_diag.report.tables import slug

WIDTH = 720
HALF_WIDTH = 460  # charts shown two side by side
MAX_STEP_POINTS = 600  # above this many steps the step chart draws a binned min/max band
MAX_STEP_MARKERS = 60  # outlier / warm-up markers drawn individually
CLIP_FACTOR = 1.6  # warm-up steps longer than this × the longest other step are drawn clipped
TOP_KERNEL_BARS = 10
KERNEL_LABEL_CHARS = 30  # fits the 242-unit label column at 12 px (DejaVu Sans: ~7.6 units a character)
ROOFLINE_LABELS = 5
SEG_CHAR_W = 7.9
"""User units per character of a 12.5 px semi-bold segment label (digits and lower case, Chromium)."""


def _r(x: float) -> float:
    """Round a coordinate to 0.1 user units (compact, deterministic output)."""
    return round(float(x), 1)


def _truncate(text, max_chars: int) -> str:
    text = str(text if text is not None else "")
    if max_chars <= 1:
        return ""
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def _frame(width: int, height: int, ml: int, mr: int, mt: int, mb: int, *, x_label: str = "",
           y_label: str = "", x_label_centered: bool = False, xgrid: bool = False) -> dict:
    """Plot-area geometry shared by the axis charts (see ``axes`` in macros/svg.html)."""
    pw, ph = width - ml - mr, height - mt - mb
    return {"width": width, "height": height,
            "plot": {"x": ml, "y": mt, "w": pw, "h": ph, "x2": ml + pw, "y2": mt + ph},
            "ytick_x": ml - 6, "xtick_y": mt + ph + 16, "xgrid": xgrid,
            "x_label": x_label, "x_label_x": _r(ml + pw / 2) if x_label_centered else ml + pw,
            "x_label_y": height - 4, "x_label_anchor": "middle" if x_label_centered else "end",
            "y_label": y_label, "y_label_x": 14, "y_label_y": _r(mt + ph / 2)}


def _yticks(values_y: list[tuple[float, str]]) -> list[dict]:
    return [{"y": _r(y), "ty": _r(y + 4), "label": label} for y, label in values_y]


def nice_ticks(lo: float, hi: float, target: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] (1-2-5 steps), lo/hi included in the span."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else [0.0]
    raw = (hi - lo) / max(target, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step + 1e-9) * step
    last = math.ceil(hi / step - 1e-9) * step  # the last tick is ≥ hi: the axis covers the data
    ticks, k = [], 0
    while first + k * step <= last + step * 1e-9 and k < 50:
        ticks.append(round(first + k * step, 12))
        k += 1
    return ticks


# ---------------------------------------------------------------------------- phase stacked bar


def phase_bar(v: dict) -> dict | None:
    """One stacked bar: each phase's share of the mean step, in phase order."""
    shares = [(p, finite(p["share"])) for p in v["phases"]]
    rows: list[tuple[dict, float]] = [(p, s) for p, s in shares if s is not None and s > 0]
    if not rows:
        return None
    total = sum(s for _, s in rows)
    scale = 1.0 / total if total > 1.0 else 1.0
    height, bar_h = 46, 46
    x, segments, legend = 0.0, [], []
    for p, s in rows:
        w = s * scale * WIDTH
        canonical = slug(p["canonical"])
        name = str(p["name"] or canonical)
        share_txt = fmt_share(s)
        fits = int((w - 12) / SEG_CHAR_W)
        label = f"{_truncate(name, fits - len(share_txt) - 1)} {share_txt}" if fits >= len(share_txt) + 5 else (
            share_txt if fits >= len(share_txt) else "")
        segments.append({"x": _r(x), "w": _r(w), "cls": "ph-" + canonical, "label": label.strip(),
                         "tx": _r(x + 6), "title": f"{name}: {fmt_ms(p['mean_ms'])} per step ({share_txt})"})
        legend.append({"cls": "ph-" + canonical, "label": name, "value": f"{fmt_ms(p['mean_ms'])} · {share_txt}"})
        x += w
    return {"width": WIDTH, "height": height, "bar_h": bar_h, "text_y": bar_h // 2 + 5, "segments": segments,
            "legend": legend,
            "label": "Share of the mean step per phase"}


# ---------------------------------------------------------------------------------- step chart


def _groups(indices: list[int]) -> list[tuple[int, int]]:
    """Consecutive runs of integers: [0,1,2,5] → [(0,2),(5,5)]."""
    out: list[tuple[int, int]] = []
    for i in sorted(set(indices)):
        if out and i == out[-1][1] + 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out


def _binned_paths(idx: np.ndarray, dur: np.ndarray, i0: int, i1: int, xs, ys) -> tuple[str, str]:
    """(mean line, min–max band) SVG paths of the step durations ``dur`` (ms) binned by step
    index into ``MAX_STEP_POINTS`` buckets; ``xs``/``ys`` map index/ms to chart units."""
    edges = np.linspace(i0, i1 + 1, MAX_STEP_POINTS + 1)
    which = np.clip(np.searchsorted(edges, idx, side="right") - 1, 0, MAX_STEP_POINTS - 1)
    counts = np.bincount(which, minlength=MAX_STEP_POINTS)
    sums = np.bincount(which, weights=dur, minlength=MAX_STEP_POINTS)
    mins = np.full(MAX_STEP_POINTS, np.inf)
    maxs = np.full(MAX_STEP_POINTS, -np.inf)
    np.minimum.at(mins, which, dur)
    np.maximum.at(maxs, which, dur)
    keep = counts > 0
    centers = (edges[:-1] + edges[1:]) / 2 - 0.5
    cx = xs(centers[keep])
    mean = sums[keep] / counts[keep]
    top, bot = ys(maxs[keep]), ys(mins[keep])
    line = "M" + " L".join(f"{_r(a)},{_r(b)}" for a, b in zip(cx, ys(mean)))
    band = ("M" + " L".join(f"{_r(a)},{_r(b)}" for a, b in zip(cx, top)) + " L"
            + " L".join(f"{_r(a)},{_r(b)}" for a, b in zip(cx[::-1], bot[::-1])) + " Z")
    return line, band


def step_chart(v: dict) -> dict | None:
    """Step duration over the run: line (or min/max band when binned), outliers marked, warm-up
    shaded, incomplete steps hollow, median dashed."""
    steps = v["steps"]
    if not steps["available"]:
        return None
    pts = [(int(cast(float, finite(p["index"]))), finite(p["duration_ms"]), str(p["kind"] or "normal"))
           for p in steps["per_step"] if finite(p["index"]) is not None and finite(p["duration_ms"]) is not None]
    if not pts:
        return None
    pts.sort(key=lambda t: t[0])
    idx = np.array([p[0] for p in pts], dtype=np.int64)
    dur = np.array([p[1] for p in pts], dtype=np.float64)
    kinds = np.array([p[2] for p in pts], dtype=object)
    height, ml, mr, mt, mb = 230, 64, 16, 14, 34
    pw, ph = WIDTH - ml - mr, height - mt - mb
    i0, i1 = int(idx.min()), int(idx.max())
    span = i1 - i0 + 1
    # a long warm-up step would flatten the run: scale to the other steps and clip it, labelled
    rest = dur[kinds != "warmup"]
    ymax_raw = float(dur.max())
    clipped = rest.size > 0 and ymax_raw > CLIP_FACTOR * float(rest.max())
    if clipped:
        ymax_raw = float(rest.max())
    yticks = nice_ticks(0.0, ymax_raw * 1.08 if ymax_raw > 0 else 1.0)
    ymax = yticks[-1] if yticks[-1] > 0 else 1.0

    def xs(i):
        return ml + (np.asarray(i, dtype=np.float64) - i0 + 0.5) / span * pw

    def ys(d):
        return mt + ph - np.minimum(np.asarray(d, dtype=np.float64), ymax) / ymax * ph

    model: dict = {**_frame(WIDTH, height, ml, mr, mt, mb, x_label="step index"),
                   "binned": False, "line": "", "band": "", "markers": [], "shades": [],
                   "shade_label_y": mt + ph - 6}
    if len(pts) <= MAX_STEP_POINTS:
        x, y = xs(idx), ys(dur)
        model["line"] = "M" + " L".join(f"{_r(a)},{_r(b)}" for a, b in zip(x, y))
        show_all = len(pts) <= 150
    else:  # bin into MAX_STEP_POINTS buckets: min/max band + mean line
        model["binned"] = True
        model["line"], model["band"] = _binned_paths(idx, dur, i0, i1, xs, ys)
        show_all = False
    # markers: outliers, warm-up and incomplete always (capped); normal points when few
    special = np.nonzero(kinds != "normal")[0][:MAX_STEP_MARKERS]
    chosen = np.arange(len(pts)) if show_all else special
    for j in chosen.tolist():
        i, d, kind = pts[j]
        kind = kind if kind in ("warmup", "outlier", "incomplete") else "normal"
        over = d > ymax
        model["markers"].append({"x": _r(xs(i)), "y": _r(ys(d)), "cls": "pt-" + kind,
                                 "r": 4.5 if kind == "outlier" else 3 if kind != "normal" else 2.2,
                                 "title": f"step {i}: {fmt_ms(d)} ({kind})" + (" — off the chart" if over else ""),
                                 "label": f"↑ {fmt_ms(d)}" if over else "", "lx": _r(xs(i) + 6), "ly": _r(mt + 10)})
    half = pw / span / 2
    for a, b in _groups([int(i) for i in steps["warmup"] if finite(i) is not None])[:20]:
        x0, x1 = max(float(xs(a)) - half, ml), min(float(xs(b)) + half, ml + pw)
        if x1 > x0:
            model["shades"].append({"x": _r(x0), "w": _r(x1 - x0), "tx": _r(x0 + 3), "label": "warm-up"})
    med = finite(steps["median_ms"])
    model["median"] = None if med is None or med > ymax else {
        "y": _r(ys(med)), "lx": ml + pw - 4, "ly": _r(ys(med) - 5), "label": f"median {fmt_ms(med)}"}
    model["yticks"] = _yticks([(float(ys(t)), fmt_ms(t)) for t in yticks])
    xt = [t for t in nice_ticks(float(i0), float(i1), 8) if i0 <= t <= i1 and float(t).is_integer()]
    model["xticks"] = [{"x": _r(xs(t)), "label": str(int(t))} for t in xt] or [{"x": _r(xs(i0)), "label": str(i0)}]
    model["legend"] = [{"cls": "pt-normal", "label": "step"}, {"cls": "pt-outlier", "label": "outlier"},
                       {"cls": "pt-warmup", "label": "warm-up (excluded)"},
                       {"cls": "pt-incomplete", "label": "incomplete (excluded)"}]
    model["label"] = "Step time per step index" + (" (binned: min–max band and mean)" if model["binned"] else "")
    return model


# ---------------------------------------------------------------------------- horizontal bars


def _fit_label(text: str, max_chars: int) -> str:
    """Shorten ``text`` to ``max_chars``; a ``name · variant`` label keeps its variant (what tells
    same-named kernels apart) and shortens the name."""
    if len(text) <= max_chars or " · " not in text:
        return _truncate(text, max_chars)
    base, variant = text.split(" · ", 1)
    variant = _truncate(variant, max(max_chars - 8, 4))
    return f"{_truncate(base, max_chars - len(variant) - 3)} · {variant}"


def hbars(rows: list[tuple[str, float | None, str, str, str]], label_w: int = 190, value_w: int = 120,
          row_h: int = 26, width: int = WIDTH, max_chars: int = 30) -> dict | None:
    """Horizontal bar chart from (label, value, value_text, css class, tooltip) rows."""
    if not rows:
        return None
    vals = [x for _, x, *_ in rows if x is not None and x > 0]
    vmax = max(vals) if vals else 1.0
    bar_span = width - label_w - value_w
    out = []
    for k, (label, value, text, cls, title) in enumerate(rows):
        w = (value / vmax * bar_span) if value and value > 0 else 0.0
        y = k * row_h
        out.append({"y": _r(y + 4), "h": row_h - 8, "ty": _r(y + row_h / 2 + 4), "label": _truncate(label, max_chars),
                    "x": label_w, "w": _r(max(w, 1.0 if value else 0.0)), "vx": _r(label_w + w + 6),
                    "value": text, "cls": cls, "title": title})
    return {"width": width, "height": row_h * len(rows), "label_w": label_w - 8, "rows": out}


def cause_bars(v: dict) -> dict | None:
    """GPU idle time by cause, largest first (zero causes kept so their absence is visible)."""
    gaps = v["gaps"]
    if not gaps["available"]:
        return None
    total = finite(gaps["total_ms"]) or sum(finite(gaps["by_cause"].get(k)) or 0.0 for k, _ in CAUSES)
    rows: list[tuple[str, float | None, str, str, str]] = []
    keys = [k for k, _ in CAUSES] + sorted(k for k in gaps["by_cause"] if k not in dict(CAUSES))
    labels = dict(CAUSES)
    for key in keys:
        ms = finite(gaps["by_cause"].get(key))
        share = ms / total if ms is not None and total else None
        text = f"{fmt_ms(ms)} ({fmt_share(share)})" if ms is not None else "—"
        rows.append((str(labels.get(key, key)), ms, text, "cause-" + slug(key),
                     f"{labels.get(key, key)}: {text} of GPU idle time"))
    rows.sort(key=lambda r: -(r[1] or 0.0))
    return hbars(rows, label_w=150, value_w=110, width=HALF_WIDTH)


def kernel_bars(v: dict) -> dict | None:
    """Top kernels by share of kernel time, coloured by category."""
    ks = sorted(v["kernels"], key=lambda k: -(finite(k["share"]) or 0.0))[:TOP_KERNEL_BARS]
    labels = distinct_labels([k["name"] for k in v["kernels"]], [k["short_name"] for k in v["kernels"]])
    by_id = {id(k): lab for k, lab in zip(v["kernels"], labels)}
    rows = [(_fit_label(by_id[id(k)] or str(k["name"] or "?"), KERNEL_LABEL_CHARS), finite(k["share"]),
             f"{fmt_share(k['share'])} · {fmt_ns(k['total_ns'])}", "cat-" + slug(k["category"]),
             str(k["name"] or k["short_name"] or "?")) for k in ks if finite(k["share"])]
    return hbars(rows, label_w=250, value_w=130, row_h=24, max_chars=KERNEL_LABEL_CHARS)


# ---------------------------------------------------------------------------------- histogram


def _short_ns(ns) -> str:
    return fmt_ns(ns).replace(" ", "")


HIST_CHAR_W = 6.4
"""User units per character of an 11 px tick label (system sans-serif; measured in Chromium)."""


def _bar_count(count, bw: float) -> str:
    """The count printed above a bar: ``n=530`` when it fits the bar's slot, else ``530``."""
    if count is None:
        return ""
    text = f"n={fmt_number(count)}"
    return text if len(text) * HIST_CHAR_W <= bw - 4 else fmt_number(count)


def _edge_ticks(bins: list[dict], ml: float, bw: float) -> list[dict]:
    """X labels at bin edges (``1µs``, ``10µs``…) rather than one ``lo–hi`` range per bar, which
    cannot fit under a bar; every other edge is labelled when even the edges would collide."""
    edges = [b["lo_ns"] for b in bins] + ([bins[-1]["hi_ns"]] if bins[-1]["hi_ns"] is not None else [])
    labels = [_short_ns(e) for e in edges]
    widest = max((len(t) for t in labels), default=1) * HIST_CHAR_W
    every = max(1, math.ceil((widest + 6) / bw))
    return [{"x": _r(ml + k * bw), "label": t} for k, t in enumerate(labels) if k % every == 0]


def gap_histogram(v: dict) -> dict | None:
    """Idle time per gap-length bin (bar height = total idle ms; count printed above)."""
    bins = [b for b in v["gaps"]["histogram"] if finite(b["total_ms"]) is not None or finite(b["count"]) is not None]
    if not v["gaps"]["available"] or not bins:
        return None
    height, ml, mr, mt, mb = 210, 52, 6, 22, 40
    pw, ph = HALF_WIDTH - ml - mr, height - mt - mb
    vals = [finite(b["total_ms"]) or 0.0 for b in bins]
    yticks = nice_ticks(0.0, max(vals) if max(vals) > 0 else 1.0, 4)
    ymax = yticks[-1] if yticks[-1] > 0 else 1.0
    bw = pw / len(bins)
    bars = []
    for k, (b, val) in enumerate(zip(bins, vals)):
        h = val / ymax * ph
        x = ml + k * bw
        hi = "∞" if b["hi_ns"] is None else fmt_ns(b["hi_ns"])
        bars.append({"x": _r(x + bw * 0.12), "w": _r(bw * 0.76), "y": _r(mt + ph - h), "h": _r(h),
                     "cx": _r(x + bw / 2), "count": _bar_count(b["count"], bw),
                     "ty": _r(mt + ph - h - 5),
                     "title": f"gaps {fmt_ns(b['lo_ns'])} to {hi}: {fmt_number(b['count'])} gaps, "
                              f"{fmt_ms(b['total_ms'])} idle"})
    return {**_frame(HALF_WIDTH, height, ml, mr, mt, mb, x_label="gap length (bar: idle time; n: gaps)"),
            "bars": bars, "xticks": _edge_ticks(bins, ml, bw), "xtick_y": mt + ph + 19,  # clear of the "0" y tick
            "yticks": _yticks([(mt + ph - t / ymax * ph, fmt_ms(t)) for t in yticks]),
            "label": "GPU idle time by gap length"}


# ---------------------------------------------------------------------------------- timeline


def timeline_strips(v: dict) -> list[dict]:
    """One strip per timeline entry: CPU phases row + one binned busy-fraction row per GPU."""
    tl = v["timeline"]
    if not tl["available"]:
        return []
    out = []
    label_w, row_h, gap = 92, 26, 6
    tw = WIDTH - label_w - 44  # room on the right for the mean busy share
    for s in tl["strips"]:
        t0, t1 = finite(s["start_ns"]), finite(s["end_ns"])
        if t0 is None or t1 is None or t1 <= t0:
            continue
        dur = t1 - t0

        def tx(t, t0=t0, dur=dur):
            return label_w + (min(max(t, t0), t0 + dur) - t0) / dur * tw

        rows, y = [], 18
        rects = []
        for p in s["phases"]:
            a, b = finite(p["start_ns"]), finite(p["end_ns"])
            if a is None or b is None or b <= t0 or a >= t1:
                continue
            x0, x1 = tx(a), tx(b)
            w = x1 - x0
            name = str(p["name"] or p["canonical"] or "")
            rects.append({"x": _r(x0), "w": _r(max(w, 0.5)), "cls": "ph-" + slug(p["canonical"]),
                          "label": _truncate(name, int((w - 8) / 6.6)) if w > 36 else "", "tx": _r(x0 + 4),
                          "title": f"{name}: {fmt_ns(b - a)}"})
        rows.append({"kind": "phases", "label": "CPU phases", "y": y, "h": row_h, "ty": y + row_h // 2 + 4,
                     "rects": rects})
        y += row_h + gap
        for d in s["devices"]:
            busy = np.array([finite(b) if finite(b) is not None else 0.0 for b in d["busy"]], dtype=np.float64)
            busy = np.clip(busy, 0.0, 1.0)
            if busy.size == 0:
                continue
            n = busy.size
            xs = label_w + np.arange(n + 1) / n * tw
            base = y + row_h
            tops = base - busy * row_h
            parts = [f"M{_r(xs[0])},{_r(base)}"]
            for k in range(n):  # ≤ max_bins per row (capped upstream): bounded
                parts.append(f"L{_r(xs[k])},{_r(tops[k])} L{_r(xs[k + 1])},{_r(tops[k])}")
            parts.append(f"L{_r(xs[n])},{_r(base)} Z")
            rows.append({"kind": "busy", "label": f"GPU {d['device_id']} busy", "y": y, "h": row_h,
                         "ty": y + row_h // 2 + 4,
                         "path": " ".join(parts), "mean": fmt_share(float(busy.mean())),
                         "title": f"GPU {d['device_id']}: busy {fmt_share(float(busy.mean()))} of this step"})
            y += row_h + gap
        ticks = [{"x": _r(tx(t0 + t * 1e6)), "label": fmt_ms(t)} for t in nice_ticks(0.0, dur / 1e6, 6)
                 if t * 1e6 <= dur]
        label = str(s["label"] or "")
        title = {"representative": "Representative step", "worst": "Slowest step"}.get(label, label.capitalize())
        idx = s["step_index"]
        out.append({"title": f"{title}" + (f" (step {idx})" if idx is not None else ""),
                    "duration": fmt_ns(dur), "width": WIDTH, "height": y + 22, "tick_y1": y - 2, "tick_y2": y + 2,
                    "tick_label_y": y + 15, "value_x": label_w + tw + 6,
                    "label_w": label_w - 8, "track_x": label_w, "track_w": tw, "rows": rows, "ticks": ticks,
                    "bin": fmt_ns(tl["bin_ns"]) if tl["bin_ns"] is not None else None})
    return out


# ---------------------------------------------------------------------------------- roofline


def _roofs(rl: dict) -> tuple[list[dict], list[dict]]:
    """(compute roofs, memory roofs), each {name, value}, from the section's
    ``roofs: [{name, kind: "compute"|"memory", value}]`` (FLOP/s or bytes/s)."""
    compute: list[dict] = []
    memory: list[dict] = []
    for r in rl["roofs"]:
        kind, val = str(r["kind"] or ""), finite(r["value"])
        if val is None or val <= 0:
            continue
        (memory if kind.startswith("mem") else compute).append({"name": str(r.get("name") or kind), "value": val})
    compute.sort(key=lambda r: r["value"])
    memory.sort(key=lambda r: r["value"])
    return compute, memory


def _si_short(x: float) -> str:
    """Decade tick label: 1e12 → '1T', 1e14 → '100T', 0.1 → '0.1'."""
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= scale:
            return f"{fmt_number(x / scale)}{prefix}"
    return fmt_number(x)


def _place_labels(points: list[dict], right: float, top: float, bottom: float, char_w: float = 6.3,
                  line_h: float = 13.0, dots: list[dict] | None = None) -> None:
    """Greedy label placement for scatter points: right of the point, else left of it, at the
    first vertical offset where the label's box (``char_w`` per character, ``line_h`` tall) stays
    inside the plot and overlaps neither a label already placed nor any dot of ``dots`` (each
    {x, y, r}); when no position is free, the least crowded one of them."""
    placed: list[tuple[float, float, float, float]] = []
    obstacles = [(d["x"] - d["r"], d["x"] + d["r"], d["y"] - d["r"], d["y"] + d["r"]) for d in dots or []]

    def hits(box) -> int:
        x0, x1, y0, y1 = box
        return sum(1 for a, b, c, d in placed + obstacles if x0 < b and x1 > a and y0 < d and y1 > c)

    for p in points:
        w = len(p["label"]) * char_w
        gap = p["lx"] - p["x"]
        sides = [p["lx"], p["x"] - gap - w]
        if sides[0] + w > right:
            sides.reverse()
        best = None
        for dy in (0.0, line_h, -line_h, 2 * line_h, -2 * line_h, 3 * line_h, -3 * line_h):
            y = p["ly"] + dy
            if y - line_h + 3 < top or y > bottom - 2:
                continue
            for x0 in sides:
                if x0 < 0 or x0 + w > right:
                    continue
                n = hits((x0, x0 + w, y - line_h + 3, y + 3))
                if best is None or n < best[0]:
                    best = (n, x0, y)
                if n == 0:
                    break
            if best is not None and best[0] == 0:
                break
        _, x0, y = best if best is not None else (0, p["lx"], p["ly"])
        placed.append((x0, x0 + w, y - line_h + 3, y + 3))
        p["lx"], p["ly"] = _r(x0), _r(y)


def _roofline_points(pts: list, X, Y, y_top: float, y_bottom: float) -> list[dict]:
    """One dot per kernel ``(row, AI in FLOP/byte, FLOP/s, time share)``: radius by the square
    root of its time share, biggest first; the ``ROOFLINE_LABELS`` biggest are labelled."""
    smax = max((p[3] for p in pts), default=0.0)
    points = []
    for k, ai, perf, share in sorted(pts, key=lambda p: -p[3]):  # big first, small drawn on top
        r = 3.0 + (13.0 * math.sqrt(share / smax) if smax > 0 else 0.0)
        name = str(k["short_name"] or k["name"] or "?")
        points.append({"x": _r(X(ai)), "y": _r(Y(perf)), "r": _r(r), "lx": _r(X(ai) + r + 3), "ly": _r(Y(perf) + 4),
                       "cls": "bound-" + slug(k["bound"] or "unknown"),
                       "title": f"{name}: {fmt_number(ai)} FLOP/B, {fmt_rate(perf, 'FLOP')}, "
                                f"{fmt_share(share)} of time, {k['bound'] or 'bound unknown'}",
                       "label": _truncate(name, 28)})
    for p in points[ROOFLINE_LABELS:]:
        p["label"] = ""
    _place_labels([p for p in points if p["label"]], WIDTH - 2, y_top, y_bottom, dots=points)
    return points


def roofline_chart(v: dict) -> dict | None:
    """Log-log roofline: memory roofs (diagonals) up to the highest compute roof, compute roofs
    (horizontals) from their ridge with the first memory roof; kernels as points, area ∝ time share."""
    rl = v["roofline"]
    if not rl["available"]:
        return None
    compute, memory = _roofs(rl)
    pts = []
    for k in rl["kernels"]:
        ai, perf = finite(k["arithmetic_intensity"]), finite(k["achieved_flops_per_s"])
        if ai is None or perf is None or ai <= 0 or perf <= 0:
            continue
        pts.append((k, ai, perf, max(finite(k["time_share"]) or 0.0, 0.0)))
    if not pts and not compute:
        return None
    height, ml, mr, mt, mb = 380, 70, 20, 16, 44
    pw, ph = WIDTH - ml - mr, height - mt - mb
    # the memory level the points' intensity is computed against (DRAM unless the section says)
    level = str(rl.get("memory_level") or "DRAM").lower()
    main = next((m for m in memory if m["name"].lower() == level), memory[0] if memory else None)
    main_bw = main["value"] if main else None
    ridge = [c["value"] / main_bw for c in compute] if main_bw else []
    xs_all = [p[1] for p in pts] + ridge
    ys_all = [p[2] for p in pts] + [c["value"] for c in compute]
    x_lo = math.floor(math.log10(min(xs_all))) - 1 if xs_all else -1
    x_hi = math.ceil(math.log10(max(xs_all))) + 1 if xs_all else 3
    y_hi = math.ceil(math.log10(max(ys_all) * 1.5)) if ys_all else 12
    y_lo = min(math.floor(math.log10(min(ys_all))) - 1 if ys_all else y_hi - 4, y_hi - 3)
    x_lo, x_hi = max(x_lo, x_hi - 8), x_hi  # at most 8 decades wide
    y_lo = max(y_lo, y_hi - 8)

    def X(val):
        return ml + (math.log10(max(val, 10 ** x_lo)) - x_lo) / (x_hi - x_lo) * pw

    def Y(val):
        return mt + ph - (math.log10(max(val, 10 ** y_lo)) - y_lo) / (y_hi - y_lo) * ph

    lines = []
    top = compute[-1]["value"] if compute else 10 ** y_hi
    for m in memory:
        # y = bw * x from the left edge (or bottom edge) up to the top compute roof
        xa = max(10 ** x_lo, 10 ** y_lo / m["value"])
        xb = min(top / m["value"], 10 ** x_hi)
        if xb <= xa:
            continue
        x1, y1, x2, y2 = X(xa), Y(m["value"] * xa), X(xb), Y(m["value"] * xb)
        angle = math.degrees(math.atan2(y2 - y1, x2 - x1))
        # label along the diagonal, a little way from its lower-left end
        lx, ly = x1 + (x2 - x1) * 0.08, y1 + (y2 - y1) * 0.08 - 6
        lines.append({"x1": _r(x1), "y1": _r(y1), "x2": _r(x2), "y2": _r(y2), "cls": "roof-mem",
                      "label": f"{m['name']} {fmt_rate(m['value'])}", "lx": _r(lx), "ly": _r(ly),
                      "anchor": "start", "rotate": _r(angle)})
    for c in compute:
        xa = max(c["value"] / main_bw, 10 ** x_lo) if main_bw else 10 ** x_lo
        lines.append({"x1": _r(X(xa)), "y1": _r(Y(c["value"])), "x2": _r(ml + pw), "y2": _r(Y(c["value"])),
                      "cls": "roof-compute", "label": f"{c['name']} {fmt_rate(c['value'], 'FLOP')}",
                      "lx": _r(ml + pw - 4), "ly": _r(Y(c["value"]) - 5), "anchor": "end", "rotate": None})
    points = _roofline_points(pts, X, Y, mt, mt + ph)
    xticks = [{"x": _r(X(10 ** e)), "label": fmt_number(10 ** e)} for e in range(x_lo, x_hi + 1)]
    # no label at the bottom edge: it would sit on the first x tick's label in the corner
    yticks = _yticks([(Y(10 ** e), _si_short(10 ** e)) for e in range(y_lo + 1, y_hi + 1)])
    bounds = sorted({str(p["cls"]) for p in points})
    level_name = main["name"] if main else "DRAM"
    return {**_frame(WIDTH, height, ml, mr, mt, mb, x_label=f"Arithmetic intensity (FLOP per {level_name} byte)",
                     y_label="Achieved FLOP/s", x_label_centered=True, xgrid=True),
            "ytick_x": ml - 6, "y_label_x": 12,
            "lines": lines, "points": points, "xticks": xticks, "yticks": yticks,
            "legend": [{"cls": b, "label": b.removeprefix("bound-").replace("-", " ") + " bound"} for b in bounds],
            "not_plotted": len(rl["kernels"]) - len(pts),
            "label": "Roofline: kernels against the machine's compute and memory roofs"}


# ---------------------------------------------------------------------------------- the model


def chart_model(view: dict) -> dict:
    """Every chart of the report, as SVG-ready geometry (``None`` / ``[]`` when not drawable)."""
    v = normalize(view)
    return {
        "phases": phase_bar(v),
        "steps": step_chart(v),
        "causes": cause_bars(v),
        "histogram": gap_histogram(v),
        "timeline": timeline_strips(v),
        "lanes": lane_chart(v, nice_ticks),
        "kernels": kernel_bars(v),
        "kernel_durations": kernel_durations(v),
        "roofline": roofline_chart(v),
    }
