"""The user's selection options checked against what the trace holds: usage errors, never silent
fallbacks.

``--device N``, ``--step-range NAME``, ``--steps FIRST:LAST`` and ``--window START:END`` each
name something in the trace. When it is not there the analysis would quietly fall back to
another window (the whole capture, the detected steps …) and answer a question nobody asked, so
each raises ``UsageError`` (exit 2) whose message lists what *is* available:

* ``--device N`` — the devices that ran GPU work;
* ``--step-range NAME`` — no NVTX range of the trace matches it (exact text, else a
  case-insensitive full regular-expression match, as step detection reads it): the most frequent
  range names (at most ``TOP_RANGE_NAMES``) with their counts;
* ``--steps FIRST:LAST`` — an index past the detected steps (or no step detected at all):
  "the trace has steps 0–9";
* ``--window START:END`` — no overlap with the capture: the capture span in seconds on the
  session timeline (and the span of its events).

Checks only read the frames (vectorised over categories / min-max); times are integer ns.
"""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd

from nsys_diag.model.bundle import TraceBundle
from nsys_diag.analyses.steps.detection import WHOLE_WINDOW
from nsys_diag.model.errors import UsageError, printable_line
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.vocabulary import HINT_ADD_NVTX

TOP_RANGE_NAMES = 10
"""How many of the most frequent NVTX range names a ``--step-range`` error lists."""
_NUMBER_RE = re.compile(r"\d+")
EVENT_FRAMES = ("kernels", "memcpy", "memset", "sync", "api", "nvtx")
"""Frames whose ``start_ns``/``end_ns`` make up the span of a trace's events."""


def usage_error(message: str) -> UsageError:
    """The ``UsageError`` (exit 2) of a selection option that does not fit the trace, its message
    made one printable line."""
    return UsageError(printable_line(message))


# -------------------------------------------------------------------------------------- device
def devices_with_work(bundle: TraceBundle) -> list[int]:
    """Device ids that ran a kernel, copy or memset (sorted)."""
    return sorted({int(d) for f in (bundle.kernels, bundle.memcpy, bundle.memset)
                   for d in pd.unique(f["device_id"])})


def select_device(bundle: TraceBundle, device: int | None) -> TraceBundle:
    """``bundle`` restricted to ``device`` (``--device``); a device without GPU work while others
    have some is a ``UsageError`` listing the devices with activity."""
    if device is None:
        return bundle
    present = devices_with_work(bundle)
    if present and device not in present:
        raise usage_error(f"--device {device}: no GPU activity on that device "
                    f"(devices with activity: {', '.join(map(str, present))})")
    return device_rows(bundle, device)


def device_rows(bundle: TraceBundle, device: int) -> TraceBundle:
    """``bundle`` with the GPU rows of ``device`` only (``select_device`` without its check: a
    streamed export's chunks, whose check is made on the whole export)."""
    frames = {}
    for name in ("kernels", "memcpy", "memset", "sync", "gpu_metrics", "gpu_memory", "gpus"):
        f = getattr(bundle, name)
        frames[name] = f.loc[f["device_id"].to_numpy() == device].reset_index(drop=True)
    return dataclasses.replace(bundle, **frames)


# ---------------------------------------------------------------------------------- step range
def step_range_matches(nvtx: pd.DataFrame, name: str) -> bool:
    """Whether any NVTX range text equals ``name`` or fully matches it as a case-insensitive
    regular expression (how ``--step-range`` selects step ranges)."""
    if not len(nvtx):
        return False
    cats = nvtx["text"].astype("category").cat
    used = pd.Index(cats.categories[np.unique(cats.codes.to_numpy()[cats.codes.to_numpy() >= 0])])
    texts = used.astype(str)
    if (texts == name).any():
        return True
    try:
        rx = re.compile(name, re.IGNORECASE)
    except re.error:
        return False
    return any(rx.fullmatch(t) for t in texts)  # over distinct names (a few thousand at most)


