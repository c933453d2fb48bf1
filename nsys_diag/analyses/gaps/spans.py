"""Utilization and idle gaps of one process, streamed: per-chunk partials merged into exactly the
``UtilizationResult`` / ``GapsResult`` the in-memory analysis (``analyses/gaps/causes.py``) returns.

Why the merge is exact
    Chunk edges lie where every device computes (``cuts.py``), so every gap lies wholly in one
    chunk and is found there with the same bounds; the chunk's rows hold every row that overlaps
    it (``cuts.chunk_frames``), so each cause's evidence covers the same gap time, in the same
    precedence. Per chunk the in-memory code itself runs (``gap_evidence``, ``gaps.device_causes``,
    ``gaps.top_gaps``); a partial keeps only sums: per device the gap count, duration and ns per
    cause (ints), the histogram bins, the chunk's ``TOP_GAPS`` longest gaps with their evidence,
    per cause and evidence label the gap ns it covers, the sampled frames in ``other`` time.
    Sizes: O(devices × causes + top + labels + frames), never O(gaps).

Global values a partial takes (computed once over the process, before the chunks)
    * ``first_kernel_ns`` — the process's first kernel start over the whole export (``startup``
      before it; a later chunk's own first kernel is not it);
    * ``io_threads`` — the threads whose OS-runtime calls are ``host_io`` evidence: those that
      enqueue GPU work, or every CUDA-calling thread when none does (``io_threads_of`` over the
      process's API rows; a union of ``ThreadSets`` over chunks, ``merge_thread_sets``).

Sequence-dependent rules at chunk edges
    * launch cause: the kernel that ends a gap starts at most at ``hi`` (seen: the kernel starting
      exactly at ``hi`` is a chunk row) and carries its launch's end (``launch_end_ns``);
      launch calls overlapping the gap overlap the chunk — inside the chunk's rows;
    * startup: "before the first kernel" uses the global ``first_kernel_ns``;
    * host_cpu: the interval after a blocking call until the next enqueue call may cross an
      edge; its rows beyond the chunk are ``sync_edges.sync_edge_rows`` (three per edge), which
      the chunk's rows must include (``sync_edges.with_sync_edges``) — without them a chunk
      misses host time after a non-draining blocking call of an earlier chunk. ``sync`` itself
      is pointwise (the call ∩ the busy intervals): each chunk decides it from its own rows;
    * other's phases: the ``other`` ns inside each phase span are summed over chunks.

Exact except one documented tie: the merged ``by_cause_detail`` ranks evidence labels of one cause
by covered ns like the in-memory code; when two labels cover *exactly* the same ns, the in-memory
code names the one first in its label table, the merge the one seen first (device, then chunk
order). ``GapsResult.intervals`` is None in the merged result (O(gaps)).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import cast

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.timeline.busy import DeviceBusy, Window
from nsys_diag.analyses.engine.context import ChunkInputs
from nsys_diag.analyses.engine.declaration import Declaration, FinishContext, declare
from nsys_diag.analyses.gaps.detail import (ROW_CAUSES, DeviceCauses, cause_detail, label_weights,
                                           other_frame_counts, other_phase_ns, top_frames,
                                           weights_detail)
from nsys_diag.analyses.gaps.evidence import BEFORE_FIRST_KERNEL, GapEvidence, gap_evidence
from nsys_diag.analyses.gaps.rows import (HOST_IO_RE, ApiNames, EvidenceRows, fixed, labelled,
                                         name_mask)
from nsys_diag.analyses.gaps.causes import (HIST_EDGES_NS, TOP_GAPS, Gap, GapsResult, UtilizationResult,
                                     all_gaps, device_causes, gap_histogram, host_rows, named_spans,
                                     top_gaps,
                                     analyze_gaps, analyze_utilization)
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import (GAP_CAUSES, HINT_CAPTURE_CUDA, HINT_CAPTURE_CUDA_COMMAND,
                                        KINETO_FORMAT)
from nsys_diag.model.schema_types import Enum, List, Map, Obj, Section

LAUNCH = GAP_CAUSES.index("launch")


# -------------------------------------------------------------------------------- utilization
@dataclass(frozen=True)
class BusySums:
    """One device's busy ns in one chunk (or summed over chunks): what ``analyze_utilization``
    reads of a ``DeviceBusy``."""

    compute_ns: int
    copy_ns: int
    busy_ns: int
    copy_only_ns: int

    def __add__(self, other: "BusySums") -> "BusySums":
        return BusySums(self.compute_ns + other.compute_ns, self.copy_ns + other.copy_ns,
                        self.busy_ns + other.busy_ns, self.copy_only_ns + other.copy_only_ns)


@dataclass(frozen=True)
class UtilizationPart:
    """device → its ``BusySums`` inside the chunk's window (clipped at the edges: they add up)."""

    devices: dict[int, BusySums]


