"""The critical path of a replayed window: walk backwards from its end and attribute every
nanosecond once, to what the window waited on at that moment.

The walk (times are replayed ns; segments before the window start are cut off):

* at a call that waited for GPU work (its end was set by an awaited operation): the call's time
  after that operation ended is ``blocking_wait`` (the call's name), then the walk follows the
  operation; a call that did not wait is its own kind (``roles.call_kind``: ``launch``,
  ``blocking_wait``, ``memory_management``), then the walk goes to the CPU segment before it;
* a CPU segment between two calls of a thread is ``host_cpu`` in the NVTX phase it ran in
  (``host_io`` for the part an OS-runtime file or network call covers, when ``-t osrt`` rows are
  given);
* an operation is ``gpu_compute`` (named by its kernel class), ``transfer`` (copy kind) or
  ``communication`` (collective); its captured start delay is ``launch`` (≤ 20 µs: launch
  latency, inter-kernel gap) or ``unexplained``; then the walk follows the edge that set its
  start: the launching call's thread before the call, the stream predecessor or the cross-stream
  one;
* a call that resumed after another thread's call (``WindowModel.h_join``: the step thread in
  ``loss.backward()`` waiting for the autograd engine's thread) follows that call, its time after
  the call's end ``host_cpu``;
* a thread's first call in the window, or work queued before the window, has no modelled cause:
  the walk continues on the step's thread (the thread that holds the step range) at that time.

Every segment ends where the previous one began, so the rows add up to the replayed window.
A host segment on the path (``host_cpu``, ``host_io``) also counts how much of it the process's GPU
work (kernels, copies, collectives, replayed) was running: stored under ``(BUSY + kind, name,
phase)`` beside the row's own key, it tells a host that paces an idle GPU from one that merely
keeps pace with a busy GPU (``CriticalPathRow.gpu_busy_share``).
The segments of the wait kinds (``vocabulary.CRITICAL_PATH_WAIT_KINDS``) are kept with their
replayed times too (``_Walk.segments``, consecutive ones of one kind and name merged): the
replayed baseline reproduces the capture, so they are capture times.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from types import SimpleNamespace

import numpy as np

from nsys_diag.analyses.replay import engine as E
from nsys_diag.analyses.replay import roles as R
from nsys_diag.analyses.replay.model import (EXPLAINED_DELAY_NS, NO_TIME, OP_KINDS,
                                             ProcessTimeline, WindowModel, unlaunched_migrations)
from nsys_diag.analyses.replay.phases import phase_at, phase_split
from nsys_diag.analyses.timeline.intervals import merge_intervals
from nsys_diag.model.vocabulary import CRITICAL_PATH_WAIT_KINDS

Key = tuple[str, str, str]
"""(kind, name, phase) of a critical-path row."""
HostIo = tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]
"""OS-runtime I/O calls of the process: (starts, ends, global_tid, names), captured ns."""
Segment = tuple[int, int, str, str]
"""(start_ns, end_ns, kind, name) of a critical-path wait, replayed ns."""
_WAITS = frozenset(CRITICAL_PATH_WAIT_KINDS)
HOST_KINDS = frozenset(("host_cpu", "host_io"))
"""Path kinds of host time without a CUDA call: their GPU-busy overlap is kept (``BUSY``)."""
BUSY = "gpu_busy_in:"
"""Prefix of the key kind that holds a host row's GPU-busy ns (``BUSY + kind``)."""


def _lists(obj, names: tuple[str, ...]) -> SimpleNamespace:
    return SimpleNamespace(**{n: getattr(obj, n).tolist() for n in names})


