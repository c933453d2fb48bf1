"""``nsys-diag compare BASELINE CANDIDATE``: before/after step times with statistics.

Each side is one trace or a directory of runs (``app/discovery.py``); every trace is analysed
through the same cached scheduler as ``batch`` (``--no-cache``: re-analyse all). The comparison
itself (bootstrap confidence interval, Mann-Whitney) is ``analyses.batch_summary.compare_runs``.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable

from nsys_diag._version import __version__
from nsys_diag.app.discovery import TraceInput, classify, discover
from nsys_diag.app.outputs import dumps, emit, write_text
from nsys_diag.app.scheduling import TraceResult, run_traces
from nsys_diag.model.clock import now_utc
from nsys_diag.model.errors import EXIT_NOT_EVALUABLE, EXIT_OK, EXIT_REGRESSION, InputError
from nsys_diag.model.jsonsafe import jsonable
from nsys_diag.model.thresholds import DEFAULT_THRESHOLDS, Thresholds
from nsys_diag.report.command_schemas import COMPARE_SCHEMA_VERSION

Echo = Callable[[str], None]


def _side(path: str, role: str) -> tuple[list[TraceInput], list[dict]]:
    """The traces (and ignored files) of one side: a trace file, or a directory of runs."""
    p = Path(path)
    if not p.exists():
        raise InputError(p, "no such file or directory",
                         f"check the {role} path: a trace file (.sqlite, .nsys-rep, ncu .csv) or a directory of runs")
    if p.is_file():
        return [TraceInput(p, p.name, classify(p) or "sqlite")], []
    found = discover([p])
    if not found.traces:
        raise InputError(p, f"no traces found in the {role} directory",
                         "compare takes a trace or a directory of traces (runs) per side")
    return found.traces, found.ignored


def _skipped(sides) -> list[dict]:
    """The skipped traces of both sides; ``InputError`` when a side has no usable trace."""
    skipped = []
    for role, path, side in sides:
        bad = [r for r in side if not r.ok]
        for r in bad:
            skipped.append({"side": role, "label": r.trace.label, "reason": r.reason,
                            "hint": r.hint})
        if len(bad) == len(side):
            first = bad[0]
            raise InputError(first.trace.path if len(side) == 1 else path,
                             first.reason if len(side) == 1 else
                             f"no usable trace in the {role} (first: {first.trace.label}: "
                             f"{first.reason})", first.hint or None)
    return skipped


def _describe(path: str, side: list[TraceResult], ignored: list[dict]) -> dict:
    p = Path(path)
    steps = sum(len((r.summary or {})["per_step"]["duration_ms"]) for r in side)
    return {"path": p.name or str(p), "kind": "directory" if p.is_dir() else "trace",
            "runs": len(side), "steps": steps,
            "traces": [r.trace.label for r in side],
            "verdicts": [(r.summary or {}).get("verdict") for r in side],
            "ignored": ignored,
            # the samples behind the compare page's distribution chart (all runs pooled)
            "step_ms": [x for r in side for x in (r.summary or {})["per_step"]["duration_ms"]],
            "window_busy": [x for r in side
                            for x in (((r.summary or {}).get("window_bins") or {}).get("busy") or [])]}


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def gate_with_skipped_runs(result: dict, skipped: list[dict]) -> dict:
    """``result`` with a gate that *passed* while some runs could not be read turned into a
    gate that is not evaluable (a pass decided on the readable runs alone could hide the
    regression in the others); a regression found stays a regression."""
    gate = result["gate"]
    if not skipped or gate.get("requested_pct") is None or not gate.get("passed"):
        return result
    sides = sorted({s["side"] for s in skipped})
    reason = (f"{len(skipped)} run(s) on the {' and '.join(sides)} side could not be analysed "
              f"(first: {skipped[0]['label']}: {skipped[0]['reason']})")
    notes = [*result.get("notes", []), f"--fail-on-regression could not be evaluated: {reason}"]
    return {**result, "gate": {**gate, "evaluated": False, "passed": None, "reason": reason},
            **({"notes": notes} if "notes" in result else {})}


def gate_exit_code(gate: dict, allow_unevaluable: bool) -> int:
    """0, 5 (regression beyond the gate) or 7 (gate requested but not evaluable; 0 with
    ``allow_unevaluable``)."""
    if gate.get("requested_pct") is None:
        return EXIT_OK
    if not gate.get("evaluated"):
        return EXIT_OK if allow_unevaluable else EXIT_NOT_EVALUABLE
    return EXIT_OK if gate.get("passed") else EXIT_REGRESSION


def compare_command(baseline: str, candidate: str, *, fail_on_regression: float | None = None,
                    html_out: str | None = None, json_out: str | None = None,
                    md_out: str | None = None, seed: int = 0, echo: Echo = print,
                    th: Thresholds | None = None, generated_at: str | None = None,
                    jobs: int | None = None, use_cache: bool = True,
                    allow_unevaluable: bool = False, err: Echo = _stderr) -> int:
    """Compare BASELINE and CANDIDATE (each a trace or a directory of runs).

    Returns 0, 5 (``EXIT_REGRESSION``) when ``fail_on_regression`` is set and the candidate's
    step time is slower by more than that many percent with confidence, or 7
    (``EXIT_NOT_EVALUABLE``) when the gate was requested but cannot be evaluated (no steps on a
    side, no confidence interval, an incomparable pair — ``gate.reason``, also written to
    ``err``); ``allow_unevaluable`` turns 7 into 0 with the same note. ``use_cache=False``
    (``--no-cache``) re-analyses every trace.
    """
    from nsys_diag.analyses.job.batch_summary import compare_runs
    from nsys_diag.report.compare_render import (
        render_compare_html,
        render_compare_markdown,
        render_compare_text,
    )

    th = th or DEFAULT_THRESHOLDS
    generated_at = generated_at or now_utc()
    base_traces, base_ignored = _side(baseline, "baseline")
    cand_traces, cand_ignored = _side(candidate, "candidate")
    all_traces = base_traces + cand_traces
    results = run_traces(all_traces, th=th, generated_at=generated_at,
                         jobs=jobs or min(os.cpu_count() or 1, len(all_traces)),
                         use_cache=use_cache, echo=echo, progress_label="compare")
    base_res, cand_res = results[: len(base_traces)], results[len(base_traces):]
    skipped = _skipped((("baseline", baseline, base_res), ("candidate", candidate, cand_res)))
    b_ok = [r for r in base_res if r.ok]
    c_ok = [r for r in cand_res if r.ok]
    result = compare_runs([r.summary or {} for r in b_ok], [r.summary or {} for r in c_ok], seed=seed,
                          fail_pct=fail_on_regression, min_comparability=th.comparability_min_score)
    result = gate_with_skipped_runs(result, skipped)
    exit_code = gate_exit_code(result["gate"], allow_unevaluable)
    result["gate"] = {**result["gate"], "allow_unevaluable": bool(allow_unevaluable),
                      "exit_code": exit_code}
    doc = jsonable({
        "schema_version": COMPARE_SCHEMA_VERSION,
        "kind": "compare",
        "tool": {"name": "nsys-diag", "version": __version__},
        "generated_at": generated_at,
        "baseline": _describe(baseline, b_ok, base_ignored),
        "candidate": _describe(candidate, c_ok, cand_ignored),
        **result,
        "skipped": skipped,
        "exit_code": exit_code,
    })
    for line in render_compare_text(doc):
        echo(line)
    gate = doc["gate"]
    if fail_on_regression is not None and not gate["evaluated"]:
        word = ("allowed by --allow-unevaluable, exit 0" if allow_unevaluable
                else f"exit {EXIT_NOT_EVALUABLE}")
        err(f"nsys-diag: gate --fail-on-regression {fail_on_regression:g}% not evaluable "
            f"({word}): {gate['reason']}")
    if html_out:
        write_text(Path(html_out), render_compare_html(doc), what="the HTML report")
    emit(dumps(doc), json_out, what="the JSON")
    emit(render_compare_markdown(doc), md_out, what="the Markdown")
    return exit_code
