"""DataLoader workers: which processes/threads of the export feed the training process, and how
busy each one is over the analysed window (the ``loader`` section).

A *worker* is (issue 19):

* a process with host activity (NVTX ranges, OS-runtime calls or CPU samples) and no GPU work
  (no kernel, copy or memset), in a file where some process does GPU work — PyTorch DataLoader
  workers are such processes; launchers (``torchrun``, ``mpirun``, a shell, ``nsys``) are not;
* a thread of a GPU process named like a worker (``pt_data_worker*``, ``DataLoader*``): a loader
  that runs its workers as threads.

Busy share of one worker, the first basis its data allow (``per_worker[].basis``):

* ``nvtx`` — the union of its NVTX ranges inside the window ÷ the window;
* ``cpu_samples`` — samples of its busiest thread in the window (``running`` ones when the export
  has thread states) × the sampling period (the median interval between its samples) ÷ the window;
* ``osrt`` — 1 − the union of its main thread's blocking OS-runtime calls (waits, polls, sleeps,
  blocking reads of a pipe or socket) inside the window ÷ the window.

``busy_share`` is the mean over workers. The analysis is pure (frames in, a frozen result out); it
runs once per file in ``analyses/suite.py: run_suite`` since workers are not GPU processes.

Several GPU processes in one file (one per rank): each worker is attributed to the GPU process it
feeds (``per_worker[].parent_pid``, ``attributed_by``), the first rule that applies:

* ``thread`` — a worker thread belongs to its own process;
* ``parent`` — the export names the worker's parent process (``TraceMeta.extra["parent_pids"]``,
  pid → parent pid, when a loader finds one; nsys's ``PROCESSES`` table has no parent column);
* ``nearest_pid`` — the GPU process on the same host (the GlobalId's upper bits) whose name matches
  the worker's (``python`` forks ``python``), else any on that host, with the largest pid below the
  worker's (a forked child gets a later pid), else the closest pid.

``analyze_loader_workers(…, owner=gpid)`` measures only the workers of that GPU process over its
own window; without ``owner`` every worker counts (the single-GPU-process path, unchanged).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pandas as pd

from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.timeline.busy import Window
from nsys_diag.analyses.timeline.intervals import clip, merge_intervals, total_length
from nsys_diag.model.bundle import TraceBundle
from nsys_diag.model.text import clean_text
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import (HINT_CAPTURE_WORKERS, NO_LOADER_WORKERS,
                                        NO_LOADER_WORKERS_OF_PROCESS)

WORKER_NAME_RE = re.compile(r"pt_data_worker|dataloader|data_worker", re.IGNORECASE)
"""Thread/process names of DataLoader workers (PyTorch names its worker threads
``pt_data_worker``)."""
LAUNCHER_RE = re.compile(r"(^|/)(torchrun|mpirun|mpiexec|srun|bash|sh|zsh|nsys|orted|hydra_pmi_proxy)"
                         r"$", re.IGNORECASE)
"""Process names that launch the job rather than load data."""
OSRT_BLOCKING = frozenset({
    "pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait", "pthread_join",
    "poll", "ppoll", "select", "pselect", "pselect6", "epoll_wait", "epoll_pwait", "sem_wait",
    "sem_timedwait", "sem_clockwait", "futex", "nanosleep", "clock_nanosleep", "usleep", "sleep",
    "waitpid", "wait", "wait4", "waitid", "recv", "recvfrom", "recvmsg", "accept", "accept4",
    "pthread_mutex_lock", "pthread_rwlock_rdlock", "pthread_rwlock_wrlock", "sigwait",
    "sigtimedwait"})
"""OS-runtime calls in which a thread waits rather than works."""
MAX_WORKERS = 64
"""At most this many workers are measured (a file with more is listed as its first 64)."""
STATES = ("saturated", "busy", "idle")


@dataclass(frozen=True)
class WorkerActivity:
    """One worker: who it is, why it counts as a worker, and how busy it is."""

    pid: int
    tid: int | None  # a worker thread inside a GPU process; None: the whole process
    name: str
    busy_share: float
    basis: str  # nvtx | cpu_samples | osrt
    evidence: str
    parent_pid: int | None = None  # the GPU process it feeds (several GPU processes only)
    attributed_by: str | None = None  # thread | parent | nearest_pid

    def to_json(self) -> dict:
        out = {"pid": self.pid, "tid": self.tid, "name": self.name,
               "busy_share": self.busy_share, "basis": self.basis, "evidence": self.evidence}
        if self.attributed_by is not None:  # only files with several GPU processes
            out.update(parent_pid=self.parent_pid, attributed_by=self.attributed_by)
        return out


@dataclass(frozen=True)
class LoaderWorkersResult:
    workers: tuple[WorkerActivity, ...]
    window_ms: float
    saturated_at: float
    idle_below: float

    available = True

    @property
    def busy_share(self) -> float:
        return float(np.mean([w.busy_share for w in self.workers]))

    @property
    def state(self) -> str:
        """``saturated`` (≥ ``saturated_at``), ``idle`` (< ``idle_below``) or ``busy``."""
        b = self.busy_share
        return "saturated" if b >= self.saturated_at else "idle" if b < self.idle_below else "busy"

    def basis(self) -> str:
        """The bases used, most common first (``nvtx``, ``nvtx+osrt`` …)."""
        counts = pd.Series([w.basis for w in self.workers]).value_counts()
        return "+".join(str(b) for b in counts.index)

    def verdict_fact(self) -> dict:
        """What the input rule reads (``VerdictInputs.loader``)."""
        return {"workers": len(self.workers), "busy_share": self.busy_share, "state": self.state,
                "basis": self.basis()}

    def to_json(self) -> dict:
        return {"workers": len(self.workers), "busy_share": self.busy_share, "state": self.state,
                "basis": self.basis(), "saturated_at": self.saturated_at,
                "idle_below": self.idle_below, "window_ms": self.window_ms,
                "per_worker": [w.to_json() for w in self.workers]}


# ----------------------------------------------------------------------------- candidates
def _pids(df: pd.DataFrame) -> set[int]:
    return {int(p) for p in pd.unique(df["global_pid"].to_numpy())} if len(df) else set()


def worker_names(df: pd.DataFrame, key: str) -> dict[int, str]:
    if not len(df):
        return {}
    return {int(k): str(v) for k, v in zip(df[key].to_numpy(), df["name"].to_numpy())}


def _pid_of(gpid: int, frames: Iterable[pd.DataFrame]) -> int:
    for f in frames:  # ≤ 4 frames
        if len(f):
            rows = f.loc[f["global_pid"].to_numpy() == gpid, "pid"]
            if len(rows):
                return int(rows.iloc[0])
    return -1


def worker_threads(threads: pd.DataFrame, pids: set[int]) -> pd.DataFrame:
    """Threads named like a worker (``WORKER_NAME_RE``) of the given processes."""
    if not len(threads):
        return threads
    gpid = threads["global_tid"].to_numpy() & ~np.int64(0xFFFFFF)
    named = threads["name"].astype(str).str.contains(WORKER_NAME_RE, na=False).to_numpy()
    return threads.loc[named & np.isin(gpid, list(pids))]


def _process_evidence(gpid: int, bundle: TraceBundle, pname: str) -> str:
    def nvtx_hit() -> bool:
        nv = bundle.nvtx
        if not len(nv):
            return False
        texts = nv.loc[nv["global_pid"].to_numpy() == gpid, "text"].astype(str)
        return bool(texts.str.contains(WORKER_NAME_RE, na=False).any())
    return process_evidence(gpid, bundle.threads, pname, nvtx_hit)


def process_evidence(gpid: int, threads: pd.DataFrame, pname: str, nvtx_hit) -> str:
    """Why process ``gpid`` counts as a worker: a worker-named thread, its name, its NVTX ranges
    (``nvtx_hit()``: does one of its NVTX texts look like a DataLoader's) or host activity."""
    t = threads
    if len(t):
        own = t.loc[(t["global_tid"].to_numpy() & ~np.int64(0xFFFFFF)) == gpid, "name"].astype(str)
        hit = own[own.str.contains(WORKER_NAME_RE, na=False)]
        if len(hit):
            return f"thread named {clean_text(hit.iloc[0], 60)}; no GPU work"
    if WORKER_NAME_RE.search(pname):
        return f"process named {clean_text(pname, 60)}; no GPU work"
    if nvtx_hit():
        return "DataLoader NVTX ranges; no GPU work"
    return "host activity and no GPU work"


# ---------------------------------------------------------------------------------- busy
def _rows(df: pd.DataFrame, gpid: int, tid: int | None, tcol: str) -> pd.DataFrame:
    keep = df["global_pid"].to_numpy() == gpid
    if tid is not None:
        keep &= df[tcol].to_numpy() == tid
    return df.loc[keep]


def _covered(starts, ends, w: Window) -> int:
    s, e = clip(np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64),
                w.start_ns, w.end_ns)
    return total_length(*merge_intervals(s, e))


