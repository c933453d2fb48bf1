"""Phases, streamed: per-chunk GPU sums of the phase breakdown, merged into ``analyze_phases``'s
result (and the step outliers it explains).

What is global and what is the chunk's
    The NVTX part of ``PhasesResult`` — the exclusive phase instances, their rows, the per-step
    matrix (``per_step_ns``), ``mean_ms``/``share``/``count`` — depends on the NVTX ranges and the
    steps only, so every chunk's ``ChunkInputs.phases`` holds the same one (the *base*). Only the
    GPU columns are the chunk's:

    * ``gpu_busy_ms`` — compute-busy ns inside each instance, summed over devices. The chunk's
      busy intervals are the whole busy intervals clipped to the chunk's window, so the
      per-instance sums over chunks are the whole ones **exactly** (integers); the mean over
      devices, the per-row sums and the clamp to the row's wall time are taken at merge time
      (``phases.phase_rows``), in the in-memory order: bit-identical results. ``other`` = busy in
      the steps − busy in the instances, from the same integer sums.
    * ``gpu_work_ms`` — kernel ns launched inside each instance: each kernel counts in the chunk
      that owns it (start in ``[lo, hi)``), with its launch time (``kernels.launch_start_ns``),
      which may lie in an earlier chunk's span — the instances are global, so that is no matter.
      Integer sums: exact.
    * ``unattributed_kernels`` — owned kernels without a launch call, summed.

Partial size: O(phase instances and steps overlapping the chunk) + O(phase rows); never O(kernels).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.engine.context import ChunkInputs
from nsys_diag.analyses.engine.declaration import Declaration, declare
from nsys_diag.analyses.steps.phases import (PhasesResult, analyze_phases, explain_outliers,
                                             launched_work, phase_rows)
from nsys_diag.analyses.steps.detection import StepsResult
from nsys_diag.model.schema_types import Enum, List, Map, Obj, Section
from nsys_diag.model.vocabulary import CANONICAL_PHASES, HINT_CAPTURE_STEPS


@dataclass(frozen=True)
class PhasesPart:
    """The GPU sums of one chunk (times in integer ns)."""

    index: int
    inst_pos: np.ndarray
    """Positions (into the base's instance arrays) of the instances meeting the chunk's window."""
    inst_busy_ns: np.ndarray
    """Compute-busy ns inside each of those instances, summed over devices (int64)."""
    step_pos: np.ndarray
    """Positions (into the analysed steps) of the steps meeting the chunk's window."""
    step_busy_ns: np.ndarray
    """Compute-busy ns inside each of those steps, summed over devices (int64)."""
    row_work_ns: np.ndarray
    """Per phase row: ns of owned kernels launched inside its instances (float64 of integers)."""
    other_work_ns: float
    """Ns of owned kernels launched inside the steps but in no instance."""
    unattributed: int
    """Owned kernels without a launch call."""
    n_devices: int
    has_busy: bool


def _busy_sums(ci: ChunkInputs, starts: np.ndarray, ends: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """(positions, compute-busy ns summed over devices) of the windows meeting the chunk."""
    cw = ci.chunk_window
    pos = np.flatnonzero((ends > cw.start_ns) & (starts < cw.end_ns))
    tot = np.zeros(pos.size, np.int64)
    for b in ci.busy.values():  # a handful of devices
        tot += np.asarray(b.covered_per_window("compute", starts[pos], ends[pos]), np.int64)
    return pos, tot


def partial_phases(ci: ChunkInputs) -> PhasesPart | None:
    """The chunk's GPU sums of the phase breakdown (None when the process has no phases)."""
    base = ci.phases
    if not isinstance(base, PhasesResult) or not isinstance(ci.steps, StepsResult):
        return None
    a_idx = base.analysed_indices
    st_s, st_e = ci.steps.starts_ns[a_idx], ci.steps.ends_ns[a_idx]
    eff_s, eff_e = base.inst_starts_ns, base.inst_ends_ns
    inst_pos, inst_busy = _busy_sums(ci, eff_s, eff_e)
    step_pos, step_busy = _busy_sums(ci, st_s, st_e)
    inst_work, other_work, unattributed = launched_work(ci.owned("kernels"), eff_s, eff_e,
                                                        st_s, st_e)
    n_rows = len(base.rows) - 1
    row_work = (np.bincount(base.inst_row, weights=inst_work, minlength=n_rows)
                if base.inst_row.size else np.zeros(n_rows))
    return PhasesPart(index=ci.index, inst_pos=inst_pos, inst_busy_ns=inst_busy,
                      step_pos=step_pos, step_busy_ns=step_busy, row_work_ns=row_work,
                      other_work_ns=float(other_work), unattributed=int(unattributed),
                      n_devices=max(len(ci.busy), 1), has_busy=bool(ci.busy))


def merge_phases(parts: list[PhasesPart | None], *, base: PhasesResult | Unavailable
                 ) -> PhasesResult | Unavailable:
    """``analyze_phases`` of the whole process from its chunks' parts. ``base``: the ``phases``
    of any chunk (``ChunkInputs.phases``: its NVTX part is the global one)."""
    if not isinstance(base, PhasesResult):
        return base
    got = [p for p in parts if p is not None]
    n_inst, n_steps = base.inst_starts_ns.size, base.per_step_ns.shape[0]
    n_rows = len(base.rows) - 1
    inst_ns = np.zeros(n_inst, np.int64)
    step_ns_busy = np.zeros(n_steps, np.int64)
    row_work = np.zeros(n_rows)
    other_work, unattributed = 0.0, 0
    for p in got:  # one per chunk
        np.add.at(inst_ns, p.inst_pos, p.inst_busy_ns)
        np.add.at(step_ns_busy, p.step_pos, p.step_busy_ns)
        row_work = row_work + p.row_work_ns
        other_work += p.other_work_ns
        unattributed += p.unattributed
    n_dev = got[0].n_devices if got else 1
    has_busy = got[0].has_busy if got else False
    # as analyze_phases: Σ over devices (exact integers) / devices, then per-row float sums
    inst_busy = inst_ns.astype(np.float64) / n_dev
    step_busy = step_ns_busy.astype(np.float64) / n_dev
    inst_row = base.inst_row
    row_busy = (np.bincount(inst_row, weights=inst_busy, minlength=n_rows) if inst_row.size
                else np.zeros(n_rows))
    real = base.rows[:-1]
    row_count = np.array([r.count for r in real], np.int64)
    per_row = base.per_step_ns
    rows = phase_rows(per_row, [r.name for r in real], [r.canonical for r in real], row_busy,
                      row_work, row_count, float(step_busy.sum() - inst_busy.sum()), other_work,
                      per_row.sum(axis=1), n_dev, has_busy)
    return dataclasses.replace(base, rows=tuple(rows), unattributed_kernels=unattributed)


# ------------------------------------------------------------------------------- declarations
def _partial_phases(span: ChunkInputs, **_) -> tuple:
    """The span's GPU sums, and (first span only) its phases: the NVTX part every span shares."""
    return partial_phases(span), (span.phases if span.index == 0 else None)


PHASES_SPEC = List(Obj({"name": "str", "canonical": Enum(*CANONICAL_PHASES, default="other"),
                   "mean_ms": "num", "share": "share", "gpu_busy_ms": "num?",
                   "gpu_busy_share": "share?", "gpu_work_ms": "num?", "count": "int"}),
              per_process=True)
"""The ``phases`` section of the analysis JSON (model/schema_types.py)."""

PHASES = declare(Declaration(
    "phases", section="phases", spec=PHASES_SPEC, partial=_partial_phases,
    finish=lambda states, ctx: merge_phases([s[0] for s in states], base=states[0][1]),
    rank=2, whole_reads=("busy",), whole=lambda p, busy: analyze_phases(
        p.frames["nvtx"], p.steps, p.frames["kernels"], busy, phase_map=p.options.phase_map)))
"""The phase breakdown of the steps (the ``phases`` section)."""

STEPS_SPEC = Section(Obj({
    "count": "int", "analysed_count": "int", "source": "str", "range_name": "str", "mean_ms": "num?",
    "median_ms": "num?", "p90_ms": "num?", "max_ms": "num?", "min_ms": "num?", "warmup": List("int"),
    "incomplete": List("int"),
    "outliers": List(Obj({"index": "int", "duration_ms": "num", "ratio_to_median": "num",
                          "reason": "str"})),
    "per_step": List(Obj({"index": "int", "start_ns": "int", "duration_ms": "num",
                          "kind": Enum("warmup", "normal", "outlier", "incomplete", "unselected")},
                         carried={"phases": Map("num", doc="exclusive ms per canonical phase in "
                                                           "this step (analysed steps only)")},
                         optional=("phases",)))},
    carried={"boundary": Enum("range", "period")}),
    "No training steps were found.",
    HINT_CAPTURE_STEPS,
    per_process=True)
"""The ``steps`` section of the analysis JSON (model/schema_types.py)."""

STEPS = declare(Declaration(
    "steps", section="steps", spec=STEPS_SPEC, reads=("phases",),
    finish=lambda states, ctx: explain_outliers(ctx.glob.steps, ctx.results["phases"]),
    rank=6, whole_reads=("phases",), whole=lambda p, ph: explain_outliers(p.steps, ph)))
"""The steps (global, known before the spans), their outliers explained by the phases."""
