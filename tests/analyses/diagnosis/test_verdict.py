"""Verdict rules on hand-made inputs: each code fires, and does not fire just below its threshold."""
from __future__ import annotations

import dataclasses

import pytest

from nsys_diag.analyses.diagnosis.pricing import Saving
from nsys_diag.analyses.diagnosis.verdict import LARGER_BATCH, VerdictInputs, diagnose
from nsys_diag.model.vocabulary import VERDICT_CODES
from nsys_diag.model.thresholds import Thresholds

TH = Thresholds()


def _x(**kw) -> VerdictInputs:
    base = dict(has_kernels=True, window_ms=8000.0, step_ms=800.0, steps_source="nvtx:train_step_N",
                utilization=0.9, gap_share={}, phase_share={"forward": 0.5, "backward": 0.5},
                phase_ms={"forward": 400.0, "backward": 400.0}, has_backward=True,
                category_share={"gemm": 0.8, "elementwise": 0.2}, tc_share_of_kernel_time=0.8,
                non_tc_gemm_share=0.0, tc_confidence="medium", analysed_steps=10)
    base.update(kw)
    return VerdictInputs(**base)


def _codes(v):
    return v.code, set(v.secondary)


def test_insufficient_data_without_kernels_lists_capture_flags():
    v = diagnose(_x(has_kernels=False, capture_hints=("nsys profile -t cuda,nvtx ...",),
                    missing=("the export holds no CUDA kernels or copies",)), TH)
    assert v.code == "insufficient_data"
    assert "no CUDA kernels" in v.headline
    assert v.recommendations[0].startswith("Re-capture: nsys profile -t cuda")
    assert v.projected_step_ms_if_fixed is None


def test_input_bound_worked_example_projection():
    v = diagnose(_x(utilization=0.24, gap_share={"input": 0.52, "overhead": 0.025, "other": 0.2},
                    phase_share={"data": 0.525, "forward": 0.225, "backward": 0.1875,
                                 "optimizer": 0.0375, "overhead": 0.025},
                    phase_ms={"data": 420.0, "forward": 180.0, "backward": 150.0,
                              "optimizer": 30.0, "overhead": 20.0}), TH)
    assert v.code == "input_bound"
    assert v.confidence == "medium"  # no GPU metrics and no ncu: capped at medium
    assert v.finding == "input"
    assert v.projected_step_ms_if_fixed == pytest.approx(420.0)  # max(data, rest of step)
    assert "num_workers" in v.recommendations[0]
    assert "will not help" in v.scale_advice
    metrics = {e.metric: e for e in v.evidence}
    assert metrics["gaps.input_share"].threshold == TH.input_bound_verdict_share
    assert metrics["phases.data_share"].threshold == TH.input_bound_data_share


def test_input_below_threshold_does_not_fire():
    v = diagnose(_x(utilization=0.6, gap_share={"input": 0.24}), TH)
    assert v.code != "input_bound"


def test_overhead_bound_from_overhead_phases_and_syncs():
    v = diagnose(_x(utilization=0.55, gap_share={"overhead": 0.25, "sync": 0.05, "input": 0.03}), TH)
    assert v.code == "overhead_bound" and v.finding == "overhead"
    # no overhead phase names a checkpoint and no periodic slow step: no checkpoint advice
    assert not any("checkpoint" in r for r in v.recommendations)
    assert v.recommendations[0].startswith("Shorten the overhead phases")
    assert v.projected_step_ms_if_fixed == pytest.approx(800 * 0.75)  # the finding's own share


def test_nothing_fired_below_the_compute_rule_is_no_dominant_cause():
    # issue 26: no default verdict — compute_bound only when its own rule (≥ 80% busy) fires
    v = diagnose(_x(utilization=0.75, gap_share={"overhead": 0.09}), TH)
    assert v.code == "no_dominant_cause" and v.confidence == "low"
    assert "Yes" not in v.scale_advice
    v = diagnose(_x(utilization=0.85, gap_share={"overhead": 0.09}), TH)
    assert v.code == "compute_bound"


