"""What a streaming pass runs per chunk and how it is merged back.

``PARTIALS``: per process and chunk, ``fn(ci, *, th, options)`` → a small partial.
``MERGES``: per process, in this order, ``fn(parts, *, glob, bundle, options, th, roofline,
merged)`` → the in-memory result (``parts``: one dict of partials per chunk; ``merged``: the
results merged so far). ``BUNDLE_PARTIALS``: per chunk bundle, ``fn(bundle, lo, hi)`` (file-level:
load warnings, sample rows, DataLoader workers); ``merge_file_level`` merges one of them.
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


def _samples(bundle: TraceBundle, lo: int, hi: int) -> dict[str, pd.DataFrame]:
    out = {}
    for name, key in SAMPLED_FRAMES.items():
        f = getattr(bundle, name, None)
        if f is None or not len(f):
            continue
        out[name] = (f.drop_duplicates(key) if key else f.head(1)).reset_index(drop=True)
    return out


BUNDLE_PARTIALS["samples"] = _samples
BUNDLE_PARTIALS["warnings"] = lambda bundle, lo, hi: list(bundle.warnings)


def merge_file_level(chunk_bundles: list[dict], name: str, **kw):
    """``FILE_MERGES[name]`` over the chunks' ``BUNDLE_PARTIALS[name]`` (None when absent)."""
    merge = FILE_MERGES.get(name)
    if merge is None:
        return None
    return merge([c.get(name) for c in chunk_bundles], **kw)
