"""The chunk loop of a streaming analysis (``app/stream.py`` gives it the reads).

``run_stream(skeleton, read, targets, options, th)``: ``read(lo, hi)`` returns the bundle of the
session span ``[lo, hi)`` read through the window push-down; ``targets`` are where chunks should
end. Each pass reads the chunks in time order, cuts each at a safe time (``cuts.safe_cut``),
hands every process's rows to the declared analyses' partials (``registry.span_states``) and
records the facts (``globals.ProcessFacts``); ``settle`` then decides whether the assumed global
values held (else one more pass with the settled ones) and ``assemble`` merges the partials.
"""
from __future__ import annotations

import dataclasses
import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, cast

import numpy as np

from nsys_diag.analyses.timeline.arrays import process_rows, take_rows
from nsys_diag.analyses.timeline.busy import device_ids, gpu_activity_span
from nsys_diag.analyses.engine.context import chunk_inputs
from nsys_diag.analyses.engine.cuts import FIRST_LO, LAST_HI, safe_cut
from nsys_diag.analyses.engine.globals import (ProcessFacts, ProcessGlobals, count_intervals,
                                                process_globals)
from nsys_diag.analyses.steps.repeat import MissingCounts
from nsys_diag.analyses.engine.sync_edges import with_sync_edges
from nsys_diag.analyses.selection import device_rows
from nsys_diag.analyses.steps.repeat import launch_or_start
from nsys_diag.model.bundle import TraceBundle
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.thresholds import Thresholds

EDGE_MARGIN_SHARE = 0.02
"""Each chunk is read this share of its span (at least ``EDGE_MARGIN_MIN_NS``) beyond both of its
edges: the rows a sequence-dependent gap cause needs there (``sync_edges``: the blocking call
before the chunk, the next enqueue call after it)."""
EDGE_MARGIN_MIN_NS = 1_000_000

PROCESS_EVENT_FRAMES = ("kernels", "memcpy", "memset", "sync", "api", "osrt", "cpu_samples",
                        "cpu_ops")
"""Frames of a chunk's bundle split by ``global_pid`` (NVTX comes from the skeleton)."""

Reader = Callable[[int, int], TraceBundle]


@dataclass
class StreamPass:
    """One pass over the chunks: partials per process, facts, and how it was read."""

    assumed: dict[int, ProcessGlobals]
    partials: dict[int, list[dict]] = field(default_factory=lambda: defaultdict(list))
    facts: dict[int, ProcessFacts] = field(default_factory=lambda: defaultdict(ProcessFacts))
    late: set[int] = field(default_factory=set)
    """Processes first seen after the first chunk (their earlier chunks have no partials)."""
    spans: list[tuple[int, int]] = field(default_factory=list)
    max_rows: int = 0
    inexact_cuts: int = 0
    chunk_bundles: list = field(default_factory=list)
    """Per chunk, what the file-level results need of it (``registry.BUNDLE_PARTIALS``)."""


def with_skeleton_nvtx(bundle: TraceBundle, skeleton: TraceBundle, lo: int, hi: int
                      ) -> TraceBundle:
    """A chunk read without NVTX (``load_trace(nvtx=False, known_threads=skeleton.threads)``:
    perf, no NVTX scan and decode per chunk) given the skeleton's NVTX rows a read of
    ``[lo, hi)`` would hold — the ranges that start before ``hi`` and end after ``lo`` or never
    end, and the marks inside."""
    n, m = skeleton.nvtx, skeleton.nvtx_marks
    if len(n):
        s, e = n["start_ns"].to_numpy(np.int64), n["end_ns"].to_numpy(np.int64)
        n = take_rows(n, (s < hi) & (~n["closed"].to_numpy(bool) | (e > lo)))
    if len(m):
        ts = m["ts_ns"].to_numpy(np.int64)
        m = take_rows(m, (ts >= lo) & (ts < hi))
    return dataclasses.replace(bundle, nvtx=n, nvtx_marks=m)


def _process_frames(bundle: TraceBundle, gpid: int, nvtx) -> dict:
    f = {n: process_rows(getattr(bundle, n), gpid) for n in PROCESS_EVENT_FRAMES
         if getattr(bundle, n, None) is not None}
    f["nvtx"] = nvtx
    f["gpu_metrics"] = bundle.gpu_metrics
    return f


