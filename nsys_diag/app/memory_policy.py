"""The memory plan: how ``analyze`` reads one input — whole, its middle window, or streamed — and
the ``--max-memory`` refusal.

``plan_memory(path, options)`` decides once, from file facts: the input is sniffed once and its
memory estimated once (``loaders/memory_estimate.py``: size, first bytes, CSV commas; measured
factors documented there); everything after — the stream, the window, the refusal, the loader's
request — reads the plan. The rules:

* **stream** (``chunk_rows``): an nsys export without ``--window`` when ``--chunk-rows N`` asks
  for it, when ``--dask``/``--scheduler`` spreads its chunks, or (``--memory-mode stream``, the
  default) when the estimate plus ``BASE_MEMORY_BYTES`` exceeds ``--memory-budget`` less the
  ``--ncu`` CSV's estimate; the rows per chunk come from that room (``app/stream.py``).
* **middle** (``fraction``): ``--memory-mode middle`` and the estimate does not fit the room the
  budget leaves after ``BASE_MEMORY_BYTES`` and an ``--ncu`` CSV: read the middle share of the
  kernel and API rows that fits (``room / estimate``; ``loaders/read_window.py``).
* **whole** otherwise (it fits, no budget, not an nsys export, ``--window`` chose the span, or not
  even the base fits the budget — ``--max-memory`` may then refuse).

A streamed export with nothing to stream (no GPU work, no NVTX) falls back to the plan's
in-memory reading (``in_memory``). ``check_memory`` refuses (``ResourceLimitError``, exit 3) when
what will be read needs more than ``--max-memory``.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from nsys_diag.loaders import memory_estimate
from nsys_diag.loaders.memory_estimate import BASE_MEMORY_BYTES, format_bytes
from nsys_diag.loaders.sniff import Format, sniff_format
from nsys_diag.model.errors import InputError, ResourceLimitError
from nsys_diag.model.options import AnalyzeOptions

WHOLE, MIDDLE, STREAM = "whole", "middle", "stream"
"""The three ways of reading an input (``MemoryPlan.kind``)."""

Estimate = tuple[int, str]
"""(bytes, how it was estimated) — ``loaders/memory_estimate.estimate_memory``."""


@dataclass(frozen=True)
class MemoryPlan:
    """How one input is read. ``kind``: ``whole`` | ``middle`` | ``stream``; ``fraction``: the
    middle share of the rows read (``middle``, and the fallback of a stream that finds nothing to
    stream); ``chunk_rows``: kernel + API rows per chunk (``stream``); ``format``: the sniffed
    format (None: the loader says why it cannot read the file); ``estimate`` /
    ``ncu_estimate``: the input's and the ``--ncu`` CSV's estimated analysis memory."""

    kind: str
    fraction: float | None = None
    chunk_rows: int | None = None
    format: Format | None = None
    estimate: Estimate | None = None
    ncu_estimate: Estimate | None = None

    def in_memory(self) -> MemoryPlan:
        """The plan without streaming: the middle window when one fits, else the whole input."""
        return replace(self, kind=MIDDLE if self.fraction is not None else WHOLE, chunk_rows=None)


def plan_memory(path: str, options: AnalyzeOptions) -> MemoryPlan:
    """The memory plan of analysing ``path`` under ``options`` (module docstring: the rules)."""
    fmt = _sniff(path)
    est = memory_estimate.estimate_memory(path)
    ncu = memory_estimate.estimate_memory(options.ncu_path) if options.ncu_path else None
    plan = MemoryPlan(WHOLE, format=fmt, estimate=est, ncu_estimate=ncu)
    if fmt is not Format.NSYS_SQLITE or options.window_ns is not None:
        return plan
    plan = replace(plan, fraction=_middle_fraction(est, ncu, options)).in_memory()
    rows = _stream_rows(path, options, est, ncu)
    return replace(plan, kind=STREAM, chunk_rows=rows) if rows is not None else plan


def _sniff(path: str) -> Format | None:
    """The input's format, or None when it cannot be read (the loader raises its own error)."""
    try:
        return sniff_format(path)
    except InputError:
        return None


def _middle_fraction(est: Estimate | None, ncu: Estimate | None,
                     options: AnalyzeOptions) -> float | None:
    """``--memory-mode middle``: the share (0–1) of an nsys export's kernel and API rows whose
    estimated analysis fits the budget's room; None: read it whole."""
    budget = options.memory_budget_bytes
    if options.memory_mode != MIDDLE or options.chunk_rows or not budget:
        return None
    if est is None or est[0] <= 0:
        return None
    room = budget - BASE_MEMORY_BYTES - (ncu[0] if ncu else 0)
    if room >= est[0] or room <= 0:
        return None  # it fits, or not even the base fits: read everything
    return room / est[0]


def _stream_rows(path: str, options: AnalyzeOptions, est: Estimate | None,
                 ncu: Estimate | None = None) -> int | None:
    """Rows per chunk when the export is streamed (``--chunk-rows``, ``--dask``, or over the
    budget with ``--memory-mode stream``), else None. An ``--ncu`` CSV (``ncu``: its estimate)
    is held whole beside the chunks: the budget left for the export is what it leaves."""
    from nsys_diag.app.stream import budget_chunk_rows, stream_chunk_rows

    budget = options.memory_budget_bytes
    if budget and ncu is not None:
        budget = max(1, budget - ncu[0])
    by_budget = None
    if not options.chunk_rows and options.memory_mode == STREAM and budget and est is not None \
            and est[0] + BASE_MEMORY_BYTES > budget:
        by_budget = budget_chunk_rows(path, est[0], budget)
    return stream_chunk_rows(path, options, by_budget)


def check_memory(path: str, plan: MemoryPlan, limit: int | None,
                 share: float | None = None) -> None:
    """Refuse (``ResourceLimitError``, exit 3) when the estimate of what will be read exceeds
    ``limit`` bytes. ``share``: the part of the export's rows one read holds (a stream's chunk;
    default: the plan's middle ``fraction``, or all of it)."""
    if limit is None:
        return
    parts = [e for e in (plan.estimate, plan.ncu_estimate) if e is not None]
    if not parts:
        return  # the loader reports unreadable paths with its own message
    share = plan.fraction if share is None and plan.kind != STREAM else share
    if share is not None:
        parts[0] = (int(parts[0][0] * share), f"{share:.0%} of {parts[0][1]}")
    need = BASE_MEMORY_BYTES + sum(n for n, _ in parts)
    if need > limit:
        how = " + ".join(["base " + format_bytes(BASE_MEMORY_BYTES)] + [h for _, h in parts])
        raise ResourceLimitError(
            path, f"the analysis needs about {format_bytes(need)} of memory ({how}), more than "
            f"--max-memory {format_bytes(limit)}",
            "raise --max-memory, analyse a window that fits with --memory-budget SIZE (or "
            "--window), or export a shorter capture (nsys export --filter-time / capture fewer "
            "steps with --capture-range)")