def test_latency_bound_when_most_kernel_time_is_under_filled_on_a_busy_gpu():
    fill = {"underfilled_share": 0.69, "tiny_block_share": 0.69, "small_grid_share": 0.0,
            "fill_top": ("sptrsv_level_kernel", 40, 32, 40)}
    v = diagnose(_x(utilization=0.71, **fill), TH)
    assert v.code == "latency_bound"
    assert "69%" in v.headline and "40 blocks of 32 threads on 40 SMs" in v.headline
    assert any(e.metric == "gpu_fill.tiny_block_share" for e in v.evidence)
    assert "bigger GPU will not help" in v.scale_advice
    idle = diagnose(_x(utilization=0.3, **fill), TH)  # the GPU mostly idles: not latency-bound
    assert idle.code != "latency_bound"
    filled = diagnose(_x(utilization=0.71, **{**fill, "underfilled_share": 0.4}), TH)
    assert filled.code != "latency_bound"


def test_launch_bound_needs_small_kernels():
    gaps = {"launch": 0.6, "other": 0.1}
    v = diagnose(_x(utilization=0.2, gap_share=gaps, small_kernel_frac=0.95), TH)
    assert v.code == "launch_bound"
    assert "CUDA graphs" in v.recommendations[0]
    assert "worse" in v.scale_advice
    v = diagnose(_x(utilization=0.2, gap_share=gaps, small_kernel_frac=0.1), TH)
    assert v.code != "launch_bound"


def test_communication_bound_when_exposed_comm_dominates():
    v = diagnose(_x(utilization=0.9, comm_exposed_share=0.15), TH)
    assert v.code == "communication_bound"
    assert v.projected_step_ms_if_fixed == pytest.approx(800 * 0.85)
    v = diagnose(_x(utilization=0.9, comm_exposed_share=0.09), TH)
    assert v.code == "compute_bound"


def test_memory_bound_from_counters_is_high_confidence():
    v = diagnose(_x(utilization=0.91, metrics={"dram_bandwidth": 0.82, "tensor_active": 0.0,
                                               "sm_active": 0.48},
                    category_share={"elementwise": 0.9, "reduction": 0.1}), TH)
    assert v.code == "memory_bound" and v.confidence == "high"
    assert any(e.source == "gpu_metrics" for e in v.evidence)


def test_memory_bound_from_names_is_low_confidence():
    v = diagnose(_x(utilization=0.9, category_share={"elementwise": 0.4, "reduction": 0.2}), TH)
    assert v.code == "memory_bound" and v.confidence == "low"
    v = diagnose(_x(utilization=0.9, category_share={"elementwise": 0.3, "gemm": 0.7}), TH)
    assert v.code == "compute_bound"


def test_memory_bound_from_roofline():
    v = diagnose(_x(utilization=0.9, roofline_memory_share=0.7, roofline_confidence="high"), TH)
    assert v.code == "memory_bound" and v.confidence == "high"


def test_inference_memory_bound_suggests_quantization():
    v = diagnose(_x(utilization=0.85, has_backward=False, phase_share={"forward": 0.9, "data": 0.1},
                    metrics={"dram_bandwidth": 0.8, "tensor_active": 0.0}), TH)
    assert v.code == "memory_bound"
    assert "Quantize" in v.recommendations[1]


def test_no_tensor_cores():
    v = diagnose(_x(utilization=0.89, non_tc_gemm_share=0.8, tc_share_of_kernel_time=0.0,
                    non_tc_gemm_kernels=(("volta_sgemm_128x64_nn", 0.5),)), TH)
    assert v.code == "compute_bound_no_tensor_cores"
    assert "autocast" in v.recommendations[0]
    assert any("volta_sgemm" in r for r in v.recommendations)
    assert v.projected_step_ms_if_fixed == pytest.approx(800 - 0.89 * 800 * 0.8 * 0.5)
    v = diagnose(_x(utilization=0.89, non_tc_gemm_share=0.19), TH)
    assert v.code == "compute_bound"


