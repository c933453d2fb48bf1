"""Merge a streaming pass's partials into the ``AnalysisSuite`` the in-memory run gives.

Per process: each declared analysis merged and finished from its spans' states
(``registry.finish_declared``), then the ending the in-memory run shares (``process.finish_process``: throughput,
verdict inputs and verdict, MFU and scaling). File level: the load warnings, then
``process.finish_suite`` (headline process, DataLoader workers, capability probe).

The file-level checks that read the bundle (has it CUDA work, OS-runtime calls, which GPU
metrics …) read a **summary bundle**: the skeleton (whole NVTX list, processes, threads, GPUs,
memory events, metadata) plus, for each event frame, the first rows the chunks showed
(``SUMMARY_ROWS``) — enough for "is there any", never the events themselves.
"""
from __future__ import annotations

import dataclasses

import pandas as pd

from nsys_diag.analyses.engine.globals import ProcessGlobals
from nsys_diag.analyses.roofline.gpu_choice import choose_gpu
from nsys_diag.analyses.selection import device_rows
from nsys_diag.analyses.engine.registry import (SAMPLED_FRAMES, capture_end_ns, finish_declared,
                                                 merge_file_level)
from nsys_diag.analyses.memory import analyze_memory
from nsys_diag.analyses.process import finish_process, finish_suite, process_identity
from nsys_diag.model.bundle import LoadWarning, TraceBundle
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.thresholds import Thresholds

SUMMARY_ROWS = 1
"""Rows of each event frame a summary bundle keeps (module docstring)."""


def _union(first: pd.DataFrame, more, key: str) -> pd.DataFrame:
    """``first`` with the rows of ``more`` whose ``key`` it lacks, sorted by ``key``."""
    out = pd.concat([first, *more], ignore_index=True).drop_duplicates(key)
    return out.sort_values(key, kind="stable")[list(first.columns)].reset_index(drop=True)


def summary_bundle(skeleton: TraceBundle, samples: dict[str, pd.DataFrame],
                   warnings: list[LoadWarning], chunk_bundles: list[dict]) -> TraceBundle:
    """The skeleton with the sample rows of each event frame, the merged load warnings, and the
    processes and GPUs every chunk named (the skeleton knows only the processes with NVTX ranges
    and the GPUs of the export's GPU table)."""
    frames = {k: v for k, v in samples.items() if v is not None}
    procs = _union(skeleton.processes, [c["processes"] for c in chunk_bundles
                                        if c.get("processes") is not None], "global_pid")
    gpus = _union(skeleton.gpus, [c["gpus"] for c in chunk_bundles if c.get("gpus") is not None],
                  "device_id")
    return dataclasses.replace(skeleton, **frames, warnings=warnings, processes=procs, gpus=gpus)


def load_order(lists: list[list[str]]) -> dict[str, int]:
    """A rank per warning code that keeps the order of every list (each load — the skeleton, a
    chunk — lists its warnings in the loader's order, so the merged list is the order the
    in-memory load gives): a code comes after every code some list puts before it; ties (and a
    cycle, which no loader writes) by first appearance. A few codes: plain Python."""
    seen = list(dict.fromkeys(c for codes in lists for c in codes))
    before: dict[str, set[str]] = {c: set() for c in seen}
    for codes in lists:
        for i, c in enumerate(codes):
            before[c].update(x for x in codes[:i] if x != c)
    rank: dict[str, int] = {}
    while len(rank) < len(seen):
        free = [c for c in seen if c not in rank and before[c] <= rank.keys()]
        rank[(free or [c for c in seen if c not in rank])[0]] = len(rank)
    return rank


def merge_warnings(skeleton: TraceBundle, chunk_warnings: list[list[LoadWarning]],
                   has_gpu_work: bool, unmatched: list[dict] | None = None,
                   unmatched_warning=None) -> list[LoadWarning]:
    """The load warnings of a streamed export: the skeleton's (NVTX, strings, schema …) and each
    chunk's, once per code (the chunk's with the largest count: a count may be of devices, not
    rows, and rows near an edge are read by two chunks), in the loader's order (``load_order``);
    the skeleton's "no CUDA" warning only when no chunk held GPU work; the unmatched-launch
    warning recounted from the chunks' owned rows (``unmatched``: ``registry._unmatched`` of each chunk;
    ``unmatched_warning``: the loader's builder of that warning, given by the app layer)."""
    out: dict[str, LoadWarning] = {}
    for w in skeleton.warnings:
        if w.code == "no_cuda_tables" and has_gpu_work:
            continue
        out[w.code] = w
    for ws in chunk_warnings:
        for w in ws:
            if w.code in ("no_cuda_tables", "no_nvtx", "unterminated_nvtx"):
                continue  # the skeleton says these for the whole export
            if w.code not in out or w.count > out[w.code].count:
                out[w.code] = w
    if "unmatched_launches" in out and unmatched and unmatched_warning is not None:
        totals: dict[str, tuple[int, int]] = {}
        for c in unmatched:
            for name, (miss, rows) in c.items():
                m0, r0 = totals.get(name, (0, 0))
                totals[name] = (m0 + miss, r0 + rows)
        recount = unmatched_warning(totals)
        if recount is not None:
            out["unmatched_launches"] = recount
    rank = load_order([[w.code for w in skeleton.warnings]]
                      + [[w.code for w in ws] for ws in chunk_warnings])
    return sorted(out.values(), key=lambda w: rank[w.code])