def partial_utilization(ci: ChunkInputs) -> UtilizationPart:
    """The chunk's busy sums per device (``ci.busy``, clipped to ``ci.chunk_window``)."""
    return UtilizationPart({d: BusySums(b.compute_ns, b.copy_ns, b.busy_ns, b.copy_only_ns)
                            for d, b in ci.busy.items()})


def merge_utilization(parts: list[UtilizationPart], *, window: Window,
                      gpus: pd.DataFrame | None = None) -> UtilizationResult:
    """``analyze_utilization`` of the whole process: the busy sums added over the chunks.
    ``window``: the process's analysed window; ``gpus``: the bundle's GPU table (names)."""
    sums: dict[int, BusySums] = {}
    for p in parts:
        for d, s in p.devices.items():
            sums[d] = sums[d] + s if d in sums else s
    return analyze_utilization(cast(dict[int, DeviceBusy], sums), window, gpus)


# --------------------------------------------------------------------------------- threads
@dataclass(frozen=True)
class ThreadSets:
    """Thread ids of API rows: those that enqueue GPU work, and all of them."""

    enqueue: frozenset[int]
    calling: frozenset[int]


def thread_sets(api: pd.DataFrame) -> ThreadSets:
    """The ``ThreadSets`` of ``api`` rows (any subset of the process's API rows)."""
    if not len(api):
        return ThreadSets(frozenset(), frozenset())
    tids = api["global_tid"].to_numpy(np.int64)
    enq = tids[ApiNames(api).mask("enqueue")]
    return ThreadSets(frozenset(int(t) for t in pd.unique(enq)),
                      frozenset(int(t) for t in pd.unique(tids)))


def merge_thread_sets(sets: list[ThreadSets]) -> tuple[int, ...]:
    """``host_io`` threads of the process from the ``ThreadSets`` of chunks covering its API rows:
    the enqueuing threads, or every calling thread when none enqueues (as ``host_io_rows``)."""
    enq = frozenset().union(*(s.enqueue for s in sets))
    calling = frozenset().union(*(s.calling for s in sets))
    return tuple(sorted(enq if enq else calling))


def io_threads_of(api: pd.DataFrame) -> tuple[int, ...]:
    """``merge_thread_sets`` of the process's whole API rows."""
    return merge_thread_sets([thread_sets(api)])


# ------------------------------------------------------------------------------ gap partial
@dataclass(frozen=True)
class DeviceGapSums:
    """One device's gaps in one chunk (or summed): count, ns in all, ns per ``GAP_CAUSES``."""

    count: int
    total_ns: int
    cause_ns: tuple[int, ...]


@dataclass(frozen=True)
class GapsPart:
    """One chunk's gap sums (sizes: module docstring)."""

    devices: dict[int, DeviceGapSums]
    histogram: tuple[tuple[int, int | None, int, int], ...]
    launch_gaps: int
    top: tuple[Gap, ...]
    """The chunk's ``TOP_GAPS`` longest gaps, longest first (ties: device, then start)."""
    label_ns: dict[str, tuple[tuple[int, str, int], ...]]
    """row cause → ``(device, label, ns)`` of every label covering its time, in the in-memory
    ``label_weights`` order (device, then label table)."""
    io_inner: dict[tuple[int, str], int]
    """``(device, label)`` → ``host_io`` calls inside ``[lo, hi)`` that cover ``host_io`` time."""
    io_edge: dict[tuple[int, str, int, int], int]
    """``(device, label, start, end)`` → how many such calls reaching past an edge cover it (a
    call seen by several chunks is counted once: the merge takes the largest multiplicity)."""
    other_frames: dict[str, int] = field(default_factory=dict)
    other_samples: int = 0
    samples_seen: bool = False
    osrt_seen: bool = False
    other_phases: dict[str, int] = field(default_factory=dict)
    """phase → ``other`` gap ns inside it (``detail.other_phase_ns``), summed by the merge."""