def test_compute_bound_healthy():
    v = diagnose(_x(utilization=0.93, comm_exposed_share=0.01, comm_hidden_share=0.9,
                    metrics={"sm_active": 0.9}), TH)
    assert v.code == "compute_bound" and v.confidence == "high"
    assert v.scale_advice.startswith("Yes") and "90% of it hidden" in v.scale_advice
    assert any("roughly linearly" in r for r in v.recommendations)
    assert v.projected_step_ms_if_fixed is None


def test_scale_advice_never_claims_hidden_communication_when_none_is_hidden():
    hidden = diagnose(_x(utilization=0.93, comm_exposed_share=0.06, comm_hidden_share=0.4), TH)
    assert "close to linearly while communication stays hidden" in hidden.scale_advice
    assert any("roughly linearly" in r for r in hidden.recommendations)
    none = diagnose(_x(utilization=0.93, comm_exposed_share=0.06, comm_hidden_share=0.0), TH)
    assert none.code == "compute_bound" and none.scale_advice.startswith("Yes")
    assert "stays hidden" not in none.scale_advice and "none of the communication" in \
        none.scale_advice and "(exposed communication now 6%)" in none.scale_advice
    assert not any("roughly linearly" in r for r in none.recommendations)
    assert any("none of it is hidden" in r for r in none.recommendations)


def test_scale_advice_quotes_the_data_parallel_replay():
    rows = ((2, 293.0, 0.49, 148.0, "replay"), (4, 368.0, 0.39, 223.0, "replay"))
    v = diagnose(_x(utilization=0.93, comm_exposed_share=0.06, comm_hidden_share=0.0,
                    scaling=rows), TH)
    assert "stays hidden" not in v.scale_advice
    assert "exposed communication as measured" in v.scale_advice
    assert "2 GPUs 293 ms/step (49% efficiency, 148 ms exposed communication)" in v.scale_advice
    assert "4 GPUs 368 ms/step" in v.scale_advice
    comm = diagnose(_x(utilization=0.6, comm_exposed_share=0.5, comm_hidden_share=0.0,
                       scaling=rows), TH)
    assert comm.code == "communication_bound" and "used less well" in comm.scale_advice
    assert "4 GPUs 368 ms/step" in comm.scale_advice


def test_scaling_claims_need_measured_hidden_communication():
    """"close to linearly while communication stays hidden" beside 0 ms hidden contradicts the
    page: the claim needs a measured hidden share > 0 (issue 26, item 6)."""
    for hidden in (None, 0.0):
        v = diagnose(_x(utilization=0.93, comm_exposed_share=0.01 if hidden == 0.0 else None,
                        comm_hidden_share=hidden, metrics={"sm_active": 0.9}), TH)
        assert v.code == "compute_bound"
        assert "linearly while" not in v.scale_advice
        assert hidden == 0.0 or not v.scale_advice.startswith("Yes")
        assert not any("linearly" in r for r in v.recommendations), v.recommendations


def test_secondary_codes_and_memory_advice():
    v = diagnose(_x(utilization=0.24, gap_share={"input": 0.5}, phase_share={"data": 0.52},
                    phase_ms={"data": 416.0}, non_tc_gemm_share=0.3, memory_peak_share=0.3), TH)
    assert v.code == "input_bound"
    assert "compute_bound_no_tensor_cores" in v.secondary
    # an input-bound run waits for its input: a larger batch is no advice (issue 26, item 6)
    assert not any("headroom" in r or LARGER_BATCH.search(r) for r in v.recommendations)
    head = diagnose(_x(memory_peak_share=0.3), TH)
    assert head.code == "compute_bound"
    assert any("headroom" in r and "batch" in r for r in head.recommendations)
    near = diagnose(_x(memory_peak_share=0.95), TH)
    assert any("nearly full" in r for r in near.recommendations)


