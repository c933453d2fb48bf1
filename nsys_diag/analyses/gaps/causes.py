"""GPU utilization and compute-idle gaps with their causes, per device, inside the analysed window.

Utilization
    ``utilization`` = compute busy (union of kernels) / window. Copy busy (memcpy/memset union) is
    reported apart, and ``copy_only_ms`` is time the copy engines worked while no kernel ran — a GPU
    copying while its SMs sit idle is *not* utilized. Process-level numbers are means over the
    process's GPUs.

Gaps
    Every interval of the window with no kernel running on a device, longer than
    ``min_gap_ns`` (1 µs — not nsys's 500 ms). Leading/trailing idle time inside the window counts.

Causes (the one definition; ``model/vocabulary.py`` GAP_CAUSES lists them in this order)
    Each idle nanosecond goes to exactly one cause: the first, in this precedence order, whose
    evidence covers it. "Host" means any thread of the process; API names are CUDA runtime/driver
    calls (``gaps/rows.py`` holds the name patterns):

    1. ``startup`` — before the process's first kernel (its first kernel over the whole export,
       not just the window) while no copy or memset of the process runs on that device (a copy
       before the first kernel is the program's own work — an input upload, a model's weights —
       and goes to ``transfer``; so does a launching thread's file or network call, which goes
       to ``host_io``, as the replay prices it), or inside one-off initialisation: module/library
       loading and JIT linking (``cuModuleLoad*``, ``cuLibraryLoad*``, ``cuLink*``), context creation
       (``cuCtxCreate*``, ``cuDevicePrimaryCtxRetain``, ``cuInit``, ``cudaSetDevice``; the
       ``cudaFree(0)``-style first runtime call precedes the first kernel), handle creation
       (``cublasCreate*``, ``cublasLt*Create``, ``cudnnCreate*``, ``cusparseCreate*``,
       ``ncclCommInit*``), ``MPI_Init`` and runtime compilation (NVRTC / nvJitLink calls or NVTX
       ranges, nvFuser's ``compileFusion``). ``cudaFuncGetAttributes`` is not initialisation;
    2. ``input`` — the step thread is inside a ``data`` phase (the loader is producing the batch,
       including its host→device copy);
    3. ``overhead`` — inside an ``overhead`` phase (logging, checkpoint, eval);
    4. ``communication`` — the host is inside an MPI/NCCL/torch.distributed range: NVTX ranges of
       the ``MPI`` or ``NCCL`` domain, NVTX ranges or API calls named ``MPI_*``, ``nccl*``,
       ``c10d::*``, ``torch.distributed*``, ``FSDP::*`` or containing all_reduce / allreduce /
       all_gather / reduce_scatter / broadcast / barrier (never ``aten::*`` ops), or a phase
       mapped to canonical ``communication``;
    5. ``transfer`` — a memcpy (not a unified-memory migration) or memset runs on that device
       (copy engine busy, SMs idle);
    6. ``unified_memory`` — a unified-memory migration (memcpy ``copy_kind`` ``uvm_*``) runs on
       that device;
    7. ``sync`` — the host is blocked in a synchronising CUDA call
       (``cuda{Stream,Device,Event,Ctx}Synchronize``, ``cu*Synchronize``, synchronous
       ``cudaMemcpy*``/``cudaMemset*``, or a CUPTI synchronization record) **while a GPU still
       works**: while a kernel or a copy runs on any of the process's devices
       (``gap_evidence.while_gpu_works``) — a device idles while the host waits for another
       device or a copy. The rest of the call, the GPU drained, is the host's (cause 10);
    8. ``memory_management`` — the host is in ``cudaMalloc*``/``cudaFree*``, host allocation or
       registration (``cudaHostAlloc``, ``cudaMallocHost``, ``cudaHostRegister``), managed or pool
       allocation (``cudaMallocManaged``, ``cudaMallocAsync``, ``cudaMemPool*``), or the driver's
       ``cuMemAlloc*``/``cuMemFree*``/``cuMemCreate``/``cuMemMap``/``cuMemRelease`` family;
    9. ``host_io`` — with OS-runtime tracing (``-t osrt``): a thread that enqueues GPU work is in
       a file or network call (read/write/readv/writev/pread*/pwrite*/fread/fwrite/open*/close/
       recv*/send*/accept/connect/fsync/fdatasync), every call counted however short (not
       poll/select, sleeps or futex: waiting on purpose is not I/O). Helper threads that never
       launch (the CUDA driver's, MPI's) are not evidence;
    10. ``host_cpu`` — the host's own code after a synchronisation: from the start of a blocking
        call until the next call of the process that puts work on the GPU (a launch, an async or
        synchronous copy/memset), less the wait (cause 7) — the GPU drained while the host
        finished the call and computed. It stops at
        the start of a data/overhead/communication phase or a communication range; no later call:
        none. Memory management and I/O inside it are theirs (causes 8, 9). Each piece is named by
        the phase it ran in: the step phases (canonical name, else the phase's own), or, without
        them, the outermost NVTX range of a launching thread (``in forward``); the pieces outside
        every range say so;
    11. ``launch`` — the GPU waits for a launch: a short gap (≤ ``launch_gap_max_ns``, 50 µs)
        while the CPU issues launches (a launch/enqueue call overlaps the gap, or the kernel that
        ends the gap was launched after the gap began: the GPU had nothing queued) takes the
        gap's time left after causes 1–10; in a longer gap, the time a launch call covers (a
        launch that outlasts the queued work: a module loaded or code compiled at first launch,
        a driver stall), labelled by the call;
    12. ``other`` — the residual: host time no evidence above covers. With CPU sampling, the most
        sampled host frames of the process's threads in that time are named
        (``other_top_frames``).

    The causes follow the replay's classification of calls (``replay/roles.py``; its critical
    path calls the same times ``blocking_wait``, ``memory_management``, ``host_io`` and
    ``host_cpu``): the replay prices, this walk over the captured gaps attributes.

    A gap's own ``cause`` (top-gap table) is the cause that holds most of its time; its
    ``evidence`` lists every cause that took part of it, largest first, with what covered it.
    ``by_cause_detail`` names, per cause, the evidence that covers most of that cause's own time.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.analyses.base import is_available
from nsys_diag.analyses.timeline.busy import DeviceBusy, Window
from nsys_diag.analyses.gaps.activity import cpu_overlap, gap_activity, range_activity
from nsys_diag.analyses.gaps.detail import (ROW_CAUSES, DeviceCauses, cause_detail, gap_evidence_rows,
                                           other_phase_ns, other_top_frames)
from nsys_diag.analyses.gaps.evidence import (GapEvidence, cut_at, gap_evidence, phase_spans,
                                             split_by_phase, startup_without_own_work)
from nsys_diag.analyses.gaps.evidence import launched_late as _launched_late
from nsys_diag.analyses.gaps.rows import LAUNCH_API_RE, SYNC_API_RE, EvidenceRows
from nsys_diag.analyses.gaps.rows import name_mask as _name_mask
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import GAP_CAUSES, gpu_placeholder

__all__ = ["LAUNCH_API_RE", "SYNC_API_RE", "GapEvidence", "GapIntervals", "gap_evidence", "analyze_gaps",
           "analyze_utilization", "_launched_late", "_name_mask"]

HIST_EDGES_NS = (1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000,
                 10_000_000_000)
TOP_GAPS = 10


# -------------------------------------------------------------------------------- utilization
@dataclass(frozen=True)
class DeviceUtilization:
    device_id: int
    name: str
    window_ns: int
    compute_ns: int
    copy_ns: int
    busy_ns: int
    copy_only_ns: int

    @property
    def utilization(self) -> float:
        return self.compute_ns / self.window_ns if self.window_ns > 0 else 0.0

    def to_json(self) -> dict:
        return {"device_id": self.device_id, "name": self.name, "utilization": self.utilization,
                "compute_busy_ms": self.compute_ns / 1e6, "copy_busy_ms": self.copy_ns / 1e6,
                "busy_ms": self.busy_ns / 1e6, "idle_ms": (self.window_ns - self.compute_ns) / 1e6,
                "copy_only_ms": self.copy_only_ns / 1e6}


@dataclass(frozen=True)
class UtilizationResult:
    window_ns: int
    per_device: tuple[DeviceUtilization, ...]

    available = True

    def _mean(self, attr: str) -> float:
        if not self.per_device:
            return 0.0
        return float(np.mean([getattr(d, attr) for d in self.per_device]))

    @property
    def utilization(self) -> float:
        return self._mean("utilization")

    @property
    def copy_only_share(self) -> float:
        return self._mean("copy_only_ns") / self.window_ns if self.window_ns > 0 else 0.0

    def to_json(self) -> dict:
        return {
            "available": True,
            "utilization": self.utilization,
            "compute_busy_ms": self._mean("compute_ns") / 1e6,
            "copy_busy_ms": self._mean("copy_ns") / 1e6,
            "busy_ms": self._mean("busy_ns") / 1e6,
            "idle_ms": (self.window_ns - self._mean("compute_ns")) / 1e6,
            "window_ms": self.window_ns / 1e6,
            "copy_only_ms": self._mean("copy_only_ns") / 1e6,
            "copy_only_share": self.copy_only_share,
            "device_count": len(self.per_device),
            "per_device": [d.to_json() for d in self.per_device],
        }


def analyze_utilization(busy: dict[int, DeviceBusy], window: Window,
                        gpus: pd.DataFrame | None = None) -> UtilizationResult:
    names = {}
    if gpus is not None and len(gpus):
        names = dict(zip(gpus["device_id"].astype(int), gpus["name"].astype(str)))
    rows = []
    for d, b in sorted(busy.items()):  # handful of devices
        # perf (bench): copy-only = copy − copy∩compute, no complement of 2M kernel intervals
        rows.append(DeviceUtilization(d, names.get(d, gpu_placeholder(d)), window.duration_ns,
                                      b.compute_ns, b.copy_ns, b.busy_ns, b.copy_only_ns))
    return UtilizationResult(window.duration_ns, tuple(rows))


# ------------------------------------------------------------------------------------- gaps
@dataclass(frozen=True)
class Gap:
    start_ns: int
    duration_ns: int
    device_id: int
    cause: str
    cpu_activity: str
    phase: str | None
    evidence: tuple[dict, ...] = ()

    def to_json(self) -> dict:
        return {"start_ns": self.start_ns, "duration_ms": self.duration_ns / 1e6,
                "device_id": self.device_id, "cause": self.cause,
                "cpu_activity": self.cpu_activity, "phase": self.phase,
                "evidence": [dict(e) for e in self.evidence]}


@dataclass(frozen=True)
class GapIntervals:
    """Every idle interval of a process's GPUs (not only the top ones): int64 arrays of one
    row per gap and ``cause_ns`` (gaps × ``GAP_CAUSES``), the ns each cause took of it. Kept
    for the Python API (``Analysis.gaps``); never in the JSON."""

    starts_ns: np.ndarray
    ends_ns: np.ndarray
    device_ids: np.ndarray
    cause_ns: np.ndarray

    def to_frame(self) -> pd.DataFrame:
        """One row per gap: start_ns, end_ns, duration_ns, device_id, cause (the one holding
        most of the gap; ``other`` when none), then ``<cause>_ns`` per cause (ints)."""
        mat = self.cause_ns.reshape(-1, len(GAP_CAUSES))
        largest = np.asarray(GAP_CAUSES, dtype=object)[mat.argmax(axis=1)] if len(mat) else \
            np.zeros(0, dtype=object)
        largest = np.where(mat.sum(axis=1) > 0, largest, "other")
        frame = pd.DataFrame({"start_ns": self.starts_ns.astype(np.int64),
                              "end_ns": self.ends_ns.astype(np.int64),
                              "duration_ns": (self.ends_ns - self.starts_ns).astype(np.int64),
                              "device_id": self.device_ids.astype(np.int64),
                              "cause": pd.Categorical(largest, categories=list(GAP_CAUSES))})
        for ci, cause in enumerate(GAP_CAUSES):  # twelve causes
            frame[f"{cause}_ns"] = mat[:, ci].astype(np.int64)
        return frame.sort_values(["start_ns", "device_id"], kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class GapsResult:
    """Gap totals. ``by_cause_ns`` and ``total_ns`` are per GPU (mean over the process's GPUs);
    ``count`` is over all GPUs. ``histogram``: (lo_ns, hi_ns | None, count, total_ns).
    ``by_cause_detail``: cause → the strongest evidence behind its time (None: no time);
    ``first_kernel_ns``: the process's first kernel start over the whole export (None: none);
    ``other_top_frames``: ``[{frame, samples, share}]`` sampled in ``other`` time."""

    window_ns: int
    min_gap_ns: int
    count: int
    total_ns: float
    by_cause_ns: dict
    histogram: tuple[tuple[int, int | None, int, int], ...]
    top: tuple[Gap, ...]
    per_device: tuple[dict, ...]
    by_cause_detail: dict = field(default_factory=dict)
    first_kernel_ns: int | None = None
    other_top_frames: tuple[dict, ...] = ()
    cpu_samples_available: bool = False
    intervals: GapIntervals | None = field(default=None, repr=False, compare=False)
    """Every gap with its causes (``GapIntervals``); not emitted by ``to_json``. None in a
    streamed result (``gaps/spans.py.merge_gaps``: O(gaps))."""

    available = True

    def cause_share(self, cause: str) -> float:
        """Idle time of ``cause`` as a fraction of the window (per GPU)."""
        return float(self.by_cause_ns.get(cause, 0.0)) / self.window_ns if self.window_ns else 0.0

    def dominant_cause(self) -> str | None:
        if not self.by_cause_ns or self.total_ns <= 0:
            return None
        return max(GAP_CAUSES, key=lambda c: (self.by_cause_ns.get(c, 0.0), -GAP_CAUSES.index(c)))

    def to_json(self) -> dict:
        return {
            "available": True,
            "count": self.count,
            "total_ms": self.total_ns / 1e6,
            "min_gap_ns": self.min_gap_ns,
            "by_cause": {c: float(self.by_cause_ns.get(c, 0.0)) / 1e6 for c in GAP_CAUSES},
            "by_cause_share": {c: self.cause_share(c) for c in GAP_CAUSES},
            "idle_share": sum(self.cause_share(c) for c in GAP_CAUSES),
            "by_cause_detail": {c: self.by_cause_detail.get(c) for c in GAP_CAUSES},
            "cause_priority": list(GAP_CAUSES),
            "first_kernel_ns": self.first_kernel_ns,
            "histogram": [{"lo_ns": lo, "hi_ns": hi, "count": n, "total_ms": t / 1e6}
                          for lo, hi, n, t in self.histogram],
            "top": [g.to_json() for g in self.top],
            "per_device": list(self.per_device),
            "cpu_samples_available": self.cpu_samples_available,
            "other_top_frames": [dict(f) for f in self.other_top_frames],
        }


def _cause_ns(gs: np.ndarray, ge: np.ndarray, evidence, launch: np.ndarray,
              unions: list | None = None, totals: list | None = None) -> np.ndarray:
    """Gap ns per cause (gaps × ``GAP_CAUSES``): each cause takes the gap time its evidence covers
    that no earlier cause took. ``evidence``: merged (start, end) sets of the causes before
    ``other`` (``ROW_CAUSES``: startup … launch's long launch calls), in precedence order;
    ``launch``: per gap, whether the whole gap is launch evidence (a short gap, what the rows
    left of it). ``unions``: when given, receives each growing union U_k (for ``gap_detail``);
    ``totals``: when given, receives the ns per cause summed over the gaps.

    A cause's time in a gap is |gap ∩ U_k| − |gap ∩ U_{k-1}|, U_k the union of the evidence of
    causes 1..k. perf (bench: ~300 union intervals against ~2M gaps): each union is searched
    into the gaps (``covered_length_touched``), so only the gaps it touches are written — a gap
    U_{k-1} touches U_k touches too; the matrix is column-major, so a column written at a few
    rows touches a few pages, not the whole matrix.
    """
    n_causes = len(GAP_CAUSES)
    mat = np.zeros((gs.size, n_causes), np.int64, order="F")
    sums = [0] * n_causes
    u_s, u_e = np.zeros(0, np.int64), np.zeros(0, np.int64)
    before = np.zeros(gs.size, np.int64)
    for ci, (ev_s, ev_e) in enumerate(evidence):  # the row causes (through launch), in order
        if ev_s.size:  # perf: an empty set covers nothing new
            u_s, u_e = iv.union_merged(u_s, u_e, ev_s, ev_e)
            idx, covered = iv.covered_length_touched(u_s, u_e, gs, ge)
            new = covered - before[idx]
            mat[idx, ci] = new
            sums[ci] = int(new.sum())
            before[idx] = covered
        if unions is not None:
            unions.append((u_s, u_e))
    left = (ge - gs) - before  # launch also takes the flagged short gaps whole; other, the rest
    li, oi = GAP_CAUSES.index("launch"), GAP_CAUSES.index("other")
    whole = np.where(launch, left, 0)
    mat[:, li] += whole
    mat[:, oi] = left - whole
    sums[li], sums[oi] = int(mat[:, li].sum()), int(mat[:, oi].sum())
    if totals is not None:
        totals.extend(sums)
    return mat


def _longest_first(dur: np.ndarray, k: int) -> np.ndarray:
    """``np.argsort(-dur, kind="stable")[:k]`` (ties: earlier first) without sorting every gap
    (perf, bench: a partition finds the k-th longest, only the gaps at least that long are sorted)."""
    if dur.size <= k:
        return np.argsort(-dur, kind="stable")
    kth = np.partition(dur, dur.size - k)[dur.size - k]
    cand = np.flatnonzero(dur >= kth)
    return cand[np.argsort(-dur[cand], kind="stable")][:k]


def _phase_rows(phases, canonical: str, fmt: str) -> EvidenceRows:
    """Instances of the phases that map to ``canonical``, labelled by phase name."""
    if not is_available(phases) or not phases.inst_starts_ns.size:
        return EvidenceRows.none()
    rows = np.array([r.canonical == canonical for r in phases.rows], bool)
    m = rows[phases.inst_row]
    return EvidenceRows.build(phases.inst_starts_ns[m], phases.inst_ends_ns[m],
                              phases.inst_row[m], tuple(fmt.format(r.name) for r in phases.rows))


def named_spans(ev: GapEvidence, phases):
    """Where host time is named (``evidence.PhaseSpans``): the step phases' instances, or,
    without them, the outermost NVTX ranges of the launching threads."""
    spans = phase_spans(phases) if is_available(phases) else None
    return spans if spans is not None else ev.nvtx_spans


def host_rows(ev: GapEvidence, phases) -> dict[str, EvidenceRows]:
    """The process-wide evidence rows of each host-side cause, phases included; ``host_cpu``'s
    intervals cut at the next data/overhead/communication start and named by phase."""
    data = _phase_rows(phases, "data", "{} (data phase)")
    over = _phase_rows(phases, "overhead", "{} (overhead phase)")
    comm_phase = _phase_rows(phases, "communication", "{} (communication phase)")
    comm = EvidenceRows.concat(ev.communication, comm_phase.without(ev.communication))
    stops = np.sort(np.concatenate((data.starts, over.starts, comm.starts)))
    host_cpu = split_by_phase(cut_at(ev.sync_follow, stops), named_spans(ev, phases))
    return {"startup": ev.startup, "input": data, "overhead": over, "communication": comm,
            "sync": ev.sync, "memory_management": ev.memory_management, "host_io": ev.host_io,
            "host_cpu": host_cpu, "launch": ev.launch_calls}


def device_causes(ev: GapEvidence, host: dict[str, EvidenceRows]
                   ) -> tuple[list[DeviceCauses], list[np.ndarray]]:
    """Per device: its evidence rows in precedence order and the cause matrix of its gaps."""
    devices, mats = [], []
    for d, gs, ge, launch in ev.devices:  # handful of devices
        plain, uvm = ev.copies[d]
        own_work = iv.union_merged(*iv.union_merged(*plain.cover, *uvm.cover),
                                   *host["host_io"].cover)
        own = {"startup": startup_without_own_work(host["startup"], own_work)}
        rows = tuple(plain if c == "transfer" else uvm if c == "unified_memory"
                     else own.get(c, host[c]) for c in ROW_CAUSES)
        unions: list = []
        totals: list = []
        mats.append(_cause_ns(gs, ge, [r.cover for r in rows], launch, unions, totals))
        devices.append(DeviceCauses(int(d), gs, ge, launch, rows, tuple(unions),
                                    np.asarray(totals, np.int64)))
    return devices, mats


def analyze_gaps(busy: dict[int, DeviceBusy], kernels: pd.DataFrame, api: pd.DataFrame,
                 sync: pd.DataFrame, phases, window: Window, *, th: Thresholds,
                 evidence: GapEvidence | None = None, memcpy: pd.DataFrame | None = None,
                 memset: pd.DataFrame | None = None, nvtx: pd.DataFrame | None = None,
                 osrt: pd.DataFrame | None = None,
                 cpu_samples: pd.DataFrame | None = None,
                 sampling_in_format: bool = True) -> GapsResult:
    """Gaps and causes for one process (the causes: module docstring). ``phases`` is a
    PhasesResult or Unavailable; ``evidence``: ``gap_evidence`` of the same inputs, when already
    computed; ``memcpy``/``memset``/``nvtx``/``osrt``/``cpu_samples``: the process's rows (None:
    not captured); ``sampling_in_format``: False when the input format cannot hold CPU samples
    (``cause_detail``)."""
    ev = evidence if evidence is not None else gap_evidence(
        busy, kernels, api, sync, window, th=th, memcpy=memcpy, memset=memset, nvtx=nvtx, osrt=osrt)
    devices, mats = device_causes(ev, host_rows(ev, phases))
    n_dev = max(len(busy), 1)
    by_cause = {c: 0.0 for c in GAP_CAUSES}
    per_device = []
    for dc in devices:  # handful of devices
        totals = dc.totals
        for ci, cause in enumerate(GAP_CAUSES):
            by_cause[cause] += float(totals[ci]) / n_dev
        per_device.append({"device_id": dc.device_id, "count": int(dc.gs.size),
                           "total_ms": float((dc.ge - dc.gs).sum()) / 1e6,
                           "by_cause": {c: float(totals[i]) / 1e6 for i, c in enumerate(GAP_CAUSES)}})
    gs, ge, dev, mat = all_gaps(devices, mats)
    dur = ge - gs
    samples_ok = cpu_samples is not None and len(cpu_samples) > 0
    frames = other_top_frames(cpu_samples, devices) if samples_ok and by_cause["other"] else []
    launch_gaps = sum(int((dc.launch & (m[:, GAP_CAUSES.index("launch")] > 0)).sum())
                      for dc, m in zip(devices, mats))
    in_phase = other_phase_ns(devices, named_spans(ev, phases)) if by_cause["other"] else {}
    detail = {c: cause_detail(c, by_cause[c], devices, launch_gaps=launch_gaps,
                              launch_max_ns=th.launch_gap_max_ns, other_frames=frames,
                              samples_available=samples_ok, osrt_available=ev.osrt_available,
                              host_io_min_ns=th.host_io_min_call_ns, other_phases=in_phase,
                              sampling_in_format=sampling_in_format)
              if by_cause[c] > 0 else None for c in GAP_CAUSES}
    top = top_gaps(gs, ge, dev, mat, devices, phases, api, cpu_samples, ev.ranges)
    return GapsResult(window_ns=window.duration_ns, min_gap_ns=th.min_gap_ns, count=int(gs.size),
                      total_ns=float(dur.sum()) / n_dev, by_cause_ns=by_cause,
                      histogram=gap_histogram(dur), top=top, per_device=tuple(per_device),
                      by_cause_detail=detail, first_kernel_ns=ev.first_kernel_ns,
                      other_top_frames=tuple(frames), cpu_samples_available=samples_ok,
                      intervals=GapIntervals(gs, ge, dev, mat))


def all_gaps(devices: list[DeviceCauses], mats: list[np.ndarray]):
    """(starts, ends, device ids, cause matrix) of every device's gaps, concatenated."""
    if not devices:
        e = np.zeros(0, np.int64)
        return e, e, e, np.zeros((0, len(GAP_CAUSES)), np.int64)
    if len(devices) == 1:  # perf (bench): one GPU's arrays as they are (no copy of the matrix)
        d = devices[0]
        return d.gs, d.ge, np.full(d.gs.size, d.device_id, np.int64), mats[0]
    return (np.concatenate([d.gs for d in devices]), np.concatenate([d.ge for d in devices]),
            np.concatenate([np.full(d.gs.size, d.device_id, np.int64) for d in devices]),
            np.concatenate(mats))


def gap_histogram(dur: np.ndarray) -> tuple:
    """(lo_ns, hi_ns | None, count, total ns) per fixed bin of gap durations."""
    edges = np.array(HIST_EDGES_NS, np.int64)
    bin_idx = np.searchsorted(edges, dur, side="right") - 1  # -1: below 1 µs (only if min_gap < 1 µs)
    hist = []
    for i, lo_e in enumerate(HIST_EDGES_NS):  # eight fixed bins
        m = bin_idx == i
        hi_e = HIST_EDGES_NS[i + 1] if i + 1 < len(HIST_EDGES_NS) else None
        hist.append((int(lo_e), hi_e, int(m.sum()), int(dur[m].sum())))
    return tuple(hist)


def top_gaps(gs, ge, dev, mat, devices: list[DeviceCauses], phases, api: pd.DataFrame,
             cpu_samples: pd.DataFrame | None,
             ranges: EvidenceRows | None = None) -> tuple[Gap, ...]:
    """The ``TOP_GAPS`` longest gaps with their cause, phase, CPU activity and evidence
    (``ranges``: the launching threads' ranges, ``GapEvidence.ranges``)."""
    ranges = ranges if ranges is not None else EvidenceRows.none()
    top = []
    has_phases = is_available(phases)
    order = _longest_first(ge - gs, TOP_GAPS)
    cpu = cpu_overlap(api) if order.size else None
    by_id = {d.device_id: d for d in devices}
    io_row = ROW_CAUSES.index("host_io")
    io = {d: by_id[d].rows[io_row] for d in by_id}
    for j in order:  # ≤ 10 gaps
        cause = GAP_CAUSES[int(np.argmax(mat[j]))] if mat[j].sum() else "other"
        phase = None
        if has_phases and phases.inst_starts_ns.size:
            ov = (np.minimum(phases.inst_ends_ns, ge[j]) - np.maximum(phases.inst_starts_ns, gs[j]))
            k = int(np.argmax(ov))
            if ov[k] > 0:
                phase = phases.rows[int(phases.inst_row[k])].name
        rows = gap_evidence_rows(mat[j], int(gs[j]), int(ge[j]), by_id[int(dev[j])], cpu_samples)
        activity = gap_activity(cpu, io[int(dev[j])], int(gs[j]), int(ge[j]),
                                 range_activity(ranges, int(gs[j]), int(ge[j]), phases))
        top.append(Gap(int(gs[j]), int(ge[j] - gs[j]), int(dev[j]), cause, activity, phase,
                       tuple(rows)))
    return tuple(top)
