"""Chunk edges and chunk rows: where a process's timeline may be cut, and what a chunk sees.

Cut rule (why chunk results merge exactly)
    A chunk edge ``c`` is a time at which **every device of the process is computing** (``c``
    lies inside, or at the start of, a kernel-busy interval of each device). Then no idle gap
    spans an edge — each gap, with all the evidence inside it, lies wholly in one chunk — and
    every busy interval that crosses an edge is clipped at it on both sides, so busy sums add up
    exactly. ``safe_cut`` finds the latest such time at or before a target; when a process's
    devices are never busy together before the target it falls back to the target itself and
    says so (``exact=False``: a gap on some device may then be split in two).

What a chunk ``[lo, hi)`` sees (``chunk_frames``; the SQL window read,
``loaders/read_window.py``, keeps the same rows)
    * GPU operations (kernels, memcpy, memset, sync) overlapping ``[lo, hi]`` — the end is
      inclusive so the kernel that starts exactly at ``hi`` (the one that ends the chunk's last
      gap) is seen, clipped to nothing;
    * CUDA API calls overlapping it, plus the launches of those GPU operations (correlation id at
      least the smallest one among them, started before ``hi``), which may have run earlier;
    * NVTX ranges are the process's whole list (steps and phases are global values);
    * OS-runtime calls overlapping it; CPU and GPU-metric samples inside ``[lo, hi)``.
    A row is **owned** by the chunk that holds its start (``owned``): counts and duration sums use
    owned rows only, so a kernel running across an edge is counted once.

The first chunk starts at ``FIRST_LO`` and the last ends at ``LAST_HI`` (they own everything
before/after the other chunks). Times in integer ns of the session timeline.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.analyses.timeline.arrays import take_rows

FIRST_LO = int(np.iinfo(np.int64).min)
"""``lo`` of the first chunk: it owns every row that starts before the second chunk."""
LAST_HI = int(np.iinfo(np.int64).max)
"""``hi`` of the last chunk."""

GPU_OP_FRAMES = ("kernels", "memcpy", "memset", "sync")
"""Frames of GPU operations (rows carry the correlation id of their launching call)."""
INTERVAL_FRAMES = ("osrt",)
"""Host frames of calls with a start and an end, kept when they overlap the chunk."""
SAMPLE_FRAMES = {"cpu_samples": "ts_ns", "gpu_metrics": "ts_ns"}
"""Frames of instants (column holding the time), kept when inside ``[lo, hi)``."""


@dataclass(frozen=True)
class Cut:
    """A chunk edge: ``at_ns``, and whether it keeps every gap whole (see the module docstring)."""

    at_ns: int
    exact: bool


def safe_cut(kernels: pd.DataFrame, devices: tuple[int, ...], lo_ns: int, target_ns: int
             ) -> Cut | None:
    """The latest time in ``(lo_ns, target_ns]`` at which every device in ``devices`` is
    computing (``kernels``: the process's kernels around that span); None when none of the
    devices has a kernel there. Falls back to ``target_ns`` (``exact=False``) when they are
    never busy together."""
    if not len(kernels) or not devices:
        return None
    s = kernels["start_ns"].to_numpy(np.int64)
    e = kernels["end_ns"].to_numpy(np.int64)
    dev = kernels["device_id"].to_numpy(np.int64)
    near = (s <= target_ns) & (e > lo_ns)
    together: tuple[np.ndarray, np.ndarray] | None = None
    for d in devices:  # a handful of devices
        k = near & (dev == d)
        ds, de = iv.merge_intervals(s[k], e[k])
        together = (ds, de) if together is None else iv.intersect_merged(*together, ds, de)
    assert together is not None
    ts, te = together
    # the latest point of [start, end) ∩ (lo, target]
    ok = (ts <= target_ns) & (te - 1 > lo_ns)
    if ok.any():
        last = int(np.flatnonzero(ok)[-1])
        at = min(int(target_ns), int(te[last]) - 1)
        return Cut(max(at, int(ts[last]), lo_ns + 1), True)
    has_any = bool(near.any())
    return Cut(int(target_ns), False) if has_any else None


def owned(frame: pd.DataFrame, lo_ns: int, hi_ns: int, column: str = "start_ns") -> np.ndarray:
    """Mask of the rows whose ``column`` time lies in ``[lo_ns, hi_ns)`` (the chunk owns them)."""
    t = frame[column].to_numpy(np.int64)
    return (t >= lo_ns) & (t < hi_ns)


def _overlap_mask(frame: pd.DataFrame, lo_ns: int, hi_ns: int, *, inclusive_end: bool) -> np.ndarray:
    s = frame["start_ns"].to_numpy(np.int64)
    e = frame["end_ns"].to_numpy(np.int64)
    before = (s <= hi_ns) if inclusive_end else (s < hi_ns)
    return (e > lo_ns) & before


def _api_mask(api: pd.DataFrame, lo_ns: int, hi_ns: int, min_correlation: int | None
              ) -> np.ndarray:
    """API rows the window read keeps: overlapping, or launches of the chunk's GPU work."""
    keep = _overlap_mask(api, lo_ns, hi_ns, inclusive_end=True)
    if min_correlation is not None:
        s = api["start_ns"].to_numpy(np.int64)
        keep |= (api["correlation_id"].to_numpy(np.int64) >= min_correlation) & (s <= hi_ns)
    return keep


def chunk_frames(frames: dict[str, pd.DataFrame], lo_ns: int, hi_ns: int
                 ) -> dict[str, pd.DataFrame]:
    """The rows of ``frames`` (one process's, keyed as ``analyses.suite.PROCESS_FRAMES`` plus the
    optional host and metric frames) that the chunk ``[lo_ns, hi_ns)`` sees (module docstring).
    Frames this function does not know (e.g. ``nvtx``) are passed through whole."""
    out = dict(frames)
    lows = []
    for name in GPU_OP_FRAMES:
        f = frames.get(name)
        if f is None:
            continue
        keep = _overlap_mask(f, lo_ns, hi_ns, inclusive_end=True)
        out[name] = take_rows(f, keep)
        corr = out[name]["correlation_id"].to_numpy(np.int64) if "correlation_id" in f else None
        if corr is not None and corr.size:
            valid = corr[corr >= 0]
            if valid.size:
                lows.append(int(valid.min()))
    api = frames.get("api")
    if api is not None:
        out["api"] = take_rows(api, _api_mask(api, lo_ns, hi_ns, min(lows) if lows else None))
    for name in INTERVAL_FRAMES:
        f = frames.get(name)
        if f is not None:
            out[name] = take_rows(f, _overlap_mask(f, lo_ns, hi_ns, inclusive_end=False))
    for name, col in SAMPLE_FRAMES.items():
        f = frames.get(name)
        if f is not None and col in f:
            out[name] = take_rows(f, owned(f, lo_ns, hi_ns, col))
    return out


def chunk_spans(cuts: list[int]) -> list[tuple[int, int]]:
    """``[(lo, hi), …]`` of the chunks between sorted edges ``cuts`` (the first from
    ``FIRST_LO``, the last to ``LAST_HI``)."""
    edges = [FIRST_LO, *sorted(int(c) for c in cuts), LAST_HI]
    return list(zip(edges[:-1], edges[1:]))
