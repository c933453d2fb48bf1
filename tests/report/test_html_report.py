"""The HTML report (nsys_diag/report/html_report.py + templates/): self-contained, escaped,
deterministic, every section present, small whatever the input."""
from __future__ import annotations

import copy
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from sample_views import (
    ALL_VIEWS,
    GENERATED_AT,
    HOSTILE_KERNEL,
    compute_bound_view,
    input_bound_view,
    large_view,
    sparse_view,
)

from nsys_diag.report.html_report import MAX_HTML_BYTES, environment, nav_sections, render_document, render_html
from nsys_diag.report.page import SECTIONS, clean_view
from nsys_diag.report.templates_path import templates_dir

REPO = Path(__file__).resolve().parents[2]
SECTION_IDS = [f"sec-{k}" for k, _ in SECTIONS]
BLOB = re.compile(r'<script type="application/json" id="nsys-diag-data">(.*?)</script>', re.S)
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "link", "style", "body", "a", "header", "div", "span", "nav", "ol", "ul",
    "li", "wbr", "main", "section", "p", "h1", "h2", "h3", "code", "pre", "details", "summary", "table", "caption",
    "thead", "tbody", "tr", "th", "td", "strong", "dl", "dt", "dd", "figure", "figcaption", "svg", "g",
    "rect", "text", "line", "path", "circle", "footer", "script", "label", "input", "select",
    "option", "br",
}


class _Tags(HTMLParser):
    """Collects every tag and attribute the browser would see."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse(html: str) -> _Tags:
    p = _Tags()
    p.feed(html)
    p.close()
    return p


def section(html: str, sid: str) -> str:
    start = html.index(f'id="{sid}"')
    return html[start: html.index("</section>", start)]


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    return {name: render_html(build()) for name, build in ALL_VIEWS.items()}


# ----------------------------------------------------------------------------- structure
@pytest.mark.parametrize("name", list(ALL_VIEWS))
def test_every_section_is_present_once_and_in_order(rendered, name):
    html = rendered[name]
    positions = []
    for sid in SECTION_IDS:
        assert html.count(f'<section id="{sid}"') == 1, sid
        assert f'href="#{sid}"' in html  # nav link
        positions.append(html.index(f'<section id="{sid}"'))
    assert positions == sorted(positions)


def test_verdict_banner_reads_in_ten_seconds(rendered):
    html = rendered["input_bound"]
    banner = section(html, "sec-verdict")
    assert '<h1 id="verdict-title" class="verdict-title">Input bound</h1>' in banner
    assert "data loading takes 52% of every 800 ms step" in banner
    assert "Will more GPUs help?" in banner and "Adding GPUs will not help" in banner
    assert '<span class="proj-fixed">420 ms</span>' in banner and "1.9× faster" in banner
    recs = input_bound_view()["verdict"]["recommendations"]
    positions = [banner.index(r.split(" (")[0].replace("≥", "≥")) for r in recs]
    assert positions == sorted(positions)  # fixes in the given order
    assert "high confidence" in banner
    assert "1 data-quality warning" in banner  # the warning, visible at the top
    assert "No GPU metrics were sampled" in banner


@pytest.mark.parametrize("name, title", [("compute_bound", "Compute bound"), ("sparse", "Insufficient data")])
def test_verdict_title_per_code(rendered, name, title):
    assert f'class="verdict-title">{title}</h1>' in rendered[name]


def test_unavailable_sections_say_why_and_how(rendered):
    html = rendered["sparse"]
    view = sparse_view()
    expected = {"sec-steps": view["steps"], "sec-phases": view["steps"], "sec-metrics": view["gpu"],
                "sec-gaps": view["gaps"], "sec-timeline": view["timeline"], "sec-kernels": view["gpu"],
                "sec-transfers": view["transfers"]}
    for sid, sec in expected.items():
        body = section(html, sid)
        assert "Not available" in body, sid
        assert sec["reason"] in body, sid
        assert sec["hint"] in body, sid
    roof = section(html, "sec-roofline")
    assert "No Nsight Compute data was given." in roof and "--ncu" in roof
    nav = html[html.index('<nav class="toc"'): html.index("</nav>")]
    assert "The causal replay was not run." in section(html, "sec-replay")
    assert nav.count('class="na"') == 9  # greyed in the nav: everything but verdict, capture, data quality


def test_available_sections_have_their_content(rendered):
    html = rendered["compute_bound"]
    assert "Showing 13 of 143 kernels." in section(html, "sec-kernels")
    assert 'id="tbl-kernels"' in html and 'class="table-tools" data-table="tbl-kernels" hidden' in html
    assert "<svg class=\"chart roofline\"" in section(html, "sec-roofline")
    assert section(html, "sec-timeline").count("<path class=\"busy\"") == 4  # 2 strips × 2 GPUs
    assert "Outlier steps" in section(html, "sec-steps")
    for label in ("SM active", "Tensor active", "DRAM bandwidth", "Loader vs model throughput",
                  "Exposed communication", "Peak GPU memory"):
        assert label in section(html, "sec-metrics")
    assert "Processes / ranks (2)" in section(html, "sec-verdict")
    assert "GEMM/conv kernels that missed the Tensor Cores" in section(rendered["input_bound"], "sec-kernels")


def test_page_reads_without_javascript(rendered):
    """Nothing is hidden that JS must reveal: only the filter box (useless without JS) starts hidden."""
    for html in rendered.values():
        tags = parse(html).tags
        hidden = [(t, a) for t, a in tags if "hidden" in a]
        assert all(a.get("class") == "table-tools" for _, a in hidden)
        assert not any(t == "tr" and "style" in a for t, a in tags)
        assert "<noscript" not in html


# ----------------------------------------------------------------------------- self-contained
_EXTERNAL_ATTR = re.compile(r"""(?:src|href|action|xlink:href|srcset|poster|data)\s*=\s*["']?\s*(?:[a-z][a-z0-9+.-]*:|//)""", re.I)


