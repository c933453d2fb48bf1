"""The discrete-event replay of one window (``model.WindowModel``): every call and GPU operation
gets a replayed start and end from its predecessors, in a dependency order: the captured one
(calls by end, operations by start) when every edge agrees with it, else Kahn's algorithm; a
what-if replays in its base replay's order (removing edges keeps an order valid).

Rules (times in ns; ``c`` = captured, ``r`` = replayed):

* call ``i``: ``start_r = end_r(thread predecessor) + captured CPU segment`` (a thread's first
  call in the window: after its anchor on the step's thread, or the window start, by the captured
  segment); a joined call (``WindowModel.h_join``) starts no earlier than ``end_r(join) +
  h_jgap``; without an awaited operation ``end_r = start_r + own``; with awaited operations ``T``
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
BY_THREAD, BY_PINNED, BY_TARGET, BY_JOIN = 0, 1, 2, 3  # calls
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
    order: np.ndarray | None = None
    """The dependency order the nodes were evaluated in (calls 0..nh-1, then operations): a
    what-if that only removes edges or changes durations replays in it (``replay_window``)."""


def _edges(m: WindowModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(what a call's start follows, edge sources, edge targets) of ``m``; node ids: calls
    0..nh-1, operations nh..nh+no-1."""
    nh = m.h_idx.size
    # an operation needs its launching call's *start* only: the edge comes from the call's
    # thread predecessor (a synchronous copy waits for its own operation without a cycle)
    before = np.where(m.h_pred >= 0, m.h_pred, m.h_anchor)  # what a call's start follows
    join = m.h_join
    launch_pred = np.where(m.o_launch >= 0, before[np.maximum(m.o_launch, 0)], -1)
    launch_join = np.where(m.o_launch >= 0, join[np.maximum(m.o_launch, 0)], -1)
    src = [before[before >= 0], m.t_op + nh, launch_pred[launch_pred >= 0],
           m.o_pred[m.o_pred >= 0] + nh, m.o_xs[m.o_xs >= 0] + nh, join[join >= 0],
           launch_join[launch_join >= 0]]
    dst = [np.flatnonzero(before >= 0), m.t_call, np.flatnonzero(launch_pred >= 0) + nh,
           np.flatnonzero(m.o_pred >= 0) + nh, np.flatnonzero(m.o_xs >= 0) + nh,
           np.flatnonzero(join >= 0), np.flatnonzero(launch_join >= 0) + nh]
    return before, np.concatenate(src).astype(np.int64), np.concatenate(dst).astype(np.int64)


def _valid(order: np.ndarray, src: np.ndarray, dst: np.ndarray, n: int) -> bool:
    """Whether ``order`` (a permutation of the ``n`` nodes) puts every edge's source first."""
    if order.size != n:
        return False
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    return bool((pos[src] < pos[dst]).all())


def _by_time(m: WindowModel) -> np.ndarray:
    """A candidate dependency order from the captured times: calls by their end, operations by
    their start (a call's predecessor ends before it starts, GPU work starts after its launch and
    its stream and cross-stream predecessors and before the end of the call waiting for it);
    ``_valid`` decides whether it holds."""
    nh = m.h_idx.size
    key = np.concatenate([m.h_end, m.o_start])
    kind = np.concatenate([np.ones(nh, np.int8), np.zeros(m.o_idx.size, np.int8)])
    return np.lexsort((np.arange(key.size), kind, key))


def _kahn(src: np.ndarray, dst: np.ndarray, n: int) -> np.ndarray:
    """A dependency order of the ``n`` nodes (Kahn's algorithm, first in first out); raises
    :class:`CyclicModel` on a cycle."""
    by_src = np.argsort(src, kind="stable")
    offsets = np.zeros(n + 1, np.int64)
    np.add.at(offsets, src + 1, 1)
    off, targets = np.cumsum(offsets).tolist(), dst[by_src].tolist()
    indeg = np.bincount(dst, minlength=n).tolist()
    queue = deque(i for i in range(n) if indeg[i] == 0)
    order: list[int] = []
    while queue:
        v = queue.popleft()
        order.append(v)
        for j in range(off[v], off[v + 1]):
            t = targets[j]
            indeg[t] -= 1
            if indeg[t] == 0:
                queue.append(t)
    if len(order) < n:
        raise CyclicModel(f"{n - len(order)} of {n} replayed operations wait on each other in a "
                          "cycle")
    return np.array(order, np.int64)


