"""What a streaming pass runs per chunk and how it is merged back.

``PARTIALS``: per process and chunk, ``fn(ci, *, th, options, glob)`` → a small partial
(``glob``: the process's ``globals.ProcessGlobals``).
``MERGES``: per process, in this order, ``fn(parts, *, glob, bundle, options, th, roofline,
merged)`` → the in-memory result (``parts``: one dict of partials per chunk; ``merged``: the
results merged so far). ``BUNDLE_PARTIALS``: per chunk bundle, ``fn(bundle, lo, hi, *,
windows)`` (file-level: load warnings, sample rows, DataLoader workers over each process's
analysed window); ``merge_file_level`` merges one of them.
"""
from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from nsys_diag.analyses.base import Unavailable, is_available
from nsys_diag.analyses.chunked import (comm_merge, gaps_merge, kernels_merge, loader_merge,
                                        metrics_merge, phases_merge, quality_merge, tensor_merge,
                                        timeline_merge, transfers_merge)
from nsys_diag.model.bundle import TraceBundle
from nsys_diag.model.vocabulary import HINT_CAPTURE_CUDA

BUNDLE_PARTIALS: dict[str, Callable[..., Any]] = {}
FILE_MERGES: dict[str, Callable[..., Any]] = {}

SAMPLED_FRAMES = {"kernels": "device_id", "memcpy": "device_id", "memset": "device_id",
                  "gpu_metrics": "metric", "osrt": None, "cpu_samples": None, "sync": None,
                  "api": None}
"""Event frames a summary bundle holds sample rows of: one per distinct value of the column
(the devices seen, the metric names sampled), else the first row."""


def _samples(bundle: TraceBundle, lo: int, hi: int, **_) -> dict[str, pd.DataFrame]:
    out = {}
    for name, key in SAMPLED_FRAMES.items():
        f = getattr(bundle, name, None)
        if f is None or not len(f):
            continue
        out[name] = (f.drop_duplicates(key) if key else f.head(1)).reset_index(drop=True)
    return out


BUNDLE_PARTIALS["samples"] = _samples
BUNDLE_PARTIALS["warnings"] = lambda bundle, lo, hi, **_: list(bundle.warnings)
BUNDLE_PARTIALS["processes"] = lambda bundle, lo, hi, **_: bundle.processes
BUNDLE_PARTIALS["gpus"] = lambda bundle, lo, hi, **_: bundle.gpus

UNMATCHED_FRAMES = (("kernels", "kernels"), ("memcpy", "memcpys"), ("memset", "memsets"),
                    ("sync", "syncs"))
"""(frame, name in the ``unmatched_launches`` warning), in the loader's order."""


def _unmatched(bundle: TraceBundle, lo: int, hi: int, **_) -> dict[str, tuple[int, int]]:
    """(rows without their launching call, rows) of each GPU-op frame, over the rows the chunk
    owns (start in ``[lo, hi)``): summed over chunks they give the whole export's counts."""
    from nsys_diag.analyses.chunked.cuts import owned
    from nsys_diag.model.contracts import MISSING

    out = {}
    for frame, name in UNMATCHED_FRAMES:
        f = getattr(bundle, frame)
        mine = owned(f, lo, hi)
        miss = mine & (f["launch_start_ns"].to_numpy() == MISSING)
        out[name] = (int(miss.sum()), int(mine.sum()))
    return out


BUNDLE_PARTIALS["unmatched"] = _unmatched
BUNDLE_PARTIALS["capture_end"] = lambda bundle, lo, hi, **_: int(bundle.meta.capture_end_ns)


def capture_end_ns(skeleton: TraceBundle, chunk_bundles: list[dict]) -> int:
    """The capture's end as the in-memory load finds it: the skeleton's, or — when the export's
    declared duration is missing or not trusted — the last event end any chunk saw."""
    ends = [int(c["capture_end"]) for c in chunk_bundles if c.get("capture_end") is not None]
    return max([int(skeleton.meta.capture_end_ns), *ends])


def merge_file_level(chunk_bundles: list[dict], name: str, **kw):
    """``FILE_MERGES[name]`` over the chunks' ``BUNDLE_PARTIALS[name]`` (None when absent)."""
    merge = FILE_MERGES.get(name)
    if merge is None:
        return None
    return merge([c.get(name) for c in chunk_bundles], **kw)


# ------------------------------------------------------------------------- per-process partials
def _gaps_part(ci, *, th, glob, **_):
    if not ci.devices or ci.window.duration_ns <= 0:
        return None
    return gaps_merge.partial_gaps(ci, th=th, first_kernel_ns=glob.first_kernel_ns,
                                   io_threads=glob.io_threads)


