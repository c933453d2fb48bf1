"""Per-process panels of the HTML report (report/process_panels.py): tabs without JavaScript,
the headline first, unique ids, escaped process names, each process's own sections."""
from __future__ import annotations

import collections
import re

import pandas as pd

import handframes as hf
from nsys_diag.analyses.suite import run_suite
from nsys_diag.model import contracts as C
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.report.html_report import render_html
from nsys_diag.report.process_panels import prefix_ids, process_view
from nsys_diag.report.view import build_view

GEN = "2026-01-01T00:00:00Z"
EVIL = "<b onmouseover=alert(1)>rank1"


def _view(bundle):
    return build_view(bundle.meta, run_suite(bundle, AnalyzeOptions()), generated_at=GEN)


def _two(names=("rank0", "rank1")):
    b = hf.two_process_bundle()
    procs = C.PROCESSES.validate(pd.DataFrame([dict(global_pid=100 << 24, pid=100, name=names[0]),
                                               dict(global_pid=101 << 24, pid=101, name=names[1])]))
    import dataclasses
    return dataclasses.replace(b, processes=procs)


def test_every_process_row_has_its_own_sections():
    v = _view(_two())
    rows = {r["pid"]: r for r in v["processes"]}
    assert rows[100]["steps"]["mean_ms"] < rows[101]["steps"]["mean_ms"]
    assert rows[101]["is_headline"] and rows[101]["steps"] == v["steps"]
    for r in rows.values():
        assert r["verdict"]["code"] == r["verdict_code"] and r["window"]["duration_ms"] > 0
        assert r["kernels"] and r["gpu"]["available"] and "findings" in r


def test_single_process_view_has_no_rows_and_no_tabs():
    v = _view(hf.bundle(nvtx=hf.nvtx([dict(text="step_0", start_ns=0, end_ns=10 * hf.MS)]),
                        kernels=hf.kernels([dict(start_ns=hf.MS, end_ns=9 * hf.MS)])))
    assert v["processes"] == []
    assert 'class="proc-radio"' not in render_html(v)


def test_tabs_headline_first_ids_unique_names_escaped():
    v = _view(_two(names=("rank0", EVIL)))
    html = render_html(v)
    tabs = re.findall(r'<input class="proc-radio" type="radio" name="proc-tab" id="proc-tab-(\d)"'
                      r'( checked)?>', html)
    assert tabs == [("0", " checked"), ("1", "")]
    labels = re.findall(r'<label for="proc-tab-\d" title="pid (\d+)">', html)
    assert labels == ["101", "100"]  # the headline (slowest) first
    assert EVIL not in html and "&lt;b onmouseover=alert(1)&gt;rank1" in html
    ids = collections.Counter(re.findall(r'\bid="([^"]*)"', html))
    assert not [k for k, n in ids.items() if n > 1]
    assert 'id="p1-sec-verdict"' in html and 'id="sec-verdict"' in html
    assert "<script src" not in html and "http://" not in html.split("<body>")[1].split("</main>")[0]


def test_process_view_swaps_in_the_row_sections():
    v = _view(_two())
    other = next(r for r in v["processes"] if not r["is_headline"])
    sub = process_view(v, other)
    assert sub["steps"] == other["steps"] and sub["verdict"] == other["verdict"]
    assert sub["scope"]["pid"] == 100 and sub["processes"] == [] and sub["trace"] == v["trace"]


def test_prefix_ids_touches_attributes_only():
    html = '<h2 id="h-x" aria-labelledby="a b">id=&#34;text&#34;</h2><a href="#sec-x">'
    out = prefix_ids(html, "p1-")
    assert out == ('<h2 id="p1-h-x" aria-labelledby="p1-a p1-b">id=&#34;text&#34;</h2>'
                   '<a href="#p1-sec-x">')


def test_markdown_and_terminal_list_each_process_verdict():
    from nsys_diag.report.markdown import render_markdown
    from nsys_diag.report.text import render_text

    v = _view(_two(names=("rank0", EVIL)))
    md = render_markdown(v)
    lines = [ln for ln in md.splitlines() if ln.startswith("- pid ")]
    assert len(lines) == 2 and "(headline)" in lines[0] and lines[0].startswith("- pid 101")
    assert "<b" not in md and all(r["verdict_code"].replace("_", "\\_") in md for r in v["processes"])
    assert "pid 100" in render_text(v) and "pid 101" in render_text(v)


def test_loader_section_in_html_and_markdown(tmp_path):
    import sqlite3

    from nsys_diag.app.analyze import analyze_path
    from nsys_diag.report.markdown import render_markdown
    synth = __import__("pytest").importorskip("nsys_diag.synth")
    path = synth.write_preset(tmp_path / "w.sqlite", "dataloader_workers")
    con = sqlite3.connect(path)
    rows = con.execute("SELECT start, end, eventType, globalTid, domainId FROM NVTX_EVENTS "
                       "WHERE text = 'DataLoader.__next__'").fetchall()
    con.executemany("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [(s, e, t, "worker_fetch", g + (1 << 24) + 1, d) for s, e, t, g, d in rows])
    con.commit()
    con.close()
    v = analyze_path(str(path), generated_at=GEN)
    assert v["loader"]["available"] and v["loader"]["workers"] == 1
    html = render_html(v)
    assert "<h3>DataLoader workers</h3>" in html and 'id="tbl-loader"' in html
    assert "**DataLoader** 1 workers" in render_markdown(v)