def test_memory_advice_fits_the_program():
    for framework in ("cuda", "openmp_offload", "openacc", "stdpar"):
        for peak, word in ((0.3, "headroom"), (0.95, "nearly full")):
            v = diagnose(_x(memory_peak_share=peak, framework=framework), TH)
            tip = [r for r in v.recommendations if word in r]
            assert len(tip) == 1, (framework, peak, v.recommendations)
            assert not any(w in tip[0] for w in ("FSDP", "gradient", "torch", "autocast")), tip


def test_unattributed_idle_falls_back_to_low_confidence_host_bound():
    v = diagnose(_x(utilization=0.05, gap_share={"other": 0.9}, steps_source=None, step_ms=None), TH)
    assert v.code == "overhead_bound" and v.confidence == "low"
    assert v.headline.startswith("Host-bound")
    assert v.projected_step_ms_if_fixed is None


def test_data_quality_warnings_lower_confidence():
    hi = diagnose(_x(utilization=0.93, has_counters=True), TH)
    lo = diagnose(_x(utilization=0.93, has_counters=True, data_warnings=2), TH)
    assert (hi.confidence, lo.confidence) == ("high", "medium")


def test_no_steps_warnings_count_once_through_the_no_steps_cap():
    """A whole-window diagnosis (no NVTX, no steps) of a leading cause (medium): the "no steps"
    warnings cap it at medium; they do not lower it a second time. Any other warning does."""
    kw = dict(utilization=0.05, gap_share={"host_cpu": 0.5, "sync": 0.3}, steps_source=None, step_ms=None,
              analysed_steps=None, phase_share={}, phase_ms={})
    capped = diagnose(_x(**kw, data_warnings=2, no_steps_warnings=2), TH)
    assert capped.code == "overhead_bound" and capped.confidence == "medium"
    lowered = diagnose(_x(**kw, data_warnings=3, no_steps_warnings=2), TH)
    assert lowered.confidence == "low"


def test_thresholds_are_read_from_the_thresholds_object():
    x = _x(utilization=0.6, gap_share={"input": 0.2})
    assert diagnose(x, TH).code != "input_bound"
    assert diagnose(x, TH.with_overrides(input_bound_verdict_share=0.15)).code == "input_bound"


def test_exactly_one_known_code_and_json_shape():
    for kw in (dict(), dict(has_kernels=False), dict(utilization=0.1, gap_share={"launch": 0.5},
                                                     small_kernel_frac=0.9)):
        v = diagnose(_x(**kw), TH)
        assert v.code in VERDICT_CODES
        j = v.to_json()
        assert set(j) == {"code", "headline", "confidence", "scale_advice", "evidence",
                          "recommendations", "projected_step_ms_if_fixed", "secondary",
                          "advice", "finding"}
        assert [a["text"] for a in j["advice"]] == j["recommendations"]
        assert j["recommendations"] and j["headline"]
        assert len(set(j["recommendations"])) == len(j["recommendations"])


def test_inputs_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        _x().utilization = 0.5  # type: ignore[misc]


def test_ncu_csv_alone_gives_a_kernel_level_verdict():
    base = dict(has_kernels=False, window_ms=0.0, kernel_level_only=True, roofline_confidence="high")
    v = diagnose(_x(**base, roofline_memory_share=0.7, roofline_compute_share=0.1), TH)
    assert v.code == "memory_bound" and v.confidence == "medium"
    assert "kernel level only" in v.headline and any("nsys" in r for r in v.recommendations)
    v = diagnose(_x(**base, roofline_memory_share=0.1, roofline_compute_share=0.8), TH)
    assert v.code == "compute_bound"
    v = diagnose(_x(**base, roofline_memory_share=0.0, roofline_compute_share=0.0), TH)
    assert v.code == "insufficient_data" and "latency-bound" in v.headline
    v = diagnose(_x(has_kernels=False, kernel_level_only=True), TH)  # no roofline
    assert v.code == "insufficient_data"


