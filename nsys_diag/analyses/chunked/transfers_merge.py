"""Transfers (``analyze_transfers``) of a process from its chunks: ``partial_transfers`` per
chunk, ``merge_transfers`` at the end — the same ``TransfersResult`` as the in-memory suite.

Copies and memsets are the rows overlapping the analysed window, with full durations, as in the
suite. Counts, bytes, durations and the pageable/synchronous flags are sums over the rows a chunk
owns (start in ``[lo, hi)``). The busy time of a kind is the union of its copy intervals per
device: each chunk measures that union clipped to ``[lo, hi)`` over every copy it sees
(they overlap ``[lo, hi]``), so the chunks' lengths add up to the whole union exactly. A part is
O(copy kinds × devices).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.analyses.chunked.context import ChunkInputs
from nsys_diag.analyses.kernels.table import filter_window
from nsys_diag.analyses.transfers import (KINDS, KindStats, TransfersResult, gpu_links,
                                          copy_flag_counts, kind_expectation, link_assumptions,
                                          report_kinds, transfers_result)
from nsys_diag.model.vocabulary import HINT_CAPTURE_CUDA_ACTIVITY


@dataclass(frozen=True)
class KindSums:
    """One copy kind in one chunk: owned rows, copies, bytes, Σ durations (ns), the busy union
    clipped to the chunk (ns) and the devices of its owned rows."""

    rows: int
    count: int
    bytes: int
    time_ns: int
    busy_ns: int
    devices: tuple[int, ...]


@dataclass(frozen=True)
class TransfersPart:
    """One chunk's transfer sums: per copy kind, the flag counts and the owned row counts."""

    by_kind: dict[str, KindSums]
    flags: dict[str, int]
    memcpy_rows: int
    memset_rows: int


def _kind_col(frame: pd.DataFrame) -> np.ndarray:
    return frame["copy_kind"].astype(str).to_numpy() if len(frame) else np.array([], dtype=object)


def _clipped_union(seen: pd.DataFrame, lo: int, hi: int) -> int:
    """Σ over devices of |∪ intervals ∩ [lo, hi)| (ns)."""
    if not len(seen):
        return 0
    dev = seen["device_id"].to_numpy()
    s = seen["start_ns"].to_numpy(np.int64)
    e = seen["end_ns"].to_numpy(np.int64)
    total = 0
    for d in np.unique(dev):  # a handful of devices
        total += iv.total_length(*iv.clip(s[dev == d], e[dev == d], lo, hi))
    return int(total)


def partial_transfers(ci: ChunkInputs) -> TransfersPart:
    """The chunk's transfer sums (see the module docstring)."""
    wt = (ci.window.start_ns, ci.window.end_ns)
    mc = filter_window(ci.owned("memcpy"), wt)
    ms = filter_window(ci.owned("memset"), wt)
    seen = filter_window(ci.frames["memcpy"], wt)
    own_kind, seen_kind = _kind_col(mc), _kind_col(seen)
    by_kind = {}
    for kind in dict.fromkeys(own_kind.tolist() + seen_kind.tolist()):  # a handful of kinds
        rows = mc.loc[own_kind == kind] if len(mc) else mc
        dur = rows["end_ns"].to_numpy(np.int64) - rows["start_ns"].to_numpy(np.int64)
        by_kind[str(kind)] = KindSums(
            rows=int(len(rows)),
            count=int(np.maximum(rows["copy_count"].to_numpy(np.int64), 1).sum()),
            bytes=int(rows["bytes"].to_numpy(np.int64).sum()),
            time_ns=int(dur.sum()),
            busy_ns=_clipped_union(seen.loc[seen_kind == kind], ci.lo_ns, ci.hi_ns),
            devices=tuple(sorted({int(d) for d in np.unique(rows["device_id"].to_numpy())})))
    return TransfersPart(by_kind, copy_flag_counts(mc, ms), int(len(mc)), int(len(ms)))


def merge_transfers(parts: list[TransfersPart], *, gpus: pd.DataFrame | None
                    ) -> TransfersResult:
    """The process's ``TransfersResult``; ``gpus``: the bundle's GPU table (``bundle.gpus``)."""
    if not sum(p.memcpy_rows + p.memset_rows for p in parts):
        return TransfersResult(available=False, reason="no memcpy or memset activity",
                               hint=HINT_CAPTURE_CUDA_ACTIVITY)
    links = gpu_links(gpus)
    present = [k for p in parts for k, v in p.by_kind.items() if v.rows]
    by_kind: dict[str, KindStats] = {}
    for kind in report_kinds(present):  # a handful of kinds
        sums = [p.by_kind[kind] for p in parts if kind in p.by_kind]
        rows = sum(s.rows for s in sums)
        devs = np.array(sorted({d for s in sums for d in s.devices}), np.int64)
        expected, link = kind_expectation(kind, devs, links, gpus)
        if rows == 0 and kind in KINDS:
            by_kind[kind] = KindStats(kind, 0, 0, 0, 0, 0, expected, link)
            continue
        by_kind[kind] = KindStats(
            kind=kind, rows=rows, count=sum(s.count for s in sums),
            bytes=sum(s.bytes for s in sums), time_ns=sum(s.time_ns for s in sums),
            busy_ns=sum(s.busy_ns for s in sums), expected_gb_per_s=expected, link=link)
    flags = {k: sum(p.flags[k] for p in parts) for k in parts[0].flags}
    return transfers_result(by_kind, link_assumptions(links), flags)
