"""``nsys-diag analyze``: options → load → analyses → view → outputs.

``analyze_command(trace, **cli_kwargs)`` is what the CLI calls; it writes the requested files
(JSON, Markdown, HTML) and returns the terminal summary as lines. ``analyze_path`` /
``analyze_bundle`` return the view dict without writing anything (``batch``/``compare`` use
them). Option formats: ``app/options.py``; the memory plan (whole, middle window or streamed,
decided once per input): ``app/memory_policy.py``.

Imports of the loaders, analyses and report happen inside the functions (perf, bench: the CLI
imports this module for ``analyze`` only, and the analyses' imports overlap the SQLite reads).
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from nsys_diag.app.background import BackgroundImports, import_in_background
from nsys_diag.app.memory_policy import STREAM, MemoryPlan, check_memory, plan_memory
from nsys_diag.app.options import build_options, load_thresholds
from nsys_diag.app.outputs import STDOUT, emit, to_stdout, write_file, write_html_report
from nsys_diag.loaders.load_request import LoadRequest
from nsys_diag.loaders.sniff import Format
from nsys_diag.model.clock import now_utc
from nsys_diag.model.errors import InputError, UsageError
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import HINT_REEXPORT

if TYPE_CHECKING:  # perf (bench): model.bundle imports pandas, which must wait for the prefetch
    from nsys_diag.model.bundle import LoadWarning

SUITE_MODULE = "nsys_diag.analyses.suite"
VIEW_MODULE = "nsys_diag.report.view"


def analyze_bundle(bundle, options: AnalyzeOptions, th: Thresholds, generated_at: str,
                   imports: BackgroundImports | None = None) -> dict:
    """The view dict of an already loaded bundle. ``imports``: the background imports started
    while it was loaded (``load_and_import``); an error they hit is raised here."""
    return analyze_bundle_with_suite(bundle, options, th, generated_at, imports)[1]


def analyze_bundle_with_suite(bundle, options: AnalyzeOptions, th: Thresholds, generated_at: str,
                              imports: BackgroundImports | None = None):
    """``(suite, view)``: the ``AnalysisSuite`` behind the view as well as the view dict (the
    Python API's frames come from the suite; ``analyze_bundle`` keeps the view only)."""
    get = imports.module if imports is not None else importlib.import_module
    suite = get(SUITE_MODULE).run_suite(bundle, options, th)
    from nsys_diag.app.replay import attach_replays, export_rows

    attach_replays(str(bundle.meta.path), suite, bundle, fmt=bundle.meta.format,
                   export_rows=export_rows(bundle.meta.tables))
    view = get(VIEW_MODULE).build_view(bundle.meta, suite, generated_at=generated_at,
                                       options=options)
    return suite, view


def load_and_import(path: str, options: AnalyzeOptions, plan: MemoryPlan | None = None):
    """Load ``path`` (and ``options.ncu_path``) the way ``analyze`` does — without the kernel
    columns no analysis reads (read with ``--ncu``: the join compares launch configurations),
    with ``--window`` or the plan's middle window pushed down into the reads
    (``loaders/read_window.py``), after the ``--max-memory`` check (``ResourceLimitError``) —
    while the analyses are imported in the background. ``plan``: the memory plan
    (``app/memory_policy.plan_memory``; made here when not given), read in memory whatever its
    kind. Returns ``(bundle, imports)``."""
    from nsys_diag.loaders.prefetch import clear_prefetch, start_prefetch

    plan = (plan or plan_memory(str(path), options)).in_memory()
    check_memory(str(path), plan, options.max_memory_bytes)
    request = load_request(options, plan)
    if plan.fraction is None and options.window_ns is None and plan.format is Format.NSYS_SQLITE:
        start_prefetch(path, request.kernel_detail)  # perf (bench): the big reads run while pandas is imported
    try:
        from nsys_diag.loaders import load_trace

        imports = import_in_background(SUITE_MODULE, VIEW_MODULE)
        bundle = load_trace(path, request)
        check_window_in_capture(path, bundle, options, plan.fraction)
        return bundle, imports
    finally:
        clear_prefetch(path)


def load_request(options: AnalyzeOptions, plan: MemoryPlan) -> LoadRequest:
    """What ``analyze`` asks the loader for under ``plan``: ``--ncu``, ``--window`` or the middle
    window, and — perf (bench) — the kernels' stream/context/launch configuration only with
    ``--ncu`` (the ncu join compares grid/block; no other analysis reads them)."""
    return LoadRequest(ncu=options.ncu_path, kernel_detail=options.ncu_path is not None,
                       time_window=options.window_ns, row_fraction=plan.fraction,
                       format=plan.format)


def check_window_in_capture(path: str, bundle, options: AnalyzeOptions, fraction) -> None:
    """``--window`` outside the capture is a ``UsageError`` quoting the capture span. Costs
    nothing when the window holds events; otherwise (rare, an error path) the export is read
    again without the window to learn its span when its metadata does not record it."""
    if options.window_ns is None:
        return
    from nsys_diag.analyses.selection import capture_span, check_window, event_span

    if event_span(bundle) is not None:
        return
    whole = bundle
    if bundle.meta.capture_end_ns <= bundle.meta.capture_start_ns:
        from nsys_diag.loaders import load_trace

        whole = load_trace(path, LoadRequest(kernel_detail=False, row_fraction=fraction))
        check_window(options.window_ns, capture_span(whole), event_span(whole))
    else:
        check_window(options.window_ns, capture_span(bundle))


def load_for_analysis(path: str, options: AnalyzeOptions):
    """The bundle of ``load_and_import`` (the background imports left to finish on their own)."""
    return load_and_import(path, options)[0]


def analyze_path(path: str, options: AnalyzeOptions | None = None, th: Thresholds | None = None,
                 generated_at: str | None = None) -> dict:
    """Load ``path`` (and ``options.ncu_path``), analyse, return the view dict. Writes nothing."""
    options = options or AnalyzeOptions()
    th = th or Thresholds()
    return analyze_path_with_suite(path, options, th, generated_at)[1]


def analyze_path_with_suite(path: str, options: AnalyzeOptions | None = None,
                            th: Thresholds | None = None, generated_at: str | None = None):
    """``(suite, view)`` of ``path`` (``analyze_path`` with the suite kept). Writes nothing.
    The memory plan (``plan_memory``) is made once: streamed, or read whole / its middle."""
    options = options or AnalyzeOptions()
    th = th or Thresholds()
    plan = plan_memory(str(path), options)
    unstreamable: list[str] = []
    if plan.kind == STREAM and plan.chunk_rows is not None:
        from nsys_diag.app.stream import rowid_less_tables

        unstreamable = rowid_less_tables(str(path))
        done = None if unstreamable else _analyze_streamed(
            str(path), options, th, generated_at or now_utc(), plan)
        if done is not None:
            return done
    bundle, imports = load_and_import(path, options, plan)
    if unstreamable:
        bundle.warnings.append(_not_streamed_warning(unstreamable))
    return analyze_bundle_with_suite(bundle, options, th, generated_at or now_utc(), imports)


def _not_streamed_warning(tables: list[str]) -> LoadWarning:
    """The note of a stream that fell back to the in-memory read (``WITHOUT ROWID`` tables)."""
    from nsys_diag.model.bundle import LoadWarning

    return LoadWarning(
        "not_streamed", f"read in memory instead of streamed: {', '.join(tables)} "
        f"{'is a WITHOUT ROWID table' if len(tables) == 1 else 'are WITHOUT ROWID tables'} "
        "(no rowid ranges to read chunk by chunk)", len(tables), HINT_REEXPORT)


def _analyze_streamed(path: str, options: AnalyzeOptions, th: Thresholds, generated_at: str,
                      plan: MemoryPlan):
    """``(suite, view)`` of an export analysed chunk by chunk; None when there is nothing to
    stream (no GPU work, no NVTX: the in-memory run analyses the whole bundle)."""
    from nsys_diag.app.stream import analyze_streamed, chunk_share

    chunk_rows = int(plan.chunk_rows or 0)
    # --max-memory stays a refusal, checked against one chunk's share of the export
    check_memory(path, plan, options.max_memory_bytes, chunk_share(path, chunk_rows))
    done = analyze_streamed(path, options, th, chunk_rows)
    if done is None:
        return None
    suite, meta = done  # the replays attached (``analyze_streamed``)
    view = importlib.import_module(VIEW_MODULE).build_view(meta, suite, generated_at=generated_at,
                                                            options=options)
    return suite, view


def analyze_path_with_bundle(path: str, options: AnalyzeOptions, th: Thresholds, generated_at: str):
    """``(bundle, suite, view)`` of ``path`` analysed in memory (``--trace-out`` needs the events).
    An export over the memory budget that would be streamed is refused (``UsageError``, before
    anything is read): its events never sit in memory at once; ``--memory-mode middle`` (its
    middle window that fits), ``--window`` or a larger ``--memory-budget`` analyse it in memory."""
    plan = plan_memory(str(path), options)
    if plan.kind == STREAM and plan.chunk_rows is not None:
        raise UsageError(f"--trace-out: {path} is over the memory budget and would be streamed, so its "
                         "events are never in memory at once (hint: add --memory-mode middle to write "
                         "the middle window that fits, narrow it with --window, or raise --memory-budget)")
    bundle, imports = load_and_import(path, options, plan)
    suite, view = analyze_bundle_with_suite(bundle, options, th, generated_at, imports)
    return bundle, suite, view


def write_trace_out(dest: str, bundle, suite, trace: str) -> str:
    """The Chrome-trace / Perfetto JSON of the analysed window (``report/chrome_trace.py``) into
    ``dest`` (atomically); returns ``dest``."""
    from nsys_diag.app.outputs import dumps
    from nsys_diag.report.chrome_trace import chrome_trace

    return write_file(dest, dumps(chrome_trace(bundle, suite, source=Path(trace).name), indent=None),
                      "the trace events")


def writes_html(json_out: str | None, md_out: str | None, html_out: str | None,
                no_html: bool) -> bool:
    """Whether ``analyze`` writes the HTML report: not with ``--no-html``; always with ``-o``;
    otherwise not when the JSON or the Markdown goes to stdout (``--json -``/``--md -``: a pipe
    such as ``| jq`` wants no file beside the trace), else beside the trace."""
    if no_html:
        return False
    return bool(html_out) or STDOUT not in (json_out, md_out)


def analyze_command(trace: str, *, json_out=None, md_out=None, html_out=None, no_html=False,
                    thresholds_path=None, trace_out=None, **kw) -> list[str]:
    """``nsys-diag analyze``: write the requested outputs, return the terminal summary lines.

    ``json_out``/``md_out``: a path or ``-`` (stdout); the HTML report goes to ``html_out``, else
    beside the trace, unless ``no_html`` or machine output on stdout without ``html_out``
    (``writes_html``). ``trace_out``: a Chrome-trace / Perfetto JSON file of the analysed window
    (in-memory runs only: ``analyze_path_with_bundle``). ``kw``: the raw analysis options
    (``build_options``).
    """
    if Path(trace).is_dir():
        raise InputError(trace, "is a directory, not a trace",
                         "pass one .sqlite export (use `nsys-diag batch DIR` for directories)")
    th = load_thresholds(thresholds_path)
    options = build_options(**kw)
    if trace_out == STDOUT:
        raise UsageError("--trace-out takes a file (hint: --trace-out run.trace.json, then open it in "
                         "ui.perfetto.dev)")
    if trace_out:
        bundle, suite, view = analyze_path_with_bundle(trace, options, th, now_utc())
    else:
        view = analyze_path(trace, options, th, now_utc())
    # perf (bench): the report modules import pandas, which waits until the big reads have started
    from nsys_diag.report.json_out import to_json
    from nsys_diag.report.text import render_text

    lines = render_text(view).rstrip("\n").split("\n")
    if trace_out:
        lines.append(f"trace events: {write_trace_out(trace_out, bundle, suite, trace)}")
    if json_out == STDOUT:
        to_stdout(to_json(view))
    elif json_out:
        lines.append(f"json: {write_file(json_out, to_json(view), 'the JSON')}")
    if md_out:
        from nsys_diag.report.markdown import render_markdown  # perf: only when asked for

        md = render_markdown(view)
        if md_out == STDOUT:
            emit(md, STDOUT)
        else:
            lines.append(f"markdown: {write_file(md_out, md, 'the Markdown')}")
    if writes_html(json_out, md_out, html_out, no_html):
        from nsys_diag.report.html_report import render_html  # perf: jinja2 only when asked for

        write_html_report(render_html(view), trace, html_out, lines)
    return lines
