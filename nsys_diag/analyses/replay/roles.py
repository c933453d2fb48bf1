"""What each CUDA (or HIP) API call does in the causal model, by its name (the call families of
``model/api_names.py``; HIP's ``hip…`` spellings get the roles of their CUDA twins) (never by ``syncType``, whose
numbering changes across nsys versions, NSYS_SQLITE.md §2.6).

Roles
-----
``device_sync``  waits for every GPU operation of the process launched before it:
                 ``cudaDeviceSynchronize``, ``cudaThreadSynchronize``, ``cuCtxSynchronize`` and the
                 implicit device syncs ``cudaFree``/``cudaFreeHost``/``cuMemFree``/``cuMemFreeHost``
                 (not the stream-ordered ``*FreeAsync``);
``stream_sync``  waits for the operations launched before it on one stream (the stream of its
                 SYNCHRONIZATION row): ``cudaStreamSynchronize``, ``cuStreamSynchronize``;
``event_sync``   waits for the work before an event record: ``cudaEventSynchronize``,
                 ``cuEventSynchronize`` (the recorded point is inferred, see ``model.py``);
``sync_copy``    a synchronous copy or memset: waits for its own GPU operation (``cudaMemcpy``,
                 ``cudaMemset``, ``cuMemcpyDtoH`` … without ``Async``; an ``*Async`` copy *to*
                 pageable host memory is synchronous as well and gets this role per row, in
                 ``model.py``);
``launch``       enqueues GPU work and returns (kernels, graphs, async copies and memsets);
``memory``       host-side memory management (``cudaMalloc*``, pools, host registration …);
``other``        any other CUDA call (event record, queries, stream-wait-event, attributes): its
                 own CPU time only — ``cudaStreamWaitEvent`` and the queries never block the host.

The role decides the edge (blocking call → the work it waits for) and the critical-path kind of
the call's own time: ``blocking_wait`` for the syncs and synchronous copies, ``launch`` for
launches and other calls, ``memory_management`` for ``memory`` (``cudaFree`` keeps its
``memory_management`` kind although it waits like a device sync).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from nsys_diag.model.api_names import (BLOCKING_COPY_RE, DEVICE_SYNC_RE, EVENT_SYNC_RE,
                                      LAUNCH_API_RE, MEM_API_RE, STREAM_SYNC_RE)

ROLES = ("other", "launch", "memory", "device_sync", "stream_sync", "event_sync", "sync_copy")
"""Every role, by code (the index)."""
OTHER, LAUNCH, MEMORY, DEVICE_SYNC, STREAM_SYNC, EVENT_SYNC, SYNC_COPY = range(len(ROLES))

_RULES = ((DEVICE_SYNC_RE, DEVICE_SYNC), (STREAM_SYNC_RE, STREAM_SYNC),
          (EVENT_SYNC_RE, EVENT_SYNC), (LAUNCH_API_RE, LAUNCH), (BLOCKING_COPY_RE, SYNC_COPY),
          (MEM_API_RE, MEMORY))
"""Role rules, first match wins (the families: ``model/api_names.py``)."""


def role_of(name: str) -> int:
    """The role code of one API name (first matching rule; ``OTHER`` otherwise)."""
    for rx, role in _RULES:
        if rx.search(name):
            return role
    return OTHER


def api_roles(names: pd.Series) -> np.ndarray:
    """Role code per API row: one rule test per distinct name, one take over the codes."""
    cat = names if isinstance(names.dtype, pd.CategoricalDtype) else names.astype("category")
    table = np.array([role_of(str(c)) for c in cat.cat.categories] + [OTHER], np.int8)
    codes = cat.cat.codes.to_numpy()
    return table[np.where(codes >= 0, codes, len(table) - 1)]


def is_memory_name(name: str) -> bool:
    """Whether ``name`` is a memory-management call (``cudaFree`` too, although it syncs)."""
    return MEM_API_RE.search(name) is not None


def call_kind(role: int) -> str:
    """Critical-path kind of a call's own time (see the module docstring)."""
    if role in (DEVICE_SYNC, STREAM_SYNC, EVENT_SYNC, SYNC_COPY):
        return "blocking_wait"
    if role == MEMORY:
        return "memory_management"
    return "launch"


def is_blocking(role: int) -> bool:
    """Whether calls of this role wait for GPU work."""
    return role in (DEVICE_SYNC, STREAM_SYNC, EVENT_SYNC, SYNC_COPY)
