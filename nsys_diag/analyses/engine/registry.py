"""What a streaming pass runs per span and how it is merged back.

Per process: every declared analysis (``engine.declaration.declarations()``, filled by the
analysis modules themselves): ``span_states`` runs each declaration's partial on a span,
``finish_declared`` merges and finishes them in dependency order. File level:
``BUNDLE_PARTIALS``, per chunk bundle ``fn(bundle, lo, hi, *, windows)`` (load warnings, sample
rows, DataLoader workers over each process's analysed window); ``merge_file_level`` merges one
of them.
"""
from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from nsys_diag.analyses import loader_spans
from nsys_diag.analyses.engine.declaration import FinishContext, declarations
from nsys_diag.model.bundle import TraceBundle

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
    from nsys_diag.analyses.engine.cuts import owned
    from nsys_diag.model.contracts import launch_counts

    out = {}
    for frame, name in UNMATCHED_FRAMES:  # memcpys: migrations are not counted (launch_counts)
        f = getattr(bundle, frame)
        out[name] = launch_counts(f, owned(f, lo, hi))
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


# ---------------------------------------------------------------- per-process declarations
def span_states(span, *, glob, th, options) -> dict[str, Any]:
    """The state of every declaration that wants the span (``Declaration.partial``), by name."""
    return {d.name: d.partial(span, th=th, options=options, glob=glob)
            for d in declarations() if d.partial is not None and d.wants(glob, span.lo_ns,
                                                                         span.hi_ns)}


def finish_declared(parts: list[dict], *, glob, bundle: TraceBundle, options, th,
                    roofline=None) -> dict[str, Any]:
    """Every declaration's result for one process from its spans' states (``parts``: one dict
    of states per span, in time order): merge, then finish, each after what it reads."""
    results: dict[str, Any] = {}
    for d in declarations():
        states = [p[d.name] for p in parts if d.name in p]
        ctx = FinishContext(glob=glob, bundle=bundle, options=options, th=th, roofline=roofline,
                            results=results)
        finish = d.finish
        assert finish is not None  # declarations() holds the streamed ones only
        results[d.name] = finish(d.merge(states), ctx)
    return results


# ---------------------------------------------------------------------- the DataLoader workers
def _loader_part(bundle, lo, hi, *, windows, **_):
    """One ``LoaderPart`` per distinct analysed window (the processes' windows)."""
    frames = {n: getattr(bundle, n) for n in ("kernels", "memcpy", "memset", "nvtx", "osrt",
                                              "cpu_samples")}
    return {w: loader_spans.partial_loader(frames, lo, hi, window=w, threads=bundle.threads)
            for w in windows}


def _loader(parts, *, window, th, bundle, owner=None, **_):
    from nsys_diag.analyses.loader_workers import worker_parents

    got = [p[window] for p in parts if p is not None and window in p]
    return loader_spans.merge_loader(got, window=window, processes=bundle.processes,
                                     threads=bundle.threads, th=th, owner=owner,
                                     parents=worker_parents(bundle))


BUNDLE_PARTIALS["loader"] = _loader_part
FILE_MERGES["loader"] = _loader
