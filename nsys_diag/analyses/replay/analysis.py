"""Causal replay of one process: replay representative steps over the causal model, measure the
replay's fidelity against the capture and attribute each replayed step along its critical path.

``analyze_replay(...) -> ReplayResult | Unavailable`` (frames restricted to one process).

Which windows are replayed
--------------------------
With steps: at most ``MAX_STEPS`` representative ones — the analysed step nearest the median
duration, the one nearest the 90th percentile, the first outlier and the last warm-up step
(basis ``steps``). Without steps: the whole analysed window, cut into consecutive slices of at
most ``MAX_REPLAY_OPS`` calls and operations (basis ``window``). A step with more than
``MAX_REPLAY_OPS`` is replayed in such slices too (each slice starts at its captured time; the
step's replayed time is the sum of its slices'; a note says so). The what-ifs' savings are the
mean over all analysed steps by step kind (``step_weights``: each replayed analysed step stands
for the analysed steps of its kind nearest to it in duration; ``whatif.summarise``). Without
steps they price the replayed window: each slice under each what-if ends at its last replayed
call or operation, the slices sum into the window, and ``saves_ms_per_step`` (the key kept) is
the saving over the whole replayed window in ms, ``saves_share`` that saving over the measured
window and ``step_ms_after`` the measured window less it.

Fidelity: per replayed step the measured duration (its NVTX range) and the replayed one (where
the step's thread reaches the range end in the replay); ``error_pct`` is signed (positive: the
replay is slower). ``unexplained_ms``/``unexplained_share``: the part of the replayed steps'
critical path that is a start delay no edge explains (> 20 µs), kept pinned.

Bad or partial data gives ``Unavailable`` with the reason, never a made-up path: no CUDA API
calls or no correlation ids (GPU work cannot be joined to its launches), kernel stream ids not
read, stream syncs without a SYNCHRONIZATION table, calls on one thread that overlap (rows out of
order), GPU work that starts before its launching call (clock skew), edges that form a cycle.
``NSYS_DIAG_NO_REPLAY=1`` turns the replay off.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.gaps.rows import ATEN_RE, COMM_DOMAINS, COMM_NAME_RE, HOST_IO_RE, name_mask
from nsys_diag.analyses.replay import roles as R
from nsys_diag.analyses.replay import scaling as S
from nsys_diag.analyses.replay import whatif as W
from nsys_diag.analyses.replay.critical_path import (BUSY, HOST_KINDS, HostIo, Key, Segment,
                                                     walk_step, walk_window)
from nsys_diag.analyses.replay.engine import CyclicModel, replay_window
from nsys_diag.analyses.replay.model import (ProcessTimeline, process_timeline, window_model,
                                             with_kernel_streams)
from nsys_diag.analyses.replay.phases import phase_ranges, wait_spans
from nsys_diag.analyses.steps.detection import StepsResult
from nsys_diag.analyses.transfers import link_for_gpu
from nsys_diag.model.vocabulary import (HINT_REPLAY, HINT_REPLAY_CUDA_EVENTS,
                                        HINT_REPLAY_GRAPH_NODES)

MAX_STEPS = 5
MAX_REPLAY_OPS = 200_000
"""Calls + operations replayed in one window (a longer window is cut into slices)."""
MAX_PATH_SEGMENTS = 300
"""Critical-path wait segments kept for the timeline (``critical_path_segments``): the longest."""
NO_REPLAY_ENV = "NSYS_DIAG_NO_REPLAY"
BAD_ROW_SHARE = 0.01
"""More than 1% of calls overlapping on a thread, or of GPU operations starting before their
launching call, and the data cannot support a causal replay."""
SKEW_TOLERANCE_NS = 1_000
REPLAY_HINT = HINT_REPLAY


@dataclass(frozen=True)
class StepReplay:
    """One replayed window: a step (``index`` into the steps, ``kind`` why it was chosen) or a
    slice of the analysed window (``index`` -1, kind ``window``). Times in ns."""

    index: int
    kind: str
    start_ns: int
    measured_ns: int
    replayed_ns: int
    unexplained_ns: int
    operations: int
    inferred_edges: int
    explicit_edges: int = 0
    path_ns: tuple[tuple[Key, int], ...] = ()
    """This window's critical path: (kind, name, phase) -> ns, as walked (not in ``to_json``:
    the result's ``critical_path`` is their mean as one step, ``ReplayResult.per_step``)."""

    @property
    def error_pct(self) -> float:
        return 100.0 * (self.replayed_ns - self.measured_ns) / self.measured_ns \
            if self.measured_ns else 0.0

    def to_json(self) -> dict:
        return {"index": self.index, "kind": self.kind, "start_ns": self.start_ns,
                "measured_ms": self.measured_ns / 1e6, "replayed_ms": self.replayed_ns / 1e6,
                "error_pct": round(self.error_pct, 3), "unexplained_ms": self.unexplained_ns / 1e6,
                "operations": self.operations, "inferred_edges": self.inferred_edges,
                "explicit_edges": self.explicit_edges}


