"""Findings: each rule fires / does not, severity, and advice earned only by its evidence."""
from __future__ import annotations

from nsys_diag.analyses.diagnosis.findings import Evidence, compare
from nsys_diag.analyses.diagnosis.advice import build_findings
from nsys_diag.analyses.diagnosis.verdict import VerdictInputs
from nsys_diag.model.thresholds import Thresholds

TH = Thresholds()


def _x(**kw) -> VerdictInputs:
    base = dict(has_kernels=True, window_ms=8000.0, step_ms=800.0, steps_source="nvtx:train_step_N",
                utilization=0.5, gap_share={}, phase_share={"forward": 0.5, "backward": 0.5},
                phase_ms={"forward": 400.0, "backward": 400.0}, has_backward=True,
                kernel_count=1000, kernel_time_ms=4000.0, analysed_steps=10)
    base.update(kw)
    return VerdictInputs(**base)


def _f(x, cause):
    return next(f for f in build_findings(x, TH) if f.cause == cause)


def _texts(f):
    return " ".join(a.text for a in f.advice)


def test_every_idle_cause_is_a_finding_even_when_it_does_not_fire():
    fs = build_findings(_x(), TH)
    causes = {f.cause for f in fs}
    assert {"startup", "input", "overhead", "communication", "transfer", "unified_memory", "sync",
            "memory_management", "host_io", "launch", "other", "compute"} <= causes
    for f in fs:
        if not f.fired:
            assert f.severity == "info" and f.advice == ()


def test_each_idle_rule_fires_at_its_threshold_and_maps_to_its_code():
    cases = {"input": ("input_bound", TH.input_bound_verdict_share),
             "transfer": ("input_bound", TH.input_bound_verdict_share),
             "unified_memory": ("input_bound", TH.input_bound_verdict_share),
             "sync": ("overhead_bound", TH.overhead_share),
             "memory_management": ("overhead_bound", TH.overhead_share),
             "host_io": ("overhead_bound", TH.overhead_share),
             "overhead": ("overhead_bound", TH.overhead_share),
             "other": ("overhead_bound", TH.unattributed_idle_share),
             "communication": ("communication_bound", TH.communication_share)}
    for cause, (code, thr) in cases.items():
        on = _f(_x(gap_share={cause: thr}), cause)
        off = _f(_x(gap_share={cause: thr * 0.9}), cause)
        assert on.fired and on.code == code and on.severity == "warning", cause
        assert not off.fired and off.severity == "info", cause
        assert on.advice, cause  # a fired finding always carries advice
        assert on.per_step_ms == thr * 800.0


def test_severity_is_critical_at_twice_the_threshold():
    assert _f(_x(gap_share={"sync": 0.2}), "sync").severity == "critical"
    assert _f(_x(gap_share={"sync": 0.19}), "sync").severity == "warning"


def test_launch_needs_small_kernels_as_a_second_rule():
    f = _f(_x(gap_share={"launch": 0.5}, small_kernel_frac=0.1), "launch")
    assert not f.fired
    rows = {e.metric: e for e in f.evidence}
    assert rows["gaps.launch_share"].fired is True
    assert rows["kernels.small_kernel_frac"].fired is False
    assert _f(_x(gap_share={"launch": 0.5}, small_kernel_frac=0.9), "launch").fired


def test_startup_is_insufficient_data_when_it_dominates():
    f = _f(_x(gap_share={"startup": 0.6}), "startup")
    assert f.fired and f.code == "insufficient_data"
    assert "--capture-range=cudaProfilerApi" in _texts(f)
    assert not _f(_x(gap_share={"startup": 0.4}), "startup").fired


def test_no_checkpoint_advice_without_a_phase_naming_it():
    x = _x(gap_share={"overhead": 0.3}, phase_names=(("evaluate", "overhead"),))
    f = _f(x, "overhead")
    assert f.fired and "checkpoint" not in _texts(f).lower()
    assert "Log and evaluate less often" in _texts(f)  # the phase says eval
    f = _f(_x(gap_share={"overhead": 0.3}, phase_names=(("save_checkpoint", "overhead"),)), "overhead")
    assert "checkpointing asynchronous" in _texts(f)
    f = _f(_x(gap_share={"overhead": 0.3}, periodic_slow_step="periodic (every 5 steps)"), "overhead")
    assert "checkpointing asynchronous" in _texts(f)  # a periodic slow step earns it too