def assemble_process(bundle: TraceBundle, glob: ProcessGlobals, parts: list[dict],
                     options: AnalyzeOptions, th: Thresholds, roofline=None):
    """The ``ProcessAnalysis`` of one process from its chunk partials: each merge, then the
    shared ending (``process.finish_process``)."""
    gpid = glob.global_pid
    pid, _ = process_identity(bundle, gpid)
    merged = finish_declared(parts, glob=glob, bundle=bundle, options=options, th=th,
                             roofline=roofline)
    mem_frame = bundle.gpu_memory
    if pid != -1 and len(mem_frame):
        mem_frame = mem_frame.loc[mem_frame["pid"].to_numpy() == pid]
    results = {**merged, "kernels": merged["kernel_table"], "roofline": merged.get("roofline"),
               "memory": analyze_memory(mem_frame, bundle.gpus, th=th)}
    return finish_process(bundle, gpid, glob.devices, glob.window, results, options, th)


def assemble_suite(skeleton: TraceBundle, sp, settled: dict[int, ProcessGlobals],
                   options: AnalyzeOptions, th: Thresholds, *, chunks: dict,
                   unmatched_warning=None):
    """``(AnalysisSuite, TraceMeta)`` of a streamed export (module docstring)."""
    has_gpu = any(f.gpu_rows for f in sp.facts.values())
    warnings = merge_warnings(skeleton, [c.get("warnings", []) for c in sp.chunk_bundles],
                              has_gpu, [c["unmatched"] for c in sp.chunk_bundles
                                        if "unmatched" in c], unmatched_warning)
    meta = dataclasses.replace(skeleton.meta, extra={**skeleton.meta.extra, "chunks": chunks},
                               capture_end_ns=capture_end_ns(skeleton, sp.chunk_bundles))
    bundle = summary_bundle(dataclasses.replace(skeleton, meta=meta), _samples(sp.chunk_bundles),
                            warnings, sp.chunk_bundles)
    if options.device is not None:
        bundle = device_rows(bundle, options.device)
    bundle = choose_gpu(bundle, options.gpu)
    roofline = None
    if bundle.has_ncu:
        from nsys_diag.analyses.roofline.analysis import analyze_roofline

        roofline = analyze_roofline(bundle.ncu_launches, bundle.ncu_metrics, bundle.gpus, th=th)
    procs = [assemble_process(bundle, settled[g], sp.partials[g], options, th, roofline=roofline)
             for g in sorted(settled)]
    if not procs:
        raise ValueError("no process to analyse")  # pragma: no cover - the caller streams GPU work

    def loader_of(window, owner):  # the chunks' DataLoader parts over that window
        return merge_file_level(sp.chunk_bundles, "loader", window=window, th=th, bundle=bundle,
                                owner=owner)
    return finish_suite(bundle, procs, roofline, options, th, loader_of=loader_of), meta


def _samples(chunk_bundles: list[dict]) -> dict[str, pd.DataFrame]:
    """The sample rows of each event frame over the chunks: one row per distinct key (the
    devices, the metric names) in the first chunk that has it — a device whose work starts in a
    later chunk is kept — else the first row (``registry.SAMPLED_FRAMES``)."""
    out: dict[str, pd.DataFrame] = {}
    for c in chunk_bundles:
        for name, rows in (c.get("samples") or {}).items():
            if rows is None or not len(rows):
                continue
            key = SAMPLED_FRAMES.get(name)
            if name not in out:
                out[name] = rows
            elif key is not None:
                new = rows[~rows[key].isin(out[name][key])]
                if len(new):
                    out[name] = _stack(out[name], new)
    return out


def _stack(first: pd.DataFrame, more: pd.DataFrame) -> pd.DataFrame:
    """``first`` then ``more`` (same columns), categorical columns kept categorical."""
    from pandas.api.types import union_categoricals

    cols = {}
    for col in first.columns:
        a, b = first[col], more[col]
        if isinstance(a.dtype, pd.CategoricalDtype) and isinstance(b.dtype, pd.CategoricalDtype):
            cols[col] = union_categoricals([a.array, b.array])
        else:
            cols[col] = pd.concat([a, b], ignore_index=True)
    return pd.DataFrame(cols)[list(first.columns)]
