"""The CI recipe (examples/github-actions.yml, docs/ci.md) works as written: its nsys-diag steps,
run locally in bash on generated traces, write the job summary and exit as documented."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nsys_diag import synth

yaml = pytest.importorskip("yaml")
ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "examples" / "github-actions.yml"


def _nsys_diag_steps() -> list[dict]:
    doc = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    steps = doc["jobs"]["perf-gate"]["steps"]
    return [s for s in steps if s.get("name", "").startswith("nsys-diag ")]


def test_workflow_names_the_commands_the_docs_show():
    steps = _nsys_diag_steps()
    assert [s["name"] for s in steps] == ["nsys-diag analyze", "nsys-diag compare"]
    docs = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    for step in steps:
        assert step["run"].strip() in docs


def test_recipe_steps_run_locally(tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    synth.write_preset(traces / "baseline.sqlite", "worked_example", seed=1)
    synth.write_preset(traces / "candidate.sqlite", "worked_example", seed=2)
    bindir = Path(sys.executable).parent
    summary = tmp_path / "summary.md"
    env = dict(os.environ, GITHUB_STEP_SUMMARY=str(summary),
               PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    for step in _nsys_diag_steps():
        proc = subprocess.run(["bash", "-eo", "pipefail", "-c", step["run"]], cwd=tmp_path,
                              env=dict(env, **step.get("env", {})), capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, (step["name"], proc.stderr[-2000:])
    text = summary.read_text(encoding="utf-8")
    assert "input_bound" in text or "Input bound" in text  # the analyze step's verdict
    assert "step" in text.lower() and text.count("\n") > 10  # the compare table follows
    assert not list(traces.glob("*.html")), "--no-html / --md - writes no report beside the trace"