def _main_thread(df: pd.DataFrame, weight: np.ndarray | None = None) -> int:
    """The thread with the most rows (or weight)."""
    counts = (pd.Series(weight if weight is not None else np.ones(len(df)), index=df["global_tid"])
              .groupby(level=0).sum())
    return int(counts.idxmax())


def _busy_nvtx(rows: pd.DataFrame, w: Window) -> float | None:
    if not len(rows):
        return None
    return _covered(rows["start_ns"].to_numpy(), rows["end_ns"].to_numpy(), w) / w.duration_ns


def _busy_samples(rows: pd.DataFrame, w: Window) -> float | None:
    if len(rows) < 2:
        return None
    rows = rows.loc[rows["global_tid"].to_numpy() == _main_thread(rows)].sort_values("ts_ns")
    ts = rows["ts_ns"].to_numpy()
    if len(ts) < 2:
        return None
    period = float(np.median(np.diff(ts)))
    counted = (ts >= w.start_ns) & (ts < w.end_ns)
    states = rows["state"].astype(str).to_numpy()
    if (states == "running").any():  # the export names thread states: count running ones
        counted &= states == "running"
    return min(1.0, float(counted.sum()) * period / w.duration_ns)


def _busy_osrt(rows: pd.DataFrame, w: Window) -> float | None:
    if not len(rows):
        return None
    main = rows.loc[rows["global_tid"].to_numpy() == _main_thread(rows)]
    blocking = main["name"].astype(str).isin(OSRT_BLOCKING).to_numpy()
    blocked = _covered(main["start_ns"].to_numpy()[blocking], main["end_ns"].to_numpy()[blocking], w)
    return 1.0 - blocked / w.duration_ns