def test_copies_while_sms_idle_are_not_utilization():
    v = diagnose(_x(utilization=0.02, copy_only_share=0.94, gap_share={"transfer": 0.94},
                    phase_share={}, phase_ms={}, steps_source=None, step_ms=None), TH)
    assert v.code == "input_bound"
    assert "copies" in v.headline and "not utilization" in v.headline
    assert any(e.metric == "gpu.copy_only_share" for e in v.evidence)


# ------------------------------------------------------------------- issue 15: findings → verdict
def test_largest_fired_finding_wins_and_others_are_secondary():
    v = diagnose(_x(utilization=0.4, gap_share={"sync": 0.15, "communication": 0.3},
                    gap_detail={"communication": "MPI_Recv (NVTX)"}), TH)
    assert v.code == "communication_bound" and v.finding == "communication"
    assert "MPI_Recv" in v.headline and "30%" in v.headline
    assert "overhead_bound" in v.secondary
    assert v.recommendations[0] == v.advice[0].text
    assert v.projected_step_ms_if_fixed == pytest.approx(800 * 0.7)


def test_abstains_on_too_little_gpu_work_but_keeps_the_findings():
    for kw in (dict(kernel_count=19, kernel_time_ms=500.0), dict(kernel_count=500, kernel_time_ms=9.9)):
        v = diagnose(_x(utilization=0.1, gap_share={"other": 0.9}, **kw), TH)
        assert v.code == "insufficient_data" and v.finding == "too_little_work"
        assert "too little GPU work to diagnose" in v.headline
        assert any("--capture-range=cudaProfilerApi" in r for r in v.recommendations)
        assert any("--capture-range=nvtx --nvtx-capture=" in r for r in v.recommendations)
        assert any("--delay" in r for r in v.recommendations)
        assert any(f.cause == "other" and f.fired for f in v.findings)
        assert v.secondary == () and not any("NVTX ranges (" in r for r in v.recommendations)
    v = diagnose(_x(kernel_count=20, kernel_time_ms=10.0), TH)
    assert v.code != "insufficient_data"


def test_startup_dominated_window_is_insufficient_data():
    v = diagnose(_x(utilization=0.1, gap_share={"startup": 0.6, "other": 0.3},
                    gap_detail={"startup": "cuLibraryLoadData"}, kernel_count=500,
                    kernel_time_ms=800.0), TH)
    assert v.code == "insufficient_data" and v.finding == "startup"
    assert "mostly start-up" in v.headline and "cuLibraryLoadData" in v.headline
    assert not any("checkpoint" in r for r in v.recommendations)
    assert any("--capture-range" in r for r in v.recommendations)


def test_healthy_run_gets_its_gpu_side_verdict_and_no_idle_warning():
    v = diagnose(_x(utilization=0.92, gap_share={"sync": 0.04, "other": 0.04}, has_counters=True), TH)
    assert v.code == "compute_bound" and v.secondary == ()
    idle = [f for f in v.findings if f.cause not in ("compute",)]
    assert all(f.severity == "info" for f in idle)


def test_confidence_caps_at_medium():
    strong = dict(utilization=0.93, has_counters=True)
    assert diagnose(_x(**strong), TH).confidence == "high"
    assert diagnose(_x(**strong, analysed_steps=4), TH).confidence == "medium"
    assert diagnose(_x(**strong, phase_share={}, phase_ms={}), TH).confidence == "medium"
    assert diagnose(_x(utilization=0.93, has_counters=False), TH).confidence == "medium"


def test_recommendations_only_from_fired_findings():
    v = diagnose(_x(utilization=0.3, gap_share={"input": 0.6, "sync": 0.05, "overhead": 0.05}), TH)
    assert v.code == "input_bound"
    assert not any("checkpoint" in r or "synchronize" in r for r in v.recommendations)
    assert "input 60%" not in v.scale_advice and "60%" in v.scale_advice  # its own share


