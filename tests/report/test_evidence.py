"""Evidence rows tell the truth, findings are listed, secondary verdicts show in every renderer."""
from __future__ import annotations

import sample_views as sv
from nsys_diag.report.evidence import evidence_text, unfired_summary
from nsys_diag.report.html_report import render_html
from nsys_diag.report.markdown import render_markdown
from nsys_diag.report.text import render_text

NOT_MET = {"metric": "gpu.utilization", "value": 0.798, "threshold": 0.5, "comparison": "<",
           "source": "timeline", "fired": False, "role": "rule"}
CONTEXT = {"metric": "gaps.transfer_share", "value": 0.03, "threshold": None, "comparison": "info",
           "source": "timeline", "fired": None, "role": "context"}


def _view():
    v = sv.input_bound_view()
    v["verdict"]["evidence"] = [NOT_MET, CONTEXT]
    v["verdict"]["secondary"] = ["overhead_bound"]
    v["findings"] = [
        {"code": "input_bound", "cause": "input", "severity": "critical", "fired": True,
         "share_of_window": 0.52, "per_step_ms": 416.0, "threshold": 0.25,
         "evidence": [{"metric": "gaps.input_share", "value": 0.52, "threshold": 0.25,
                       "comparison": ">=", "source": "timeline", "fired": True, "role": "rule"}],
         "advice": [{"text": "x", "because": ["gaps.input_share"]}], "headline": "Input-bound: <b>"},
        {"code": "overhead_bound", "cause": "sync", "severity": "info", "fired": False,
         "share_of_window": 0.02, "per_step_ms": 16.0, "threshold": 0.1, "evidence": [], "advice": [],
         "headline": ""}]
    return v


def test_rule_rows_say_met_or_not_met_and_context_rows_say_context():
    assert evidence_text(NOT_MET) == "gpu.utilization = 79.8% — rule < 50.0%: not met"
    assert evidence_text(CONTEXT) == "gaps.transfer_share = 3.0% (context)"
    assert unfired_summary(_view()) == "checked, under threshold: sync 2.0%"


def test_terminal_shows_truthful_rows_findings_and_secondary():
    out = render_text(_view())
    assert "gpu.utilization = 79.8% — rule < 50.0%: not met" in out
    assert "(< 50" not in out
    assert "gaps.transfer_share = 3.0% (context)" in out
    assert "[critical] input" in out and "checked, under threshold: sync" in out
    assert "secondary verdicts): overhead_bound" in out


def test_markdown_shows_rows_findings_and_secondary_within_its_cap():
    md = render_markdown(_view())
    assert "rule &lt; 50.0%: not met" in md
    assert "(context)" in md and "**critical**" in md
    assert "**Also (secondary verdicts):** Overhead bound" in md
    assert "<b>" not in md
    assert len(md.splitlines()) < 60


def test_html_shows_rows_findings_and_secondary():
    html = render_html(_view())
    assert "rule &lt; 50.0%: not met" in html and "(context)" in html
    assert "Also (secondary verdicts): Overhead bound" in html
    assert 'class="finding sev-critical"' in html
    assert "Input-bound: &lt;b&gt;" in html
