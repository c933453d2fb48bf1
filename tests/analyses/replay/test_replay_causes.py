"""What the critical path names on the generated cases whose causal structure is known by
construction (nsys_diag/synth/replay_cases.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from nsys_diag.synth import replay_cases as rc
from nsys_diag.synth.presets import preset
from tests.analyses.replay.replay_helpers import case_path, edited_copy, path_ms, replay_trace


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("replay_causes")


def _normal_steps(result):
    return [s for s in result.steps if s.kind != "warmup"]


def test_item_per_layer_waits_on_the_queued_layer_kernels(cases):
    (r,) = replay_trace(case_path(cases, "item_per_layer"))
    # each sync waits for the layer's 2 ms of GEMMs: on the path, in the layer phases
    gemm = sum(x.ms_per_step for x in r.critical_path
               if x.kind == "gpu_compute" and x.name == "gemm" and x.phase == "layer_N")
    assert gemm == pytest.approx(rc.ITEM_LAYERS * rc.ITEM_LAYER_GPU_NS / 1e6, rel=0.05)
    # after each sync returns, the host's own Python time — inside the layer ranges, not "outside"
    host = sum(x.ms_per_step for x in r.critical_path
               if x.kind == "host_cpu" and x.phase == "layer_N")
    assert host == pytest.approx(rc.ITEM_LAYERS * rc.ITEM_PYTHON_NS / 1e6, rel=0.10)
    assert path_ms(r, "blocking_wait") < 0.05 * r.fidelity()["replayed_ms"]


def test_allreduce_after_backward_is_communication_on_the_path(cases):
    for r in replay_trace(case_path(cases, "allreduce_after_backward")):
        comm = path_ms(r, "communication", "all_reduce")
        assert comm == pytest.approx(rc.ALLREDUCE_NS / 1e6, rel=0.02)
        assert all(x.phase == "communication" for x in r.critical_path
                   if x.kind == "communication")


def test_microsecond_syncs_are_a_sliver_of_the_path(cases):
    (r,) = replay_trace(case_path(cases, "microsecond_syncs"))
    assert path_ms(r, "blocking_wait") < 0.05 * r.fidelity()["replayed_ms"]


def test_input_bound_loop_is_host_data_loading(cases):
    (r,) = replay_trace(case_path(cases, "input_bound_loop"))
    data = sum(x.ms_per_step for x in r.critical_path if x.kind == "host_cpu"
               and x.phase == "data")
    assert data == pytest.approx(420, rel=0.02)


def test_shuffled_rows_replay_like_sorted_ones(cases):
    sorted_r = replay_trace(case_path(cases, "worked", lambda: preset("worked_example")))
    shuffled = replay_trace(case_path(cases, "shuffled", lambda: preset("shuffled_rows")))
    a, b = sorted_r[0].to_json(), shuffled[0].to_json()
    assert a["fidelity"] == b["fidelity"]
    assert a["critical_path"] == b["critical_path"]


def test_a_sync_that_returns_too_early_shows_as_fidelity_error(cases, tmp_path):
    """The model says a stream sync waits for the queued GEMMs; a capture whose syncs return at
    once contradicts it, and the replay comes out longer than measured."""
    src = case_path(cases, "item_per_layer")
    bad = edited_copy(src, tmp_path / "early.sqlite",
                      "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = start + 2000 WHERE nameId IN "
                      "(SELECT id FROM StringIds WHERE value LIKE 'cudaStreamSynchronize%')")
    (r,) = replay_trace(bad)
    assert r.error_pct > 5.0


def test_launches_block_beyond_1024_outstanding_operations(cases):
    from nsys_diag.synth.scenarios import MS, US, KernelSpec, PhaseSpec, Scenario

    def deep_queue():
        return Scenario(name="deep_queue", steps=3, gpu="H100", phases=(
            PhaseSpec("forward", 20 * MS, canonical="forward", launch_gap_ns=1 * US, kernels=(
                KernelSpec("ew_add", 100 * US, 1_100, launch_ns=2 * US),)),))

    (r,) = replay_trace(case_path(cases, "deep_queue", deep_queue))
    # the generator does not block the 1,025th launch; the replay does, so it runs longer
    assert r.error_pct > 0


@pytest.mark.parametrize("name", ["worked_example", "launch_bound", "dataloader_workers"])
def test_the_critical_path_is_the_steady_state_step(cases, name):
    """The replayed warm-up step (it carries ``warmup_extra_ns`` of first-step work) stands for
    no analysed step: the path per step adds up to the mean analysed step, not to a mean with the
    warm-up in it."""
    sc = preset(name)
    (r,) = replay_trace(case_path(cases, f"steady_{name}", lambda: sc))
    kinds = {s.kind for s in r.steps}
    assert "warmup" in kinds and len(kinds) > 1
    steady = [s.replayed_ns / 1e6 for s in _normal_steps(r)]
    total = sum(x.ms_per_step for x in r.critical_path)
    assert total == pytest.approx(sum(steady) / len(steady), rel=0.02)
    assert sum(x.share for x in r.critical_path) == pytest.approx(1.0, abs=0.02)


def test_host_rows_say_whether_the_gpu_ran_meanwhile(cases):
    """A host that keeps pace with a busy GPU (healthy_tc: kernels ≥ 90% of each phase) is told
    apart from one that starves it (the worked example's 420 ms data phase: the GPU idle)."""
    (healthy,) = replay_trace(case_path(cases, "busy_healthy", lambda: preset("healthy_tc")))
    host = [x for x in healthy.critical_path if x.kind == "host_cpu"
            and x.phase in ("forward", "backward")]
    assert host and all(x.gpu_busy_share >= 0.9 for x in host), host
    (worked,) = replay_trace(case_path(cases, "busy_worked", lambda: preset("worked_example")))
    data = [x for x in worked.critical_path if x.kind == "host_cpu" and x.phase == "data"]
    assert data and all(x.gpu_busy_share <= 0.05 for x in data), data
    assert all(x.gpu_busy_share is None for x in worked.critical_path
               if x.kind not in ("host_cpu", "host_io"))
    assert all(0.0 <= (x.gpu_busy_share or 0.0) <= 1.0 for x in healthy.critical_path)


def test_a_host_that_runs_ahead_puts_the_gpu_work_on_the_path(cases):
    """simt_gemm launches its 248 ms of FP32 GEMMs in 84 ms and waits in loss.item(): the step
    waits on the GPU's GEMMs (not on host time the GPU runs through), so making them Tensor-Core
    kernels shortens it — by at most the 4× cap on the GEMM time the generator wrote."""
    from nsys_diag import synth

    (r,) = replay_trace(case_path(cases, "host_ahead", lambda: preset("simt_gemm")))
    gemm = path_ms(r, "gpu_compute", "gemm")
    step = r.fidelity()["replayed_ms"]
    assert gemm >= 0.75 * step and path_ms(r, "host_cpu") < 0.1 * step
    e = synth.expected("simt_gemm")  # one stream: kernel busy time is kernel time
    gemm_ms = e["kernels"]["gemm_share"] * e["gpu"]["compute_busy_ms_per_step"]
    tc = next(w for w in r.what_if if w.id == "tensor_cores_on")
    assert tc.changed and 0.5 * gemm_ms <= tc.saves_ms_per_step <= 0.75 * gemm_ms * 1.02
