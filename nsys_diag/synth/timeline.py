"""Turn a :class:`~nsys_diag.synth.scenarios.Scenario` into schema-independent event columns.

The result (:class:`Timeline`) holds numpy arrays per event kind (CUDA API calls, kernels,
memcpys, memsets, synchronisations, NVTX rows, GPU-metric samples, GPU memory events) with
categorical codes instead of strings; :mod:`nsys_diag.synth.writer` maps it onto the tables of one
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

from nsys_diag.synth.events import (
    COPY_KIND, STATE_OSRT, STATE_RUNNING, Codes, Interning, ProcessInfo, concat_columns,
    covered_before, union_intervals)
from nsys_diag.synth.kernels import KernelInfo
from nsys_diag.synth.process import API_KEYS, Parts, ProcessBuilder
from nsys_diag.synth.scenarios import DEFAULT_METRIC_LEVELS, Scenario
from nsys_diag.synth.schema import GPU_METRIC_NAMES, gpu_model

_OTHER_THREADS = ("[NSys]", "[NSys Comms]", "CUPTI worker th", "cuda-EvtHandlr")


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
    osrt: dict[str, np.ndarray] = field(default_factory=dict)  # start, end, gtid, name (code)
    osrt_names: Codes = field(default_factory=Codes)
    samples: dict[str, np.ndarray] = field(default_factory=dict)  # ts, gtid, state, frame (code)
    frames: Codes = field(default_factory=Codes)
    stack: tuple[int, ...] = ()  # frame codes of the frames below the top one (depth 1..)


def build_timeline(sc: Scenario) -> Timeline:
    """Build every event of the scenario (deterministic for a given scenario)."""
    names = Interning()
    for p in sc.phases:
        names.phase_names.code(p.name)
    for q in sc.periodic:
        names.phase_names.code(q.phase.name)
    procs: list[ProcessInfo] = []
    parts: Parts = {k: [] for k in (
        "api", "kernels", "memcpy", "memset", "sync", "nvtx", "memory", "steps", "phase_occ",
        "osrt")}
    for pidx in range(sc.n_processes):
        proc = _process_info(sc, pidx)
        procs.append(proc)
        ProcessBuilder(sc, proc, parts, names).build()

    api = concat_columns(parts["api"], API_KEYS)
    kernels = concat_columns(parts["kernels"], ("start", "end", "pidx", "stream", "api_row", "kinfo",
                                      "phase", "step"))
    memcpy = concat_columns(parts["memcpy"], ("start", "end", "pidx", "stream", "api_row", "bytes",
                                    "copy_kind", "src_kind", "dst_kind", "phase", "step",
                                    "migration"))
    memset = concat_columns(parts["memset"], ("start", "end", "pidx", "stream", "api_row", "bytes",
                                    "phase", "step"))
    sync = concat_columns(parts["sync"], ("start", "end", "pidx", "stream", "api_row", "sync_kind",
                                "event_id", "phase", "step"))
    nvtx = concat_columns(parts["nvtx"], ("start", "end", "has_end", "event_type", "text", "registered",
                                "gtid", "domain", "range_id"))
    memory = concat_columns(parts["memory"], ("start", "pidx", "address", "bytes", "op", "api_row"))
    steps = concat_columns(parts["steps"], ("pidx", "step", "start", "end"))
    phase_occ = concat_columns(parts["phase_occ"], ("pidx", "step", "phase", "start", "end"))

    osrt = concat_columns(parts["osrt"], ("start", "end", "gtid", "name"))
    # capture window: from the session offset to the last event + tail
    ends = [api["end"], kernels["end"], memcpy["end"], memset["end"], sync["end"], nvtx["end"],
            steps["end"], osrt["end"]]
    last = max(int(x.max()) for x in ends if x.size)
    first = sc.session_offset_ns
    capture_end = last + sc.tail_ns
    metrics = _metrics(sc, procs, kernels, memcpy, names.phase_names, first, capture_end) \
        if (sc.gpu_metrics is not None and sc.cuda) else concat_columns([], ("ts", "device", "metric",
                                                                            "value"))
    samples, stack = _cpu_samples(sc, procs, osrt, phase_occ, names, first, capture_end)
    return Timeline(sc, procs, names.api_names, names.kernel_infos, names.nvtx_texts,
                    names.phase_names, names.domains, api, kernels, memcpy, memset, sync, nvtx,
                    metrics, memory, steps, phase_occ, first, capture_end, osrt=osrt,
                    osrt_names=names.osrt_names, samples=samples, frames=names.frames,
                    stack=stack)


def _cpu_samples(sc: Scenario, procs, osrt, phase_occ, names: Interning, first: int,
                 capture_end: int) -> tuple[dict[str, np.ndarray], tuple[int, ...]]:
    """CPU samples (see :class:`~nsys_diag.synth.scenarios.CpuSamplingSpec`): every period on
    each sampled thread, top frame = the OS runtime call it is in, else the frame of the main
    thread's phase, else the default frame. Vectorised per (process, thread)."""
    keys = ("ts", "gtid", "state", "frame")
    spec = sc.cpu_sampling
    if spec is None:
        return concat_columns([], keys), ()
    default = names.frames.code(spec.default_frame)
    stack = tuple(names.frames.code(f) for f in spec.stack)
    phase_frame = np.array([names.frames.code(spec.frames[p]) if p in spec.frames else default
                            for p in names.phase_names.values] + [default], np.int64)
    osrt_frame = np.array([names.frames.code(n) for n in names.osrt_names.values], np.int64)
    t = np.arange(first - first % spec.period_ns + spec.period_ns, capture_end,
                  spec.period_ns, dtype=np.int64)
    out = []
    for proc in procs:
        mine = phase_occ["pidx"] == proc.index
        o = np.argsort(phase_occ["start"][mine], kind="stable")
        ps, pe = phase_occ["start"][mine][o], phase_occ["end"][mine][o]
        pc = phase_occ["phase"][mine][o]
        j = np.searchsorted(ps, t, side="right") - 1
        inside = (j >= 0) & (t < pe[np.maximum(j, 0)])
        base = np.where(inside, phase_frame[pc[np.maximum(j, 0)]], default)
        for key in spec.threads:
            if key not in proc.threads:
                continue
            gtid = proc.gtid(key)
            frame, state = base.copy(), np.full(t.size, STATE_RUNNING, np.int64)
            on = np.flatnonzero(osrt["gtid"] == gtid)
            if on.size:
                on = on[np.argsort(osrt["start"][on], kind="stable")]
                k = np.searchsorted(osrt["start"][on], t, side="right") - 1
                inc = (k >= 0) & (t < osrt["end"][on][np.maximum(k, 0)])
                frame[inc] = osrt_frame[osrt["name"][on][k[inc]]]
                state[inc] = STATE_OSRT
            out.append({"ts": t, "gtid": np.full(t.size, gtid, np.int64), "state": state,
                        "frame": frame})
    return concat_columns(out, keys), stack