def _margins(f: dict, lo: int, hi: int) -> dict:
    """The API and sync rows of the read margins (started at or before ``lo`` or after ``hi``):
    where the sync rule's edge rows lie (``sync_edges``; perf: the chunk's own rows are not
    classified again)."""
    out = {}
    for name in ("api", "sync"):
        s = f[name]["start_ns"].to_numpy(np.int64)
        out[name] = take_rows(f[name], (s <= lo) | (s > hi))
    return out


def _gpu_pids(bundle: TraceBundle) -> set[int]:
    out: set[int] = set()
    for f in (bundle.kernels, bundle.memcpy, bundle.memset):
        out.update(int(x) for x in np.unique(f["global_pid"].to_numpy(np.int64)))
    return out


def _cut(bundle: TraceBundle, lo: int, target: int, last: bool, all_devices) -> tuple[int, bool]:
    if last:
        return LAST_HI, True
    cut = safe_cut(bundle.kernels, tuple(sorted(all_devices)), lo, target)
    if cut is None:
        return int(target), True  # no kernel near the target: nothing to split
    return cut.at_ns, cut.exact


@dataclass
class ChunkResult:
    """One chunk's output: per process its partials and facts; the file-level partials."""

    partials: dict[int, dict]
    facts: dict[int, ProcessFacts]
    assumed: dict[int, ProcessGlobals]
    """Globals this chunk assumed for processes it was not given (first seen here)."""
    bundle_partials: dict
    rows: int


def analyse_chunk(skeleton: TraceBundle, bundle: TraceBundle, lo: int, hi: int, index: int,
                  assumed: dict[int, ProcessGlobals], assume, options: AnalyzeOptions,
                  th: Thresholds, only: set[int] | None = None,
                  keep_launches: bool = False) -> ChunkResult:
    """The partials and facts of the chunk ``[lo, hi)`` of ``bundle`` (read for at least that
    span), per process. ``assume(gpid, bundle)`` gives the globals of a process not in
    ``assumed``; ``only``: just these processes; ``keep_launches``: record every kernel's
    launch time (8 bytes each) instead of the assumed steps' kernel counts only."""
    from nsys_diag.analyses.engine.registry import BUNDLE_PARTIALS, span_states

    if options.device is not None:  # --device: the chunk's rows of that device only
        bundle = device_rows(bundle, options.device)
    gpids = _gpu_pids(bundle) | set(assumed)
    if index == 0:
        gpids |= set(int(g) for g in np.unique(skeleton.nvtx["global_pid"].to_numpy(np.int64)))
    if only is not None:
        gpids = set(only)
    new = {g: assume(g, bundle) for g in gpids if g not in assumed}
    partials, facts = {}, {}
    for g in sorted(gpids):
        glob = assumed.get(g) or new[g]
        f = _process_frames(bundle, g, process_rows(skeleton.nvtx, g))
        ci = with_sync_edges(chunk_inputs(index, f, lo, hi, window=glob.window,
                                          devices=glob.devices, steps=glob.steps,
                                          phase_map=options.phase_map), _margins(f, lo, hi))
        partials[g] = span_states(ci, glob=glob, th=th, options=options)
        facts[g] = ProcessFacts()
        _record_facts(facts[g], ci, glob, keep_launches)
    windows = sorted({v.window for v in {**assumed, **new}.values()},
                     key=lambda w: (w.start_ns, w.end_ns, w.source))
    return ChunkResult(partials, facts, new,
                       {name: fn(bundle, lo, hi, windows=windows)
                        for name, fn in BUNDLE_PARTIALS.items()},
                       _rows(bundle))


def _absorb(sp: StreamPass, r: ChunkResult, index: int, span: tuple[int, int]) -> None:
    for g, glob in r.assumed.items():
        sp.assumed.setdefault(g, glob)
        if index:
            sp.late.add(g)
    for g, parts in r.partials.items():
        sp.partials[g].append(parts)
        f = r.facts[g]
        sp.facts[g].add_counts(f.kernels, f.interval_counts)
        sp.facts[g].add(np.concatenate(f.launches) if f.launches else None,
                        f.span, f.devices, f.gpu_rows, f.first_kernel_ns,
                        f.thread_sets[0] if f.thread_sets else None)
        sp.facts[g].tensor_sampling += f.tensor_sampling
        sp.facts[g].osrt_rows += f.osrt_rows
    sp.chunk_bundles.append(r.bundle_partials)
    sp.max_rows = max(sp.max_rows, r.rows)
    sp.spans.append(span)


