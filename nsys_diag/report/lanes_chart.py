"""The whole-run timeline (``id="timeline"``): one row per device/stream lane over the analysed
window, from the ``timeline_lanes`` section (``analyses/timeline/lanes.py``), with the analysed
steps' edges and the longest GPU idle gaps (``gaps.top``, coloured by their cause: what the GPU
waited on) marked.

Each lane's runs (``[first column, columns, class, occupancy quarter]``) become one SVG path per
class — a rectangle per run, its height the occupancy — so the drawn elements are bounded by lanes
× classes whatever the trace's size (a run per column at most: ≤ 1,200 rectangles a lane). The
step edges are one path, the gaps one rectangle each (``gaps.top`` is capped). A thin lane
"critical path waits" marks the replayed steps' critical-path segments that are waits
(``replay.critical_path_segments``, capture times, capped by the replay), coloured by kind as
the replay's stacked bar. Coordinates are viewBox user units; the template only draws them.
"""
from __future__ import annotations

from typing import Callable

from nsys_diag.model.jsonsafe import finite
from nsys_diag.model.vocabulary import CRITICAL_PATH_KIND_LABELS, GAP_CAUSE_LABELS
from nsys_diag.report.formatting import fmt_ms, fmt_ns, fmt_share
from nsys_diag.report.tables import slug

WIDTH, LABEL_W, VALUE_W, ROW_H, GAP, TOP = 720, 112, 44, 22, 5, 6
"""viewBox units: the chart's width, the least label column, the value column, a lane's height,
the gap between lanes, the top margin."""
LABEL_CHAR_W, LABEL_MAX_W = 6.9, 180
"""viewBox units per character of a lane label (12 px text, digits and capitals included), and
the widest label column: the column grows with the longest lane label ("GPU 0 · stream 13"), so
no label leaves the chart."""
PATH_H = 8
"""Height of the thin "critical path waits" lane."""
LEVELS = 4
"""Occupancy quarters of a run (as the analysis quantises them)."""
CLASS_LABELS = {"gemm": "GEMM", "conv": "convolution", "attention": "attention",
                "elementwise": "element-wise", "reduction": "reduction",
                "communication": "communication (NCCL)", "memory": "memory kernels",
                "other": "other kernels", "copy": "copies (memcpy/memset)"}


def _r(x: float) -> float:
    return round(float(x), 1)


def _lane_label(lane: dict) -> tuple[str, str]:
    """(the lane's short label, its words for the tooltip)."""
    dev, stream = lane.get("device_id"), lane.get("stream_id")
    if stream is None:
        n = lane.get("streams") or 0
        return f"GPU {dev} · others ({n})", f"GPU {dev} · {n} other streams, summed"
    if stream >= 0:
        return f"GPU {dev} · stream {stream}", f"GPU {dev} · stream {stream}"
    return f"GPU {dev} · kernels", f"GPU {dev} · kernels (the input records no stream ids)"


def _label_w(labels: list[str]) -> float:
    """The label column's width: the longest label's, between ``LABEL_W`` and ``LABEL_MAX_W``."""
    return min(max(LABEL_W, 8 + LABEL_CHAR_W * max(map(len, labels), default=0)), LABEL_MAX_W)


def _lane_paths(lane: dict, classes: list[str], n_cols: int, x0: float, tw: float, y: float
                ) -> list[dict]:
    """One path per class of the lane: a rectangle per run, bottom-aligned, height ∝ occupancy."""
    d: dict[int, list[str]] = {}
    for run in lane.get("runs") or []:
        first, cols, cls, level = (int(finite(v) or 0) for v in run[:4])
        if cols <= 0 or not 0 <= cls < len(classes):
            continue
        h = ROW_H * min(max(level, 1), LEVELS) / LEVELS
        w = max(cols / n_cols * tw, 0.3)
        d.setdefault(cls, []).append(f"M{_r(x0 + first / n_cols * tw)},{_r(y + ROW_H - h)}h{_r(w)}v{_r(h)}h{_r(-w)}z")
    return [{"cls": "cat-" + slug(classes[c]), "d": "".join(parts),
             "title": f"{CLASS_LABELS.get(classes[c], classes[c])}: "
                      f"{fmt_ms(finite((lane.get('class_ms') or {}).get(classes[c])) or 0.0)}"}
            for c, parts in sorted(d.items())]


def _gap_rects(v: dict, t0: int, dur: int, x0: float, tw: float, y: float) -> list[dict]:
    """The longest idle gaps (``gaps.top``) as rectangles coloured by cause."""
    gaps = v.get("gaps") or {}
    labels = dict(GAP_CAUSE_LABELS)
    out = []
    for g in (gaps.get("top") or []) if gaps.get("available") else []:
        s, ms = finite(g.get("start_ns")), finite(g.get("duration_ms"))
        if s is None or ms is None:
            continue
        a, b = max(s, t0), min(s + ms * 1e6, t0 + dur)
        if b <= a:
            continue
        cause = str(g.get("cause") or "other")
        out.append({"x": _r(x0 + (a - t0) / dur * tw), "y": y, "h": ROW_H,
                    "w": _r(max((b - a) / dur * tw, 1.5)), "cls": "cause-" + slug(cause), "cause": cause,
                    "title": f"GPU {g.get('device_id')} idle {fmt_ms(ms)}: {labels.get(cause, cause)}"})
    return out


