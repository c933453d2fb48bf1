"""GPU utilization and compute-idle gaps with their causes, per device, inside the analysed window.

Utilization
    ``utilization`` = compute busy (union of kernels) / window. Copy busy (memcpy/memset union) is
    reported apart, and ``copy_only_ms`` is time the copy engines worked while no kernel ran — a GPU
    copying while its SMs sit idle is *not* utilized. Process-level numbers are means over the
    process's GPUs.

Gaps
    Every interval of the window with no kernel running on a device, longer than
    ``min_gap_ns`` (1 µs — not nsys's 500 ms). Leading/trailing idle time inside the window counts.
    Each idle nanosecond is given to exactly one cause, in this fixed priority order — what the
    program was doing (its NVTX phase) first, then what the GPU/driver shows:

    1. ``input`` — the step thread is inside a ``data`` phase (the loader is producing the batch,
       including its host→device copy);
    2. ``overhead`` — the step thread is inside an ``overhead`` phase (logging, checkpoint, eval);
    3. ``transfer`` — a memcpy/memset runs on that device (copy engine busy, SMs idle);
    4. ``sync`` — a CPU thread of the process is blocked in a synchronising CUDA call
       (``cuda{Stream,Device,Event,Ctx}Synchronize``, ``cu*Synchronize``, synchronous
       ``cudaMemcpy*``/``cudaMemset*``, or a CUPTI synchronization record);
    5. ``launch`` — a short gap (≤ ``launch_gap_max_ns``, 50 µs) while the CPU issues launches:
       a launch/enqueue call overlaps the gap, or the kernel that ends the gap was launched after
       the gap began (the GPU had nothing queued);
    6. ``other`` — none of the above (CPU busy outside CUDA and outside any data/overhead phase).

    A gap's own ``cause`` (top-gap table) is the cause that holds most of its time.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, cast

import numpy as np
import pandas as pd

from nsys_diag.analyses import intervals as iv
from nsys_diag.analyses._arrays import all_equal
from nsys_diag.analyses.base import is_available
from nsys_diag.analyses.busy import DeviceBusy, Window
from nsys_diag.model.contracts import MISSING
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import GAP_CAUSES


SYNC_API_RE = re.compile(
    r"^(?:cuda(?:Stream|Device|Event|Ctx|Thread)Synchronize|cu(?:Stream|Ctx|Event)Synchronize"
    r"|cudaMemcpy(?:2D|3D|ToSymbol|FromSymbol|Peer|ToArray|FromArray)?"
    r"|cudaMemset(?:2D|3D)?|cuMemcpy(?:HtoD|DtoH|DtoD|Peer|2D|3D)?(?:_v\d+)?"
    r"|cuMemsetD(?:8|16|32)(?:_v\d+)?)$")
"""Blocking CUDA calls (no ``Async`` suffix)."""
LAUNCH_API_RE = re.compile(r"^cu(?:da)?(?:\w*Launch\w*|Memcpy\w*Async\w*|Memset\w*Async\w*)$")
"""Calls that enqueue GPU work."""

HIST_EDGES_NS = (1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000,
                 10_000_000_000)
TOP_GAPS = 10


# -------------------------------------------------------------------------------- utilization
@dataclass(frozen=True)
class DeviceUtilization:
    device_id: int
    name: str
    window_ns: int
    compute_ns: int
    copy_ns: int
    busy_ns: int
    copy_only_ns: int

    @property
    def utilization(self) -> float:
        return self.compute_ns / self.window_ns if self.window_ns > 0 else 0.0

    def to_json(self) -> dict:
        return {"device_id": self.device_id, "name": self.name, "utilization": self.utilization,
                "compute_busy_ms": self.compute_ns / 1e6, "copy_busy_ms": self.copy_ns / 1e6,
                "busy_ms": self.busy_ns / 1e6, "idle_ms": (self.window_ns - self.compute_ns) / 1e6,
                "copy_only_ms": self.copy_only_ns / 1e6}


@dataclass(frozen=True)
class UtilizationResult:
    window_ns: int
    per_device: tuple[DeviceUtilization, ...]

    available = True

    def _mean(self, attr: str) -> float:
        if not self.per_device:
            return 0.0
        return float(np.mean([getattr(d, attr) for d in self.per_device]))

    @property
    def utilization(self) -> float:
        return self._mean("utilization")

    @property
    def copy_only_share(self) -> float:
        return self._mean("copy_only_ns") / self.window_ns if self.window_ns > 0 else 0.0

    def to_json(self) -> dict:
        return {
            "available": True,
            "utilization": self.utilization,
            "compute_busy_ms": self._mean("compute_ns") / 1e6,
            "copy_busy_ms": self._mean("copy_ns") / 1e6,
            "busy_ms": self._mean("busy_ns") / 1e6,
            "idle_ms": (self.window_ns - self._mean("compute_ns")) / 1e6,
            "window_ms": self.window_ns / 1e6,
            "copy_only_ms": self._mean("copy_only_ns") / 1e6,
            "device_count": len(self.per_device),
            "per_device": [d.to_json() for d in self.per_device],
        }


def analyze_utilization(busy: dict[int, DeviceBusy], window: Window,
                        gpus: pd.DataFrame | None = None) -> UtilizationResult:
    names = {}
    if gpus is not None and len(gpus):
        names = dict(zip(gpus["device_id"].astype(int), gpus["name"].astype(str)))
    rows = []
    for d, b in sorted(busy.items()):  # handful of devices
        # perf (bench): copy-only = copy − copy∩compute, no complement of 2M kernel intervals
        rows.append(DeviceUtilization(d, names.get(d, f"GPU {d}"), window.duration_ns,
                                      b.compute_ns, b.copy_ns, b.busy_ns, b.copy_only_ns))
    return UtilizationResult(window.duration_ns, tuple(rows))


# ------------------------------------------------------------------------------------- gaps
@dataclass(frozen=True)
class Gap:
    start_ns: int
    duration_ns: int
    device_id: int
    cause: str
    cpu_activity: str
    phase: str | None

    def to_json(self) -> dict:
        return {"start_ns": self.start_ns, "duration_ms": self.duration_ns / 1e6,
                "device_id": self.device_id, "cause": self.cause,
                "cpu_activity": self.cpu_activity, "phase": self.phase}


@dataclass(frozen=True)
class GapsResult:
    """Gap totals. ``by_cause_ns`` and ``total_ns`` are per GPU (mean over the process's GPUs);
    ``count`` is over all GPUs. ``histogram``: (lo_ns, hi_ns | None, count, total_ns)."""

    window_ns: int
    min_gap_ns: int
    count: int
    total_ns: float
    by_cause_ns: dict
    histogram: tuple[tuple[int, int | None, int, int], ...]
    top: tuple[Gap, ...]
    per_device: tuple[dict, ...]

    available = True

    def cause_share(self, cause: str) -> float:
        """Idle time of ``cause`` as a fraction of the window (per GPU)."""
        return float(self.by_cause_ns.get(cause, 0.0)) / self.window_ns if self.window_ns else 0.0

    def dominant_cause(self) -> str | None:
        if not self.by_cause_ns or self.total_ns <= 0:
            return None
        return max(GAP_CAUSES, key=lambda c: (self.by_cause_ns.get(c, 0.0), -GAP_CAUSES.index(c)))

    def to_json(self) -> dict:
        return {
            "available": True,
            "count": self.count,
            "total_ms": self.total_ns / 1e6,
            "min_gap_ns": self.min_gap_ns,
            "by_cause": {c: float(self.by_cause_ns.get(c, 0.0)) / 1e6 for c in GAP_CAUSES},
            "by_cause_share": {c: self.cause_share(c) for c in GAP_CAUSES},
            "cause_priority": list(GAP_CAUSES),
            "histogram": [{"lo_ns": lo, "hi_ns": hi, "count": n, "total_ms": t / 1e6}
                          for lo, hi, n, t in self.histogram],
            "top": [g.to_json() for g in self.top],
            "per_device": list(self.per_device),
        }


def _name_mask(names: pd.Series, rx: re.Pattern) -> np.ndarray:
    cat = names if isinstance(names.dtype, pd.CategoricalDtype) else names.astype("category")
    cats = cat.cat.categories
    # one entry per category plus a trailing False that code -1 (missing name) picks
    hit = np.append(np.fromiter((rx.match(str(c)) is not None for c in cats), bool, len(cats)),
                    False)
    return hit[cat.cat.codes.to_numpy()]


def _api_intervals(api: pd.DataFrame, rx: re.Pattern) -> tuple[np.ndarray, np.ndarray]:
    if not len(api):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    m = _name_mask(api["name"], rx)
    return (api["start_ns"].to_numpy(np.int64)[m], api["end_ns"].to_numpy(np.int64)[m])


def _launched_late(ks: np.ndarray, le: np.ndarray, gap_s: np.ndarray, gap_e: np.ndarray) -> np.ndarray:
    """Per gap: the kernel starting at the gap's end had its launch call end after the gap began
    (``ks``/``le``: one device's kernel start and launch-end columns, ns)."""
    if not ks.size or gap_s.size == 0:
        return np.zeros(gap_s.size, bool)
    if not (ks[1:] > ks[:-1]).all():  # perf (bench): rows already in strict start order need no sort
        order = np.lexsort((le, ks))
        ks, le = ks[order], le[order]
    i = np.searchsorted(ks, gap_e, side="left")
    ok = i < ks.size
    j = np.minimum(i, ks.size - 1)
    return ok & (ks[j] == gap_e) & (le[j] != MISSING) & (le[j] >= gap_s)


NO_API_CALL = "no CUDA API call (CPU work outside CUDA)"


def _cpu_describer(api: pd.DataFrame):
    """``describe(gs, ge) -> str``: what CPU threads of the process were doing in CUDA during a
    gap [gs, ge) — the longest overlapping call.

    perf (bench): with calls sorted by start, a call overlapping a gap started at most the longest
    call's duration before it, so a gap looks at that slice of the 2M calls, not at all of them.
    """
    if not len(api):
        return lambda gs, ge: NO_API_CALL
    s = api["start_ns"].to_numpy(np.int64)
    e = api["end_ns"].to_numpy(np.int64)
    longest = _longest_call_ns(s, e) if iv.is_sorted(s) else None

    def describe(gs: int, ge: int) -> str:
        a, b = 0, s.size
        if longest is not None:
            a = int(np.searchsorted(s, gs - longest, side="left"))  # earlier calls end by gs
            b = int(np.searchsorted(s, ge, side="left"))  # rows from b start at/after ge
        ov = np.minimum(e[a:b], ge) - np.maximum(s[a:b], gs)
        if ov.size == 0 or ov.max() <= 0:
            return NO_API_CALL
        hit = np.flatnonzero(ov > 0)
        j = hit[int(np.argmax(ov[hit]))]
        name = api["name"].iloc[a + int(j)]
        frac = ov[j] / max(ge - gs, 1)
        more = f" (+{hit.size - 1} other calls)" if hit.size > 1 else ""
        part = f"{frac:.0%}" if frac >= 0.01 else "<1%"
        return f"in {name} for {part} of the gap{more}"

    return describe


def _longest_call_ns(s: np.ndarray, e: np.ndarray, chunk: int = 1 << 18) -> int:
    """max(e - s) (0 when empty), in chunks through one small buffer (perf, bench: no 2M-row
    temporary)."""
    buf = np.empty(min(chunk, s.size), np.int64)
    longest = 0
    for i in range(0, s.size, chunk):  # a handful of chunks
        n = min(chunk, s.size - i)
        np.subtract(e[i:i + n], s[i:i + n], out=buf[:n])
        longest = max(longest, int(buf[:n].max()))
    return longest


def _cause_ns(gs: np.ndarray, ge: np.ndarray, evidence, launch: np.ndarray) -> np.ndarray:
    """Gap ns per cause (gaps × ``GAP_CAUSES``): each cause takes the gap time its evidence covers
    that no earlier cause took. ``evidence``: merged (start, end) sets for input, overhead,
    transfer and sync; ``launch``: per gap, whether the whole gap is launch evidence.

    A cause's time in a gap is |gap ∩ U_k| − |gap ∩ U_{k-1}|, U_k the union of the evidence of
    causes 1..k (perf, bench: per-gap coverage of a few small unions instead of intersecting
    and subtracting 190k gap pieces cause by cause — the same integers).
    """
    mat = np.zeros((gs.size, len(GAP_CAUSES)), np.int64)
    u_s, u_e = np.zeros(0, np.int64), np.zeros(0, np.int64)
    before = np.zeros(gs.size, np.int64)
    for ci, (ev_s, ev_e) in enumerate(evidence):  # input, overhead, transfer, sync
        u_s, u_e = iv.union_merged(u_s, u_e, ev_s, ev_e)
        covered = iv.covered_length_per_window_merged(u_s, u_e, gs, ge)
        mat[:, ci] = covered - before
        before = covered
    left = (ge - gs) - before  # launch takes the selected gaps whole; other, what is left
    mat[:, GAP_CAUSES.index("launch")] = np.where(launch, left, 0)
    mat[:, GAP_CAUSES.index("other")] = np.where(launch, 0, left)
    return mat


def _longest_first(dur: np.ndarray, k: int) -> np.ndarray:
    """``np.argsort(-dur, kind="stable")[:k]`` (ties: earlier first) without sorting every gap
    (perf, bench: a partition finds the k-th longest, only the gaps at least that long are sorted)."""
    if dur.size <= k:
        return np.argsort(-dur, kind="stable")
    kth = np.partition(dur, dur.size - k)[dur.size - k]
    cand = np.flatnonzero(dur >= kth)
    return cand[np.argsort(-dur[cand], kind="stable")][:k]


@dataclass(frozen=True)
class GapEvidence:
    """The part of a process's gap analysis that needs no phases (``gap_evidence``): per device
    the gaps (ns) and whether launch evidence covers each, and the merged sync intervals. The
    suite computes it while the phases are still being analysed (perf)."""

    sync_starts: np.ndarray
    sync_ends: np.ndarray
    devices: tuple  # (device_id, gap starts, gap ends, launch flags) per device, sorted by id


def gap_evidence(busy: dict[int, DeviceBusy], kernels: pd.DataFrame, api: pd.DataFrame,
                 sync: pd.DataFrame, window: Window, *, th: Thresholds) -> GapEvidence:
    """Gaps per device and their sync and launch evidence (see the module docstring)."""
    lo, hi = window.start_ns, window.end_ns
    empty = np.zeros(0, np.int64)
    sync_s, sync_e = _api_intervals(api, SYNC_API_RE)
    if len(sync):
        sync_s = np.concatenate((sync_s, sync["start_ns"].to_numpy(np.int64)))
        sync_e = np.concatenate((sync_e, sync["end_ns"].to_numpy(np.int64)))
    sync_s, sync_e = iv.merge_intervals(sync_s, sync_e)
    # perf (bench): the busy intervals are already merged: no re-clip / re-merge of 2M intervals
    dev_gaps = {d: iv.find_gaps_merged(b.compute_starts, b.compute_ends, lo, hi, min_gap=th.min_gap_ns)
                for d, b in sorted(busy.items())}
    # a launch/enqueue call overlaps the gap: one pass over the API rows for every device's gaps
    launch_rows = _name_mask(api["name"], LAUNCH_API_RE) if len(api) else np.zeros(0, bool)
    overlaps = iv.overlaps_any(api["start_ns"].to_numpy(np.int64), api["end_ns"].to_numpy(np.int64),
                               np.concatenate([g[0] for g in dev_gaps.values()] or [empty]),
                               np.concatenate([g[1] for g in dev_gaps.values()] or [empty]),
                               rows=launch_rows)
    del launch_rows
    kdev = kernels["device_id"].to_numpy(np.int64) if len(kernels) else empty
    one_device = all_equal(kdev)
    k_start = kernels["start_ns"].to_numpy(np.int64) if len(kernels) else empty
    k_launch_end = kernels["launch_end_ns"].to_numpy(np.int64) if len(kernels) else empty
    done = 0
    devices = []
    for d, (gs, ge) in dev_gaps.items():  # handful of devices
        overl = overlaps[done:done + gs.size]
        done += gs.size
        short = (ge - gs) <= th.launch_gap_max_ns
        # perf (bench): the two columns it reads as arrays, no copy with one device
        if one_device or not kdev.size:
            on_d = (k_start, k_launch_end) if kdev.size and kdev[0] == d else (empty, empty)
        else:
            on_d = (k_start[kdev == d], k_launch_end[kdev == d])
        devices.append((d, gs, ge, short & (overl | _launched_late(*on_d, gs, ge))))
    return GapEvidence(sync_s, sync_e, tuple(devices))


def analyze_gaps(busy: dict[int, DeviceBusy], kernels: pd.DataFrame, api: pd.DataFrame,
                 sync: pd.DataFrame, phases, window: Window, *, th: Thresholds,
                 evidence: GapEvidence | None = None) -> GapsResult:
    """Gaps and causes for one process. ``phases`` is a PhasesResult or Unavailable;
    ``evidence``: ``gap_evidence`` of the same inputs, when already computed."""
    ev = evidence if evidence is not None else gap_evidence(busy, kernels, api, sync, window,
                                                            th=th)
    has_phases = is_available(phases)
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    input_iv = iv.merge_intervals(*phases.canonical_intervals("data")) if has_phases else empty
    over_iv = iv.merge_intervals(*phases.canonical_intervals("overhead")) if has_phases else empty

    n_dev = max(len(busy), 1)
    by_cause = {c: 0.0 for c in GAP_CAUSES}
    all_gaps = []  # per device: (gs, ge, device, cause_matrix)
    per_device = []
    for d, gs, ge, launch in ev.devices:
        b = busy[d]
        mat = _cause_ns(gs, ge, (input_iv, over_iv, (b.copy_starts, b.copy_ends),
                                 (ev.sync_starts, ev.sync_ends)), launch)
        totals = mat.sum(axis=0)
        for ci, cause in enumerate(GAP_CAUSES):
            by_cause[cause] += float(totals[ci]) / n_dev
        per_device.append({"device_id": int(d), "count": int(gs.size),
                           "total_ms": float((ge - gs).sum()) / 1e6,
                           "by_cause": {c: float(totals[i]) / 1e6 for i, c in enumerate(GAP_CAUSES)}})
        all_gaps.append((gs, ge, np.full(gs.size, d, np.int64), mat))

    if all_gaps:
        gs = np.concatenate([g[0] for g in all_gaps])
        ge = np.concatenate([g[1] for g in all_gaps])
        dev = np.concatenate([g[2] for g in all_gaps])
        mat = np.concatenate([g[3] for g in all_gaps])
    else:
        gs = ge = dev = np.zeros(0, np.int64)
        mat = np.zeros((0, len(GAP_CAUSES)), np.int64)
    dur = ge - gs
    edges = np.array(HIST_EDGES_NS, np.int64)
    bin_idx = np.searchsorted(edges, dur, side="right") - 1  # -1: below 1 µs (only if min_gap < 1 µs)
    hist = []
    for i, lo_e in enumerate(HIST_EDGES_NS):  # eight fixed bins
        m = bin_idx == i
        hi_e = HIST_EDGES_NS[i + 1] if i + 1 < len(HIST_EDGES_NS) else None
        hist.append((int(lo_e), hi_e, int(m.sum()), int(dur[m].sum())))

    top = []
    order = _longest_first(dur, TOP_GAPS)
    describe_cpu = _cpu_describer(api) if order.size else None
    for j in order:  # ≤ 10 gaps
        cause = GAP_CAUSES[int(np.argmax(mat[j]))] if mat[j].sum() else "other"
        phase = None
        if has_phases and phases.inst_starts_ns.size:
            ov = (np.minimum(phases.inst_ends_ns, ge[j]) - np.maximum(phases.inst_starts_ns, gs[j]))
            k = int(np.argmax(ov))
            if ov[k] > 0:
                phase = phases.rows[int(phases.inst_row[k])].name
        top.append(Gap(int(gs[j]), int(dur[j]), int(dev[j]), cause,
                       cast(Callable[[int, int], str], describe_cpu)(int(gs[j]), int(ge[j])), phase))
    return GapsResult(window_ns=window.duration_ns, min_gap_ns=th.min_gap_ns, count=int(gs.size),
                      total_ns=float(dur.sum()) / n_dev, by_cause_ns=by_cause,
                      histogram=tuple(hist), top=tuple(top), per_device=tuple(per_device))
