"""Shared test helpers: one process of a trace, whole and cut into chunks the way the stream
driver cuts it (``safe_cut`` at evenly spaced targets)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nsys_diag.analyses.timeline.arrays import process_rows
from nsys_diag.analyses.timeline.busy import choose_window, device_busy, device_ids
from nsys_diag.analyses.capabilities import analysed_process_ids
from nsys_diag.analyses.engine.context import ChunkInputs, chunk_inputs
from nsys_diag.analyses.engine.cuts import chunk_spans, safe_cut
from nsys_diag.analyses.steps.phases import analyze_phases
from nsys_diag.analyses.steps.detection import analyze_steps
from nsys_diag.analyses.suite import OPTIONAL_PROCESS_FRAMES, PROCESS_FRAMES
from nsys_diag.loaders import load_trace
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.thresholds import Thresholds


@dataclass
class Split:
    """One process: its whole frames and inputs, and its chunks."""

    bundle: object
    frames: dict
    devices: tuple
    steps: object
    window: object
    busy: dict
    phases: object
    chunks: list[ChunkInputs]
    exact: bool


def split_process(path: str, n_chunks: int, *, process: int = 0,
                  options: AnalyzeOptions | None = None, th: Thresholds | None = None) -> Split:
    options = options or AnalyzeOptions()
    th = th or Thresholds()
    bundle = load_trace(path, kernel_detail=False)
    gpid = analysed_process_ids(bundle)[process]
    f = {n: process_rows(getattr(bundle, n), gpid) for n in PROCESS_FRAMES}
    for n in OPTIONAL_PROCESS_FRAMES:
        fr = getattr(bundle, n, None)
        if fr is not None:
            f[n] = process_rows(fr, gpid)
    f["gpu_metrics"] = bundle.gpu_metrics
    return split_frames(bundle, f, n_chunks, options=options, th=th)


def split_frames(bundle, f: dict, n_chunks: int, *, options: AnalyzeOptions | None = None,
                 th: Thresholds | None = None) -> Split:
    """``split_process`` of one process's frames ``f`` (e.g. edited by a test)."""
    options = options or AnalyzeOptions()
    th = th or Thresholds()
    devices = tuple(sorted(device_ids(f["kernels"], f["memcpy"], f["memset"])))
    steps = analyze_steps(f["nvtx"], f["kernels"], options=options, th=th)
    window = choose_window(steps, f["kernels"], f["memcpy"], f["memset"], user_window=None,
                           capture=(bundle.meta.capture_start_ns, bundle.meta.capture_end_ns))
    busy = device_busy(f["kernels"], f["memcpy"], f["memset"], window, list(devices))
    phases = analyze_phases(f["nvtx"], steps, f["kernels"], busy)
    cuts, exact, lo = [], True, int(window.start_ns)
    for t in np.linspace(window.start_ns, window.end_ns, n_chunks + 1)[1:-1]:
        c = safe_cut(f["kernels"], devices, lo, int(t))
        if c is not None and c.at_ns > lo:
            cuts.append(c.at_ns)
            exact &= c.exact
            lo = c.at_ns
    chunks = [chunk_inputs(i, f, a, b, window=window, devices=devices, steps=steps)
              for i, (a, b) in enumerate(chunk_spans(cuts))]
    return Split(bundle, f, devices, steps, window, busy, phases, chunks, exact)