def test_low_utilization_fallback_is_low_confidence_and_says_why():
    v = diagnose(_x(utilization=0.3, gap_share={"sync": 0.08, "launch": 0.05, "input": 0.06}), TH)
    assert v.code == "overhead_bound" and v.finding == "sync" and v.confidence == "low"
    row = next(e for e in v.evidence if e.metric == "gpu.utilization")
    assert row.role == "rule" and row.fired is True


# ------------------------------------------------------------------ with the replay's prices
def _save(what_if: str, ms: float, step: float = 800.0) -> Saving:
    return Saving(what_if=what_if, change=f"the {what_if} change", saves_ms=ms,
                  step_ms_after=step - ms, saves_share=ms / step, saves_range_ms=(ms, ms))


def _priced(**savings: Saving) -> dict:
    return dict(savings)


def test_largest_saving_wins_over_largest_cost():
    # input costs the most idle time, but the replay says deferring the syncs saves more
    x = _x(utilization=0.3, gap_share={"input": 0.40, "sync": 0.15},
           savings=_priced(input=_save("overlapped_input", 100.0),
                           sync=_save("no_host_sync", 200.0)), made_of=(("host_cpu", 500.0, 0.6),))
    assert diagnose(dataclasses.replace(x, savings=None), TH).finding == "input"  # cost rule
    v = diagnose(x, TH)
    assert v.code == "overhead_bound" and v.finding == "sync"
    assert v.projected_step_ms_if_fixed == pytest.approx(600.0)  # the replay's step_ms_after
    assert "fixing it saves 200 ms of the 800 ms mean step (25%" in v.headline
    rows = {e.metric: e for e in v.evidence}
    assert rows["replay.saves_share"].fired is True and rows["replay.what_if"].value == "no_host_sync"
    assert v.secondary == ("input_bound",)


def test_a_window_replay_of_part_of_the_window_says_which_part_its_saving_is_of():
    """No steps: the replay prices the window it replayed (the first 6,000 ms of 8,000 ms, its
    operation budget); the headline says so rather than calling 6,000 ms 'the window'."""
    part = dataclasses.replace(_save("no_host_sync", 1500.0, step=6000.0), basis="window")
    kw = dict(utilization=0.3, gap_share={"sync": 0.4}, steps_source=None, step_ms=None,
              analysed_steps=None)
    v = diagnose(_x(**kw, window_ms=8000.0, savings=_priced(sync=part)), TH)
    assert ("saves 1,500 ms of the first 6,000 ms of the 8,000 ms window, the part the replay "
            "covers (no steps)") in v.headline
    whole = diagnose(_x(**kw, window_ms=6010.0, savings=_priced(sync=part)), TH)
    assert "saves 1,500 ms of the 6,000 ms window (no steps)" in whole.headline


def test_a_saving_below_the_bar_falls_to_the_gpu_side_order():
    small = _priced(input=_save("overlapped_input", 50.0))  # 6% of the step
    mem = dict(metrics={"dram_bandwidth": 0.85}, has_counters=True, underfilled_share=0.7,
               non_tc_gemm_share=0.6, utilization=0.85, gap_share={"input": 0.3})
    v = diagnose(_x(**mem, savings=small), TH)
    assert v.code == "memory_bound" and v.projected_step_ms_if_fixed is None
    lat = dict(mem, metrics=None, has_counters=False)
    assert diagnose(_x(**lat, savings=small), TH).code == "latency_bound"
    no_tc = dict(lat, underfilled_share=0.1)
    assert diagnose(_x(**no_tc, savings=small), TH).code == "compute_bound_no_tensor_cores"
    busy = dict(no_tc, non_tc_gemm_share=0.0)
    assert diagnose(_x(**busy, savings=small), TH).code == "compute_bound"
    # the same saving at a lower bar decides
    assert diagnose(_x(**mem, savings=small), Thresholds(verdict_min_saving_share=0.05)).code \
        == "input_bound"


