"""No PyTorch or ML-training words in what the report of a program that is not PyTorch says
(issue 26): the HTML page, the Markdown summary and the terminal text of every generated
non-PyTorch program (CUDA C, OpenMP offload, OpenACC, stdpar, MPI, ncu-only) and of the shared
MPI saxpy export never tell the user about ``.item()``, AMP/autocast, gradients, loader workers,
batch sizes, epochs or optimizers — outside the text the program itself wrote (kernel and NVTX
names). A PyTorch run keeps the PyTorch wording."""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from nsys_diag.app.analyze import analyze_path
from nsys_diag.app.options import build_options
from nsys_diag.report.html_report import render_html
from nsys_diag.report.markdown import render_markdown
from nsys_diag.report.text import render_text
from nsys_diag.report.view import worded_for_program
from nsys_diag.synth import preset, programs, write_nsys_sqlite
from tests.conftest import shared_trace

ML_WORDS = re.compile(r"\.item\(\)|\.cpu\(\)|DataLoader|loader workers?|\btorch\b|\bAMP\b|"
                      r"(?i:autocast|pin_memory|num_workers|gradient|optimizer|batch[ -]size|"
                      r"\bepochs?\b)")
"""What only a PyTorch (or ML-training) program can act on."""

CLI_FLAG = re.compile(r"--[a-z][\w-]*")
"""nsys-diag's own options (``--batch-size``, ``--grad-bytes``): named, not advised."""

USER_KEYS = ("name", "names", "short_name", "display_name", "range", "step_range", "label")
"""Keys of the view whose strings the program wrote (kernel, NVTX, thread and process names)."""

NOT_PYTORCH = tuple(c for c in programs.CASES if programs.facts(c)["framework"] != "pytorch")


