"""The Python API: ``analyze(path, …) -> Analysis`` and ``compare(baseline, candidate, …) ->
Comparison``, for notebooks and scripts (docs/api.md).

A top-level module like ``cli.py``: it calls ``app/`` and nothing imports it (the package's
``__init__`` exposes it lazily, so ``nsys-diag --help`` stays free of pandas). Each option takes
what the command line takes, or the Python value it stands for; a bad value is the same
``UsageError`` (exit code 2 on the command line), an unreadable input the same ``InputError``
(3) — the typed errors of ``model/errors.py``. Options are built by the command line's own
builder (``app/options.build_options``).
"""
from __future__ import annotations

import html as _html
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from nsys_diag.app import analyze as _analyze
from nsys_diag.app import options as _opts
from nsys_diag.app.outputs import atomic_write
from nsys_diag.model.clock import now_utc
from nsys_diag.model.errors import InputError, UsageError

__all__ = ["Analysis", "Comparison", "Verdict", "analyze", "compare"]

# -------------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Verdict:
    """The diagnosis: ``code`` (docs/JSON.md), ``headline``, ``confidence`` (high/medium/low),
    ``advice`` (``[{text, because}]``) and every ``findings`` row — the JSON's own dicts."""

    code: str
    headline: str
    confidence: str
    advice: tuple[dict, ...]
    findings: tuple[dict, ...]


def _iframe(doc: str, title: str) -> str:
    """The whole report in an iframe's escaped ``srcdoc`` (sandboxed; 85 % of the window high)."""
    return (f'<iframe title="{_html.escape(title)}" style="width:100%;height:85vh;border:0" '
            f'sandbox="allow-scripts" srcdoc="{_html.escape(doc, quote=True)}"></iframe>')


def _notebook_view(title: str, headline: str, facts: Sequence[str], items: Sequence[str],
                   doc: str, hint: str) -> str:
    """A Jupyter snippet that sizes to its content: a compact summary (title, headline, a few
    facts and advice lines, every value escaped), the full report one click away in a closed
    ``<details>`` (an iframe inside it), and how to write the report to a file."""
    esc = _html.escape
    fact_line = " · ".join(esc(f) for f in facts if f)
    rows = "".join(f"<li>{esc(i)}</li>" for i in items if i)
    return ('<div class="nsys-diag-summary" style="font:14px/1.5 system-ui,sans-serif;max-width:60em">'
            f'<div style="font-weight:700;font-size:1.15em">{esc(title)}</div>'
            f'<div>{esc(headline)}</div>'
            + (f'<div style="opacity:.75">{fact_line}</div>' if fact_line else "")
            + (f'<ol style="margin:.3em 0 .3em 1.2em;padding:0">{rows}</ol>' if rows else "")
            + f'<details><summary style="cursor:pointer">Full report</summary>{_iframe(doc, title)}</details>'
            f'<div style="opacity:.75;font-size:.9em">{esc(hint)}</div></div>')


