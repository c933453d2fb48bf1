"""Which what-if of the replay prices which finding: the one map the verdict and the report share.

The replay (``analyses/replay/whatif.py``) names, for each what-if, the finding cause it prices
(``WhatIf.finding``). Two rules complete that:

* ``PREFERRED_WHAT_IF`` — a cause priced by more than one what-if takes the one its advice
  achieves (``input``: ``overlapped_input``, the loader overlapped with compute, not the
  instant input of ``instant_input``);
* ``PRICED_AS`` — a finding cause priced by the what-if of another cause name
  (``exposed_communication``: the collectives hidden behind backward, ``hidden_communication``,
  whose cause is ``communication``).

A new cause/what-if pair is one entry: the what-if's ``finding`` in ``WHAT_IFS``, plus a line
here only when it is a second price of a cause or priced under another name.

``savings_of(replay)`` turns a replay result (or its ``what_if`` JSON rows) into
``{finding cause: Saving}``; ``made_of(replay)`` the critical path by kind (what the step waits
on). Both read the replay duck-typed (``to_json()``), so this module imports no replay code.
All times are milliseconds per analysed step, shares fractions of the mean analysed step (the
replay weighs each replayed step's saving by the analysed steps of its kind:
``replay/whatif.summarise``). A replay without steps (fidelity basis ``window``) prices the
replayed window instead: its savings are ms over the whole window, its shares fractions of the
measured window (``Saving.basis`` says which, for the words the verdict uses).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from nsys_diag.analyses.diagnosis.findings import Finding, context, ms_text
from nsys_diag.model.vocabulary import CRITICAL_PATH_KIND_LABELS

PREFERRED_WHAT_IF = {"input": "overlapped_input", "communication": "hidden_communication"}
"""The what-if that prices a cause with more than one (the one its advice achieves), among those
that changed something: one that had nothing to change in the trace gives way to one that did
(``communication``: no GPU collectives to overlap, but MPI calls the host blocks in —
``instant_host_communication``)."""
PRICED_AS = {"exposed_communication": "communication"}
"""Finding causes priced by the what-if of another cause name. ``host_cpu`` (the host's own
code after a sync) has no what-if of its own: deferring the sync (``no_host_sync``) does not
remove serial host code that consumes a GPU result, so that finding decides by its measured
cost (``replay.unpriced``); the deferred sync bounds its saving from above (``UPPER_BOUND``)."""
UPPER_BOUND = {"host_cpu": "no_host_sync"}
"""Unpriced finding causes whose fix a what-if of another cause bounds from above: the host's
own code after a sync can at best overlap the GPU's work, which is what deferring every sync to
the window/step end (``no_host_sync``) replays — an upper bound, since code that needs the
sync's result cannot run ahead of it. Shown beside the finding ("not priced … up to"), never
used to choose the verdict."""
UNPRICED_WHY = {"host_cpu": "no what-if of the replay removes the host's own code",
                "startup": "start-up is one-off: its fix is a capture of the steady state, not a "
                           "change to the run that the replay could price"}
"""Why a fired cause has no price, where a cause has its own reason (else ``UNPRICED``)."""
UNPRICED = "no what-if of the replay changes this cause in this trace"
PARTIAL_REPLAY_SHARE = 0.005
"""A replay without steps that covers less of the analysed window than 1 − this (its operation
budget for a large export: ``app/replay.op_budget``) says which part its figures are of."""


def covers_part_of(window_ms: float | None, replayed_ms: float | None) -> bool:
    """A window replay of ``replayed_ms`` covers only the start of the ``window_ms`` analysed
    window (``PARTIAL_REPLAY_SHARE``); False when either is unknown."""
    return (window_ms is not None and replayed_ms is not None
            and window_ms > replayed_ms * (1 + PARTIAL_REPLAY_SHARE))


OUTCOMES = frozenset(("compute", "too_little_work"))
"""Finding causes that are outcomes, not costs: the GPU busy computing (the no-problem outcome)
and too little GPU work to judge (the abstention). Nothing is priced or 'not priced' for them:
there is no fix of the run to price."""


@dataclass(frozen=True)
class Saving:
    """One cause's price from the replay: the what-if, its mean saving per step (ms), the mean
    step after the change (ms), the saving as a share of the mean analysed step and its range
    over the replayed steps (ms)."""

    what_if: str
    change: str
    saves_ms: float
    step_ms_after: float
    saves_share: float
    saves_range_ms: tuple[float, float] = (0.0, 0.0)
    basis: str = "steps"
    """``steps``: per mean analysed step; ``window``: over the replayed window (no steps)."""
    changed: bool | None = None
    """The what-if applied to a replayed step (``None``: not recorded — rows written before the
    key existed; a saving above zero then stands for it)."""

    @property
    def per(self) -> str:
        """What the saving is of, in words: ``step`` or ``window``."""
        return "window" if self.basis == "window" else "step"

    @property
    def prices(self) -> bool:
        """The what-if changed something of its cause in a replayed step, so its saving —
        zero included — is the cause's price (a what-if with nothing to change — no
        collectives for ``hidden_communication`` — prices nothing). Rows without ``changed``:
        a saving above zero in at least one replayed step."""
        if self.changed is not None:
            return self.changed or self.saves_range_ms[1] > 0
        return self.saves_range_ms[1] > 0

    def not_limiting(self, min_share: float) -> bool:
        """The replay made the change and the step stayed (almost) as long: it saves less than
        ``min_share`` of the step — the step does not wait on this cause in this trace."""
        return self.prices and self.saves_share < min_share


def _rows(replay: Any) -> list[dict]:
    """The what-if rows of a replay result (none when it is unavailable or absent)."""
    if replay is None:
        return []
    if isinstance(replay, (list, tuple)):
        return [dict(w) for w in replay]
    if not getattr(replay, "available", False):
        return []
    return list(replay.to_json().get("what_if", []) or [])


def _basis(replay: Any) -> str:
    """The replay's fidelity basis (``steps`` when unknown: rows given as a list)."""
    if replay is None or isinstance(replay, (list, tuple)):
        return "steps"
    fid = replay.to_json().get("fidelity") or {} if getattr(replay, "available", False) else {}
    return "window" if fid.get("basis") == "window" else "steps"


