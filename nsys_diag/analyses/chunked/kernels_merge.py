"""The kernel table (``analyze_kernels``) of a process from its chunks: ``partial_kernels`` per
chunk, ``merge_kernels`` at the end — the same ``KernelsResult`` the in-memory suite computes
(``suite._kernel_table``: the kernels **overlapping** the analysed window, full durations).

Each kernel is counted once, by the chunk that owns it (start in ``[lo, hi)``, ``ChunkInputs.owned``)
and only if it overlaps the process's window, as ``suite._in_window`` keeps it.

Memory: exact per-name medians (``median_ns``) need every duration, so a part keeps its owned
kernels as two compact arrays — an int32 code into the part's own name list and the duration
(uint32 when every kernel of the chunk is shorter than 4.29 s, else int64: 8 bytes per kernel,
≈ 8 MB per million kernels) — **the one O(kernels) state of streaming** (the steps' kernel
counts, ``chunked/globals.py``, are O(steps)). Everything else in a part is O(names).
``merge_kernels`` unifies the name lists (in chunk order, so a name's first appearance — and
the short name it takes from its first row — is the in-memory one when rows are in time order,
as nsys writes them) and runs the in-memory ``group_stats`` / ``table_from_groups`` on the
concatenated arrays.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys_diag.analyses.arrays import unique_ints
from nsys_diag.analyses.chunked.context import ChunkInputs
from nsys_diag.analyses.kernels.table import (UNNAMED, KernelsResult, empty_name_table, group_stats,
                                        kernels_result, table_from_groups)
from nsys_diag.model.thresholds import Thresholds


@dataclass(frozen=True)
class KernelsPart:
    """One chunk's owned window kernels: ``names`` (None for a missing name) and ``shorts`` (the
    short name of each name's first row) per local code; ``codes`` (int32) and ``dur_ns``
    (uint32 when every duration fits, else int64) per kernel, in row order; the devices."""

    names: tuple[str | None, ...]
    shorts: tuple[str, ...]
    codes: np.ndarray
    dur_ns: np.ndarray
    devices: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        """Bytes held by the per-kernel arrays (8 per kernel; 12 when a kernel runs ≥ 4.29 s)."""
        return int(self.codes.nbytes + self.dur_ns.nbytes)


def window_kernels(ci: ChunkInputs, *, owned_only: bool) -> pd.DataFrame:
    """The chunk's kernels that overlap the process's window (``suite._in_window``): the owned
    ones (``owned_only``: each kernel once over all chunks) or every one the chunk sees."""
    k = ci.owned("kernels") if owned_only else ci.frames["kernels"]
    if not len(k):
        return k
    s = k["start_ns"].to_numpy(np.int64)
    e = k["end_ns"].to_numpy(np.int64)
    keep = (s < ci.window.end_ns) & (e > ci.window.start_ns)
    return k if keep.all() else k.loc[keep].reset_index(drop=True)


def _categorical(col: pd.Series) -> pd.Series:
    return col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype("category")


U32_MAX = int(np.iinfo(np.uint32).max)
"""Durations up to this many ns (4.29 s) are kept as ``uint32`` (8 bytes per kernel in all)."""


def partial_kernels(ci: ChunkInputs) -> KernelsPart:
    """The chunk's share of the kernel table (see the module docstring)."""
    k = window_kernels(ci, owned_only=True)
    if not len(k):
        return KernelsPart((), (), np.zeros(0, np.int32), np.zeros(0, np.int64), ())
    names = _categorical(k["name"])
    shorts = _categorical(k["short_name"])
    raw = names.cat.codes.to_numpy().astype(np.int64)
    # local codes: the categories present, plus one code for a missing name
    present, first, local = np.unique(raw, return_index=True, return_inverse=True)
    cats = np.asarray(names.cat.categories, dtype=object)
    s_codes = shorts.cat.codes.to_numpy()[first]
    s_cats = np.asarray(shorts.cat.categories, dtype=object)
    name_list = tuple(None if c < 0 else str(cats[c]) for c in present.tolist())
    short_list = tuple("" if c < 0 else str(s_cats[c]) for c in s_codes.tolist())
    dur = k["end_ns"].to_numpy(np.int64) - k["start_ns"].to_numpy(np.int64)
    if dur.size and 0 <= int(dur.min()) and int(dur.max()) <= U32_MAX:
        dur = dur.astype(np.uint32)  # kept across chunks: 4 bytes when every kernel < 4.29 s
    devices = tuple(sorted(unique_ints(k["device_id"].to_numpy())))
    return KernelsPart(name_list, short_list, local.astype(np.int32).reshape(-1), dur, devices)


def unify_names(parts: list[KernelsPart]) -> tuple[tuple[str | None, ...], tuple[str, ...],
                                                    np.ndarray, np.ndarray]:
    """(global names, their short names, global codes, durations) over the parts, in part order:
    a name's global code and short name come from the first part holding it."""
    index: dict[str | None, int] = {}
    shorts: list[str] = []
    codes, durs = [], []
    for p in parts:  # one per chunk
        remap = np.empty(len(p.names), np.int64)
        for i, (n, s) in enumerate(zip(p.names, p.shorts)):  # O(names) per chunk
            if n not in index:
                index[n] = len(index)
                shorts.append(s)
            remap[i] = index[n]
        if p.codes.size:
            codes.append(remap.astype(np.int32)[p.codes])
            durs.append(p.dur_ns.astype(np.int64))
    gcodes = np.concatenate(codes) if codes else np.zeros(0, np.int32)
    dur = np.concatenate(durs) if durs else np.zeros(0, np.int64)
    return tuple(index), tuple(shorts), gcodes, dur


def merge_kernels(parts: list[KernelsPart], *, th: Thresholds, max_rows: int = 200
                  ) -> KernelsResult:
    """The process's ``KernelsResult`` from its chunks' parts (in chunk order); ``max_rows`` is
    ``AnalyzeOptions.max_rows`` as the suite passes it."""
    names, shorts, codes, dur = unify_names(parts)
    devices = tuple(sorted({d for p in parts for d in p.devices}))
    if not dur.size:
        return kernels_result(empty_name_table(), dur, (), th=th, max_rows=max_rows)
    g = group_stats(codes, dur)
    name_arr = np.array([UNNAMED if n is None else n for n in names], dtype=object)
    short_arr = np.array(shorts, dtype=object)
    table = table_from_groups(g, name_arr[g["code"]], short_arr[g["code"]])
    return kernels_result(table, dur, devices, th=th, max_rows=max_rows)