class Replan(Protocol):
    """What keeps a sequential pass within its memory (``app/stream_plan.BudgetGuard``)."""

    def __call__(self, index: int, rows: int, next_lo: int, pending: list[int],
                 ahead_rows: int = 0) -> list[int]:
        """After chunk ``index`` of ``rows`` kernel + API rows (``ahead_rows``: those of the
        next chunk when it was read ahead, 0 when not), the targets after ``next_lo`` (where
        the chunk still to be cut starts, or the target of the chunk read ahead): ``pending``,
        or finer ones."""
        ...

    def read_ahead(self, rows: int) -> bool:
        """Whether the next chunk may be read while this one (``rows`` rows) is analysed."""
        ...


@dataclass
class _Ahead:
    """The next chunk's read, started before this chunk's analysis (``target``: its end;
    None: the export's end)."""

    target: int | None
    future: Any


def run_pass(skeleton: TraceBundle, read: Reader, targets: list[int], assume,
             options: AnalyzeOptions, th: Thresholds, only: set[int] | None = None,
             keep_launches: bool = False, replan: Replan | None = None,
             read_ahead: bool = True) -> StreamPass:
    """One sequential pass (see the module docstring): each chunk is read up to its target and
    cut at the latest safe time before it; the next starts at the cut. ``assume(gpid, bundle)``
    gives the globals of a process (once, on the first chunk it appears in); ``only``: analyse
    just these processes (a second pass: the settled ones); ``replan``: may make the chunks
    left finer after each chunk (``app/stream.py`` keeps the pass in its memory budget).

    Read-ahead (perf): once a chunk is cut, the next one's span is known, so it is read on a
    thread while this one is analysed (SQLite and Arrow decode without the GIL) — unless
    ``read_ahead`` is False (one usable CPU) or ``replan.read_ahead`` says two chunks do not fit
    the budget. The answers are the same either way (the chunks may differ: a chunk read ahead
    keeps the target it was read for when the chunks after it are re-planned finer)."""
    from concurrent.futures import ThreadPoolExecutor

    sp = StreamPass(assumed={})
    lo = FIRST_LO
    pending = [int(t) for t in targets]
    ahead: _Ahead | None = None
    with ThreadPoolExecutor(1, thread_name_prefix="chunk-read") as pool:
        for i in itertools.count():
            if ahead is None:
                target = pending.pop(0) if pending else None
                bundle = read(*read_span(lo, target))
            else:
                target, bundle, ahead = ahead.target, ahead.future.result(), None
            devices = set(device_ids(bundle.kernels))
            for glob in sp.assumed.values():
                devices |= set(glob.devices)
            hi, exact = _cut(bundle, lo, 0 if target is None else int(target), target is None,
                             devices)
            sp.inexact_cuts += 0 if exact else 1
            if target is not None and read_ahead and \
                    (replan is None or replan.read_ahead(_rows(bundle))):
                nxt = pending.pop(0) if pending else None
                ahead = _Ahead(nxt, pool.submit(read, *read_span(hi, nxt)))
            done = analyse_chunk(skeleton, bundle, lo, hi, i, sp.assumed, assume, options, th,
                                 only, keep_launches)
            _absorb(sp, done, i, (lo, hi))
            lo = hi
            del bundle
            if target is None:
                return sp
            if replan is not None:
                pending = _replan_after(replan, i, done.rows, lo, pending, ahead)
    raise AssertionError("unreachable")  # pragma: no cover - itertools.count() never ends


def _rows(bundle: TraceBundle) -> int:
    """Kernel + API rows of a chunk's bundle (what the budget guard counts)."""
    return len(bundle.kernels) + len(bundle.api)