class _Walk:
    """State of one backward walk (see the module docstring)."""

    def __init__(self, m: WindowModel, r: E.Replayed, pt: ProcessTimeline, step_thread: int,
                 phases, io: HostIo | None):
        # plain lists: the walk reads single elements (perf: no numpy scalar per step)
        self.m = _lists(m, ("h_start", "h_end", "h_pred", "h_name", "h_role", "h_thread",
                            "h_join", "o_start", "o_launch", "o_pred", "o_xs", "o_kind",
                            "o_label"))
        self.m.gap_end = m.gap_spans()[1].tolist()  # where a call's CPU segment ends (captured)
        self.r = _lists(r, ("h_start", "h_end", "h_by", "h_binding", "o_start", "o_end", "o_by"))
        self.n_ops, self.pt, self.io = m.n_ops, pt, io
        self.phases = (list(phases[0]), list(phases[1]), phases[2])
        self.step_thread = step_thread
        self.acc: dict[Key, int] = defaultdict(int)
        self.segments: list[Segment] = []  # the waits, latest first (the walk goes backwards)
        calls = np.flatnonzero(m.h_thread == step_thread)
        self.step_calls = calls.tolist()
        self.step_starts = r.h_start[calls].tolist()
        self.ws = m.start_ns
        ran = (r.o_start > NO_TIME) & (r.o_end > r.o_start)
        bs, be = merge_intervals(r.o_start[ran], r.o_end[ran])
        self.busy_s, self.busy_e = bs.tolist(), be.tolist()
        self.busy_before = np.concatenate(([0], np.cumsum(be - bs))).tolist()
        self.faults = unlaunched_migrations(pt, m.o_idx).tolist()  # host-paced: see step_op

    def busy_until(self, x: int) -> int:
        """Replayed ns before ``x`` during which the process's GPU work was running."""
        i = bisect_right(self.busy_s, x) - 1
        return 0 if i < 0 else int(self.busy_before[i] + min(x, self.busy_e[i])
                                   - self.busy_s[i])

    # ------------------------------------------------------------------ attribution
    def add(self, key: Key, a: int, b: int) -> None:
        a = max(a, self.ws)
        if b > a:
            self.acc[key] += b - a
            if key[0] in HOST_KINDS:
                self.acc[(BUSY + key[0], key[1], key[2])] += self.busy_until(b) - \
                    self.busy_until(a)
            if key[0] in _WAITS:
                seg = self.segments
                same = bool(seg) and seg[-1][2] == key[0] and seg[-1][3] == key[1]
                if same and seg[-1][0] == b:
                    seg[-1] = (a, seg[-1][1], key[0], key[1])  # continues the later one
                elif same and seg[-1][1] == a:
                    seg[-1] = (seg[-1][0], b, key[0], key[1])  # a CPU segment cut by phase
                else:
                    seg.append((a, b, key[0], key[1]))

    def call_key(self, v: int) -> Key:
        name = self.pt.names[self.m.h_name[v]] if self.m.h_name[v] >= 0 else ""
        role = int(self.m.h_role[v])
        kind = "memory_management" if R.is_memory_name(name) else R.call_kind(role)
        return kind, name, phase_at(self.phases, int(self.m.h_start[v]))

    def op_key(self, k: int) -> Key:
        m = self.m
        launch = m.o_launch[k]
        t = int(m.h_start[launch]) if launch >= 0 else int(m.o_start[k])
        return OP_KINDS[m.o_kind[k]], self.pt.labels[m.o_label[k]], phase_at(self.phases, t)

    def delay_key(self, k: int, delay: int, name: str) -> Key:
        phase = self.op_key(k)[2]
        if delay > EXPLAINED_DELAY_NS:
            return "unexplained", "start delay", phase
        return "launch", name, phase

    def gap(self, v: int, a: int, b: int) -> None:
        """CPU segment [a, b] before call ``v`` (replayed), split into host I/O and CPU."""
        m = self.m
        p = m.h_pred[v]
        c1 = int(m.gap_end[v])
        c0 = max(int(m.h_end[p]) if p >= 0 else self.ws, c1 - (b - a))
        io_ns, io_name = self.io_in(m.h_thread[v], c0, c1)
        io_ns = min(io_ns, max(0, b - max(a, self.ws)))
        if io_ns:
            self.add(("host_io", io_name, phase_at(self.phases, c1 - 1)), b - io_ns, b)
            b -= io_ns
        self.cpu(c1 - io_ns, a, b)

    def cpu(self, c1: int, a: int, b: int) -> None:
        """Host CPU time: replayed [a, b] whose captured span ends at ``c1``, cut by phase."""
        shift = b - c1
        t = c1 - (b - a)
        for phase, ns in phase_split(self.phases, t, c1):
            self.add(("host_cpu", "", phase), t + shift, t + ns + shift)
            t += ns

    def io_in(self, thread: int, a: int, b: int) -> tuple[int, str]:
        """Captured OS-runtime I/O time of ``thread`` inside [a, b] and the busiest call name."""
        if self.io is None or b <= a:
            return 0, ""
        starts, ends, tids, names = self.io
        sel = np.flatnonzero((tids == self.pt.threads[thread]) & (starts < b) & (ends > a))
        if not sel.size:
            return 0, ""
        over = np.minimum(ends[sel], b) - np.maximum(starts[sel], a)
        return int(over.sum()), names[int(sel[np.argmax(over)])]

    # ------------------------------------------------------------------ walk
    def on_step_thread(self, t: int):
        """Position of the step's thread at time ``t``: ('call', v, t) or None (before it)."""
        calls = self.step_calls
        j = bisect_left(self.step_starts, t) - 1
        if j < 0:  # before the thread's first call: captured times (nothing moved yet)
            self.cpu(t, self.ws, t)
            return None
        v = int(calls[j])
        if self.r.h_end[v] < t:
            nxt = int(calls[j + 1]) if j + 1 < len(calls) else None
            if nxt is not None:
                self.gap(nxt, int(self.r.h_end[v]), t)
            else:
                he_c = int(self.m.h_end[v])
                self.cpu(he_c + t - int(self.r.h_end[v]), int(self.r.h_end[v]), t)
            t = int(self.r.h_end[v])
        return "call", v, t

    def step_call(self, v: int, t: int):
        r = self.r
        b = int(r.h_binding[v])
        if r.h_by[v] == E.BY_TARGET and r.o_start[b] < t:
            end_b = int(r.o_end[b])
            if t > end_b:
                self.add(self.call_key(v), end_b, t)
                t = end_b
            return "op", b, t
        self.add(self.call_key(v), int(r.h_start[v]), t)
        return "before", v, min(t, int(r.h_start[v]))

    def step_before(self, v: int, t: int):
        if self.r.h_by[v] == E.BY_JOIN:  # resumed after another thread's call: follow it
            j = int(self.m.h_join[v])
            end_j = int(self.r.h_end[j])
            self.cpu(int(self.m.h_start[v]), min(end_j, t), t)
            return "call", j, min(t, end_j)
        p = int(self.m.h_pred[v])
        if p >= 0:
            end_p = int(self.r.h_end[p])
            self.gap(v, end_p, t)
            return "call", p, min(t, end_p)
        if self.m.h_thread[v] == self.step_thread:
            self.gap(v, self.ws, t)
            return None
        return self.on_step_thread(t)

    def step_op(self, k: int, t: int):
        r, m = self.r, self.m
        start = int(r.o_start[k])
        self.add(self.op_key(k), start, t)
        t = min(t, start)
        by = r.o_by[k]
        if by == E.BY_LAUNCH and self.faults[k]:  # a page fault: where the host thread was
            return self.on_step_thread(t)
        if by == E.BY_LAUNCH:
            v = int(m.o_launch[k])
            launch = int(r.h_start[v])
            name = self.pt.names[m.h_name[v]] if m.h_name[v] >= 0 else ""
            self.add(self.delay_key(k, t - launch, name), launch, t)
            return "before", v, min(t, launch)
        if by in (E.BY_STREAM, E.BY_CROSS):
            p = int(m.o_pred[k] if by == E.BY_STREAM else m.o_xs[k])
            end_p = int(r.o_end[p])
            self.add(self.delay_key(k, t - end_p, "gpu gap"), end_p, t)
            return "op", p, min(t, end_p)
        return self.on_step_thread(t)  # queued before the window

    def run(self, pos) -> dict[Key, int]:
        steps = {"call": self.step_call, "before": self.step_before, "op": self.step_op}
        budget = 8 * self.n_ops + 64
        while pos is not None and pos[2] > self.ws:
            budget -= 1
            if budget < 0:  # no progress: what is left has no modelled cause
                self.add(("unexplained", "start delay", ""), self.ws, pos[2])
                break
            pos = steps[pos[0]](pos[1], pos[2])
        return dict(self.acc)


