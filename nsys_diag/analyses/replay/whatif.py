"""What-ifs: one change to the model per replay, the step replayed again, the saving priced as
the difference (issue 25, item 4; eleven of its list).

* ``no_host_sync`` — inside the step, every explicit sync (stream, event, device) and every host
  read of at most ``SMALL_READ_BYTES`` (a synchronous or pageable device-to-host copy, what
  ``.item()`` does) stops waiting: it is deferred to the step end, which then also waits for the
  step's GPU work to drain. Reads larger than that, implicit syncs (``cudaFree`` …) and the other
  synchronous copies still wait.
* ``instant_input`` — the data phase (CPU time inside NVTX ranges whose canonical phase is
  ``data``, on the step's thread) and the host's input waits in it take no time: its CPU
  segments and its calls (a synchronous input copy no longer waits; its GPU work still runs).
* ``overlapped_input`` — the data phase runs concurrently with the previous step's compute:
  ``step = max(data, step under instant_input)`` (what the advice "overlap the loader" achieves).
* ``no_launch_overhead`` — as a CUDA-graph replay: a run of launch calls on a thread (each
  after the previous one with at most ``GRAPH_DISPATCH_NS``, 20 µs, of CPU time between them —
  the framework's dispatch of the next operation, which a graph replay does not run) becomes one
  graph launch of ``GRAPH_LAUNCH_NS`` (2 µs): the run's first call takes that, the others and
  the CPU time between them none; longer CPU segments are host work a graph does not capture
  and stay. Each explained GPU start delay is at most ``GRAPH_GPU_GAP_NS`` (1 µs).
* ``hidden_communication`` — the step's collectives may start when its backward phase starts
  (DDP-style bucketed all-reduce), in their own stream order, waiting on no compute stream; the
  saving is at most their overlap with the rest of the step, never more than their duration.
* ``no_alloc_in_loop`` — memory-management calls (``cudaMalloc*``, ``cudaFree*``, pools …) take
  no time and wait for nothing.
* ``instant_host_io`` — the OS-runtime file and network calls (``-t osrt``; the gap causes'
  ``HOST_IO_RE``: read/write/open/fsync/send/recv families, not poll/select, sleeps or futex)
  inside the CPU segments take no time.
* ``async_pinned_copies`` — host copies from or to pageable memory, and synchronous host
  copies, run at the fastest pinned bandwidth of their direction the trace shows (copies of at
  least 1 MiB), else at the GPU's host link (``transfers.link_for_gpu``), and their calls stop
  waiting; stream order keeps the work that depends on them after them.
* ``instant_host_communication`` — the host's time inside communication ranges (MPI/NCCL NVTX
  domains, collective and point-to-point names: the gap causes' ``communication`` evidence)
  takes no time; the GPU work and syncs issued there stay.
* ``no_overhead_phases`` — the CPU time inside ``overhead`` phase ranges (logging, checkpoints)
  takes no time; the GPU work and syncs issued there stay.

* ``tensor_cores_on`` — GEMM/conv kernels whose names show a CUDA-core path (catalog basis
  ``no_tc``) run at the GPU's BF16 dense Tensor Core rate over its FP32 rate (spec table,
  ``roofline/gpu_specs.py``): ``duration / ratio``, but never below their DRAM floor (ncu DRAM
  bytes per launch of the kernel's family ÷ the spec's DRAM bandwidth) when ncu bytes are known,
  else never more than ``MAX_TC_SPEEDUP`` (4×) faster; the ``change`` text says which bound
  applied. Not priced (saves 0) when the GPU is not in the spec table.
* ``prefetched_managed_memory`` — unified-memory migrations (copies ``uvm_h2d``/``uvm_d2h``/
  ``uvm_d2d``) take no time, as if the data had been prefetched (``cudaMemPrefetchAsync`` ahead
  of its use): the GPU work they delayed (stream order, inferred cross-stream waits, syncs on
  them) starts as soon as its other edges allow, and the step thread's CPU time while a
  migration to the host (``uvm_d2h``: a CPU page fault) ran is gone — the faulting thread waits
  for its page (the export does not say which thread faulted: the step's is assumed). GPU
  page-fault stalls inside kernels are not in the export's copy rows and are not priced.

Unexplained delays stay pinned (the model keeps them as captured delays), so no what-if shortens
them. A step under a what-if ends where its thread reaches the range end, but no earlier than its
GPU work can drain with the lag behind the host the capture showed (``after_end``): a change that
lets the host run ahead does not hide GPU work that still has to run.

Each result: ``{id, change, finding, saves_ms_per_step, saves_range_ms [min, max], saves_share,
step_ms_after, changed}`` (``changed``: the change applied to a replayed step at all).
The saving is the mean over **all analysed steps, by step kind**: each replayed
analysed step stands for the analysed steps of its kind (normal or outlier) nearest to it in
duration (``analysis.step_weights``; a kind with no replayed step goes to the nearest replayed
one), and its saving counts that many times. ``saves_share`` is that saving over the mean
analysed step and ``step_ms_after`` = mean analysed step − saving, so the step after the fix is
comparable with the step mean the report shows beside it (eight 227 ms steps saving 45 ms and two
545 ms outliers saving 313 ms save 99 ms of the 290 ms mean step, not the 179 ms plain mean of
the two replayed steps). The range spans the replayed analysed steps. Only when no analysed step
was replayed (warm-up only): the plain mean over the replayed steps and their mean duration.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from nsys_diag.analyses.replay import roles as R
from nsys_diag.analyses.replay.engine import Replayed, replay_window
from nsys_diag.analyses.replay.model import (COMMUNICATION, HOST_PAGEABLE, HOST_PINNED, TRANSFER,
                                             UVM_PREFIX, ProcessTimeline, WindowModel)
from nsys_diag.analyses.replay.phases import PhaseRanges
from nsys_diag.analyses.replay.whatif_table import (  # noqa: F401 (the table, re-exported)
    CHANGED, GRAPH_DISPATCH_NS, GRAPH_GPU_GAP_NS, GRAPH_LAUNCH_NS, WHAT_IFS, WhatIf, finish,
    summarise)

SMALL_READ_BYTES = 1_024
"""A device-to-host copy of at most 1 KiB is a host read of a scalar (``.item()``, a loss)."""
INPUT_PHASE = "data"
OVERHEAD_PHASE = "overhead"

BACKWARD_PHASE = "backward"

@dataclass(frozen=True)
class TensorRule:
    """What ``tensor_cores_on`` needs of a process: per kernel name (``ProcessTimeline
    .kernel_names``) whether it is a GEMM/conv kernel without Tensor Cores and its DRAM floor
    (ns per launch, -1 unknown), and the GPU's BF16 dense over FP32 rate ratio."""

    eligible: np.ndarray
    floor_ns: np.ndarray
    ratio: float

    def change(self) -> str:
        """The what-if's change in words: the rate ratio and which bound applied."""
        base = (f"GEMM/conv kernels without Tensor Cores run at the BF16 dense rate "
                f"({self.ratio:.1f}× the FP32 rate, spec table)")
        floors = self.floor_ns[self.eligible] >= 0
        if not floors.size:
            return base + ": no GEMM/conv kernel ran without them"
        if floors.all():
            return base + ", never faster than their DRAM floor (ncu bytes)"
        if floors.any():
            return (base + ", never faster than their DRAM floor where ncu bytes are known, "
                    f"else at most {MAX_TC_SPEEDUP:g}× faster")
        return base + f", at most {MAX_TC_SPEEDUP:g}× faster (no ncu DRAM bytes)"