def _replan_after(replan: Replan, index: int, rows: int, lo: int, pending: list[int],
                  ahead: _Ahead | None) -> list[int]:
    """``replan`` after chunk ``index``: with a chunk read ahead, once its read is done (its
    memory is then part of the peak the guard measures; its rows are passed beside this
    chunk's), for the targets after its own — it keeps the target it was read for."""
    if ahead is None:
        return replan(index, rows, lo, pending)
    if ahead.target is None:  # the chunk read ahead is the last one: nothing left to plan
        return pending
    return replan(index, rows, ahead.target, pending, ahead_rows=_rows(ahead.future.result()))


def read_span(lo: int, target: int | None) -> tuple[int, int]:
    """The span to read for a chunk from ``lo`` to (about) ``target``: with the edge margins
    (``EDGE_MARGIN_SHARE``); the first and last chunks read to the export's ends."""
    if target is None:
        return (FIRST_LO if lo == FIRST_LO else lo - EDGE_MARGIN_MIN_NS), LAST_HI
    if lo == FIRST_LO:
        return FIRST_LO, int(target) + EDGE_MARGIN_MIN_NS
    m = max(EDGE_MARGIN_MIN_NS, int((int(target) - lo) * EDGE_MARGIN_SHARE))
    return lo - m, int(target) + m


def _record_facts(facts: ProcessFacts, ci, glob: ProcessGlobals, keep_launches: bool) -> None:
    from nsys_diag.analyses.gaps.spans import thread_sets
    from nsys_diag.analyses.kernels.tensor_spans import partial_tensor_sampling
    from nsys_diag.analyses.steps.repeat import KernelCounts, kernels_per_step

    k = ci.owned("kernels")
    ops = [ci.owned(n) for n in ("kernels", "memcpy", "memset")]
    facts.add_counts(len(k), {KernelCounts.key(s, e): kernels_per_step(k, s, e)
                              for s, e in count_intervals(glob.steps)})
    facts.add((launch_or_start(k) if len(k) else np.zeros(0, np.int64)) if keep_launches
              else None,
              gpu_activity_span(*ops), device_ids(*ops), sum(len(o) for o in ops),
              int(k["start_ns"].min()) if len(k) else None, thread_sets(ci.frames["api"]))
    facts.tensor_sampling.append(partial_tensor_sampling(ci))
    osrt = ci.frames.get("osrt")
    facts.osrt_rows += 0 if osrt is None else len(osrt)


def settle(skeleton: TraceBundle, sp: StreamPass, options: AnalyzeOptions, th: Thresholds,
           keep_launches: bool = False) -> dict[int, ProcessGlobals]:
    """The exact globals of the processes ``analyze`` analyses, from the pass's facts
    (``capabilities.analysed_process_ids``'s rule: GPU processes; else NVTX ones)."""
    gpu = sorted(g for g, f in sp.facts.items() if f.gpu_rows)
    chosen = gpu or sorted(g for g in sp.facts if len(process_rows(skeleton.nvtx, g)))
    from nsys_diag.analyses.gaps.spans import merge_thread_sets
    from nsys_diag.analyses.kernels.tensor_spans import merge_tensor_sampling

    from nsys_diag.analyses.engine.registry import capture_end_ns

    capture = (skeleton.meta.capture_start_ns, capture_end_ns(skeleton, sp.chunk_bundles))
    out = {g: process_globals(g, process_rows(skeleton.nvtx, g),
                              sp.facts[g].step_kernels(keep_launches),
                               sp.facts[g].span, sp.facts[g].devices, capture, options, th,
                               first_kernel_ns=sp.facts[g].first_kernel_ns,
                               io_threads=merge_thread_sets(sp.facts[g].thread_sets),
                               tensor_sampling=merge_tensor_sampling(sp.facts[g].tensor_sampling))
           for g in chosen}
    if options.steps is not None:  # --steps outside the detected steps: a usage error
        _check_steps(skeleton, sp, out, options, th)
    return out


def _check_steps(skeleton: TraceBundle, sp: StreamPass, settled: dict[int, ProcessGlobals],
                 options: AnalyzeOptions, th: Thresholds) -> None:
    """``analyze_process``'s ``--steps`` checks on the settled steps of each process."""
    import dataclasses

    from nsys_diag.analyses.selection import check_selected_steps, check_steps
    from nsys_diag.analyses.steps.detection import analyze_steps

    for g, glob in settled.items():
        where = f" in process {(g >> 24) & 0xFFFFFF}" if len(settled) > 1 else ""
        detected = analyze_steps(process_rows(skeleton.nvtx, g),
                                 sp.facts[g].step_kernels(bool(sp.facts[g].launches)),
                                 options=dataclasses.replace(options, steps=None, window_ns=None),
                                 th=th)
        check_steps(options, detected, where)
        check_selected_steps(options, glob.steps)


