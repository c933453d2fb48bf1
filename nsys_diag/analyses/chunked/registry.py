"""What a streaming pass runs per chunk and how it is merged back.

``PARTIALS``: per process and chunk, ``fn(ci, *, th, options)`` → a small partial.
``MERGES``: per process, in this order, ``fn(parts, *, glob, bundle, options, th, roofline,
merged)`` → the in-memory result (``parts``: one dict of partials per chunk; ``merged``: the
results merged so far). ``BUNDLE_PARTIALS``: per chunk bundle, ``fn(bundle, lo, hi, *,
headline_window)`` (file-level: load warnings, sample rows, DataLoader workers over the headline
process's window); ``merge_file_level`` merges one of them.
"""
from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from nsys_diag.model.bundle import TraceBundle

PARTIALS: dict[str, Callable[..., Any]] = {}
MERGES: dict[str, Callable[..., Any]] = {}
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


def merge_file_level(chunk_bundles: list[dict], name: str, **kw):
    """``FILE_MERGES[name]`` over the chunks' ``BUNDLE_PARTIALS[name]`` (None when absent)."""
    merge = FILE_MERGES.get(name)
    if merge is None:
        return None
    return merge([c.get(name) for c in chunk_bundles], **kw)


# ------------------------------------------------------------------ the analyses, in merge order
def _register() -> None:
    """Fill ``PARTIALS``/``MERGES``/``BUNDLE_PARTIALS``/``FILE_MERGES`` (imports here: the
    merge modules import this package's context, not the registry)."""
    from nsys_diag.analyses.chunked import (gaps_merge, loader_merge, phases_merge,
                                            quality_merge, timeline_merge)
    from nsys_diag.analyses.base import Unavailable
    from nsys_diag.model.vocabulary import HINT_CAPTURE_CUDA

    PARTIALS["phases"] = lambda ci, **_: phases_merge.partial_phases(ci)
    PARTIALS["phases_base"] = lambda ci, **_: ci.phases if ci.index == 0 else None
    PARTIALS["quality"] = lambda ci, **_: quality_merge.partial_quality(ci)
    PARTIALS["timeline"] = lambda ci, **_: timeline_merge.partial_timeline(ci)

    def phases(parts, **_):
        return phases_merge.merge_phases([p["phases"] for p in parts],
                                         base=parts[0]["phases_base"])

    def steps(parts, *, glob, merged, **_):
        return phases_merge.explain_outliers(glob.steps, merged["phases"])

    def quality(parts, *, glob, merged, bundle, **_):
        return quality_merge.merge_quality(
            [p["quality"] for p in parts], steps=merged["steps"], phases=merged["phases"],
            window=glob.window,
            profiler_overhead_rows=int(bundle.meta.tables.get("PROFILER_OVERHEAD", 0)))

    def timeline(parts, *, glob, merged, **_):
        return timeline_merge.merge_timeline([p["timeline"] for p in parts],
                                             steps=merged["steps"], phases=merged["phases"],
                                             window=glob.window)

    PARTIALS["utilization"] = lambda ci, **_: gaps_merge.partial_utilization(ci)

    def gaps_part(ci, *, th, glob, **_):
        if not ci.devices or ci.window.duration_ns <= 0:
            return None
        return gaps_merge.partial_gaps(ci, th=th, first_kernel_ns=glob.first_kernel_ns,
                                       io_threads=glob.io_threads)

    PARTIALS["gaps"] = gaps_part

    def utilization(parts, *, glob, bundle, **_):
        return gaps_merge.merge_utilization([p["utilization"] for p in parts],
                                            window=glob.window, gpus=bundle.gpus)

    def gaps(parts, *, glob, th, **_):
        if not glob.devices or glob.window.duration_ns <= 0:
            return Unavailable("no GPU activity to find gaps in", HINT_CAPTURE_CUDA)
        return gaps_merge.merge_gaps([p["gaps"] for p in parts], window=glob.window,
                                     devices=glob.devices, th=th,
                                     first_kernel_ns=glob.first_kernel_ns)

    MERGES.update(phases=phases, steps=steps, quality=quality, timeline=timeline,
                  utilization=utilization, gaps=gaps)
    def loader_part(bundle, lo, hi, *, headline_window, **_):
        frames = {n: getattr(bundle, n) for n in ("kernels", "memcpy", "memset", "nvtx", "osrt",
                                                  "cpu_samples")}
        return loader_merge.partial_loader(frames, lo, hi, window=headline_window,
                                           threads=bundle.threads)

    BUNDLE_PARTIALS["loader"] = loader_part

    def loader(parts, *, window, th, bundle, **_):
        got = [p for p in parts if p is not None]
        return loader_merge.merge_loader(got, window=window, processes=bundle.processes,
                                         threads=bundle.threads, th=th)

    FILE_MERGES["loader"] = loader


_register()
