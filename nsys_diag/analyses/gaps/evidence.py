"""Evidence for the idle-gap causes: per cause, the intervals (ns) that cover gap time and the
named rows behind them (an API call, an NVTX range, a copy, an OS-runtime call).

What each cause's evidence is, and the order in which the causes take gap time, is defined once,
in ``analyses/gaps/causes.py``'s module docstring. This module only builds the sets, vectorised: every
name test runs once per *category* (``name_mask``), never once per row, and every set is at worst
one sort of the rows it keeps.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.analyses.timeline.arrays import all_equal
from nsys_diag.analyses.gaps.rows import (ATEN_RE, COMM_DOMAINS, COMM_NAME_RE, EMPTY, HOST_IO_RE,
                                         INIT_RANGE_RE, NON_BLOCKING_SYNC_RE, ApiNames,
                                         EvidenceRows, fixed, labelled, name_mask)
from nsys_diag.analyses.steps.detection import normalize_name, step_family
from nsys_diag.analyses.steps.phase_names import canonical_phase
from nsys_diag.model.contracts import MISSING


# ---------------------------------------------------------------------------- cause builders
BEFORE_FIRST_KERNEL = "before the process's first kernel"


def first_kernel_ns(kernels: pd.DataFrame) -> int | None:
    """Start (ns) of the process's first kernel over the whole export (not just the window)."""
    return int(kernels["start_ns"].to_numpy(np.int64).min()) if len(kernels) else None


def startup_rows(first_kernel: int | None, window_start_ns: int, api: pd.DataFrame,
                 nvtx: pd.DataFrame | None, names: ApiNames | None = None) -> EvidenceRows:
    """Before the first kernel; one-off initialisation calls (``INIT_API_RE``) and NVTX ranges
    (``INIT_RANGE_RE``). The first CUDA runtime call (which creates the primary context: the
    ``cudaFree(0)`` idiom) runs before the first kernel, so the first rule already holds it; it
    is not matched by itself (in a capture that starts mid-run it is an ordinary call)."""
    parts = []
    if first_kernel is not None and first_kernel > window_start_ns:
        parts.append(fixed([window_start_ns], [first_kernel], BEFORE_FIRST_KERNEL))
    if len(api):
        parts.append(labelled(api, (names or ApiNames(api)).mask("init"), "name", "{}"))
    if nvtx is not None and len(nvtx):
        parts.append(labelled(nvtx, name_mask(nvtx["text"], INIT_RANGE_RE), "text", "{} (NVTX)"))
    return EvidenceRows.concat(*parts)


def startup_without_own_work(rows: EvidenceRows, own_work: tuple[np.ndarray, np.ndarray]
                             ) -> EvidenceRows:
    """Start-up rows of one device with the program's own work taken out of "before the first
    kernel": while a copy or memset runs on the device, or a launching thread is in a file or
    network call (``own_work``: both covers, merged), the program is doing its work (a benchmark's
    input upload, a model's weights, reading its input files), not starting up — that time goes
    to the later causes (``transfer``, ``host_io``: what the replay prices as copies and host
    I/O). One-off initialisation rows are kept whole."""
    if not len(rows) or not own_work[0].size or BEFORE_FIRST_KERNEL not in rows.labels:
        return rows
    code = rows.labels.index(BEFORE_FIRST_KERNEL)
    own = rows.label == code
    if not own.any():
        return rows
    ps, pe = iv.subtract_merged(*iv.merge_intervals(rows.starts[own], rows.ends[own]), *own_work)
    rest = EvidenceRows.build(rows.starts[~own], rows.ends[~own], rows.label[~own], rows.labels)
    return EvidenceRows.concat(EvidenceRows.build(ps, pe, np.full(ps.size, code, np.int64),
                                                  rows.labels), rest)


