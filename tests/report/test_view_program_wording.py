"""Capture hints worded for the program that ran (issue 26): a compiled CUDA C, OpenMP offload,
OpenACC or stdpar program, an MPI code or an ncu-only capture of one is never told to mark
steps with torch.profiler, to run ``python train.py`` under nsys or ncu, or to use a DataLoader;
a PyTorch run keeps the PyTorch wording."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nsys_diag.app.analyze import analyze_path
from nsys_diag.model.vocabulary import (EXAMPLE_NATIVE_RUN, EXAMPLE_PYTHON_RUN, HINT_CAPTURE_STEPS,
                                        HINT_MARK_STEPS, HINT_NCU, NATIVE_FRAMEWORKS, hint_for,
                                        hint_wording)
from nsys_diag.report.markdown import render_markdown
from nsys_diag.synth import preset, programs, write_nsys_sqlite
from tests.report.test_view import _walk

PYTORCH_WORDS = re.compile(r"python train\.py|ProfilerStep|torch\.|DataLoader|num_workers|"
                           r"pin_memory|\.item\(\)")
"""Words that only a PyTorch program can act on."""


def _strings(node):
    return (x for x in _walk(node) if isinstance(x, str))


def _case_path(name: str, tmp: Path) -> Path:
    ext = ".csv" if name in programs.NCU_CASES else ".sqlite"
    return programs.write_case(name, tmp / f"{name}{ext}")


@pytest.fixture(scope="module")
def program_views(tmp_path_factory) -> dict[str, dict]:
    tmp = tmp_path_factory.mktemp("wording")
    out = {}
    for name in programs.CASES:
        view = json.loads(json.dumps(analyze_path(str(_case_path(name, tmp)), generated_at="t"),
                                     default=str))
        out[name] = view
    return out


def _framework(view: dict) -> str | None:
    return (view.get("program") or {}).get("framework")


def test_the_cases_cover_compiled_and_other_programs(program_views):
    frameworks = {_framework(v) for v in program_views.values()}
    assert frameworks & set(NATIVE_FRAMEWORKS), frameworks
    assert len(frameworks - {"pytorch", None}) >= 3, frameworks


@pytest.mark.parametrize("name", programs.CASES)
def test_no_pytorch_words_for_a_program_that_is_not_pytorch(program_views, name):
    view = program_views[name]
    if _framework(view) in (None, "pytorch"):
        pytest.skip(f"{name} is a PyTorch run (or no program was detected)")
    found = [t for t in _strings(view) if PYTORCH_WORDS.search(t)]
    found += [line for line in render_markdown(view).splitlines() if PYTORCH_WORDS.search(line)]
    assert found == [], (name, _framework(view), found[:5])


def test_a_compiled_program_is_told_to_run_its_binary(program_views):
    native = [v for v in program_views.values() if _framework(v) in NATIVE_FRAMEWORKS]
    assert native
    texts = [t for v in native for t in _strings(v)]
    assert any(EXAMPLE_NATIVE_RUN in t for t in texts)


def test_hint_wording_by_format_and_framework():
    assert hint_wording("nsys-sqlite", "pytorch") == "pytorch"
    assert hint_wording("nsys-sqlite", None) == "pytorch"
    assert hint_wording("nsys-sqlite", "openmp_offload") == "native"
    assert hint_wording("nsys-sqlite", "stdpar") == "native"
    assert hint_wording("nsys-sqlite", "jax") == "neutral"
    native_steps = hint_for(HINT_CAPTURE_STEPS, "nsys-sqlite", "cuda")
    assert "nvtxRangePushA" in native_steps and "ProfilerStep" not in native_steps
    assert EXAMPLE_NATIVE_RUN in hint_for(HINT_NCU, "nsys-sqlite", "openacc")
    assert EXAMPLE_PYTHON_RUN not in hint_for(HINT_NCU, "nsys-sqlite", "openacc")
    neutral = hint_for(HINT_MARK_STEPS, "nsys-sqlite", "jax")
    assert "torch" not in neutral and "nvtx" in neutral
    # A PyTorch program keeps every hint as it is written.
    assert hint_for(HINT_MARK_STEPS, "nsys-sqlite", "pytorch") == HINT_MARK_STEPS
    assert hint_for(HINT_NCU, "nsys-sqlite", None) == HINT_NCU


def test_user_text_with_the_words_is_left_alone():
    text = "kernel python train.py_step"
    assert hint_for(text, "nsys-sqlite", "cuda") == text


def test_a_pytorch_run_keeps_the_pytorch_wording(tmp_path):
    view = analyze_path(str(write_nsys_sqlite(tmp_path / "t.sqlite", preset("no_nvtx"))),
                        generated_at="t")
    assert _framework(view) in (None, "pytorch")
    texts = list(_strings(json.loads(json.dumps(view, default=str))))
    assert any("ProfilerStep" in t or "nvtx.annotate" in t or EXAMPLE_PYTHON_RUN in t
               for t in texts)