@dataclass(frozen=True)
class CriticalPathRow:
    kind: str
    name: str
    phase: str
    ms_per_step: float
    share: float
    gpu_busy_share: float | None = None
    """Host rows (``critical_path.HOST_KINDS``): the share of the row's time the process's GPU
    work was running meanwhile (near 1: the host keeps pace with a busy GPU, so a faster host
    gains little — the what-ifs price it); None for the other kinds."""

    def to_json(self) -> dict:
        return {"kind": self.kind, "name": self.name, "phase": self.phase,
                "ms_per_step": self.ms_per_step, "share": self.share,
                "gpu_busy_share": (None if self.gpu_busy_share is None
                                   else round(self.gpu_busy_share, 4))}


@dataclass(frozen=True)
class ReplayResult:
    """The replay of one process: its windows, fidelity and critical path."""

    basis: str  # steps | window
    steps: tuple[StepReplay, ...]
    notes: tuple[str, ...] = ()
    what_if: tuple[W.WhatIf, ...] = ()
    capture_hints: tuple[str, ...] = ()
    scaling: tuple[S.ScaledStep, ...] = ()
    """The data-parallel projection (``replay/scaling.py``); () without collectives or without
    the capture's rank count. Not part of ``to_json``: it becomes the process's ``scaling[]``."""
    ranks: int | None = None
    segments: tuple[Segment, ...] = ()
    """The replayed windows' critical-path waits (``keep_segments``: the longest, by start)."""
    weights: tuple[float, ...] = ()
    """With steps: how many analysed steps each replayed step stands for (``step_weights``; ()
    or all zeros: equal weights, as when only warm-up steps were replayed)."""

    available = True

    def per_step(self, values: list[int]) -> float:
        """``values`` (ns, one per replayed window) as one step: with steps, their mean weighted
        by ``weights`` (a replayed warm-up step stands for no analysed step); with the window,
        their sum (the window's slices)."""
        v = np.asarray(values, np.float64)
        if self.basis != "steps":
            return float(v.sum())
        w = np.asarray(self.weights, np.float64) if self.weights else np.zeros(len(v))
        w = w if w.sum() > 0 else np.ones(len(v))
        return float(np.dot(w, v) / w.sum()) if len(v) else 0.0

    @cached_property
    def critical_path(self) -> tuple[CriticalPathRow, ...]:
        """The critical path per step: each key's walked ns over the replayed windows as one
        step (``per_step``: a warm-up step's allocations and first launches do not colour the
        steady state), largest first; the rows add up to ``replayed_ns``."""
        walked = [dict(s.path_ns) for s in self.steps]
        keys = {k for p in walked for k in p}
        return _rows({k: self.per_step([p.get(k, 0) for p in walked]) for k in keys},
                     self.replayed_ns)

    @property
    def measured_ns(self) -> float:
        return self.per_step([s.measured_ns for s in self.steps])

    @property
    def replayed_ns(self) -> float:
        return self.per_step([s.replayed_ns for s in self.steps])

    @property
    def error_pct(self) -> float:
        m = self.measured_ns
        return 100.0 * (self.replayed_ns - m) / m if m else 0.0

    @property
    def unexplained_ms(self) -> float:
        return self.per_step([s.unexplained_ns for s in self.steps]) / 1e6

    @property
    def unexplained_share(self) -> float:
        r = self.replayed_ns
        return self.unexplained_ms * 1e6 / r if r else 0.0

    def fidelity(self) -> dict:
        return {"basis": self.basis, "measured_ms": self.measured_ns / 1e6,
                "replayed_ms": self.replayed_ns / 1e6,
                "error_pct": round(self.error_pct, 3),
                "unexplained_share": round(self.unexplained_share, 4),
                "steps": [s.to_json() for s in self.steps]}

    def to_json(self) -> dict:
        return {"available": True, "fidelity": self.fidelity(),
                "unexplained_ms": self.unexplained_ms,
                "unexplained_share": round(self.unexplained_share, 4),
                "inferred_edges": int(sum(s.inferred_edges for s in self.steps)),
                "explicit_edges": int(sum(s.explicit_edges for s in self.steps)),
                "critical_path": [r.to_json() for r in self.critical_path],
                "what_if": [w.to_json() for w in self.what_if],
                "critical_path_segments": [{"start_ns": a, "end_ns": b, "kind": k, "name": n}
                                           for a, b, k, n in self.segments],
                "notes": list(self.notes), "capture_hints": list(self.capture_hints)}


