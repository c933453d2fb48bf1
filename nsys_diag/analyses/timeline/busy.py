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

from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.analyses.timeline.arrays import all_equal, unique_ints
from nsys_diag.analyses.base import is_available
from nsys_diag.analyses.engine.declaration import Declaration, declare


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
    """Merged (disjoint, sorted) busy intervals of one device, clipped to the window (ns).

    ``busy_starts``/``busy_ends`` (the union of compute and copy) are built on first use (perf,
    bench: only their total is needed in a normal run, and it comes from the overlap). The arrays
    are shared (``busy_*`` may be the ``compute_*`` arrays themselves) and must not be modified.
    """

    device_id: int
    compute_starts: np.ndarray
    compute_ends: np.ndarray
    copy_starts: np.ndarray
    copy_ends: np.ndarray

    def _cached(self, key: str, make):
        cache = self.__dict__.setdefault("_cache", {})  # frozen: no attribute assignment
        if key not in cache:
            cache[key] = make()
        return cache[key]

    @property
    def busy_starts(self) -> np.ndarray:
        return self._busy()[0]

    @property
    def busy_ends(self) -> np.ndarray:
        return self._busy()[1]

    def _busy(self) -> tuple[np.ndarray, np.ndarray]:
        return self._cached("busy", lambda: iv.union_merged(
            self.compute_starts, self.compute_ends, self.copy_starts, self.copy_ends))

    @property
    def compute_ns(self) -> int:
        return int((self.compute_ends - self.compute_starts).sum())

    @property
    def copy_ns(self) -> int:
        return int((self.copy_ends - self.copy_starts).sum())

    @property
    def copy_compute_overlap_ns(self) -> int:
        """ns during which a copy and a kernel both ran (|copy ∩ compute|)."""
        def overlap() -> int:
            s, e = iv.intersect_merged(self.copy_starts, self.copy_ends,
                                       self.compute_starts, self.compute_ends)
            return int((e - s).sum())
        return self._cached("overlap", overlap)

    @property
    def copy_only_ns(self) -> int:
        """ns during which a copy ran and no kernel did (|copy \\ compute|)."""
        return self.copy_ns - self.copy_compute_overlap_ns

    @property
    def busy_ns(self) -> int:
        """|compute ∪ copy| = |compute| + |copy| − |compute ∩ copy| (exact, no union built)."""
        return self.compute_ns + self.copy_ns - self.copy_compute_overlap_ns

    def prefix(self, kind: str) -> np.ndarray:
        """``intervals.covered_prefix`` of the ``kind`` ("compute" | "copy" | "busy") intervals,
        computed once (perf, bench: phases and the timeline query the same 2M intervals)."""
        return self._cached(f"prefix:{kind}", lambda: iv.covered_prefix(
            getattr(self, f"{kind}_starts"), getattr(self, f"{kind}_ends")))

    def covered_per_window(self, kind: str, starts, ends) -> np.ndarray:
        """ns of ``kind`` busy time inside each window ``[starts[i], ends[i])``."""
        return iv.covered_length_per_window_merged(
            getattr(self, f"{kind}_starts"), getattr(self, f"{kind}_ends"), starts, ends,
            prefix=self.prefix(kind))


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
    return None if lo is None or hi is None else (lo, hi)


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
    if is_available(steps) and steps.analysed_count:
        return Window(int(steps.analysed_starts_ns.min()), int(steps.analysed_ends_ns.max()), "steps")
    span = gpu_activity_span(kernels, memcpy, memset)
    if span is not None and span[1] > span[0]:
        return Window(span[0], span[1], "gpu_activity")
    return Window(int(capture[0]), int(capture[1]), "capture")


def device_ids(*frames: pd.DataFrame) -> set[int]:
    """Distinct ``device_id`` values over frames (perf, bench: a 2M-row column holding one
    device is checked in one pass instead of hashed)."""
    ids: set[int] = set()
    for f in frames:
        ids.update(unique_ints(f["device_id"].to_numpy()))
    return ids


def device_busy(kernels: pd.DataFrame, memcpy: pd.DataFrame, memset: pd.DataFrame,
                window: Window, devices: list[int] | None = None) -> dict[int, DeviceBusy]:
    """Busy intervals per device inside ``window``. ``devices`` adds devices with no activity."""
    ids = set(devices or []) | device_ids(kernels, memcpy, memset)
    lo, hi = window.start_ns, window.end_ns
    kdev = kernels["device_id"].to_numpy(np.int64)
    ks, ke = _se(kernels)
    one_device = all_equal(kdev)
    copies = pd.concat([memcpy[["start_ns", "end_ns", "device_id"]],
                        memset[["start_ns", "end_ns", "device_id"]]], ignore_index=True)
    cdev = copies["device_id"].to_numpy(np.int64)
    cs, ce = _se(copies)
    out: dict[int, DeviceBusy] = {}
    for d in sorted(ids):  # a handful of devices
        # perf (bench): union first, clip after (clip∘union = union∘clip): with one device the
        # kernel columns are merged as they are, with no masked copy of 2M rows
        if one_device:
            k_s, k_e = (ks, ke) if int(kdev[0]) == d else (ks[:0], ke[:0])
        else:
            k = kdev == d
            k_s, k_e = ks[k], ke[k]
        k_s, k_e = iv.clip_merged(*iv.merge_intervals(k_s, k_e), lo, hi, in_place=True)
        c = cdev == d
        c_s, c_e = iv.merge_intervals(*iv.clip(cs[c], ce[c], lo, hi))
        out[d] = DeviceBusy(d, k_s, k_e, c_s, c_e)
    return out


def mean_covered_per_window(busy: dict[int, DeviceBusy], starts, ends, kind: str = "compute") -> np.ndarray:
    """Covered ns inside each window, averaged over devices (0s when there is no device)."""
    starts = np.asarray(starts, np.int64)
    ends = np.asarray(ends, np.int64)
    if not busy:
        return np.zeros(starts.size, np.float64)
    tot = np.zeros(starts.size, np.float64)
    for b in busy.values():
        tot += b.covered_per_window(kind, starts, ends)
    return tot / len(busy)


# -------------------------------------------------------------------------------- declaration
BUSY = declare(Declaration("busy", rank=1, whole=lambda p: device_busy(
    p.frames["kernels"], p.frames["memcpy"], p.frames["memset"], p.window, list(p.devices))))
"""The devices' busy intervals in the window (an in-memory step; a span's come with it)."""
