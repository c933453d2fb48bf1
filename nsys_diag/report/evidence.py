"""Evidence rows and findings as words, shared by the terminal, Markdown and HTML renderers.

An evidence row (``verdict.evidence[]``, ``findings[].evidence[]``) is either a *rule* — its own
condition, with whether it held: ``gpu.utilization = 79.8% — rule < 50%: not met`` — or
*context*, compared with nothing: ``gaps.transfer_share = 3% (context)``. A value is never printed
beside a bare ``(< 50%)`` it does not satisfy. Returned strings are plain text; each renderer
escapes them for its medium.
"""
from __future__ import annotations

from nsys_diag.analyses.diagnosis.findings import compare
from nsys_diag.model.jsonsafe import finite
from nsys_diag.report.formatting import fmt_ms, fmt_pct, fmt_value

SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}


def row_role(e: dict) -> str:
    """'rule' or 'context' (views older than the ``role`` key: by comparison/threshold)."""
    role = e.get("role")
    if role in ("rule", "context"):
        return role
    return "context" if e.get("comparison") in (None, "", "info") or e.get("threshold") is None else "rule"


def rule_text(e: dict) -> str:
    """``rule < 50%: met`` / ``not met`` (``rule < 50%`` when unknown); '' for a context row."""
    if row_role(e) != "rule":
        return ""
    metric = str(e.get("metric") or "")
    txt = f"rule {e.get('comparison')} {fmt_value(e.get('threshold'), metric)}"
    fired = e.get("fired")
    if fired is None and e.get("role") is None:  # a view older than the key: its own comparison
        fired = compare(e.get("value"), str(e.get("comparison")), e.get("threshold"))
    if fired is True:
        return txt + ": met"
    if fired is False:
        return txt + ": not met"
    return txt


def evidence_text(e: dict) -> str:
    """One row as a line: value, then its rule and whether it held, or ``(context)``."""
    metric = str(e.get("metric") or "")
    head = f"{metric} = {fmt_value(e.get('value'), metric)}"
    rule = rule_text(e)
    return f"{head} — {rule}" if rule else f"{head} (context)"


def finding_cost(f: dict) -> str:
    """``52% of the window · 420 ms/step`` (what is known)."""
    parts = []
    share = finite(f.get("share_of_window"))
    if share is not None:
        where = "of the step" if f.get("cause") == "exposed_communication" else "of the window"
        parts.append(f"{fmt_pct(share)} {where}")
    per = finite(f.get("per_step_ms"))
    if per is not None:
        parts.append(f"{fmt_ms(per)}/step")
    return " · ".join(parts)


def finding_saving(f: dict, step_ms: float | None = None) -> str:
    """What fixing a fired finding saves, from the replay: ``saves 98.8 ms/step (34%)`` (the
    share over ``step_ms``, the mean analysed step, when known; else the finding's own
    ``saves_share``), ``saves 54.2 ms of the window (35%)`` when the replay had no steps
    (``saves_basis`` ``window``), ``not priced: <saves_reason>`` — with ``; at most … (the
    <what-if> what-if)`` when another what-if bounds it — or '' (not fired, or no saving
    recorded). Plain text: each renderer escapes it."""
    if not f.get("fired") or ("saves_ms_per_step" not in f and not f.get("saves_reason")):
        return ""
    saves = finite(f.get("saves_ms_per_step"))
    bound = finite(f.get("saves_upper_bound_ms"))
    amount = saves if saves is not None else bound
    share = None
    if amount is not None:
        step = finite(step_ms) if f.get("saves_basis") != "window" else None
        share = amount / step if step and step > 0 else finite(f.get("saves_share"))
    pct = f" ({fmt_pct(share)})" if share is not None else ""
    of = " of the window" if f.get("saves_basis") == "window" else "/step"
    if saves is not None:
        return f"saves {fmt_ms(saves)}{of}{pct}"
    reason = str(f.get("saves_reason") or "no what-if of the replay prices this cause")
    if bound is not None:
        reason += (f"; at most {fmt_ms(bound)}{of}{pct} by the "
                   f"{f.get('saves_upper_bound_what_if')} what-if")
    return f"not priced: {reason}"


def fired_findings(view: dict) -> list[dict]:
    """Findings that fired, worst severity first then largest cost."""
    fs = [f for f in (view.get("findings") or []) if isinstance(f, dict) and f.get("fired")]
    return sorted(fs, key=lambda f: (SEVERITY_ORDER.get(str(f.get("severity")), 3),
                                     -(finite(f.get("share_of_window")) or 0.0)))


def unfired_summary(view: dict) -> str:
    """``checked, under threshold: sync 2%, launch 0%, …`` ('' when none)."""
    fs = [f for f in (view.get("findings") or []) if isinstance(f, dict) and not f.get("fired")
          and f.get("cause") != "compute"]  # compute is the no-problem outcome, not a cost
    if not fs:
        return ""
    parts = []
    for f in fs:
        share = finite(f.get("share_of_window"))
        parts.append(f"{str(f.get('cause') or '?').replace('_', ' ')}"
                     + (f" {fmt_pct(share)}" if share is not None else ""))
    return "checked, under threshold: " + ", ".join(parts)