def _busy(bundle: TraceBundle, gpid: int, tid: int | None, w: Window) -> tuple[float, str] | None:
    """(busy share, basis) of one worker: NVTX, then CPU samples, then OS-runtime calls."""
    for basis, frame, fn in (("nvtx", bundle.nvtx, _busy_nvtx),
                             ("cpu_samples", bundle.cpu_samples, _busy_samples),
                             ("osrt", bundle.osrt, _busy_osrt)):
        if not len(frame):
            continue
        share = fn(_rows(frame, gpid, tid, "tid"), w)
        if share is not None:
            return float(min(max(share, 0.0), 1.0)), basis
    return None


# ---------------------------------------------------------------------------- attribution
HOST_MASK = ~np.int64((1 << 48) - 1)
"""The GlobalId bits above the pid (hardware/VM id): equal for processes of one host."""


def _nearest(gpid: int, name: str, gpu: list[int], pnames: dict[int, str]) -> int:
    """The GPU process a worker process most likely feeds (``nearest_pid`` rule)."""
    same_host = [g for g in gpu if (g & int(HOST_MASK)) == (gpid & int(HOST_MASK))] or gpu
    named = [g for g in same_host if name and pnames.get(g, "") == name] or same_host
    pid = (gpid >> 24) & 0xFFFFFF
    below = [g for g in named if ((g >> 24) & 0xFFFFFF) < pid]
    if below:
        return max(below, key=lambda g: (g >> 24) & 0xFFFFFF)
    return min(named, key=lambda g: (abs(((g >> 24) & 0xFFFFFF) - pid), g))