def walk_step(m: WindowModel, r: E.Replayed, pt: ProcessTimeline, step_thread: int,
              end_r: int, phases, io=None, segments: list[Segment] | None = None
              ) -> dict[Key, int]:
    """Critical path of a replayed step ending at ``end_r`` on ``step_thread`` (ns per key);
    ``segments``: a list the walk's wait segments are appended to (``Segment``)."""
    w = _Walk(m, r, pt, step_thread, phases, io)
    if not w.step_calls:
        w.add(("host_cpu", "", phase_at(phases, m.start_ns)), m.start_ns, end_r)
        out = dict(w.acc)
    else:
        out = w.run(w.on_step_thread(end_r))
    if segments is not None:
        segments.extend(w.segments)
    return out


def walk_window(m: WindowModel, r: E.Replayed, pt: ProcessTimeline, step_thread: int,
                phases, io=None, segments: list[Segment] | None = None
                ) -> tuple[dict[Key, int], int]:
    """Critical path of a replayed window ending at its last replayed event, and that end
    (``segments`` as in ``walk_step``)."""
    w = _Walk(m, r, pt, step_thread, phases, io)
    h_last = int(r.h_end.max()) if r.h_end.size else E.NO_TIME
    o_last = int(r.o_end.max()) if r.o_end.size else E.NO_TIME
    if o_last >= h_last:
        k = int(np.argmax(r.o_end))
        out, end = w.run(("op", k, o_last)), o_last
    else:
        v = int(np.argmax(r.h_end))
        out, end = w.run(("call", v, h_last)), h_last
    if segments is not None:
        segments.extend(w.segments)
    return out, end
