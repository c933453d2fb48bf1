"""Orchestration of ``nsys-diag analyze``: options → load → analyses → view → outputs.

``analyze_command(trace, **cli_kwargs)`` is what the CLI calls; it writes the requested files
(JSON, Markdown, HTML) and returns the terminal summary as lines. ``analyze_path`` /
``analyze_bundle`` return the view dict without writing anything (used by ``batch``/``compare``).

Option formats
--------------
* ``--window START:END`` — session-timeline nanoseconds, or with a unit: ``12.5s``, ``300ms``,
  ``40us``/``40µs``, ``100ns``; an empty side means the capture's start/end (``60s:``).
* ``--steps FIRST:LAST`` — 0-based inclusive step indices; ``5:`` = from step 5 on, ``:9``.
* ``--max-memory SIZE`` — ``4G``, ``512M``, ``2GiB``, bytes without a unit. The peak memory of an
  analysis is estimated before anything is loaded (``estimate_memory``: ``BASE_MEMORY_BYTES`` +
  ``LOAD_MEMORY_FACTOR`` × an SQLite export's size; per CSV cell for ncu CSVs); a larger estimate
  is refused (exit 3) with the estimate and the limit in the message.
* ``--memory-budget SIZE|none`` — default 4 GiB. An nsys export whose estimated analysis needs
  more is read over the middle window of its timeline holding the share of kernel and API rows
  that fits (``memory_read_fraction``); ``none``/``0`` analyses the whole export whatever it
  needs. ``--max-memory`` is then checked against what will be read.
* ``--phase-map FILE`` / ``--thresholds FILE`` — TOML, see README "analyze".
"""
from __future__ import annotations

import datetime as _dt
import functools
import os
import re
import sys
from pathlib import Path

from nsys_diag.loaders.sniff import SQLITE_MAGIC, is_sqlite_file
from nsys_diag.model.errors import InputError, ResourceLimitError, UsageError
from nsys_diag.model.options import DEFAULT_MEMORY_BUDGET_BYTES, AnalyzeOptions
from nsys_diag.model.thresholds import Thresholds

LOAD_MEMORY_FACTOR = 3.0
"""Peak memory of analysing an SQLite export ≈ 3 × its file size on top of ``BASE_MEMORY_BYTES``
(measured peak RSS of ``analyze``: 2.6× on a 277 MB / 2M-kernel bench export, 2.9× on 69 MB)."""

BASE_MEMORY_BYTES = 150 * 2**20
"""Interpreter, numpy/pandas/pyarrow and the report code (measured 115 MiB before any input)."""

CSV_BYTES_PER_CELL = {"details": 100, "raw": 400}
"""Peak bytes per ncu CSV cell (measured 90 B for the long ``details`` page and 345 B for the wide
``raw`` page, which is melted into one row per cell)."""

