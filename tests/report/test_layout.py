"""Every report kind in a real browser at 1400 px and 800 px: nothing clipped, no chart labels on
top of each other, no console errors (issues 17 item 6 and 28 item 1).

Headless Debian Chromium driven by Playwright, as in ``test_browser.py`` (skips the same way).
The checks live in ``layout_audit.js``, the same at both widths: no element (table cells and
captions included) is wider inside than its box (``scrollWidth > clientWidth``: nothing clipped,
truncated or scrolling sideways, ``.table-scroll`` wrappers included), the page never scrolls
sideways, every table lies inside its card, no short word is broken over two lines
("insufficien/t_data", "RAN/K"); in every ``svg.chart`` no two labels' bounding boxes overlap, none
leaves the chart and, at 800 px, none renders below 11 px. Reports: ``analyze`` on each sample
trace and on a real export and an ncu-only CSV (``../shared/traces``, skipped when absent), a
batch index, a batch index of a 4-rank job (its Ranks section), a compare report (with its
step-time distribution chart), the compare of a pair that is not comparable, a compare of
exports with long names and the report of a torch.profiler (Kineto) trace.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from batch_traces import rank_set
from test_browser import CHROMIUM_ARGS, TIMEOUT_MS, _chromium

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
SAMPLES = sorted((REPO / "sample_traces").glob("*.sqlite"))
REAL = REPO.parent / "shared" / "traces" / "nsys" / "fastvideo_train_2xh100_2026.2.sqlite"
NCU = REPO.parent / "shared" / "traces" / "ncu" / "interp_a100_details.csv"
AUDIT = (Path(__file__).with_name("layout_audit.js")).read_text(encoding="utf-8")
WIDTHS = (1400, 800)


ERRORS: dict[str, str] = {}
"""The stderr of each command that wrote no report (for the assertion message)."""


def _cli(*args: str) -> None:
    r = subprocess.run([sys.executable, "-m", "nsys_diag", *args], check=False, cwd=REPO, timeout=600,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode not in (0, 4):
        ERRORS[" ".join(args)] = r.stderr[-2000:]


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
    rank_set(out / "ranks_in")
    _cli("batch", str(out / "ranks_in"), "-o", str(out / "ranks"), "-j", "2", "--no-cache")
    paths["batch_ranks"] = out / "ranks" / "index.html"
    _cli("compare", str(REPO / "sample_traces" / "worked_example.sqlite"),
         str(REPO / "sample_traces" / "healthy_tc.sqlite"), "-o", str(out / "compare.html"))
    paths["compare"] = out / "compare.html"
    _cli("compare", str(REPO / "sample_traces" / "worked_example.sqlite"),
         str(REPO / "sample_traces" / "no_cuda.sqlite"), "-o", str(out / "compare_incomparable.html"))
    paths["compare_incomparable"] = out / "compare_incomparable.html"
    # names as long as real ones (a path of run ids): the header wraps them, never cuts them
    long_a = out / ("fastvideo_train_2xh100_2026.2_run_0123456789abcdef_rank0_before_fix"
                    ".sqlite")
    long_b = out / ("nvfuser_matmul_h200_2024.6_run_fedcba9876543210_rank0_after_fix.sqlite")
    shutil.copy(REPO / "sample_traces" / "worked_example.sqlite", long_a)
    shutil.copy(REPO / "sample_traces" / "overhead_bound.sqlite", long_b)
    _cli("compare", str(long_a), str(long_b), "-o", str(out / "compare_long_names.html"))
    paths["compare_long_names"] = out / "compare_long_names.html"
    kineto = REPO / "sample_traces" / "healthy_tc.pt.trace.json.gz"
    _cli("analyze", str(kineto), "-o", str(out / "kineto.html"))
    paths["kineto"] = out / "kineto.html"
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


KINDS = [t.stem for t in SAMPLES] + ["batch_index", "batch_ranks", "compare", "compare_incomparable",
                                     "compare_long_names", "kineto", "real_fastvideo",
                                     "real_ncu_only"]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("kind", KINDS)
def test_nothing_clipped_or_overlapping(browser, reports, kind, width):
    if kind not in reports:
        pytest.skip("../shared/traces not present")
    html = reports[kind]
    assert html.is_file(), f"{kind}: no report written: {ERRORS}"
    problems, errors = _audit(browser, html, width)
    assert problems == [], f"{kind} @ {width}px:\n" + "\n".join(json.dumps(p, ensure_ascii=False) for p in problems)
    assert errors == []


def test_the_audit_sees_what_it_should(browser, tmp_path):
    """The audit itself: a clipped box, a table scrolling inside its wrapper, a page wider than the
    window, two labels on top of each other, a short word broken over two lines and (at 800 px)
    chart text scaled below 11 px are reported, at both widths alike."""
    html = tmp_path / "bad.html"
    html.write_text(
        "<!DOCTYPE html><html><body style='margin:0'>"
        "<div id='clip' style='width:100px;overflow:hidden;white-space:nowrap'>" + "x" * 200 + "</div>"
        "<div class='table-scroll' style='width:100px;overflow-x:auto'><table><tr><td style='white-space:nowrap'>"
        + "y" * 200 + "</td></tr></table></div>"
        "<p id='broken' style='width:40px;overflow-wrap:anywhere'>insufficient_data</p>"
        "<svg class='chart' viewBox='0 0 200 50' width='200' height='50'>"
        "<text x='10' y='20'>1ms–10ms</text><text x='30' y='20'>10ms–100ms</text></svg>"
        "<svg class='chart' viewBox='0 0 2000 50' style='width:400px'><text x='10' y='30' style='font-size:12px'>tiny</text></svg>"
        "<div style='width:3000px'>wide</div></body></html>", encoding="utf-8")
    for width in WIDTHS:
        found, _ = _audit(browser, html, width)
        kinds = {(p["kind"], "table-scroll" in p["where"]) for p in found}
        assert ("overflow", False) in kinds and ("overflow", True) in kinds
        assert ("page-scroll", False) in kinds and ("label-overlap", False) in kinds
        assert any(p["kind"] == "word-broken" and "insufficient" in p["detail"] for p in found)
        assert any(p["kind"] == "label-small" for p in found) == (width < 1000)
