"""Shared result types for analyses."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@runtime_checkable
class Result(Protocol):
    """What every analysis result offers: ``available`` (False: the data could not support it,
    see :class:`Unavailable`) and its JSON section."""

    @property
    def available(self) -> bool: ...

    def to_json(self) -> dict: ...


@dataclass(frozen=True)
class Unavailable:
    """An analysis that the data cannot support: why, and what to capture instead (``hint``)."""

    reason: str
    hint: str = ""

    available = False  # class attribute: lets callers test ``result.available`` on any result

    def to_json(self) -> dict:
        return {"available": False, "reason": self.reason, "hint": self.hint}


def is_available(result: Result | None) -> bool:
    """The one "available" check: True for a result the data supported (its ``available`` is
    true — some results, e.g. transfers and Tensor Cores, carry it as a field), False for
    :class:`Unavailable`, ``None`` or anything that is not a result."""
    return bool(getattr(result, "available", False))
