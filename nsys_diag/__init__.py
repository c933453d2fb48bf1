"""nsys-diag: diagnose why a GPU training job runs the way it does.

Public API (lazy, PEP 562: importing the package is cheap and imports no pandas, so
`nsys-diag --help` stays fast; docs/api.md):
    analyze(path, **options) -> Analysis
    compare(baseline, candidate, **options) -> Comparison
    load_trace(path) -> TraceBundle
"""
from __future__ import annotations

from nsys_diag._version import __version__

__all__ = ["Analysis", "Comparison", "__version__", "analyze", "compare", "load_trace"]

_API = ("analyze", "compare", "Analysis", "Comparison")


def __getattr__(name: str):  # PEP 562 lazy attribute
    if name == "load_trace":
        from nsys_diag.loaders import load_trace

        return load_trace
    if name in _API:
        from nsys_diag import api

        return getattr(api, name)
    raise AttributeError(name)