def _process_info(sc: Scenario, p: int) -> ProcessInfo:
    """Process ``p`` of the file: pid ``base_pid + rank + 7p``; threads main (tid = pid),
    autograd (pid + 14), one per other thread key used (pid + 20 + i), and nsys's own threads."""
    rank0 = sc.rank or 0
    pid = sc.base_pid + rank0 + p * 7
    threads = {"main": (pid, sc.main_thread_name or sc.process_name)}
    if sc.autograd_thread:
        threads["autograd"] = (pid + 14, "pt_autograd_0")
    extra_keys = sorted({s.thread for ph in sc.phases + tuple(q.phase for q in sc.periodic)
                         for s in ph.kernels + ph.memcpys + ph.memsets + ph.syncs + ph.ranges
                         + ph.api_calls + ph.host_calls}
                        - set(threads))
    for i, key in enumerate(extra_keys):
        threads[key] = (pid + 20 + i, key)
    for i, name in enumerate(_OTHER_THREADS):
        threads[name] = (pid + 2 + i, name)
    return ProcessInfo(p, pid, rank0 + p, p + 1 if sc.rank is None else 1, threads)


# ---------------------------------------------------------------------------------------------
# GPU metrics
# ---------------------------------------------------------------------------------------------

def _metrics(sc: Scenario, procs, kernels, memcpy, phase_names: Codes, first: int,
             capture_end: int) -> dict[str, np.ndarray]:
    spec = sc.gpu_metrics
    assert spec is not None  # called only for a scenario with GPU metrics
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
    return concat_columns(out, ("ts", "device", "metric", "value"))

__all__ = ["Timeline", "ProcessInfo", "Codes", "build_timeline", "union_intervals",
           "covered_before"]
