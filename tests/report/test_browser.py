"""The report in a real browser: headless Debian Chromium driven by Playwright for Python.

Checks what only a browser can: the verdict and every section are in the rendered DOM, the page
makes no network request of any kind, logs no console error, runs no injected script, reads with
JavaScript disabled, and its sorting/filtering works. Saves ``artifacts/report.png`` (the worked
example) for people to look at. Skips — saying why — only when no Chromium binary or no
Playwright is available (``.ci/run`` installs both; never ``playwright install``).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from sample_views import GENERATED_AT, HOSTILE_KERNEL, hostile_view, input_bound_view, large_view

from nsys_diag.report.html_report import render_html
from nsys_diag.report.page import SECTIONS

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "artifacts"
SECTION_IDS = [f"sec-{k}" for k, _ in SECTIONS]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-quic"]
TIMEOUT_MS = 30_000


def _chromium() -> str | None:
    for candidate in (os.environ.get("NSYS_DIAG_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                      shutil.which("chromium-browser")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture(scope="module")
def browser_factory(tmp_path_factory):
    """Opens pages in a fresh-profile headless Chromium; records requests, console and dialogs."""
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium binary (apt-get install chromium; .ci/run does this)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright for Python is not installed (pip install playwright; no browser download needed)")
    pw = sync_playwright().start()
    contexts = []

    def open_report(html_path: Path, *, javascript: bool = True, color_scheme: str = "light"):
        ctx = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=exe, args=CHROMIUM_ARGS,
            headless=True, java_script_enabled=javascript, viewport={"width": 1280, "height": 900},
            color_scheme=color_scheme, offline=True)
        contexts.append(ctx)
        page = ctx.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        seen = {"requests": [], "console": [], "dialogs": [], "errors": []}
        url = html_path.resolve().as_uri()

        def route(r):
            if r.request.url == url:
                r.continue_()
            else:  # anything else — http(s), another file, a data: image… — is a failure
                seen["requests"].append(r.request.url)
                r.abort()

        ctx.route("**/*", route)
        page.on("request", lambda req: None if req.url == url else seen["requests"].append(req.url))
        page.on("console", lambda m: seen["console"].append((m.type, m.text)))
        page.on("pageerror", lambda e: seen["errors"].append(str(e)))

        def on_dialog(d):
            seen["dialogs"].append(d.message)
            d.dismiss()

        page.on("dialog", on_dialog)
        page.goto(url, wait_until="load")
        return page, seen

    yield open_report
    for ctx in contexts:
        ctx.close()
    pw.stop()


def _write(tmp_path: Path, name: str, view: dict) -> Path:
    path = tmp_path / name
    path.write_text(render_html(view), encoding="utf-8")
    return path


def _worked_example_view(tmp_path: Path) -> dict:
    """Real pipeline output on the worked-example preset when available, else the sample view."""
    try:
        from nsys_diag import synth
        from nsys_diag.app.analyze import analyze_path
    except ImportError:
        return input_bound_view()
    trace = synth.write_preset(tmp_path / "worked_example.sqlite", "worked_example")
    return analyze_path(str(trace), generated_at=GENERATED_AT)


def test_report_renders_offline_without_errors(browser_factory, tmp_path):
    html_path = _write(tmp_path, "worked_example.nsys-diag.html", _worked_example_view(tmp_path))
    page, seen = browser_factory(html_path)
    assert page.locator("#verdict-title").inner_text() == "Input bound"
    assert "input" in page.locator("#sec-verdict .headline").inner_text().lower()
    for sid in SECTION_IDS:
        loc = page.locator(f"section#{sid}")
        assert loc.count() == 1, sid
        assert loc.locator("h1, h2").first.is_visible(), sid
    assert page.locator("#sec-phases svg.chart").count() == 1
    assert page.locator("#sec-steps svg.chart").count() == 1
    assert page.evaluate("JSON.parse(document.getElementById('nsys-diag-data').textContent).verdict.code") \
        == "input_bound"
    assert page.evaluate("document.documentElement.classList.contains('js')")  # our JS ran
    assert seen["requests"] == [], f"network requests attempted: {seen['requests']}"
    assert seen["errors"] == [] and [c for c in seen["console"] if c[0] in ("error", "warning")] == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    assert (ARTIFACTS / "report.png").stat().st_size > 10_000


def test_tables_sort_and_filter(browser_factory, tmp_path):
    page, seen = browser_factory(_write(tmp_path, "sorting.html", input_bound_view()))
    rows = page.locator("#tbl-kernels tbody tr")
    total = rows.count()
    assert total == 12

    def launches():
        return [int(t.replace(",", "")) for t in page.locator("#tbl-kernels tbody tr td:nth-child(4)").all_inner_texts()]

    header = page.locator("#tbl-kernels thead th").nth(3).locator("button.sort")
    header.click()
    first = launches()
    assert first == sorted(first, reverse=True)
    header.click()
    assert launches() == sorted(first)
    tools = page.locator(".table-tools[data-table='tbl-kernels']")
    assert tools.is_visible()
    tools.locator("input.tbl-filter").fill("flash")
    visible = page.locator("#tbl-kernels tbody tr:visible")
    assert visible.count() == 2
    assert "2 of 12 rows match" in tools.locator(".tbl-live").inner_text()
    tools.locator("input.tbl-filter").fill("")
    tools.locator("select.tbl-category").select_option("attention")
    assert page.locator("#tbl-kernels tbody tr:visible").count() == 2
    assert seen["errors"] == [] and seen["requests"] == []


def test_long_tables_collapse_behind_a_button(browser_factory, tmp_path):
    page, seen = browser_factory(_write(tmp_path, "large.html", large_view(n_kernels=500, n_steps=3000)))
    assert page.locator("#tbl-kernels tbody tr:visible").count() == 25
    more = page.locator("#sec-kernels button.more")
    assert more.inner_text() == "Show all 200 rows"
    more.click()
    assert page.locator("#tbl-kernels tbody tr:visible").count() == 200
    assert "Showing 200 of 500 kernels." in page.locator("#sec-kernels").inner_text()
    assert seen["errors"] == [] and seen["requests"] == []


def test_page_reads_fully_with_javascript_off(browser_factory, tmp_path):
    page, seen = browser_factory(_write(tmp_path, "nojs.html", input_bound_view()), javascript=False)
    assert page.locator("#verdict-title").inner_text() == "Input bound"
    assert page.locator("#tbl-kernels tbody tr:visible").count() == 12
    assert page.locator(".table-tools").first.is_hidden()  # the filter box needs JS; hidden without it
    for sid in SECTION_IDS:
        assert page.locator(f"section#{sid}").is_visible()
    assert seen["requests"] == []


def test_hostile_trace_runs_no_script(browser_factory, tmp_path):
    page, seen = browser_factory(_write(tmp_path, "hostile.html", hostile_view()), color_scheme="dark")
    assert seen["dialogs"] == [], "an injected script ran"
    assert page.locator("img").count() == 0
    assert page.locator("script").count() == 2
    cell = page.locator("#tbl-kernels tbody tr").first.locator("td").first
    assert HOSTILE_KERNEL in cell.inner_text() or HOSTILE_KERNEL in (cell.get_attribute("title") or "")
    data = page.evaluate("JSON.parse(document.getElementById('nsys-diag-data').textContent)")
    assert data["kernels"][0]["short_name"] == HOSTILE_KERNEL
    assert seen["requests"] == [] and seen["errors"] == []
