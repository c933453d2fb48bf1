"""What-ifs with known answers on the generated replay cases (issue 25, "must hold")."""
from __future__ import annotations

from pathlib import Path

import pytest

from nsys_diag.analyses.replay.analysis import step_weights
from nsys_diag.analyses.replay.whatif import WHAT_IFS
from nsys_diag.analyses.steps.detection import detect_steps
from nsys_diag.loaders import load_trace
from nsys_diag.synth import replay_cases as rc
from tests.analyses.replay.replay_helpers import (case_path, gpu_processes, path_ms,
                                                  process_frames, replay_trace)


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("replay_whatif")


def _what_if(result, wid: str) -> dict:
    (w,) = [w for w in result.to_json()["what_if"] if w["id"] == wid]
    return w


def test_instant_input_removes_the_data_phase(cases):
    (r,) = replay_trace(case_path(cases, "input_bound_loop"))
    w = _what_if(r, "instant_input")
    assert w["saves_ms_per_step"] == pytest.approx(420, rel=0.02)
    assert w["step_ms_after"] == pytest.approx(380, rel=0.03)
    over = _what_if(r, "overlapped_input")  # step = max(data 420, rest 380)
    assert over["step_ms_after"] == pytest.approx(420, rel=0.02)
    assert over["saves_ms_per_step"] <= w["saves_ms_per_step"]


def test_no_host_sync_saves_the_gpu_work_each_item_waited_for(cases):
    (r,) = replay_trace(case_path(cases, "item_per_layer"))
    w = _what_if(r, "no_host_sync")
    assert w["saves_ms_per_step"] == pytest.approx(
        rc.ITEM_LAYERS * rc.ITEM_LAYER_GPU_NS / 1e6, rel=0.10)
    assert w["finding"] == "sync"


def test_syncs_that_wait_microseconds_save_almost_nothing(cases):
    (r,) = replay_trace(case_path(cases, "microsecond_syncs"))
    assert _what_if(r, "no_host_sync")["saves_share"] < 0.05


def _mean_analysed_ms(path: Path) -> list[float]:
    """The mean analysed step (ms) of each GPU process of ``path``, in ``replay_trace`` order."""
    bundle = load_trace(path)
    out = []
    for gpid in gpu_processes(bundle):
        f = process_frames(bundle, gpid)
        out.append(float(detect_steps(f["nvtx"], f["kernels"]).mean_ms))
    return out


def test_every_what_if_is_priced_consistently(cases):
    for name in sorted(rc.REPLAY_CASES):
        path = case_path(cases, name)
        for r, base in zip(replay_trace(path), _mean_analysed_ms(path), strict=True):
            got = r.to_json()["what_if"]
            assert [w["id"] for w in got] == list(WHAT_IFS)
            for w in got:
                lo, hi = w["saves_range_ms"]
                assert 0 <= lo <= w["saves_ms_per_step"] <= hi
                assert w["step_ms_after"] == pytest.approx(base - w["saves_ms_per_step"],
                                                           abs=1e-6)


def test_hidden_communication_saves_the_backward_overlap_never_more_than_the_collective(cases):
    for r in replay_trace(case_path(cases, "allreduce_after_backward")):
        w = _what_if(r, "hidden_communication")
        assert w["saves_ms_per_step"] == pytest.approx(rc.BACKWARD_NS / 1e6, rel=0.05)
        assert w["saves_ms_per_step"] <= rc.ALLREDUCE_NS / 1e6
        assert w["finding"] == "communication"


def test_no_launch_overhead_prices_the_launch_bound_sample():
    from tests.conftest import SAMPLE_TRACES

    (r,) = replay_trace(SAMPLE_TRACES / "launch_bound.sqlite")
    launch = _what_if(r, "no_launch_overhead")
    assert launch["saves_share"] > 0.2  # ~1,200 launches of 12–15 µs per step become 2 µs each
    (healthy,) = replay_trace(SAMPLE_TRACES / "healthy_tc.sqlite")
    assert _what_if(healthy, "no_launch_overhead")["saves_share"] < 0.02


def test_what_ifs_without_their_cause_save_nothing(cases):
    (r,) = replay_trace(case_path(cases, "input_bound_loop"))
    assert _what_if(r, "hidden_communication")["saves_ms_per_step"] == 0
    assert _what_if(r, "no_alloc_in_loop")["saves_ms_per_step"] == 0


