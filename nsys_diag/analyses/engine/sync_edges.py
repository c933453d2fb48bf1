"""The few rows beyond a chunk that the ``host_cpu`` gap cause needs at its edges
(``sync_edge_rows``).

Why (``analyses/gaps/causes.py``, cause 10): a gap is ``host_cpu`` time when it follows a blocking
call — the host's own time until the start of the process's *next* call that enqueues GPU work.
That interval is sequence-dependent and may run across a chunk edge even though no gap does:
a blocking call that does not drain every queue (``cudaEventSynchronize`` on an event recorded
mid-stream, ``cudaStreamSynchronize`` while another stream or device still computes) returns
while the GPU keeps working across the edge, the host then does host work, and the GPU runs dry
in the next chunk. ``cuts.chunk_frames`` rows (calls overlapping the chunk, launches of its GPU
work) do not hold that call, nor, at the chunk's end, the next enqueue call when it starts after
``hi``. With the three rows below a chunk computes every such interval that reaches into
it exactly as the whole export does (``tests/analyses/gaps/test_gaps_spans.py``):

a. the first enqueue call (``gap_evidence.ENQUEUE_API_RE``) starting after ``hi`` — the end of
   every interval that starts inside the chunk and runs past ``hi`` (when it lies beyond the
   chunk's read margin, ``gap_evidence.sync_rows`` runs such an interval to the chunk's end —
   the same gap time);
b. the blocking calls (``SYNC_API_RE`` API rows, blocking CUPTI synchronization records) that
   end in ``(E, lo]``, ``E`` the start of the last enqueue call at or before ``lo`` — exactly the
   calls whose interval reaches ``lo``;
c. that last enqueue call at ``E`` — it ends the intervals of the earlier blocking calls the
   chunk may hold (their intervals end at or before ``lo``, as in the whole export).

SQL equivalent for the window read: with the enqueue/blocking name ids resolved once, (a) is
``… WHERE nameId IN enqueue AND start > hi ORDER BY start LIMIT 1``, (c) the same with
``start <= lo ORDER BY start DESC LIMIT 1``, (b) ``… WHERE nameId IN blocking AND end > E AND
end <= lo`` (and the synchronization table's blocking rows in that span). A handful of rows per
edge. Times in session ns.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline.arrays import take_rows
from nsys_diag.analyses.engine.context import ChunkInputs
from nsys_diag.analyses.engine.cuts import FIRST_LO, LAST_HI
from nsys_diag.analyses.gaps.rows import NON_BLOCKING_SYNC_RE, ApiNames, name_mask


def _blocking_records(sync: pd.DataFrame) -> np.ndarray:
    """CUPTI synchronization records that block the host (as ``gap_evidence.sync_rows``)."""
    if not len(sync):
        return np.zeros(0, bool)
    return ~name_mask(sync["launch_api"], NON_BLOCKING_SYNC_RE) & \
        (sync["sync_kind"].astype(str) != "stream_wait").to_numpy()


def sync_edge_rows(frames: dict[str, pd.DataFrame], lo_ns: int, hi_ns: int, *,
                   names: ApiNames | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Masks over ``frames["api"]`` and ``frames["sync"]`` (the process's whole frames) of the
    edge rows (a)–(c) of the chunk ``[lo_ns, hi_ns)`` (module docstring); ``names``: the
    ``ApiNames`` of ``frames["api"]`` when already computed."""
    api, sync = frames["api"], frames["sync"]
    extra_api, extra_sync = np.zeros(len(api), bool), np.zeros(len(sync), bool)
    if not len(api):
        return extra_api, extra_sync
    names = names or ApiNames(api)
    enq = names.mask("enqueue")
    s = api["start_ns"].to_numpy(np.int64)
    if hi_ns < LAST_HI:  # (a) the first enqueue after hi
        after = enq & (s > hi_ns)
        if after.any():
            extra_api |= after & (s == s[after].min())
    if lo_ns > FIRST_LO:
        before = enq & (s <= lo_ns)
        last = int(s[before].max()) if before.any() else FIRST_LO
        extra_api |= before & (s == last)  # (c)
        e = api["end_ns"].to_numpy(np.int64)
        extra_api |= names.mask("sync") & (e > last) & (e <= lo_ns)  # (b)
        if len(sync):
            se = sync["end_ns"].to_numpy(np.int64)
            extra_sync = _blocking_records(sync) & (se > last) & (se <= lo_ns)
    return extra_api, extra_sync


def _add_rows(chunk: pd.DataFrame, add: pd.DataFrame) -> pd.DataFrame:
    """``chunk`` plus the rows ``add``; in start order when ``chunk`` is (a stable sort keeps the
    chunk's own rows in their order), else appended."""
    if not len(add):
        return chunk
    out = pd.concat([chunk, add], ignore_index=True)
    s = chunk["start_ns"].to_numpy(np.int64)
    if s.size < 2 or bool((s[1:] >= s[:-1]).all()):
        # perf: the few added rows go in after the chunk's rows of the same start (what a stable
        # sort by start gives), placed by binary search instead of sorting millions of rows
        add_s = add["start_ns"].to_numpy(np.int64)
        order = np.argsort(add_s, kind="stable")
        pos = np.searchsorted(s, add_s[order], side="right")
        idx = np.insert(np.arange(s.size), pos, s.size + order)
        out = out.take(idx).reset_index(drop=True)
    return out


def _not_in(add: pd.DataFrame, mine: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``add`` that ``mine`` does not hold (same start, end and correlation id)."""
    if not len(add) or not len(mine):
        return add
    keys = ["start_ns", "end_ns"] + (["correlation_id"] if "correlation_id" in add else [])
    # perf: only the chunk's rows that start where an added row starts can be the same row
    near = np.isin(mine["start_ns"].to_numpy(np.int64), add["start_ns"].to_numpy(np.int64))
    held = pd.MultiIndex.from_frame(add[keys]).isin(
        pd.MultiIndex.from_frame(mine.loc[near, keys]))
    return add.loc[~np.asarray(held, bool)]


def with_sync_edges(ci: ChunkInputs, frames: dict[str, pd.DataFrame], *,
                    names: ApiNames | None = None) -> ChunkInputs:
    """``ci`` with the edge rows of its chunk added to its ``api`` and ``sync`` frames
    (``frames``: the process's whole frames; ``names``: ``ApiNames`` of their API rows, when
    already computed). Rows the chunk already holds are not added twice."""
    extra_api, extra_sync = sync_edge_rows(frames, ci.lo_ns, ci.hi_ns, names=names)
    out = dict(ci.frames)
    for name, extra in (("api", extra_api), ("sync", extra_sync)):
        if extra.any():
            add = _not_in(take_rows(frames[name], extra), ci.frames[name])
            out[name] = _add_rows(ci.frames[name], add)
    return replace(ci, frames=out)
