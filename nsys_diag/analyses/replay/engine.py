"""The discrete-event replay of one window (``model.WindowModel``): every call and GPU operation
gets a replayed start and end from its predecessors, in dependency order (Kahn's algorithm).

Rules (times in ns; ``c`` = captured, ``r`` = replayed):

* call ``i``: ``start_r = end_r(thread predecessor) + captured CPU segment`` (a thread's first
  call in the window: after its anchor on the step's thread, or the window start, by the captured
  segment); without an awaited operation ``end_r = start_r + own``; with awaited operations ``T``
  (the latest of their ends) ``end_r = max(start_r, T_r) + own`` where ``own = end_c −
  clip(T_c, start_c, end_c)`` is the call's own time after the work it waited for (its return
  latency, or its whole duration when it did not wait);
* operation ``k``: ``start_r = max(launch start_r, stream predecessor end_r, cross-stream
  predecessor end_r) + captured delay``; pinned operations (queued before the window) keep their
  captured start (later only if their stream predecessor ends later); ``end_r = start_r +
  captured duration``.

With nothing changed the replay reproduces every captured time the model explains; where it
does not (a sync that returned before the work it is modelled to wait for, one stream's
operations overlapping) the replayed window comes out longer — that is the fidelity error.

Python loops run here only over the bounded replayed operations (≤ ``MAX_REPLAY_OPS`` per
window, ``analysis.py``); everything around them is vectorised.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from nsys_diag.analyses.replay.model import NO_TIME, WindowModel

# why a node got its time (for the critical-path walk)
BY_THREAD, BY_PINNED, BY_TARGET = 0, 1, 2  # calls
BY_LAUNCH, BY_STREAM, BY_CROSS, BY_QUEUED = 0, 1, 2, 3  # operations


class CyclicModel(ValueError):
    """The edges of a window form a cycle (times that contradict each other)."""


@dataclass(frozen=True)
class Replayed:
    """Replayed times of one window and, per node, which edge set it (``*_by``; for calls bound
    by awaited work, ``h_binding`` is the local operation whose end bound it)."""

    h_start: np.ndarray
    h_end: np.ndarray
    h_by: np.ndarray
    h_binding: np.ndarray
    o_start: np.ndarray
    o_end: np.ndarray
    o_by: np.ndarray


def _csr(src: np.ndarray, dst: np.ndarray, n: int) -> tuple[list[int], list[int]]:
    """Adjacency of ``src → dst`` edges as (offsets, targets) Python lists."""
    order = np.argsort(src, kind="stable")
    offsets = np.zeros(n + 1, np.int64)
    np.add.at(offsets, src + 1, 1)
    return np.cumsum(offsets).tolist(), dst[order].tolist()


def replay_window(m: WindowModel) -> Replayed:
    """Replay ``m`` (see the module docstring); raises :class:`CyclicModel` on a cycle."""
    nh, no = m.h_idx.size, m.o_idx.size
    # node ids: calls 0..nh-1, operations nh..nh+no-1
    # an operation needs its launching call's *start* only: the edge comes from the call's
    # thread predecessor (a synchronous copy waits for its own operation without a cycle)
    before = np.where(m.h_pred >= 0, m.h_pred, m.h_anchor)  # what a call's start follows
    launch_pred = np.where(m.o_launch >= 0, before[np.maximum(m.o_launch, 0)], -1)
    src = [before[before >= 0], m.t_op + nh, launch_pred[launch_pred >= 0],
           m.o_pred[m.o_pred >= 0] + nh, m.o_xs[m.o_xs >= 0] + nh]
    dst = [np.flatnonzero(before >= 0), m.t_call, np.flatnonzero(launch_pred >= 0) + nh,
           np.flatnonzero(m.o_pred >= 0) + nh, np.flatnonzero(m.o_xs >= 0) + nh]
    s, d = np.concatenate(src).astype(np.int64), np.concatenate(dst).astype(np.int64)
    n = nh + no
    indeg = np.bincount(d, minlength=n).tolist()
    offsets, targets = _csr(s, d, n)
    # awaited-work lists per call (t_call sorted)
    t_lo = np.searchsorted(m.t_call, np.arange(nh), side="left").tolist()
    t_hi = np.searchsorted(m.t_call, np.arange(nh), side="right").tolist()
    t_op = m.t_op.tolist()
    h_before, h_gap, h_own = before.tolist(), m.h_gap.tolist(), m.h_own.tolist()
    os_c, o_dur = m.o_start.tolist(), m.o_dur.tolist()
    ws = m.start_ns
    o_pred, o_launch, o_xs = m.o_pred.tolist(), m.o_launch.tolist(), m.o_xs.tolist()
    o_delay = m.o_delay.tolist()
    hs, he, hby, hbind = [0] * nh, [0] * nh, [BY_THREAD] * nh, [-1] * nh
    os_, oe, oby = [0] * no, [0] * no, [BY_LAUNCH] * no

    def call_start(v: int) -> int:  # from the thread predecessor or anchor (its end is known)
        p = h_before[v]
        return (he[p] if p >= 0 else ws) + h_gap[v]

    queue = deque(i for i in range(n) if indeg[i] == 0)
    done = 0
    while queue:
        v = queue.popleft()
        done += 1
        if v < nh:
            start = call_start(v)
            if h_before[v] < 0:
                hby[v] = BY_PINNED
            lo, hi = t_lo[v], t_hi[v]
            end = start + h_own[v]
            if lo < hi:
                best = max(range(lo, hi), key=lambda j: oe[t_op[j]])
                tr = oe[t_op[best]]
                if tr > start:
                    hby[v], hbind[v] = BY_TARGET, t_op[best]
                    end = tr + h_own[v]
            hs[v], he[v] = start, end
        else:
            k = v - nh
            ready, by = NO_TIME, BY_QUEUED
            if o_launch[k] >= 0:
                ready, by = call_start(o_launch[k]), BY_LAUNCH
            if o_pred[k] >= 0 and oe[o_pred[k]] > ready:
                ready, by = oe[o_pred[k]], BY_STREAM
            if o_xs[k] >= 0 and oe[o_xs[k]] > ready:
                ready, by = oe[o_xs[k]], BY_CROSS
            if o_launch[k] < 0:  # queued before the window: its captured start, or later
                start = max(os_c[k], ready)
                by = BY_QUEUED if start == os_c[k] else by
            else:
                start = ready + o_delay[k]
            os_[k], oe[k], oby[k] = start, start + o_dur[k], by
        for j in range(offsets[v], offsets[v + 1]):
            t = targets[j]
            indeg[t] -= 1
            if indeg[t] == 0:
                queue.append(t)
    if done < n:
        raise CyclicModel(f"{n - done} of {n} replayed operations wait on each other in a cycle")
    return Replayed(np.array(hs, np.int64), np.array(he, np.int64), np.array(hby, np.int8),
                    np.array(hbind, np.int64), np.array(os_, np.int64), np.array(oe, np.int64),
                    np.array(oby, np.int8))