def _startup(ev: GapEvidence, first: int | None, window_start_ns: int) -> EvidenceRows:
    """``ev.startup`` with "before the first kernel" taken from the process's first kernel."""
    rows = ev.startup
    if ev.first_kernel_ns == first:
        return rows
    own = np.array([lab == BEFORE_FIRST_KERNEL for lab in rows.labels], bool)
    keep = ~own[rows.label] if rows.label.size else np.zeros(0, bool)
    rest = EvidenceRows.build(rows.starts[keep], rows.ends[keep], rows.label[keep], rows.labels)
    if first is not None and first > window_start_ns:
        return EvidenceRows.concat(fixed([window_start_ns], [first], BEFORE_FIRST_KERNEL), rest)
    return rest


def _host_io(osrt: pd.DataFrame | None, threads: tuple[int, ...], min_call_ns: int
             ) -> EvidenceRows:
    """``gap_evidence.host_io_rows`` with the process's ``host_io`` threads given."""
    if osrt is None or not len(osrt) or not threads:
        return EvidenceRows.none()
    dur = osrt["end_ns"].to_numpy(np.int64) - osrt["start_ns"].to_numpy(np.int64)
    m = (dur >= min_call_ns) & name_mask(osrt["name"], HOST_IO_RE)
    if not m.any():
        return EvidenceRows.none()
    m &= np.isin(osrt["global_tid"].to_numpy(np.int64), np.asarray(threads, np.int64))
    return labelled(osrt, m, "name", "{}()")


def chunk_evidence(ci: ChunkInputs, *, th: Thresholds, first_kernel_ns: int | None,
                   io_threads: tuple[int, ...]) -> GapEvidence:
    """``gap_evidence`` of the chunk's rows in its window, with the global values in place."""
    f = ci.frames
    ev = gap_evidence(ci.busy, f["kernels"], f["api"], f["sync"], ci.chunk_window, th=th,
                      memcpy=f.get("memcpy"), memset=f.get("memset"), nvtx=f.get("nvtx"),
                      osrt=f.get("osrt"), steps=ci.steps,
                      launch_threads=np.asarray(io_threads, np.int64), cpu_ops=f.get("cpu_ops"))
    return replace(ev, startup=_startup(ev, first_kernel_ns, ci.window.start_ns),
                   host_io=_host_io(f.get("osrt"), io_threads, th.host_io_min_call_ns),
                   first_kernel_ns=first_kernel_ns)


def _label_ns(devices: list[DeviceCauses]) -> dict[str, tuple[tuple[int, str, int], ...]]:
    out = {}
    for cause in ROW_CAUSES:  # ten causes
        out[cause] = tuple((d.device_id, lab, ns) for d in devices  # a handful of devices
                           for lab, (ns, _n) in label_weights([d], cause).items())
    return out


def _io_calls(devices: list[DeviceCauses], lo_ns: int, hi_ns: int):
    """``GapsPart.io_inner`` and ``io_edge`` of the chunk's ``host_io`` rows."""
    inner: dict[tuple[int, str], int] = {}
    edge: dict[tuple[int, str, int, int], int] = {}
    k = ROW_CAUSES.index("host_io")
    for d in devices:  # a handful of devices
        rows = d.rows[k]
        ps, pe = d.pieces("host_io")
        if not len(rows) or not ps.size:
            continue
        hit = iv.covered_length_per_window_merged(ps, pe, rows.starts, rows.ends) > 0
        inside = (rows.starts >= lo_ns) & (rows.ends <= hi_ns)
        for j in np.flatnonzero(hit):  # calls that cover host_io time (a few)
            lab = rows.labels[int(rows.label[j])]
            if inside[j]:
                inner[(d.device_id, lab)] = inner.get((d.device_id, lab), 0) + 1
            else:
                key = (d.device_id, lab, int(rows.starts[j]), int(rows.ends[j]))
                edge[key] = edge.get(key, 0) + 1
    return inner, edge


