"""What one chunk of one process hands to each analysis's ``partial_*`` (``ChunkInputs``).

The global values — the process's steps, its analysed window, its devices, its first kernel —
are computed once, before the chunks (``app/stream.py``); everything else is the chunk's own:
its rows (``cuts.chunk_frames``), its share of the window, its busy intervals and the phases
computed over its rows (whose NVTX part — instances, per-step wall time — is the same in every
chunk; only the GPU part differs and is merged). ``whole_span`` is the whole process as one
span, and ``over_one_span`` a declaration's in-memory result as its partial → merge → finish
over it.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from nsys_diag.analyses.timeline.arrays import take_rows
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.engine.declaration import Declaration, FinishContext, WholeProcess
from nsys_diag.analyses.engine.globals import ProcessGlobals
from nsys_diag.analyses.timeline.busy import DeviceBusy, Window, device_busy
from nsys_diag.analyses.engine.cuts import FIRST_LO, LAST_HI, chunk_frames, owned
from nsys_diag.analyses.steps.phases import PhasesResult, analyze_phases
from nsys_diag.analyses.steps.detection import StepsResult


@dataclass(frozen=True)
class ChunkInputs:
    """One chunk ``[lo_ns, hi_ns)`` of one process (times in session ns)."""

    index: int
    lo_ns: int
    hi_ns: int
    frames: dict[str, pd.DataFrame]
    """``cuts.chunk_frames`` of the process's frames (``nvtx`` whole)."""
    window: Window
    """The process's analysed window (global)."""
    devices: tuple[int, ...]
    """The process's devices (global)."""
    steps: StepsResult | Unavailable
    """The process's steps (global)."""
    busy: dict[int, DeviceBusy]
    """Busy intervals of the chunk's rows inside ``chunk_window``."""
    phases: PhasesResult | Unavailable
    """``analyze_phases`` over the chunk's rows (NVTX part global, GPU part the chunk's)."""

    @property
    def chunk_window(self) -> Window:
        """The analysed window ∩ ``[lo_ns, hi_ns)`` (zero length when they do not meet)."""
        lo = max(self.window.start_ns, self.lo_ns)
        hi = min(self.window.end_ns, self.hi_ns)
        return Window(lo, max(lo, hi), self.window.source)

    @property
    def is_first(self) -> bool:
        return self.lo_ns == FIRST_LO

    @property
    def is_last(self) -> bool:
        return self.hi_ns == LAST_HI

    def owned(self, name: str, column: str = "start_ns") -> pd.DataFrame:
        """The rows of frame ``name`` this chunk owns (start in ``[lo_ns, hi_ns)``), made once
        per chunk (perf: several partials ask; rows in time order make it a slice, no copy)."""
        cache = self.__dict__.setdefault("_owned", {})  # frozen: no attribute assignment
        key = (name, column)
        if key not in cache:
            f = self.frames[name]
            cache[key] = take_rows(f, owned(f, self.lo_ns, self.hi_ns, column))
        return cache[key]


def chunk_inputs(index: int, frames: dict[str, pd.DataFrame], lo_ns: int, hi_ns: int, *,
                 window: Window, devices: tuple[int, ...], steps: StepsResult | Unavailable,
                 phase_map=None) -> ChunkInputs:
    """``ChunkInputs`` of the chunk ``[lo_ns, hi_ns)`` from the process's frames (the whole
    process's, or already read for that span: ``chunk_frames`` is idempotent on them)."""
    cf = chunk_frames(frames, lo_ns, hi_ns)
    lo, hi = max(window.start_ns, lo_ns), min(window.end_ns, hi_ns)
    cw = Window(lo, max(lo, hi), window.source)
    busy = device_busy(cf["kernels"], cf["memcpy"], cf["memset"], cw, list(devices))
    phases = analyze_phases(cf["nvtx"], steps, cf["kernels"], busy, phase_map=phase_map)
    return ChunkInputs(index=index, lo_ns=lo_ns, hi_ns=hi_ns, frames=cf, window=window,
                       devices=devices, steps=steps, busy=busy, phases=phases)


def whole_span(proc: WholeProcess, busy: dict[int, DeviceBusy],
               phases: PhasesResult | Unavailable) -> ChunkInputs:
    """The whole process as one span ``[FIRST_LO, LAST_HI)``: every row is the span's own (its
    frames are the process's: ``chunk_frames`` over that span keeps every row), its busy
    intervals and phases those of the in-memory run (the chunk window is the analysed window)."""
    return ChunkInputs(index=0, lo_ns=FIRST_LO, hi_ns=LAST_HI, frames=proc.frames,
                       window=proc.window, devices=proc.devices, steps=proc.steps, busy=busy,
                       phases=phases)


def over_one_span(d: Declaration, proc: WholeProcess, busy: dict[int, DeviceBusy],
                  phases: PhasesResult | Unavailable):
    """``d``'s in-memory result as the streamed run computes it over one span: ``partial`` on
    ``whole_span``, ``merge`` of that one state, ``finish`` — for a declaration (no ``reads``)
    whose ``finish`` reads of the process's global values only its steps, window and devices."""
    assert d.partial is not None and d.finish is not None and not d.reads, d.name
    glob = ProcessGlobals(global_pid=proc.pid, steps=proc.steps, window=proc.window,
                          devices=proc.devices)
    state = d.partial(whole_span(proc, busy, phases), glob=glob, th=proc.th, options=proc.options)
    ctx = FinishContext(glob=glob, bundle=proc.bundle, options=proc.options, th=proc.th,
                        roofline=proc.roofline, results={})
    return d.finish(d.merge([state]), ctx)
