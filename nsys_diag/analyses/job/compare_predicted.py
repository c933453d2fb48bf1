"""Predicted vs measured: the baseline's replay predicted what fixing a cause would give; the
candidate measured what the change did. ``compare`` shows both so users see whether the model was
right.

``predicted_vs_measured(baseline, candidate)`` on two lists of ``summarize_view`` summaries (the
runs of each side; each summary's ``what_if`` holds its replay's what-ifs). Rules:

* a what-if's saving per side is the mean over that side's runs that replayed it (ms per step);
* **the cause the candidate changed** is the baseline what-if whose saving fell the most in the
  candidate (``baseline saves − candidate saves``: a fixed cause leaves nothing to save), when
  that drop is at least ``MIN_CHANGE_SHARE`` of the baseline's measured step — one what-if per
  change, so ``instant_input`` and ``overlapped_input`` (both input) compete and the larger drop
  wins;
* ``predicted_step_ms`` is the baseline's ``step_ms_after`` for it (mean over its runs),
  ``candidate_step_ms`` the candidate's measured mean analysed step, ``error_pct`` signed
  (positive: the prediction was slower than what was measured); ``predicted_saves_ms`` and
  ``measured_saves_ms`` (baseline's measured mean step − candidate's) beside them.

Unavailable (``available: false`` and the reason) when a side has no steps, no run of a side has
a replay, or no what-if's saving fell by that much. Pure: no I/O.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from nsys_diag.model.jsonsafe import finite

MIN_CHANGE_SHARE = 0.05
"""A what-if whose saving fell by ≥ 5% of the baseline step names the cause the candidate
changed (a smaller drop is within the replay's own fidelity)."""


def _mean_step(side: Sequence[dict]) -> float | None:
    steps = [float(x) for s in side for x in ((s.get("per_step") or {}).get("duration_ms") or [])]
    return float(np.mean(steps)) if steps else None


def _savings(side: Sequence[dict]) -> dict[str, dict]:
    """Per what-if id: mean ``saves_ms_per_step`` and ``step_ms_after`` over the side's runs
    that replayed it, with the run's ``finding`` and ``change`` (the first run's)."""
    acc: dict[str, dict] = {}
    for s in side:
        for w in s.get("what_if") or []:
            saves, after = finite(w.get("saves_ms_per_step")), finite(w.get("step_ms_after"))
            if saves is None or after is None or not w.get("id"):
                continue
            a = acc.setdefault(str(w["id"]), {"finding": w.get("finding"),
                                              "change": w.get("change"), "saves": [],
                                              "after": []})
            a["saves"].append(saves)
            a["after"].append(after)
    return {k: {"finding": v["finding"], "change": v["change"],
                "saves": float(np.mean(v["saves"])), "after": float(np.mean(v["after"]))}
            for k, v in acc.items()}


def _unavailable(reason: str) -> dict:
    return {"available": False, "reason": reason, "what_if": None, "finding": None,
            "change": None, "baseline_step_ms": None, "predicted_step_ms": None,
            "candidate_step_ms": None, "error_pct": None, "predicted_saves_ms": None,
            "measured_saves_ms": None, "candidate_saves_ms": None}


def predicted_vs_measured(baseline: Sequence[dict], candidate: Sequence[dict]) -> dict:
    """The baseline's predicted step for the cause the candidate changed beside the candidate's
    measured step (module docstring)."""
    base_ms, cand_ms = _mean_step(baseline), _mean_step(candidate)
    if base_ms is None or cand_ms is None or cand_ms <= 0:
        return _unavailable("no steps on a side: the replay predicts per step")
    base, cand = _savings(baseline), _savings(candidate)
    if not base or not cand:
        side = "baseline" if not base else "candidate"
        return _unavailable(f"no replay what-ifs on the {side} side (replay not available)")
    drops = {k: v["saves"] - cand[k]["saves"] for k, v in base.items() if k in cand}
    if not drops:
        return _unavailable("the two sides priced no what-if in common")
    wid = max(sorted(drops), key=lambda k: drops[k])
    if drops[wid] < MIN_CHANGE_SHARE * base_ms:
        return _unavailable(f"the candidate changed no cause the baseline's replay priced (no "
                            f"what-if's saving fell by {100 * MIN_CHANGE_SHARE:.0f}% of the "
                            "step or more)")
    w = base[wid]
    return {"available": True, "reason": None, "what_if": wid, "finding": w["finding"],
            "change": w["change"], "baseline_step_ms": base_ms, "predicted_step_ms": w["after"],
            "candidate_step_ms": cand_ms,
            "error_pct": 100.0 * (w["after"] - cand_ms) / cand_ms,
            "predicted_saves_ms": w["saves"], "measured_saves_ms": base_ms - cand_ms,
            "candidate_saves_ms": cand[wid]["saves"]}