def frequent_range_names(nvtx: pd.DataFrame, top: int = TOP_RANGE_NAMES) -> str:
    """``"train_step_<n> (10), forward (10), …"``: the most frequent NVTX range texts, numbers
    collapsed to ``<n>`` (one entry for ``ProfilerStep#1``, ``ProfilerStep#2`` …)."""
    per_text = nvtx["text"].astype("category").value_counts()  # one row per distinct text
    per_text = per_text[per_text > 0]
    names = [_NUMBER_RE.sub("<n>", str(t)) for t in per_text.index]
    counts = per_text.groupby(names, sort=False).sum().sort_values(ascending=False, kind="stable")
    return ", ".join(f"{n} ({c})" for n, c in counts.head(top).items())


def check_step_range(bundle: TraceBundle, options: AnalyzeOptions) -> None:
    """``--step-range NAME`` must match at least one NVTX range of the trace."""
    name = options.step_range
    if not name:
        return
    if not len(bundle.nvtx):
        raise usage_error(f"--step-range {name!r}: the trace has no NVTX ranges; {HINT_ADD_NVTX}")
    if not step_range_matches(bundle.nvtx, name):
        raise usage_error(f"--step-range {name!r} matches no NVTX range; the most frequent ranges are: "
                    f"{frequent_range_names(bundle.nvtx)}")


# --------------------------------------------------------------------------------------- steps
def check_steps(options: AnalyzeOptions, detected, where: str = "") -> None:
    """``--steps FIRST:LAST`` must lie inside the detected steps. ``detected``: the step detection
    *without* ``--steps``/``--window`` (``StepsResult`` or ``Unavailable``); ``where``: e.g.
    " in process 1234" for traces with several processes."""
    if options.steps is None:
        return
    first, last = options.steps
    text = f"{first}:{'' if last is None else last}"
    count = int(getattr(detected, "count", 0) or 0) if getattr(detected, "available", True) else 0
    if count == 0:
        reason = getattr(detected, "reason", "no step was detected")
        reason = reason.removesuffix(WHOLE_WINDOW)  # what a run without --steps does
        raise usage_error(f"--steps {text}: no steps were detected{where}: {reason}. Analyse "
                          "without --steps, or name the step range with --step-range NAME")
    if first >= count or (last is not None and last >= count):
        span = "step 0" if count == 1 else f"steps 0–{count - 1}"
        raise usage_error(f"--steps {text} is outside the detected steps: the trace has {span}{where}")


def check_selected_steps(options: AnalyzeOptions, steps) -> None:
    """``--steps`` together with ``--window``: at least one selected step must lie inside the
    window (``steps``: the detection with both applied)."""
    if options.steps is None or options.window_ns is None:
        return
    if not getattr(steps, "available", True) or not getattr(steps, "analysed_count", 0):
        raise usage_error("--steps and --window: no selected step lies wholly inside the window")


# -------------------------------------------------------------------------------------- window
def event_span(bundle: TraceBundle) -> tuple[int, int] | None:
    """(first start, last end) over the event frames, ns; None when there is no event."""
    spans = [(int(f["start_ns"].min()), int(f["end_ns"].max()))
             for f in (getattr(bundle, name) for name in EVENT_FRAMES) if len(f)]
    if not spans:
        return None
    return min(s for s, _ in spans), max(e for _, e in spans)


def capture_span(bundle: TraceBundle) -> tuple[int, int] | None:
    """The capture on the session timeline: the export's own capture times when it records them
    (their end > 0), else the span of its events; None when neither is known."""
    m = bundle.meta
    if m.capture_end_ns > m.capture_start_ns:
        return int(m.capture_start_ns), int(m.capture_end_ns)
    return event_span(bundle)


def _seconds(ns: int) -> str:
    return f"{ns / 1e9:.3f} s"


def check_window(window_ns: tuple[int, int] | None, capture: tuple[int, int] | None,
                 events: tuple[int, int] | None = None) -> None:
    """``--window START:END`` must overlap the capture (``capture``: ``capture_span`` of the
    whole export; ``events``: its ``event_span``, quoted when it differs from the capture)."""
    if window_ns is None or capture is None:
        return
    lo, hi = window_ns
    if hi > capture[0] and lo < capture[1]:
        return
    msg = (f"--window {_seconds(lo)}:{_seconds(hi) if hi < 2**62 else ''} is outside the capture: "
           f"it spans {_seconds(capture[0])} – {_seconds(capture[1])} on the session timeline")
    if events is not None and events != capture:
        msg += f" (events from {_seconds(events[0])} to {_seconds(events[1])})"
    raise usage_error(msg)
