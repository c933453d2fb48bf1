"""Every report kind in a real browser at 1400 px and 800 px: nothing clipped, no chart labels on
top of each other, no console errors (issue 17 item 6).

Headless Debian Chromium driven by Playwright, as in ``test_browser.py`` (skips the same way).
The checks live in ``layout_audit.js``: at 1400 px no element may be wider inside than its box
(``scrollWidth > clientWidth``) and the page never scrolls sideways; at 800 px the same, except
that a wide table may scroll inside its own ``.table-scroll`` wrapper; in every ``svg.chart`` no
two labels' bounding boxes overlap and none leaves the chart. Reports: ``analyze`` on each sample
trace and on a real export (``../shared/traces``, skipped when absent), a batch index, a
compare report (with its step-time distribution chart) and an ncu-only report.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_browser import CHROMIUM_ARGS, TIMEOUT_MS, _chromium

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
SAMPLES = sorted((REPO / "sample_traces").glob("*.sqlite"))
REAL = REPO.parent / "shared" / "traces" / "nsys" / "fastvideo_train_2xh100_2026.2.sqlite"
NCU = REPO.parent / "shared" / "traces" / "ncu" / "interp_a100_details.csv"
AUDIT = (Path(__file__).with_name("layout_audit.js")).read_text(encoding="utf-8")
WIDTHS = (1400, 800)


def _cli(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "nsys_diag", *args], check=False, cwd=REPO, timeout=600,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    """name → HTML file, for every report kind."""
    out = tmp_path_factory.mktemp("layout")
    paths: dict[str, Path] = {}
    for trace in SAMPLES:
        _cli("analyze", str(trace), "-o", str(out / f"{trace.stem}.html"))
        paths[trace.stem] = out / f"{trace.stem}.html"
    _cli("batch", str(REPO / "sample_traces"), "-o", str(out / "batch"), "-j", "2", "--no-cache")
    paths["batch_index"] = out / "batch" / "index.html"
    _cli("compare", str(REPO / "sample_traces" / "worked_example.sqlite"),
         str(REPO / "sample_traces" / "healthy_tc.sqlite"), "-o", str(out / "compare.html"))
    paths["compare"] = out / "compare.html"
    if NCU.is_file():
        _cli("analyze", str(NCU), "-o", str(out / "real_ncu_only.html"))
        paths["real_ncu_only"] = out / "real_ncu_only.html"
    if REAL.is_file():
        _cli("analyze", str(REAL), "-o", str(out / "real_fastvideo.html"))
        paths["real_fastvideo"] = out / "real_fastvideo.html"
    return paths


@pytest.fixture(scope="module")
def browser():
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium binary (apt-get install chromium; .ci/run does this)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright for Python is not installed (pip install playwright; no browser download needed)")
    pw = sync_playwright().start()
    b = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
    yield b
    b.close()
    pw.stop()


def _audit(browser, html: Path, width: int) -> tuple[list[dict], list[str]]:
    ctx = browser.new_context(viewport={"width": width, "height": 1000}, offline=True)
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(html.resolve().as_uri(), wait_until="load")
    problems = page.evaluate(AUDIT, width < 1000)
    ctx.close()
    return problems, errors


KINDS = [t.stem for t in SAMPLES] + ["batch_index", "compare", "real_fastvideo", "real_ncu_only"]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("kind", KINDS)
def test_nothing_clipped_or_overlapping(browser, reports, kind, width):
    if kind not in reports:
        pytest.skip("../shared/traces not present")
    html = reports[kind]
    assert html.is_file(), f"{kind}: no report written"
    problems, errors = _audit(browser, html, width)
    assert problems == [], f"{kind} @ {width}px:\n" + "\n".join(json.dumps(p, ensure_ascii=False) for p in problems)
    assert errors == []


def test_the_audit_sees_what_it_should(browser, tmp_path):
    """The audit itself: a clipped box, a page wider than the window and two labels on top of each
    other are reported; a wide table inside its scroll wrapper only at 1400 px."""
    html = tmp_path / "bad.html"
    html.write_text(
        "<!DOCTYPE html><html><body style='margin:0'>"
        "<div id='clip' style='width:100px;overflow:hidden;white-space:nowrap'>" + "x" * 200 + "</div>"
        "<div class='table-scroll' style='width:100px;overflow-x:auto'><table><tr><td style='white-space:nowrap'>"
        + "y" * 200 + "</td></tr></table></div>"
        "<svg class='chart' viewBox='0 0 200 50' width='200' height='50'>"
        "<text x='10' y='20'>1ms–10ms</text><text x='30' y='20'>10ms–100ms</text></svg>"
        "<div style='width:3000px'>wide</div></body></html>", encoding="utf-8")
    wide, _ = _audit(browser, html, 1400)
    kinds = {(p["kind"], "table-scroll" in p["where"]) for p in wide}
    assert ("overflow", False) in kinds and ("overflow", True) in kinds
    assert ("page-scroll", False) in kinds and ("label-overlap", False) in kinds
    narrow, _ = _audit(browser, html, 800)
    assert not any("table-scroll" in p["where"] for p in narrow)