def _write(path, text: str) -> None:
    """``text`` into ``path`` all or nothing (``app/outputs.atomic_write``: a temporary file
    renamed into place, a symlink there replaced, never followed); ``UsageError`` when it cannot."""
    try:
        atomic_write(Path(path), text.encode("utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


class Analysis:
    """What ``analyze`` found. ``view`` is the analysis JSON as a dict (docs/JSON.md); the
    frames cover every analysed process (column ``pid``); the JSON describes the headline one
    (``headline_pid``)."""

    def __init__(self, path: str, view: dict, suite: Any):
        self.path = path
        self.view = view
        self._suite = suite

    def __repr__(self) -> str:
        v = self.verdict
        return f"<Analysis {Path(self.path).name}: {v.code} ({v.confidence})>"

    @property
    def headline_pid(self) -> int:
        return int(self._suite.headline.pid)

    @property
    def verdict(self) -> Verdict:
        v = self.view.get("verdict") or {}
        return Verdict(code=v.get("code", ""), headline=v.get("headline", ""),
                       confidence=v.get("confidence", ""), advice=tuple(v.get("advice") or ()),
                       findings=tuple(self.view.get("findings") or ()))

    def _frames(self, build) -> pd.DataFrame:
        """``build(process)`` for every analysed process, with its ``pid``, in one frame."""
        parts = [build(p).assign(pid=int(p.pid)) for p in self._suite.processes]
        return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]

    @property
    def steps(self) -> pd.DataFrame:
        """One row per detected step: index, start_ns, end_ns, duration_ns, kind (warmup,
        normal, outlier, incomplete …), kernel_count, pid."""
        return self._frames(_steps_frame)

    @property
    def phases(self) -> pd.DataFrame:
        """One row per top-level NVTX phase: name, canonical, mean_ms (per step), share of the
        step, gpu_busy_ms, gpu_work_ms, count, pid."""
        return self._frames(_phases_frame)

    @property
    def kernels(self) -> pd.DataFrame:
        """One row per kernel name (every name, not only the JSON's top rows): name,
        short_name, count, total_ns, mean/median/min/max_ns, share, category, tensor_core, …"""
        return self._frames(lambda p: p.kernels.table.reset_index(drop=True))

    @property
    def gaps(self) -> pd.DataFrame:
        """One row per idle interval: start_ns, end_ns, duration_ns, device_id, cause (the
        largest), ``<cause>_ns`` per cause, pid."""
        return self._frames(_gaps_frame)

    def to_json(self) -> str:
        """The JSON text ``nsys-diag analyze --json`` writes."""
        from nsys_diag.report.json_out import to_json

        return to_json(self.view)

    def to_markdown(self) -> str:
        """The Markdown summary ``analyze --md`` writes."""
        from nsys_diag.report.markdown import render_markdown

        return render_markdown(self.view)

    def to_html(self, path=None) -> str:
        """The HTML report (``analyze -o``); written to ``path`` when given. Returns the HTML."""
        from nsys_diag.report.html_report import render_html

        doc = render_html(self.view)
        if path is not None:
            _write(path, doc)
        return doc

    def _repr_html_(self) -> str:
        """In Jupyter: the verdict, a few numbers and the first advice, the full report folded
        below (``to_html(path)`` writes it)."""
        from nsys_diag.report.formatting import fmt_ms, fmt_pct

        v = self.view
        vd = v.get("verdict") or {}
        steps, gpu = v.get("steps") or {}, v.get("gpu") or {}
        facts = [f"confidence {vd.get('confidence') or '?'}",
                 f"window {fmt_ms((v.get('window') or {}).get('duration_ms'))}",
                 f"step {fmt_ms(steps.get('mean_ms'))} (mean of {steps.get('analysed_count')})"
                 if steps.get("available") else "no steps",
                 f"GPU busy {fmt_pct(gpu.get('utilization'))}" if gpu.get("available") else ""]
        return _notebook_view(f"nsys-diag · {Path(self.path).name}: {vd.get('code') or '?'}",
                              str(vd.get("headline") or ""), facts,
                              [str(r) for r in (vd.get("recommendations") or [])[:3]], self.to_html(),
                              "a.to_html('report.html') writes the full report to a file.")


def _empty(columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="object") for c in columns})


STEP_COLUMNS = ("index", "start_ns", "end_ns", "duration_ns", "kind", "kernel_count")
PHASE_COLUMNS = ("name", "canonical", "mean_ms", "share", "gpu_busy_ms", "gpu_work_ms", "count")


def _steps_frame(p) -> pd.DataFrame:
    from nsys_diag.analyses.base import is_available

    s = p.steps
    if not is_available(s):
        return _empty(STEP_COLUMNS)
    return pd.DataFrame({"index": range(s.count), "start_ns": s.starts_ns.astype("int64"),
                         "end_ns": s.ends_ns.astype("int64"),
                         "duration_ns": s.durations_ns.astype("int64"), "kind": list(s.kinds),
                         "kernel_count": s.kernel_counts.astype("int64")})


def _phases_frame(p) -> pd.DataFrame:
    from nsys_diag.analyses.base import is_available

    if not is_available(p.phases):
        return _empty(PHASE_COLUMNS)
    return pd.DataFrame([{c: getattr(r, c) for c in PHASE_COLUMNS} for r in p.phases.rows],
                        columns=list(PHASE_COLUMNS))


def _gaps_frame(p) -> pd.DataFrame:
    import numpy as np

    from nsys_diag.analyses.base import is_available
    from nsys_diag.analyses.gaps.causes import GapIntervals
    from nsys_diag.model.vocabulary import GAP_CAUSES

    iv = p.gaps.intervals if is_available(p.gaps) else None
    if iv is None:
        z = np.zeros(0, np.int64)
        iv = GapIntervals(z, z, z, np.zeros((0, len(GAP_CAUSES)), np.int64))
    return iv.to_frame()


