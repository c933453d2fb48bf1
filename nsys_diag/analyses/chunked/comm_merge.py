"""Communication (``analyze_communication``) of a process from its chunks:
``partial_communication`` per chunk, ``merge_communication`` at the end — the same
``CommunicationResult`` as the in-memory suite (which runs it on the window's kernels).

Per device, the union of communication kernels and its intersection with the union of the other
kernels are measured inside the window; a chunk measures them inside ``chunk_window`` (the
window ∩ ``[lo, hi)``) over every kernel it sees (they overlap ``[lo, hi]``), so the chunks'
lengths add up exactly. Kernel counts use owned rows. A part is O(devices + communication
kernel names).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.chunked.context import ChunkInputs
from nsys_diag.analyses.chunked.kernels_merge import window_kernels
from nsys_diag.analyses.communication import (CommunicationResult, DeviceComm, comm_kernel_mask)
from nsys_diag.model.vocabulary import NSYS_TRACE_CUDA_NVTX


@dataclass(frozen=True)
class CommPart:
    """Per device with communication kernels the chunk sees: (owned comm kernels, comm ns,
    hidden ns) inside the chunk's window share; the names of its owned comm kernels."""

    per_device: dict[int, tuple[int, int, int]]
    names: frozenset[str]


def partial_communication(ci: ChunkInputs) -> CommPart:
    """The chunk's communication sums (see the module docstring)."""
    seen = window_kernels(ci, owned_only=False)
    comm = comm_kernel_mask(seen)
    if not comm.any():
        return CommPart({}, frozenset())
    s = seen["start_ns"].to_numpy(np.int64)
    e = seen["end_ns"].to_numpy(np.int64)
    dev = seen["device_id"].to_numpy(np.int64)
    own = (s >= ci.lo_ns) & (s < ci.hi_ns)
    cw = ci.chunk_window
    lo, hi = int(cw.start_ns), int(cw.end_ns)
    per_device = {}
    for d in np.unique(dev[comm]):  # a handful of devices
        on = dev == d
        cs, ce = iv.clip(s[on & comm], e[on & comm], lo, hi)
        ks, ke = iv.clip(s[on & ~comm], e[on & ~comm], lo, hi)
        per_device[int(d)] = (int((on & comm & own).sum()), int(iv.total_length(cs, ce)),
                              int(iv.intersect_length(cs, ce, ks, ke)))
    names = frozenset(str(n) for n in seen["name"].to_numpy()[comm & own])
    return CommPart(per_device, names)


def merge_communication(parts: list[CommPart], *, window: tuple[int, int],
                        step_time_ns_total: int | None) -> CommunicationResult | Unavailable:
    """The process's ``CommunicationResult``; ``window``: the analysed window (ns);
    ``step_time_ns_total``: the steps' total analysed time (``StepsResult.total_analysed_ns``),
    or the window's length without steps — as the suite passes them."""
    devices = sorted({d for p in parts for d in p.per_device})
    if not devices:
        return Unavailable("no communication (NCCL) kernels in the capture",
                           "single-GPU run, or multi-GPU collectives were not traced "
                           f"(`{NSYS_TRACE_CUDA_NVTX}` records NCCL kernels)")
    lo, hi = int(window[0]), int(window[1])
    per_device = []
    for d in devices:  # a handful of devices
        sums = [p.per_device[d] for p in parts if d in p.per_device]
        n, comm_ns, hidden = (sum(x[i] for x in sums) for i in range(3))
        per_device.append(DeviceComm(int(d), n, comm_ns, hidden, comm_ns - hidden, hi - lo))
    names = set().union(*(p.names for p in parts))
    return CommunicationResult(
        per_device=tuple(per_device), window=(lo, hi),
        step_time_ns_total=None if step_time_ns_total is None else int(step_time_ns_total),
        kernel_names=tuple(sorted(names))[:20])