@pytest.mark.parametrize("name", list(ALL_VIEWS))
def test_self_contained_no_urls(rendered, name):
    html = rendered[name]
    tags = parse(html).tags
    for tag, attrs in tags:
        for key in ("src", "href", "action", "srcset", "poster", "xlink:href"):
            val = (attrs.get(key) or "").strip()
            if not val:
                continue
            assert val.startswith("#") or val == "data:,", (tag, key, val)
    assert not _EXTERNAL_ATTR.search(html.replace('href="data:,"', ""))
    assert "http://" not in html and "https://" not in html
    assert not re.search(r"url\(\s*['\"]?\s*(?:https?:|//)", html, re.I)
    assert "@import" not in html and "@font-face" not in html
    assert not any(t == "script" and "src" in a for t, a in tags)
    assert [a.get("rel") for t, a in tags if t == "link"] == ["icon"]
    assert not any(t in ("img", "iframe", "object", "embed", "video", "audio", "base") for t, _ in tags)


def test_size_is_capped_for_huge_views():
    html = render_html(large_view())
    assert len(html.encode("utf-8")) < MAX_HTML_BYTES
    assert "Showing 200 of 20,000 kernels." in html


def test_size_cap_tightens_when_needed():
    view = large_view(n_kernels=2_000, n_steps=100, name_len=10)
    for k in view["kernels"]:  # '<' grows ×4 in HTML and ×6 in JSON: 200 shown kernels ≫ 2 MB
        k["name"] = k["short_name"] = k["name"] + "<" * 20_000
    html = render_html(view)
    assert len(html.encode("utf-8")) < MAX_HTML_BYTES
    assert "Showing " in section(html, "sec-kernels") and "of 2,000 kernels." in html
    blob = json.loads(BLOB.search(html).group(1))
    assert len(blob["kernels"]) < 200  # the tighter caps applied


# ----------------------------------------------------------------------------- determinism
def test_same_view_same_bytes():
    view = compute_bound_view()
    before = json.dumps(view, sort_keys=True)
    a = render_html(view)
    b = render_html(copy.deepcopy(view))
    assert a == b
    assert json.dumps(view, sort_keys=True) == before  # the input is not modified
    assert GENERATED_AT in a


def test_generated_at_comes_from_the_view():
    view = input_bound_view()
    view["generated_at"] = "2030-01-02T03:04:05Z"
    html = render_html(view)
    assert "2030-01-02T03:04:05Z" in html and GENERATED_AT not in html


# ----------------------------------------------------------------------------- escaping
def test_hostile_strings_render_as_text(rendered):
    html = rendered["hostile"]
    parsed = parse(html)
    tags = parsed.tags
    assert {t for t, _ in tags} <= ALLOWED_TAGS
    assert not any(k.startswith("on") for _, a in tags for k in a), "event handler attribute injected"
    assert sum(1 for t, _ in tags if t == "script") == 2  # the JSON blob and our JS, nothing else
    # kernel name shown as text in the table, the chart and the callout
    escaped = "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"
    assert html.count(escaped) >= 3
    assert escaped in section(html, "sec-kernels")
    text = "".join(parsed.text)
    assert HOSTILE_KERNEL in text
    assert "<b>bold</b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html
    assert "<svg onload" not in html and "&lt;svg onload=alert(1)&gt;" in html
    assert "</title><script>" not in html
    # control characters and ANSI escapes never reach the page; the page is valid UTF-8
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", html)
    assert "[31m" not in html
    html.encode("utf-8")