def test_instant_host_io_saves_the_reads_on_the_path(cases):
    from nsys_diag.synth.presets import preset

    (r,) = replay_trace(case_path(cases, "host_io", lambda: preset("host_io_stalls")))
    io_on_path = sum(x.ms_per_step for x in r.critical_path if x.kind == "host_io")
    assert io_on_path == pytest.approx(36, rel=0.05)  # 6 × 6 ms of read() per step
    assert _what_if(r, "instant_host_io")["saves_ms_per_step"] == pytest.approx(io_on_path,
                                                                             rel=0.05)


def test_no_overhead_phases_removes_the_logging_phase(cases):
    (r,) = replay_trace(case_path(cases, "input_bound_loop"))
    w = _what_if(r, "no_overhead_phases")
    assert w["saves_ms_per_step"] == pytest.approx(20, rel=0.05)  # the 20 ms logging phase
    assert w["finding"] == "overhead"


def test_async_pinned_copies_prices_the_pageable_copy(cases):
    from nsys_diag.synth.presets import preset

    (r,) = replay_trace(case_path(cases, "pageable_h2d", lambda: preset("pageable_h2d")))
    w = _what_if(r, "async_pinned_copies")
    # a 60 ms synchronous pageable copy of 512 MiB: at the H100's PCIe Gen5 link (no pinned copy
    # in the trace) it takes ~11 ms and the host no longer waits; never more than the copy
    assert 40 <= w["saves_ms_per_step"] <= 60
    assert w["finding"] == "transfer"


def test_tensor_cores_on_runs_the_sgemms_at_most_four_times_faster(cases):
    (r,) = replay_trace(case_path(cases, "sgemm_no_tensor_cores"))
    w = _what_if(r, "tensor_cores_on")
    sgemm_ms = rc.SGEMM_COUNT * rc.SGEMM_NS / 1e6  # on the path: the host waits for the queue
    # the A100's BF16 rate is 16× its FP32 rate; without ncu bytes the cap of 4× applies
    assert w["saves_ms_per_step"] == pytest.approx(sgemm_ms * 0.75, rel=0.02)
    assert "at most 4× faster" in w["change"] and "16.0×" in w["change"]
    assert w["finding"] == "no_tensor_cores"


def test_tensor_cores_on_stops_at_the_dram_floor_when_ncu_bytes_are_known(cases):
    from nsys_diag.analyses.kernels.names import normalize_kernel_name
    from nsys_diag.analyses.roofline.gpu_specs import lookup_gpu
    from nsys_diag.synth.kernels import KERNEL_CATALOG

    name = KERNEL_CATALOG["sgemm_ampere"].demangled
    spec = lookup_gpu("NVIDIA A100-SXM4-40GB")  # the generator's A100
    floor_ns = 1_000_000  # each 2 ms SGEMM moves 1 ms worth of DRAM bytes
    bytes_per_launch = {normalize_kernel_name(name): floor_ns / 1e9 * spec.dram_bytes_per_s}
    (r,) = replay_trace(case_path(cases, "sgemm_no_tensor_cores"),
                        ncu_dram_bytes=bytes_per_launch)
    w = _what_if(r, "tensor_cores_on")
    assert w["saves_ms_per_step"] == pytest.approx(rc.SGEMM_COUNT * (rc.SGEMM_NS - floor_ns) / 1e6,
                                                   rel=0.02)
    assert "DRAM floor (ncu bytes)" in w["change"]


def test_tensor_cores_on_leaves_tensor_core_gemms_alone(cases):
    (r,) = replay_trace(case_path(cases, "managed_memory_faults"))  # gemm_bf16_sm90 on an H100
    w = _what_if(r, "tensor_cores_on")
    assert w["saves_ms_per_step"] == 0
    assert "no GEMM/conv kernel ran without them" in w["change"]


def test_prefetched_managed_memory_removes_the_migrations_on_the_path(cases):
    (r,) = replay_trace(case_path(cases, "managed_memory_faults"))
    w = _what_if(r, "prefetched_managed_memory")
    uvm_ms = rc.UVM_COUNT * rc.UVM_NS / 1e6
    on_path = path_ms(r, "transfer", "uvm_h2d")
    assert on_path == pytest.approx(uvm_ms, rel=0.02)
    # the GEMMs then start at their launch, 1 ms into the step (after the touch phase), and the
    # host's 10 ms of page faults while reading results back are gone
    fault_ms = rc.UVM_HOST_COUNT * rc.UVM_HOST_NS / 1e6
    assert w["saves_ms_per_step"] == pytest.approx(uvm_ms - 1.0 + fault_ms, rel=0.05)
    assert w["saves_ms_per_step"] <= uvm_ms + fault_ms
    assert w["finding"] == "unified_memory"
    (other,) = replay_trace(case_path(cases, "sgemm_no_tensor_cores"))
    assert _what_if(other, "prefetched_managed_memory")["saves_ms_per_step"] == 0


