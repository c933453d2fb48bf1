"""The cross-thread edges of the replay that the export does not record, inferred from the
program's structure: *anchors* (the step thread starts another thread's burst of calls) and
*joins* (the step thread waits for such a burst to end — PyTorch's ``loss.backward()`` for the
autograd engine's thread). Both work on one window's local call arrays, sorted by thread then
start (``model.window_model``)."""
from __future__ import annotations

import numpy as np

from nsys_diag.analyses.replay.roles import LAUNCH


def anchors(h_start, h_end, h_thread, h_pred, step_thread: int, bursts: bool = False
             ) -> np.ndarray:
    """Per call: for the first call of a thread other than the step's, the step thread's last
    call that ended before it starts (the step thread drives the others: a cross-thread cause the
    export does not record), else -1. ``bursts``: every call of another thread that starts a
    burst — the step thread ended a call after its thread predecessor ended and before it
    started — is anchored so too (a window with no steps: the autograd thread's backward is
    driven by each iteration of the step thread, not by its own previous burst)."""
    out = np.full(h_start.size, -1, np.int64)
    mine = np.flatnonzero(h_thread == step_thread)
    other = (h_thread != step_thread) & (h_pred < 0 if not bursts else True)
    firsts = np.flatnonzero(other)
    if not mine.size or not firsts.size:
        return out
    by_end = mine[np.argsort(h_end[mine], kind="stable")]
    j = np.searchsorted(h_end[by_end], h_start[firsts], side="right") - 1
    ok = j >= 0
    if bursts:
        pred = h_pred[firsts]
        ok &= (pred < 0) | (h_end[by_end[np.maximum(j, 0)]] > h_end[np.maximum(pred, 0)])
    out[firsts[ok]] = by_end[j[ok]]
    return out


def joins(h_start, h_end, h_thread, h_role, anchor, step_thread: int,
           waits: tuple[np.ndarray, np.ndarray] | None) -> tuple[np.ndarray, np.ndarray]:
    """Per call (local, sorted by thread then start): the other thread's call whose end it
    resumed after (-1: none), and the captured start of that thread's burst (the fork; -1).

    The export records no cross-thread wait, so it is inferred where the program's structure
    makes it certain: another thread's burst (an anchored call — ``anchors`` — up to its
    thread's next anchored call) that starts in a ``waits`` span of the step thread, after the
    step-thread call ``p`` it is anchored on, and ends inside the same span before the step
    thread's next call ``v``: ``v`` waited for the burst's last call. When several bursts do so
    the latest-ending one is the join and the earliest start the fork. Only a burst that enqueues
    GPU work (a call of role ``launch``, ``roles.py``) is such a wait: the autograd engine's
    thread launches the backward's kernels, while a thread whose burst launches nothing — a
    DataLoader's pin-memory thread allocating pinned buffers, a logger — runs beside the step
    thread, which does not wait for it."""
    n = h_start.size
    join, fork = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    if waits is None or not len(waits[0]) or step_thread < 0:
        return join, fork
    w_s, w_e = waits
    anchored = np.flatnonzero(anchor >= 0)
    launches = h_role == LAUNCH
    # a burst: its anchored call up to the next anchored call of its thread, or the thread's end
    thread_end = np.searchsorted(h_thread, h_thread[anchored], side="right")
    stops = np.minimum(np.append(anchored[1:], n), thread_end)
    for a, stop in zip(anchored.tolist(), stops.tolist()):  # bounded: one per burst
        p = int(anchor[a])
        v = p + 1
        if v >= n or h_thread[v] != step_thread:
            continue
        k = int(np.searchsorted(w_s, h_start[a], side="right")) - 1
        if k < 0 or h_start[a] >= w_e[k]:
            continue
        if not launches[a:stop].any():
            continue
        u = a + int(np.argmax(h_end[a:stop]))
        if h_end[u] > min(h_start[v], w_e[k]):
            continue
        if join[v] < 0 or h_end[u] > h_end[join[v]]:
            join[v] = u
        fork[v] = h_start[a] if fork[v] < 0 else min(fork[v], h_start[a])
    return join, fork