def keep_segments(segments: list[Segment], cap: int = MAX_PATH_SEGMENTS
                  ) -> tuple[Segment, ...]:
    """The ``cap`` longest wait segments (ties: the earlier), in start order."""
    if not segments:
        return ()
    a = np.array([s[0] for s in segments], np.int64)
    b = np.array([s[1] for s in segments], np.int64)
    keep = np.lexsort((a, -(b - a)))[:cap]
    return tuple(segments[i] for i in sorted(keep.tolist(), key=lambda i: (a[i], b[i])))


# ---------------------------------------------------------------------------------- checks
def _contexts_not_read(kernels: pd.DataFrame, *others: pd.DataFrame) -> bool:
    """The kernels' context ids were not read (all -1: ``analyze`` skips them) while the other
    GPU rows have theirs: a kernel's stream (device, context, stream) would not be the one its
    copies and syncs name (``with_kernel_streams`` joins them for the replayed windows)."""
    return bool((kernels["context_id"].to_numpy(np.int64) < 0).all()) and any(
        len(f) and bool((f["context_id"].to_numpy(np.int64) >= 0).any()) for f in others)


def _data_problem(kernels, memcpy, memset, sync, api, pt: ProcessTimeline | None) -> str | None:
    """Why the data cannot support a causal replay (None: it can)."""
    n_ops = len(kernels) + len(memcpy) + len(memset)
    if not n_ops:
        return "no GPU work in the process"
    if not len(api):
        return "no CUDA API calls in the export: GPU work cannot be joined to its launches"
    corr = [f["correlation_id"].to_numpy(np.int64) for f in (kernels, memcpy, memset) if len(f)]
    if not (np.concatenate(corr) >= 0).any() or not (api["correlation_id"].to_numpy() >= 0).any():
        return "no correlation ids: GPU work cannot be joined to the calls that launched it"
    if len(kernels) and ((kernels["stream_id"].to_numpy(np.int64) < 0).all()
                         or _contexts_not_read(kernels, memcpy, memset, sync)):
        return "kernel stream ids were not read (read them for the replayed windows)"
    if pt is None:
        return None
    if (pt.h_role == R.STREAM_SYNC).any() and not len(sync):
        return ("stream synchronisations without a SYNCHRONIZATION table: the stream each one "
                "waits for is unknown")
    if not (pt.o_call >= 0).any():
        return "no GPU operation matches a CUDA API call (correlation ids do not join)"
    same = pt.h_thread[1:] == pt.h_thread[:-1]
    overlap = same & (pt.h_start[1:] < pt.h_end[:-1])
    if overlap.sum() > BAD_ROW_SHARE * max(len(pt.h_start), 1):
        return (f"{int(overlap.sum()):,} CUDA calls overlap the previous call of their thread "
                "(rows out of order or broken times)")
    joined = np.flatnonzero(pt.o_call >= 0)
    early = pt.o_start[joined] < pt.h_start[pt.o_call[joined]] - SKEW_TOLERANCE_NS
    if early.sum() > BAD_ROW_SHARE * max(joined.size, 1):
        return (f"clock skew: {int(early.sum()):,} GPU operations start before the call that "
                "launched them")
    return None