def _saving(w: dict, basis: str = "steps") -> Saving:
    saves = float(w["saves_ms_per_step"])
    lo, hi = (list(w.get("saves_range_ms") or ()) + [saves, saves])[:2]
    changed = w.get("changed")
    return Saving(what_if=str(w["id"]), change=str(w.get("change", "")), saves_ms=saves,
                  step_ms_after=float(w["step_ms_after"]), saves_share=float(w["saves_share"]),
                  saves_range_ms=(float(lo), float(hi)), basis=basis,
                  changed=None if changed is None else bool(changed))


def _preferred(w: dict, over: dict) -> bool:
    """Row ``w`` prices its cause instead of ``over``: it changed something where ``over`` did
    not, or both did (or neither) and it is the cause's ``PREFERRED_WHAT_IF``."""
    w_changed, over_changed = w.get("changed") is not False, over.get("changed") is not False
    if w_changed != over_changed:
        return w_changed
    return PREFERRED_WHAT_IF.get(str(w["finding"])) == w["id"]


def savings_of(replay: Any) -> dict[str, Saving]:
    """``{finding cause: Saving}`` from a replay (``ReplayResult``, or its ``what_if`` rows):
    one what-if per cause (``_preferred`` when a cause has several, else the first),
    then the ``PRICED_AS`` aliases. Empty when the replay is unavailable."""
    chosen: dict[str, dict] = {}
    for w in _rows(replay):  # one row per what-if (about ten)
        cause = str(w["finding"])
        if cause not in chosen or _preferred(w, chosen[cause]):
            chosen[cause] = w
    basis = _basis(replay) if chosen else "steps"
    out = {cause: _saving(w, basis) for cause, w in chosen.items()}
    for alias, cause in PRICED_AS.items():
        if cause in out and alias not in out:
            out[alias] = out[cause]
    return out