def analyze(path, *, batch_size: int | None = None, ncu=None, window=None, steps=None,
            step_range: str | None = None, device: int | None = None, phase_map=None,
            thresholds=None, memory_budget=None, gpu=None) -> Analysis:
    """Analyse one trace, as ``nsys-diag analyze`` does, and write nothing (docs/api.md)."""
    trace = os.fspath(path)
    if Path(trace).is_dir():
        raise InputError(trace, "is a directory, not a trace",
                         "pass one export (use nsys_diag.compare or `nsys-diag batch` for runs)")
    th = _opts.load_thresholds(thresholds)
    options = _opts.build_options(batch_size=batch_size, ncu_path=ncu, window=window,
                                  steps_sel=steps, step_range=step_range, device=device,
                                  phase_map=phase_map, memory_budget=memory_budget, gpu=gpu)
    suite, view = _analyze.analyze_path_with_suite(trace, options, th, now_utc())
    return Analysis(trace, view, suite)


# ------------------------------------------------------------------------------- compare
class Comparison:
    """What ``compare`` found: ``doc`` is the comparison JSON as a dict."""

    def __init__(self, doc: dict, json_text: str, lines: list[str]):
        self.doc = doc
        self._json = json_text
        self.lines = lines
        """The terminal lines ``nsys-diag compare`` prints."""

    def __repr__(self) -> str:
        return f"<Comparison: {self.doc.get('summary', '')}>"

    @property
    def step_time(self) -> dict:
        """Baseline/candidate step time, delta, confidence interval (``step_time`` JSON)."""
        return self.doc.get("step_time") or {}

    @property
    def gate(self) -> dict:
        """The ``--fail-on-regression`` gate: requested_pct, evaluated, passed, reason, …"""
        return self.doc.get("gate") or {}

    @property
    def regressed(self) -> bool:
        """True when the gate was evaluated and the candidate is slower beyond it."""
        return bool(self.doc.get("regression"))

    @property
    def exit_code(self) -> int:
        """The exit code ``nsys-diag compare`` would end with (0, 5 or 7)."""
        return int(self.doc.get("exit_code") or 0)

    def to_json(self) -> str:
        """The JSON text ``nsys-diag compare --json`` writes."""
        return self._json

    def to_markdown(self) -> str:
        from nsys_diag.report.compare_render import render_compare_markdown

        return render_compare_markdown(self.doc)

    def to_html(self, path=None) -> str:
        from nsys_diag.report.compare_render import render_compare_html

        doc = render_compare_html(self.doc)
        if path is not None:
            _write(path, doc)
        return doc

    def _repr_html_(self) -> str:
        """In Jupyter: the summary, step time and comparability, the full page folded below."""
        from nsys_diag.report.compare_render import comparability_line, step_line

        d = self.doc
        return _notebook_view(f"nsys-diag compare: {d.get('summary') or ''}", step_line(d),
                              [comparability_line(d) or ""], [str(n) for n in (d.get("notes") or [])[:2]],
                              self.to_html(), "c.to_html('compare.html') writes the full page to a file.")


def compare(baseline, candidate, *, fail_on_regression: float | None = None,
            seed: int = 0, thresholds=None) -> Comparison:
    """Compare BASELINE and CANDIDATE (each a trace or a directory of runs), as
    ``nsys-diag compare`` does (its cache included); writes nothing but the cache."""
    import json

    from nsys_diag.app.compare import compare_command

    if fail_on_regression is not None and (not isinstance(fail_on_regression, (int, float))
                                           or fail_on_regression < 0):
        raise UsageError(f"fail_on_regression={fail_on_regression!r}: expected a percentage ≥ 0")
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="nsys-diag-compare-") as tmp:
        out = Path(tmp) / "compare.json"
        compare_command(os.fspath(baseline), os.fspath(candidate),
                        fail_on_regression=fail_on_regression, json_out=str(out), seed=seed,
                        th=_opts.load_thresholds(thresholds), echo=lines.append, err=lines.append,
                        allow_unevaluable=False)
        text = out.read_text(encoding="utf-8")
    return Comparison(json.loads(text), text, lines)
