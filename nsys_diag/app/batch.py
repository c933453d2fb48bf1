"""``nsys-diag batch DIRS…``: every trace under DIRS, in parallel, cached; one report each
(``<label>.nsys-diag.json``/``.html`` in OUTDIR) plus an index (``index.json``/``.md``/``.html``).

discovery (``app/discovery.py``) → per-trace analysis with a content-hash cache
(``app/scheduling.py``, ``app/cache.py``) → reports as results arrive → index
(``app/batch_index.py``). A trace that cannot be analysed is *skipped* with its reason; the batch
goes on and exits 4.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from nsys_diag.app.batch_index import build_index, report_paths
from nsys_diag.app.discovery import discover
from nsys_diag.app.outputs import dumps, emit, make_output_dir, write_text
from nsys_diag.app.scheduling import TraceResult, run_traces
from nsys_diag.model.clock import now_utc
from nsys_diag.model.errors import InputError
from nsys_diag.model.text import terminal_line
from nsys_diag.model.thresholds import DEFAULT_THRESHOLDS, Thresholds

MESSAGE_CHARS = 300
Echo = Callable[[str], None]


def _safe(text: object) -> str:
    return terminal_line(text, MESSAGE_CHARS)


def _summary_lines(index: dict, out: Path, problems: Sequence[str]) -> list[str]:
    """What ``batch`` says on stderr when it has finished."""
    c = index["counts"]
    lines = [f"nsys-diag batch: {c['ok']} of {c['found']} traces analysed "
             f"({c['from_cache']} from cache), {c['skipped']} skipped"
             + (f", {c['ignored']} ignored" if c["ignored"] else "")
             + f" → {_safe(out / 'index.html')}"]
    job = index.get("job") or {}
    if job.get("available"):
        lines.append(f"  job: {job['verdict']} — {_safe(job['headline'])}")
    for r in index["skipped"]:
        lines.append(f"  skipped {_safe(r['label'])}: {_safe(r['reason'])}"
                     + (f" (hint: {_safe(r['hint'])})" if r["hint"] else ""))
    lines += [f"  warning: {p}" for p in problems]
    ranks = index.get("ranks")
    if ranks and ranks.get("available"):
        for s in ranks.get("stragglers", []):
            lines.append(f"  straggler: rank {s['rank']} ({_safe(s['label'])}), "
                         f"loses time in {s['phase'] or '?'}")
    return lines


def batch_command(dirs: Sequence[str], *, jobs: int | None = None, scheduler: str | None = None,
                  use_dask: bool = False, outdir: str = "nsys-diag-batch", use_cache: bool = True,
                  json_out: str | None = None, md_out: str | None = None,
                  echo: Echo = print, th: Thresholds | None = None,
                  generated_at: str | None = None) -> int:
    """Analyse every trace under ``dirs``; per-trace reports + index in ``outdir``; ``echo``
    gets the summary line, the per-trace table (trace, verdict, confidence, median step), then
    the skipped inputs, warnings and stragglers.

    Returns the exit code: 0, or 4 when some inputs were skipped.
    """
    from nsys_diag.report.batch_render import (
        render_index_html,
        render_index_markdown,
        render_index_text,
        render_trace_html,
    )

    th = th or DEFAULT_THRESHOLDS
    generated_at = generated_at or now_utc()
    out = Path(outdir)
    found = discover(dirs, exclude=[out])
    if not found.traces:
        raise InputError(", ".join(str(d) for d in dirs), "no traces found",
                         "batch looks for nsys .sqlite exports, ncu .csv files and .nsys-rep "
                         "reports (recursively)")
    make_output_dir(out)
    paths = report_paths([t.label for t in found.traces])
    problems: list[str] = []

    def write_reports(res: TraceResult) -> None:
        if not res.ok or res.view is None:
            return
        base = out / paths[res.trace.label]
        try:
            write_text(base.with_name(base.name + ".json"), dumps(res.view))
            write_text(base.with_name(base.name + ".html"), render_trace_html(res.view))
        except Exception as exc:  # noqa: BLE001 - one broken report must not stop the batch
            problems.append(f"{_safe(res.trace.label)}: report not written "
                            f"({type(exc).__name__}: {_safe(exc)})")

    results = run_traces(found.traces, th=th, generated_at=generated_at, jobs=jobs,
                         scheduler=scheduler, use_dask=use_dask, use_cache=use_cache, echo=echo,
                         on_result=write_reports)
    index = build_index(found, results, paths, problems, th, generated_at)
    write_text(out / "index.json", dumps(index), what="the index")
    md = render_index_markdown(index)
    write_text(out / "index.md", md, what="the index")
    try:
        write_text(out / "index.html", render_index_html(index))
    except Exception as exc:  # noqa: BLE001
        problems.append(f"index.html not written ({type(exc).__name__}: {_safe(exc)})")
    emit(dumps(index), json_out, what="the JSON")
    emit(md, md_out, what="the Markdown")
    summary = _summary_lines(index, out, problems)
    head = 2 if summary[1:2] and summary[1].startswith("  job: ") else 1  # the job's answer first
    for line in summary[:head] + render_index_text(index) + summary[head:]:
        echo(line)
    return index["exit_code"]