def _path_rects(v: dict, t0: int, dur: int, x0: float, tw: float, y: float) -> list[dict]:
    """The replay's critical-path waits inside the window as thin rectangles coloured by kind."""
    rp = v.get("replay") or {}
    out = []
    for seg in (rp.get("critical_path_segments") or []) if rp.get("available") else []:
        s, e = finite(seg.get("start_ns")), finite(seg.get("end_ns"))
        if s is None or e is None:
            continue
        a, b = max(s, t0), min(e, t0 + dur)
        if b <= a:
            continue
        kind = str(seg.get("kind") or "")
        name = str(seg.get("name") or "")
        label = CRITICAL_PATH_KIND_LABELS.get(kind, kind) + (f" ({name})" if name else "")
        out.append({"x": _r(x0 + (a - t0) / dur * tw), "y": y, "h": PATH_H,
                    "w": _r(max((b - a) / dur * tw, 0.6)), "cls": "cp-" + slug(kind),
                    "kind": kind, "title": f"waits on {label}: {fmt_ns(int(b - a))}"})
    return out


def lane_chart(v: dict, ticks: Callable[[float, float, int], list[float]]) -> dict | None:
    """The whole-run timeline's geometry, or None when the section is not drawable. ``ticks``:
    the charts' 1-2-5 tick picker."""
    sec = v.get("timeline_lanes") or {}
    t0, t1 = finite(sec.get("start_ns")), finite(sec.get("end_ns"))
    n_cols = int(finite(sec.get("columns")) or 0)
    if not sec.get("available") or t0 is None or t1 is None or t1 <= t0 or n_cols <= 0:
        return None
    t0, dur = int(t0), int(t1 - t0)
    classes = [str(c) for c in sec.get("classes") or []]
    lanes = sec.get("lanes") or []
    labels = [_lane_label(lane) for lane in lanes]
    x0 = _r(_label_w([short for short, _ in labels]))
    tw = WIDTH - x0 - VALUE_W
    rows: list[dict] = []
    y, used = TOP, set[str]()
    for lane, (label, words) in zip(lanes, labels):
        paths = _lane_paths(lane, classes, n_cols, x0, tw, y)
        used.update(p["cls"] for p in paths)
        busy = (finite(lane.get("busy_ms")) or 0.0) * 1e6 / dur
        rows.append({"label": label, "y": y, "ty": y + ROW_H // 2 + 4, "paths": paths,
                     "value": fmt_share(busy), "title": f"{words}: busy {fmt_share(busy)} of the window"})
        y += ROW_H + GAP
    if not rows:
        return None
    gaps = _gap_rects(v, t0, dur, x0, tw, y)
    gap_row = {"label": "longest idle", "y": y, "ty": y + ROW_H // 2 + 4} if gaps else None
    y += (ROW_H + GAP) if gaps else 0
    waits = _path_rects(v, t0, dur, x0, tw, y)
    path_row = {"label": "critical path waits", "y": y, "ty": y + PATH_H // 2 + 4} \
        if waits else None
    y += (PATH_H + GAP) if waits else 0
    marks = [finite(m) for m in sec.get("step_marks") or []]
    step_d = "".join(f"M{_r(x0 + (m - t0) / dur * tw)},{TOP - 2}V{y - GAP + 2}" for m in marks
                     if m is not None and t0 <= m <= t0 + dur)
    xt = [{"x": _r(x0 + t * 1e9 / dur * tw), "label": fmt_ns(int(t * 1e9))}
          for t in ticks(0.0, dur / 1e9, 6) if 0 <= t * 1e9 <= dur]
    legend = [{"cls": "cat-" + slug(c), "label": CLASS_LABELS.get(c, c)} for c in classes
              if "cat-" + slug(c) in used]
    causes = dict(GAP_CAUSE_LABELS)
    legend += [{"cls": "cause-" + slug(c), "label": "idle: " + causes.get(c, c)}
               for c in dict.fromkeys(g["cause"] for g in gaps)]  # the causes drawn, in order
    legend += [{"cls": "cp-" + slug(k), "label": "waits on: " + CRITICAL_PATH_KIND_LABELS.get(k, k)}
               for k in dict.fromkeys(w["kind"] for w in waits)]
    return {"width": WIDTH, "height": y + 20, "label_x": x0 - 6, "track_x": x0, "track_w": tw,
            "value_x": x0 + tw + 4, "row_h": ROW_H, "rows": rows, "gaps": gaps, "gap_row": gap_row,
            "waits": waits, "path_row": path_row, "path_h": PATH_H,
            "steps_path": step_d, "steps": int(finite(sec.get("steps")) or 0), "tick_y": y + 12,
            "ticks": xt, "legend": legend, "duration": fmt_ns(dur),
            "bin": fmt_ns(int(finite(sec.get("bin_ns")) or 0))}