@dataclass(frozen=True)
class StepWindow:
    """What a what-if needs of one replayed step: its model, base replay, the step thread, the
    step's captured end and its phase ranges (captured ns)."""

    model: WindowModel
    base: Replayed
    pt: ProcessTimeline
    step_thread: int
    end_ns: int
    phases: PhaseRanges
    io: tuple | None = None  # critical_path.HostIo: OS-runtime I/O calls of the process
    link_bytes_per_s: float | None = None  # the GPU's host link (spec table), if known
    tc: TensorRule | None = None  # tensor_cores_on inputs (None: the GPU is not in the table)
    comm: tuple | None = None  # the host's communication ranges (MPI/NCCL), as ``io``
    whole: bool = False
    """A slice of the replayed window (basis ``window``, no steps): it ends at its last replayed
    call or operation (``step_end``), not where a step thread reaches a range end."""
    reruns: list = field(default_factory=list, compare=False, repr=False)
    """One entry per ``rerun`` that changed the model (``price`` reads whether a what-if had
    anything to change in this step)."""


def rerun(w: StepWindow, **changes: Any) -> Replayed:
    """The step replayed with some of its model's arrays replaced (``WindowModel`` fields by
    name). Perf: a change that leaves every array as it was (no sync, no data phase, nothing to
    move in this step) is the base replay itself — the engine is deterministic, so it is not
    run again (≈ 10–15 ms per what-if on a 10,000-operation step). A change replays in the base
    replay's dependency order (``engine.replay_window`` checks that it still holds)."""
    m = w.model
    if all(np.array_equal(getattr(m, k), v) for k, v in changes.items()):
        return w.base
    w.reruns.append(None)
    return replay_window(replace(m, **changes), w.base.order)