class _VisibleText(HTMLParser):
    """The text a reader sees (and the tooltips), not the page's style and script."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("style", "script"):
            self.hidden += 1
        self.parts += [v for k, v in attrs if k in ("title", "aria-label") and v]

    def handle_endtag(self, tag):
        if tag in ("style", "script"):
            self.hidden -= 1

    def handle_data(self, data):
        if not self.hidden:
            self.parts.append(data)


def visible_text(html: str) -> str:
    parser = _VisibleText()
    parser.feed(html)
    return "".join(parser.parts)


def _user_strings(node, key: str = "") -> list[str]:
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in _user_strings(v, k)]
    if isinstance(node, list):
        return [s for v in node for s in _user_strings(v, key)]
    return [node] if isinstance(node, str) and node and key in USER_KEYS else []


def ml_words(text: str, view: dict) -> list[str]:
    """The PyTorch/ML words of ``text`` (a rendered report of ``view``), each with its context,
    once the program's own names and nsys-diag's option names are taken out."""
    text = text.replace("\\", "")  # Markdown's escapes (MPI\\_Send)
    for s in sorted(set(_user_strings(view)), key=len, reverse=True):
        text = text.replace(s, " ")
    text = CLI_FLAG.sub(" ", text)
    return [text[max(0, m.start() - 70):m.end() + 30] for m in ML_WORDS.finditer(text)]


def _view(path: Path) -> dict:
    return json.loads(json.dumps(analyze_path(str(path), build_options(memory_budget="none"),
                                              generated_at="t"), default=str))


def _renders(view: dict) -> dict[str, str]:
    return {"html": visible_text(render_html(view)), "markdown": render_markdown(view),
            "text": render_text(view)}


@pytest.fixture(scope="module")
def case_views(tmp_path_factory) -> dict[str, dict]:
    tmp = tmp_path_factory.mktemp("report_words")
    return {name: _view(programs.write_case(
        name, tmp / (name + (".csv" if name in programs.NCU_CASES else ".sqlite"))))
        for name in NOT_PYTORCH}


def test_the_cases_cover_every_compiled_framework_and_mpi():
    frameworks = {programs.facts(c)["framework"] for c in NOT_PYTORCH}
    assert {"cuda", "openmp_offload", "openacc", "stdpar"} <= frameworks
    assert "mpi_saxpy" in NOT_PYTORCH


@pytest.mark.parametrize("name", NOT_PYTORCH)
def test_no_pytorch_or_training_words_in_the_report_of_a_program_that_is_not_pytorch(
        case_views, name):
    view = case_views[name]
    assert (view.get("program") or {}).get("framework") != "pytorch"
    for kind, text in _renders(view).items():
        assert ml_words(text, view) == [], (name, kind)


def test_no_pytorch_or_training_words_in_the_report_of_the_shared_mpi_export():
    view = _view(shared_trace("nsys/saxpy_mpi_a100_2022.2.sqlite"))
    assert view["program"]["framework"] == "cuda"
    renders = _renders(view)
    for kind, text in renders.items():
        assert ml_words(text, view) == [], kind
    assert "Communicate less often" in renders["markdown"]  # the advice is there, reworded
    assert "synchronous copies blocked the CPU thread (e.g. cudaMemcpy)" in renders["html"]


def test_the_words_are_found_where_they_are_written():
    view = {"kernels": [{"name": "sgd_optimizer_step_kernel"}]}
    assert ml_words("sgd_optimizer_step_kernel ran; pass --batch-size N", view) == []
    assert ml_words("use gradient accumulation", view)
    assert ml_words("e.g. .item(), .cpu()", view)
    assert ml_words("Check the dtype (AMP / bf16 / TF32)", view)
    assert not ml_words("EXAMPLE of SAMPLED frames", view)


# ------------------------------------------------------------- the notes, worded per framework
@pytest.fixture(scope="module")
def simt_view(tmp_path_factory) -> dict:
    """A PyTorch run whose GEMMs missed the Tensor Cores (the ``simt_gemm`` preset)."""
    path = write_nsys_sqlite(tmp_path_factory.mktemp("simt") / "simt.sqlite", preset("simt_gemm"))
    view = _view(path)
    assert view["program"]["framework"] == "pytorch" and view["tensor_cores"]["non_tc_gemm_share"]
    return view


def _as_program(view: dict, framework: str, sync_copies: int = 12) -> dict:
    """``view`` as the report of a ``framework`` program with synchronous copies: worded as
    ``build_view`` words it (``worded_for_program``)."""
    out = json.loads(json.dumps(view))
    out["program"]["framework"] = framework
    out["transfers"]["sync_copies"] = sync_copies
    return out if framework == "pytorch" else worded_for_program(out, "nsys-sqlite", framework)


def test_a_pytorch_run_keeps_the_pytorch_wording(simt_view):
    view = _as_program(simt_view, "pytorch")
    html = visible_text(render_html(view))
    assert "Check the dtype (AMP / bf16 / TF32)" in html
    assert "12 synchronous copies blocked the CPU thread (e.g. .item(), .cpu(), cudaMemcpy)" in html
    assert "AMP bf16/fp16" in view["tensor_cores"]["advice"]
    advice = [a["text"] for f in view["findings"] for a in f.get("advice", [])]
    assert any("torch.autocast" in t for t in advice)


@pytest.mark.parametrize("framework, sync_example", [
    ("cuda", "(e.g. cudaMemcpy)"), ("stdpar", "(e.g. cudaMemcpy)"),
    ("openmp_offload", "(e.g. target update or map without nowait)"),
    ("openacc", "(e.g. update or copy without async)"), ("jax", "(e.g. cudaMemcpy)")])
def test_the_notes_of_another_program_name_what_it_can_change(simt_view, framework, sync_example):
    view = _as_program(simt_view, framework)  # (its findings keep the PyTorch run's advice)
    html = visible_text(render_html(view))
    assert "12 synchronous copies blocked the CPU thread " + sync_example in html
    callout = re.search(r"missed the Tensor Cores \([^)]*\)\.(.*?\.)\s", html, re.DOTALL)
    assert callout and "cuBLAS math mode / compute type" in callout[1]
    assert "cuBLAS math mode" in view["tensor_cores"]["advice"]
    notes = [callout[1], view["tensor_cores"]["advice"],
             re.search(r"synchronous copies blocked[^\n]*?\)", html)[0]]
    assert [n for n in notes if ml_words(n, view)] == [], framework