def worker_owner(gpid: int, tid: int | None, name: str, gpu: Iterable[int],
                 pnames: dict[int, str], parents: dict[int, int] | None = None) -> tuple[int, str]:
    """(GlobalId of the GPU process a worker feeds, the rule that found it: ``thread``,
    ``parent`` or ``nearest_pid``; see the module docstring)."""
    gpu = sorted(gpu)
    if tid is not None or gpid in gpu:
        return gpid, "thread"
    parent = (parents or {}).get((gpid >> 24) & 0xFFFFFF)
    by_pid = {(g >> 24) & 0xFFFFFF: g for g in gpu}
    if parent is not None and int(parent) in by_pid:
        return by_pid[int(parent)], "parent"
    return _nearest(gpid, name, gpu, pnames), "nearest_pid"


def worker_parents(bundle: TraceBundle) -> dict[int, int] | None:
    raw = bundle.meta.extra.get("parent_pids") if isinstance(bundle.meta.extra, dict) else None
    return {int(k): int(v) for k, v in raw.items()} if isinstance(raw, dict) else None


# ---------------------------------------------------------------------------------- entry
def analyze_loader_workers(bundle: TraceBundle, window: Window, th: Thresholds, *,
                           owner: int | None = None) -> LoaderWorkersResult | Unavailable:
    """The DataLoader workers of ``bundle`` and their busy share of ``window`` (module docstring).
    ``owner``: only the workers attributed to that GPU process (GlobalId), each with its
    ``parent_pid`` and ``attributed_by``."""
    if window.duration_ns <= 0:
        return Unavailable("no analysed window")
    gpu = set().union(*(_pids(f) for f in (bundle.kernels, bundle.memcpy, bundle.memset)))
    if not gpu:
        return Unavailable("no GPU process for workers to feed")
    pnames = worker_names(bundle.processes, "global_pid")
    host = set().union(*(_pids(f) for f in (bundle.nvtx, bundle.osrt, bundle.cpu_samples)))
    units: list[tuple[int, int | None, str, str]] = []
    for gpid in sorted(host - gpu):  # a handful of processes
        pname = pnames.get(gpid, "")
        if not LAUNCHER_RE.search(pname.strip()):
            units.append((gpid, None, pname, _process_evidence(gpid, bundle, pname)))
    for r in worker_threads(bundle.threads, gpu).itertuples(index=False):  # named threads only
        units.append((int(r.global_tid) & ~0xFFFFFF, int(r.tid), str(r.name),
                      "worker thread of the training process"))
    frames = (bundle.processes, bundle.nvtx, bundle.osrt, bundle.cpu_samples)
    owned: list[tuple[int, str] | None] = [None] * len(units)
    if owner is not None:  # several GPU processes: only the workers of ``owner``
        parents = worker_parents(bundle)
        pairs = [(u, worker_owner(u[0], u[1], u[2], gpu, pnames, parents)) for u in units]
        units = [u for u, o in pairs if o[0] == owner]
        owned = [o for _, o in pairs if o[0] == owner]
    workers = []
    for j, (gpid, tid, name, evidence) in enumerate(units[:MAX_WORKERS]):
        got = _busy(bundle, gpid, tid, window)
        if got is None:
            continue
        own = owned[j]
        workers.append(WorkerActivity(pid=_pid_of(gpid, frames), tid=tid,
                                      name=clean_text(name.rstrip("/").rsplit("/", 1)[-1], 80),
                                      busy_share=got[0], basis=got[1],
                                      evidence=evidence,
                                      parent_pid=(own[0] >> 24) & 0xFFFFFF if own else None,
                                      attributed_by=own[1] if own else None))
    return workers_result(workers, window, th, owner)


def workers_result(workers: list[WorkerActivity], window: Window, th: Thresholds,
                   owner: int | None) -> LoaderWorkersResult | Unavailable:
    """The result of the workers found (in memory, or merged from a streamed export's chunks:
    ``loader_spans.py``); Unavailable, saying why, when there are none."""
    if not workers:
        if owner is not None:
            return Unavailable(NO_LOADER_WORKERS_OF_PROCESS,
                               "workers are attributed to the GPU process they were forked from "
                               "(the closest pid on the same host)")
        return Unavailable(NO_LOADER_WORKERS, HINT_CAPTURE_WORKERS)
    return LoaderWorkersResult(workers=tuple(workers), window_ms=window.duration_ns / 1e6,
                               saturated_at=th.loader_saturated_busy_share,
                               idle_below=th.loader_idle_busy_share)