def test_sync_advice_names_its_evidence_and_logging_only_when_earned():
    f = _f(_x(gap_share={"sync": 0.3}, gap_detail={"sync": "after cudaStreamSynchronize returned"}), "sync")
    assert "cudaStreamSynchronize" in f.headline and "cudaStreamSynchronize" in _texts(f)
    assert "checkpoint" not in _texts(f).lower()


def test_no_nvtx_phase_advice_when_phases_exist():
    with_phases = _f(_x(gap_share={"other": 0.5}), "other")
    assert with_phases.fired
    assert "NVTX" not in _texts(with_phases) and "NVTX" not in with_phases.headline
    without = _f(_x(gap_share={"other": 0.5}, phase_share={}, phase_ms={}), "other")
    assert "NVTX ranges" in _texts(without)


def test_no_pinned_memory_advice_under_one_mib_per_step():
    small = _f(_x(gap_share={"input": 0.5}, pageable_bytes_per_step=512 * 1024), "input")
    big = _f(_x(gap_share={"input": 0.5}, pageable_bytes_per_step=8 << 20), "input")
    assert "pin_memory" not in _texts(small)
    assert "pin_memory" in _texts(big)
    per_s = _f(_x(gap_share={"transfer": 0.5}, steps_source=None, step_ms=None,
                  pageable_bytes_per_s=2 << 20), "transfer")
    assert "pin_memory" in _texts(per_s)


def test_pinned_memory_advice_for_few_bytes_that_take_a_percent_of_the_window():
    """Many small pageable copies: under 1 MiB per step, but ≥ 1% of the window in copies."""
    slow = _f(_x(gap_share={"input": 0.5}, pageable_bytes_per_step=64 * 1024,
                 pageable_window_share=0.02), "input")
    fast = _f(_x(gap_share={"input": 0.5}, pageable_bytes_per_step=64 * 1024,
                 pageable_window_share=0.005), "input")
    assert "pin_memory" in _texts(slow)
    assert "pin_memory" not in _texts(fast)
    copies = _f(_x(gap_share={"transfer": 0.5}, pageable_bytes_per_step=64 * 1024,
                   pageable_window_share=0.02), "transfer")
    assert "pin_memory" in _texts(copies)
    row = next(e for e in copies.evidence if e.metric == "transfers.pageable_window_share")
    assert row.value == 0.02


def test_gpu_side_findings_from_counters():
    m = _f(_x(utilization=0.9, metrics={"dram_bandwidth": 0.8, "tensor_active": 0.0}), "memory_bound")
    assert m.fired and m.code == "memory_bound"
    assert not _f(_x(utilization=0.9, metrics={"dram_bandwidth": 0.4}), "memory_bound").fired
    tc = _f(_x(utilization=0.9, non_tc_gemm_share=0.6, tensor_active_during_gemm=0.01), "no_tensor_cores")
    assert tc.fired and tc.share_of_window == 0.9 * 0.6
    assert "Tensor pipes active 1% of cycles while GEMMs ran" in tc.headline


def test_too_little_work_fires_on_either_rule():
    assert _f(_x(kernel_count=5), "too_little_work").fired
    assert _f(_x(kernel_time_ms=2.0), "too_little_work").fired
    assert not _f(_x(), "too_little_work").fired


def test_evidence_rows_say_whether_their_own_rule_held():
    e = Evidence("gpu.utilization", 0.798, 0.5, "<", "timeline")
    assert e.role == "rule" and e.fired is False
    c = Evidence("gaps.transfer_share", 0.1, None, "info", "timeline")
    assert c.role == "context" and c.fired is None
    assert compare(0.3, ">=", 0.25) is True and compare("x", ">=", 1) is None
    j = build_findings(_x(gap_share={"sync": 0.3}), TH)[0].to_json()
    assert set(j) == {"code", "cause", "severity", "fired", "share_of_window", "per_step_ms",
                      "threshold", "evidence", "advice", "headline"}
    assert {"fired", "role"} <= set(j["evidence"][0])


def test_sampled_host_frames_earn_their_own_advice_only_when_sampled():
    unsampled = "host time that no NVTX range, CUDA call or copy covers; CPU sampling in the capture would name it"
    sampled = "host time that no trace evidence covers; most sampled frame: decode_jpeg (61% of 900 samples)"
    no_frames = _f(_x(gap_share={"other": 0.4}, gap_detail={"other": unsampled}), "other")
    frames = _f(_x(gap_share={"other": 0.4}, gap_detail={"other": sampled}), "other")
    assert "CPU samples name" not in _texts(no_frames)
    assert "CPU samples name" in _texts(frames) and "decode_jpeg" in _texts(frames)
