"""The causal replay of every analysed process (``analyses/replay``), run after the analysis —
the same way for an in-memory and a streamed run, so both give the same ``replay`` section.

``attach_replays(path, suite, bundle=None)`` sets ``ProcessAnalysis.replay`` of each process:
a ``ReplayResult`` or ``Unavailable(reason, hint)`` (never an exception).

Which rows the replay sees (``replay_spans``, ``span_frames``): for each representative step
(``analyses/replay.representative_steps``) ``[start, end)`` extended to the end of the GPU work
launched in it, at most one step's length past its end (``start + 2 × duration``); without steps
the analysed window's start (the op budget's share of it). Spans are taken in priority order
(median, p90, outlier, warm-up) while their calls and operations fit ``op_budget`` — one call or
operation per ``ROWS_PER_REPLAYED_OP`` rows of the export, at least ``MIN_REPLAY_OPS``, at least
one step (perf: the replay costs ≤ 10% of ``analyze``; on the 2M-kernel bench export that is the
median step). A span keeps the GPU operations and CUDA calls, NVTX ranges and OS-runtime
calls that overlap it, plus the calls that launched its GPU operations — rows a windowed read
(``loaders/read_window.py``) of ``[start, limit)`` always holds. The in-memory run takes them
from its bundle, the streamed run reads each span (its chunks are gone); both then put the
spans' rows in one canonical order (sorted, duplicates dropped, categories rebuilt), so the
replay's input — and its result — is the same. The replay-only columns (kernel streams, graph
launches, event ids: ``loaders/nsys_replay.py``) are read for the spans in both runs.

``NSYS_DIAG_NO_REPLAY=1`` skips all of it (``available: false`` with that reason).

With collectives in two or more of its GPU processes (``collective_ranks``) each process's steps
are replayed again with their collectives scaled to 1, 2, 4 and 8 data-parallel ranks
(``analyses/replay/scaling.py``); that projection replaces the process's formula ``scaling[]``
(``analyses/process.scaling_with_replay``).

Then every process is diagnosed again with its replay (``analyses/process.diagnose_with_replay``):
the verdict follows the what-if savings, or says in its evidence why it could not.
"""
from __future__ import annotations

import dataclasses
import os

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline.arrays import process_rows
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.process import diagnose_with_replay, scaling_with_replay
from nsys_diag.analyses.replay import (MAX_STEPS, NO_REPLAY_ENV, analyze_replay,
                                       representative_steps)
from nsys_diag.analyses.steps.detection import StepsResult
from nsys_diag.analyses.steps.operator_phases import with_operator_phases
from nsys_diag.loaders.nsys_specs import KERNEL_TABLE, RUNTIME_TABLE

FRAMES = ("kernels", "memcpy", "memset", "sync", "api", "nvtx", "osrt")
OP_FRAMES = ("kernels", "memcpy", "memset", "sync")
MIN_REPLAY_OPS = 20_000
"""The replay always may take on this many calls and operations (small exports: every
representative step)."""
ROWS_PER_REPLAYED_OP = 400
"""Beyond that, one replayed call or operation per this many kernel + CUDA API rows of the
export (``op_budget``)."""
SORT_KEYS = ("start_ns", "end_ns", "correlation_id", "global_tid", "device_id", "stream_id",
             "text")
Span = tuple[int, int, int]
"""(start_ns, end_ns, limit_ns): a replayed step (or window) and how far past its end the GPU
work launched in it is followed."""


def export_rows(tables: dict) -> int:
    """Kernel + CUDA API rows of an export (``meta.tables``: rows per table; for a PyTorch
    profiler trace, events per category)."""
    return sum(int(tables.get(t, 0)) for t in (KERNEL_TABLE, RUNTIME_TABLE) + KINETO_ROWS)


KINETO_ROWS = ("kernel", "Kernel", "cuda_runtime", "cuda_driver", "Runtime")
"""The Kineto categories counted as kernel + CUDA API rows."""