PARTIALS: dict[str, Callable[..., Any]] = {
    "kernel_table": lambda ci, **_: kernels_merge.partial_kernels(ci),
    "transfers": lambda ci, **_: transfers_merge.partial_transfers(ci),
    "communication": lambda ci, **_: comm_merge.partial_communication(ci),
    "gpu_metrics": lambda ci, **_: metrics_merge.partial_gpu_metrics(ci),
    "tensor_cores": lambda ci, *, glob, **_: tensor_merge.partial_tensor_cores(
        ci, sampling=glob.tensor_sampling),
    "phases": lambda ci, **_: phases_merge.partial_phases(ci),
    "phases_base": lambda ci, **_: ci.phases if ci.index == 0 else None,
    "quality": lambda ci, **_: quality_merge.partial_quality(ci),
    "timeline": lambda ci, **_: timeline_merge.partial_timeline(ci),
    "utilization": lambda ci, **_: gaps_merge.partial_utilization(ci),
    "gaps": _gaps_part,
}


# --------------------------------------------------------------------------- per-process merges
def _window_ns(glob) -> tuple[int, int]:
    return glob.window.start_ns, glob.window.end_ns


def _kernel_table(parts, *, th, options, **_):
    return kernels_merge.merge_kernels([p["kernel_table"] for p in parts], th=th,
                                       max_rows=options.max_rows)


def _phases(parts, **_):
    return phases_merge.merge_phases([p["phases"] for p in parts], base=parts[0]["phases_base"])


def _steps(parts, *, glob, merged, **_):
    return phases_merge.explain_outliers(glob.steps, merged["phases"])


def _quality(parts, *, glob, merged, bundle, **_):
    return quality_merge.merge_quality(
        [p["quality"] for p in parts], steps=merged["steps"], phases=merged["phases"],
        window=glob.window,
        profiler_overhead_rows=int(bundle.meta.tables.get("PROFILER_OVERHEAD", 0)))


def _timeline(parts, *, glob, merged, **_):
    return timeline_merge.merge_timeline([p["timeline"] for p in parts], steps=merged["steps"],
                                         phases=merged["phases"], window=glob.window)


def _utilization(parts, *, glob, bundle, **_):
    return gaps_merge.merge_utilization([p["utilization"] for p in parts], window=glob.window,
                                        gpus=bundle.gpus)


def _gaps(parts, *, glob, th, **_):
    if not glob.devices or glob.window.duration_ns <= 0:
        return Unavailable("no GPU activity to find gaps in", HINT_CAPTURE_CUDA)
    return gaps_merge.merge_gaps([p["gaps"] for p in parts], window=glob.window,
                                 devices=glob.devices, th=th, first_kernel_ns=glob.first_kernel_ns)


def _transfers(parts, *, bundle, **_):
    return transfers_merge.merge_transfers([p["transfers"] for p in parts], gpus=bundle.gpus)


def _communication(parts, *, glob, merged, **_):
    st = merged["steps"]
    total = st.total_analysed_ns if is_available(st) else glob.window.duration_ns
    return comm_merge.merge_communication([p["communication"] for p in parts],
                                          window=_window_ns(glob), step_time_ns_total=total)


def _gpu_metrics(parts, *, glob, **_):
    return metrics_merge.merge_gpu_metrics([p["gpu_metrics"] for p in parts],
                                           window=_window_ns(glob))


def _roofline(parts, *, roofline, merged, **_):
    if not is_available(roofline):
        return roofline
    from nsys_diag.analyses.roofline.ncu_join import join_roofline_to_timeline, timeline_from_name_table

    joined = join_roofline_to_timeline(
        roofline, None, timeline=timeline_from_name_table(merged["kernel_table"].table))
    return joined if is_available(joined) else roofline


def _tensor_cores(parts, *, glob, merged, th, **_):
    from nsys_diag.analyses.process import tensor_counters

    return tensor_merge.merge_tensor_cores(
        [p["tensor_cores"] for p in parts], table=merged["kernel_table"].table, th=th,
        sampling=glob.tensor_sampling, counters=tensor_counters(merged["roofline"]))


MERGES: dict[str, Callable[..., Any]] = {
    # in this order: later merges read earlier results (``merged``)
    "kernel_table": _kernel_table, "phases": _phases, "steps": _steps, "quality": _quality,
    "timeline": _timeline, "utilization": _utilization, "gaps": _gaps, "transfers": _transfers,
    "communication": _communication, "gpu_metrics": _gpu_metrics, "roofline": _roofline,
    "tensor_cores": _tensor_cores,
}


# ---------------------------------------------------------------------- the DataLoader workers
def _loader_part(bundle, lo, hi, *, windows, **_):
    """One ``LoaderPart`` per distinct analysed window (the processes' windows)."""
    frames = {n: getattr(bundle, n) for n in ("kernels", "memcpy", "memset", "nvtx", "osrt",
                                              "cpu_samples")}
    return {w: loader_merge.partial_loader(frames, lo, hi, window=w, threads=bundle.threads)
            for w in windows}


def _loader(parts, *, window, th, bundle, owner=None, **_):
    from nsys_diag.analyses.loader_workers import worker_parents

    got = [p[window] for p in parts if p is not None and window in p]
    return loader_merge.merge_loader(got, window=window, processes=bundle.processes,
                                     threads=bundle.threads, th=th, owner=owner,
                                     parents=worker_parents(bundle))


BUNDLE_PARTIALS["loader"] = _loader_part
FILE_MERGES["loader"] = _loader