def test_nothing_saves_enough_is_no_dominant_cause_with_what_the_step_waits_on():
    x = _x(utilization=0.35, gap_share={"sync": 0.12, "other": 0.1},
           category_share={"elementwise": 0.9, "gemm": 0.1},
           savings=_priced(sync=_save("no_host_sync", 40.0), launch=_save("no_launch_overhead", 8.0)),
           made_of=(("host_cpu", 440.0, 0.55), ("gpu_compute", 280.0, 0.35)))
    v = diagnose(x, TH)
    assert v.code == "no_dominant_cause" and v.projected_step_ms_if_fixed is None
    assert "waits on host CPU 55%, GPU compute 35%" in v.headline
    assert "no_host_sync 40.0 ms (5%)" in v.headline and "no_launch_overhead 8.0 ms" in v.headline
    assert "overhead_bound" in v.secondary  # the fired (priced) sync finding stays listed
    rows = {e.metric: e.value for e in v.evidence}  # the headline's numbers are evidence rows
    assert rows["replay.waits_on"] == "host CPU 55%, GPU compute 35%"
    assert "no_host_sync 40.0 ms (5%)" in rows["replay.top_savings"]


def test_a_fired_finding_no_what_if_models_decides_by_its_measured_cost():
    # unified memory has no what-if; communication's prices nothing in every replayed step
    for cause, savings in (("unified_memory", {}),
                           ("communication", {"communication": _save("hidden_communication", 0.0)})):
        v = diagnose(_x(utilization=0.4, gap_share={cause: 0.45, "sync": 0.12},
                        savings=_priced(sync=_save("no_host_sync", 30.0), **savings)), TH)
        assert v.finding == cause and v.projected_step_ms_if_fixed is None
        assert any(e.metric == "replay.unpriced" for e in v.evidence)


def test_a_fired_finding_the_replay_applied_without_saving_is_not_limiting():
    """Exposed communication on a host-paced step: the replay moved the collectives behind
    backward (``changed``) and the step stayed as long. The finding stays listed, at info, with
    the replay's reason — no verdict, no secondary verdict, no advice argued from it."""
    moved = dataclasses.replace(_save("hidden_communication", 0.0), changed=True)
    v = diagnose(_x(utilization=0.4, gap_share={"other": 0.45}, comm_exposed_share=0.26,
                    savings=_priced(communication=moved, exposed_communication=moved)), TH)
    assert v.code == "overhead_bound" and "communication_bound" not in v.secondary
    f = next(f for f in v.findings if f.cause == "exposed_communication")
    assert f.fired and f.severity == "info" and f.advice == ()
    why = next(e.value for e in f.evidence if e.metric == "replay.not_limiting")
    assert "the step stayed 800 ms: it saves 0.00 ms (0.0%)" in why
    assert not any("backward" in r for r in v.recommendations)
    # the same zero from a what-if that had nothing to change says nothing: measured cost decides
    legacy = diagnose(_x(utilization=0.4, gap_share={"other": 0.45}, comm_exposed_share=0.26,
                         savings=_priced(exposed_communication=_save("hidden_communication", 0.0))),
                      TH)
    assert "communication_bound" in legacy.secondary


def test_a_priced_saving_never_promotes_a_finding_that_did_not_fire():
    """Advice comes only from findings that fired, and the user's thresholds keep their meaning:
    a 120 ms saving of a transfer finding under its bar is listed, not made the verdict."""
    v = diagnose(_x(utilization=0.4, gap_share={"transfer": 0.15},
                    savings=_priced(transfer=_save("async_pinned_copies", 120.0))), TH)
    assert v.finding != "transfer" and v.code != "input_bound"
    unfired = next(f for f in v.findings if f.cause == "transfer")
    assert not unfired.fired
    assert v.code == "no_dominant_cause"
    assert "async_pinned_copies 120 ms (15%)" in v.headline
    assert "no single fix saves" not in v.headline  # a 15% saving is listed beside it