def replay_window(m: WindowModel, order: np.ndarray | None = None) -> Replayed:
    """Replay ``m`` (see the module docstring); raises :class:`CyclicModel` on a cycle.
    ``order``: a dependency order to try first (``Replayed.order`` of a replay whose edges are a
    superset of ``m``'s, as a what-if's are: removing edges keeps an order valid).

    Perf: the nodes are evaluated in one dependency order — the captured-time order when it is
    one (checked edge by edge in numpy), else Kahn's — instead of a queue walk per replay; every
    node's time is a function of its predecessors' only, so any dependency order gives the same
    times (ties between awaited operations go to the first listed, as before)."""
    nh, no = m.h_idx.size, m.o_idx.size
    n = nh + no
    before, s, d = _edges(m)
    if order is None or not _valid(order, s, d, n):
        order = _by_time(m)
        if not _valid(order, s, d, n):
            order = _kahn(s, d, n)
    return _evaluate(m, before, order)


def _evaluate(m: WindowModel, before_a: np.ndarray, order: np.ndarray) -> Replayed:
    """The replayed times of ``m``'s nodes, evaluated in the dependency ``order``."""
    nh, no = m.h_idx.size, m.o_idx.size
    # awaited-work lists per call (t_call sorted)
    t_lo = np.searchsorted(m.t_call, np.arange(nh), side="left").tolist()
    t_hi = np.searchsorted(m.t_call, np.arange(nh), side="right").tolist()
    t_op = m.t_op.tolist()
    h_before, h_gap, h_own = before_a.tolist(), m.h_gap.tolist(), m.h_own.tolist()
    os_c, o_dur = m.o_start.tolist(), m.o_dur.tolist()
    ws = m.start_ns
    o_pred, o_launch, o_xs = m.o_pred.tolist(), m.o_launch.tolist(), m.o_xs.tolist()
    o_delay = m.o_delay.tolist()
    h_join, h_jgap = m.h_join.tolist(), m.h_jgap.tolist()
    hs, he, hby, hbind = [0] * nh, [0] * nh, [BY_THREAD] * nh, [-1] * nh
    os_, oe, oby = [0] * no, [0] * no, [BY_LAUNCH] * no

    def call_start(c: int) -> tuple[int, int]:
        p = h_before[c]
        start, by = (he[p] + h_gap[c], BY_THREAD) if p >= 0 else (ws + h_gap[c], BY_PINNED)
        j = h_join[c]
        if j >= 0 and he[j] + h_jgap[c] > start:
            start, by = he[j] + h_jgap[c], BY_JOIN
        return start, by

    for v in order.tolist():
        if v < nh:
            start, hby[v] = call_start(v)
            end = start + h_own[v]
            lo, hi = t_lo[v], t_hi[v]
            if lo < hi:
                best, tr = t_op[lo], oe[t_op[lo]]
                for j in range(lo + 1, hi):
                    e = oe[t_op[j]]
                    if e > tr:
                        best, tr = t_op[j], e
                if tr > start:
                    hby[v], hbind[v] = BY_TARGET, best
                    end = tr + h_own[v]
            hs[v], he[v] = start, end
        else:
            k = v - nh
            ready, by = NO_TIME, BY_QUEUED
            c = o_launch[k]
            if c >= 0:
                ready, by = call_start(c)[0], BY_LAUNCH
            q = o_pred[k]
            if q >= 0 and oe[q] > ready:
                ready, by = oe[q], BY_STREAM
            q = o_xs[k]
            if q >= 0 and oe[q] > ready:
                ready, by = oe[q], BY_CROSS
            if c < 0:  # queued before the window: its captured start, or later
                start = max(os_c[k], ready)
                by = BY_QUEUED if start == os_c[k] else by
            else:
                start = ready + o_delay[k]
            os_[k], oe[k], oby[k] = start, start + o_dur[k], by
    return Replayed(np.array(hs, np.int64), np.array(he, np.int64), np.array(hby, np.int8),
                    np.array(hbind, np.int64), np.array(os_, np.int64), np.array(oe, np.int64),
                    np.array(oby, np.int8), order)
