"""nsys-diag: diagnose why a GPU training job runs the way it does.

Public API (lazy; importing the package is cheap so `nsys-diag --help` stays fast):
    load_trace(path) -> TraceBundle
"""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "load_trace"]


def __getattr__(name: str):  # PEP 562 lazy attribute
    if name == "load_trace":
        from nsys_diag.loaders import load_trace

        return load_trace
    raise AttributeError(name)