def partial_gaps(ci: ChunkInputs, *, th: Thresholds, first_kernel_ns: int | None,
                 io_threads: tuple[int, ...]) -> GapsPart:
    """The gap sums of one chunk (``ci`` with its sync edge rows, ``sync_edges``). Globals:
    ``first_kernel_ns`` (the process's first kernel start, None: none), ``io_threads``
    (``merge_thread_sets`` / ``io_threads_of``)."""
    f = ci.frames
    samples = f.get("cpu_samples")
    samples_seen = samples is not None and len(samples) > 0
    osrt_seen = f.get("osrt") is not None and len(f["osrt"]) > 0
    if not ci.devices or ci.chunk_window.duration_ns <= 0:
        zero = DeviceGapSums(0, 0, (0,) * len(GAP_CAUSES))
        return GapsPart({d: zero for d in ci.devices}, gap_histogram(np.zeros(0, np.int64)), 0, (),
                        {}, {}, {}, samples_seen=samples_seen, osrt_seen=osrt_seen)
    ev = chunk_evidence(ci, th=th, first_kernel_ns=first_kernel_ns, io_threads=io_threads)
    devices, mats = device_causes(ev, host_rows(ev, ci.phases))
    sums = {dc.device_id: DeviceGapSums(int(dc.gs.size), int((dc.ge - dc.gs).sum()),
                                        tuple(int(x) for x in dc.totals))
            for dc in devices}
    gs, ge, dev, mat = all_gaps(devices, mats)
    top = top_gaps(gs, ge, dev, mat, devices, ci.phases, f["api"], samples, ev.ranges)
    launch_gaps = sum(int((dc.launch & (m[:, LAUNCH] > 0)).sum()) for dc, m in zip(devices, mats))
    frames, n_samples = other_frame_counts(samples, devices) if samples_seen else ({}, 0)
    inner, edge = _io_calls(devices, ci.lo_ns, ci.hi_ns)
    in_phase = other_phase_ns(devices, named_spans(ev, ci.phases)) \
        if any(s.cause_ns[GAP_CAUSES.index("other")] for s in sums.values()) else {}
    return GapsPart(sums, gap_histogram(ge - gs), launch_gaps, top, _label_ns(devices), inner, edge,
                    frames, n_samples, samples_seen=samples_seen, osrt_seen=osrt_seen,
                    other_phases=in_phase)


# -------------------------------------------------------------------------------- gap merge
def _device_sums(parts: list[GapsPart], devices: tuple[int, ...]) -> dict[int, DeviceGapSums]:
    out = {}
    for d in sorted(devices):  # a handful of devices
        got = [p.devices[d] for p in parts if d in p.devices]
        out[d] = DeviceGapSums(sum(g.count for g in got), sum(g.total_ns for g in got),
                               tuple(int(sum(g.cause_ns[i] for g in got))
                                     for i in range(len(GAP_CAUSES))))
    return out


def _weights(parts: list[GapsPart], cause: str) -> dict[str, tuple[int, int]]:
    """label → (ns, calls) over the chunks, device-major as ``label_weights`` (calls: host_io)."""
    per: dict[tuple[int, str], int] = {}
    for p in parts:
        for d, lab, ns in p.label_ns.get(cause, ()):
            per[(d, lab)] = per.get((d, lab), 0) + ns
    calls: dict[tuple[int, str], int] = {}
    if cause == "host_io":
        edge: dict[tuple[int, str, int, int], int] = {}
        for p in parts:
            for key, n in p.io_inner.items():
                calls[key] = calls.get(key, 0) + n
            for ekey, n in p.io_edge.items():
                edge[ekey] = max(edge.get(ekey, 0), n)
        for (d, lab, _s, _e), n in edge.items():
            calls[(d, lab)] = calls.get((d, lab), 0) + n
    out: dict[str, tuple[int, int]] = {}
    for (d, lab), ns in sorted(per.items(), key=lambda kv: kv[0][0]):  # stable: device-major
        a, b = out.get(lab, (0, 0))
        out[lab] = (a + ns, b + calls.get((d, lab), 0))
    return out


