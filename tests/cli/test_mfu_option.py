"""`analyze --model-flops-per-sample/--model-flops-per-step`: the `mfu` section, checked by hand."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from nsys_diag.cli import main

WORKED = Path(__file__).resolve().parents[2] / "sample_traces" / "worked_example.sqlite"


def _mfu(*args: str) -> dict:
    res = CliRunner().invoke(main, ["analyze", str(WORKED), "--json", "-", "--no-html", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["mfu"]


def test_mfu_from_flops_per_sample_and_batch_size():
    m = _mfu("--batch-size", "32", "--model-flops-per-sample", "6e12")
    # 32 samples × 6 TFLOP per 800 ms step = 240 TFLOP/s; H100 SXM dense BF16 peak 989.4 TFLOP/s
    assert m["available"] and m["step_ms"] == pytest.approx(800.0)
    assert m["achieved_tflops"] == pytest.approx(240.0)
    assert m["samples_per_s"] == pytest.approx(40.0)
    assert m["peak_precision"] == "tensor_fp16" and m["mfu"] == pytest.approx(240.0 / 989.4)


def test_flops_per_step_wins_and_without_flops_mfu_is_unavailable():
    m = _mfu("--model-flops-per-step", "1e14", "--batch-size", "32", "--model-flops-per-sample", "1")
    assert m["flops_source"] == "per_step" and m["achieved_tflops"] == pytest.approx(125.0)
    off = _mfu()
    assert off["available"] is False and "--model-flops-per-step" in off["reason"]


def test_non_positive_flops_are_a_usage_error():
    res = CliRunner().invoke(main, ["analyze", str(WORKED), "--no-html",
                                    "--model-flops-per-step", "0"])
    assert res.exit_code == 2