_TIME_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?\d+)?)\s*(ns|us|µs|ms|s)?\s*$", re.IGNORECASE)
_UNIT_NS = {None: 1, "ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)


# ----------------------------------------------------------------------------------- parsing
def parse_time(text: str) -> int:
    """``"12.5s"`` → 12_500_000_000 ns; a bare number is nanoseconds."""
    m = _TIME_RE.match(text or "")
    if not m:
        raise UsageError(f"--window: cannot read time {text!r} (use ns, or e.g. 12.5s / 300ms)")
    unit = m.group(2).lower() if m.group(2) else None
    unit = "µs" if unit == "µs" else unit
    return int(round(float(m.group(1)) * _UNIT_NS[unit]))


def parse_window(text: str | None) -> tuple[int, int] | None:
    """``START:END`` → (start_ns, end_ns); an empty side is open (0 / a very large end)."""
    if text is None:
        return None
    if ":" not in text:
        raise UsageError(f"--window {text!r}: expected START:END (ns, or seconds with 's')")
    a, b = text.split(":", 1)
    start = parse_time(a) if a.strip() else 0
    end = parse_time(b) if b.strip() else 2**62
    if end <= start:
        raise UsageError(f"--window {text!r}: END must be after START")
    return start, end


def parse_steps(text: str | None) -> tuple[int, int] | None:
    """``FIRST:LAST`` (0-based, inclusive) → (first, last); ``last`` -1 means "to the end"."""
    if text is None:
        return None
    m = re.match(r"^\s*(\d*)\s*:\s*(\d*)\s*$", text)
    if not m or (not m.group(1) and not m.group(2)):
        raise UsageError(f"--steps {text!r}: expected FIRST:LAST step indices (e.g. 5:20)")
    first = int(m.group(1)) if m.group(1) else 0
    last = int(m.group(2)) if m.group(2) else -1
    if last != -1 and last < first:
        raise UsageError(f"--steps {text!r}: LAST must be ≥ FIRST")
    return first, last


def parse_size(text: str | None, what: str = "--max-memory") -> int | None:
    """``4G`` / ``512M`` / ``2GiB`` / ``1000000`` → bytes (binary multiples: 1G = 2**30)."""
    if text is None:
        return None
    m = _SIZE_RE.match(text)
    if not m:
        raise UsageError(f"{what} {text!r}: expected a size such as 4G or 512M")
    mult = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


def _read_toml(path: str, what: str) -> dict:
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise UsageError(f"{what} {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{what} {path}: not valid TOML ({exc})") from None


def load_phase_map(path: str | None):
    if path is None:
        return None
    from nsys_diag.analyses.phases import parse_phase_map

    return parse_phase_map(_read_toml(path, "--phase-map"))


def load_thresholds(path: str | None) -> Thresholds:
    if path is None:
        return Thresholds()
    data = _read_toml(path, "--thresholds")
    try:
        return Thresholds().with_overrides(**data)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--thresholds {path}: {exc}") from None


def parse_budget(text: str | None) -> int | None:
    """``--memory-budget``: a size, or ``none``/``off``/``0`` (no budget); unset: the default."""
    if text is None:
        return DEFAULT_MEMORY_BUDGET_BYTES
    if text.strip().lower() in ("none", "off", "unlimited", "0"):
        return None
    size = parse_size(text, "--memory-budget")
    if size is not None and size < BASE_MEMORY_BYTES:
        raise UsageError(f"--memory-budget {text!r}: below the {_gib(BASE_MEMORY_BYTES)} the tool "
                         "itself needs; use a larger size, or `none`")
    return size


def build_options(*, batch_size=None, phase_map=None, step_range=None, device=None, window=None,
                  steps_sel=None, ncu_path=None, include_host_info=False, max_rows=200,
                  max_memory=None, memory_budget=None, **_ignored) -> AnalyzeOptions:
    """AnalyzeOptions from the CLI's raw values (see module docstring for formats)."""
    return AnalyzeOptions(memory_budget_bytes=parse_budget(memory_budget),
        step_range=step_range, phase_map=load_phase_map(phase_map), batch_size=batch_size,
        device=device, window_ns=parse_window(window), steps=parse_steps(steps_sel),
        ncu_path=ncu_path, include_host_info=bool(include_host_info), max_rows=int(max_rows),
        max_memory_bytes=parse_size(max_memory))


def now_utc() -> str:
    """ISO-8601 UTC timestamp; ``SOURCE_DATE_EPOCH`` (reproducible builds) wins when set."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    t = (_dt.datetime.fromtimestamp(int(epoch), _dt.timezone.utc) if epoch and epoch.isdigit()
         else _dt.datetime.now(_dt.timezone.utc))
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------------- analysis
def estimate_memory(path: str) -> tuple[int, str] | None:
    """(bytes, how) of the input-dependent peak memory of analysing ``path``; None when the file
    cannot be read or is neither SQLite nor text (the loader then says why).

    Remembered per (path, size, mtime): the memory budget and ``--max-memory`` both ask, and an
    ncu CSV is estimated by scanning it whole."""
    p = Path(path)
    if p.name.lower().endswith((".nsys-rep", ".qdrep")):
        return None  # converted first; the exported SQLite is checked by its own size
    try:
        st = p.stat()
    except OSError:
        return None
    return _estimate_file(str(p), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _estimate_file(path: str, size: int, _mtime_ns: int) -> tuple[int, str] | None:
    """``estimate_memory`` of one version of a file (the cache key carries size and mtime)."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            head = fh.read(65536)
            if head.startswith(SQLITE_MAGIC):
                return (int(size * LOAD_MEMORY_FACTOR),
                        f"{LOAD_MEMORY_FACTOR:g} × the {_gib(size)} SQLite file")
            cells, block = head.count(b","), head
            while block:
                block = fh.read(1 << 22)
                cells += block.count(b",")
    except OSError:
        return None
    layout = "details" if b"Metric Name" in head else "raw"
    return (cells * CSV_BYTES_PER_CELL[layout],
            f"{cells:,} CSV cells × {CSV_BYTES_PER_CELL[layout]} B ({layout} page)")


def _gib(n: int) -> str:
    """Bytes for a message: ``512 KiB``, ``300 MiB``, ``2.50 GiB``."""
    for unit, k in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= k:
            return f"{n / k:.2f} {unit}" if unit == "GiB" else f"{n / k:.0f} {unit}"
    return f"{n} B"


def memory_read_fraction(path: str, options: AnalyzeOptions) -> float | None:
    """Share (0–1) of an nsys export's kernel and API rows to read so that the estimated analysis
    fits ``--memory-budget``; None: read everything (it fits, there is no budget, the input is
    not an SQLite export, or ``--window`` already chose the span). ``--max-memory`` stays a
    refusal (``_check_memory``), checked against what will actually be read."""
    budget = options.memory_budget_bytes
    if not budget or options.window_ns is not None or not is_sqlite_file(path):
        return None
    est = estimate_memory(path)
    if est is None or est[0] <= 0:
        return None
    ncu = estimate_memory(options.ncu_path) if options.ncu_path else None
    room = budget - BASE_MEMORY_BYTES - (ncu[0] if ncu else 0)
    if room >= est[0]:
        return None
    if room <= 0:
        return None  # not even the base fits: read everything (--max-memory may refuse)
    return room / est[0]


def _check_memory(path: str, limit: int | None, ncu_path: str | None = None,
                  fraction: float | None = None) -> None:
    """Refuse (``ResourceLimitError``) when the estimate of what will be read exceeds ``limit``
    (``fraction``: the share of the export's rows a memory window reads)."""
    if limit is None:
        return
    parts = [e for e in (estimate_memory(path), estimate_memory(ncu_path) if ncu_path else None)
             if e is not None]
    if not parts:
        return  # the loader reports unreadable paths with its own message
    if fraction is not None:
        parts[0] = (int(parts[0][0] * fraction), f"{fraction:.0%} of {parts[0][1]}")
    need = BASE_MEMORY_BYTES + sum(n for n, _ in parts)
    if need > limit:
        how = " + ".join(["base " + _gib(BASE_MEMORY_BYTES)] + [h for _, h in parts])
        raise ResourceLimitError(
            path, f"the analysis needs about {_gib(need)} of memory ({how}), more than "
            f"--max-memory {_gib(limit)}",
            "raise --max-memory, analyse a window that fits with --memory-budget SIZE (or "
            "--window), or export a shorter capture (nsys export --filter-time / capture fewer "
            "steps with --capture-range)")


def analyze_bundle(bundle, options: AnalyzeOptions, th: Thresholds, generated_at: str) -> dict:
    """The view dict of an already loaded bundle."""
    from nsys_diag.analyses.suite import run_suite
    from nsys_diag.report.view import build_view

    suite = run_suite(bundle, options, th)
    return build_view(bundle.meta, suite, generated_at=generated_at, options=options)


def _import_in_background(*modules: str) -> None:
    """Import ``modules`` on a daemon thread (perf, bench: the analyses' ~0.1 s of imports run
    while the loader's threads read SQLite; an import error surfaces later, where the module is
    imported for real)."""
    import importlib
    import threading

    def run() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # pragma: no cover - re-raised by the real import
                return

    threading.Thread(target=run, name="nsys-diag-import", daemon=True).start()


def load_for_analysis(path: str, options: AnalyzeOptions):
    """Load ``path`` (and ``options.ncu_path``) the way ``analyze`` does: without the kernel
    columns no analysis reads, with ``--window`` and the memory budget pushed down into the reads
    (``loaders/read_window.py``), after the ``--max-memory`` check (ResourceLimitError)."""
    from nsys_diag.loaders.prefetch import clear_prefetch, start_prefetch

    fraction = memory_read_fraction(str(path), options)
    _check_memory(str(path), options.max_memory_bytes, options.ncu_path, fraction)
    if fraction is None and options.window_ns is None and is_sqlite_file(str(path)):
        start_prefetch(path)  # perf (bench): the big reads run while pandas is imported
    try:
        from nsys_diag.loaders import load_trace

        _import_in_background("nsys_diag.analyses.suite", "nsys_diag.report.view")
        # perf (bench): no analysis reads the kernels' stream/context/launch configuration
        return load_trace(path, ncu=options.ncu_path, kernel_detail=False,
                          time_window=options.window_ns, row_fraction=fraction)
    finally:
        clear_prefetch(path)


def analyze_path(path: str, options: AnalyzeOptions | None = None, th: Thresholds | None = None,
                 generated_at: str | None = None) -> dict:
    """Load ``path`` (and ``options.ncu_path``), analyse, return the view dict. Writes nothing."""
    options = options or AnalyzeOptions()
    th = th or Thresholds()
    bundle = load_for_analysis(path, options)
    return analyze_bundle(bundle, options, th, generated_at or now_utc())


# ------------------------------------------------------------------------------------ output
def _write(dest: str, text: str, what: str) -> str:
    try:
        Path(dest).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {what} to {dest}: {exc.strerror or exc}") from None
    return dest


def _default_html_path(trace: str) -> Path:
    p = Path(trace)
    return p.with_name(p.stem + ".nsys-diag.html")


def _dir_writable(d: Path) -> bool:
    return d.is_dir() and os.access(d, os.W_OK | os.X_OK)


def _write_html(view: dict, trace: str, html_out: str | None, lines: list[str]) -> None:
    try:
        from nsys_diag.report.html import render_html
    except ModuleNotFoundError as exc:
        if exc.name not in ("nsys_diag.report.html",):
            raise
        lines.append("HTML report skipped: the HTML renderer is not part of this build")
        return
    html = render_html(view)
    if html_out:
        lines.append(f"report: {_write(html_out, html, 'the HTML report')}")
        return
    dest = _default_html_path(trace)
    if not _dir_writable(dest.parent):
        fallback = Path.cwd() / dest.name
        lines.append(f"note: {dest.parent} is not writable; writing the report to the current "
                     "directory")
        dest = fallback
    lines.append(f"report: {_write(str(dest), html, 'the HTML report')}")


def analyze_command(trace: str, *, json_out=None, md_out=None, html_out=None, no_html=False,
                    thresholds_path=None, **kw) -> list[str]:
    """``nsys-diag analyze``: write the requested outputs, return the terminal summary lines."""
    from nsys_diag.report.json_out import to_json
    from nsys_diag.report.text import render_text

    if Path(trace).is_dir():
        raise InputError(trace, "is a directory, not a trace",
                         "pass one .sqlite export (use `nsys-diag batch DIR` for directories)")
    th = load_thresholds(thresholds_path)
    options = build_options(**kw)
    view = analyze_path(trace, options, th, now_utc())
    lines = render_text(view).rstrip("\n").split("\n")
    if json_out == "-":
        sys.stdout.write(to_json(view))
        sys.stdout.flush()
    elif json_out:
        lines.append(f"json: {_write(json_out, to_json(view), 'the JSON')}")
    if md_out:
        try:
            from nsys_diag.report.markdown import render_markdown
        except ModuleNotFoundError as exc:
            if exc.name not in ("nsys_diag.report.markdown",):
                raise
            lines.append("Markdown skipped: the Markdown renderer is not part of this build")
        else:
            md = render_markdown(view)
            if md_out == "-":
                sys.stdout.write(md if md.endswith("\n") else md + "\n")
                sys.stdout.flush()
            else:
                lines.append(f"markdown: {_write(md_out, md, 'the Markdown')}")
    if not no_html:
        _write_html(view, trace, html_out, lines)
    return lines
