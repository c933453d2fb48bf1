"""The ncu-only HTML (an Nsight Compute CSV analysed alone): the roofline leads right after the
verdict, with chart and full table; the timeline sections are folded into one line."""
from __future__ import annotations

import re

from click.testing import CliRunner

from conftest import SAMPLE_TRACES
from nsys_diag.cli import main
from nsys_diag.report.contract import SECTIONS
from nsys_diag.report.page import TIMELINE_SECTIONS, section_order
from nsys_diag.synth.ncu import write_ncu_csv


def _html(tmp_path, *args) -> str:
    out = tmp_path / "a.html"
    res = CliRunner().invoke(main, ["analyze", *map(str, args), "-o", str(out)],
                             env={"SOURCE_DATE_EPOCH": "0"})
    assert res.exit_code == 0, res.output
    return out.read_text()


def _section_ids(html: str) -> list[str]:
    body = html.split("<main", 1)[-1] if "<main" in html else html
    return re.findall(r'<(?:section|p) id="((?:sec-[a-z-]+)|folded-timeline)"', body)


def test_roofline_comes_first_after_the_verdict_and_timeline_sections_fold(tmp_path):
    csv = write_ncu_csv(tmp_path / "k.csv", gpu_name="NVIDIA A100-SXM4-80GB")
    html = _html(tmp_path, csv)
    ids = _section_ids(html)
    assert ids[:3] == ["sec-verdict", "folded-timeline", "sec-roofline"]
    for key in TIMELINE_SECTIONS:
        assert f'id="sec-{key}"' not in html
    assert html.count("Not available") <= 1
    folded = re.search(r'id="folded-timeline"[^>]*>(.*?)</p>', html, re.S)
    assert folded and "Timeline sections need an nsys trace" in folded.group(1)
    roof = html[html.index('id="sec-roofline"'):]
    roof = roof[:roof.index("</section>")]
    assert "<svg" in roof
    head = re.sub(r"<[^>]+>", " ", roof[roof.index('id="tbl-roofline"'):roof.index("</thead>")])
    for col in ("Kernel", "Time", "FLOP/byte", "Achieved FLOP/s", "DRAM bytes/s", "Bound", "SOL %"):
        assert col in head
    assert re.search(r"\d+(\.\d+)? [µm]?s\s*<", roof)  # a per-kernel time cell


def test_nsys_trace_keeps_the_contract_order():
    assert section_order(False) == [k for k, _ in SECTIONS]
    ncu = section_order(True, {"kernels": {"available": False}})
    assert ncu[:2] == ["verdict", "roofline"] and "kernels" not in ncu
    assert not set(ncu) & set(TIMELINE_SECTIONS)


def test_nsys_html_has_all_sections_and_no_folded_line(tmp_path):
    html = _html(tmp_path, SAMPLE_TRACES / "healthy_tc.sqlite")
    ids = [i for i in _section_ids(html) if i != "folded-timeline"]
    assert ids == [f"sec-{k}" for k, _ in SECTIONS]
    assert 'id="folded-timeline"' not in html


def test_a_kernel_csv_shows_no_timeline_fields_and_no_step_warning(tmp_path):
    """No "nsys version unknown · capture span 0 ns" and no "no steps found" warning
    (which lowered the confidence) for an input that never has a timeline (issue 28 item 3)."""
    csv = write_ncu_csv(tmp_path / "k.csv", gpu_name="NVIDIA A100-SXM4-80GB")
    html = _html(tmp_path, csv)
    capture = html[html.index('id="sec-capture"'):]
    capture = capture[:capture.index("</dl>")]
    for label in ("nsys version", "Export schema", "Capture span", "Analysed window"):
        assert f"<dt>{label}</dt>" not in capture
    assert "<dt>Format</dt>" in capture
    assert "no steps found" not in html
    res = CliRunner().invoke(main, ["analyze", str(csv), "--no-html", "--json", "-"])
    view = __import__("json").loads(res.stdout)
    assert not [q for q in view["data_quality"] if q["code"] == "no_steps"]


def test_an_ncu_csv_shows_no_step_busy_or_idle_figures(tmp_path):
    """Kernels without a timeline: no Mean step / GPU busy / GPU idle tiles, no window line in the
    terminal, and the footer names the format, not an nsys version."""
    csv = write_ncu_csv(tmp_path / "k.csv", gpu_name="NVIDIA A100-SXM4-80GB")
    html = _html(tmp_path, csv)
    verdict = html[html.index('id="sec-verdict"'):]
    verdict = verdict[:verdict.index("</section>")]
    for tile in ("Mean step", "GPU compute busy", "GPU idle"):
        assert tile not in verdict
    md = tmp_path / "a.md"
    res = CliRunner().invoke(main, ["analyze", str(csv), "--no-html", "--md", str(md)])
    assert res.exit_code == 0, res.output
    assert not any(line.startswith("window ") for line in res.output.splitlines())
    assert "Nsight Compute CSV" in md.read_text() and "nsys unknown" not in md.read_text()
