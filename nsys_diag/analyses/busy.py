"""Per-device busy intervals and the analysed window (shared by utilization, gaps, phases, timeline).

* **compute** busy = union of kernel intervals; **copy** busy = union of memcpy + memset
  intervals; **busy** = union of both. Always interval unions, never sums of durations.
* The **analysed window** is, in order of precedence: ``--window START:END`` ("user"; an end past
  the capture is cut at the capture's end); the span of
  the analysed steps ("steps"); the span of GPU activity — first GPU op start to last GPU op end —
  ("gpu_activity"); the capture ("capture") only when there is neither steps nor GPU activity.
  It is never the capture from time 0.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys_diag.analyses import intervals as iv


@dataclass(frozen=True)
class Window:
    start_ns: int
    end_ns: int
    source: str  # "user" | "steps" | "gpu_activity" | "capture"

    @property
    def duration_ns(self) -> int:
        return max(int(self.end_ns - self.start_ns), 0)

    def to_json(self) -> dict:
        return {"start_ns": int(self.start_ns), "end_ns": int(self.end_ns),
                "duration_ms": self.duration_ns / 1e6, "source": self.source}


@dataclass(frozen=True)
class DeviceBusy:
    """Merged (disjoint, sorted) busy intervals of one device, clipped to the window (ns)."""

    device_id: int
    compute_starts: np.ndarray
    compute_ends: np.ndarray
    copy_starts: np.ndarray
    copy_ends: np.ndarray
    busy_starts: np.ndarray
    busy_ends: np.ndarray

    @property
    def compute_ns(self) -> int:
        return int((self.compute_ends - self.compute_starts).sum())

    @property
    def copy_ns(self) -> int:
        return int((self.copy_ends - self.copy_starts).sum())

    @property
    def busy_ns(self) -> int:
        return int((self.busy_ends - self.busy_starts).sum())


def _se(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    return df["start_ns"].to_numpy(np.int64), df["end_ns"].to_numpy(np.int64)


def gpu_activity_span(*frames: pd.DataFrame) -> tuple[int, int] | None:
    """(first start, last end) over GPU-op frames; None when all are empty."""
    lo, hi = None, None
    for f in frames:
        if len(f):
            s, e = _se(f)
            lo = int(s.min()) if lo is None else min(lo, int(s.min()))
            hi = int(e.max()) if hi is None else max(hi, int(e.max()))
    return None if lo is None else (lo, hi)


def choose_window(steps, kernels: pd.DataFrame, memcpy: pd.DataFrame, memset: pd.DataFrame, *,
                  user_window: tuple[int, int] | None = None,
                  capture: tuple[int, int] = (0, 0)) -> Window:
    """The analysed window (see module docstring). ``steps`` is a StepsResult or Unavailable."""
    if user_window is not None:
        lo, hi = int(user_window[0]), int(user_window[1])
        span = gpu_activity_span(kernels, memcpy, memset)
        last = max(int(capture[1]), span[1] if span else 0)
        if last > 0 and hi > last:  # an open end ("60s:") stops at the end of the capture
            hi = max(last, lo)
        return Window(lo, hi, "user")
    if getattr(steps, "available", False) and steps.analysed_count:
        return Window(int(steps.analysed_starts_ns.min()), int(steps.analysed_ends_ns.max()), "steps")
    span = gpu_activity_span(kernels, memcpy, memset)
    if span is not None and span[1] > span[0]:
        return Window(span[0], span[1], "gpu_activity")
    return Window(int(capture[0]), int(capture[1]), "capture")


def device_busy(kernels: pd.DataFrame, memcpy: pd.DataFrame, memset: pd.DataFrame,
                window: Window, devices: list[int] | None = None) -> dict[int, DeviceBusy]:
    """Busy intervals per device inside ``window``. ``devices`` adds devices with no activity."""
    ids = set(devices or [])
    for f in (kernels, memcpy, memset):
        ids.update(int(d) for d in pd.unique(f["device_id"]))
    lo, hi = window.start_ns, window.end_ns
    kdev = kernels["device_id"].to_numpy(np.int64)
    ks, ke = _se(kernels)
    copies = pd.concat([memcpy[["start_ns", "end_ns", "device_id"]],
                        memset[["start_ns", "end_ns", "device_id"]]], ignore_index=True)
    cdev = copies["device_id"].to_numpy(np.int64)
    cs, ce = _se(copies)
    out: dict[int, DeviceBusy] = {}
    in_win = (ke > lo) & (ks < hi)  # perf (bench): one copy of the kernels in the window,
    for d in sorted(ids):  # a handful of devices   # clipped in place (saves ~80 MB on 2M)
        k = in_win & (kdev == d)
        c = cdev == d
        k_s, k_e = ks[k], ke[k]
        np.clip(k_s, lo, hi, out=k_s)
        np.clip(k_e, lo, hi, out=k_e)
        k_s, k_e = iv.merge_intervals(k_s, k_e)
        c_s, c_e = iv.merge_intervals(*iv.clip(cs[c], ce[c], lo, hi))
        b_s, b_e = iv.merge_intervals(np.concatenate((k_s, c_s)), np.concatenate((k_e, c_e)))
        out[d] = DeviceBusy(d, k_s, k_e, c_s, c_e, b_s, b_e)
    return out


def mean_covered_per_window(busy: dict[int, DeviceBusy], starts, ends, kind: str = "compute") -> np.ndarray:
    """Covered ns inside each window, averaged over devices (0s when there is no device)."""
    starts = np.asarray(starts, np.int64)
    ends = np.asarray(ends, np.int64)
    if not busy:
        return np.zeros(starts.size, np.float64)
    tot = np.zeros(starts.size, np.float64)
    for b in busy.values():
        s, e = getattr(b, f"{kind}_starts"), getattr(b, f"{kind}_ends")
        tot += iv.covered_length_per_window(s, e, starts, ends)
    return tot / len(busy)
