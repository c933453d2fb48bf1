"""Shared result types for analyses."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Unavailable:
    """An analysis that the data cannot support: why, and what to capture instead (``hint``)."""

    reason: str
    hint: str = ""

    available = False  # class attribute: lets callers test ``result.available`` on any result

    def to_json(self) -> dict:
        return {"available": False, "reason": self.reason, "hint": self.hint}


def is_available(result) -> bool:
    """True for a real result, False for ``Unavailable`` or ``None``."""
    return result is not None and not isinstance(result, Unavailable)