def communication_rows(api: pd.DataFrame, nvtx: pd.DataFrame | None,
                       names: ApiNames | None = None) -> EvidenceRows:
    """NVTX ranges of the MPI/NCCL domains, NVTX ranges and API calls with collective or
    point-to-point names (``COMM_NAME_RE``, not ``aten::*``), on any thread of the process."""
    parts = []
    if nvtx is not None and len(nvtx):
        dom = nvtx["domain"]
        dom = dom if isinstance(dom.dtype, pd.CategoricalDtype) else dom.astype("category")
        codes = dom.cat.codes.to_numpy()
        in_domain = np.zeros(len(nvtx), bool)
        for ci, d in enumerate(dom.cat.categories):  # a handful of domains
            if str(d).lower() in COMM_DOMAINS:
                m = codes == ci
                in_domain |= m
                tag = str(d).replace("{", "{{").replace("}", "}}")
                parts.append(labelled(nvtx, m, "text", "{} (NVTX, " + tag + " domain)"))
        named = name_mask(nvtx["text"], COMM_NAME_RE, exclude=ATEN_RE) & ~in_domain
        parts.append(labelled(nvtx, named, "text", "{} (NVTX)"))
    if len(api):
        parts.append(labelled(api, (names or ApiNames(api)).mask("comm"), "name", "{}"))
    return EvidenceRows.concat(*parts)


def copy_rows(memcpy: pd.DataFrame | None, memset: pd.DataFrame | None, device: int,
              copy_cover: tuple[np.ndarray, np.ndarray]) -> tuple[EvidenceRows, EvidenceRows]:
    """(plain memcpy/memset, unified-memory migrations) on ``device``. ``copy_cover``: the merged
    copy-busy intervals of the device, reused as the plain-copy cover when no migration ran."""
    if memcpy is None:
        return fixed(*copy_cover, "memcpy/memset").with_cover(copy_cover), EvidenceRows.none()
    on = memcpy["device_id"].to_numpy(np.int64) == device
    uvm = name_mask(memcpy["copy_kind"], re.compile(r"^uvm_")) & on if len(memcpy) else on
    plain = on & ~uvm
    sets = EvidenceRows.none()
    if memset is not None and len(memset):
        m = memset["device_id"].to_numpy(np.int64) == device
        sets = fixed(memset["start_ns"].to_numpy(np.int64)[m],
                     memset["end_ns"].to_numpy(np.int64)[m], "memset")
    rows = EvidenceRows.concat(labelled(memcpy, plain, "copy_kind", "memcpy {}"), sets)
    if not uvm.any():
        return rows.with_cover(copy_cover), EvidenceRows.none()
    return rows, labelled(memcpy, uvm, "copy_kind", "unified-memory migration ({})")


def rows_within(rows: EvidenceRows, s_: np.ndarray, e_: np.ndarray) -> EvidenceRows:
    """The parts of ``rows`` inside the merged intervals ``s_``/``e_`` (sorted, disjoint), each
    labelled as its row. Searched from the small side: each row meets the contiguous run of
    intervals that overlap it (two binary searches of the rows into the intervals)."""
    if not len(rows) or not s_.size:
        return EvidenceRows.none()
    lo = np.searchsorted(e_, rows.starts, side="right")
    hi = np.searchsorted(s_, rows.ends, side="left")
    cnt = np.maximum(hi - lo, 0)
    ri = np.repeat(np.arange(len(rows)), cnt)
    ii = np.repeat(lo, cnt) + (np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt))
    return EvidenceRows.build(np.maximum(rows.starts[ri], s_[ii]), np.minimum(rows.ends[ri], e_[ii]),
                              rows.label[ri], rows.labels)


def while_gpu_works(rows: EvidenceRows, busy: dict | None) -> EvidenceRows:
    """The parts of the blocking calls ``rows`` during which some GPU of the process still works
    (a kernel or a copy on any device, ``busy``: merged busy intervals per device; None: unknown,
    the whole calls): the host waits *for the GPU* only then. Pointwise, so a chunk of a
    streamed run decides it from its own rows."""
    if busy is None:
        return rows
    parts = [rows_within(rows, s_, e_) for b in busy.values()  # a handful of devices
             for s_, e_ in ((b.compute_starts, b.compute_ends), (b.copy_starts, b.copy_ends))]
    return EvidenceRows.concat(*parts)


