"""The roofline in the Markdown and HTML reports: the table in ncu-only and joined mode, the
ncu-only Markdown leading with it, and pairings that are not exact names shown with their level."""
from __future__ import annotations

import json

from click.testing import CliRunner

from conftest import SAMPLE_TRACES
from nsys_diag.cli import main
from nsys_diag.report.html_report import render_html
from nsys_diag.report.markdown import render_markdown
from nsys_diag.synth.ncu import write_ncu_csv


def run(tmp_path, *args) -> tuple[dict, str, str]:
    js, md, html = tmp_path / "a.json", tmp_path / "a.md", tmp_path / "a.html"
    res = CliRunner().invoke(main, ["analyze", *map(str, args), "--json", str(js), "--md", str(md),
                                    "-o", str(html)], env={"SOURCE_DATE_EPOCH": "0"})
    assert res.exit_code == 0, res.output
    return json.loads(js.read_text()), md.read_text(), html.read_text()


def test_ncu_only_markdown_leads_with_the_roofline_table(tmp_path):
    csv = write_ncu_csv(tmp_path / "k.csv", gpu_name="NVIDIA A100-SXM4-80GB")
    _, md, html = run(tmp_path, csv)
    lines = md.splitlines()
    head = lines.index("| kernel | time | FLOP/B | FLOP/s | DRAM B/s | bound | SOL % |")
    assert lines[head - 1].startswith("**Roofline (Nsight Compute — NVIDIA A100-SXM4-80GB)**")
    assert any(ln.startswith("| void gemm\\_kernel") and "compute" in ln for ln in lines)
    assert "_Timeline sections (steps, phases, idle gaps) need an nsys trace._" in md
    assert "**Phase**" not in md and head < lines.index("**What to try, in order**")
    assert "sec-roofline" in html


def test_joined_reports_show_the_table_and_labelled_fallback_pairings(tmp_path):
    csv = write_ncu_csv(tmp_path / "k.csv", gpu_name="NVIDIA A100-SXM4-80GB")
    view, md, _ = run(tmp_path, SAMPLE_TRACES / "healthy_tc.sqlite", "--ncu", csv)
    assert "| kernel | time | FLOP/B | FLOP/s | DRAM B/s | bound | SOL % |" in md
    assert "· time: timeline" in md
    # a family pairing (as the join labels one within 10x) is spelt out in Markdown and HTML
    view["roofline"]["matches"] = [{
        "timeline_name": "ampere_sgemm_64x64_nn<script>", "ncu_names": ["ampere_sgemm_32x32_tn"],
        "level": "family", "time_ns": 2_000_000, "share": 0.1, "bound": "latency",
        "tensor_core_share": None, "launches": 4, "ncu_launches": 1, "duration_ratio": 0.5}]
    md = render_markdown(view)
    assert ("_Not exact pairings (another name or launch config): ampere\\_sgemm\\_64x64\\_nn&lt;script&gt; ← "
            "ampere\\_sgemm\\_32x32\\_tn (family guess, launch config not compared (a side lacks it), ncu per launch 0.5× the timeline's)_") in md
    html = render_html(view)
    assert "Pairings that are not an exact match" in html and "<script>" not in html.split(
        "Pairings that are not")[1].split("</ul>")[0]
    assert "<strong>family guess</strong> (family)" in html and "4 timeline / 1 ncu launches" in html
