"""The job verdict: one answer for a multi-rank job from its per-rank summaries and rank analysis.

A data-parallel job runs at the pace of its slowest rank: synchronous collectives make every other
rank wait for it. So when ``analyses/job/ranks.py`` finds a straggler, the job's cause is the
straggler's — named by the phase it loses the time in (``input_bound`` for ``data``), even though
the waiting ranks read ``communication_bound`` — and the job's step time if it were fixed is
projected with the straggler at the median rank's time in that phase:

- step times equalised by collectives (straggler found by phase): every rank's step shrinks by the
  straggler's excess, ``projected = median rank step − excess``;
- step times not equalised (straggler found by step time): the job's step is the slowest rank's,
  ``projected = max(straggler step − excess, slowest other rank's step)``.

Where the batch has the ranks' per-step numbers it replays the job instead (``job_replay.py``:
the ranks step by step with collectives as barriers, the straggler at the median rank's phase
times) and its ``straggler_fixed`` what-if gives the projection; the formulas above are the
fallback.

A straggler slow in a compute phase (forward, backward, optimizer) is not always slow on the GPU:
the per-rank summaries carry each phase's GPU work (``phase_gpu_ms``, the kernels launched in it)
and the idle gaps by cause (``gaps_ms``), so ``job_cause`` tells GPU compute (the extra GPU work
covers ≥ half the excess: ``compute_bound``) from host time (the GPU idles: the gap cause most in
excess names it — ``launch_bound``, ``input_bound``, else ``overhead_bound``).

When no rank stands out, the job verdict is the ranks' common verdict; when they disagree, the
verdict of the most expensive rank (the slowest median step), and the headline says so.
Pure: no I/O; the result is a JSON-able dict (``index.json`` → ``job``).
"""
from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence

from nsys_diag.model.vocabulary import GAP_CAUSE_TABLE, VERDICT_CODES

PHASE_VERDICT = {"data": "input_bound", "overhead": "overhead_bound",
                 "communication": "communication_bound", "forward": "compute_bound",
                 "backward": "compute_bound", "optimizer": "compute_bound"}
"""The verdict a straggler's excess earns from the phase it loses the time in. The straggler's own
verdict weighs its whole step (its other phases may idle the GPU for unrelated reasons), so the
phase decides; a compute phase keeps the straggler's own code when that is a compute-family code
(``compute_bound_no_tensor_cores``, ``memory_bound``) — but only when the excess is GPU work (see
``job_cause``)."""

HOST_CAUSE_VERDICT = {c.name: c.straggler_verdict for c in GAP_CAUSE_TABLE}
"""The verdict of a straggler whose compute phase is slow on the host, by the idle-gap cause the
straggler has most in excess of the median rank (``GapCause.straggler_verdict`` of
``model.vocabulary.GAP_CAUSE_TABLE``; a cause outside it reads ``overhead_bound``)."""
GPU_EXCESS_SHARE = 0.5
"""A compute phase's excess is GPU compute when the straggler's extra GPU work in it (kernels
launched in the phase, ``phase_gpu_ms``) is at least this share of the excess; else it is host
time (Python, launches, input waits) with the GPU idle."""
_COMPUTE_PHASES = ("forward", "backward", "optimizer")

_COMPUTE_FAMILY = ("compute_bound", "compute_bound_no_tensor_cores", "memory_bound")


def _title(code: str | None) -> str:
    return (code or "unknown").replace("_", "-")


def _unavailable(reason: str) -> dict:
    return {"available": False, "reason": reason, "verdict": None, "headline": None,
            "bound_by": None, "cause": None, "projected_step_ms_if_fixed": None, "evidence": []}


def _straggler_verdict(own: str | None, phase: str | None, cause: dict | None = None) -> str:
    if cause and cause.get("kind") == "host":
        return str(cause["verdict"])
    code = PHASE_VERDICT.get(phase or "")
    if code is None:
        return str(own) if own in VERDICT_CODES else "insufficient_data"
    if code == "compute_bound" and own in _COMPUTE_FAMILY:
        return str(own)
    return code


