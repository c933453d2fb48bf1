"""Turn a :class:`~nsys_diag.synth_scenarios.Scenario` into schema-independent event columns.

The result (:class:`Timeline`) holds numpy arrays per event kind (CUDA API calls, kernels,
memcpys, memsets, synchronisations, NVTX rows, GPU-metric samples, GPU memory events) with
categorical codes instead of strings; :mod:`nsys_diag.synth` maps it onto the tables of one
schema variant. Everything is vectorised over steps × items (loops only over processes, phases,
threads, streams and metric profiles) so millions of kernels build in seconds.

Timing model (all integer ns):

* steps tile the time line from ``session_offset + preamble`` on; phases tile each step exactly;
* a phase occurrence of duration D places each launch call at ``start + a·D + b`` (``a``, ``b``
  from the phase template: spread evenly over the window, packed, or grouped at ``at``);
* GPU op ready time = call start + ``launch_latency_ns`` + (0..6 µs deterministic pattern);
  each (process, stream) is a FIFO with ``gpu_gap_ns`` between back-to-back ops:
  ``end_i = T_i + cummax(ready_j + dur_j - T_j)`` with ``T`` the cumulative (dur + gap);
* a sync call lasts until the work it waits for has drained (capped at the thread's next call
  or the phase end); its SYNCHRONIZATION row lies inside the call.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from nsys_diag.synth_scenarios import (
    COMPUTE_STREAM, MS, US, DEFAULT_METRIC_LEVELS, KernelInfo, PhaseSpec, Scenario, kernel_info)
from nsys_diag.synth_schema import (
    DRIVER_APIS, GPU_METRIC_NAMES, NO_ID_U32, global_pid, global_tid, gpu_model)

KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET, KIND_SYNC = 0, 1, 2, 3
COPY_KIND = {"H2D": 1, "D2H": 2, "D2D": 8}  # ENUM_CUDA_MEMCPY_OPER
MEM_PAGEABLE, MEM_PINNED, MEM_DEVICE = 0, 1, 2  # ENUM_CUDA_MEM_KIND (nsys numbering)
SYNC_KIND = {"cudaStreamSynchronize": "stream", "cudaDeviceSynchronize": "device",
             "cudaEventSynchronize": "event", "cuStreamSynchronize": "stream",
             "cuCtxSynchronize": "device", "cuEventSynchronize": "event"}
SYNC_KINDS = ("stream", "device", "event")
NVTX_MARK, NVTX_PUSHPOP, NVTX_STARTEND, NVTX_DOMAIN_CREATE = 34, 59, 60, 75

_OTHER_THREADS = ("[NSys]", "[NSys Comms]", "CUPTI worker th", "cuda-EvtHandlr")


@dataclass
class ProcessInfo:
    index: int
    pid: int
    device: int
    context: int
    threads: dict[str, tuple[int, str]]  # key -> (tid, thread name)

    @property
    def gpid(self) -> int:
        return global_pid(self.pid)

    def gtid(self, key: str) -> int:
        return global_tid(self.pid, self.threads[key][0])


class Codes:
    """An append-only list of distinct strings with integer codes (insertion order)."""

    def __init__(self) -> None:
        self.values: list[str] = []
        self._index: dict[str, int] = {}

    def code(self, value: str) -> int:
        i = self._index.get(value)
        if i is None:
            i = self._index[value] = len(self.values)
            self.values.append(value)
        return i


@dataclass
class Timeline:
    """Schema-independent columns. ``*_code`` columns index the Codes lists named alongside."""

    scenario: Scenario
    processes: list[ProcessInfo]
    api_names: Codes  # base API names (no _vNNNN suffix)
    kernel_infos: list[KernelInfo]
    nvtx_texts: Codes
    phase_names: Codes
    domains: list[str]  # domain id - 1 -> name (domain ids start at 1)
    api: dict[str, np.ndarray]
    kernels: dict[str, np.ndarray]
    memcpy: dict[str, np.ndarray]
    memset: dict[str, np.ndarray]
    sync: dict[str, np.ndarray]
    nvtx: dict[str, np.ndarray]
    metrics: dict[str, np.ndarray]
    memory: dict[str, np.ndarray]
    steps: dict[str, np.ndarray]  # pidx, step, start, end
    phase_occ: dict[str, np.ndarray]  # pidx, step, phase_code, start, end
    first_ts: int
    capture_end: int
    extra: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# small vectorised helpers
# ---------------------------------------------------------------------------------------------

def _cat(parts: list[dict[str, np.ndarray]], keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Concatenate column dicts; a key missing from a part is filled with -1 for its rows."""
    out = {}
    for k in keys:
        arrs = []
        for p in parts:
            if k in p:
                arrs.append(np.asarray(p[k]))
            else:
                n = len(next(iter(p.values())))
                arrs.append(np.full(n, -1, np.int64))
        out[k] = np.concatenate(arrs) if arrs else np.zeros(0, np.int64)
    return out


