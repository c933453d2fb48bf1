"""examples/train_loop.py runs on a CPU-only machine and emits the documented ranges."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from nsys_diag import annotate
from nvtx_spy import install

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "train_loop.py"


def test_example_runs_as_a_script():
    proc = subprocess.run([sys.executable, str(EXAMPLE), "--steps", "3", "--data-ms", "0", "--numpy"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "done: 3 steps" in proc.stdout
    assert "step    0  loss" in proc.stdout


def test_example_rejects_bad_arguments():
    proc = subprocess.run([sys.executable, str(EXAMPLE), "--steps", "0"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--steps" in proc.stderr


@pytest.fixture
def example_module():
    spec = importlib.util.spec_from_file_location("train_loop_example", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_example_emits_steps_with_data_and_phases(monkeypatch, example_module, capsys):
    rec = install(monkeypatch)
    try:
        assert example_module.main(["--steps", "2", "--numpy", "--data-ms", "0",
                                    "--log-every", "2"]) == 0
    finally:
        annotate._reset_for_tests()
    body = [("start", "forward"), ("end", "forward"), ("start", "backward"), ("end", "backward"),
            ("start", "optimizer"), ("end", "optimizer")]
    expected = (
        [("start", "train_step_0"), ("push", "data"), ("pop", "data"), *body,
         ("start", "overhead"), ("end", "overhead"), ("end", "train_step_0")]
        + [("start", "train_step_1"), ("push", "data"), ("pop", "data"), *body,
           ("start", "overhead"), ("end", "overhead"), ("end", "train_step_1")]
        + [("push", "data"), ("pop", "data")]  # the exhausting fetch, outside any step
    )
    assert rec.calls == [(op, text, "nsys-diag") for op, text in expected]