def merge_gaps(parts: list[GapsPart], *, window: Window, devices: tuple[int, ...],
               th: Thresholds, first_kernel_ns: int | None) -> GapsResult | Unavailable:
    """``analyze_gaps`` of the whole process from its chunks' ``partial_gaps`` (in chunk order).
    Globals: the analysed ``window``, the process's ``devices``, ``first_kernel_ns``. Unavailable
    as the suite's when there is no device or the window is empty; ``intervals`` is None."""
    if not devices or window.duration_ns <= 0:
        return Unavailable("no GPU activity to find gaps in", HINT_CAPTURE_CUDA)
    n_dev = max(len(devices), 1)
    sums = _device_sums(parts, devices)
    by_cause = {c: 0.0 for c in GAP_CAUSES}
    per_device = []
    for d, s in sums.items():  # handful of devices, in id order as analyze_gaps
        for ci, cause in enumerate(GAP_CAUSES):
            by_cause[cause] += float(s.cause_ns[ci]) / n_dev
        per_device.append({"device_id": d, "count": s.count, "total_ms": float(s.total_ns) / 1e6,
                           "by_cause": {c: float(s.cause_ns[i]) / 1e6
                                        for i, c in enumerate(GAP_CAUSES)}})
    samples_ok = any(p.samples_seen for p in parts)
    frames = _merged_frames(parts) if samples_ok and by_cause["other"] else []
    detail = {c: _detail(c, by_cause[c], parts, frames, samples_ok, th) if by_cause[c] > 0
              else None for c in GAP_CAUSES}
    top = sorted((g for p in parts for g in p.top),
                 key=lambda g: (-g.duration_ns, g.device_id, g.start_ns))[:TOP_GAPS]
    return GapsResult(window_ns=window.duration_ns, min_gap_ns=th.min_gap_ns,
                      count=sum(s.count for s in sums.values()),
                      total_ns=float(sum(s.total_ns for s in sums.values())) / n_dev,
                      by_cause_ns=by_cause, histogram=_merged_histogram(parts), top=tuple(top),
                      per_device=tuple(per_device), by_cause_detail=detail,
                      first_kernel_ns=first_kernel_ns, other_top_frames=tuple(frames),
                      cpu_samples_available=samples_ok, intervals=None)


def _merged_frames(parts: list[GapsPart]) -> list[dict]:
    counts: dict[str, int] = {}
    for p in parts:
        for name, n in p.other_frames.items():
            counts[name] = counts.get(name, 0) + n
    return top_frames(counts, sum(p.other_samples for p in parts))


def _merged_phases(parts: list[GapsPart]) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in parts:
        for name, ns in p.other_phases.items():
            out[name] = out.get(name, 0) + ns
    return out


def _merged_histogram(parts: list[GapsPart]) -> tuple:
    hist = []
    for i, lo in enumerate(HIST_EDGES_NS):  # eight fixed bins
        hi = HIST_EDGES_NS[i + 1] if i + 1 < len(HIST_EDGES_NS) else None
        hist.append((int(lo), hi, sum(p.histogram[i][2] for p in parts),
                     sum(p.histogram[i][3] for p in parts)))
    return tuple(hist)


def _detail(cause: str, total_ns: float, parts: list[GapsPart], frames: list[dict],
            samples_ok: bool, th: Thresholds) -> str:
    if cause in ("launch", "other"):
        return cause_detail(cause, total_ns, [], launch_gaps=sum(p.launch_gaps for p in parts),
                            launch_max_ns=th.launch_gap_max_ns, other_frames=frames,
                            samples_available=samples_ok,
                            osrt_available=any(p.osrt_seen for p in parts),
                            host_io_min_ns=th.host_io_min_call_ns,
                            other_phases=_merged_phases(parts),
                            launch_weights=_weights(parts, "launch"))
    return weights_detail(cause, total_ns, _weights(parts, cause),
                          host_io_min_ns=th.host_io_min_call_ns)


# ------------------------------------------------------------------------------- declarations
def _gaps_able(glob) -> bool:
    return bool(glob.devices) and glob.window.duration_ns > 0


def _partial_gaps(span: ChunkInputs, *, th: Thresholds, glob, **_) -> GapsPart | None:
    if not span.devices or span.window.duration_ns <= 0:
        return None
    return partial_gaps(span, th=th, first_kernel_ns=glob.first_kernel_ns,
                        io_threads=glob.io_threads)


def _finish_gaps(states, ctx: FinishContext) -> GapsResult | Unavailable:
    glob = ctx.glob
    if not _gaps_able(glob):
        return Unavailable("no GPU activity to find gaps in", HINT_CAPTURE_CUDA)
    return merge_gaps(list(states), window=glob.window, devices=glob.devices, th=ctx.th,
                      first_kernel_ns=glob.first_kernel_ns)