def step_end(w: StepWindow, r: Replayed, trailing_cut: int = 0) -> int:
    """Replayed end of the step: where its thread reaches the range end (the captured CPU time
    after its last call, less ``trailing_cut``). A window slice (``w.whole``): its last replayed
    call or operation end — the window has no range end, so no captured tail to cut."""
    m = w.model
    if w.whole:
        return max(int(r.h_end.max(initial=m.start_ns)), int(r.o_end.max(initial=m.start_ns)))
    mine = np.flatnonzero((m.h_thread == w.step_thread) & (m.h_start < w.end_ns))
    if not mine.size:
        return w.end_ns - trailing_cut
    last = int(mine[-1])
    return int(r.h_end[last]) + max(w.end_ns - int(m.h_end[last]) - trailing_cut, 0)


def _drain(m: WindowModel, r: Replayed) -> int:
    """Replayed end of the GPU work launched in the window (its start when there is none)."""
    launched = m.o_launch >= 0
    return int(r.o_end[launched].max()) if launched.any() else m.start_ns


def after_end(w: StepWindow, r: Replayed, trailing_cut: int = 0) -> int:
    """Replayed end of the step under a what-if: the host's end (``step_end``), but no earlier
    than its GPU work can drain with the lag behind the host the capture showed (steady state:
    work the host leaves queued at the step end still has to run before the next step's)."""
    lag = max(0, _drain(w.model, w.base) - step_end(w, w.base))
    return max(step_end(w, r, trailing_cut), _drain(w.model, r) - lag)


# ------------------------------------------------------------------------------- no_host_sync
def _deferred_calls(w: StepWindow) -> np.ndarray:
    """Local calls whose waits ``no_host_sync`` removes (see the module docstring)."""
    m, pt = w.model, w.pt
    names = np.array([pt.names[i] if i >= 0 else "" for i in m.h_name], dtype=object)
    explicit = np.isin(m.h_role, (R.STREAM_SYNC, R.EVENT_SYNC)) | (
        (m.h_role == R.DEVICE_SYNC) & ~np.array([R.is_memory_name(n) for n in names], bool))
    small_read = np.zeros(m.h_start.size, bool)
    copies = np.flatnonzero((m.o_launch >= 0) & (m.o_kind == TRANSFER)
                            & (m.o_bytes <= SMALL_READ_BYTES))
    copies = copies[m.h_role[m.o_launch[copies]] == R.SYNC_COPY]
    d2h = np.array([pt.labels[m.o_label[k]] == "D2H" for k in copies.tolist()], bool)
    small_read[m.o_launch[copies[d2h]]] = True
    return np.flatnonzero(explicit | small_read)


def no_host_sync(w: StepWindow) -> int:
    """Replayed step duration (ns) without the deferred waits; the step end waits for the step's
    GPU work instead."""
    m = w.model
    keep = ~np.isin(m.t_call, _deferred_calls(w))
    r = rerun(w, t_call=m.t_call[keep], t_op=m.t_op[keep])
    return max(step_end(w, r), _drain(m, r)) - m.start_ns