def sync_rows(api: pd.DataFrame, sync: pd.DataFrame, names: ApiNames | None = None,
              busy: dict | None = None, open_end_ns: int | None = None
              ) -> tuple[EvidenceRows, EvidenceRows]:
    """(host blocked in a synchronising call while a GPU still works, the host's own time
    around it): each blocking call (API row or CUPTI synchronization record) is a wait for the
    GPU while any device of the process is busy (``while_gpu_works``); from the call's start to
    the start of the next call of the process that enqueues GPU work (``ENQUEUE_API_RE``) the
    rest is the host's — the call after the GPU drained, then its own code. When the rows hold
    no later enqueue call, to ``open_end_ns`` (the end of the analysed span: every gap after the
    call is the host's; a chunk of a streamed run, whose rows stop past its end, then covers
    its gaps exactly as the whole export does); None without it."""
    names = names or ApiNames(api)
    blocked = [labelled(api, names.mask("sync"), "name", "in {}")] if len(api) else []
    if len(sync):  # CUPTI records: named by their API call when it is known
        api_name = sync["launch_api"]
        blocking = ~name_mask(api_name, NON_BLOCKING_SYNC_RE) & \
            (sync["sync_kind"].astype(str) != "stream_wait").to_numpy()
        named = (api_name.astype(str) != "").to_numpy()
        blocked += [labelled(sync, blocking & named, "launch_api", "in {}"),
                    labelled(sync, blocking & ~named, "sync_kind", "in a synchronization ({})")]
    if len(api):
        enq_mask = names.mask("enqueue")
        enq = api["start_ns"].to_numpy(np.int64)[enq_mask]
        del enq_mask
        if not iv.is_sorted(enq):
            enq = np.sort(enq)
    else:
        enq = EMPTY
    waits, follow = [], []
    for rows in blocked:  # at most three sets
        if not len(rows):
            continue
        waits.append(while_gpu_works(rows, busy))
        if not enq.size and open_end_ns is None:
            continue
        i = np.searchsorted(enq, rows.ends, side="left")
        ok = i < enq.size
        nxt = enq[np.minimum(i, enq.size - 1)] if enq.size else np.zeros(i.size, np.int64)
        if open_end_ns is not None and not ok.all():  # no later enqueue: to the span's end
            nxt = np.where(ok, nxt, max(open_end_ns, 0))
            ok = np.ones(ok.size, bool)
        labels = tuple(lab.replace("in ", "after ", 1) + " returned" for lab in rows.labels)
        follow.append(EvidenceRows.build(rows.starts[ok], nxt[ok], rows.label[ok], labels))
    return EvidenceRows.concat(*waits), EvidenceRows.concat(*follow)


def cut_at(rows: EvidenceRows, stops: np.ndarray) -> EvidenceRows:
    """Each row ends at the first of ``stops`` (sorted ns) at or after its start, if earlier:
    a host_cpu interval never runs across the start of a data/overhead/communication phase."""
    if not len(rows) or not stops.size:
        return rows
    i = np.searchsorted(stops, rows.starts, side="left")
    nxt = np.where(i < stops.size, stops[np.minimum(i, stops.size - 1)], np.iinfo(np.int64).max)
    return EvidenceRows.build(rows.starts, np.minimum(rows.ends, nxt), rows.label, rows.labels)


PhaseSpans = tuple[np.ndarray, np.ndarray, tuple[str, ...]]
"""(starts, ends, names) of disjoint, sorted phase spans (ns): where host time is named."""


def outer_nvtx_spans(nvtx: pd.DataFrame | None, threads: np.ndarray) -> PhaseSpans:
    """The outermost default-domain NVTX ranges of ``threads`` (the threads that enqueue GPU
    work), sorted and disjoint, named by their canonical phase when the name maps to one, else
    by their family name (``layer_3`` → ``layer_N``) — as the replay names a critical-path
    phase (``replay/phases.py``). Library domains (NCCL, MPI …) wrap calls; they are no phases."""
    if nvtx is None or not len(nvtx) or not threads.size:
        return EMPTY, EMPTY, ()
    keep = np.isin(nvtx["global_tid"].to_numpy(np.int64), threads)
    keep &= (nvtx["domain"].astype(str) == "").to_numpy()
    s, e = nvtx["start_ns"].to_numpy(np.int64)[keep], nvtx["end_ns"].to_numpy(np.int64)[keep]
    ok = e > s
    s, e = s[ok], e[ok]
    if not s.size:
        return EMPTY, EMPTY, ()
    texts = nvtx["text"].astype(str).to_numpy()[keep][ok]
    order = np.lexsort((-e, s))
    s, e, texts = s[order], e[order], texts[order]
    prior = np.maximum.accumulate(e)
    top = np.ones(s.size, bool)
    top[1:] = s[1:] >= prior[:-1]  # inside (or overlapping) an earlier range: not outermost
    named: dict[str, str] = {}
    for t in pd.unique(texts[top]):  # distinct outermost names (a few)
        norm = normalize_name(str(t))
        canon = canonical_phase(norm)
        named[str(t)] = canon if canon != "other" else step_family(norm)
    return s[top], e[top], tuple(named[str(t)] for t in texts[top])


