"""Human formatting of view-model numbers. Pure functions, no I/O, no locale.

Every function accepts ``None`` (unknown) and returns ``"—"`` for it, so templates and the
Markdown renderer never branch on missing values. Units follow docs/JSON.md: ``*_ns`` integer
nanoseconds, ``*_ms`` float milliseconds, shares/utilizations are fractions 0..1, bytes are bytes,
rates are per second. Decimal (SI) prefixes throughout: 1 GB = 1e9 bytes, 1 GB/s = 1e9 B/s, which
is how NVIDIA quotes link and memory bandwidth.
"""
from __future__ import annotations

from nsys_diag.model.jsonsafe import finite

import math
import re

MISSING = "—"

_SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def fmt_significant(x: float, digits: int = 3) -> str:
    """``x`` with about ``digits`` significant digits, no exponent, no trailing zeros noise."""
    ax = abs(x)
    if ax == 0:
        return "0"
    if ax >= 10 ** (digits - 1):
        return f"{x:,.0f}"
    decimals = digits - 1 - int(math.floor(math.log10(ax)))
    text = f"{x:.{max(decimals, 0)}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def fmt_number(value, digits: int = 3) -> str:
    """A plain number with ~3 significant digits and thousands separators: 1,234 · 12.3 · 0.0123."""
    x = finite(value)
    return MISSING if x is None else fmt_significant(x, digits)


def fmt_count(value) -> str:
    """An integer count with thousands separators: 1,234,567."""
    x = finite(value)
    return MISSING if x is None else f"{int(round(x)):,}"


def fmt_ns(value) -> str:
    """A duration given in integer nanoseconds, in the unit that reads best: 850 ns · 12.5 µs ·
    3.2 ms · 1.25 s."""
    x = finite(value)
    if x is None:
        return MISSING
    ax = abs(x)
    if ax < 1e3:
        return f"{fmt_significant(x)} ns"
    if ax < 1e6:
        return f"{fmt_significant(x / 1e3)} µs"
    if ax < 1e9:
        return f"{fmt_significant(x / 1e6)} ms"
    return f"{fmt_significant(x / 1e9)} s"


def fmt_ms(value) -> str:
    """A duration given in float milliseconds: 420 ms · 12.5 ms · 0.35 ms · 1.25 s."""
    x = finite(value)
    if x is None:
        return MISSING
    if abs(x) >= 1000:
        return f"{fmt_significant(x / 1000)} s"
    if 0 < abs(x) < 0.01:
        return fmt_ns(x * 1e6)
    return f"{fmt_significant(x)} ms"


def fmt_bytes(value) -> str:
    """A byte count with SI prefixes: 512 B · 1.5 kB · 2.04 GB."""
    x = finite(value)
    if x is None:
        return MISSING
    for scale, prefix in _SI:
        if abs(x) >= scale:
            return f"{fmt_significant(x / scale)} {prefix}B"
    return f"{fmt_significant(x)} B"


