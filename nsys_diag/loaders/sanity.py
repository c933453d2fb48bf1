"""Row sanity for event frames: times that cannot be right are dropped, counted and reported.

Real exports never hold a kernel with ``end < start`` and never hold event times outside
``[0, ANALYSIS_DETAILS.duration]`` (NSYS_SQLITE.md §1.3; NVTX domain-create rows aside). A file that
does is damaged or crafted; analysing such rows would put wrong numbers in the report (negative
kernel time, a 146-year window), so each frame is filtered here and a ``invalid_rows`` load
warning says how many rows of which kind were dropped and why.

A row is dropped when
* a time is NULL in the export (read as :data:`NULL_TIME`), or ``end < start``;
* a time is beyond ±:data:`HARD_LIMIT_NS` (36 years: garbage that would overflow int64 sums);
* a GPU operation or API call lasts longer than :data:`MAX_OP_DURATION_NS` (one day);
* it lies outside the capture: ``[-m, D + m]`` with ``D`` the declared capture duration and
  ``m = max(D, 60 s)`` (generous: only far-away times go). When most event times do not fit in
  ``[-m, 1.01·D + 1 ms]`` (a corrupt ``ANALYSIS_DETAILS``), ``D`` is not trusted
  (``capture_span_mismatch`` warning) and, as when ``D`` is unknown, the bound is
  ±:data:`OUTLIER_SPAN_NS` around the median event time;
* a memcpy or memset moves a negative number of bytes or more than :data:`MAX_COPY_BYTES`
  (no device holds that much: such sizes would make byte sums and rates meaningless).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from nsys_diag.loaders.nsys_specs import NULL_TIME  # what a NULL start is read as
from nsys_diag.model.bundle import LoadWarning
from nsys_diag.model.vocabulary import HINT_REEXPORT

HARD_LIMIT_NS = 1 << 60
"""|time| beyond this (≈ 36 years) is never a session time."""

MAX_OP_DURATION_NS = 24 * 3600 * 10**9
"""A GPU operation or an API call longer than a day is corrupt data."""

MAX_COPY_BYTES = 1 << 42
"""A copy or memset of more than 4 TiB (beyond any GPU's memory) is corrupt data."""

MIN_CAPTURE_MARGIN_NS = 60 * 10**9
OUTLIER_SPAN_NS = 7 * 24 * 3600 * 10**9
"""Without a trusted capture duration: times farther than a week from the median event time."""

TRUST_SAMPLE = 100_000
"""Rows per frame looked at to decide whether to trust the declared duration (perf)."""

TRUST_SHARE = 0.5
"""The declared capture duration is trusted when at least this share of event times fit it."""

# frame name -> (human label, is a GPU operation / API call with a duration cap)
FRAMES = {"kernels": ("kernel", True), "memcpy": ("memcpy", True), "memset": ("memset", True),
          "sync": ("synchronization", True), "api": ("CUDA API call", True),
          "nvtx": ("NVTX range", False), "nvtx_marks": ("NVTX mark", False)}


def _times(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    if "ts_ns" in df.columns:
        t = df["ts_ns"].to_numpy(np.int64)
        return t, t
    return df["start_ns"].to_numpy(np.int64), df["end_ns"].to_numpy(np.int64)


def _basic_bad(df: pd.DataFrame, capped: bool) -> np.ndarray:
    bad = _basic_bad_times(*_times(df), capped)
    if "bytes" in df.columns:
        b = df["bytes"].to_numpy(np.int64)
        bad |= (b < 0) | (b > MAX_COPY_BYTES)
    return bad


def _bytes_valid(df: pd.DataFrame) -> bool:
    """No size in a ``bytes`` column (memcpy/memset) is negative or beyond ``MAX_COPY_BYTES``."""
    if "bytes" not in df.columns:
        return True
    b = df["bytes"].to_numpy(np.int64)
    return int(b.min()) >= 0 and int(b.max()) <= MAX_COPY_BYTES


def _basic_bad_times(s: np.ndarray, e: np.ndarray, capped: bool) -> np.ndarray:
    bad = (s == NULL_TIME) | (e < s) | (np.abs(s) > HARD_LIMIT_NS) | (np.abs(e) > HARD_LIMIT_NS)
    if capped and len(s):
        dur = np.clip(e, -HARD_LIMIT_NS, HARD_LIMIT_NS) - np.clip(s, -HARD_LIMIT_NS, HARD_LIMIT_NS)
        bad |= dur > MAX_OP_DURATION_NS
    return bad


def trusted_window(frames: dict[str, pd.DataFrame], declared_end: int | None
                   ) -> tuple[tuple[int, int] | None, bool]:
    """(lo, hi) bounds for event times, and whether the declared duration was distrusted."""
    starts = []
    for name, df in frames.items():
        if df is None or not len(df):
            continue
        step = max(1, len(df) // TRUST_SAMPLE)  # a strided sample decides as well as every row
        s, e = _times(df)
        if step > 1:  # perf (bench): slice the two time arrays, not every column of the frame
            s, e = s[::step], e[::step]
        ok = ~_basic_bad_times(s, e, FRAMES[name][1])
        starts.append(s[ok])
        starts.append(e[ok])
    times = np.concatenate(starts) if starts else np.zeros(0, np.int64)
    if declared_end is not None and 0 < declared_end <= HARD_LIMIT_NS:
        m = max(int(declared_end), MIN_CAPTURE_MARGIN_NS)
        lo, hi = -m, int(declared_end) + m
        fits = (times >= lo) & (times <= int(declared_end) + declared_end // 100 + 1_000_000)
        if not len(times) or float(fits.mean()) >= TRUST_SHARE:
            return (lo, hi), False
        distrusted = True
    else:
        distrusted = declared_end is not None
    if not len(times):
        return None, distrusted
    mid = int(np.median(times))
    return (mid - OUTLIER_SPAN_NS, mid + OUTLIER_SPAN_NS), distrusted


def _all_valid(name: str, df: pd.DataFrame, window: tuple[int, int] | None) -> bool:
    """True when no row of the frame can be invalid, decided from min/max reductions and one
    ``end >= start`` pass (perf, bench: no 2M-row masks or duration temporaries for clean
    exports). A duration is at most ``max(end) - min(start)``, so that bound checks the cap."""
    s, e = _times(df)
    s_min, s_max, e_min, e_max = int(s.min()), int(s.max()), int(e.min()), int(e.max())
    lo, hi = (-HARD_LIMIT_NS, HARD_LIMIT_NS) if window is None else (
        max(window[0], -HARD_LIMIT_NS), min(window[1], HARD_LIMIT_NS))
    if s_min < lo or e_min < -HARD_LIMIT_NS or s_max > HARD_LIMIT_NS or e_max > hi:
        return False  # NULL_TIME is below -HARD_LIMIT_NS, so NULL starts land here too
    if FRAMES[name][1] and e_max - s_min > MAX_OP_DURATION_NS:
        return False
    if not _bytes_valid(df):
        return False
    return s is e or bool((e >= s).all())


def invalid_mask(name: str, df: pd.DataFrame, window: tuple[int, int] | None) -> np.ndarray:
    """Rows of frame ``name`` to drop (see module docstring)."""
    bad = _basic_bad(df, FRAMES[name][1])
    if window is not None and len(df):
        s, e = _times(df)
        bad |= (s < window[0]) | (e > window[1])
    return bad


def drop_invalid_rows(frames: dict[str, pd.DataFrame], window: tuple[int, int] | None
                      ) -> tuple[dict[str, pd.DataFrame], LoadWarning | None]:
    """Filter every frame (see module docstring); one warning summarising what was dropped."""
    out: dict[str, pd.DataFrame] = {}
    dropped: list[str] = []
    total = 0
    sizes = False
    for name, df in frames.items():
        if df is None or not len(df):
            out[name] = df
            continue
        label = FRAMES[name][0]
        if _all_valid(name, df, window):
            out[name] = df
            continue
        bad = invalid_mask(name, df, window)
        sizes = sizes or not _bytes_valid(df)
        n = int(bad.sum())
        if n:
            df = df.loc[~bad].reset_index(drop=True)
            dropped.append(f"{n:,} {label} row{'s' if n != 1 else ''}")
            total += n
        out[name] = df
    if not total:
        return out, None
    why = ("no start time, ending before they start, far outside the capture, or an impossible "
           "byte count" if sizes else "no start time, ending before they start, "
           "or far outside the capture")
    return out, LoadWarning(
        "invalid_rows", f"{', '.join(dropped)} dropped: {why} (a damaged or edited export)", total,
        f"{HINT_REEXPORT}; if this persists, the capture itself is damaged")


def distrust_warning(declared_end: int) -> LoadWarning:
    return LoadWarning(
        "capture_span_mismatch", f"the export's capture duration ({declared_end} ns in "
        "ANALYSIS_DETAILS) does not match its events; the span of the events is used instead", 0,
        HINT_REEXPORT)


def filter_nvtx(res, raw: pd.DataFrame, window: tuple[int, int] | None):
    """``NvtxResult`` without its invalid ranges and marks (``raw``: ranges with open ends set to
    their start); ``max_ts`` recomputed from what is kept."""
    import dataclasses

    bad = invalid_mask("nvtx", raw, window)
    mbad = invalid_mask("nvtx_marks", res.marks, window) if len(res.marks) else \
        np.zeros(0, bool)
    if not bad.any() and not mbad.any():
        return res
    ranges = res.ranges.loc[~bad].reset_index(drop=True)
    marks = res.marks.loc[~mbad].reset_index(drop=True) if len(mbad) else res.marks
    kept = [raw["start_ns"].to_numpy(np.int64)[~bad], raw["end_ns"].to_numpy(np.int64)[~bad]]
    if len(marks):
        kept.append(marks["ts_ns"].to_numpy(np.int64))
    times = np.concatenate(kept)
    return dataclasses.replace(res, ranges=ranges, open_mask=res.open_mask[~bad], marks=marks,
                               max_ts=int(times.max()) if len(times) else None)
