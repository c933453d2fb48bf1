"""Job replay: the ranks of a data-parallel job replayed together, step by step, with their
collectives as barriers. A bounded per-step model over what each rank's
analysis measured (its analysed steps and their canonical phase times), never the timelines
themselves: ranks × common steps × phases values, vectorised.

Model (ms; steps aligned by index across ranks; ``c`` is a rank's step without its time in
collectives, ``w`` its time in collectives, both per step):

* ``w[r, s]`` — the rank's ``communication`` phase time in that step; without a communication
  phase, its NCCL kernel time per step (``RankInput.comm_ms``, the same every step); without
  either the job has no barrier the model can see and ``w = 0``. A barrier holds only where it
  shows: the ranks' steps are equalised (the median over steps of (slowest − fastest rank's step)
  ÷ slowest is at most ``EQUALISED_SHARE``); ranks whose steps differ more did not wait for each
  other, so the job's step is its slowest rank's (``w = 0``);
* ``c[r, s] = step[r, s] − w[r, s]``;
* a collective is a barrier: no rank leaves it before the slowest has entered it, and the
  collective itself takes what the rank that waited least spent in it, so the replayed job step is
  ``T[s] = max_r c[r, s] + min_r w[r, s]`` (without a barrier: the slowest rank's step).

Fidelity: ``replayed_ms`` (mean ``T``) against ``measured_ms`` (the mean over the common steps of
the slowest rank's step), ``error_pct`` signed.

What-if ``straggler_fixed``: the straggler's time in each canonical phase but communication —
and its time outside every phase — set, step by step, to the median over the ranks of that
phase's time in that step ("the straggler at the median rank's phase times"); its collective
wait follows from the barrier. ``saves_ms_per_step`` is the mean over the common steps of
``T[s] − T'[s]`` (never negative), ``saves_range_ms`` its min and max, ``step_ms_after`` the
measured job step less the saving, ``saves_share`` the saving over the measured job step. Without
per-step phase times (older summaries) each step uses the rank's mean phase times.

Limits: one barrier per step (a step with several collectives is priced as if its compute ran
before one); the collective's own time is the least-waiting rank's, which includes any skew that
rank still waited; ranks are matched by step index, so a rank that skipped a step drops it from
every rank's sample.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from nsys_diag.analyses.job.ranks import RankInput

COMMUNICATION = "communication"
WHAT_IF_ID = "straggler_fixed"
EQUALISED_SHARE = 0.05
"""Ranks' steps within 5% of each other are equalised by their collectives (the straggler
guard of ``ranks.STRAGGLER_MIN_EXCESS``)."""


def _common_steps(ranks: Sequence[RankInput]) -> tuple[np.ndarray, list[np.ndarray]]:
    """(common step indices, per rank the positions of those steps in its arrays)."""
    idx = [np.asarray(r.step_index if r.step_index is not None else np.arange(len(r.step_ms)),
                      np.int64) for r in ranks]
    common = idx[0]
    for i in idx[1:]:
        common = np.intersect1d(common, i)
    cols = []
    for i in idx:  # a loop over ranks
        order = np.argsort(i, kind="stable")
        cols.append(order[np.searchsorted(i[order], common)])
    return common, cols


def _phase_cube(ranks: Sequence[RankInput], cols: list[np.ndarray], phases: list[str]
                ) -> np.ndarray:
    """(ranks × steps × phases) phase ms per common step: the rank's per-step phase times, else
    its mean phase times on every step."""
    n = cols[0].size if cols else 0
    cube = np.zeros((len(ranks), n, len(phases)))
    for i, (r, c) in enumerate(zip(ranks, cols)):
        per_step = getattr(r, "step_phase_ms", None) or {}
        for j, p in enumerate(phases):
            v = per_step.get(p)
            if v is not None and len(v) == len(r.step_ms):
                cube[i, :, j] = np.asarray(v, float)[c]
            else:
                cube[i, :, j] = float(r.phase_ms.get(p, 0.0))
    return cube


def _barrier(ranks: Sequence[RankInput], cube: np.ndarray, phases: list[str], steps: np.ndarray
             ) -> tuple[np.ndarray, str]:
    """(ranks × steps) time in collectives and where it came from (module docstring)."""
    slowest = steps.max(axis=0)
    spread = np.median(np.where(slowest > 0, (slowest - steps.min(axis=0)) / np.maximum(
        slowest, 1e-12), 0.0))
    if spread > EQUALISED_SHARE:
        return np.zeros(cube.shape[:2]), (f"none (the ranks' steps differ by {100 * spread:.0f}%: "
                                          "they do not wait for each other)")
    if COMMUNICATION in phases:
        return cube[:, :, phases.index(COMMUNICATION)], "communication phase"
    comm = [r.comm_ms for r in ranks]
    if all(c is not None and np.isfinite(c) for c in comm):
        return np.repeat(np.asarray(comm, float)[:, None], cube.shape[1], axis=1), \
            "NCCL kernel time per step"
    return np.zeros(cube.shape[:2]), "none (no collective in the traces)"


def _job_steps(compute: np.ndarray, wait: np.ndarray) -> np.ndarray:
    """Replayed job step per common step: the slowest compute, then the collective."""
    return compute.max(axis=0) + wait.min(axis=0)


def straggler_fixed(ranks: Sequence[RankInput], straggler: int, phase: str | None = None
                    ) -> dict | None:
    """The ``straggler_fixed`` what-if (module docstring) for rank ``straggler``; None when
    fewer than two ranks share a step or the straggler is not among them."""
    ranks = [r for r in ranks if np.asarray(r.step_ms).size]
    pos = [i for i, r in enumerate(ranks) if r.rank == straggler]
    if len(ranks) < 2 or not pos:
        return None
    common, cols = _common_steps(ranks)
    if not common.size:
        return None
    k = pos[0]
    steps = np.stack([np.asarray(r.step_ms, float)[c] for r, c in zip(ranks, cols)])
    phases = sorted({p for r in ranks for p in r.phase_ms}
                    | {p for r in ranks for p in (getattr(r, "step_phase_ms", None) or {})})
    cube = _phase_cube(ranks, cols, phases)
    wait, barrier = _barrier(ranks, cube, phases, steps)
    compute = np.maximum(steps - wait, 0.0)
    work = [j for j, p in enumerate(phases) if p != COMMUNICATION]
    outside = compute - cube[:, :, work].sum(axis=2)  # time outside every phase
    fixed = compute.copy()
    fixed[k] = np.median(cube[:, :, work], axis=0).sum(axis=1) + np.median(outside, axis=0)
    before, after = _job_steps(compute, wait), _job_steps(fixed, wait)
    saves = np.maximum(before - after, 0.0)
    measured = float(steps.max(axis=0).mean())
    replayed = float(before.mean())
    mean = float(saves.mean())
    return {
        "id": WHAT_IF_ID, "rank": int(straggler), "phase": phase,
        "change": (f"rank {straggler} at the median rank's phase times, step by step "
                   f"(the collectives' barrier: {barrier})"),
        "steps": int(common.size), "barrier": barrier,
        "measured_ms": measured, "replayed_ms": replayed,
        "error_pct": 100.0 * (replayed - measured) / measured if measured else 0.0,
        "saves_ms_per_step": mean, "saves_range_ms": [float(saves.min()), float(saves.max())],
        "saves_share": mean / measured if measured else 0.0,
        "step_ms_after": max(measured - mean, 0.0)}


def job_what_ifs(ranks: Sequence[RankInput], stragglers: Sequence[dict]) -> list[dict]:
    """The job's what-ifs: ``straggler_fixed`` for the first straggler (the one the job verdict
    names), none without a straggler."""
    if not stragglers:
        return []
    s = stragglers[0]
    w = straggler_fixed(ranks, int(s["rank"]), s.get("phase"))
    return [w] if w is not None else []