def _whole_evidence(p, busy):
    if not _gaps_able(p):
        return None
    f = p.frames
    return gap_evidence(busy, f["kernels"], f["api"], f["sync"], p.window, th=p.th,
                        memcpy=f["memcpy"], memset=f["memset"], nvtx=f["nvtx"], osrt=f.get("osrt"),
                        steps=p.steps, cpu_ops=f.get("cpu_ops"))


def _whole_gaps(p, busy, phases, evidence) -> GapsResult | Unavailable:
    if not _gaps_able(p):
        return Unavailable("no GPU activity to find gaps in", HINT_CAPTURE_CUDA)
    f = p.frames
    return analyze_gaps(busy, f["kernels"], f["api"], f["sync"], phases, p.window, th=p.th,
                        evidence=evidence, cpu_samples=f.get("cpu_samples"),
                        sampling_in_format=p.bundle.meta.format != KINETO_FORMAT)


GPU_ROW = Obj({"device_id": "int", "name": "str", "utilization": "share", "compute_busy_ms": "num",
               "copy_busy_ms": "num", "busy_ms": "num", "idle_ms": "num"},
              carried={"copy_only_ms": "num"})
"""One ``gpu.per_device`` row (the renderers also normalize one alone: ``contract.normalize_as``)."""

GPU_SPEC = Section(Obj({"utilization": "share", "compute_busy_ms": "num", "copy_busy_ms": "num",
                   "busy_ms": "num", "idle_ms": "num", "window_ms": "num", "copy_only_ms": "num",
                   "per_device": List(GPU_ROW)},
                  carried={"device_count": "int", "copy_only_share": "share"}),
              "No GPU activity in the analysed window.", HINT_CAPTURE_CUDA_COMMAND, per_process=True)
"""The ``gpu`` section of the analysis JSON (model/schema_types.py)."""

CAUSE = Enum(*GAP_CAUSES)
"""A gap cause in the JSON (``model/vocabulary.GAP_CAUSES``)."""

UTILIZATION = declare(Declaration(
    "utilization", section="gpu", spec=GPU_SPEC,
    partial=lambda span, **_: partial_utilization(span),
    finish=lambda states, ctx: merge_utilization(list(states), window=ctx.glob.window,
                                                 gpus=ctx.bundle.gpus),
    rank=7, whole_reads=("busy",),
    whole=lambda p, busy: analyze_utilization(busy, p.window, p.bundle.gpus)))
"""Busy and idle shares per device (the ``gpu`` section)."""

EVIDENCE = declare(Declaration("evidence", rank=3, pooled=True, whole_reads=("busy",),
                               whole=_whole_evidence))
"""The gap causes' evidence over the whole process (an in-memory step; a span's partial finds
its own)."""

GAPS_SPEC = Section(Obj({
    "count": "int", "total_ms": "num", "min_gap_ns": "int",
    "by_cause": Obj({c: "num" for c in GAP_CAUSES}),
    "by_cause_detail": Obj({c: "str?" for c in GAP_CAUSES}),
    "first_kernel_ns": "int?",
    "histogram": List(Obj({"lo_ns": "int", "hi_ns": "int?", "count": "int", "total_ms": "num"})),
    "top": List(Obj({"start_ns": "int", "duration_ms": "num", "device_id": "int", "cause": CAUSE,
                     "cpu_activity": "str", "phase": "str?",
                     "evidence": List(Obj({"cause": CAUSE, "ms": "num", "detail": "str"}))})),
    "cpu_samples_available": "bool",
    "other_top_frames": List(Obj({"frame": "str", "samples": "int", "share": "share"}))},
    carried={"by_cause_share": Map("share", names=GAP_CAUSES),
             "idle_share": "share",
             "cause_priority": List(CAUSE),
             "per_device": List(Obj({"device_id": "int", "count": "int", "total_ms": "num",
                                     "by_cause": Map("num", names=GAP_CAUSES)}))}),
    "GPU idle gaps could not be computed.", HINT_CAPTURE_CUDA_COMMAND, per_process=True)
"""The ``gaps`` section of the analysis JSON (model/schema_types.py)."""

GAPS = declare(Declaration("gaps", section="gaps", spec=GAPS_SPEC,
                           partial=_partial_gaps, finish=_finish_gaps,
                           rank=4, pooled=True, whole_reads=("busy", "phases", "evidence"),
                           whole=_whole_gaps))
"""The compute-idle gaps and their causes (the ``gaps`` section)."""
