"""The job verdict: one answer for a multi-rank job from its per-rank summaries and rank analysis.

A data-parallel job runs at the pace of its slowest rank: synchronous collectives make every other
rank wait for it. So when ``analyses/ranks.py`` finds a straggler, the job's cause is the
straggler's — named by the phase it loses the time in (``input_bound`` for ``data``), even though
the waiting ranks read ``communication_bound`` — and the job's step time if it were fixed is
projected with the straggler at the median rank's time in that phase:

- step times equalised by collectives (straggler found by phase): every rank's step shrinks by the
  straggler's excess, ``projected = median rank step − excess``;
- step times not equalised (straggler found by step time): the job's step is the slowest rank's,
  ``projected = max(straggler step − excess, slowest other rank's step)``.

When no rank stands out, the job verdict is the ranks' common verdict; when they disagree, the
verdict of the most expensive rank (the slowest median step), and the headline says so.
Pure: no I/O; the result is a JSON-able dict (``index.json`` → ``job``).
"""
from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence

from nsys_diag.model.vocabulary import VERDICT_CODES

PHASE_VERDICT = {"data": "input_bound", "overhead": "overhead_bound",
                 "communication": "communication_bound", "forward": "compute_bound",
                 "backward": "compute_bound", "optimizer": "compute_bound"}
"""The verdict a straggler's excess earns from the phase it loses the time in. The straggler's own
verdict weighs its whole step (its other phases may idle the GPU for unrelated reasons), so the
phase decides; a compute phase keeps the straggler's own code when that is a compute-family code
(``compute_bound_no_tensor_cores``, ``memory_bound``). Per-rank summaries carry no GPU-busy per
phase yet, so host-side slowness inside ``forward`` also reads ``compute_bound`` (the evidence
shows the straggler's own verdict)."""

_COMPUTE_FAMILY = ("compute_bound", "compute_bound_no_tensor_cores", "memory_bound")


def _title(code: str | None) -> str:
    return (code or "unknown").replace("_", "-")


def _unavailable(reason: str) -> dict:
    return {"available": False, "reason": reason, "verdict": None, "headline": None,
            "bound_by": None, "projected_step_ms_if_fixed": None, "evidence": []}


def _straggler_verdict(own: str | None, phase: str | None) -> str:
    code = PHASE_VERDICT.get(phase or "")
    if code is None:
        return str(own) if own in VERDICT_CODES else "insufficient_data"
    if code == "compute_bound" and own in _COMPUTE_FAMILY:
        return str(own)
    return code


def _projection(ranks: dict, s: dict) -> tuple[float | None, float | None]:
    """(current job step ms, projected job step ms with the straggler fixed)."""
    rows = ranks.get("rows") or []
    steps = {r["rank"]: float(r["median_step_ms"]) for r in rows if r.get("median_step_ms") is not None}
    excess = s.get("phase_excess_ms")
    if not steps or excess is None:
        return (max(steps.values()) if steps else None), None
    current = max(steps.values())
    if s.get("kind") == "phase":
        median = float((ranks.get("spread") or {}).get("median_ms") or current)
        return current, max(median - float(excess), 0.0)
    others = [v for k, v in steps.items() if k != s["rank"]]
    fixed = float(s["median_step_ms"]) - float(excess)
    return current, max([fixed] + others)


