"""DataLoader workers, streamed: per-chunk activity of every candidate worker, merged into
``loader_workers.analyze_loader_workers``'s result.

The workers' host rows (NVTX ranges, OS-runtime calls, CPU samples) arrive per chunk with the
other bundle-level rows of the chunk ``[lo, hi)`` (ranges and calls overlapping it, samples with
``ts`` inside it; more rows — even the whole frames — are harmless: a chunk only clips to its
span and counts the rows it owns). Per candidate unit — every host process without GPU rows in
the chunk, and every worker-named thread (``WORKER_NAME_RE``) of the threads table — a chunk
keeps, per basis:

* ``nvtx`` — whether the unit has a range, and the union of its ranges inside
  window ∩ ``[lo, hi)`` (ns; unions of disjoint spans add up exactly);
* ``cpu_samples`` — per thread: owned samples, those in the window, those in the window and
  ``running``, whether any is ``running``, the first/last sample time and the distinct
  intervals between its consecutive samples with their counts (the sampling period is the
  **exact median** of all intervals: the merge adds the intervals across chunk edges). This is
  the one part that is not O(1) per thread: O(distinct sampling intervals) — a regular sampler
  has few;
* ``osrt`` — per thread: owned calls (the main thread has the most) and the union of its blocking
  calls inside window ∩ ``[lo, hi)``.

The merge picks the workers (host processes without GPU work in any chunk, launchers excluded;
worker threads of GPU processes), each one's basis and main thread exactly as the in-memory
analysis does, so the result's ``to_json()`` is identical. The OS pid of a process missing from
the processes table is taken from its rows (it is ``global_pid``'s pid field in every export).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.timeline.busy import Window
from nsys_diag.analyses.timeline.intervals import clip, merge_intervals, total_length
from nsys_diag.analyses.loader_workers import (LAUNCHER_RE, MAX_WORKERS, OSRT_BLOCKING,
                                               WORKER_NAME_RE, LoaderWorkersResult,
                                               WorkerActivity, worker_names, worker_threads,
                                               process_evidence, worker_owner, workers_result)
from nsys_diag.model.text import clean_text
from nsys_diag.model.thresholds import Thresholds

__all__ = ["LoaderPart", "UnitPart", "merge_loader", "partial_loader"]

Unit = tuple[int, "int | None"]
"""(global_pid, OS tid of a worker thread or None for the whole process)."""


@dataclass(frozen=True)
class SampleThread:
    """One thread's CPU samples in one chunk."""

    count: int
    in_window: int
    in_window_running: int
    any_running: bool
    first_ts: int
    last_ts: int
    gaps: np.ndarray
    """Distinct intervals (ns) between consecutive samples of the chunk."""
    gap_counts: np.ndarray


@dataclass(frozen=True)
class UnitPart:
    """One candidate worker in one chunk (ns)."""

    nvtx_any: bool = False
    nvtx_covered_ns: int = 0
    nvtx_worker_text: bool = False
    samples: dict[int, SampleThread] = field(default_factory=dict)
    osrt_count: dict[int, int] = field(default_factory=dict)
    osrt_blocked_ns: dict[int, int] = field(default_factory=dict)
    pids: tuple[int, int, int] = (-1, -1, -1)
    """The OS pid its NVTX, OS-runtime and sample rows carry (-1: none)."""


@dataclass(frozen=True)
class LoaderPart:
    lo_ns: int
    gpu_pids: frozenset[int]
    host_pids: frozenset[int]
    units: dict[Unit, UnitPart]


def _covered(s: np.ndarray, e: np.ndarray, lo: int, hi: int) -> int:
    if hi <= lo or not s.size:
        return 0
    return total_length(*merge_intervals(*clip(s, e, lo, hi)))


def _pids(frames: dict, names) -> frozenset[int]:
    out: set[int] = set()
    for n in names:  # ≤ 3 frames
        f = frames.get(n)
        if f is not None and len(f):
            out.update(int(p) for p in pd.unique(f["global_pid"].to_numpy()))
    return frozenset(out)


def _sample_threads(rows: pd.DataFrame, lo: int, hi: int, w: Window) -> dict[int, SampleThread]:
    ts_all = rows["ts_ns"].to_numpy(np.int64)
    rows = rows.loc[(ts_all >= lo) & (ts_all < hi)]
    out = {}
    tids = rows["global_tid"].to_numpy(np.int64)
    for t in np.unique(tids).tolist():  # a unit's few threads
        r = rows.loc[tids == t]
        ts = np.sort(r["ts_ns"].to_numpy(np.int64))
        running = r["state"].astype(str).to_numpy() == "running"
        tr = r["ts_ns"].to_numpy(np.int64)
        inw = (tr >= w.start_ns) & (tr < w.end_ns)
        gaps, counts = np.unique(np.diff(ts), return_counts=True)
        out[int(t)] = SampleThread(len(ts), int(inw.sum()), int((inw & running).sum()),
                                   bool(running.any()), int(ts[0]), int(ts[-1]), gaps,
                                   counts.astype(np.int64))
    return out


