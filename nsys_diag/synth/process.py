"""One process's events in the generator's timeline (see :mod:`nsys_diag.synth.timeline` for the
timing model): :class:`ProcessBuilder` runs the named steps — preamble calls, step/phase
layout, NVTX ranges, launches per phase, tail calls, GPU FIFO execution, host-sync drain, API
row ids — appending column dicts (integer ns) to the capture-wide ``parts``.

Everything is vectorised over steps × items; loops run only over phases, specs, streams and
sync kinds. The order of the code-table and random-number calls is part of the output (ids,
jitter), so the steps run in a fixed order.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from nsys_diag.synth.events import (
    COPY_KIND, KIND_CALL, KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET, KIND_SYNC, MEM_DEVICE, MEM_MANAGED,
    MEM_PAGEABLE, MEM_PINNED, UVM_COPY_KINDS,
    NVTX_DOMAIN_CREATE, NVTX_MARK, NVTX_PUSHPOP, NVTX_STARTEND, SYNC_KIND, SYNC_KINDS, Interning,
    ProcessInfo, concat_columns, fifo_ends)
from nsys_diag.synth.kernels import kernel_info
from nsys_diag.synth.scenarios import COMPUTE_STREAM, US, PhaseSpec, Scenario
from nsys_diag.synth.schema import DRIVER_APIS, NO_ID_U32

Parts = dict[str, list[dict]]
"""Capture-wide column dicts per event kind (api, kernels, memcpy, …), one entry per process."""

API_KEYS = ("start", "end", "gtid", "pidx", "name", "eclass", "corr", "unsuffixed", "phase_end")
_GPU_KEYS = ("api_row", "dur", "stream", "kind", "phase", "step", "kinfo", "bytes", "copy_kind",
             "src_kind", "dst_kind", "migration")
_SYNC_KEYS = ("api_row", "sync_kind", "stream", "min_ns", "phase", "step")


# ---------------------------------------------------------------------------------------------
# phase templates
# ---------------------------------------------------------------------------------------------

@dataclass
class PhaseTemplate:
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


def phase_template(phase: PhaseSpec) -> PhaseTemplate:
    """Where each launch of ``phase`` goes: spread evenly over the window, packed back to back
    (``launch_gap_ns``) or grouped at a fraction ``at`` (+1 µs between grouped calls)."""
    specs = ([(KIND_KERNEL, s) for s in phase.kernels] + [(KIND_MEMCPY, s) for s in phase.memcpys]
             + [(KIND_MEMSET, s) for s in phase.memsets] + [(KIND_SYNC, s) for s in phase.syncs]
             + [(KIND_CALL, s) for s in phase.api_calls])
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
    return PhaseTemplate(kind, [s for _, s in specs], spec_idx, threads, a, b, spread, launch, n)


# ---------------------------------------------------------------------------------------------
# the builder

_PREAMBLE = (  # (api, duration ns) issued on the main thread before step 0
    ("cuInit", 1_200 * US), ("cuModuleGetLoadingMode", 2 * US),
    ("cudaGetDeviceProperties_v2", 310 * US), ("cudaStreamIsCapturing", 3 * US),
    ("cudaHostAlloc", 2_100 * US), ("cuModuleLoadData", 820 * US),
    ("cudaEventCreateWithFlags", 2 * US),
)


@dataclass
class _Layout:
    """Step/phase placement of one process (ns): rows = steps, columns = phase slots (the
    phases, then the periodic phases); ``dur`` 0 = that slot is absent in that step."""

    slots: list[PhaseSpec]
    dur: np.ndarray
    occ_start: np.ndarray
    step_idx: np.ndarray
    step_start: np.ndarray
    step_end: np.ndarray


@dataclass
class _Occurrences:
    """The occurrences (one per step it appears in) of one phase: start, duration, end (ns)."""

    start: np.ndarray
    dur: np.ndarray
    end: np.ndarray
    step: np.ndarray
    phase_code: int


class ProcessBuilder:
    """Builds every event of one process of ``sc`` into ``parts`` (see :meth:`build`)."""

    def __init__(self, sc: Scenario, proc: ProcessInfo, parts: Parts, names: Interning) -> None:
        self.sc, self.proc, self.parts, self.names = sc, proc, parts, names
        self.rng = np.random.default_rng(sc.seed * 7919 + proc.device * 131 + proc.index)
        skew = (proc.device if sc.rank is not None else proc.index) * sc.rank_skew_ns
        self.t0 = sc.session_offset_ns + skew
        self.main = proc.gtid("main")
        self.api_parts: list[dict] = []
        self.n_api = 0
        self.nvtx_parts: list[dict] = []
        self.n_ranges = 0  # start/end range ids handed out so far
        self.mem_parts: list[dict] = []
        self.gpu_parts: list[dict] = []  # kernels / memcpy / memset items, with api rows
        self.sync_parts: list[dict] = []
        self.alloc_sizes: list[int] = []

    def build(self) -> None:
        """Run the steps in their fixed order (it determines ids and jitter draws)."""
        sc = self.sc
        if sc.cuda:
            self._preamble()
        lay = self._layout()
        self._step_ranges(lay)
        for j, ph in enumerate(lay.slots):
            self._phase(j, ph, lay)
        if sc.cuda:
            self._tail(int(lay.step_end[-1]))
        api = concat_columns(self.api_parts, ("start", "end", "gtid", "name", "phase_end"))
        base = sum(len(x["start"]) for x in self.parts["api"])  # rows of earlier processes
        g, gend = self._gpu_execution(api, base)
        if self.sync_parts:
            self._syncs(api, g, gend, base)
        self.parts["api"].append(self._api_ids(api))
        if self.mem_parts:
            mem = concat_columns(self.mem_parts, ("start", "bytes", "address", "op", "api_row"))
            mem["api_row"] = mem["api_row"] + base
            mem["pidx"] = np.full(mem["start"].size, self.proc.index)
            self.parts["memory"].append(mem)
        self.parts["nvtx"].extend(self.nvtx_parts)

    # -- row makers ---------------------------------------------------------------------------
    def add_api(self, start, dur, gtid, name_codes, phase_end) -> np.ndarray:
        """Append API calls (``dur`` ns each); returns their row numbers in this process."""
        start = np.asarray(start, np.int64)
        m = start.size
        self.api_parts.append({
            "start": start, "end": start + np.asarray(dur, np.int64),
            "gtid": np.broadcast_to(np.asarray(gtid, np.int64), (m,)).copy(),
            "name": np.broadcast_to(np.asarray(name_codes, np.int64), (m,)).copy(),
            "phase_end": np.broadcast_to(np.asarray(phase_end, np.int64), (m,)).copy()})
        rows = np.arange(self.n_api, self.n_api + m)
        self.n_api += m
        return rows

    def add_nvtx(self, start, end, etype, text_code, registered, gtid, domain=0,
                 has_end=True) -> None:
        """Append NVTX rows of event type ``etype``; start/end ranges get fresh range ids."""
        start = np.asarray(start, np.int64)
        m = start.size
        if m == 0:
            return
        rid = np.full(m, -1, np.int64)
        if etype == NVTX_STARTEND:
            rid = self.n_ranges + 1 + np.arange(m)
            self.n_ranges += m
        self.nvtx_parts.append({
            "start": start, "end": np.broadcast_to(np.asarray(end, np.int64), (m,)).copy(),
            "has_end": np.full(m, has_end), "event_type": np.full(m, etype, np.int64),
            "text": np.broadcast_to(np.asarray(text_code, np.int64), (m,)).copy(),
            "registered": np.full(m, registered), "gtid": np.full(m, gtid, np.int64),
            "domain": np.full(m, domain, np.int64), "range_id": rid})

    # -- CPU side -----------------------------------------------------------------------------
    def _preamble(self) -> None:
        """Init calls and (with ``gpu_memory``) cudaMalloc calls on the main thread, 50 µs apart,
        from the process start on; the allocations become memory events 20 µs into their call."""
        sc, t0 = self.sc, self.t0
        calls = list(_PREAMBLE if sc.preamble is None else sc.preamble) + \
            [(n, int(d)) for n, d in sc.init_calls]
        if sc.gpu_memory is not None:
            gm = sc.gpu_memory
            self.alloc_sizes = [gm.weights_bytes // gm.chunks] * gm.chunks + \
                [gm.activation_bytes // gm.chunks] * gm.chunks
            calls += [("cudaMalloc", 150 * US)] * len(self.alloc_sizes)
        durs = np.array([d for _, d in calls], np.int64)
        starts = t0 + np.cumsum(durs + 50 * US) - durs
        codes = np.array([self.names.api_names.code(n) for n, _ in calls], np.int64)
        rows = self.add_api(starts, durs, self.main, codes, t0 + sc.preamble_ns)
        if sc.gpu_memory is not None:
            n_alloc = len(self.alloc_sizes)
            sz = np.array(self.alloc_sizes, np.int64)
            self.mem_parts.append({"start": starts[-n_alloc:] + 20 * US, "bytes": sz,
                                   "address": 0x7F0000000000 + np.cumsum(sz) - sz,
                                   "op": np.zeros(n_alloc, np.int64), "api_row": rows[-n_alloc:]})

    def _layout(self) -> _Layout:
        """Phases tile each step exactly (± ``jitter``, warm-up extra on step 0); steps tile the
        time line from ``t0 + preamble_ns`` on, ``step_gap_ns`` apart."""
        sc = self.sc
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
            dur *= self.rng.uniform(1 - sc.jitter, 1 + sc.jitter, dur.shape)
        dur = np.rint(dur).astype(np.int64)
        if sc.warmup_extra_ns and sc.phases:
            wname = sc.warmup_phase or sc.phases[0].name
            dur[0, [p.name for p in slots].index(wname)] += sc.warmup_extra_ns
        flat = np.concatenate([dur, np.full((n_steps, 1), sc.step_gap_ns, np.int64)], axis=1).ravel()
        starts_flat = self.t0 + sc.preamble_ns + np.cumsum(flat) - flat
        occ_start = starts_flat.reshape(n_steps, len(slots) + 1)[:, :-1]
        step_start = occ_start[:, 0]
        step_end = occ_start[:, -1] + dur[:, -1]
        if len(slots) > 1:  # the step ends where its last non-empty phase ends
            step_end = np.where(dur > 0, occ_start + dur, 0).max(axis=1)
        self.parts["steps"].append({"pidx": np.full(n_steps, self.proc.index), "step": step_idx,
                                    "start": step_start, "end": step_end})
        return _Layout(slots, dur, occ_start, step_idx, step_start, step_end)

    def _step_ranges(self, lay: _Layout) -> None:
        """Domain-create rows for every non-default domain used (30 µs before the process
        start), then one push/pop range per step on the main thread."""
        sc, texts = self.sc, self.names.nvtx_texts
        used = [s.nvtx_domain for ph in lay.slots for s in ph.kernels if s.nvtx and s.nvtx_domain]
        used += [r.domain for ph in lay.slots for r in ph.ranges if r.domain]
        for d in dict.fromkeys(used):
            self.add_nvtx([self.t0 - 30 * US], 0, NVTX_DOMAIN_CREATE, texts.code(d), False,
                          self.main, self.names.domain(d), has_end=False)
        if not sc.nvtx_steps:
            return
        step_codes = np.array([texts.code(f"{sc.step_prefix}{i}") for i in range(sc.steps)],
                              np.int64)
        self.add_nvtx(lay.step_start, lay.step_end, NVTX_PUSHPOP, step_codes,
                      sc.nvtx_text == "registered", self.main)

    @property
    def _registered_phase(self) -> bool:
        return self.sc.nvtx_text in ("registered", "mixed")

    def _phase(self, j: int, ph: PhaseSpec, lay: _Layout) -> None:
        """Slot ``j``: its occurrences, NVTX range, sub-ranges, marks, then its launches."""
        present = lay.dur[:, j] > 0
        o_start = lay.occ_start[present, j]
        o_dur = lay.dur[present, j]
        if o_start.size == 0:
            return
        occ = _Occurrences(o_start, o_dur, o_start + o_dur, lay.step_idx[present],
                           self.names.phase_names.code(ph.name))
        n_occ, texts, reg = o_start.size, self.names.nvtx_texts, self._registered_phase
        self.parts["phase_occ"].append({"pidx": np.full(n_occ, self.proc.index), "step": occ.step,
                                        "phase": np.full(n_occ, occ.phase_code), "start": occ.start,
                                        "end": occ.end})
        etype = NVTX_STARTEND if ph.kind == "start_end" else NVTX_PUSHPOP
        if self.sc.nvtx_steps:
            self.add_nvtx(occ.start, occ.end, etype, texts.code(ph.name), reg, self.main)
        for rs in ph.ranges:
            i = np.arange(rs.count)
            slot_len = o_dur[:, None] * (rs.span / rs.count)
            rstart = o_start[:, None] + np.rint(o_dur[:, None] * rs.start + slot_len * i).astype(
                np.int64)
            rend = rstart + np.rint(slot_len * rs.fill).astype(np.int64)
            dom = self.names.domain(rs.domain) if rs.domain else 0
            self.add_nvtx(rstart.ravel(), rend.ravel(),
                          NVTX_STARTEND if rs.kind == "start_end" else NVTX_PUSHPOP,
                          texts.code(rs.name), True if dom else reg, self.proc.gtid(rs.thread),
                          dom)
        for mark in ph.marks:
            self.add_nvtx(occ.end - 2 * US, 0, NVTX_MARK, texts.code(mark), False, self.main,
                          has_end=False)
        if self.sc.cuda:
            tpl = phase_template(ph)
            if tpl.n:
                self._launches(tpl, occ)
        for hc in ph.host_calls:
            self._host_calls(hc, occ)

    def _host_calls(self, hc, occ: _Occurrences) -> None:
        """OS runtime calls of one :class:`HostCallSpec` in every occurrence: ``count`` calls
        spread evenly over the phase (slot starts), or back to back (1 µs apart) from ``at``."""
        i = np.arange(hc.count)
        if hc.at is None:
            off = np.rint(occ.dur[:, None] * (i[None, :] / hc.count)).astype(np.int64)
        else:
            off = np.rint(occ.dur[:, None] * hc.at).astype(np.int64) + i[None, :] * (
                hc.dur_ns + 1 * US)
        start = (occ.start[:, None] + off).ravel()
        self.parts["osrt"].append({
            "start": start, "end": start + int(hc.dur_ns),
            "gtid": np.full(start.size, self.proc.gtid(hc.thread), np.int64),
            "name": np.full(start.size, self.names.osrt_names.code(hc.name), np.int64)})

    def _launches(self, tpl: PhaseTemplate, occ: _Occurrences) -> None:
        """Broadcast the template over the occurrences (start = occ start + a·D + b), then add
        each spec's calls and GPU items."""
        D = occ.dur[:, None].astype(np.float64)
        start = (occ.start[:, None] + np.rint(tpl.a[None, :] * D).astype(np.int64)
                 + np.rint(tpl.b[None, :]).astype(np.int64))
        call = np.where(tpl.spread[None, :] > 0,
                        np.minimum(tpl.launch[None, :], np.rint(tpl.spread[None, :] * D)),
                        tpl.launch[None, :]).astype(np.int64)
        item_step = np.repeat(occ.step, tpl.n)
        item_pend = np.repeat(occ.end, tpl.n)
        start, call = start.ravel(), call.ravel()
        items = np.tile(np.arange(tpl.n), occ.start.size)
        for si, spec in enumerate(tpl.spec):
            sel = np.flatnonzero(tpl.spec_idx[items] == si)
            if sel.size:
                kind = int(tpl.kind[tpl.spec_idx == si][0])
                self._launch_spec(spec, kind, start[sel], call[sel], item_step[sel],
                                  item_pend[sel], occ.phase_code)

    def _launch_spec(self, spec, kind: int, start: np.ndarray, call: np.ndarray,
                     step: np.ndarray, phase_end: np.ndarray, pcode: int) -> None:
        """The calls of one spec; a sync becomes a pending sync, anything else a GPU item
        (duration ± jitter, ≥ 200 ns) and, for kernels with ``nvtx``, a range around the call."""
        sc, names, n = self.sc, self.names, start.size
        gtid = self.proc.gtid(spec.thread)
        if kind == KIND_KERNEL:
            info = spec.info or kernel_info(spec.name)
            if spec.grid is not None or spec.block is not None:  # another launch config
                info = replace(info, grid=spec.grid or info.grid,
                               block=spec.block or info.block)
            api = spec.api or info.api
        elif kind == KIND_CALL:
            api = spec.name
        else:
            api = spec.api
        rows = self.add_api(start, call, gtid, names.api_names.code(api), phase_end)
        if kind == KIND_CALL:  # a call without GPU work
            return
        if kind == KIND_SYNC:
            self.sync_parts.append({"api_row": rows, "sync_kind": np.full(
                n, SYNC_KINDS.index(SYNC_KIND.get(spec.api, "stream"))),
                "stream": np.full(n, spec.stream or COMPUTE_STREAM),
                "min_ns": np.full(n, spec.min_ns), "phase": np.full(n, pcode), "step": step})
            return
        gdur = np.full(n, spec.dur_ns, np.float64)
        if sc.jitter:
            gdur *= self.rng.uniform(1 - sc.jitter, 1 + sc.jitter, n)
        g = {"api_row": rows, "dur": np.maximum(np.rint(gdur).astype(np.int64), 200),
             "stream": np.full(n, spec.stream or COMPUTE_STREAM), "kind": np.full(n, kind),
             "phase": np.full(n, pcode), "step": step}
        if kind == KIND_KERNEL:
            g["kinfo"] = np.full(n, names.kernel(info))
            if spec.nvtx:
                dom = names.domain(spec.nvtx_domain) if spec.nvtx_domain else 0
                self.add_nvtx(start - 1 * US, start + call + 1 * US, NVTX_PUSHPOP,
                              names.nvtx_texts.code(spec.nvtx),
                              True if dom else self._registered_phase, gtid, dom)
        elif kind == KIND_MEMCPY:
            ck = COPY_KIND[spec.kind]
            host = MEM_PINNED if spec.host == "pinned" else MEM_PAGEABLE
            g["bytes"] = np.full(n, spec.bytes)
            g["copy_kind"] = np.full(n, ck)
            g["src_kind"] = np.full(n, host if ck == 1 else MEM_DEVICE)
            g["dst_kind"] = np.full(n, host if ck == 2 else MEM_DEVICE)
            if ck in UVM_COPY_KINDS:  # managed memory on both sides
                g["src_kind"][:] = MEM_MANAGED
                g["dst_kind"][:] = MEM_MANAGED
                g["migration"] = np.full(n, spec.migration_cause)
        else:
            g["bytes"] = np.full(n, spec.bytes)
        self.gpu_parts.append(g)

    def _tail(self, last_step_end: int) -> None:
        """Drain (cudaDeviceSynchronize, a device sync) and free (cudaFree per allocation)
        500 µs after the last step, 30 µs apart."""
        sc = self.sc
        tail_calls = [(sc.tail_sync, 40 * US)] if sc.tail_sync else []
        if sc.gpu_memory is not None:
            tail_calls += [("cudaFree", 90 * US)] * len(self.alloc_sizes)
        if not tail_calls:
            return
        n_sync = 1 if sc.tail_sync else 0
        tdur = np.array([d for _, d in tail_calls], np.int64)
        tstart = last_step_end + 500 * US + np.cumsum(tdur + 30 * US) - tdur
        rows = self.add_api(tstart, tdur, self.main,
                            np.array([self.names.api_names.code(n) for n, _ in tail_calls], np.int64),
                            tstart[-1] + tdur[-1] + 1)
        if sc.tail_sync:
            kind = SYNC_KINDS.index(SYNC_KIND.get(sc.tail_sync, "device"))
            self.sync_parts.append({"api_row": rows[:1], "sync_kind": np.array([kind]),
                                    "stream": np.array([COMPUTE_STREAM]),
                                    "min_ns": np.array([5 * US]), "phase": np.array([-1]),
                                    "step": np.array([-1])})
        if sc.gpu_memory is not None:
            sz = self.mem_parts[0]["bytes"]
            self.mem_parts.append({"start": tstart[n_sync:] + 20 * US, "bytes": sz,
                                   "address": self.mem_parts[0]["address"],
                                   "op": np.ones(sz.size, np.int64),
                                   "api_row": rows[n_sync:]})

    # -- GPU side -----------------------------------------------------------------------------
    def _gpu_execution(self, api: dict, base: int) -> tuple[dict | None, np.ndarray]:
        """Run the GPU items FIFO per stream; ready = call start + launch latency + a
        deterministic 0..6 µs (+ sub-µs) pattern. Appends kernels/memcpy/memset rows in GPU
        start order (as exports list them); returns the items and their end times."""
        if not self.gpu_parts:
            return None, np.zeros(0, np.int64)
        g = concat_columns(self.gpu_parts, _GPU_KEYS)
        call_start = api["start"][g["api_row"]]
        ready = (call_start + self.sc.launch_latency_ns + ((call_start // 1_000) % 7) * 1_000
                 + (call_start * 7919) % 997)
        gstart = np.zeros_like(ready)
        gend = np.zeros_like(ready)
        for s in np.unique(g["stream"]):
            idx = np.flatnonzero(g["stream"] == s)
            idx = idx[np.argsort(ready[idx], kind="stable")]
            e = fifo_ends(ready[idx], g["dur"][idx], self.sc.gpu_gap_ns)
            gend[idx] = e
            gstart[idx] = e - g["dur"][idx]
        for kind, key in ((KIND_KERNEL, "kernels"), (KIND_MEMCPY, "memcpy"), (KIND_MEMSET, "memset")):
            idx = np.flatnonzero(g["kind"] == kind)
            if idx.size == 0:
                continue
            idx = idx[np.argsort(gstart[idx], kind="stable")]
            out = {"start": gstart[idx], "end": gend[idx], "pidx": np.full(idx.size, self.proc.index),
                   "stream": g["stream"][idx], "api_row": g["api_row"][idx] + base,
                   "phase": g["phase"][idx], "step": g["step"][idx]}
            if kind == KIND_KERNEL:
                out["kinfo"] = g["kinfo"][idx]
            elif kind == KIND_MEMCPY:
                for c in ("bytes", "copy_kind", "src_kind", "dst_kind", "migration"):
                    out[c] = g[c][idx]
            else:
                out["bytes"] = g["bytes"][idx]
            self.parts[key].append(out)
        return g, gend

    @staticmethod
    def _drain(api: dict, sy: dict, g: dict | None, gend: np.ndarray) -> np.ndarray:
        """Per sync: when the work it waits for (its stream's, or all for device syncs) that was
        launched before the sync call has finished (0: nothing to wait for)."""
        s_start = api["start"][sy["api_row"]]
        drain = np.zeros(s_start.size, np.int64)
        if g is None:
            return drain
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
        return drain

    def _syncs(self, api: dict, g: dict | None, gend: np.ndarray, base: int) -> None:
        """A sync call lasts until the drain (+1.5 µs, ≥ ``min_ns``), capped 300 ns before the
        thread's next call or the phase end; its SYNCHRONIZATION row lies inside the call."""
        sy = concat_columns(self.sync_parts, _SYNC_KEYS)
        s_start = api["start"][sy["api_row"]]
        drain = self._drain(api, sy, g, gend)
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
        self.parts["sync"].append({
            "start": row_start, "end": row_end, "pidx": np.full(rows.size, self.proc.index),
            "stream": np.where(skind == SYNC_KINDS.index("stream"), sy["stream"], NO_ID_U32),
            "api_row": rows + base, "sync_kind": skind,
            "event_id": np.where(skind == SYNC_KINDS.index("event"), 1 + np.arange(rows.size),
                                 NO_ID_U32),
            "phase": sy["phase"], "step": sy["step"]})

    def _api_ids(self, api: dict) -> dict:
        """Event class (driver 1 / runtime 0), correlationIds (1.. in time order, per process)
        and, with ``cuda_backtraces``, eventClass-67 duplicates of runtime calls ≥ 10 µs."""
        names = self.names.api_names.values
        eclass = np.array([1 if n in DRIVER_APIS else 0 for n in names], np.int64)[api["name"]]
        corr = np.empty(api["start"].size, np.int64)
        corr[np.argsort(api["start"], kind="stable")] = 1 + np.arange(api["start"].size)
        api["eclass"] = eclass
        api["corr"] = corr
        api["unsuffixed"] = np.zeros(corr.size, bool)
        api["pidx"] = np.full(corr.size, self.proc.index)
        if self.sc.cuda_backtraces:
            long = np.flatnonzero((eclass == 0) & (api["end"] - api["start"] >= 10 * US))
            dup = {k: v[long].copy() for k, v in api.items()}
            dup["start"] -= 150
            dup["end"] += 250
            dup["eclass"][:] = 67
            dup["unsuffixed"][:] = True
            api = {k: np.concatenate([api[k], dup[k]]) for k in api}
        return api
