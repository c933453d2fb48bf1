"""Building blocks of the generator's timeline: event-kind codes, process identities, string
code tables and small vectorised interval helpers (all times integer ns).

Shared by :mod:`nsys_diag.synth.process` (one process's events) and
:mod:`nsys_diag.synth.timeline` (the whole capture); nothing here knows a schema variant.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from nsys_diag.synth.kernels import KernelInfo
from nsys_diag.synth.schema import global_pid, global_tid

KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET, KIND_SYNC, KIND_CALL = 0, 1, 2, 3, 4
COPY_KIND = {"H2D": 1, "D2H": 2, "D2D": 8,  # ENUM_CUDA_MEMCPY_OPER
             "uvm_h2d": 11, "uvm_d2h": 12, "uvm_d2d": 13}
UVM_COPY_KINDS = (11, 12, 13)
MEM_PAGEABLE, MEM_PINNED, MEM_DEVICE, MEM_MANAGED = 0, 1, 2, 4  # ENUM_CUDA_MEM_KIND (nsys)
OSRT_EVENT_CLASS = 27  # ENUM_NSYS_EVENT_CLASS TRACE_PROCESS_EVENT_OS_RUNTIME
STATE_RUNNING, STATE_OSRT = 1, 8  # ENUM_SAMPLING_THREAD_STATE
SYNC_KIND = {"cudaStreamSynchronize": "stream", "cudaDeviceSynchronize": "device",
             "cudaEventSynchronize": "event", "cuStreamSynchronize": "stream",
             "cuCtxSynchronize": "device", "cuEventSynchronize": "event"}
SYNC_KINDS = ("stream", "device", "event")
NVTX_MARK, NVTX_PUSHPOP, NVTX_STARTEND, NVTX_DOMAIN_CREATE = 34, 59, 60, 75


@dataclass
class ProcessInfo:
    """One traced process: ``index`` in the file, OS ``pid``, its GPU ``device`` and CUDA
    ``context`` id, and its threads by key (``"main"``, ``"autograd"``, …)."""

    index: int
    pid: int
    device: int
    context: int
    threads: dict[str, tuple[int, str]]  # key -> (tid, thread name)

    @property
    def gpid(self) -> int:
        return global_pid(self.pid)

    def gtid(self, key: str) -> int:
        return global_tid(self.pid, self.threads[key][0])


class Codes:
    """An append-only list of distinct strings with integer codes (insertion order)."""

    def __init__(self) -> None:
        self.values: list[str] = []
        self._index: dict[str, int] = {}

    def code(self, value: str) -> int:
        i = self._index.get(value)
        if i is None:
            i = self._index[value] = len(self.values)
            self.values.append(value)
        return i


@dataclass
class Interning:
    """The code tables one timeline build shares across its processes (insertion order = id
    order in the written file, so the order of the ``code``/``kernel``/``domain`` calls matters).

    ``domains[i]`` is NVTX domain id ``i + 1`` (id 0 is the default domain)."""

    api_names: Codes = field(default_factory=Codes)  # base API names (no _vNNNN suffix)
    nvtx_texts: Codes = field(default_factory=Codes)
    phase_names: Codes = field(default_factory=Codes)
    kernel_infos: list[KernelInfo] = field(default_factory=list)
    domains: list[str] = field(default_factory=list)
    osrt_names: Codes = field(default_factory=Codes)  # OS runtime function names
    frames: Codes = field(default_factory=Codes)  # CPU-sample symbols
    _kernel_index: dict[KernelInfo, int] = field(default_factory=dict)

    def kernel(self, info: KernelInfo) -> int:
        """Index of ``info`` in :attr:`kernel_infos` (appended on first use)."""
        i = self._kernel_index.get(info)
        if i is None:
            i = self._kernel_index[info] = len(self.kernel_infos)
            self.kernel_infos.append(info)
        return i

    def domain(self, name: str) -> int:
        """NVTX domain id of ``name`` (1-based, appended on first use)."""
        if name not in self.domains:
            self.domains.append(name)
        return self.domains.index(name) + 1


# ---------------------------------------------------------------------------------------------
# small vectorised helpers
# ---------------------------------------------------------------------------------------------

def concat_columns(parts: list[dict[str, np.ndarray]], keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Concatenate column dicts; a key missing from a part is filled with -1 for its rows."""
    out = {}
    for k in keys:
        arrs = []
        for p in parts:
            if k in p:
                arrs.append(np.asarray(p[k]))
            else:
                n = len(next(iter(p.values())))
                arrs.append(np.full(n, -1, np.int64))
        out[k] = np.concatenate(arrs) if arrs else np.zeros(0, np.int64)
    return out


def fifo_ends(ready: np.ndarray, dur: np.ndarray, gap: int) -> np.ndarray:
    """End times (ns) of ops run in ``ready`` order on one FIFO stream with ``gap`` ns between
    back-to-back ops: ``end_i = T_i + cummax(ready_j + dur_j - T_j)``, ``T`` the cumulative
    (dur + gap)."""
    slot = dur + gap
    t = np.cumsum(slot)
    return t + np.maximum.accumulate(ready + dur - t)


def union_intervals(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge possibly overlapping intervals; returns sorted disjoint (starts, ends)."""
    if s.size == 0:
        return s.astype(np.int64), e.astype(np.int64)
    o = np.argsort(s, kind="stable")
    s, e = s[o], e[o]
    run = np.maximum.accumulate(e)
    new = np.ones(s.size, bool)
    new[1:] = s[1:] > run[:-1]
    first = np.flatnonzero(new)
    return s[first], np.maximum.reduceat(run, first)


def covered_before(us: np.ndarray, ue: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Total length of the disjoint sorted intervals (us, ue) lying before each time in ``t``."""
    t = np.asarray(t, np.int64)
    if us.size == 0:
        return np.zeros(t.shape, np.int64)
    cum = np.concatenate([[0], np.cumsum(ue - us)])
    j = np.searchsorted(us, t, side="right")  # intervals starting at or before t
    jj = np.maximum(j - 1, 0)
    partial = np.where(j > 0, np.clip(t - us[jj], 0, ue[jj] - us[jj]), 0)
    return cum[jj] + partial


