"""The one place that turns numpy/pandas values into JSON-safe Python values (no NaN/Infinity).

Scalars: ``fnum``/``finite`` (floats), ``ns_to_ms``, ``ratio``; whole structures: ``jsonable``.
Strings (values and keys) leave without escape sequences, C0/C1 controls (but tab and newlines),
bidi overrides or zero-width characters (``json_string``: U+FFFD in their place).
"""
from __future__ import annotations

import math


def finite(value) -> float | None:
    """A finite float, or ``None`` for None/NaN/±inf/non-numbers — and for bools, which are
    flags, not numbers, when they turn up in a view."""
    return None if isinstance(value, bool) else fnum(value)


def fnum(value) -> float | None:
    """A finite Python float, or ``None`` for None/NaN/±inf."""
    if value is None:
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def ns_to_ms(ns) -> float | None:
    """Integer nanoseconds → float milliseconds (JSON ``*_ms``)."""
    x = fnum(ns)
    return None if x is None else x / 1e6


def ratio(num, den) -> float | None:
    """``num / den`` as a finite float, ``None`` when the denominator is 0 or unknown."""
    n, d = fnum(num), fnum(den)
    if n is None or d is None or d == 0:
        return None
    return n / d


def json_string(text: str) -> str:
    """``text`` with terminal escape sequences dropped and unsafe characters (C0/C1 controls but
    tab/newlines, bidi controls such as U+202E, zero-width characters, lone surrogates) as U+FFFD
    (``model.text.strip_unsafe``); printable ASCII is returned as it is (the common case)."""
    if text.isascii() and text.isprintable():
        return text
    from nsys_diag.model.text import strip_unsafe

    return strip_unsafe(text)


def jsonable(obj):
    """Recursively convert to JSON types: numpy scalars and arrays → Python, NaN/±inf → None,
    tuples → lists, dict keys → str, anything else → ``str(obj)``; strings through
    ``json_string``. The one converter every JSON output goes through (the outputs never hold
    NaN or Infinity, nor bidi or C1 control characters)."""
    if obj is None or isinstance(obj, bool):
        return obj
    if isinstance(obj, str):
        return json_string(obj)
    import numpy as np  # perf (bench): not imported before the loaders start

    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        x = float(obj)
        return x if math.isfinite(x) else None
    if isinstance(obj, dict):
        return {json_string(str(k)): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [jsonable(v) for v in obj.tolist()]
    return json_string(str(obj))
