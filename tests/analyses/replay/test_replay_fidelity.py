"""Fidelity of the causal replay: every sample trace, every generated replay case and the shared
real traces replay within 5% of the capture, and the critical path adds up to the replayed step."""
from __future__ import annotations

from pathlib import Path

import pytest

from nsys_diag.analyses.base import is_available
from nsys_diag.synth.presets import PRESETS, preset
from nsys_diag.synth.replay_cases import REPLAY_CASES
from tests.analyses.replay.replay_helpers import case_path, path_total_ms, replay_trace
from tests.conftest import SAMPLE_TRACES, SHARED_TRACES

SAMPLES = sorted(p.name for p in SAMPLE_TRACES.glob("*.sqlite") if p.stem != "no_cuda")
SHARED = ("fastvideo_train_2xh100_2026.2.sqlite", "mordred_rtx6000_2021.sqlite",
          "nvfuser_matmul_h200_2024.6.sqlite", "saxpy_mpi_a100_2022.2.sqlite")
NO_GPU = ("centerformer_nvtx_only_2022.4.sqlite", "dynamicvit_no_cuda_tables.sqlite")


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("replay_cases")


def _check(result) -> None:
    assert is_available(result), result.to_json()
    fid = result.to_json()["fidelity"]
    assert abs(fid["error_pct"]) <= 5.0, fid
    assert all(abs(s["error_pct"]) <= 5.0 for s in fid["steps"]), fid["steps"]
    per_step = fid["replayed_ms"]
    assert path_total_ms(result) == pytest.approx(per_step, rel=0.02)
    assert sum(r.share for r in result.critical_path) == pytest.approx(1.0, abs=0.02)


@pytest.mark.parametrize("name", SAMPLES)
def test_sample_traces_replay_within_5_percent(name):
    results = replay_trace(SAMPLE_TRACES / name)
    assert results
    for r in results:
        _check(r)
        assert r.basis == "steps"


@pytest.mark.parametrize("name", sorted(REPLAY_CASES))
def test_generated_cases_replay_within_5_percent_and_explained(cases, name):
    for r in replay_trace(case_path(cases, name)):
        _check(r)
        assert r.unexplained_share <= 0.10
        assert 1 <= len(r.steps) <= 5


@pytest.mark.parametrize("name", SHARED)
def test_shared_real_traces_replay_within_5_percent(name):
    path = SHARED_TRACES / "nsys" / name
    if not path.exists():
        pytest.skip(f"../shared/traces/nsys/{name} not present")
    results = replay_trace(path)
    assert results
    for r in results:
        _check(r)


@pytest.mark.parametrize("name", NO_GPU)
def test_shared_traces_without_gpu_work_have_nothing_to_replay(name):
    path = SHARED_TRACES / "nsys" / name
    if not path.exists():
        pytest.skip(f"../shared/traces/nsys/{name} not present")
    assert replay_trace(path) == []  # no process with GPU work: nothing is replayed


def test_no_cuda_sample_has_no_process_to_replay():
    assert replay_trace(SAMPLE_TRACES / "no_cuda.sqlite") == []


def test_steps_chosen_are_representative(cases):
    (r,) = replay_trace(case_path(cases, "input_bound_loop"))
    kinds = [s.kind for s in r.steps]
    assert "median" in kinds and "warmup" in kinds
    assert len({s.index for s in r.steps}) == len(r.steps)


def test_a_step_too_large_for_one_replay_is_replayed_in_slices(cases, monkeypatch):
    from nsys_diag.analyses.replay import analysis

    whole = replay_trace(case_path(cases, "item_per_layer"))[0]
    monkeypatch.setattr(analysis, "MAX_REPLAY_OPS", 40)
    (sliced,) = replay_trace(case_path(cases, "item_per_layer"))
    _check(sliced)
    assert any("slices" in n for n in sliced.notes)
    assert sliced.fidelity()["replayed_ms"] == pytest.approx(whole.fidelity()["replayed_ms"],
                                                            rel=0.05)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_replays_within_5_percent(cases, name):
    for r in replay_trace(case_path(cases, f"preset_{name}", lambda: preset(name))):
        _check(r)
        assert r.unexplained_share <= 0.10