# ---------------------------------------------------------------------------------- windows
def representative_steps(steps: StepsResult, max_steps: int = MAX_STEPS
                         ) -> list[tuple[int, str]]:
    """(step index, why) of at most ``max_steps`` (≤ ``MAX_STEPS``) steps, by step index, taken
    in this priority: median, p90, first outlier, last warm-up."""
    analysed = np.flatnonzero(steps.analysed_mask)
    dur = steps.durations_ns.astype(np.float64)
    picks: list[tuple[int, str]] = []

    def pick(i: int, why: str) -> None:
        if all(i != j for j, _ in picks) and len(picks) < min(max_steps, MAX_STEPS):
            picks.append((int(i), why))

    if analysed.size:
        d = dur[analysed]
        pick(analysed[int(np.argmin(np.abs(d - np.median(d))))], "median")
        pick(analysed[int(np.argmin(np.abs(d - np.percentile(d, 90))))], "p90")
    outliers = steps.indices("outlier")
    if outliers:
        pick(outliers[0], "outlier")
    warm = steps.indices("warmup")
    if warm:
        pick(warm[-1], "warmup")
    return sorted(picks)


def step_weights(steps: StepsResult, replayed: list[int]) -> np.ndarray:
    """How many analysed steps each replayed step stands for (one count per ``replayed`` index,
    by step index): every analysed step is represented by the replayed analysed step of its own
    kind (``normal`` or ``outlier``, ``steps.kinds``) nearest in duration, or — no step of its
    kind was replayed — by the replayed analysed step nearest in duration. A replayed step that is
    not analysed (warm-up) stands for none; all zeros when no analysed step was replayed."""
    out = np.zeros(len(replayed), np.int64)
    kinds = np.asarray(steps.kinds, dtype=object)
    rep = np.asarray(replayed, np.int64)
    usable = steps.analysed_mask[rep] if rep.size else np.zeros(0, bool)
    if not usable.any():
        return out
    dur = steps.durations_ns.astype(np.float64)
    for kind in ("normal", "outlier"):  # the analysed step kinds (steps.detection.STEP_KINDS)
        members = np.flatnonzero(kinds == kind)
        if not members.size:
            continue
        cand = np.flatnonzero(usable & (kinds[rep] == kind))
        if not cand.size:
            cand = np.flatnonzero(usable)
        # members × candidates: ≤ analysed steps × MAX_STEPS distances
        nearest = cand[np.argmin(np.abs(dur[members][:, None] - dur[rep[cand]][None, :]), axis=1)]
        out += np.bincount(nearest, minlength=len(replayed))
    return out


def _host_io(osrt: pd.DataFrame | None) -> HostIo | None:
    if osrt is None or not len(osrt):
        return None
    io = osrt.loc[name_mask(osrt["name"], HOST_IO_RE)]
    if not len(io):
        return None
    return (io["start_ns"].to_numpy(np.int64), io["end_ns"].to_numpy(np.int64),
            io["global_tid"].to_numpy(np.int64), io["name"].astype(str).tolist())