def op_budget(export_rows: int) -> int:
    """Calls + operations the replay may take on for an export of ``export_rows`` kernel + CUDA
    API rows (perf: its cost stays ≤ 10% of ``analyze``, measured ≈ 60 µs per replayed
    operation with its what-ifs against ≈ 2 µs per exported row for the analysis)."""
    return max(MIN_REPLAY_OPS, int(export_rows) // ROWS_PER_REPLAYED_OP)


def priority_steps(steps: StepsResult) -> list[int]:
    """The representative steps in the order they are picked (median, p90, outlier, warm-up)."""
    order: list[int] = []
    for k in range(1, MAX_STEPS + 1):
        for i, _ in representative_steps(steps, k):
            if i not in order:
                order.append(i)
    return order


def replay_spans(p, export_rows: int = 0) -> list[Span]:
    """The spans of one ``ProcessAnalysis`` (module docstring), representative steps in their
    priority order; without steps the start of the analysed window, its share of the export
    no larger than the op budget's."""
    steps = p.steps
    if isinstance(steps, StepsResult) and steps.count:
        out = []
        for i in priority_steps(steps):
            a, b = int(steps.starts_ns[i]), int(steps.ends_ns[i])
            out.append((a, b, b + max(b - a, 0)))
        return out
    a, b = int(p.window.start_ns), int(p.window.end_ns)
    if export_rows > op_budget(export_rows):
        b = a + int((b - a) * op_budget(export_rows) / export_rows)
    return [(a, b, b)] if b > a else []


def _overlap(df: pd.DataFrame, a: int, e: int) -> np.ndarray:
    return (df["end_ns"].to_numpy(np.int64) > a) & (df["start_ns"].to_numpy(np.int64) < e)


def span_frames(f: dict[str, pd.DataFrame], span: Span) -> tuple[dict[str, pd.DataFrame], int]:
    """The rows of one span (module docstring) and the span's extended end (ns)."""
    a, b, lim = span
    end = b
    for name in OP_FRAMES:
        df = f[name]
        if len(df) and "launch_start_ns" in df:
            ls = df["launch_start_ns"].to_numpy(np.int64)
            inside = (ls >= a) & (ls < b) & (df["start_ns"].to_numpy(np.int64) < lim)
            if inside.any():
                end = max(end, int(df["end_ns"].to_numpy(np.int64)[inside].max()))
    end = min(end, lim)
    out: dict[str, pd.DataFrame] = {}
    corr = []
    for name in OP_FRAMES:
        df = f[name]
        out[name] = df.loc[_overlap(df, a, end)]
        corr.append(out[name]["correlation_id"].to_numpy(np.int64))
    api = f["api"]
    launches = np.concatenate(corr) if corr else np.zeros(0, np.int64)
    keep = _overlap(api, a, end) | np.isin(api["correlation_id"].to_numpy(np.int64),
                                           launches[launches >= 0])
    out["api"] = api.loc[keep]
    nvtx = f["nvtx"]
    out["nvtx"] = nvtx.loc[(nvtx["start_ns"].to_numpy(np.int64) < end)
                           & ((nvtx["end_ns"].to_numpy(np.int64) > a)
                              | ~nvtx["closed"].to_numpy(bool))]
    osrt = f.get("osrt")
    out["osrt"] = osrt.loc[_overlap(osrt, a, end)] if osrt is not None else None
    return out, end


def canonical(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """The spans' rows of one frame in one order: categories rebuilt from the values (sorted),
    concatenated, duplicates dropped, sorted by ``SORT_KEYS`` (a row is one event: its times,
    correlation id and thread or device)."""
    cats = [c for c in parts[0].columns if isinstance(parts[0][c].dtype, pd.CategoricalDtype)]
    fixed = []
    for part in parts:
        part = part.copy()
        for c in part.columns:
            if part[c].dtype == object:  # free text: one type, so the rows sort
                part[c] = part[c].astype(str)
        for c in cats:
            col = part[c]
            if not isinstance(col.dtype, pd.CategoricalDtype):
                col = col.astype("category")
            part[c] = col.cat.remove_unused_categories()
        fixed.append(part)
    for c in cats:
        labels = sorted({str(v) for part in fixed for v in part[c].cat.categories})
        for part in fixed:
            part[c] = part[c].cat.rename_categories(
                [str(v) for v in part[c].cat.categories]).cat.set_categories(labels)
    df = pd.concat(fixed, ignore_index=True) if len(fixed) > 1 else fixed[0]
    keys = [c for c in SORT_KEYS if c in df.columns]
    if len(fixed) > 1:
        df = df.drop_duplicates(subset=keys or None)
    if len(df) and keys:
        df = df.sort_values(keys, kind="mergesort")
    return df.reset_index(drop=True)


def _frames_of(bundle, gpid: int) -> dict[str, pd.DataFrame]:
    out = {name: process_rows(getattr(bundle, name), gpid) for name in FRAMES[:-1]}
    osrt = getattr(bundle, "osrt", None)
    out["osrt"] = process_rows(osrt, gpid) if osrt is not None else None
    return out


def _read_span(path: str, span: Span):
    """The rows of ``[start, limit)`` of ``span``: a plain windowed read (no skeleton at hand)."""
    from nsys_diag.loaders import load_trace
    from nsys_diag.loaders.load_request import LoadRequest

    return load_trace(path, LoadRequest(kernel_detail=False, time_window=(span[0], span[2])))


def span_reader(path: str, skeleton, zones=None):
    """The streamed run's reader of one span: ``[start, limit)`` read as a chunk is
    (``load_trace(chunk=True)`` with the run's zone map ``zones``: rowid ranges instead of
    whole-table scans, no row counts; the skeleton's threads and NVTX rows instead of an NVTX
    read — ``engine.driver.with_skeleton_nvtx``). Perf: ≈ 1.3 s → ≈ 0.1 s per span on the
    8M-kernel bench export; the rows ``span_frames`` keeps are the same."""
    def read(span: Span):
        from nsys_diag.analyses.engine.driver import with_skeleton_nvtx
        from nsys_diag.loaders import Format, load_trace
        from nsys_diag.loaders.load_request import LoadRequest

        got = load_trace(path, LoadRequest(kernel_detail=False, time_window=(span[0], span[2]),
                                           chunk=True, zones=zones, nvtx=False,
                                           known_threads=skeleton.threads,
                                           format=Format.NSYS_SQLITE))
        return with_skeleton_nvtx(got, skeleton, span[0], span[2])
    return read


def _step_rows(steps: StepsResult, nvtx: pd.DataFrame) -> StepsResult:
    """``steps`` with ``is_step_row`` for ``nvtx`` (the spans' NVTX rows)."""
    mask = ((nvtx["global_tid"].to_numpy(np.int64) == steps.global_tid)
            & np.isin(nvtx["start_ns"].to_numpy(np.int64), steps.starts_ns)
            & np.isin(nvtx["end_ns"].to_numpy(np.int64), steps.ends_ns))
    return dataclasses.replace(steps, is_step_row=mask)


def _kernels_in(bundle, windows: list[tuple[int, int]]) -> int | None:
    """Kernels of every process overlapping the merged ``windows`` (None: no bundle)."""
    from nsys_diag.loaders.nsys_replay import merged_windows

    if bundle is None:
        return None
    k = bundle.kernels
    start, end = k["start_ns"].to_numpy(np.int64), k["end_ns"].to_numpy(np.int64)
    hit = np.zeros(len(k), bool)
    for a, b in merged_windows(windows):
        hit |= (end > a) & (start < b)
    return int(hit.sum())


def _span_rows(got: dict[str, pd.DataFrame | None]) -> int:
    frames = [got[n] for n in ("kernels", "memcpy", "memset", "api")]
    return int(sum(len(f) for f in frames if f is not None))


def replay_process(path: str, p, bundle=None, gpus: pd.DataFrame | None = None,
                   export_rows: int = 0, phase_map=None, export_tables: bool = True,
                   read_span=None, zones=None, ranks: int | None = None):
    """The replay of one ``ProcessAnalysis`` (``bundle``: the in-memory run's; None: read the
    spans from ``path`` with ``read_span``, default ``_read_span``; ``zones``: the streamed
    run's zone map, for the replay-only columns): its spans in priority order while their calls
    and operations fit ``op_budget(export_rows)`` (at least one). ``export_tables=False`` (a
    PyTorch profiler trace): no graph, event-record or stream tables beyond the bundle to read."""
    from nsys_diag.loaders.nsys_replay import read_replay_columns

    spans = replay_spans(p, export_rows)
    if not spans:
        return Unavailable("nothing to replay: no steps and no analysed window")
    parts: dict[str, list[pd.DataFrame]] = {name: [] for name in FRAMES}
    windows: list[tuple[int, int]] = []
    whole = _frames_of(bundle, p.global_pid) if bundle is not None else None
    budget, used, last = op_budget(export_rows), 0, 0
    for span in spans:
        if windows and used + last > budget:  # the next span would likely not fit either
            break
        src = whole if whole is not None else _frames_of(
            read_span(span) if read_span is not None else _read_span(path, span), p.global_pid)
        got, end = span_frames(src, span)
        last = _span_rows(got)
        used += last
        if windows and used > budget:
            break
        windows.append((span[0], end))
        for name in FRAMES:
            if got[name] is not None:
                parts[name].append(got[name])
    f = {name: canonical(v) if v else None for name, v in parts.items()}
    steps = p.steps
    if isinstance(steps, StepsResult) and steps.count:
        steps = _step_rows(steps, f["nvtx"])
        cpu_ops = getattr(bundle, "cpu_ops", None)  # a PyTorch profiler trace: the same phases
        if cpu_ops is not None and f["nvtx"] is not None:  # as the process analysis inferred
            f["nvtx"], steps = with_operator_phases(f["nvtx"], process_rows(cpu_ops, p.global_pid),
                                                    steps, phase_map)
    extra = read_replay_columns(path, windows, api=f["api"], kernel_streams=True,
                                expected_kernels=_kernels_in(bundle, windows), zones=zones) \
        if export_tables else _loaded_links(bundle)
    return analyze_replay(f["kernels"], f["memcpy"], f["memset"], f["sync"], f["api"], f["nvtx"],
                          steps=steps, window=windows[0],
                          osrt=f["osrt"], graphs=extra.graphs, sync_events=extra.sync_events,
                          cuda_events=extra.cuda_events, kernel_streams=extra.kernel_streams,
                          gpus=gpus, max_steps=len(windows), phase_map=phase_map,
                          ncu_dram_bytes=ncu_dram_bytes(getattr(p, "roofline", None)),
                          ranks=ranks)


def ncu_dram_bytes(roofline) -> dict[str, float] | None:
    """ncu DRAM bytes per launch by kernel family (``normalized_name``) from a process's
    roofline (None without ncu data): the DRAM floor of the ``tensor_cores_on`` what-if."""
    kernels = getattr(roofline, "kernels", None)
    if not kernels:
        return None
    out: dict[str, float] = {}
    for k in kernels:  # a few dozen names; a family's largest per-launch bytes (a floor)
        if k.dram_bytes and k.launches and k.normalized_name:
            per = float(k.dram_bytes) / k.launches
            out[k.normalized_name] = max(per, out.get(k.normalized_name, 0.0))
    return out or None


def _loaded_links(bundle):
    """The replay-only frames a loader made beside the bundle (a PyTorch profiler trace's
    ``cuda_sync`` event links), else none."""
    from nsys_diag.loaders.nsys_replay import ReplayColumns

    got = bundle.meta.extra.get("replay_columns") if bundle is not None else None
    return got if isinstance(got, ReplayColumns) else ReplayColumns()


def gpu_frame(gpus: list[dict]) -> pd.DataFrame:
    """The GPU table the replay reads (``device_id``, ``name``, ``cc_major``) from the suite's
    ``trace.gpus`` rows — the same in both runs."""
    return pd.DataFrame({
        "device_id": [int(g["id"]) for g in gpus], "name": [str(g["name"]) for g in gpus],
        "cc_major": [int(str(g["compute_capability"]).split(".")[0])
                     if g.get("compute_capability") else -1 for g in gpus]})


def attach_replays(path: str, suite, bundle=None, *, fmt: str = "nsys-sqlite",
                   export_rows: int = 0, skeleton=None, zones=None) -> None:
    """Set ``replay`` on every process of ``suite`` (module docstring; ``fmt``: the input's
    format; ``export_rows``: its kernel + CUDA API rows, ``op_budget``; ``skeleton`` and
    ``zones``: the streamed run's skeleton and zone map, its spans then read as chunks are,
    ``span_reader``). Bad or partial data, or an export the replay cannot read, gives
    ``Unavailable`` with the reason."""
    off = os.environ.get(NO_REPLAY_ENV, "") not in ("", "0")
    gpus = gpu_frame(list(suite.gpus))
    read_span = span_reader(path, skeleton, zones) if bundle is None and skeleton is not None \
        else None
    ranks = collective_ranks(suite.processes)
    for p in suite.processes:
        p.replay = _replay_one(path, p, bundle, gpus, fmt, export_rows, off,
                               getattr(suite.options, "phase_map", None), read_span, zones,
                               ranks)
        p.scaling = scaling_with_replay(p, getattr(suite.options, "batch_size", None))
        p.verdict_inputs, p.verdict = diagnose_with_replay(p, suite.thresholds)


def collective_ranks(processes) -> int | None:
    """The data-parallel ranks of the capture: its GPU processes that ran collectives (None
    when fewer than two did: a single rank's file does not say how many ranks its collectives
    spanned, and the replay projects nothing)."""
    n = sum(1 for p in processes
            if getattr(p.communication, "available", False) and p.communication.comm_ns > 0)
    return n if n >= 2 else None


def _replay_one(path: str, p, bundle, gpus: pd.DataFrame, fmt: str, export_rows: int, off: bool,
                phase_map=None, read_span=None, zones=None, ranks: int | None = None):
    """The replay of one process, or ``Unavailable`` with the reason (never an exception)."""
    if off:
        return Unavailable(f"the replay is turned off ({NO_REPLAY_ENV}=1)")
    if fmt not in ("nsys-sqlite", "kineto") or (fmt == "kineto" and bundle is None):
        return Unavailable("the input has no timeline to replay (an Nsight Compute CSV)",
                           "pass the Nsight Systems export (.sqlite)")
    try:  # a PyTorch profiler trace: the replay reads the loaded frames only
        return replay_process(path, p, bundle, gpus, export_rows, phase_map,
                              export_tables=fmt == "nsys-sqlite", read_span=read_span,
                              zones=zones, ranks=ranks)
    except Exception as exc:  # noqa: BLE001 — bad data must never crash the report
        return Unavailable(f"the replay could not run on this export "
                           f"({type(exc).__name__}: {exc})")


__all__ = ["attach_replays", "export_rows", "op_budget", "replay_process", "replay_spans",
           "span_frames", "span_reader", "canonical"]