def _fifo(ready: np.ndarray, dur: np.ndarray, gap: int) -> np.ndarray:
    """End times of ops run in ``ready`` order on one FIFO stream (see module docstring)."""
    slot = dur + gap
    t = np.cumsum(slot)
    return t + np.maximum.accumulate(ready + dur - t)


def union_intervals(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge possibly overlapping intervals; returns sorted disjoint (starts, ends)."""
    if s.size == 0:
        return s.astype(np.int64), e.astype(np.int64)
    o = np.argsort(s, kind="stable")
    s, e = s[o], e[o]
    run = np.maximum.accumulate(e)
    new = np.ones(s.size, bool)
    new[1:] = s[1:] > run[:-1]
    first = np.flatnonzero(new)
    return s[first], np.maximum.reduceat(run, first)


def covered_before(us: np.ndarray, ue: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Total length of the disjoint sorted intervals (us, ue) lying before each time in ``t``."""
    t = np.asarray(t, np.int64)
    if us.size == 0:
        return np.zeros(t.shape, np.int64)
    cum = np.concatenate([[0], np.cumsum(ue - us)])
    j = np.searchsorted(us, t, side="right")  # intervals starting at or before t
    jj = np.maximum(j - 1, 0)
    partial = np.where(j > 0, np.clip(t - us[jj], 0, ue[jj] - us[jj]), 0)
    return cum[jj] + partial


# ---------------------------------------------------------------------------------------------
# phase templates
# ---------------------------------------------------------------------------------------------

@dataclass
class _Template:
    """Per-item placement of one phase's launches: start = occ_start + a·D + b."""

    kind: np.ndarray
    spec: list  # spec object per item-group index
    spec_idx: np.ndarray
    thread: list[str]  # per item
    a: np.ndarray
    b: np.ndarray
    spread: np.ndarray  # >0: call dur = min(launch, spread·D); 0: fixed launch
    launch: np.ndarray
    n: int


def _template(phase: PhaseSpec) -> _Template:
    specs = ([(KIND_KERNEL, s) for s in phase.kernels] + [(KIND_MEMCPY, s) for s in phase.memcpys]
             + [(KIND_MEMSET, s) for s in phase.memsets] + [(KIND_SYNC, s) for s in phase.syncs])
    counts = np.array([s.count for _, s in specs], np.int64)
    n = int(counts.sum())
    spec_idx = np.repeat(np.arange(len(specs)), counts)
    k = np.concatenate([np.arange(c) for c in counts]) if n else np.zeros(0, np.int64)
    kind = np.array([specs[i][0] for i in range(len(specs))], np.int64)[spec_idx] if n else \
        np.zeros(0, np.int64)
    launch = np.array([getattr(s, "launch_ns", getattr(s, "min_ns", 3 * US)) for _, s in specs],
                      np.int64)[spec_idx] if n else np.zeros(0, np.int64)
    at = np.array([np.nan if s.at is None else float(s.at) for _, s in specs])[spec_idx] if n \
        else np.zeros(0)
    thread_of_spec = [s.thread for _, s in specs]
    threads = [thread_of_spec[i] for i in spec_idx.tolist()] if n else []
    a = np.zeros(n)
    b = np.zeros(n)
    spread = np.zeros(n)
    w0, w1 = phase.window
    for t in dict.fromkeys(thread_of_spec):
        on_t = np.array([thread_of_spec[i] == t for i in range(len(specs))])[spec_idx]
        unplaced = np.flatnonzero(on_t & np.isnan(at))
        if unplaced.size:
            key = (k[unplaced] + 0.5) / counts[spec_idx[unplaced]]
            order = unplaced[np.lexsort((spec_idx[unplaced], key))]
            m = order.size
            if phase.launch_gap_ns is None:
                a[order] = w0 + np.arange(m) * (w1 - w0) / m
                spread[order] = 0.8 * (w1 - w0) / m
            else:
                step = launch[order] + phase.launch_gap_ns
                a[order] = w0
                b[order] = np.cumsum(step) - step
        placed = on_t & ~np.isnan(at)
        for v in np.unique(at[placed]):
            sel = np.flatnonzero(placed & (at == v))  # already in spec order, then k
            step = launch[sel] + 1_000
            total = step.sum()
            a[sel] = v
            b[sel] = np.cumsum(step) - step - v * total
    return _Template(kind, [s for _, s in specs], spec_idx, threads, a, b, spread, launch, n)


# ---------------------------------------------------------------------------------------------
# the builder
# ---------------------------------------------------------------------------------------------

_PREAMBLE = (  # (api, duration ns) issued on the main thread before step 0
    ("cuInit", 1_200 * US), ("cuModuleGetLoadingMode", 2 * US),
    ("cudaGetDeviceProperties_v2", 310 * US), ("cudaStreamIsCapturing", 3 * US),
    ("cudaHostAlloc", 2_100 * US), ("cuModuleLoadData", 820 * US),
    ("cudaEventCreateWithFlags", 2 * US),
)


def build_timeline(sc: Scenario) -> Timeline:
    """Build every event of the scenario (deterministic for a given scenario)."""
    api_names = Codes()
    nvtx_texts = Codes()
    phase_names = Codes()
    kinfos: list[KernelInfo] = []
    kinfo_index: dict[KernelInfo, int] = {}
    domains: list[str] = []
    for p in sc.phases:
        phase_names.code(p.name)
    for q in sc.periodic:
        phase_names.code(q.phase.name)

    def kcode(info: KernelInfo) -> int:
        i = kinfo_index.get(info)
        if i is None:
            i = kinfo_index[info] = len(kinfos)
            kinfos.append(info)
        return i

    def dcode(name: str) -> int:
        if name not in domains:
            domains.append(name)
        return domains.index(name) + 1

    procs: list[ProcessInfo] = []
    parts: dict[str, list[dict]] = {k: [] for k in (
        "api", "kernels", "memcpy", "memset", "sync", "nvtx", "memory", "steps", "phase_occ")}
    rank0 = sc.rank or 0
    for p in range(sc.n_processes):
        pid = sc.base_pid + rank0 + p * 7
        threads = {"main": (pid, sc.process_name), "autograd": (pid + 14, "pt_autograd_0")}
        extra_keys = sorted({s.thread for ph in sc.phases + tuple(q.phase for q in sc.periodic)
                             for s in ph.kernels + ph.memcpys + ph.memsets + ph.syncs + ph.ranges}
                            - set(threads))
        for i, key in enumerate(extra_keys):
            threads[key] = (pid + 20 + i, key)
        for i, name in enumerate(_OTHER_THREADS):
            threads[name] = (pid + 2 + i, name)
        proc = ProcessInfo(p, pid, rank0 + p, p + 1 if sc.rank is None else 1, threads)
        procs.append(proc)
        _build_process(sc, proc, parts, api_names, nvtx_texts, phase_names, kcode, dcode)

    api = _cat(parts["api"], ("start", "end", "gtid", "pidx", "name", "eclass", "corr",
                              "unsuffixed", "phase_end"))
    kernels = _cat(parts["kernels"], ("start", "end", "pidx", "stream", "api_row", "kinfo",
                                      "phase", "step"))
    memcpy = _cat(parts["memcpy"], ("start", "end", "pidx", "stream", "api_row", "bytes",
                                    "copy_kind", "src_kind", "dst_kind", "phase", "step"))
    memset = _cat(parts["memset"], ("start", "end", "pidx", "stream", "api_row", "bytes",
                                    "phase", "step"))
    sync = _cat(parts["sync"], ("start", "end", "pidx", "stream", "api_row", "sync_kind",
                                "event_id", "phase", "step"))
    nvtx = _cat(parts["nvtx"], ("start", "end", "has_end", "event_type", "text", "registered",
                                "gtid", "domain", "range_id"))
    memory = _cat(parts["memory"], ("start", "pidx", "address", "bytes", "op", "api_row"))
    steps = _cat(parts["steps"], ("pidx", "step", "start", "end"))
    phase_occ = _cat(parts["phase_occ"], ("pidx", "step", "phase", "start", "end"))

    # capture window: from the session offset to the last event + tail
    ends = [api["end"], kernels["end"], memcpy["end"], memset["end"], sync["end"], nvtx["end"],
            steps["end"]]
    last = max(int(x.max()) for x in ends if x.size)
    first = sc.session_offset_ns
    capture_end = last + sc.tail_ns
    metrics = _metrics(sc, procs, kernels, memcpy, phase_names, first, capture_end) \
        if (sc.gpu_metrics is not None and sc.cuda) else _cat([], ("ts", "device", "metric",
                                                                 "value"))
    return Timeline(sc, procs, api_names, kinfos, nvtx_texts, phase_names, domains, api, kernels,
                    memcpy, memset, sync, nvtx, metrics, memory, steps, phase_occ, first,
                    capture_end)


def _build_process(sc, proc: ProcessInfo, parts, api_names: Codes, nvtx_texts: Codes,
                   phase_names: Codes, kcode, dcode) -> None:
    rng = np.random.default_rng(sc.seed * 7919 + proc.device * 131 + proc.index)
    skew = (proc.device if sc.rank is not None else proc.index) * sc.rank_skew_ns
    t0 = sc.session_offset_ns + skew
    main = proc.gtid("main")
    api_parts: list[dict] = []
    n_api = 0

    def add_api(start, dur, gtid, name_codes, phase_end):
        nonlocal n_api
        start = np.asarray(start, np.int64)
        m = start.size
        api_parts.append({
            "start": start, "end": start + np.asarray(dur, np.int64),
            "gtid": np.broadcast_to(np.asarray(gtid, np.int64), (m,)).copy(),
            "name": np.broadcast_to(np.asarray(name_codes, np.int64), (m,)).copy(),
            "phase_end": np.broadcast_to(np.asarray(phase_end, np.int64), (m,)).copy()})
        rows = np.arange(n_api, n_api + m)
        n_api += m
        return rows

    # ---- preamble: init calls and allocations on the main thread ------------------------------
    mem_parts = []
    if sc.cuda:
        calls = list(_PREAMBLE)
        if sc.gpu_memory is not None:
            gm = sc.gpu_memory
            sizes = [gm.weights_bytes // gm.chunks] * gm.chunks + \
                    [gm.activation_bytes // gm.chunks] * gm.chunks
            calls += [("cudaMalloc", 150 * US)] * len(sizes)
        durs = np.array([d for _, d in calls], np.int64)
        starts = t0 + np.cumsum(durs + 50 * US) - durs
        codes = np.array([api_names.code(n) for n, _ in calls], np.int64)
        rows = add_api(starts, durs, main, codes, t0 + sc.preamble_ns)
        if sc.gpu_memory is not None:
            n_alloc = len(sizes)
            alloc_rows = rows[-n_alloc:]
            sz = np.array(sizes, np.int64)
            mem_parts.append({"start": starts[-n_alloc:] + 20 * US, "bytes": sz,
                              "address": 0x7F0000000000 + np.cumsum(sz) - sz,
                              "op": np.zeros(n_alloc, np.int64), "api_row": alloc_rows})

    # ---- step/phase layout ----------------------------------------------------------------
    n_steps = sc.steps
    slots: list[PhaseSpec] = list(sc.phases) + [q.phase for q in sc.periodic]
    dur = np.zeros((n_steps, len(slots)), np.float64)
    for j, ph in enumerate(sc.phases):
        dur[:, j] = ph.dur_ns
    step_idx = np.arange(n_steps)
    for j, q in enumerate(sc.periodic, start=len(sc.phases)):
        on = (step_idx % q.every == q.every - 1) & (step_idx > 0)
        dur[on, j] = q.phase.dur_ns
    if sc.jitter:
        dur *= rng.uniform(1 - sc.jitter, 1 + sc.jitter, dur.shape)
    dur = np.rint(dur).astype(np.int64)
    if sc.warmup_extra_ns and sc.phases:
        wname = sc.warmup_phase or sc.phases[0].name
        wj = [p.name for p in slots].index(wname)
        dur[0, wj] += sc.warmup_extra_ns
    flat = np.concatenate([dur, np.full((n_steps, 1), sc.step_gap_ns, np.int64)], axis=1).ravel()
    starts_flat = t0 + sc.preamble_ns + np.cumsum(flat) - flat
    occ_start = starts_flat.reshape(n_steps, len(slots) + 1)[:, :-1]
    step_start = occ_start[:, 0]
    step_end = occ_start[:, -1] + dur[:, -1]
    if len(slots) > 1:  # the step ends where its last non-empty phase ends
        ends_all = occ_start + dur
        step_end = np.where(dur > 0, ends_all, 0).max(axis=1)
    parts["steps"].append({"pidx": np.full(n_steps, proc.index), "step": step_idx,
                           "start": step_start, "end": step_end})

    nvtx_parts: list[dict] = []
    range_counter = [0]

    def add_nvtx(start, end, etype, text_code, registered, gtid, domain=0, has_end=True,
                 range_ids=None):
        start = np.asarray(start, np.int64)
        m = start.size
        if m == 0:
            return
        rid = np.full(m, -1, np.int64)
        if etype == NVTX_STARTEND:
            rid = range_counter[0] + 1 + np.arange(m)
            range_counter[0] += m
        nvtx_parts.append({
            "start": start, "end": np.broadcast_to(np.asarray(end, np.int64), (m,)).copy(),
            "has_end": np.full(m, has_end), "event_type": np.full(m, etype, np.int64),
            "text": np.broadcast_to(np.asarray(text_code, np.int64), (m,)).copy(),
            "registered": np.full(m, registered), "gtid": np.full(m, gtid, np.int64),
            "domain": np.full(m, domain, np.int64), "range_id": rid})

    reg_phase = sc.nvtx_text in ("registered", "mixed")
    reg_step = sc.nvtx_text == "registered"
    # domain-create rows for every non-default domain used (NVTX before the first CUDA call)
    used_domains = [s.nvtx_domain for ph in slots for s in ph.kernels if s.nvtx and s.nvtx_domain]
    for d in dict.fromkeys(used_domains):
        add_nvtx([t0 - 30 * US], 0, NVTX_DOMAIN_CREATE, nvtx_texts.code(d), False, main,
                 dcode(d), has_end=False)
    # step ranges: text per step index
    step_codes = np.array([nvtx_texts.code(f"{sc.step_prefix}{i}") for i in range(n_steps)],
                          np.int64)
    add_nvtx(step_start, step_end, NVTX_PUSHPOP, step_codes, reg_step, main)

    gpu_parts: list[dict] = []  # kernels / memcpy / memset items, with api rows
    sync_parts: list[dict] = []
    for j, ph in enumerate(slots):
        present = dur[:, j] > 0
        o_start = occ_start[present, j]
        o_dur = dur[present, j]
        o_step = step_idx[present]
        o_end = o_start + o_dur
        n_occ = o_start.size
        if n_occ == 0:
            continue
        pcode = phase_names.code(ph.name)
        parts["phase_occ"].append({"pidx": np.full(n_occ, proc.index), "step": o_step,
                                   "phase": np.full(n_occ, pcode), "start": o_start, "end": o_end})
        etype = NVTX_STARTEND if ph.kind == "start_end" else NVTX_PUSHPOP
        add_nvtx(o_start, o_end, etype, nvtx_texts.code(ph.name), reg_phase, main)
        for rs in ph.ranges:
            i = np.arange(rs.count)
            slot_len = o_dur[:, None] * (rs.span / rs.count)
            rstart = o_start[:, None] + np.rint(o_dur[:, None] * rs.start + slot_len * i).astype(
                np.int64)
            rend = rstart + np.rint(slot_len * rs.fill).astype(np.int64)
            add_nvtx(rstart.ravel(), rend.ravel(),
                     NVTX_STARTEND if rs.kind == "start_end" else NVTX_PUSHPOP,
                     nvtx_texts.code(rs.name), reg_phase, proc.gtid(rs.thread))
        for mark in ph.marks:
            add_nvtx(o_end - 2 * US, 0, NVTX_MARK, nvtx_texts.code(mark), False, main,
                     has_end=False)
        if not sc.cuda:
            continue
        tpl = _template(ph)
        if tpl.n == 0:
            continue
        # broadcast occurrences × items
        D = o_dur[:, None].astype(np.float64)
        start = (o_start[:, None] + np.rint(tpl.a[None, :] * D).astype(np.int64)
                 + np.rint(tpl.b[None, :]).astype(np.int64))
        call = np.where(tpl.spread[None, :] > 0,
                        np.minimum(tpl.launch[None, :], np.rint(tpl.spread[None, :] * D)),
                        tpl.launch[None, :]).astype(np.int64)
        item_step = np.repeat(o_step, tpl.n)
        item_pend = np.repeat(o_end, tpl.n)
        start, call = start.ravel(), call.ravel()
        items = np.tile(np.arange(tpl.n), n_occ)
        for si, spec in enumerate(tpl.spec):
            sel = np.flatnonzero(tpl.spec_idx[items] == si)
            if sel.size == 0:
                continue
            kind = int(tpl.kind[tpl.spec_idx == si][0])
            gtid = proc.gtid(spec.thread)
            if kind == KIND_KERNEL:
                info = kernel_info(spec.name)
                api = spec.api or info.api
            else:
                api = spec.api
            rows = add_api(start[sel], call[sel], gtid, api_names.code(api), item_pend[sel])
            if kind == KIND_SYNC:
                sync_parts.append({"api_row": rows, "sync_kind": np.full(
                    sel.size, SYNC_KINDS.index(SYNC_KIND.get(spec.api, "stream"))),
                    "stream": np.full(sel.size, spec.stream or COMPUTE_STREAM),
                    "min_ns": np.full(sel.size, spec.min_ns), "phase": np.full(sel.size, pcode),
                    "step": item_step[sel]})
                continue
            gdur = np.full(sel.size, spec.dur_ns, np.float64)
            if sc.jitter:
                gdur *= rng.uniform(1 - sc.jitter, 1 + sc.jitter, sel.size)
            g = {"api_row": rows, "dur": np.maximum(np.rint(gdur).astype(np.int64), 200),
                 "stream": np.full(sel.size, spec.stream or COMPUTE_STREAM),
                 "kind": np.full(sel.size, kind), "phase": np.full(sel.size, pcode),
                 "step": item_step[sel]}
            if kind == KIND_KERNEL:
                g["kinfo"] = np.full(sel.size, kcode(info))
                if spec.nvtx:
                    dom = dcode(spec.nvtx_domain) if spec.nvtx_domain else 0
                    s0 = start[sel]
                    add_nvtx(s0 - 1 * US, s0 + call[sel] + 1 * US, NVTX_PUSHPOP,
                             nvtx_texts.code(spec.nvtx), True if dom else reg_phase, gtid, dom)
            elif kind == KIND_MEMCPY:
                ck = COPY_KIND[spec.kind]
                host = MEM_PINNED if spec.host == "pinned" else MEM_PAGEABLE
                g["bytes"] = np.full(sel.size, spec.bytes)
                g["copy_kind"] = np.full(sel.size, ck)
                g["src_kind"] = np.full(sel.size, host if ck == 1 else MEM_DEVICE)
                g["dst_kind"] = np.full(sel.size, host if ck == 2 else MEM_DEVICE)
            else:
                g["bytes"] = np.full(sel.size, spec.bytes)
            gpu_parts.append(g)

    # ---- tail: drain and free --------------------------------------------------------------
    last_step_end = int(step_end[-1])
    if sc.cuda:
        tail_calls = [("cudaDeviceSynchronize", 40 * US)]
        if sc.gpu_memory is not None:
            tail_calls += [("cudaFree", 90 * US)] * len(sizes)
        tdur = np.array([d for _, d in tail_calls], np.int64)
        tstart = last_step_end + 500 * US + np.cumsum(tdur + 30 * US) - tdur
        rows = add_api(tstart, tdur, main,
                       np.array([api_names.code(n) for n, _ in tail_calls], np.int64),
                       tstart[-1] + tdur[-1] + 1)
        sync_parts.append({"api_row": rows[:1], "sync_kind": np.array([SYNC_KINDS.index("device")]),
                           "stream": np.array([COMPUTE_STREAM]), "min_ns": np.array([5 * US]),
                           "phase": np.array([-1]), "step": np.array([-1])})
        if sc.gpu_memory is not None:
            free_rows = rows[1:]
            sz = mem_parts[0]["bytes"]
            mem_parts.append({"start": tstart[1:] + 20 * US, "bytes": sz,
                              "address": mem_parts[0]["address"],
                              "op": np.ones(sz.size, np.int64), "api_row": free_rows})

    api = _cat(api_parts, ("start", "end", "gtid", "name", "phase_end"))
    base = sum(len(x["start"]) for x in parts["api"])  # rows of earlier processes

    # ---- GPU execution: FIFO per stream --------------------------------------------------------
    if gpu_parts:
        g = _cat(gpu_parts, ("api_row", "dur", "stream", "kind", "phase", "step", "kinfo", "bytes",
                             "copy_kind", "src_kind", "dst_kind"))
        call_start = api["start"][g["api_row"]]
        # latency pattern: +0..6 µs and sub-µs noise, deterministic
        ready = (call_start + sc.launch_latency_ns + ((call_start // 1_000) % 7) * 1_000
                 + (call_start * 7919) % 997)
        gstart = np.zeros_like(ready)
        gend = np.zeros_like(ready)
        for s in np.unique(g["stream"]):
            idx = np.flatnonzero(g["stream"] == s)
            idx = idx[np.argsort(ready[idx], kind="stable")]
            e = _fifo(ready[idx], g["dur"][idx], sc.gpu_gap_ns)
            gend[idx] = e
            gstart[idx] = e - g["dur"][idx]
        # per-kind outputs (row order: by GPU start, as exports list them)
        for kind, key in ((KIND_KERNEL, "kernels"), (KIND_MEMCPY, "memcpy"),
                          (KIND_MEMSET, "memset")):
            idx = np.flatnonzero(g["kind"] == kind)
            if idx.size == 0:
                continue
            idx = idx[np.argsort(gstart[idx], kind="stable")]
            out = {"start": gstart[idx], "end": gend[idx],
                   "pidx": np.full(idx.size, proc.index), "stream": g["stream"][idx],
                   "api_row": g["api_row"][idx] + base, "phase": g["phase"][idx],
                   "step": g["step"][idx]}
            if kind == KIND_KERNEL:
                out["kinfo"] = g["kinfo"][idx]
            elif kind == KIND_MEMCPY:
                for c in ("bytes", "copy_kind", "src_kind", "dst_kind"):
                    out[c] = g[c][idx]
            else:
                out["bytes"] = g["bytes"][idx]
            parts[key].append(out)
    else:
        g = None
        gstart = gend = np.zeros(0, np.int64)

    # ---- syncs: the call lasts until the awaited work drained --------------------------------
    if sync_parts:
        sy = _cat(sync_parts, ("api_row", "sync_kind", "stream", "min_ns", "phase", "step"))
        s_start = api["start"][sy["api_row"]]
        drain = np.zeros(s_start.size, np.int64)
        if g is not None:
            op_call = api["start"][g["api_row"]]
            for kind_i, kind_name in enumerate(SYNC_KINDS):
                for s in np.unique(sy["stream"]):
                    ss = np.flatnonzero((sy["sync_kind"] == kind_i) & (
                        (sy["stream"] == s) | (kind_name == "device")))
                    if ss.size == 0:
                        continue
                    ops = np.arange(op_call.size) if kind_name == "device" else \
                        np.flatnonzero(g["stream"] == s)
                    if ops.size == 0:
                        continue
                    ops = ops[np.argsort(op_call[ops], kind="stable")]
                    cm = np.maximum.accumulate(gend[ops])
                    j = np.searchsorted(op_call[ops], s_start[ss], side="left") - 1
                    drain[ss] = np.where(j >= 0, cm[np.maximum(j, 0)], 0)
        # cap: next call on the same thread, or the end of the phase occurrence
        order = np.lexsort((api["start"], api["gtid"]))
        nxt = np.full(api["start"].size, np.iinfo(np.int64).max)
        same = api["gtid"][order][1:] == api["gtid"][order][:-1]
        nxt[order[:-1][same]] = api["start"][order][1:][same]
        rows = sy["api_row"]
        cap = np.minimum(nxt[rows], api["phase_end"][rows]) - 300
        new_end = np.maximum(s_start + sy["min_ns"], drain + 1_500)
        new_end = np.maximum(np.minimum(new_end, cap), s_start + 1_000)
        api["end"][rows] = new_end
        row_start = s_start + 800
        row_end = np.maximum(new_end - 600, row_start + 200)
        skind = sy["sync_kind"]
        parts["sync"].append({
            "start": row_start, "end": row_end, "pidx": np.full(rows.size, proc.index),
            "stream": np.where(skind == SYNC_KINDS.index("stream"), sy["stream"], NO_ID_U32),
            "api_row": rows + base, "sync_kind": skind,
            "event_id": np.where(skind == SYNC_KINDS.index("event"), 1 + np.arange(rows.size),
                                 NO_ID_U32),
            "phase": sy["phase"], "step": sy["step"]})

    # ---- API rows: event class, correlationIds (per process, in time order), backtraces -----
    eclass_of_code = np.array([1 if n in DRIVER_APIS else 0 for n in api_names.values], np.int64)
    eclass = eclass_of_code[api["name"]]
    corr = np.empty(api["start"].size, np.int64)
    corr[np.argsort(api["start"], kind="stable")] = 1 + np.arange(api["start"].size)
    api["eclass"] = eclass
    api["corr"] = corr
    api["unsuffixed"] = np.zeros(corr.size, bool)
    api["pidx"] = np.full(corr.size, proc.index)
    if sc.cuda_backtraces:
        long = np.flatnonzero((eclass == 0) & (api["end"] - api["start"] >= 10 * US))
        dup = {k: v[long].copy() for k, v in api.items()}
        dup["start"] -= 150
        dup["end"] += 250
        dup["eclass"][:] = 67
        dup["unsuffixed"][:] = True
        api = {k: np.concatenate([api[k], dup[k]]) for k in api}
    parts["api"].append(api)
    if mem_parts:
        mem = _cat(mem_parts, ("start", "bytes", "address", "op", "api_row"))
        mem["api_row"] = mem["api_row"] + base
        mem["pidx"] = np.full(mem["start"].size, proc.index)
        parts["memory"].append(mem)
    parts["nvtx"].extend(nvtx_parts)


# ---------------------------------------------------------------------------------------------
# GPU metrics
# ---------------------------------------------------------------------------------------------

def _metrics(sc: Scenario, procs, kernels, memcpy, phase_names: Codes, first: int,
             capture_end: int) -> dict[str, np.ndarray]:
    spec = sc.gpu_metrics
    period = spec.period_ns
    model = gpu_model(sc.gpu)
    t = np.arange(first - first % period + period, capture_end + 1, period, dtype=np.int64)
    edges = np.concatenate([[t[0] - period], t])
    out = []
    midx = {m: i for i, m in enumerate(GPU_METRIC_NAMES)}
    for proc in procs:
        values = np.zeros((len(GPU_METRIC_NAMES), t.size))
        kp = kernels["pidx"] == proc.index
        cp = memcpy["pidx"] == proc.index

        def frac(mask, src):
            us, ue = union_intervals(src["start"][mask], src["end"][mask])
            c = covered_before(us, ue, edges)
            return np.diff(c) / period

        values[midx["GPC Clock Frequency [MHz]"]] = model.clock_hz // 1_000_000
        values[midx["GR Active [Throughput %]"]] = 100 * np.minimum(
            1.0, frac(kp, kernels) + frac(cp, memcpy))
        for pc in np.unique(kernels["phase"][kp]):
            name = phase_names.values[pc] if pc >= 0 else "*"
            levels = spec.levels.get(name, spec.levels.get("*", DEFAULT_METRIC_LEVELS))
            f = frac(kp & (kernels["phase"] == pc), kernels)
            for m, lvl in levels.items():
                values[midx[m]] += f * lvl
        values[midx["PCIe RX Throughput [Throughput %]"]] += spec.pcie_level * frac(
            cp & (memcpy["copy_kind"] == COPY_KIND["H2D"]), memcpy)
        values[midx["PCIe TX Throughput [Throughput %]"]] += spec.pcie_level * frac(
            cp & (memcpy["copy_kind"] == COPY_KIND["D2H"]), memcpy)
        v = np.clip(np.rint(values), 0, None).astype(np.int64)
        v[1:] = np.minimum(v[1:], 100)
        n_m = len(GPU_METRIC_NAMES)
        out.append({"ts": np.repeat(t, n_m), "device": np.full(t.size * n_m, proc.device),
                    "metric": np.tile(np.arange(n_m), t.size), "value": v.T.ravel()})
    return _cat(out, ("ts", "device", "metric", "value"))


__all__ = ["Timeline", "ProcessInfo", "Codes", "build_timeline", "union_intervals",
           "covered_before", "MS", "US"]
