"""Advice and capture hints worded for the input that ran: on a PyTorch profiler (Kineto) trace no
text of ``analyze``'s JSON, Markdown or ``inspect`` tells the user to re-capture with nsys flags,
unless it says that what it asks for needs an Nsight Systems capture (GPU metrics, OS-runtime
calls, CPU samples); the same timeline as an nsys export keeps the nsys wording."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from nsys_diag import synth
from nsys_diag.analyses.diagnosis.advice import ADVICE, advice_flavour, worded
from nsys_diag.cli import main
from nsys_diag.app.analyze import analyze_path
from nsys_diag.model.vocabulary import (HINT_CAPTURE_CUDA, HINT_KINETO_CUDA, KINETO_FORMAT,
                                        KINETO_HINTS, NEEDS_NSYS_CAPTURE, hint_for)
from nsys_diag.report.markdown import render_markdown
from nsys_diag.synth import programs
from nsys_diag.synth.kineto_writer import write_kineto_json

NSYS_ONLY = re.compile(r"nsys profile|-t cuda|--capture-range|cudaProfilerApi|--nvtx-capture|"
                       r"--delay=|--cuda-graph-trace|--gpu-metrics|--cuda-event-trace|"
                       r"--cuda-memory-usage|--sample=|--cpuctxsw|nsys export|\.nsys-rep|"
                       r"torch\.cuda\.profiler\.start")
"""nsys capture flags and commands: on a Kineto run only beside ``NEEDS_NSYS_CAPTURE``."""

CASES = ("startup_dominated", "no_nvtx", "cuda_init_no_launch", "no_cuda", "cuda_graphs",
         "cutlass_pageable", "dataloader_workers")
"""Generated cases that earn capture-range, host-sampling, no-CUDA, no-steps and replay hints."""
REAL = sorted((Path(__file__).parents[1] / "loaders" / "kineto_traces").glob("*.json.gz"))


def _scenario(name: str):
    return synth.preset(name) if name in synth.PRESETS else programs.scenario(name)


def _strings(node, path=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _strings(v, f"{path}.{k}")
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v, f"{path}[]")
    elif isinstance(node, str):
        yield path, node


def _nsys_only(texts) -> list:
    return [(p, t) for p, t in texts if NSYS_ONLY.search(t) and NEEDS_NSYS_CAPTURE not in t]


def _check(path: Path) -> dict:
    view = analyze_path(str(path))
    assert view["trace"]["format"] == KINETO_FORMAT
    assert _nsys_only(_strings(view)) == []
    md = render_markdown(view)
    assert _nsys_only(("markdown", line) for line in md.splitlines()) == []
    result = CliRunner().invoke(main, ["inspect", str(path), "--json", "-"])
    assert result.exit_code == 0, result.output
    inv = json.loads(result.stdout)
    assert _nsys_only(_strings(inv)) == []
    return view


@pytest.mark.parametrize("name", CASES)
def test_generated_kineto_runs_advise_torch_profiler(tmp_path, name):
    view = _check(write_kineto_json(tmp_path / f"{name}.pt.trace.json", _scenario(name)))
    if name == "startup_dominated":  # the capture-range advice, in torch.profiler terms
        texts = [a["text"] for f in view["findings"] for a in f.get("advice") or []]
        assert any("torch.profiler.schedule(wait=" in t for t in texts), texts


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_kineto_runs_advise_torch_profiler(path):
    _check(path)


def test_the_nsys_export_keeps_the_nsys_wording(tmp_path):
    view = analyze_path(str(synth.write_nsys_sqlite(tmp_path / "t.sqlite",
                                                    _scenario("startup_dominated"))))
    texts = [a["text"] for f in view["findings"] for a in f.get("advice") or []]
    assert any("--capture-range=cudaProfilerApi" in t for t in texts), texts


def test_every_kineto_wording_is_torch_profiler_or_says_it_needs_nsys():
    assert hint_for(HINT_CAPTURE_CUDA, KINETO_FORMAT) == HINT_KINETO_CUDA
    assert hint_for(HINT_CAPTURE_CUDA, "nsys-sqlite") == HINT_CAPTURE_CUDA
    for nsys_hint, kineto_hint in KINETO_HINTS.items():
        assert kineto_hint != nsys_hint
        assert not NSYS_ONLY.search(kineto_hint) or NEEDS_NSYS_CAPTURE in kineto_hint, kineto_hint
    flavour = advice_flavour("cuda", KINETO_FORMAT)
    assert flavour == "kineto" and advice_flavour("cuda") == "cuda"
    for rules in ADVICE.values():
        for rule in rules:
            text = worded(rule, flavour) or ""
            assert not NSYS_ONLY.search(text) or NEEDS_NSYS_CAPTURE in text, text