def _host_comm(nvtx: pd.DataFrame | None) -> tuple | None:
    """The host's communication ranges, as ``HostIo`` (starts, ends, thread ids, names): NVTX
    ranges of the MPI/NCCL domains and those named as collectives or point-to-point calls (the
    gap causes' ``communication`` evidence, ``gaps/evidence.communication_rows``); None: none."""
    if nvtx is None or not len(nvtx):
        return None
    dom = nvtx["domain"].astype(str).str.lower().isin(COMM_DOMAINS).to_numpy()
    sel = dom | name_mask(nvtx["text"], COMM_NAME_RE, exclude=ATEN_RE)
    if not sel.any():
        return None
    comm = nvtx.loc[sel]
    return (comm["start_ns"].to_numpy(np.int64), comm["end_ns"].to_numpy(np.int64),
            comm["global_tid"].to_numpy(np.int64), comm["text"].astype(str).tolist())


def _replay_steps(pt: ProcessTimeline, steps: StepsResult, nvtx: pd.DataFrame, io,
                  link: float | None = None, max_steps: int = MAX_STEPS, phase_map=None,
                  tc: W.TensorRule | None = None, ranks: int | None = None,
                  segments: list[Segment] | None = None
                  ) -> tuple[list[StepReplay], tuple[float, ...], list[str],
                             tuple[W.WhatIf, ...], tuple[S.ScaledStep, ...]]:
    """Replay the representative steps: the replays (each with its walked path), how many
    analysed steps each stands for (``step_weights``), notes, the what-ifs and the data-parallel
    projection."""
    thread_code = np.flatnonzero(pt.threads == steps.global_tid)
    step_thread = int(thread_code[0]) if thread_code.size else -1
    phases = phase_ranges(nvtx, steps.global_tid, steps.is_step_row, phase_map)
    waits = wait_spans(phases)
    comm = _host_comm(nvtx)
    out: list[StepReplay] = []
    notes: list[str] = []
    priced: list[tuple[str, int, dict[str, int]]] = []
    scaled: list[tuple[dict[int, int], int]] = []  # per step: {N: replayed ns}, collective ns
    for i, why in representative_steps(steps, max_steps):
        s, e = int(steps.starts_ns[i]), int(steps.ends_ns[i])
        cuts = _cuts(pt, s, e)
        if len(cuts) > 2:
            notes.append(f"step {i} holds more than {MAX_REPLAY_OPS:,} calls and operations: "
                         f"replayed in {len(cuts) - 1} slices")
        replayed, unexplained, n_ops, inferred, explicit = 0, 0, 0, 0, 0
        raw: dict[str, int] = {}
        by_n: dict[int, int] = {}
        coll = 0
        acc: dict[Key, int] = {}
        for a, b in zip(cuts[:-1], cuts[1:]):
            m = window_model(pt, a, b, step_thread, waits=waits)
            r = replay_window(m)
            w = W.StepWindow(m, r, pt, step_thread, b, phases, io, link, tc, comm=comm)
            end_r = W.step_end(w, r)
            path = walk_step(m, r, pt, step_thread, end_r, phases, io, segments)
            for k, v in path.items():
                acc[k] = acc.get(k, 0) + v
            replayed += end_r - a
            unexplained += sum(v for k, v in path.items() if k[0] == "unexplained")
            n_ops, inferred, explicit = (n_ops + m.n_ops, inferred + m.inferred_edges,
                                         explicit + m.explicit_edges)
            for wid, ns in W.price(w).items():
                raw[wid] = raw.get(wid, 0) + ns
            sc = S.scaled_steps(w, ranks or 0)
            coll += S.collective_ns(w) if sc else 0
            for n in S.SCALE_GPUS:
                by_n[n] = by_n.get(n, 0) + sc.get(n, end_r - a)
        out.append(StepReplay(i, why, s, e - s, replayed, unexplained, n_ops, inferred,
                              explicit, tuple(sorted(acc.items()))))
        priced.append((why, replayed, W.finish(raw)))
        scaled.append((by_n if coll else {}, coll))
    changes = _changes(tc)
    weights = step_weights(steps, [r.index for r in out])
    projection: tuple[S.ScaledStep, ...] = ()
    if weights.any():  # the mean over all analysed steps, by step kind
        mean = float(steps.analysed_durations_ns.mean())
        what_if = W.summarise([p[1] for p in priced], [p[2] for p in priced],
                              weights.tolist(), mean, changes)
        projection = S.combine([p[1] for p in priced], [s[0] for s in scaled],
                               [s[1] for s in scaled], weights.tolist(), mean, ranks or 0)
    else:  # only warm-up steps replayed: their plain mean
        what_if = W.summarise([p[1] for p in priced], [p[2] for p in priced], changes=changes)
    return out, tuple(float(x) for x in weights), notes, what_if, projection