def test_abstaining_comes_before_the_savings():
    v = diagnose(_x(utilization=0.1, gap_share={"startup": 0.6, "input": 0.3}, kernel_count=500,
                    kernel_time_ms=800.0, savings=_priced(input=_save("overlapped_input", 300.0))),
                 TH)
    assert v.code == "insufficient_data" and v.projected_step_ms_if_fixed is None


def test_without_the_replay_the_cost_rule_decides_and_says_why():
    x = _x(utilization=0.3, gap_share={"input": 0.40, "sync": 0.15}, phase_ms={"data": 300.0},
           replay_reason="the replay is turned off (NSYS_DIAG_NO_REPLAY=1)")
    v = diagnose(x, TH)
    assert v.finding == "input" and v.projected_step_ms_if_fixed == pytest.approx(500.0)
    row = next(e for e in v.evidence if e.metric == "replay.unavailable_reason")
    assert "NSYS_DIAG_NO_REPLAY" in str(row.value) and row.role == "context"


@pytest.mark.parametrize("other, host_cpu, verdict_finding", [
    (0.273, 0.272, "host_cpu"),   # about the same: the named cause is the one to act on
    (0.30, 0.25, "host_cpu"),     # within OTHER_MARGIN
    (0.40, 0.25, "other"),        # unexplained time far larger: it stays the verdict
])
def test_unexplained_idle_time_decides_over_a_named_cause_only_by_a_margin(other, host_cpu,
                                                                           verdict_finding):
    for savings in (None, {}):  # without a replay, and with one that prices neither
        v = diagnose(_x(utilization=0.07, gap_share={"other": other, "host_cpu": host_cpu},
                        savings=savings), TH)
        assert v.finding == verdict_finding, savings


def test_launch_bound_scale_advice_never_suggests_cuda_graphs_already_in_use():
    from nsys_diag.analyses.diagnosis.scale_advice import scale_advice
    plain = scale_advice("launch_bound", "launch", 0.4, _x())
    graphs = scale_advice("launch_bound", "launch", 0.4, _x(techniques=("cuda_graphs",)))
    assert "(CUDA graphs, fusion)" in plain
    assert "CUDA graphs are already in use" in graphs and "(CUDA graphs, fusion)" not in graphs


def test_tiny_blocks_over_a_large_grid_are_told_to_grow_the_blocks_not_the_grid():
    """Fan2-like: 1,048,576 blocks of 16 threads on 82 SMs, 16 resident per SM (17% of the
    GPU's threads): the advice is larger blocks, and a bigger GPU would run more of them at once;
    a 40-block grid of 32 threads on 40 SMs is the opposite case."""
    tiny = {"underfilled_share": 1.0, "tiny_block_share": 0.995, "small_grid_share": 0.005,
            "fill_top": ("Fan2", 1_048_576, 16, 82, 16, 0.1667)}
    v = diagnose(_x(utilization=0.94, **tiny), TH)
    assert v.code == "latency_bound"
    assert "at most 16 of its blocks resident per SM: 17% of the GPU's resident threads" \
        in v.headline
    assert v.recommendations[0].startswith("Use larger blocks")
    assert "runs more of these blocks at once" in v.scale_advice
    small = {"underfilled_share": 0.69, "tiny_block_share": 0.69, "small_grid_share": 0.0,
             "fill_top": ("sptrsv_level_kernel", 40, 32, 40, 16, 0.03)}
    s = diagnose(_x(utilization=0.71, **small), TH)
    assert "resident per SM" not in s.headline and "3% of the GPU's resident threads" in s.headline
    assert "bigger GPU will not help" in s.scale_advice
    assert not any(r.startswith("Launch more blocks") for r in s.recommendations)
