"""What the host was doing in an idle gap (the top-gap table's "CPU was", ``Gap.cpu_activity``):
the CUDA call name whose calls overlap the gap longest in sum, the launching threads' file or
network calls of one name when they cover more, or — when no call covers half of the gap — the
innermost range of a launching thread that covers more (``evidence.launching_ranges``). Times
in ns; each function looks at the slice of rows that can overlap the gap (rows sorted by start,
the longest row's duration known), not at every row.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from nsys_diag.analyses.base import is_available
from nsys_diag.analyses.gaps.rows import EvidenceRows
from nsys_diag.analyses.steps.detection import normalize_name
from nsys_diag.analyses.timeline import intervals as iv


NO_API_CALL = "no CUDA API call (CPU work outside CUDA)"


def cpu_overlap(api: pd.DataFrame):
    """``overlap(gs, ge) -> (ns, text, calls)``: the CUDA call name of the process whose calls
    overlap the gap [gs, ge) longest in sum — their overlap (ns; capped at the gap: calls of
    several threads may overlap), ``in <name> ×N for <share> of the gap (+M other calls)`` (no
    ``×`` for one call) and how many calls overlap the gap. One long wait is named by itself;
    838 short calls of one name that cover more of the gap than any single call are named
    together, not by the longest of them.

    perf (bench): with calls sorted by start, a call overlapping a gap started at most the longest
    call's duration before it, so a gap looks at that slice of the 2M calls, not at all of them.
    """
    if not len(api):
        return lambda gs, ge: (0, NO_API_CALL, 0)
    s = api["start_ns"].to_numpy(np.int64)
    e = api["end_ns"].to_numpy(np.int64)
    longest = longest_call_ns(s, e) if iv.is_sorted(s) else None
    names = api["name"]
    cat = names.array if isinstance(names.dtype, pd.CategoricalDtype) else \
        pd.Categorical(names.astype(str))
    codes = np.asarray(cat.codes, np.int64)

    def overlap(gs: int, ge: int) -> tuple[int, str, int]:
        a, b = 0, s.size
        if longest is not None:
            a = int(np.searchsorted(s, gs - longest, side="left"))  # earlier calls end by gs
            b = int(np.searchsorted(s, ge, side="left"))  # rows from b start at/after ge
        ov = np.minimum(e[a:b], ge) - np.maximum(s[a:b], gs)
        if ov.size == 0 or ov.max() <= 0:
            return 0, NO_API_CALL, 0
        k, ns, n, calls = _top_label(codes[a:b], ov, gs, ge)
        more = f" (+{calls - n} other calls)" if calls > n else ""
        return ns, _named(cat.categories[k], n, ns, gs, ge) + more, calls

    return overlap


def _top_label(label: np.ndarray, ov: np.ndarray, gs: int, ge: int) -> tuple[int, int, int, int]:
    """Of the rows with overlaps ``ov`` (ns) with the gap [gs, ge) and label codes ``label``: (the
    label whose rows overlap it longest in sum, that sum capped at the gap — rows of several
    threads may overlap each other —, its rows that overlap, all rows that overlap)."""
    hit = ov > 0
    codes = label[hit]
    by_label = np.bincount(np.maximum(codes, 0), weights=ov[hit])
    k = int(np.argmax(by_label))
    return k, min(int(by_label[k]), ge - gs), int((codes == k).sum()), int(codes.size)


def _named(name: str, n: int, ns: int, gs: int, ge: int) -> str:
    """``in <name> ×N for <share> of the gap`` (no ``×`` for one call)."""
    return f"in {name}{f' ×{n}' if n > 1 else ''} for {share_text(ns, gs, ge)} of the gap"


def share_text(ns: int, gs: int, ge: int) -> str:
    frac = ns / max(ge - gs, 1)
    return f"{frac:.0%}" if frac >= 0.01 else "<1%"


def io_activity(io: EvidenceRows, gs: int, ge: int) -> tuple[int, str, int, int]:
    """The OS-runtime file/network call name (``host_io`` evidence: launching threads) whose calls
    overlap the gap [gs, ge) longest in sum: (ns, ``in <name> ×N for <share> of the gap``, the
    I/O calls of other names in the gap, N); (0, '', 0, 0) when none overlaps. The calls of one
    thread do not overlap each other, so the sum is capped at the gap only for calls on several
    threads."""
    a, ov = io.overlaps(gs, ge)
    if not (ov > 0).any():
        return 0, "", 0, 0
    k, ns, n, calls = _top_label(io.label[a:a + ov.size], ov, gs, ge)
    return ns, _named(io.labels[k], n, ns, gs, ge), calls - n, n


def range_activity(ranges: EvidenceRows, gs: int, ge: int, phases) -> tuple[int, str]:
    """The innermost range of the launching threads (``evidence.launching_ranges``: nested NVTX
    ranges, a PyTorch profiler trace's host operators) that covers at least half of the gap
    [gs, ge): (its overlap in ns, ``in <range> (NVTX) for <share> of the gap``, ``(cpu_op)`` for
    an operator); (0, '') when none does. A range is named only inside the step phase that
    covers the gap (the table's phase column names the phase; the ranges around it say less)."""
    a, ov = ranges.overlaps(gs, ge)
    rs, re_ = ranges.starts[a:a + ov.size], ranges.ends[a:a + ov.size]
    ok = 2 * ov >= ge - gs
    if is_available(phases) and phases.inst_starts_ns.size and ok.any():
        ps, pe = phases.inst_starts_ns, phases.inst_ends_ns
        covering = 2 * (np.minimum(pe, ge) - np.maximum(ps, gs)) >= ge - gs
        if covering.any():  # only ranges nested in the phase instance: shorter than it
            ok &= (re_ - rs) < int((pe - ps)[covering].min())
    if not ok.any():
        return 0, ""
    hit = np.flatnonzero(ok)
    j = int(hit[np.argmin((re_ - rs)[hit])])  # the first of equal lengths
    name = normalize_name(ranges.labels[int(ranges.label[a + j])])
    return int(ov[j]), f"in {name} for {share_text(int(ov[j]), gs, ge)} of the gap"


def gap_activity(cpu, io: EvidenceRows, gs: int, ge: int, nvtx: tuple[int, str] = (0, "")) -> str:
    """What the host was doing in a gap: the CUDA calls of one name that cover most of it
    (``cpu_overlap``), unless the launching threads' file/network calls of one name cover more
    (a gap the host spends in 800 short ``pwrite64`` calls is named by them, not by a 10 µs
    launch). When neither covers half of the gap, the innermost range that covers more
    (``range_activity``, ``nvtx``) names it: a gap spent compiling, in no CUDA call, is named
    by its range."""
    api_ns, api_text, api_calls = cpu(gs, ge)
    io_ns, io_text, io_calls, io_own = io_activity(io, gs, ge)
    call_ns = max(api_ns, io_ns)
    range_ns, range_text = nvtx
    if 2 * call_ns < ge - gs and range_ns > call_ns:
        calls = api_calls + io_calls + io_own
        return range_text + (f" (+{calls} calls)" if calls > 1 else " (+1 call)" if calls else "")
    if io_ns <= api_ns:
        return api_text
    others = api_calls + io_calls
    return io_text + (f" (+{others} other calls)" if others > 0 else "")


def longest_call_ns(s: np.ndarray, e: np.ndarray, chunk: int = 1 << 18) -> int:
    """max(e - s) (0 when empty), in chunks through one small buffer (perf, bench: no 2M-row
    temporary)."""
    buf = np.empty(min(chunk, s.size), np.int64)
    longest = 0
    for i in range(0, s.size, chunk):  # a handful of chunks
        n = min(chunk, s.size - i)
        np.subtract(e[i:i + n], s[i:i + n], out=buf[:n])
        longest = max(longest, int(buf[:n].max()))
    return longest