def _checkpoint_case(cases) -> tuple[Path, object]:
    path = case_path(cases, "checkpoint_every_fourth")
    bundle = load_trace(path)
    return path, detect_steps(bundle.nvtx, bundle.kernels)


def test_savings_weigh_each_replayed_step_by_the_analysed_steps_of_its_kind(cases):
    path, steps = _checkpoint_case(cases)
    normal, slow = len(steps.indices("normal")), len(steps.indices("outlier"))
    assert (normal, slow) == (9, 3)  # twelve analysed: every fourth one checkpoints
    (r,) = replay_trace(path)
    assert [s.kind for s in r.steps] == ["warmup", "median", "p90"]  # one fast, one slow
    w = _what_if(r, "no_overhead_phases")
    log, ckpt = rc.LOG_NS / 1e6, rc.CHECKPOINT_NS / 1e6
    # the mean over all analysed steps: nine save the logging, three logging and checkpoint
    assert w["saves_ms_per_step"] == pytest.approx((normal * log + slow * (log + ckpt))
                                                   / (normal + slow), rel=0.01)
    # every step without its overhead is the fast step without logging
    assert w["step_ms_after"] == pytest.approx((rc.FAST_STEP_NS - rc.LOG_NS) / 1e6, rel=0.01)
    assert w["step_ms_after"] + w["saves_ms_per_step"] == pytest.approx(steps.mean_ms, rel=1e-9)
    assert w["saves_share"] == pytest.approx(w["saves_ms_per_step"] / steps.mean_ms, rel=1e-9)
    assert w["saves_range_ms"] == pytest.approx([log, log + ckpt], rel=0.01)
    plain = (log + log + ckpt) / 2  # the two replayed steps' plain mean overstates it
    assert w["saves_ms_per_step"] < 0.6 * plain


def test_a_kind_that_was_not_replayed_counts_as_the_nearest_replayed_step(cases):
    path, steps = _checkpoint_case(cases)
    assert step_weights(steps, [0, 1, 3]).tolist() == [0, 9, 3]
    assert step_weights(steps, [0]).tolist() == [0]  # warm-up stands for no analysed step
    (r,) = replay_trace(path, max_steps=1)  # the median step only
    w = _what_if(r, "no_overhead_phases")
    assert w["saves_ms_per_step"] == pytest.approx(rc.LOG_NS / 1e6, rel=0.01)
    assert w["step_ms_after"] == pytest.approx(steps.mean_ms - rc.LOG_NS / 1e6, rel=0.01)


def _launch_loop(gap_ns: int):
    """One forward phase of 400 launches of a 3 µs kernel, each call 3 µs, ``gap_ns`` of CPU
    time between calls (dispatch when short, host work when long)."""
    from dataclasses import replace

    from nsys_diag.synth.presets import preset
    from nsys_diag.synth.scenarios import KernelSpec, PhaseSpec

    n, us = 400, 1_000
    phase = PhaseSpec("forward", n * (3 * us + gap_ns) + 200 * us, canonical="forward",
                      launch_gap_ns=gap_ns,
                      kernels=(KernelSpec("ew_add", 3 * us, n, launch_ns=3 * us),))
    return lambda: replace(preset("launch_bound"), name=f"loop_{gap_ns}", phases=(phase,))


def test_a_graph_replay_drops_the_dispatch_between_launches_not_host_work(cases):
    """A CUDA-graph replay launches a run of launches at once: the 5 µs of dispatch between
    400 launch calls goes with them (the step becomes the GPU's 400 × (3 µs + 1 µs) plus one
    graph launch); 60 µs of host work between them is no dispatch and stays (only each call's
    own 3 µs drops to the 2 µs of a launch)."""
    (dispatch,) = replay_trace(case_path(cases, "loop_5us", _launch_loop(5_000)))
    w = _what_if(dispatch, "no_launch_overhead")
    assert w["step_ms_after"] == pytest.approx(400 * 4e-3, abs=0.45)  # GPU-paced, + the margin
    assert w["saves_share"] > 0.4
    (host,) = replay_trace(case_path(cases, "loop_60us", _launch_loop(60_000)))
    h = _what_if(host, "no_launch_overhead")
    assert h["saves_ms_per_step"] == pytest.approx(400 * 1e-3, rel=0.25)  # 3 → 2 µs a call
    assert h["saves_share"] < 0.05