def upper_bounds_of(replay: Any) -> dict[str, Saving]:
    """``{finding cause: Saving}`` of the ``UPPER_BOUND`` what-ifs that changed something in a
    replayed step and saved time (empty when the replay is unavailable)."""
    rows = {str(w["id"]): w for w in _rows(replay)}
    basis = _basis(replay) if rows else "steps"
    out = {cause: _saving(rows[wid], basis) for cause, wid in UPPER_BOUND.items() if wid in rows}
    return {c: s for c, s in out.items() if s.prices and s.saves_ms > 0}


def unpriced_reason(cause: str) -> str:
    """Why the replay gives ``cause`` no price, in words (``UNPRICED_WHY`` or ``UNPRICED``)."""
    return UNPRICED_WHY.get(cause, UNPRICED)


def made_of(replay: Any, top: int = 3) -> tuple[tuple[str, float, float], ...]:
    """The critical path summed by kind, largest first: ``(kind, ms per step, share)`` of the
    ``top`` kinds (empty when the replay is unavailable)."""
    if replay is None or not getattr(replay, "available", False):
        return ()
    acc: dict[str, list[float]] = {}
    for r in replay.to_json().get("critical_path", []) or []:  # a few dozen rows
        ms_share = acc.setdefault(str(r["kind"]), [0.0, 0.0])
        ms_share[0] += float(r["ms_per_step"])
        ms_share[1] += float(r["share"])
    rows = sorted(acc.items(), key=lambda kv: -kv[1][0])[:top]
    return tuple((k, v[0], v[1]) for k, v in rows)


def unavailable_reason(replay: Any) -> str:
    """Why there are no savings, in words."""
    if replay is None:
        return "the replay did not run"
    return str(getattr(replay, "reason", "") or "the replay is not available")


__all__ = ["PREFERRED_WHAT_IF", "PRICED_AS", "Saving", "made_of", "savings_of",
           "unavailable_reason"]


def not_limiting(f: Finding, savings: dict[str, Saving] | None, min_share: float) -> bool:
    """A fired finding the replay priced at less than ``min_share`` of the step: it made the
    change and the step stayed (almost) as long — the step does not wait on this cause here."""
    s = (savings or {}).get(f.cause)
    return f.fired and s is not None and s.not_limiting(min_share)


def as_not_limiting(f: Finding, s: Saving) -> Finding:
    """``f`` without advice, at severity ``info``, with the replay's reason as evidence
    (``replay.not_limiting``):
    its rule holds, but fixing it would not shorten the step (the time the step waits on lies
    elsewhere), so nothing is argued from it."""
    why = (f"the replay made this change ({s.change}) and the {s.per} stayed "
           f"{ms_text(s.step_ms_after)} ms: it saves {ms_text(s.saves_ms)} ms "
           f"({100 * s.saves_share:.1f}%) — the {s.per} does not wait on it")
    return replace(f, advice=(), severity="info",
                   evidence=f.evidence + (context("replay.not_limiting", why, "replay"),))


def per_of(savings: dict[str, Saving] | None) -> str:
    """What the replay's savings are of: ``step`` (mean analysed step) or ``window`` (a replay
    without steps prices the replayed window, ``Saving.basis``)."""
    return next((s.per for s in (savings or {}).values()), "step")


def made_of_words(made: tuple[tuple[str, float, float], ...]) -> str:
    """The critical path's top kinds (``made_of``) in words ("host CPU 52%, GPU compute 30%")."""
    return ", ".join(f"{CRITICAL_PATH_KIND_LABELS.get(k, k)} {100 * share:.0f}%"
                     for k, _, share in made)


def top_savings_words(savings: dict[str, Saving] | None, top: int = 3) -> str:
    """The largest what-if savings above zero in words, one per what-if."""
    seen = {s.what_if: s for s in (savings or {}).values() if s.saves_ms > 0}
    best = sorted(seen.values(), key=lambda s: -s.saves_ms)[:top]
    return ", ".join(f"{s.what_if} {ms_text(s.saves_ms)} ms ({100 * s.saves_share:.0f}%)"
                     for s in best)