def test_hostile_strings_stay_data_in_the_embedded_json(rendered):
    html = rendered["hostile"]
    blobs = BLOB.findall(html)
    assert len(blobs) == 1
    raw = blobs[0]
    assert "</" not in raw and "<" not in raw and ">" not in raw
    assert "\\u003c/script\\u003e\\u003cimg src=x onerror=alert(1)\\u003e" in raw
    data = json.loads(raw)
    assert data["kernels"][0]["short_name"] == HOSTILE_KERNEL
    assert data["trace"]["path"] == "evil</title><script>alert(1)</script>.sqlite"


@pytest.mark.parametrize("name", list(ALL_VIEWS))
def test_embedded_json_is_the_cleaned_view(rendered, name):
    data = json.loads(BLOB.search(rendered[name]).group(1))
    assert data == json.loads(json.dumps(clean_view(ALL_VIEWS[name]())))
    assert data["schema_version"] == 1


# ----------------------------------------------------------------------------- robustness
@pytest.mark.parametrize("view", [{}, {"verdict": None, "steps": "nonsense", "phases": [None, 3, {}],
                                       "kernels": [{"name": None}], "gaps": {"available": True, "top": "x"},
                                       "roofline": {"available": True, "roofs": [{"kind": "compute"}],
                                                    "kernels": [{}]},
                                       "timeline": {"available": True, "strips": [{"start_ns": 5}]},
                                       "trace": {"tables": {"A": None}}, "data_quality": ["str"]}])
def test_partial_or_odd_views_still_render(view):
    html = render_html(view)
    for sid in SECTION_IDS:
        assert f'<section id="{sid}"' in html
    assert "verdict-title" in html


def test_nan_and_infinity_never_reach_the_page():
    view = input_bound_view()
    view["gpu"]["utilization"] = float("nan")
    view["phases"][0]["share"] = float("inf")
    html = render_html(view)
    data = json.loads(BLOB.search(html).group(1))
    assert data["gpu"]["utilization"] is None and data["phases"][0]["share"] is None
    page = re.sub(r"<script>.*?</script>", "", html, flags=re.S)  # report.js itself says isNaN
    assert "NaN" not in page and "Infinity" not in page


# ----------------------------------------------------------------------------- templates
def test_templates_found_in_the_checkout():
    d = templates_dir()
    assert (d / "base.html").is_file()
    assert d == REPO / "templates" or d == REPO / "nsys_diag" / "templates"
    for name in ("report.html", "compare.html", "batch_index.html", "macros/tables.html", "macros/svg.html",
                 "assets/report.css", "assets/report.js", "partials/_unavailable.html"):
        assert (d / name).is_file(), name


def test_assets_are_inlined_raw_and_guarded():
    asset = environment().globals["asset"]
    assert "prefers-color-scheme: dark" in asset("report.css")
    assert "@media print" in asset("report.css")
    with pytest.raises(ValueError):
        asset("../../etc/passwd")


def test_environment_is_strict_and_escaping():
    env = environment()
    assert env.autoescape is True or env.autoescape("x.html") is True
    from jinja2 import StrictUndefined
    assert env.undefined is StrictUndefined


@pytest.mark.parametrize("template", ["compare.html", "batch_index.html"])
def test_other_pages_extend_the_base_layout(template):
    """compare/batch pages (filled by the batch helper) reuse base.html and its assets."""
    source = (templates_dir() / template).read_text(encoding="utf-8")
    assert '{% extends "base.html" %}' in source and "{% block content %}" in source


def test_render_document_renders_base_with_any_page(tmp_path):
    page = {"title": "t <x>", "tool": {"name": "nsys-diag", "version": "0.1.0"}, "generated_at": GENERATED_AT,
            "sections": nav_sections()}
    html = render_document("base.html", page=page, data={"k": "</script>"})
    assert "<title>t &lt;x&gt;</title>" in html
    assert "\\u003c/script\\u003e" in html and html.count("</script>") == 2
    assert [s["id"] for s in nav_sections()] == SECTION_IDS


# ----------------------------------------------------------------------------- real pipeline
def _synth():
    return pytest.importorskip("nsys_diag.synth")