# ------------------------------------------------------------------------------------ input
def _covered(phases: PhaseRanges, name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per interval [a, b]: ns inside ranges of phase ``name`` (ranges disjoint, sorted)."""
    s, e, names = phases
    pick = np.array([n == name for n in names], bool)
    if not pick.any():
        return np.zeros(np.size(a), np.int64)
    s, e = np.asarray(s, np.int64)[pick], np.asarray(e, np.int64)[pick]
    cum = np.concatenate([[0], np.cumsum(e - s)])

    def cover(t: np.ndarray) -> np.ndarray:  # data time before t
        j = np.searchsorted(s, t, side="right")
        inside = np.where(j > 0, np.minimum(t, e[np.maximum(j - 1, 0)]) - s[np.maximum(j - 1, 0)],
                          0)
        return cum[np.maximum(j - 1, 0)] * (j > 0) + np.maximum(inside, 0)

    return cover(np.asarray(b, np.int64)) - cover(np.asarray(a, np.int64))


def gaps_less(m: WindowModel, cover) -> dict[str, np.ndarray]:
    """The what-if's ``h_gap`` (and ``h_jgap``): each captured CPU segment less the part
    ``cover(starts, ends)`` (ns per call) takes from it (``WindowModel.gap_spans`` /
    ``join_spans``)."""
    out = {"h_gap": m.h_gap - cover(*m.gap_spans())}
    if (m.h_join >= 0).any():
        out["h_jgap"] = m.h_jgap - np.where(m.h_join >= 0, cover(*m.join_spans()), 0)
    return out


def without_phase(w: StepWindow, phase: str, calls_too: bool = False) -> tuple[int, int]:
    """(replayed step duration without the CPU time inside ``phase`` ranges, that phase's
    time) in ns: every CPU segment loses its part inside the phase; ``calls_too``: the calls
    made in the phase take no time and wait for nothing either (their GPU work still runs)."""
    m = w.model
    mine = np.flatnonzero((m.h_thread == w.step_thread) & (m.h_start < w.end_ns))
    tail_from = int(m.h_end[mine[-1]]) if mine.size else m.start_ns
    tail = int(_covered(w.phases, phase, np.array([tail_from]), np.array([w.end_ns]))[0])
    changes = gaps_less(m, lambda a, b: _covered(w.phases, phase, a, b))
    if calls_too:
        inside = _covered(w.phases, phase, m.h_start, m.h_start + 1) > 0
        keep = ~inside[m.t_call] if m.t_call.size else np.zeros(0, bool)
        changes.update(h_own=np.where(inside, 0, m.h_own), t_call=m.t_call[keep],
                       t_op=m.t_op[keep])
    r = rerun(w, **changes)
    total = int(_covered(w.phases, phase, np.array([m.start_ns]), np.array([w.end_ns]))[0])
    return after_end(w, r, tail) - m.start_ns, total


def instant_input(w: StepWindow) -> tuple[int, int]:
    """(replayed step duration without the data phase — its CPU time and its calls' time and
    waits —, that data time) in ns."""
    return without_phase(w, INPUT_PHASE, calls_too=True)


def no_overhead_phases(w: StepWindow) -> int:
    """Replayed step duration (ns) without the CPU time of the overhead phases (logging,
    checkpoints, evaluation: canonical phase ``overhead``); their GPU work and syncs stay."""
    return without_phase(w, OVERHEAD_PHASE)[0]


# ------------------------------------------------------------------------------ launch, comm
def no_launch_overhead(w: StepWindow) -> int:
    """Replayed step duration (ns) as a CUDA-graph replay (module docstring): each run of
    launch calls one graph launch (``GRAPH_LAUNCH_NS`` for its first call, nothing for the
    others nor for the dispatch CPU time between them), every explained operation start delay
    at most ``GRAPH_GPU_GAP_NS`` (unexplained delays stay pinned)."""
    m = w.model
    in_run = graph_captured_launches(m)
    launch = m.h_role == R.LAUNCH
    own = np.where(in_run, 0, np.where(launch, np.minimum(m.h_own, GRAPH_LAUNCH_NS), m.h_own))
    delay = np.where(m.unexplained, m.o_delay, np.minimum(m.o_delay, GRAPH_GPU_GAP_NS))
    r = rerun(w, h_own=own, h_gap=np.where(in_run, 0, m.h_gap), o_delay=delay)
    return after_end(w, r) - m.start_ns


def graph_captured_launches(m: WindowModel) -> np.ndarray:
    """Per host call: a launch that continues a run of launches on its thread — its thread
    predecessor is a launch and at most ``GRAPH_DISPATCH_NS`` of CPU time lies between them —
    so that a graph replay would launch it with the run's first call."""
    launch = m.h_role == R.LAUNCH
    pred = m.h_pred
    prev_launch = np.zeros(launch.size, bool)
    has = pred >= 0
    prev_launch[has] = launch[pred[has]]
    return launch & prev_launch & (m.h_gap <= GRAPH_DISPATCH_NS)


def hidden_communication(w: StepWindow) -> int:
    """Replayed step duration (ns) with the step's collectives free to start with the backward
    phase (stream order among them kept; no wait on the compute streams): DDP's bucketed
    all-reduce overlapping backward compute. Unchanged without a backward phase."""
    m = w.model
    s, e, names = w.phases
    starts = [int(a) for a, n in zip(s, names) if n == BACKWARD_PHASE
              and m.start_ns <= int(a) < w.end_ns]
    comm = np.flatnonzero((m.o_kind == COMMUNICATION) & (m.o_launch >= 0))
    if not starts or not comm.size:
        return step_end(w, w.base) - m.start_ns
    backward = min(starts)
    o_start, o_launch, xs = m.o_start.copy(), m.o_launch.copy(), m.o_xs.copy()
    o_start[comm] = np.minimum(o_start[comm], backward)
    o_launch[comm], xs[comm] = -1, -1
    r = rerun(w, o_start=o_start, o_launch=o_launch, o_xs=xs)
    return after_end(w, r) - m.start_ns


def no_alloc_in_loop(w: StepWindow) -> int:
    """Replayed step duration (ns) with memory-management calls (allocation, free, pools,
    registration) taking no time and not waiting for the GPU."""
    m, pt = w.model, w.pt
    mem = np.array([R.is_memory_name(pt.names[i]) if i >= 0 else False for i in m.h_name], bool)
    if not mem.any():
        return step_end(w, w.base) - m.start_ns
    keep = ~mem[m.t_call] if m.t_call.size else np.zeros(0, bool)
    r = rerun(w, h_own=np.where(mem, 0, m.h_own), t_call=m.t_call[keep], t_op=m.t_op[keep])
    return after_end(w, r) - m.start_ns


def _host_cover(calls: tuple, thread_tid: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per interval [a, b]: ns the thread spent in the host calls ``calls`` (``HostIo``: starts,
    ends, thread ids, names; merged where they overlap) inside it."""
    starts, ends, tids, _ = calls
    sel = np.flatnonzero(tids == thread_tid)
    if not sel.size:
        return np.zeros(np.size(a), np.int64)
    order = sel[np.argsort(starts[sel], kind="stable")]
    s, e = starts[order], np.maximum.accumulate(ends[order])
    keep = np.ones(s.size, bool)
    keep[1:] = s[1:] > e[:-1]  # merge overlapping calls: a run's start, its last end
    run = np.cumsum(keep) - 1
    ms, me = s[keep], np.zeros(int(keep.sum()), np.int64)
    np.maximum.at(me, run, e)
    return _covered((ms, me, ["call"] * ms.size), "call", a, b)


def _without_host_calls(w: StepWindow, calls: tuple | None) -> int:
    """Replayed step duration (ns) with the time of the host calls ``calls`` in every CPU
    segment removed (none given: the base replay's)."""
    m = w.model
    if calls is None:
        return step_end(w, w.base) - m.start_ns

    def cover(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        cut = np.zeros(m.h_start.size, np.int64)
        for t in np.unique(m.h_thread).tolist():
            pos = np.flatnonzero(m.h_thread == t)
            cut[pos] = _host_cover(calls, int(w.pt.threads[t]), a[pos], b[pos])
        return cut

    r = rerun(w, **gaps_less(m, cover))
    return after_end(w, r) - m.start_ns


def instant_host_io(w: StepWindow) -> int:
    """Replayed step duration (ns) with the OS-runtime I/O time in every CPU segment removed."""
    return _without_host_calls(w, w.io)


def instant_host_communication(w: StepWindow) -> int:
    """Replayed step duration (ns) with the host's time in communication calls (MPI/NCCL NVTX
    ranges, collective and point-to-point names: ``StepWindow.comm``) removed from every CPU
    segment; the GPU work and syncs issued there stay (an upper bound of overlapping them with
    compute)."""
    return _without_host_calls(w, w.comm)


PINNED_MIN_BYTES = 1 << 20
"""Pinned copies of at least 1 MiB measure the pinned bandwidth (smaller ones are latency)."""


def pinned_rates(pt: ProcessTimeline) -> dict[str, float]:
    """Fastest pinned bandwidth (bytes/s) per direction (``H2D``, ``D2H``) the process shows."""
    out: dict[str, float] = {}
    dur = pt.o_end - pt.o_start
    for direction in ("H2D", "D2H"):
        if direction not in pt.labels:
            continue
        sel = (pt.o_host == HOST_PINNED) & (pt.o_bytes >= PINNED_MIN_BYTES) & (dur > 0) & (
            pt.o_label == pt.labels.index(direction))
        if sel.any():
            out[direction] = float((pt.o_bytes[sel] / (dur[sel] / 1e9)).max())
    return out


def async_pinned_copies(w: StepWindow) -> int:
    """Replayed step duration (ns) with host copies from or to pageable memory, and synchronous
    host copies, made pinned (at the fastest pinned bandwidth of their direction in the trace,
    else the GPU's host link) and asynchronous (their calls stop waiting); stream order keeps the
    work that depends on them after them."""
    m, pt = w.model, w.pt
    rates = pinned_rates(pt)
    dur, changed = m.o_dur.copy(), np.zeros(m.o_dur.size, bool)
    for direction in ("H2D", "D2H"):
        rate = rates.get(direction, w.link_bytes_per_s)
        if not rate or direction not in pt.labels:
            continue
        sync = np.zeros(m.o_dur.size, bool)
        launched = m.o_launch >= 0
        sync[launched] = m.h_role[m.o_launch[launched]] == R.SYNC_COPY
        sel = (m.o_label == pt.labels.index(direction)) & ((m.o_host == HOST_PAGEABLE) | sync)
        dur[sel] = np.minimum(dur[sel], np.ceil(m.o_bytes[sel] / rate * 1e9).astype(np.int64))
        changed |= sel
    if not changed.any():
        return step_end(w, w.base) - m.start_ns
    calls = np.unique(m.o_launch[changed & (m.o_launch >= 0)])
    keep = ~np.isin(m.t_call, calls)
    r = rerun(w, o_dur=dur, t_call=m.t_call[keep], t_op=m.t_op[keep])
    return after_end(w, r) - m.start_ns


# ------------------------------------------------------------------ tensor cores, managed memory
MAX_TC_SPEEDUP = 4.0
"""``tensor_cores_on`` without ncu DRAM bytes: a kernel gets at most 4× faster (a GEMM off the
Tensor Cores rarely sits at the FP32 peak, so the full rate ratio would overstate the saving)."""


def tensor_rule(pt: ProcessTimeline, gpu_name: str | None,
                dram_bytes: dict[str, float] | None = None) -> TensorRule | None:
    """The ``tensor_cores_on`` inputs of a process on GPU ``gpu_name`` (None when the GPU, or its
    BF16 Tensor Core or FP32 rate, is not in the spec table). ``dram_bytes``: ncu DRAM bytes per
    launch by kernel family (``normalize_kernel_name``)."""
    from nsys_diag.analyses.kernels.catalog import catalogue
    from nsys_diag.analyses.kernels.names import normalize_kernel_name
    from nsys_diag.analyses.roofline.gpu_specs import lookup_gpu

    spec = lookup_gpu(gpu_name)
    tc = spec.peak_flop_per_s("tensor_fp16") if spec else None
    fp32 = spec.peak_flop_per_s("fp32") if spec else None
    if spec is None or not tc or not fp32:
        return None
    names = list(pt.kernel_names)
    cat = catalogue(names) if names else None
    eligible = (np.isin(cat["category"].to_numpy(object), ("gemm", "conv"))
                & (cat["tc_basis"].to_numpy(object) == "no_tc")) if cat is not None \
        else np.zeros(0, bool)
    floor = np.full(len(names), -1, np.int64)
    if dram_bytes and spec.dram_bytes_per_s:
        for i in np.flatnonzero(eligible).tolist():
            b = dram_bytes.get(normalize_kernel_name(names[i]))
            if b is not None and b > 0:
                floor[i] = int(np.ceil(b / spec.dram_bytes_per_s * 1e9))
    return TensorRule(np.asarray(eligible, bool), floor, float(tc / fp32))


def tensor_cores_on(w: StepWindow) -> int:
    """Replayed step duration (ns) with the GEMM/conv kernels that ran without Tensor Cores at
    the BF16 Tensor Core rate (``TensorRule``; bound by their DRAM floor or ``MAX_TC_SPEEDUP``)."""
    m, pt, rule = w.model, w.pt, w.tc
    if rule is None or pt.o_kname is None or not rule.eligible.any():
        return step_end(w, w.base) - m.start_ns
    code = pt.o_kname[m.o_idx]
    sel = np.flatnonzero(code >= 0)
    sel = sel[rule.eligible[code[sel]]]
    if not sel.size:
        return step_end(w, w.base) - m.start_ns
    dur = m.o_dur.copy()
    fast = np.ceil(dur[sel] / rule.ratio).astype(np.int64)
    floor = rule.floor_ns[code[sel]]
    bound = np.where(floor >= 0, floor, np.ceil(dur[sel] / MAX_TC_SPEEDUP).astype(np.int64))
    dur[sel] = np.minimum(dur[sel], np.maximum(fast, bound))
    r = rerun(w, o_dur=dur)
    return after_end(w, r) - m.start_ns


UVM_HOST_FAULT = "uvm_d2h"
"""Migrations to the host: a CPU page fault, during which the faulting thread waits."""


def _union_cover(s: np.ndarray, e: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per interval [a, b]: ns covered by the union of the intervals [s, e]."""
    if not s.size:
        return np.zeros(np.size(a), np.int64)
    order = np.argsort(s, kind="stable")
    s, e = s[order], np.maximum.accumulate(e[order])
    keep = np.ones(s.size, bool)
    keep[1:] = s[1:] > e[:-1]
    run = np.cumsum(keep) - 1
    me = np.zeros(int(keep.sum()), np.int64)
    np.maximum.at(me, run, e)
    return _covered((s[keep], me, ["x"] * int(keep.sum())), "x", a, b)


def prefetched_managed_memory(w: StepWindow) -> int:
    """Replayed step duration (ns) with every unified-memory migration taking no time (the data
    prefetched before use): the work that waited for it starts when its other edges allow, and
    the step thread's CPU time while a migration to the host ran (its page fault) is gone."""
    m, pt = w.model, w.pt
    uvm = [i for i, lab in enumerate(pt.labels) if lab.startswith(UVM_PREFIX)]
    sel = (m.o_kind == TRANSFER) & np.isin(m.o_label, uvm) if uvm else np.zeros(0, bool)
    if not uvm or not sel.any():
        return step_end(w, w.base) - m.start_ns
    to_host = sel & (m.o_label == (pt.labels.index(UVM_HOST_FAULT)
                                   if UVM_HOST_FAULT in pt.labels else -1))
    fs, fe = m.o_start[to_host], m.o_end[to_host]
    mine = (m.h_thread == w.step_thread) & (m.h_start < w.end_ns)
    last = np.flatnonzero(mine)
    tail_from = int(m.h_end[last[-1]]) if last.size else m.start_ns
    tail = int(_union_cover(fs, fe, np.array([tail_from]), np.array([w.end_ns]))[0])
    r = rerun(w, o_dur=np.where(sel, 0, m.o_dur),
              **gaps_less(m, lambda a, b: np.where(mine, _union_cover(fs, fe, a, b), 0)),
              o_delay=np.where(sel & ~m.unexplained, 0, m.o_delay))
    return after_end(w, r, tail) - m.start_ns


PRICERS = {"no_host_sync": no_host_sync, "no_launch_overhead": no_launch_overhead,
           "hidden_communication": hidden_communication, "no_alloc_in_loop": no_alloc_in_loop,
           "instant_host_io": instant_host_io,
           "instant_host_communication": instant_host_communication,
           "no_overhead_phases": no_overhead_phases,
           "async_pinned_copies": async_pinned_copies, "tensor_cores_on": tensor_cores_on,
           "prefetched_managed_memory": prefetched_managed_memory}
"""The what-ifs whose durations add up over a step's slices (input ones: ``instant_input``)."""


def price(w: StepWindow) -> dict[str, int]:
    """Replayed duration (ns) of one step (or slice) under the additive what-ifs, its data time
    (``data``) and, per what-if, whether it changed anything (``CHANGED``): summed over a step's
    slices, then ``finish``-ed."""
    out: dict[str, int] = {}
    for wid, f in PRICERS.items():  # ten what-ifs
        out[wid], out[CHANGED + wid] = _changing(w, f)
    (out["instant_input"], out["data"]), out[CHANGED + "instant_input"] = \
        _changing(w, instant_input)
    return out


def _changing(w: StepWindow, what_if: Callable[[StepWindow], Any]) -> tuple[Any, int]:
    """(``what_if(w)``, 1 when it replayed a changed model of the step, else 0)."""
    before = len(w.reruns)
    return what_if(w), int(len(w.reruns) > before)
