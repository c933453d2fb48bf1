"""The ``batch`` index: where each trace's report goes, one row per analysed trace, the
cross-rank section, and the index document (``index.json``; rendered by
``report/batch_render.py`` as ``index.md``/``index.html``)."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from nsys_diag._version import __version__
from nsys_diag.app.discovery import TRACE_SUFFIXES, Discovery
from nsys_diag.app.scheduling import TraceResult
from nsys_diag.model.errors import EXIT_OK, EXIT_PARTIAL_BATCH
from nsys_diag.model.jsonsafe import jsonable
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.report.batch_schema import INDEX_SCHEMA_VERSION  # noqa: F401 (re-exported)


def report_paths(labels: Sequence[str]) -> dict[str, str]:
    """Label → relative report base path (``dir/stem.nsys-diag``), unique, inside OUTDIR."""
    out, used = {}, set()
    for label in labels:
        parts = [p for p in Path(label).parts if p not in ("..", ".", "/", "")]
        parent = "/".join(parts[:-1])
        name = parts[-1] if parts else "trace"
        stem = name
        for suf in TRACE_SUFFIXES:
            if name.lower().endswith(suf):
                stem = name[: -len(suf)]
                break
        base = f"{parent}/{stem}" if parent else stem
        if base.lower() in used:
            base = f"{parent}/{name}" if parent else name
        n = 2
        while base.lower() in used:
            base = f"{parent}/{name}~{n}" if parent else f"{name}~{n}"
            n += 1
        used.add(base.lower())
        out[label] = base + ".nsys-diag"
    return out


def index_row(res: TraceResult, report_base: str | None, rank: int | None) -> dict:
    """One analysed trace's row of the index (shares 0..1, ``step_median_ms`` float ms)."""
    s = res.summary or {}
    steps = s.get("steps") or {}
    return {
        "label": res.trace.label,
        "kind": res.trace.kind,
        "format": s.get("format"),
        "verdict": s.get("verdict"),
        "headline": s.get("headline"),
        "confidence": s.get("confidence"),
        "steps": steps.get("analysed_count"),
        "step_median_ms": steps.get("median_ms"),
        "phase_shares": {c: v.get("share") for c, v in (s.get("phases") or {}).items()},
        "gpu_busy": s.get("gpu_busy"),
        "tensor_core_share": s.get("tensor_core_share"),
        "comm_ms_per_step": s.get("comm_ms_per_step"),
        "processes": len(s.get("processes") or []),
        "report_html": f"{report_base}.html" if report_base else None,
        "report_json": f"{report_base}.json" if report_base else None,
        "cached": res.cached,
        "sha256": res.sha256[:16],
        "rank": rank,
    }


def _rank_inputs(ok: Sequence[TraceResult]):
    """(``RankInput`` per trace with steps, the rank assignment), or None when the traces do not
    carry distinct rank identities."""
    from nsys_diag.analyses.job.batch_summary import rank_inputs
    from nsys_diag.analyses.job.ranks import RankId, assign_ranks, parse_rank_name

    if len(ok) < 2:
        return None
    evidence = []
    for r in ok:
        ev: list = [parse_rank_name(r.trace.label)]
        for e in (r.summary or {}).get("rank_evidence") or []:
            ev.append(RankId(e.get("rank"), e.get("local_rank"), e.get("node"),
                             str(e.get("source", "")), int(e.get("strength", 0))))
        evidence.append(ev)
    assignment = assign_ranks(evidence)
    if assignment.ranks is None:
        return None
    with_steps = [(r, k) for r, k in zip(ok, assignment.ranks)
                  if (r.summary or {}).get("per_step", {}).get("duration_ms")]
    inputs = rank_inputs([r.summary or {} for r, _ in with_steps], [k for _, k in with_steps],
                         [r.trace.label for r, _ in with_steps])
    return inputs, assignment


def build_ranks_section(ok: Sequence[TraceResult], th: Thresholds) -> dict | None:
    """Cross-rank section when ≥ 2 traces carry distinct rank identities (file names, the
    traces' environment or thread names); stragglers by MAD z-score (``th.outlier_mad_k``)."""
    from nsys_diag.analyses.job.ranks import analyze_ranks

    got = _rank_inputs(ok)
    if got is None:
        return None
    inputs, assignment = got
    result = analyze_ranks(inputs, z_cutoff=th.outlier_mad_k)
    result["source"] = assignment.source
    result["note"] = assignment.note
    result["assigned"] = {r.trace.label: k for r, k in zip(ok, assignment.ranks)}
    return result


def _job_section(ranks: dict | None, rows: Sequence[dict],
                 ok: Sequence[TraceResult] = ()) -> dict:
    """The job verdict (``analyses/job/job_verdict.py``): the straggler's cause, or the ranks'
    common one, a straggler priced by the job replay (``analyses/job/job_replay.py``)."""
    from nsys_diag.analyses.job.job_replay import job_what_ifs
    from nsys_diag.analyses.job.job_verdict import job_verdict

    what_if: list[dict] = []
    if ranks and ranks.get("available") and ranks.get("stragglers"):
        got = _rank_inputs(ok)
        if got is not None:
            what_if = job_what_ifs(got[0], ranks["stragglers"])
    return job_verdict(ranks, rows, what_if)


def _phase_columns(rows: Sequence[dict]) -> list[str]:
    """Phases with time in at least one trace, in canonical order."""
    from nsys_diag.analyses.job.batch_summary import phase_sort_key

    cols: list[str] = []
    for row in rows:
        for c, share in row["phase_shares"].items():
            if c not in cols and share:
                cols.append(c)
    cols.sort(key=phase_sort_key)
    return cols


def build_index(found: Discovery, results: Sequence[TraceResult], paths: dict[str, str],
                problems: list[str], th: Thresholds, generated_at: str) -> dict:
    """The JSON-safe index document of a batch run (a copy: ``problems`` found later are not
    in it); its JSON Schema: ``nsys_diag/schemas/batch_index.schema.json``
    (report/batch_schema.py)."""
    ok = [r for r in results if r.ok]
    skipped = [r for r in results if not r.ok]
    ranks = build_ranks_section(ok, th)
    assigned = (ranks or {}).get("assigned", {})
    rows = [index_row(r, paths[r.trace.label], assigned.get(r.trace.label)) for r in ok]
    index = {
        "schema_version": INDEX_SCHEMA_VERSION,
        "kind": "batch_index",
        "tool": {"name": "nsys-diag", "version": __version__},
        "generated_at": generated_at,
        "roots": found.roots,
        "counts": {"found": len(found.traces), "analysed": len(ok) - sum(r.cached for r in ok),
                   "from_cache": sum(r.cached for r in ok), "ok": len(ok),
                   "skipped": len(skipped), "ignored": len(found.ignored)},
        "phase_columns": _phase_columns(rows),
        "traces": rows,
        "skipped": [{"label": r.trace.label, "reason": r.reason, "hint": r.hint} for r in skipped],
        "ignored": found.ignored,
        "ranks": ranks,
        "job": _job_section(ranks, rows, ok),
        "problems": problems,
        "exit_code": EXIT_PARTIAL_BATCH if skipped else EXIT_OK,
    }
    return jsonable(index)
