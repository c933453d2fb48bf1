"""Small helpers that turn numpy/pandas scalars into JSON-safe Python values (no NaN/Infinity)."""
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


def inum(value) -> int | None:
    """A Python int (rounded), or ``None`` for None/NaN/±inf."""
    x = fnum(value)
    return None if x is None else int(round(x))


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