def _straggler_job(ranks: dict, verdicts: Mapping[int, str | None]) -> dict:
    s = (ranks.get("stragglers") or [])[0]
    rank, phase = int(s["rank"]), s.get("phase")
    code = _straggler_verdict(verdicts.get(rank), phase)
    excess = s.get("phase_excess_ms")
    n_other = int(ranks.get("count") or len(verdicts)) - 1
    waits = ("in collectives" if phase != "communication" else "")
    excess_txt = f"{excess:.0f} ms" if excess is not None else "time"
    headline = (f"{_title(code)} on rank {rank}: the other {n_other} rank"
                f"{'s' if n_other != 1 else ''} wait {excess_txt} per step {waits}".rstrip()
                + (f" while rank {rank} is in {phase}" if phase else ""))
    current, projected = _projection(ranks, s)
    others = Counter(v for k, v in verdicts.items() if k != rank)
    evidence = [
        {"text": f"rank {rank} loses {excess_txt} per step in {phase or '?'} against the median "
                 "rank", "metric": f"phase.{phase}_excess_ms", "value": excess, "unit": "ms"},
        {"text": f"rank {rank} reads {_title(verdicts.get(rank))}; the other ranks read "
                 + ", ".join(f"{_title(c)} ×{n}" for c, n in sorted(others.items(),
                                                                   key=lambda x: str(x[0]))),
         "metric": "verdicts", "value": None, "unit": ""},
    ]
    if current is not None and projected is not None:
        evidence.append({"text": f"job step {current:.1f} ms now; {projected:.1f} ms with rank "
                                 f"{rank} at the median rank's {phase} time",
                         "metric": "projected_step_ms", "value": projected, "unit": "ms"})
    comm = ranks.get("communication") or {}
    if comm.get("available") and comm.get("lowest_rank") == rank:
        evidence.append({"text": f"rank {rank} spends the least time in communication kernels "
                                 f"({comm.get('min_ms') or 0:.1f} ms per step vs median "
                                 f"{comm.get('median_ms') or 0:.1f} ms): the others wait for it",
                         "metric": "comm_ms", "value": comm.get("min_ms"), "unit": "ms"})
    return {"available": True, "reason": None, "verdict": code, "headline": headline,
            "bound_by": {"rank": rank, "phase": phase}, "basis": "straggler",
            "current_step_ms": current, "projected_step_ms_if_fixed": projected,
            "evidence": evidence}


def _common_job(ranks: dict, verdicts: Mapping[int, str | None]) -> dict:
    rows = ranks.get("rows") or []
    counts = Counter(v for v in verdicts.values())
    slowest = max(rows, key=lambda r: (float(r.get("median_step_ms") or 0.0), -int(r["rank"])))
    phase_ms = slowest.get("phase_ms") or {}
    top_phase = max(phase_ms, key=lambda p: phase_ms[p]) if phase_ms else None
    n = len(verdicts)
    if len(counts) == 1:
        code = next(iter(counts))
        headline = f"{_title(code)}: all {n} ranks agree, no straggler"
        basis, bound_rank = "common", None
    else:
        code = verdicts.get(int(slowest["rank"]))
        mix = ", ".join(f"{_title(c)} ×{k}" for c, k in sorted(counts.items(), key=lambda x: str(x[0])))
        headline = (f"{_title(code)} (the most expensive rank's verdict: rank {slowest['rank']}, "
                    f"slowest median step); the ranks disagree: {mix}; no straggler")
        basis, bound_rank = "most_expensive", int(slowest["rank"])
    sp = ranks.get("spread") or {}
    evidence = [{"text": f"no rank stands out: slowest/median step {sp.get('max_over_median') or 0:.2f}×",
                 "metric": "spread.max_over_median", "value": sp.get("max_over_median"), "unit": "×"}]
    return {"available": True, "reason": None, "verdict": code, "headline": headline,
            "bound_by": {"rank": bound_rank, "phase": top_phase}, "basis": basis,
            "current_step_ms": sp.get("max_ms"), "projected_step_ms_if_fixed": None,
            "evidence": evidence}


def job_verdict(ranks: dict | None, rows: Sequence[dict]) -> dict:
    """``index.json`` → ``job`` from the cross-rank section (``analyze_ranks``) and the index rows
    (``rank``, ``verdict`` per trace).

    Keys: ``available``, ``reason``, ``verdict`` (a verdict code), ``headline``, ``bound_by``
    ``{rank, phase}``, ``basis`` (``straggler``/``common``/``most_expensive``),
    ``current_step_ms``, ``projected_step_ms_if_fixed``, ``evidence`` (``{text, metric, value,
    unit}``).
    """
    if not ranks or not ranks.get("available"):
        return _unavailable("no job: fewer than two traces with distinct ranks and steps")
    verdicts = {int(r["rank"]): r.get("verdict") for r in rows if r.get("rank") is not None}
    in_ranks = {int(r["rank"]) for r in ranks.get("rows") or []}
    verdicts = {k: v for k, v in verdicts.items() if k in in_ranks}
    if ranks.get("stragglers"):
        return _straggler_job(ranks, verdicts)
    return _common_job(ranks, verdicts)