def _median_other(rows: Sequence[dict], rank: int, key: str, name: str) -> float | None:
    vals = sorted(float(r[key][name]) for r in rows
                  if r["rank"] != rank and name in (r.get(key) or {}))
    if not vals:
        return None
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2


def job_cause(ranks: dict, s: dict) -> dict | None:
    """What the straggler's excess in a compute phase is: ``{kind: gpu_compute|host, verdict,
    gpu_excess_ms, host_excess_ms, gap_cause}``. GPU work per phase (``rows[].phase_gpu_ms``)
    against the median other rank's: extra GPU work ≥ ``GPU_EXCESS_SHARE`` of the excess is
    compute; otherwise the time is on the host, named by the idle-gap cause most in excess
    (``HOST_CAUSE_VERDICT``). None outside compute phases or without GPU work per phase."""
    phase, excess = s.get("phase"), s.get("phase_excess_ms")
    rows = ranks.get("rows") or []
    me = next((r for r in rows if r["rank"] == s["rank"]), None)
    if phase not in _COMPUTE_PHASES or not excess or me is None \
            or phase not in (me.get("phase_gpu_ms") or {}):
        return None
    median = _median_other(rows, int(s["rank"]), "phase_gpu_ms", str(phase))
    if median is None:
        return None
    gpu_excess = float(me["phase_gpu_ms"][phase]) - median
    host_excess = max(float(excess) - max(gpu_excess, 0.0), 0.0)
    if gpu_excess >= GPU_EXCESS_SHARE * float(excess):
        return {"kind": "gpu_compute", "verdict": None, "gpu_excess_ms": gpu_excess,
                "host_excess_ms": host_excess, "gap_cause": None}
    gaps = me.get("gaps_ms") or {}
    extra = {c: float(v) - (_median_other(rows, int(s["rank"]), "gaps_ms", c) or 0.0)
             for c, v in gaps.items()}
    top = max(extra, key=lambda c: (extra[c], c)) if extra and max(extra.values()) > 0 else None
    return {"kind": "host", "verdict": HOST_CAUSE_VERDICT.get(top or "", "overhead_bound"),
            "gpu_excess_ms": gpu_excess, "host_excess_ms": host_excess, "gap_cause": top}


def _cause_evidence(rank: int, phase: str | None, cause: dict | None) -> list[dict]:
    if not cause:
        return []
    gpu, host = cause["gpu_excess_ms"], cause["host_excess_ms"]
    if cause["kind"] == "gpu_compute":
        text = (f"rank {rank} runs {gpu:.1f} ms more GPU work per step in {phase} than the median "
                "rank: the excess is GPU compute")
    else:
        gap = f"; its GPU idles most in excess as {cause['gap_cause']}" if cause["gap_cause"] else ""
        text = (f"rank {rank}'s {phase} runs only {max(gpu, 0.0):.1f} ms more GPU work per step "
                f"than the median rank: {host:.1f} ms of the excess is host time with the GPU idle"
                f"{gap}")
    return [{"text": text, "metric": f"phase.{phase}_gpu_excess_ms", "value": gpu, "unit": "ms"}]


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


def _replayed(what_if: Sequence[dict], rank: int) -> dict | None:
    """The job replay's ``straggler_fixed`` what-if of ``rank`` (None: not replayed)."""
    return next((w for w in what_if if w.get("id") == "straggler_fixed"
                 and w.get("rank") == rank and w.get("step_ms_after") is not None), None)


