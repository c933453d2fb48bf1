"""Evidence rows tell the truth, findings are listed, secondary verdicts show in every renderer."""
from __future__ import annotations

import sample_views as sv
from nsys_diag.report.evidence import evidence_text, finding_saving, unfired_summary
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


HOSTILE_REASON = "the replay is not available: <script>alert(1)</script> \x1b[31mred\x1b[0m `x`|y"


def _priced_view():
    """Two fired findings: one priced by the replay, one whose saving has a hostile reason."""
    v = _view()
    v["findings"][0]["saves_ms_per_step"] = 208.0
    v["findings"].append(
        {"code": "overhead_bound", "cause": "overhead", "severity": "warning", "fired": True,
         "share_of_window": 0.12, "per_step_ms": 96.0, "threshold": 0.1, "evidence": [],
         "advice": [], "headline": "Overhead-bound", "saves_ms_per_step": None,
         "saves_reason": HOSTILE_REASON})
    return v


def test_finding_saving_words_the_replay_price_or_its_reason():
    v = _priced_view()
    step = v["steps"]["mean_ms"]
    assert finding_saving(v["findings"][0], step) == f"saves 208 ms/step ({208 / step:.1%})"
    assert finding_saving(v["findings"][0]) == "saves 208 ms/step"
    assert finding_saving(v["findings"][2], step).startswith("not priced: the replay is not")
    assert finding_saving(v["findings"][1], step) == ""  # not fired
    assert finding_saving({"fired": True, "cause": "input"}, step) == ""  # nothing recorded


def test_every_renderer_shows_the_findings_saving_escaped():
    v = _priced_view()
    share = f"{208 / v['steps']['mean_ms']:.1%}"
    out = render_text(v)
    assert f"saves 208 ms/step ({share})" in out and "not priced: the replay" in out
    assert "\x1b" not in out
    md = render_markdown(v)
    assert f"saves 208 ms/step ({share})" in md and "not priced: the replay" in md
    assert "<script>" not in md and "\x1b" not in md
    html = render_html(v)
    assert f'<div class="finding-saving">saves 208 ms/step ({share})</div>' in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert(1)" not in html
