"""Binned timeline strips for the report: the representative (median) step and the worst step.

Each strip has the CPU phase row (exclusive phase instances) and, per GPU, the fraction of each
bin covered by kernels (``busy``) and by copies (``copy``), 0..1. All strips share one bin width,
chosen so that the longest strip has at most ``MAX_BINS`` bins. Without steps, one strip covers the
analysed window (label ``window``), and ``window_bins`` holds fixed 10 ms bins of the window with
per-bin busy fraction, kernel time per category, Tensor Core and exposed-communication time and the
top kernel families (``analyses/timeline/window_bins.py``), which ``compare`` resamples when there are no
steps to resample.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline.busy import DeviceBusy, Window
from nsys_diag.analyses.base import is_available
from nsys_diag.analyses.timeline.window_bins import build_window_bins

MAX_BINS = 200


@dataclass(frozen=True)
class TimelineResult:
    bin_ns: int
    strips: tuple[dict, ...]
    window_bins: dict | None = None

    available = True

    def to_json(self) -> dict:
        out = {"available": True, "bin_ns": self.bin_ns, "max_bins": MAX_BINS,
               "strips": list(self.strips)}
        if self.window_bins is not None:
            out["window_bins"] = self.window_bins
        return out


Pick = tuple[str, "int | None", int, int]
"""(label, analysed step index or None, start ns, end ns) of one strip."""


def bin_grid(start: int, end: int, bin_ns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bin starts, bin ends, bin widths as float) of a strip ``[start, end)``: bins of
    ``bin_ns``, the last one cut at ``end``."""
    n = max(int(np.ceil((end - start) / bin_ns)), 1)
    bs = start + np.arange(n, dtype=np.int64) * bin_ns
    be = np.minimum(bs + bin_ns, end)
    return bs, be, np.maximum(be - bs, 1).astype(np.float64)


def covered_bins(busy: dict[int, DeviceBusy], bs: np.ndarray, be: np.ndarray
                 ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per device (sorted): (compute ns, copy ns) covered in each bin (int64)."""
    # perf: no re-merge of 2M intervals
    return {int(d): (b.covered_per_window("compute", bs, be), b.covered_per_window("copy", bs, be))
            for d, b in sorted(busy.items())}  # handful of devices


def devices_json(covered: dict[int, tuple[np.ndarray, np.ndarray]], width: np.ndarray
                 ) -> list[dict]:
    """The ``devices`` of a strip: covered ns per bin ÷ bin width, 0..1 rounded to 4 digits."""
    return [{"device_id": int(d), "busy": np.round(comp / width, 4).tolist(),
             "copy": np.round(copy / width, 4).tolist()} for d, (comp, copy) in covered.items()]


def _bins(busy: dict[int, DeviceBusy], start: int, end: int, bin_ns: int) -> list[dict]:
    bs, be, width = bin_grid(start, end, bin_ns)
    return devices_json(covered_bins(busy, bs, be), width)


def timeline_picks(steps, window: Window) -> list[Pick]:
    """The strips to draw: the representative (median) and worst analysed steps, or the window."""
    picks: list[Pick] = []
    if is_available(steps) and steps.analysed_count:
        idx = np.flatnonzero(steps.analysed_mask)
        dur = steps.durations_ns[idx]
        med = np.median(dur)
        rep = int(idx[int(np.argmin(np.abs(dur - med)))])
        worst = int(idx[int(np.argmax(dur))])
        picks.append(("representative", rep, int(steps.starts_ns[rep]), int(steps.ends_ns[rep])))
        if worst != rep:
            picks.append(("worst", worst, int(steps.starts_ns[worst]), int(steps.ends_ns[worst])))
    elif window.duration_ns > 0:
        picks.append(("window", None, window.start_ns, window.end_ns))
    return picks


def strip_bin_ns(picks: list[Pick]) -> int:
    """The one bin width of every strip: the longest strip in at most ``MAX_BINS`` bins."""
    return max(int(np.ceil(max(e - s for _, _, s, e in picks) / MAX_BINS)), 1)


def strip_json(pick: Pick, phases, devices: list[dict]) -> dict:
    """One strip: its span, the phase instances of its step and the per-device bins."""
    label, step_index, s, e = pick
    ph = []
    if is_available(phases) and step_index is not None:
        m = phases.inst_step == step_index
        for a, b_, r in zip(phases.inst_starts_ns[m].tolist(), phases.inst_ends_ns[m].tolist(),
                            phases.inst_row[m].tolist()):  # phase instances of one step
            row = phases.rows[r]
            ph.append({"name": row.name, "canonical": row.canonical, "start_ns": int(a),
                       "end_ns": int(b_)})
    return {"label": label, "step_index": step_index, "start_ns": int(s), "end_ns": int(e),
            "duration_ms": (e - s) / 1e6, "phases": ph, "devices": devices}


def build_timeline(steps, phases, busy: dict[int, DeviceBusy], window: Window,
                   kernels: pd.DataFrame | None = None,
                   name_table: pd.DataFrame | None = None) -> TimelineResult | None:
    """Strips for the representative and worst analysed steps (or the window, then with
    ``window_bins`` when ``kernels`` — the kernels of the window — and their name table are given)."""
    picks = timeline_picks(steps, window)
    if not picks:
        return None
    bin_ns = strip_bin_ns(picks)
    strips = [strip_json(p, phases, _bins(busy, p[2], p[3], bin_ns)) for p in picks]  # ≤ 2
    wbins = None
    if picks[0][0] == "window" and kernels is not None:
        wbins = build_window_bins(kernels, name_table if name_table is not None else
                                  pd.DataFrame(), busy, window)
    return TimelineResult(bin_ns, tuple(strips), wbins)