def fmt_device_memory(value) -> str:
    """A GPU's memory size in binary units, as vendors size it ("H100 80GB" has 79.6 GiB):
    ``fmt_device_memory(85_520_809_984)`` → '79.6 GiB' (SI would read '85.5 GB' beside the name)."""
    x = finite(value)
    if x is None:
        return MISSING
    for power, prefix in ((40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki")):
        if abs(x) >= 2 ** power:
            return f"{fmt_significant(x / 2 ** power)} {prefix}B"
    return f"{fmt_significant(x)} B"


def fmt_rate(value, unit: str = "B") -> str:
    """A per-second rate with SI prefixes: ``fmt_rate(2.0e12)`` → '2 TB/s';
    ``fmt_rate(3.1e14, 'FLOP')`` → '310 TFLOP/s'; word units keep a space after the prefix:
    ``fmt_rate(5330, 'samples')`` → '5.33 k samples/s'; ``fmt_rate(152, 'samples')`` → '152 samples/s'."""
    x = finite(value)
    if x is None:
        return MISSING
    sep = " " if len(unit) > 4 else ""
    for scale, prefix in _SI:
        if abs(x) >= scale:
            return f"{fmt_significant(x / scale)} {prefix}{sep}{unit}/s"
    return f"{fmt_significant(x)} {unit}/s".replace(" /s", "/s")


def fmt_pct(value, decimals: int = 1) -> str:
    """A fraction 0..1 as a percentage with fixed decimals: 0.525 → '52.5%'."""
    x = finite(value)
    if x is None:
        return MISSING
    return f"{x * 100:.{decimals}f}%"


def fmt_signed(x: float, decimals: int = 1) -> str:
    """``x`` with an explicit sign and fixed ``decimals``; a value that rounds to zero reads
    "+0.0", never "-0.0" (a change too small to show has no direction): -0.0004 → '+0.0'."""
    return f"{(x if round(x, decimals) != 0 else 0.0):+.{decimals}f}"


def fmt_share(value) -> str:
    """A fraction 0..1 as a compact percentage for tables and labels: 0.525 → '52%',
    0.004 → '0.4%', 0.00001 → '<0.1%', 0 → '0%'."""
    x = finite(value)
    if x is None:
        return MISSING
    p = x * 100
    if p == 0:
        return "0%"
    if 0 < abs(p) < 0.1:
        return "<0.1%"
    if abs(p) < 10:
        return f"{p:.1f}%"
    return f"{p:.0f}%"


def fmt_ratio(value) -> str:
    """A multiplier: 2.5 → '2.5×'."""
    x = finite(value)
    return MISSING if x is None else f"{fmt_significant(x, 3)}×"


_SHARE_KEY = re.compile(r"(share|utilization|fraction|_frac|ratio_of|active|_util)", re.I)


def fmt_value(value, metric: str = "") -> str:
    """Format a value whose unit is known only from its metric name (verdict evidence, thresholds):
    ``*_ns`` → duration, ``*_ms`` and ``*_ms_per_*`` → duration, share/utilization → percent,
    ``*bytes`` → bytes,
    ``*_per_s`` → rate; strings pass through; other numbers → 3 significant digits."""
    if value is None:
        return MISSING
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    name = (metric or "").lower()
    if name.endswith("_ns"):
        return fmt_ns(value)
    if name.endswith("_ms") or "_ms_per_" in name:  # replay.saves_ms_per_step: ms per step
        return fmt_ms(value)
    if name.endswith("bytes_per_s"):
        return fmt_rate(value)
    if name.endswith("_per_s"):
        return fmt_rate(value, "")
    if "bytes" in name:
        return fmt_bytes(value)
    if _SHARE_KEY.search(name):
        x = finite(value)
        if x is not None and -1.0 <= x <= 1.0:
            return fmt_pct(x)
    return fmt_number(value)


FILTERS = {
    "fmt_number": fmt_number,
    "fmt_count": fmt_count,
    "fmt_ns": fmt_ns,
    "fmt_ms": fmt_ms,
    "fmt_bytes": fmt_bytes,
    "fmt_rate": fmt_rate,
    "fmt_pct": fmt_pct,
    "fmt_share": fmt_share,
    "fmt_ratio": fmt_ratio,
    "fmt_value": fmt_value,
}
"""Registered as Jinja filters by ``report.html`` (names as in templates)."""


def scaling_line(rows: list | None) -> str | None:
    """The weak-scaling projection in one line ("2 GPUs: 97% efficiency (203 ms/step) · …"),
    None without a projection."""
    rows = [r for r in (rows or []) if isinstance(r, dict) and (r.get("gpus") or 0) > 1]
    if not rows:
        return None
    parts = [f"{r['gpus']} GPUs {fmt_pct(r.get('efficiency'))} efficiency ({fmt_ms(r.get('step_ms'))}/step)"
             for r in rows]
    if rows[0].get("basis") == "replay":
        return ("projected (data-parallel replay, exposed communication as measured): "
                + " · ".join(parts))
    return "projected (weak scaling, ring all-reduce): " + " · ".join(parts)
