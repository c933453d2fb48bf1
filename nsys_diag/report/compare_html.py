"""Compare-page helpers: one unit per metric row, and the step-time distribution chart.

* ``row_unit(values)`` picks one duration unit for a row from its largest magnitude, so a row
  never reads "5.18 µs → 0.0279 ms": baseline, candidate, delta and interval share it.
* ``distribution_chart(doc)`` lays out a strip + box plot per side (baseline above, candidate
  below) of the per-step times in the compare JSON (``baseline.step_ms``/``candidate.step_ms``),
  or of the per-10-ms-bin GPU busy share (``baseline.window_busy``) when a side has no steps.
  Coordinates are computed here (vectorised numpy); templates/macros/svg.html only draws them.
  Axis tick labels are spaced by their rendered width so they never overlap.
"""
from __future__ import annotations

import numpy as np

from nsys_diag.model.jsonsafe import finite
from nsys_diag.report.formatting import MISSING, fmt_signed, fmt_significant

_UNITS = ((1000.0, "s"), (1.0, "ms"), (1e-3, "µs"), (1e-6, "ns"))
"""(scale in ms, label), largest first."""

CHART_W, ROW_H, PAD_L, PAD_R, PAD_T, AXIS_H = 720, 46, 92, 24, 10, 42
CHAR_PX = 7.0
"""Approximate width of one tick-label character at the chart's 12 px font (for spacing)."""
MAX_POINTS = 2000
"""Points drawn per side; more are evenly subsampled (the box uses all of them)."""


def row_unit(values) -> tuple[float, str]:
    """(scale in ms, unit label) for a row, from the largest finite |value| (ms)."""
    mags = [abs(float(x)) for x in values if finite(x) is not None]
    top = max(mags) if mags else 0.0
    for scale, label in _UNITS:
        if top >= scale:
            return scale, label
    return _UNITS[-1]


def fmt_in(value, unit: tuple[float, str], signed: bool = False) -> str:
    """``value`` (ms) in ``unit`` from ``row_unit``; ``signed`` gives a +/− sign."""
    x = finite(value)
    if x is None:
        return MISSING
    scale, label = unit
    txt = f"{fmt_significant(abs(x) / scale)} {label}"
    if signed:
        return ("+" if x >= 0 else "−") + txt
    return ("−" if x < 0 else "") + txt


def ms_row_texts(m: dict) -> dict:
    """Baseline, candidate, delta and CI texts of one ms metric row, all in one unit."""
    unit = row_unit([m.get("baseline"), m.get("candidate"), m.get("delta")])
    delta = MISSING if m.get("delta") is None else fmt_in(m["delta"], unit, signed=True)
    if m.get("delta") is not None and m.get("delta_pct") is not None:
        delta += f" ({fmt_signed(m['delta_pct'])}%)"
    return {"value_baseline": fmt_in(m.get("baseline"), unit),
            "value_candidate": fmt_in(m.get("candidate"), unit),
            "delta_text": delta, "unit_label": unit[1]}


def _ticks(lo: float, hi: float, width: float, fmt) -> list[dict]:
    """Round-number ticks in [lo, hi] whose labels (at CHAR_PX per char) do not overlap."""
    span = hi - lo if hi > lo else 1.0
    for n in (8, 6, 5, 4, 3, 2):
        step = 10 ** np.floor(np.log10(span / n))
        for mult in (1, 2, 2.5, 5, 10):
            if span / (step * mult) <= n:
                step *= mult
                break
        vals = np.arange(np.ceil(lo / step) * step, hi + step * 1e-9, step)
        xs = PAD_L + (vals - lo) / span * width
        labels = [fmt(float(v)) for v in vals]
        widths = np.array([len(s) * CHAR_PX for s in labels])
        if len(vals) < 2 or np.all(np.diff(xs) > (widths[:-1] + widths[1:]) / 2 + 8):
            return [{"x": round(float(x), 1), "label": s, "width": round(float(w), 1)}
                    for x, s, w in zip(xs, labels, widths)]
    return [{"x": PAD_L, "label": fmt(lo), "width": len(fmt(lo)) * CHAR_PX}]


def _side_samples(doc: dict, role: str, key: str) -> np.ndarray:
    side = doc.get(role) or {}
    vals = np.asarray([x for x in side.get(key) or [] if finite(x) is not None], dtype=float)
    return vals


def distribution_chart(doc: dict) -> dict | None:
    """The chart model (see module docstring), or None when a side has no samples."""
    key, title, is_ms = "step_ms", "step time", True
    b, c = _side_samples(doc, "baseline", key), _side_samples(doc, "candidate", key)
    if not (b.size and c.size):
        key, title, is_ms = "window_busy", "GPU busy per 10 ms bin", False
        b, c = _side_samples(doc, "baseline", key), _side_samples(doc, "candidate", key)
    if not (b.size and c.size):
        return None
    allv = np.concatenate([b, c])
    if is_ms:
        lo, hi = float(allv.min()), float(allv.max())
        pad = (hi - lo) * 0.05 or max(abs(hi) * 0.05, 1e-6)
        lo, hi = max(0.0, lo - pad), hi + pad
        unit = row_unit([hi])

        def fmt(v: float) -> str:
            return fmt_in(v, unit)
    else:
        lo, hi = 0.0, 1.0

        def fmt(v: float) -> str:
            return f"{v * 100:.0f}%"
    width = CHART_W - PAD_L - PAD_R
    rows = []
    for i, (role, vals) in enumerate((("baseline", b), ("candidate", c))):
        rows.append(_row(role, vals, i, lo, hi, width, fmt))
    height = PAD_T + 2 * ROW_H + AXIS_H
    return {"title": title, "width": CHART_W, "height": height, "rows": rows,
            "axis_y": PAD_T + 2 * ROW_H, "x0": PAD_L, "x1": CHART_W - PAD_R,
            "ticks": _ticks(lo, hi, width, fmt),
            "axis_label": f"{title}" + (f" ({unit[1]})" if is_ms else " (share)"),
            "label": (f"Distribution of {title}: baseline {b.size} samples, median {fmt(float(np.median(b)))};"
                      f" candidate {c.size} samples, median {fmt(float(np.median(c)))}")}


def _row(role: str, vals: np.ndarray, i: int, lo: float, hi: float, width: float, fmt) -> dict:
    span = hi - lo if hi > lo else 1.0

    def x(v):
        return np.round(PAD_L + (np.clip(v, lo, hi) - lo) / span * width, 1)

    cy = PAD_T + i * ROW_H + ROW_H / 2
    q1, med, q3 = np.quantile(vals, [0.25, 0.5, 0.75])
    shown = vals if vals.size <= MAX_POINTS else vals[np.linspace(0, vals.size - 1, MAX_POINTS).astype(int)]
    jitter = (np.arange(shown.size) % 7 - 3) * 2.0  # deterministic, no RNG
    return {"role": role, "label_y": round(cy + 4, 1), "cy": cy,
            "points": [{"x": float(px), "y": round(cy + j, 1)} for px, j in zip(x(shown), jitter)],
            "box": {"x": float(x(q1)), "w": max(1.0, float(x(q3) - x(q1))), "y": cy - 10, "h": 20,
                    "median_x": float(x(med)), "whisker_lo": float(x(vals.min())),
                    "whisker_hi": float(x(vals.max()))},
            "summary": f"{role}: n={vals.size}, median {fmt(float(med))}, IQR {fmt(float(q1))} – {fmt(float(q3))}"}