def _cuts(pt: ProcessTimeline, start: int, end: int) -> list[int]:
    """Slice edges of [start, end): a new slice after every ``MAX_REPLAY_OPS`` call and
    operation starts (just [start, end] when it holds fewer)."""
    times = np.sort(np.concatenate([pt.h_start[(pt.h_start >= start) & (pt.h_start < end)],
                                    pt.o_start[(pt.o_start >= start) & (pt.o_start < end)]]))
    inner = sorted({int(t) for t in times[MAX_REPLAY_OPS::MAX_REPLAY_OPS] if start < t < end})
    return [start, *inner, end]


def _replay_window(pt: ProcessTimeline, window: tuple[int, int] | None, nvtx: pd.DataFrame, io,
                   phase_map=None, link: float | None = None, tc: W.TensorRule | None = None,
                   segments: list[Segment] | None = None
                   ) -> tuple[list[StepReplay], list[str], tuple[W.WhatIf, ...]]:
    """The window cut into slices of at most ``MAX_REPLAY_OPS`` calls and operations, and its
    what-ifs: each slice priced as a window (``StepWindow.whole``: it ends at its last replayed
    call or operation), the slices' durations summed into one window, the saving over the
    measured window (the sum of the slices' captured spans)."""
    lo, hi = (int(min(pt.h_start.min(initial=1 << 62), pt.o_start.min(initial=1 << 62))),
              int(max(pt.h_end.max(initial=0), pt.o_end.max(initial=0))) + 1) \
        if window is None else window
    cuts = _cuts(pt, lo, hi)
    counts = np.bincount(pt.h_thread, minlength=len(pt.threads))
    step_thread = int(np.argmax(counts)) if counts.size else -1
    phases = phase_ranges(nvtx, int(pt.threads[step_thread]) if step_thread >= 0 else -1, None,
                          phase_map)
    waits = wait_spans(phases)
    comm = _host_comm(nvtx)
    out: list[StepReplay] = []
    raw: dict[str, int] = {}
    for a, b in zip(cuts[:-1], cuts[1:]):
        m = window_model(pt, a, b, step_thread, bursts=True, waits=waits)
        if not m.n_ops:
            continue
        r = replay_window(m)
        path, end_r = walk_window(m, r, pt, step_thread, phases, io, segments)
        end_c = int(max(m.h_end.max(initial=a), m.o_end.max(initial=a)))
        out.append(StepReplay(-1, "window", a, end_c - a, end_r - a,
                              sum(v for k, v in path.items() if k[0] == "unexplained"),
                              m.n_ops, m.inferred_edges, m.explicit_edges,
                              tuple(sorted(path.items()))))
        w = W.StepWindow(m, r, pt, step_thread, end_c, phases, io, link, tc, comm=comm,
                         whole=True)
        for wid, ns in W.price(w).items():
            raw[wid] = raw.get(wid, 0) + ns
    what_if: tuple[W.WhatIf, ...] = ()
    if out:
        what_if = W.summarise([sum(s.replayed_ns for s in out)], [W.finish(raw)], [1],
                              float(sum(s.measured_ns for s in out)),
                              {**{wid: text.replace("the step", "the window")
                                  for wid, (text, _) in W.WHAT_IFS.items()}, **_changes(tc)})
    return out, [], what_if


