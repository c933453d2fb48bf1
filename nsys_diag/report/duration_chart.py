"""The kernel-duration chart (``id="kernel-durations"``): how long one launch of each top kernel
takes, from the per-name statistics the analysis JSON already holds (``kernels[]``: ``min_ns``,
``p10_ns``, ``median_ns``, ``mean_ns``, ``p90_ns``, ``max_ns``).

One row per kernel (the ``TOP_KERNELS`` with the most total time, in the JSON's order): a line
from the shortest to the longest launch, a box over the middle 80% of launches (p10 to p90, when
the JSON has them), a dot at the median, a tick at the mean, on one
logarithmic axis (launch times span decades: 2 µs element-wise kernels beside 20 ms GEMMs). A mean
far right of the median shows a long tail. Coordinates are viewBox user units; the template only
draws them.
"""
from __future__ import annotations

import math

from nsys_diag.analyses.kernels.labels import distinct_labels
from nsys_diag.model.jsonsafe import finite
from nsys_diag.report.formatting import fmt_count, fmt_ns
from nsys_diag.report.tables import slug

TOP_KERNELS = 10
WIDTH, LABEL_W, VALUE_W, ROW_H, TOP, AXIS_H = 720, 230, 96, 24, 8, 36
LABEL_CHARS = 28
"""Characters of a kernel label that fit ``LABEL_W`` at the chart's 11 px row-label font."""


def _fit(text: str, n: int) -> str:
    """``text`` in ``n`` characters, cut in the middle (kernel names differ at both ends)."""
    if len(text) <= n:
        return text
    head = (n - 1) // 2 + (n - 1) % 2
    return text[:head] + "…" + text[len(text) - (n - 1 - head):]


def kernel_durations(v: dict) -> dict | None:
    """The chart model, or None when fewer than two kernels have a positive duration range."""
    ks = v.get("kernels") or []
    labels = distinct_labels([k.get("name") for k in ks], [k.get("short_name") for k in ks])
    rows = []
    for k, label in list(zip(ks, labels))[:TOP_KERNELS]:
        med, mean = finite(k.get("median_ns")), finite(k.get("mean_ns"))
        lo = finite(k.get("min_ns"))
        hi = finite(k.get("max_ns"))
        lo = med if lo is None else lo
        if med is None or hi is None or lo is None or min(lo, med, hi) <= 0:
            continue
        rows.append((str(label or k.get("short_name") or k.get("name") or "?"), k, lo, med, mean, hi))
    if len(rows) < 2:
        return None
    d0 = math.floor(math.log10(min(r[2] for r in rows)))
    d1 = max(math.ceil(math.log10(max(r[5] for r in rows))), d0 + 1)
    x0, x1 = LABEL_W, WIDTH - VALUE_W

    def x(ns: float) -> float:
        return round(x0 + (x1 - x0) * (math.log10(ns) - d0) / (d1 - d0), 1)

    out = []
    for i, (label, k, lo, med, mean, hi) in enumerate(rows):
        y = TOP + i * ROW_H + ROW_H / 2
        p10, p90 = finite(k.get("p10_ns")), finite(k.get("p90_ns"))
        # (p10, p90); None for rows written before the quantiles
        box = (p10, p90) if p10 is not None and p90 is not None and 0 < p10 <= p90 else None
        out.append({"label": _fit(label, LABEL_CHARS), "y": round(y, 1), "ty": round(y + 4, 1),
                    "x_min": x(lo), "x_max": x(hi), "x_median": x(med),
                    "x_p10": x(box[0]) if box else None, "x_p90": x(box[1]) if box else None,
                    "x_mean": None if mean is None or mean <= 0 else x(mean),
                    "value": fmt_ns(med), "cls": "cat-" + slug(k.get("category")),
                    "title": (f"{k.get('name') or label}: {fmt_count(k.get('count'))} launches; min "
                              f"{fmt_ns(lo)}, " + (f"p10 {fmt_ns(p10)}, " if box else "")
                              + f"median {fmt_ns(med)}, mean {fmt_ns(mean)}, "
                              + (f"p90 {fmt_ns(p90)}, " if box else "") + f"max {fmt_ns(hi)}")})
    step = 1 if d1 - d0 <= 6 else 2
    ticks = [{"x": x(10.0 ** d), "label": fmt_ns(10.0 ** d).replace(" ", "")} for d in range(d0, d1 + 1, step)]
    axis_y = TOP + len(out) * ROW_H + 4
    return {"width": WIDTH, "height": axis_y + AXIS_H, "rows": out, "x0": x0, "x1": x1,
            "value_x": WIDTH - 4, "axis_y": axis_y, "ticks": ticks,
            "label": f"Launch durations of the top {len(out)} kernels (log scale): min to max, "
                     "p10 to p90 box, median dot"}