def launching_ranges(nvtx: pd.DataFrame | None, threads: np.ndarray, span: tuple[int, int],
                     steps=None, cpu_ops: pd.DataFrame | None = None) -> EvidenceRows:
    """Where a launching thread's host time can be named (the top-gap table's "CPU was"): its
    closed NVTX ranges (any domain) that overlap ``span`` [lo, hi) and lie inside another range
    of the same thread — the outermost ones are a loop or a step (``outer_nvtx_spans`` names host
    time by them); enclosing ranges overlap the span too, so nesting is decided within it, the
    same for a chunk as for the whole window — less the ranges of ``steps`` (a ``StepsResult``:
    a step is no place the host was in), and, from a PyTorch profiler trace, its host operator
    ranges (``cpu_ops``: ``TraceBundle.cpu_ops``, any depth). Labelled ``<text> (NVTX)`` /
    ``<text> (cpu_op)`` with the text as written: ``normalize_name`` strips ``, seq = N`` /
    ``, op_id = N`` from the one label shown (perf: an export of a million ``emit_nvtx`` op ranges
    normalises no label per range)."""
    return EvidenceRows.concat(_range_rows(nvtx, threads, span, steps, "NVTX"),
                               _range_rows(cpu_ops, threads, span, None, "cpu_op"))


def _range_rows(frame: pd.DataFrame | None, threads: np.ndarray, span: tuple[int, int], steps,
                kind: str) -> EvidenceRows:
    """``frame``'s closed ranges of ``threads`` overlapping ``span`` labelled ``<text> (kind)``;
    NVTX ranges only where nested in a range of their own thread and not a step's."""
    if frame is None or not len(frame) or not threads.size:
        return EvidenceRows.none()
    s, e = frame["start_ns"].to_numpy(np.int64), frame["end_ns"].to_numpy(np.int64)
    tid = frame["global_tid"].to_numpy(np.int64)
    keep = (e > s) & (s < span[1]) & (e > span[0]) & np.isin(tid, threads)
    if "closed" in frame:
        keep &= frame["closed"].to_numpy(bool)
    idx = np.flatnonzero(keep)
    if kind == "NVTX" and idx.size:
        idx = idx[np.lexsort((-e[idx], s[idx], tid[idx]))]  # per thread: by start, outer first
        idx = idx[_nested_in_same_thread(tid[idx], s[idx], e[idx])
                  & ~_step_ranges(s[idx], e[idx], steps)]
    if not idx.size:
        return EvidenceRows.none()
    text = frame["text"]
    cat = text if isinstance(text.dtype, pd.CategoricalDtype) else text.astype("category")
    used, codes = np.unique(cat.cat.codes.to_numpy()[idx], return_inverse=True)
    names = cat.cat.categories
    return EvidenceRows.build(s[idx], e[idx], codes,
                              tuple(f"{names[c] if c >= 0 else '?'} ({kind})" for c in used))