def _osrt_threads(rows: pd.DataFrame, lo: int, hi: int, w: Window
                  ) -> tuple[dict[int, int], dict[int, int]]:
    s, e = rows["start_ns"].to_numpy(np.int64), rows["end_ns"].to_numpy(np.int64)
    tids = rows["global_tid"].to_numpy(np.int64)
    blocking = rows["name"].astype(str).isin(OSRT_BLOCKING).to_numpy()
    a, b = max(lo, w.start_ns), min(hi, w.end_ns)
    counts, blocked = {}, {}
    for t in np.unique(tids).tolist():  # a unit's few threads
        on = tids == t
        owned = int((on & (s >= lo) & (s < hi)).sum())
        if owned:
            counts[int(t)] = owned
        k = on & blocking
        blocked[int(t)] = _covered(s[k], e[k], a, b)
    return counts, blocked


def _first_pid(rows: pd.DataFrame | None) -> int:
    return int(rows["pid"].iloc[0]) if rows is not None and len(rows) else -1


def _unit_part(frames: dict, gpid: int, tid: int | None, lo: int, hi: int, w: Window) -> UnitPart:
    sel: dict[str, pd.DataFrame | None] = {}
    for n in ("nvtx", "osrt", "cpu_samples"):  # the three host frames
        f = frames.get(n)
        if f is None or not len(f):
            sel[n] = None
            continue
        keep = f["global_pid"].to_numpy() == gpid
        if tid is not None:
            keep &= f["tid"].to_numpy() == tid
        sel[n] = f.loc[keep] if keep.any() else None
    nv, os_, cs = sel["nvtx"], sel["osrt"], sel["cpu_samples"]
    part = UnitPart(pids=(_first_pid(nv), _first_pid(os_), _first_pid(cs)))
    if nv is not None:
        cov = _covered(nv["start_ns"].to_numpy(np.int64), nv["end_ns"].to_numpy(np.int64),
                       max(lo, w.start_ns), min(hi, w.end_ns))
        hit = tid is None and bool(nv["text"].astype(str).str.contains(WORKER_NAME_RE,
                                                                         na=False).any())
        part = UnitPart(True, cov, hit, pids=part.pids)
    samples = _sample_threads(cs, lo, hi, w) if cs is not None else {}
    counts, blocked = _osrt_threads(os_, lo, hi, w) if os_ is not None else ({}, {})
    return UnitPart(part.nvtx_any, part.nvtx_covered_ns, part.nvtx_worker_text, samples, counts,
                    blocked, part.pids)


def partial_loader(frames: dict[str, pd.DataFrame], lo_ns: int, hi_ns: int, *, window: Window,
                   threads: pd.DataFrame) -> LoaderPart:
    """The activity of every candidate worker in the chunk ``[lo_ns, hi_ns)``. ``frames``: the
    chunk's bundle-level ``kernels``/``memcpy``/``memset`` (their ``global_pid`` only) and
    ``nvtx``/``osrt``/``cpu_samples`` rows (module docstring); ``window``: the headline
    process's analysed window; ``threads``: the bundle's threads table."""
    gpu = _pids(frames, ("kernels", "memcpy", "memset"))
    host = _pids(frames, ("nvtx", "osrt", "cpu_samples"))
    units: dict[Unit, UnitPart] = {}
    if window.duration_ns > 0:
        for gpid in sorted(host - gpu):  # a handful of processes
            units[(gpid, None)] = _unit_part(frames, gpid, None, lo_ns, hi_ns, window)
        all_pids = set((threads["global_tid"].to_numpy() & ~np.int64(0xFFFFFF)).tolist()) \
            if len(threads) else set()
        for r in worker_threads(threads, all_pids).itertuples(index=False):  # named threads
            gpid, tid = int(r.global_tid) & ~0xFFFFFF, int(r.tid)
            if gpid in host:
                units[(gpid, tid)] = _unit_part(frames, gpid, tid, lo_ns, hi_ns, window)
    return LoaderPart(int(lo_ns), gpu, host, units)


