"""`make fuzz`'s driver (tests/fuzz/run_fuzz.py) really catches crashes and hangs and saves them."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DRIVER = Path(__file__).resolve().parents[1] / "fuzz" / "run_fuzz.py"


def _drive(tmp_path, *extra):
    return subprocess.run([sys.executable, str(DRIVER), "--seconds", "60", "--no-real",
                           "--families", "csv_bytes", "--seed", "1", "--save-dir",
                           str(tmp_path / "saved"), *extra], capture_output=True, text=True,
                          timeout=240)


@pytest.mark.slow
def test_clean_run_reports_its_case_count(tmp_path):
    res = _drive(tmp_path, "--max-cases", "4")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "fuzz: 4 cases," in res.stdout and "0 failures" in res.stdout
    assert not (tmp_path / "saved").exists()


@pytest.mark.slow
@pytest.mark.parametrize("inject,signature,timeout", [("crash", "RuntimeError", "60"),
                                                      ("hang", "hang", "2")])
def test_failures_are_detected_and_saved(tmp_path, inject, signature, timeout):
    res = _drive(tmp_path, "--max-cases", "2", "--inject", inject, "--timeout", timeout)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "2 failures (1 distinct)" in res.stdout, res.stdout
    sidecars = list((tmp_path / "saved").glob("*.json"))
    assert len(sidecars) == 1
    info = json.loads(sidecars[0].read_text())
    assert info["signature"].startswith(signature) and info["case"]
    assert (tmp_path / "saved" / info["trace"]).exists()