def _straggler_job(ranks: dict, verdicts: Mapping[int, str | None],
                   what_if: Sequence[dict] = ()) -> dict:
    s = (ranks.get("stragglers") or [])[0]
    rank, phase = int(s["rank"]), s.get("phase")
    cause = job_cause(ranks, s)
    code = _straggler_verdict(verdicts.get(rank), phase, cause)
    excess = s.get("phase_excess_ms")
    n_other = int(ranks.get("count") or len(verdicts)) - 1
    waits = ("in collectives" if phase != "communication" else "")
    excess_txt = f"{excess:,.0f} ms" if excess is not None else "time"
    headline = (f"{_title(code)} on rank {rank}: the other {n_other} rank"
                f"{'s' if n_other != 1 else ''} wait {excess_txt} per step {waits}".rstrip()
                + (f" while rank {rank} is in {phase}" if phase else "")
                + (" (host time, not GPU work)" if cause and cause["kind"] == "host" else ""))
    current, projected = _projection(ranks, s)
    replayed = _replayed(what_if, rank)
    if replayed is not None:  # the job replay prices the fix (the formula is its fallback)
        projected = float(replayed["step_ms_after"])
    others = Counter(v for k, v in verdicts.items() if k != rank)
    evidence = [
        {"text": f"rank {rank} loses {excess_txt} per step in {phase or '?'} against the median "
                 "rank", "metric": f"phase.{phase}_excess_ms", "value": excess, "unit": "ms"},
        {"text": f"rank {rank} reads {_title(verdicts.get(rank))}; the other ranks read "
                 + ", ".join(f"{_title(c)} ×{n}" for c, n in sorted(others.items(),
                                                                   key=lambda x: str(x[0]))),
         "metric": "verdicts", "value": None, "unit": ""},
        *_cause_evidence(rank, phase, cause),
    ]
    if replayed is not None:
        evidence.append({"text": f"job replay ({replayed['steps']} steps; barrier: "
                                 f"{replayed['barrier']}): {replayed['measured_ms']:.1f} ms per "
                                 "step now; "
                                 f"{projected:.1f} ms with rank {rank} at the median rank's "
                                 f"phase times (saves {replayed['saves_ms_per_step']:.1f} ms)",
                         "metric": "job.what_if.straggler_fixed.step_ms_after",
                         "value": projected, "unit": "ms"})
    elif current is not None and projected is not None:
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
            "bound_by": {"rank": rank, "phase": phase}, "basis": "straggler", "cause": cause,
            "current_step_ms": current, "projected_step_ms_if_fixed": projected,
            "evidence": evidence, "what_if": [dict(w) for w in what_if]}


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
            "bound_by": {"rank": bound_rank, "phase": top_phase}, "basis": basis, "cause": None,
            "current_step_ms": sp.get("max_ms"), "projected_step_ms_if_fixed": None,
            "evidence": evidence}


def job_verdict(ranks: dict | None, rows: Sequence[dict],
                what_if: Sequence[dict] = ()) -> dict:
    """``index.json`` → ``job`` from the cross-rank section (``analyze_ranks``) and the index rows
    (``rank``, ``verdict`` per trace).

    Keys: ``available``, ``reason``, ``verdict`` (a verdict code), ``headline``, ``bound_by``
    ``{rank, phase}``, ``basis`` (``straggler``/``common``/``most_expensive``), ``cause`` (a
    straggler's compute-phase excess: GPU compute or host time, ``job_cause``; else None),
    ``current_step_ms``, ``projected_step_ms_if_fixed``, ``evidence`` (``{text, metric, value,
    unit}``), ``what_if`` (the job replay's, ``job_replay.py``: ``straggler_fixed`` prices a
    straggler and then gives ``projected_step_ms_if_fixed``; without it the median-rank formula
    ``_projection`` does).
    """
    if not ranks or not ranks.get("available"):
        return _unavailable("no job: fewer than two traces with distinct ranks and steps")
    verdicts = {int(r["rank"]): r.get("verdict") for r in rows if r.get("rank") is not None}
    in_ranks = {int(r["rank"]) for r in ranks.get("rows") or []}
    verdicts = {k: v for k, v in verdicts.items() if k in in_ranks}
    if ranks.get("stragglers"):
        return _straggler_job(ranks, verdicts, what_if)
    return _common_job(ranks, verdicts)