# ------------------------------------------------------------------------------------ merge
def _median(values: np.ndarray, counts: np.ndarray) -> float:
    """``np.median`` of the multiset ``values`` × ``counts`` (sorted distinct values)."""
    n = int(counts.sum())
    cum = np.cumsum(counts)

    def kth(k: int) -> int:
        return int(values[int(np.searchsorted(cum, k + 1))])
    if n % 2:
        return float(kth(n // 2))
    return (float(kth(n // 2 - 1)) + float(kth(n // 2))) / 2


def _busy_samples(ups: list[UnitPart], w: Window) -> float | None:
    per: dict[int, list[SampleThread]] = {}
    for u in ups:  # chunks in time order
        for t, st in u.samples.items():
            per.setdefault(t, []).append(st)
    counts = {t: sum(s.count for s in v) for t, v in per.items()}
    if sum(counts.values()) < 2:
        return None
    main = max(sorted(counts), key=lambda t: counts[t])  # the first of the most sampled
    chain = per[main]
    if counts[main] < 2:
        return None
    vals = [s.gaps for s in chain] + [np.array([b.first_ts - a.last_ts for a, b in
                                                zip(chain[:-1], chain[1:])], np.int64)]
    cnts = [s.gap_counts for s in chain] + [np.ones(len(chain) - 1, np.int64)]
    v, inverse = np.unique(np.concatenate(vals), return_inverse=True)
    c = np.bincount(inverse.reshape(-1), weights=np.concatenate(cnts)).astype(np.int64)
    period = _median(v, c)
    any_running = any(s.any_running for s in chain)
    counted = sum(s.in_window_running if any_running else s.in_window for s in chain)
    return min(1.0, float(counted) * period / w.duration_ns)


def _busy_osrt(ups: list[UnitPart], w: Window) -> float | None:
    counts: dict[int, int] = {}
    for u in ups:  # one per chunk
        for t, n in u.osrt_count.items():
            counts[t] = counts.get(t, 0) + n
    if not counts:
        return None
    main = max(sorted(counts), key=lambda t: counts[t])
    blocked = sum(u.osrt_blocked_ns.get(main, 0) for u in ups)
    return 1.0 - blocked / w.duration_ns


def _busy(ups: list[UnitPart], w: Window) -> tuple[float, str] | None:
    """(busy share, basis): NVTX, then CPU samples, then OS-runtime calls (as in-memory)."""
    if any(u.nvtx_any for u in ups):
        cov = sum(u.nvtx_covered_ns for u in ups) / w.duration_ns
        return float(min(max(cov, 0.0), 1.0)), "nvtx"
    for basis, fn in (("cpu_samples", _busy_samples), ("osrt", _busy_osrt)):
        share = fn(ups, w)
        if share is not None:
            return float(min(max(share, 0.0), 1.0)), basis
    return None


def _pid(gpid: int, processes: pd.DataFrame, ups: list[UnitPart]) -> int:
    if len(processes):
        rows = processes.loc[processes["global_pid"].to_numpy() == gpid, "pid"]
        if len(rows):
            return int(rows.iloc[0])
    for i in range(3):  # nvtx, osrt, cpu_samples: as loader_workers._pid_of
        for u in ups:
            if u.pids[i] != -1:
                return u.pids[i]
    return -1


def merge_loader(parts: list[LoaderPart], *, window: Window, processes: pd.DataFrame,
                 threads: pd.DataFrame, th: Thresholds, owner: int | None = None,
                 parents: dict[int, int] | None = None) -> LoaderWorkersResult | Unavailable:
    """``analyze_loader_workers`` of the whole file from its chunks' parts (any order; computed
    over ``window``). ``owner``/``parents``: only the workers attributed to that GPU process, as
    ``analyze_loader_workers(owner=…)`` does."""
    if window.duration_ns <= 0:
        return Unavailable("no analysed window")
    parts = sorted(parts, key=lambda p: p.lo_ns)
    gpu = set().union(*(p.gpu_pids for p in parts)) if parts else set()
    if not gpu:
        return Unavailable("no GPU process for workers to feed")
    host = set().union(*(p.host_pids for p in parts))
    pnames = worker_names(processes, "global_pid")

    def of(unit: Unit) -> list[UnitPart]:
        return [p.units[unit] for p in parts if unit in p.units]
    units: list[tuple[int, int | None, str, str]] = []
    for gpid in sorted(host - gpu):  # a handful of processes
        pname = pnames.get(gpid, "")
        if not LAUNCHER_RE.search(pname.strip()):
            ups = of((gpid, None))
            units.append((gpid, None, pname, process_evidence(
                gpid, threads, pname, lambda ups=ups: any(u.nvtx_worker_text for u in ups))))
    for r in worker_threads(threads, gpu).itertuples(index=False):  # named threads only
        units.append((int(r.global_tid) & ~0xFFFFFF, int(r.tid), str(r.name),
                      "worker thread of the training process"))
    owned: list[tuple[int, str] | None] = [None] * len(units)
    if owner is not None:  # several GPU processes: only the workers of ``owner``
        pairs = [(u, worker_owner(u[0], u[1], u[2], gpu, pnames, parents)) for u in units]
        units = [u for u, o in pairs if o[0] == owner]
        owned = [o for _, o in pairs if o[0] == owner]
    workers = []
    for j, (gpid, tid, name, evidence) in enumerate(units[:MAX_WORKERS]):
        ups = of((gpid, tid))
        got = _busy(ups, window)
        if got is None:
            continue
        own = owned[j]
        workers.append(WorkerActivity(pid=_pid(gpid, processes, of((gpid, None)) or ups),
                                      tid=tid, name=clean_text(name.rstrip("/").rsplit("/", 1)[-1],
                                                               80),
                                      busy_share=got[0], basis=got[1], evidence=evidence,
                                      parent_pid=(own[0] >> 24) & 0xFFFFFF if own else None,
                                      attributed_by=own[1] if own else None))
    return workers_result(workers, window, th, owner)
