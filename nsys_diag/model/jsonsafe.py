"""The one place that turns numpy/pandas values into JSON-safe Python values (no NaN/Infinity).

Scalars: ``fnum``/``finite`` (floats), ``ns_to_ms``, ``ratio``; whole structures: ``jsonable``;
JSON text: ``escape_invisible`` (every JSON output goes through it, so that C1 controls, bidi
controls and other invisible characters from a trace appear as ``\\uXXXX`` escapes, never raw,
while the decoded data stays exactly what the trace holds).
"""
from __future__ import annotations

import math
import re

_INVISIBLE = re.compile("[\x7f-\x9f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f"
                        "\ufeff\ufff9-\ufffb]")
"""DEL and C1 controls, soft hyphen, bidi marks/embeddings/overrides/isolates, zero-width and
line/paragraph separators, BOM, interlinear annotation: invisible or reordering in a viewer. (C0
controls are escaped by ``json.dumps`` itself.)"""


def escape_invisible(json_text: str) -> str:
    """JSON text with every ``_INVISIBLE`` character written as a ``\\uXXXX`` escape. Such
    characters only occur inside JSON strings, where the escape means the same character, so
    ``json.loads`` gives back the same data."""
    return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)


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


def jsonable(obj):
    """Recursively convert to JSON types: numpy scalars and arrays → Python, NaN/±inf → None,
    tuples → lists, dict keys → str, anything else → ``str(obj)``. The one converter every JSON
    output goes through (the outputs never hold NaN or Infinity)."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    import numpy as np  # perf (bench): not imported before the loaders start

    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        x = float(obj)
        return x if math.isfinite(x) else None
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [jsonable(v) for v in obj.tolist()]
    return str(obj)