def test_end_to_end_worked_example(tmp_path):
    synth = _synth()
    from nsys_diag.app.analyze import analyze_path

    trace = synth.write_preset(tmp_path / "worked_example.sqlite", "worked_example")
    view = analyze_path(str(trace), generated_at=GENERATED_AT)
    html = render_html(view)
    assert html == render_html(analyze_path(str(trace), generated_at=GENERATED_AT))  # byte-identical
    assert 'class="verdict-title">Input bound</h1>' in html
    for sid in SECTION_IDS:
        assert f'<section id="{sid}"' in html
    phases = section(html, "sec-phases")
    assert "420 ms" in phases and "52%" in phases
    assert len(html.encode("utf-8")) < MAX_HTML_BYTES


@pytest.mark.parametrize("preset", ["healthy_tc", "multi_gpu", "no_cuda"])
def test_end_to_end_presets_render(tmp_path, preset):
    synth = _synth()
    from nsys_diag.app.analyze import analyze_path

    if preset not in synth.PRESETS:
        pytest.skip(f"preset {preset} not in this synth")
    trace = synth.write_preset(tmp_path / f"{preset}.sqlite", preset)
    html = render_html(analyze_path(str(trace), generated_at=GENERATED_AT))
    for sid in SECTION_IDS:
        assert f'<section id="{sid}"' in html
    assert "http://" not in html and "https://" not in html


def test_analyze_command_writes_the_report_and_markdown(tmp_path):
    synth = _synth()
    from nsys_diag.app.analyze import analyze_command

    trace = synth.write_preset(tmp_path / "we.sqlite", "worked_example")
    out, md = tmp_path / "r.html", tmp_path / "r.md"
    analyze_command(str(trace), html_out=str(out), md_out=str(md))
    assert "Input bound" in out.read_text(encoding="utf-8")
    assert md.read_text(encoding="utf-8").startswith("### nsys-diag: Input bound")
    analyze_command(str(trace))  # default: beside the trace
    assert (tmp_path / "we.nsys-diag.html").is_file()


def test_backtick_commands_in_hints_show_as_code():
    from nsys_diag.report.page import segments

    assert segments("run `nsys profile -t cuda` then `x`") == [
        (False, "run "), (True, "nsys profile -t cuda"), (False, " then "), (True, "x")]
    assert segments("odd ` count") == [(False, "odd ` count")]
    assert segments(None) == []
    view = sparse_view()
    view["steps"]["hint"] = "annotate with `<script>nvtx.range()</script>`"
    html = section(render_html(view), "sec-steps")
    assert "<code>&lt;script&gt;nvtx.range()&lt;/script&gt;</code>" in html


def test_step_lists_read_as_step_numbers():
    from nsys_diag.report.tables import step_list
    assert step_list([0]) == "step 0"
    assert step_list([3, 4]) == "steps 3–4"
    assert step_list([0, 1, 2, 7]) == "steps 0–2, 7"
    assert step_list([]) == "none"


def test_identical_longest_gaps_are_grouped():
    from nsys_diag.report.tables import gap_group_line, gap_groups
    same = {"cause": "input", "device_id": 0, "phase": "data_loading", "cpu_activity": "in cudaMemcpyAsync"}
    top = [{**same, "duration_ms": 444.29, "start_ns": 10 + i} for i in range(10)]
    top.append({**same, "duration_ms": 423.0, "start_ns": 1})
    groups = gap_groups(top)
    assert [g["count"] for g in groups] == [10, 1]
    assert groups[0]["starts_ns"] == list(range(10, 20))
    assert gap_group_line(groups[0]).startswith("×10 gaps of 444 ms in data_loading (waiting on input, GPU 0), "
                                                "CPU in cudaMemcpyAsync")
    assert gap_group_line(groups[1]).startswith("423 ms in data_loading")


def test_same_named_kernels_get_their_functor():
    from nsys_diag.analyses.kernels.catalog import distinct_labels
    base = "void at::native::elementwise_kernel<(int)128, (int)4, void at::native::gpu_kernel_impl_nocast<{}>"
    names = [base.format("at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor"
                         "<float>>"),
             base.format("at::native::CUDAFunctor_add<float>"),
             base.format("at::native::CUDAFunctor_add<c10::BFloat16>"),
             "flash_fwd_kernel<x>"]
    shorts = ["elementwise_kernel"] * 3 + ["flash_fwd_kernel"]
    assert distinct_labels(names, shorts) == [
        "elementwise_kernel · MulFunctor · fp32", "elementwise_kernel · CUDAFunctor_add · fp32",
        "elementwise_kernel · CUDAFunctor_add · bf16", "flash_fwd_kernel"]
    assert distinct_labels(["k<a>", "k<a>"], ["k", "k"]) == ["k #1", "k #2"]