def _changes(tc: W.TensorRule | None) -> dict[str, str]:
    """A process's own words for its what-ifs' changes (``tensor_cores_on``: its bound)."""
    return {"tensor_cores_on": tc.change()} if tc is not None else \
        {"tensor_cores_on": "not priced: the GPU's BF16 Tensor Core and FP32 rates are not in "
                            "the spec table"}


def _gpu_row(gpus: pd.DataFrame | None, kernels: pd.DataFrame, memcpy: pd.DataFrame
             ) -> pd.DataFrame | None:
    """The GPU-table row of the process's first GPU (None when unknown)."""
    if gpus is None or not len(gpus):
        return None
    devices = [f["device_id"].to_numpy(np.int64) for f in (kernels, memcpy) if len(f)]
    if not devices:
        return None
    row = gpus.loc[gpus["device_id"].to_numpy(np.int64) == int(np.concatenate(devices).min())]
    return row if len(row) else None


def _host_link(gpus: pd.DataFrame | None, kernels: pd.DataFrame, memcpy: pd.DataFrame
               ) -> float | None:
    """The host link (bytes/s, spec table) of the process's first GPU; None when unknown."""
    row = _gpu_row(gpus, kernels, memcpy)
    if row is None:
        return None
    spec = link_for_gpu(str(row["name"].iloc[0]), int(row["cc_major"].iloc[0]))
    return spec.host_gb_per_s * 1e9 if spec.host_gb_per_s else None


def capture_hints(pt: ProcessTimeline, done: list[StepReplay],
                  cuda_events: pd.DataFrame | None) -> tuple[str, ...]:
    """What to capture for what the model lacked (``model/vocabulary.py``): kernel-level graph
    tracing when the process ran CUDA graphs seen only as whole graphs, CUDA event records when
    replayed cross-stream waits had to be inferred without them."""
    out = []
    if "cuda_graph" in pt.labels and (pt.o_label == pt.labels.index("cuda_graph")).any():
        out.append(HINT_REPLAY_GRAPH_NODES)
    if sum(s.inferred_edges for s in done) and (cuda_events is None or not len(cuda_events)):
        out.append(HINT_REPLAY_CUDA_EVENTS)
    return tuple(out)


def _rows(path: dict[Key, float], step_ns: float) -> tuple[CriticalPathRow, ...]:
    """Critical-path rows from ``path`` (ns per step by key) and the step it adds up to."""
    rows = [CriticalPathRow(k, name, phase, v / 1e6, v / step_ns if step_ns else 0.0,
                            min(1.0, path.get((BUSY + k, name, phase), 0) / v)
                            if k in HOST_KINDS else None)
            for (k, name, phase), v in path.items() if v > 0 and not k.startswith(BUSY)]
    return tuple(sorted(rows, key=lambda r: (-r.ms_per_step, r.kind, r.name, r.phase)))


def replay_windows(steps: StepsResult | Unavailable | None, api: pd.DataFrame,
                   ops: tuple[pd.DataFrame, ...], window: tuple[int, int] | None = None
                   ) -> list[tuple[int, int]]:
    """The spans the replay reads extra columns for (``loaders/nsys_replay.py``): each
    representative step (or the window), extended to the end of the GPU work launched in it
    (``ops``: kernels, copies, memsets with their ``launch_start_ns``)."""
    if isinstance(steps, StepsResult) and steps.count:
        spans = [(int(steps.starts_ns[i]), int(steps.ends_ns[i]))
                 for i, _ in representative_steps(steps)]
    elif window is not None:
        spans = [window]
    else:
        starts = [f["start_ns"].to_numpy(np.int64) for f in (api, *ops) if len(f)]
        ends = [f["end_ns"].to_numpy(np.int64) for f in (api, *ops) if len(f)]
        if not starts:
            return []
        spans = [(int(min(s.min() for s in starts)), int(max(e.max() for e in ends)) + 1)]
    out = []
    for a, b in spans:
        end = b
        for f in ops:
            if len(f):
                ls = f["launch_start_ns"].to_numpy(np.int64)
                inside = (ls >= a) & (ls < b)
                if inside.any():
                    end = max(end, int(f["end_ns"].to_numpy(np.int64)[inside].max()))
        out.append((a, end))
    return out


