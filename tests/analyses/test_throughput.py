"""Loader vs model throughput."""
from __future__ import annotations

import numpy as np
import pytest

import handframes as hf
from handframes import MS
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.timeline.busy import choose_window, device_busy
from nsys_diag.analyses.steps.phases import analyze_phases
from nsys_diag.analyses.steps.detection import analyze_steps
from nsys_diag.analyses.throughput import analyze_throughput
from nsys_diag.model import contracts as C

WORKED = [("data_loading", 420 * MS), ("forward", 180 * MS), ("backward", 150 * MS),
          ("optimizer_step", 30 * MS), ("logging", 20 * MS)]


def _steps_phases(rows):
    nv = hf.nvtx(rows)
    k = C.KERNELS.empty()
    st = analyze_steps(nv, k)
    w = choose_window(st, k, C.MEMCPY.empty(), C.MEMSET.empty())
    return st, analyze_phases(nv, st, k, device_busy(k, C.MEMCPY.empty(), C.MEMSET.empty(), w))


def test_loader_is_the_bottleneck_in_the_worked_example():
    st, ph = _steps_phases(hf.steps_and_phases(5, WORKED))
    r = analyze_throughput(st, ph, batch_size=64)
    assert r.source == "--batch-size"
    assert r.loader_samples_per_s == pytest.approx(64 / 0.420)
    assert r.model_samples_per_s == pytest.approx(64 / 0.380)
    assert r.step_samples_per_s == pytest.approx(80.0)
    assert r.bottleneck == "loader"
    assert r.to_json()["available"] is True


def test_batch_size_from_the_step_payload():
    rows = hf.steps_and_phases(5, WORKED)
    for r in rows:
        if r["text"].startswith("train_step"):
            r["payload"] = 32.0
    st, ph = _steps_phases(rows)
    r = analyze_throughput(st, ph)
    assert r.source == "nvtx_payload" and r.batch_size == 32.0


def test_unavailable_without_batch_size_or_steps():
    st, ph = _steps_phases(hf.steps_and_phases(5, WORKED))
    r = analyze_throughput(st, ph)
    assert isinstance(r, Unavailable) and "--batch-size" in r.hint
    assert isinstance(analyze_throughput(Unavailable("x"), Unavailable("x"), batch_size=8), Unavailable)


def test_no_data_phase_means_the_model_bounds_throughput():
    st, ph = _steps_phases(hf.steps_and_phases(5, [("forward", 10 * MS)]))
    r = analyze_throughput(st, ph, batch_size=10)
    assert r.loader_samples_per_s is None and r.bottleneck == "model"
    assert np.isclose(r.model_samples_per_s, 1000.0)