def _nested_in_same_thread(tid: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Per range (sorted by thread, start, longest first): whether an earlier range of its thread
    contains it (ends at or after its end) — overlapping start/end ranges do not nest."""
    inner = np.zeros(s.size, bool)
    bounds = np.flatnonzero(np.diff(tid)) + 1
    for a, b in zip(np.r_[0, bounds], np.r_[bounds, s.size]):  # a handful of threads
        if b - a > 1:
            inner[a + 1:b] = e[a + 1:b] <= np.maximum.accumulate(e[a:b])[:-1]
    return inner


def _step_ranges(s: np.ndarray, e: np.ndarray, steps) -> np.ndarray:
    """Per range: whether its bounds are a step's (``StepsResult.starts_ns``/``ends_ns``)."""
    st = getattr(steps, "starts_ns", None)
    if st is None or not np.asarray(st).size:
        return np.zeros(s.size, bool)
    st, en = np.asarray(st, np.int64), np.asarray(steps.ends_ns, np.int64)
    order = np.argsort(st, kind="stable")
    st, en = st[order], en[order]
    i = np.minimum(np.searchsorted(st, s), st.size - 1)
    return (st[i] == s) & (en[i] == e)


def phase_spans(phases) -> PhaseSpans | None:
    """The step phases' instances (``PhasesResult``) as ``PhaseSpans``, named by their canonical
    phase (their own name when it maps to none); None without phases."""
    inst = getattr(phases, "inst_starts_ns", None)
    if inst is None or not inst.size:
        return None
    rows = [r.canonical if r.canonical != "other" else r.name for r in phases.rows]
    order = np.argsort(inst, kind="stable")
    return (inst[order], phases.inst_ends_ns[order],
            tuple(rows[int(k)] for k in phases.inst_row[order]))


def split_by_phase(rows: EvidenceRows, spans: PhaseSpans) -> EvidenceRows:
    """``rows`` cut at the phase spans: each piece inside a span is labelled ``in <phase>``, the
    pieces outside every span keep the row's own label with ", outside every NVTX range". No
    spans at all (an export without NVTX ranges on the launching threads): the rows as they are —
    "outside every range" would name ranges the capture does not have.
    Vectorised: each row meets the contiguous run of spans that overlap it (two searches)."""
    ps, pe, pnames = spans
    if not len(rows) or not ps.size:
        return rows
    out_labels = tuple(lab + ", outside every NVTX range" for lab in rows.labels)
    rs, re_ = rows.starts, rows.ends
    lo = np.searchsorted(pe, rs, side="right")
    hi = np.searchsorted(ps, re_, side="left")
    cnt = np.maximum(hi - lo, 0)
    ri = np.repeat(np.arange(rs.size), cnt)
    si = np.repeat(lo, cnt) + (np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt))
    a, b = np.maximum(rs[ri], ps[si]), np.minimum(re_[ri], pe[si])
    # outside pieces: before each inside piece (from the previous piece's end or the row start),
    # and after the row's last inside piece (the whole row when none)
    first = np.ones(ri.size, bool)
    first[1:] = ri[1:] != ri[:-1]
    prev = np.where(first, rs[ri], np.roll(b, 1))
    last_end = rs.copy()
    if ri.size:
        np.maximum.at(last_end, ri, b)
    uniq = sorted(set(pnames))
    code = {n: i for i, n in enumerate(uniq)}
    span_code = np.array([code[n] for n in pnames], np.int64)
    n_own = len(rows.labels)
    return EvidenceRows.build(
        np.concatenate([a, prev, last_end]), np.concatenate([b, a, re_]),
        np.concatenate([span_code[si] + n_own, rows.label[ri], rows.label]),
        out_labels + tuple(f"in {n}" for n in uniq))


def memory_rows(api: pd.DataFrame, names: ApiNames | None = None) -> EvidenceRows:
    """Host inside a memory-management call (``MEM_API_RE``)."""
    if not len(api):
        return EvidenceRows.none()
    return labelled(api, (names or ApiNames(api)).mask("mem"), "name", "in {}")


def host_io_rows(osrt: pd.DataFrame | None, api: pd.DataFrame, min_call_ns: int,
                 names: ApiNames | None = None) -> EvidenceRows:
    """OS-runtime file and network calls (``HOST_IO_RE``) of at least ``min_call_ns`` (0: every
    call, however short) — only on threads that enqueue GPU work (any CUDA-calling thread when
    none does): helper threads' I/O does not hold the GPU up."""
    if osrt is None or not len(osrt) or not len(api):
        return EvidenceRows.none()
    dur = osrt["end_ns"].to_numpy(np.int64) - osrt["start_ns"].to_numpy(np.int64)
    m = name_mask(osrt["name"], HOST_IO_RE)
    if min_call_ns > 0:
        m &= dur >= min_call_ns
    if not m.any():
        return EvidenceRows.none()
    tids = api["global_tid"].to_numpy(np.int64)
    launching = tids[(names or ApiNames(api)).mask("enqueue")]
    threads = pd.unique(launching if launching.size else tids)
    m &= np.isin(osrt["global_tid"].to_numpy(np.int64), threads)
    return labelled(osrt, m, "name", "{}()")