def analyze_replay(kernels: pd.DataFrame, memcpy: pd.DataFrame, memset: pd.DataFrame,
                   sync: pd.DataFrame, api: pd.DataFrame, nvtx: pd.DataFrame, *,
                   steps: StepsResult | Unavailable | None,
                   window: tuple[int, int] | None = None, osrt: pd.DataFrame | None = None,
                   graphs: pd.DataFrame | None = None, sync_events: pd.DataFrame | None = None,
                   cuda_events: pd.DataFrame | None = None,
                   kernel_streams: pd.DataFrame | None = None,
                   gpus: pd.DataFrame | None = None,
                   max_steps: int = MAX_STEPS, phase_map=None,
                   ncu_dram_bytes: dict[str, float] | None = None,
                   ranks: int | None = None) -> ReplayResult | Unavailable:
    """Replay one process (frames restricted to it; see the module docstring). The replay-only
    frames (``contracts.REPLAY_CONTRACTS``, read for ``replay_windows`` by
    ``loaders/nsys_replay.py``): ``graphs`` CUDA-graph launches, ``sync_events`` and
    ``cuda_events`` (cross-stream waits joined to their event record; inferred without them),
    ``kernel_streams`` (streams of kernels loaded without detail). ``window``: the analysed
    window used when there are no steps; ``gpus``: the GPU table (the host link a what-if falls
    back on, and the Tensor Core and FP32 rates of ``tensor_cores_on``); ``max_steps``: how many
    representative steps to replay at most (the caller's cost budget; ``representative_steps``);
    ``ncu_dram_bytes``: ncu DRAM bytes per launch by kernel family (``tensor_cores_on``'s DRAM
    floor); ``ranks``: how many data-parallel ranks ran the captured collectives (≥ 2: the steps
    are replayed again with them scaled to ``scaling.SCALE_GPUS`` ranks; None: no projection)."""
    if os.environ.get(NO_REPLAY_ENV, "") not in ("", "0"):
        return Unavailable(f"the replay is turned off ({NO_REPLAY_ENV}=1)")
    kernels = with_kernel_streams(kernels, kernel_streams)
    why = _data_problem(kernels, memcpy, memset, sync, api, None)
    if why is None:
        pt = process_timeline(kernels, memcpy, memset, sync, api, graphs, sync_events,
                              cuda_events)
        why = _data_problem(kernels, memcpy, memset, sync, api, pt)
    if why is not None:
        return Unavailable(why, REPLAY_HINT)
    io = _host_io(osrt)
    segments: list[Segment] = []
    try:
        what_if: tuple[W.WhatIf, ...] = ()
        projection: tuple[S.ScaledStep, ...] = ()
        row = _gpu_row(gpus, kernels, memcpy)
        tc = W.tensor_rule(pt, str(row["name"].iloc[0]) if row is not None else None,
                           ncu_dram_bytes)
        link = _host_link(gpus, kernels, memcpy)
        if isinstance(steps, StepsResult) and steps.count:
            done, weights, notes, what_if, projection = _replay_steps(
                pt, steps, nvtx, io, link, max_steps, phase_map, tc, ranks, segments)
            basis = "steps"
        else:
            done, notes, what_if = _replay_window(pt, window, nvtx, io, phase_map, link, tc,
                                                  segments)
            weights = ()
            basis = "window"
    except CyclicModel as exc:
        return Unavailable(f"the captured times contradict the model's edges: {exc}", REPLAY_HINT)
    if not done:
        return Unavailable("; ".join(notes) or "nothing to replay", REPLAY_HINT)
    return ReplayResult(basis, tuple(done), tuple(notes), what_if,
                        capture_hints(pt, done, cuda_events), projection,
                        ranks if projection else None, keep_segments(segments), weights)