def held(sp: StreamPass, settled: dict[int, ProcessGlobals]) -> bool:
    """Whether the pass's assumptions were right for every settled process."""
    return all(g in sp.assumed and g not in sp.late and
               sp.assumed[g].same_for_chunks(s, host_io=bool(sp.facts[g].osrt_rows))
               for g, s in settled.items())


def first_assumption(skeleton: TraceBundle, census_span, options: AnalyzeOptions, th: Thresholds):
    """``assume`` for a first pass: steps from NVTX alone, the export's GPU span
    (``census_span``), the devices of the first chunk the process appears in."""
    capture = (skeleton.meta.capture_start_ns, skeleton.meta.capture_end_ns)
    empty = ProcessFacts().kernel_proxy()

    from types import SimpleNamespace

    from nsys_diag.analyses.gaps.spans import io_threads_of
    from nsys_diag.analyses.kernels.tensor_spans import (merge_tensor_sampling,
                                                         partial_tensor_sampling)

    def assume(gpid: int, bundle: TraceBundle) -> ProcessGlobals:
        ops = [process_rows(getattr(bundle, n), gpid) for n in ("kernels", "memcpy", "memset")]
        k = ops[0]
        devices = device_ids(*ops)
        # the Tensor Active sampling of this first chunk (what partial_tensor_sampling reads)
        seen = cast(Any, SimpleNamespace(frames={"gpu_metrics": bundle.gpu_metrics},
                                         devices=tuple(sorted(devices))))
        return process_globals(gpid, process_rows(skeleton.nvtx, gpid), empty, census_span,
                               devices, capture, options, th,
                               first_kernel_ns=int(k["start_ns"].min()) if len(k) else None,
                               io_threads=io_threads_of(process_rows(bundle.api, gpid)),
                               tensor_sampling=merge_tensor_sampling(
                                   [partial_tensor_sampling(seen)]))
    return assume


def spans_pass(skeleton: TraceBundle, results, spans: list[tuple[int, int]]) -> StreamPass:
    """A ``StreamPass`` from chunk results computed elsewhere (e.g. on Dask workers), in order."""
    sp = StreamPass(assumed={})
    for i, (r, span) in enumerate(zip(results, spans)):
        _absorb(sp, r, i, span)
    return sp


PassRunner = Callable[..., StreamPass]
"""``runner(assume, only, keep_launches) -> StreamPass``: one pass over the chunks (sequential:
``run_pass``; on Dask: ``app/stream_dask.py``)."""


def run_stream(skeleton: TraceBundle, runner: PassRunner, options: AnalyzeOptions,
               th: Thresholds, *, census_span=None, chunk_rows: int | None = None,
               unmatched_warning=None):
    """Passes until the globals hold (at most two), then ``(AnalysisSuite, TraceMeta)``
    (``unmatched_warning``: the loader's builder of the unmatched-launch warning, to recount it
    over the chunks' owned rows); None
    when the export holds neither GPU work nor NVTX ranges (nothing to stream: the in-memory
    run analyses its whole bundle once)."""
    from nsys_diag.analyses.engine.assemble import assemble_suite

    first = first_assumption(skeleton, census_span, options, th)
    sp = runner(first, None, False)
    passes = 1
    try:
        settled = settle(skeleton, sp, options, th)
    except MissingCounts:  # the steps asked for counts of other intervals: keep the launches
        sp = runner(first, None, True)
        settled = settle(skeleton, sp, options, th, keep_launches=True)
        passes = 2
    if not settled:
        return None
    if not held(sp, settled):
        sp = runner(lambda g, _b: settled[g], set(settled), False)
        passes += 1
    chunks = {"count": len(sp.spans), "max_rows": int(sp.max_rows), "passes": passes,
              "inexact_cuts": int(sp.inexact_cuts), "chunk_rows": chunk_rows}
    return assemble_suite(skeleton, sp, settled, options, th, chunks=chunks,
                          unmatched_warning=unmatched_warning)