def launched_late(ks: np.ndarray, le: np.ndarray, gap_s: np.ndarray, gap_e: np.ndarray
                  ) -> np.ndarray:
    """Per gap: the kernel starting at the gap's end had its launch call end after the gap began
    (``ks``/``le``: one device's kernel start and launch-end columns, ns)."""
    if not ks.size or gap_s.size == 0:
        return np.zeros(gap_s.size, bool)
    if not (ks[1:] > ks[:-1]).all():  # perf (bench): rows already in strict start order need no sort
        order = np.lexsort((le, ks))
        ks, le = ks[order], le[order]
    i = np.searchsorted(ks, gap_e, side="left")
    ok = i < ks.size
    j = np.minimum(i, ks.size - 1)
    return ok & (ks[j] == gap_e) & (le[j] != MISSING) & (le[j] >= gap_s)


# ------------------------------------------------------------------------------ the evidence
@dataclass(frozen=True)
class GapEvidence:
    """The part of a process's gap analysis that needs no phases (``gap_evidence``): per device
    the gaps (ns), whether launch evidence covers each, and its copy rows; process-wide, the rows
    of the host-side causes. The suite computes it while the phases are still being analysed
    (perf)."""

    devices: tuple  # (device_id, gap starts, gap ends, launch flags) per device, sorted by id
    copies: dict  # device_id -> (plain memcpy/memset rows, unified-memory migration rows)
    startup: EvidenceRows
    communication: EvidenceRows
    sync: EvidenceRows
    sync_follow: EvidenceRows  # host_cpu: after each wait to the next enqueue (not yet cut)
    memory_management: EvidenceRows
    host_io: EvidenceRows
    first_kernel_ns: int | None
    launch_calls: EvidenceRows = field(default_factory=EvidenceRows.none)
    """launch: the kernel/graph launch calls that overlap a gap longer than ``launch_gap_max_ns``."""
    osrt_available: bool = False
    nvtx_spans: PhaseSpans = (EMPTY, EMPTY, ())  # host_cpu's phases when there are no step phases
    ranges: EvidenceRows = field(default_factory=EvidenceRows.none)
    """``launching_ranges``: what the top-gap table's "CPU was" may name."""


def gap_evidence(busy: dict, kernels: pd.DataFrame, api: pd.DataFrame, sync: pd.DataFrame,
                 window, *, th, memcpy: pd.DataFrame | None = None,
                 memset: pd.DataFrame | None = None, nvtx: pd.DataFrame | None = None,
                 osrt: pd.DataFrame | None = None, steps=None,
                 launch_threads: np.ndarray | None = None,
                 cpu_ops: pd.DataFrame | None = None) -> GapEvidence:
    """Gaps per device and the evidence of every cause that needs no phases (the definitions:
    ``analyses/gaps/causes.py``). ``kernels``/``api``/``sync``/``memcpy``/``memset``/``nvtx``/``osrt``:
    the process's rows over the whole export; ``busy``: its merged busy intervals in ``window``.
    Without ``memcpy`` every copy is a plain transfer (no migration can be told apart).
    ``steps`` (left out of ``ranges``), ``launch_threads`` (the process's enqueuing threads,
    when ``api`` holds only part of its rows: a streamed chunk) and ``cpu_ops`` (a PyTorch
    profiler trace's host operator ranges) name the top gaps' ranges."""
    lo, hi = window.start_ns, window.end_ns
    # perf (bench): the busy intervals are already merged: no re-clip / re-merge of 2M intervals
    dev_gaps = {d: iv.find_gaps_merged(b.compute_starts, b.compute_ends, lo, hi,
                                       min_gap=th.min_gap_ns)
                for d, b in sorted(busy.items())}
    first = first_kernel_ns(kernels)
    names = ApiNames(api)
    # the CUDA API traced: a blocking call no enqueue call follows is the host's to the end
    waits, follow = sync_rows(api, sync, names, busy, open_end_ns=hi if len(api) else None)
    return GapEvidence(
        devices=_launch_flags(dev_gaps, kernels, api, th, names),
        launch_calls=long_launch_rows(api, names, dev_gaps, th.launch_gap_max_ns),
        copies={d: copy_rows(memcpy, memset, d, (b.copy_starts, b.copy_ends))
                for d, b in sorted(busy.items())},
        startup=startup_rows(first, lo, api, nvtx, names),
        communication=communication_rows(api, nvtx, names),
        sync=waits, sync_follow=follow,
        memory_management=memory_rows(api, names),
        host_io=host_io_rows(osrt, api, th.host_io_min_call_ns, names),
        first_kernel_ns=first,
        osrt_available=osrt is not None and len(osrt) > 0,
        nvtx_spans=outer_nvtx_spans(nvtx, threads := enqueuing_threads(api, names)),
        ranges=launching_ranges(nvtx, threads if launch_threads is None else launch_threads,
                                (lo, hi), steps, cpu_ops))


def enqueuing_threads(api: pd.DataFrame, names: ApiNames) -> np.ndarray:
    """Thread ids that enqueue GPU work (every CUDA-calling thread when none does)."""
    if not len(api):
        return EMPTY
    tids = api["global_tid"].to_numpy(np.int64)
    launching = tids[names.mask("enqueue")]
    return np.unique(launching if launching.size else tids)


LONG_LAUNCH_BLOCK = 1 << 18
"""API rows searched at a time by ``long_launch_rows`` (its temporaries stay a few MiB)."""


def long_launch_rows(api: pd.DataFrame, names: ApiNames, dev_gaps: dict, max_short_ns: int
                     ) -> EvidenceRows:
    """The kernel/graph launch calls (labelled by API name) that overlap a gap longer than
    ``max_short_ns`` on any device: a launch call that outlasts the queued work (a module loaded
    or code compiled at first launch, a driver stall) holds the GPU idle for the time it covers.
    perf (bench: 2M launch rows): the launch rows against the long gaps merged over the devices
    (``intervals.overlaps_merged``), a block at a time; only the calls that touch one are kept."""
    if not len(api) or not dev_gaps:
        return EvidenceRows.none()
    gs = np.concatenate([g[0] for g in dev_gaps.values()])
    ge = np.concatenate([g[1] for g in dev_gaps.values()])
    long_ = (ge - gs) > max_short_ns
    if not long_.any():
        return EvidenceRows.none()
    ls, le = iv.merge_intervals(gs[long_], ge[long_])
    mask = names.mask("kernel_launch")
    starts, ends = api["start_ns"].to_numpy(np.int64), api["end_ns"].to_numpy(np.int64)
    for a in range(0, mask.size, LONG_LAUNCH_BLOCK):  # perf (bench): bounded temporaries
        rows = a + np.flatnonzero(mask[a:a + LONG_LAUNCH_BLOCK])
        mask[rows] = iv.overlaps_merged(starts[rows], ends[rows], ls, le)
    return labelled(api, mask, "name", "{}") if mask.any() else EvidenceRows.none()


def _launch_flags(dev_gaps: dict, kernels: pd.DataFrame, api: pd.DataFrame, th,
                  names: ApiNames) -> tuple:
    """(device, gap starts, gap ends, launch flags) per device: a gap ≤ ``launch_gap_max_ns``
    that a launch/enqueue call overlaps, or whose closing kernel was launched after it began."""
    empty = EMPTY
    # a launch/enqueue call overlaps the gap: one pass over the API rows for every device's gaps
    launch_rows = names.mask("launch")
    overlaps = iv.overlaps_any(api["start_ns"].to_numpy(np.int64), api["end_ns"].to_numpy(np.int64),
                               np.concatenate([g[0] for g in dev_gaps.values()] or [empty]),
                               np.concatenate([g[1] for g in dev_gaps.values()] or [empty]),
                               rows=launch_rows)
    del launch_rows
    kdev = kernels["device_id"].to_numpy(np.int64) if len(kernels) else empty
    one_device = all_equal(kdev)
    k_start = kernels["start_ns"].to_numpy(np.int64) if len(kernels) else empty
    k_launch_end = kernels["launch_end_ns"].to_numpy(np.int64) if len(kernels) else empty
    done = 0
    devices = []
    for d, (gs, ge) in dev_gaps.items():  # handful of devices
        overl = overlaps[done:done + gs.size]
        done += gs.size
        short = (ge - gs) <= th.launch_gap_max_ns
        # perf (bench): the two columns it reads as arrays, no copy with one device
        if one_device or not kdev.size:
            on_d = (k_start, k_launch_end) if kdev.size and kdev[0] == d else (empty, empty)
        else:
            on_d = (k_start[kdev == d], k_launch_end[kdev == d])
        devices.append((d, gs, ge, short & (overl | launched_late(*on_d, gs, ge))))
    return tuple(devices)
