"""Trace summaries (view → small JSON) and run-set comparison (pure functions)."""
from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from nsys_diag.analyses.job.batch_summary import compare_runs, rank_inputs, summarize_view


def _view(step_ms, data_ms, *, per_step_phases=False, utc=1_700_000_000_000_000_000):
    """A minimal view per docs/JSON.md: steps 1.. normal (step 0 warm-up), phases, kernels."""
    per_step, t = [{"index": 0, "start_ns": 0, "duration_ms": 999.0, "kind": "warmup"}], 10**9
    for i, (d, dm) in enumerate(zip(step_ms, data_ms), start=1):
        row = {"index": i, "start_ns": t, "duration_ms": d, "kind": "normal"}
        if per_step_phases:
            row["phases"] = {"data": dm, "forward": d - dm}
        per_step.append(row)
        t += int(d * 1e6)
    n = len(step_ms)
    mean, dmean = float(np.mean(step_ms)), float(np.mean(data_ms))
    return {
        "trace": {"format": "nsys-sqlite", "session_start_utc_ns": utc},
        "steps": {"available": True, "count": n + 1, "per_step": per_step},
        "phases": [{"name": "data_loading", "canonical": "data", "mean_ms": dmean, "share": dmean / mean},
                   {"name": "fwd", "canonical": "forward", "mean_ms": mean - dmean,
                    "share": 1 - dmean / mean},
                   {"name": "other", "canonical": "other", "mean_ms": 0.0, "share": 0.0}],
        "gpu": {"utilization": 0.4},
        "tensor_cores": {"available": True, "share_of_kernel_time": 0.8},
        "gaps": {"by_cause": {"input": dmean * n, "sync": 0.0}},
        "kernels": [
            {"name": "nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT", "total_ns": 30_000_000 * n,
             "count": 3 * n, "category": "gemm", "tensor_core": True},
            {"name": "nvjet_tst_64x8_64x16_4x1_v_bz_TNN", "total_ns": 10_000_000 * n, "count": n,
             "category": "gemm", "tensor_core": True},
            {"name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "total_ns": 5_000_000 * n,
             "count": n, "category": "communication", "tensor_core": False},
        ],
        "verdict": {"code": "input_bound", "headline": "h", "confidence": "high"},
        "processes": [],
    }


def test_summary_excludes_warmup_and_merges_kernel_variants():
    s = summarize_view(_view([100.0, 102.0, 98.0], [50.0, 52.0, 48.0]))
    assert s["per_step"]["duration_ms"] == [100.0, 102.0, 98.0]
    assert s["steps"]["analysed_count"] == 3 and s["steps"]["median_ms"] == 100.0
    assert s["phases"]["data"]["share"] == pytest.approx(0.5)
    assert s["gaps_ms_per_step"]["input"] == pytest.approx(50.0)
    fams = {k["key"]: k for k in s["kernels"]}
    assert fams["nvjet_tst"]["ms_per_step"] == pytest.approx(40.0)  # two tile variants, one family
    assert s["comm_ms_per_step"] == pytest.approx(5.0)
    json.dumps(s, allow_nan=False)


def test_summary_of_a_view_without_steps():
    v = _view([100.0], [50.0])
    v["steps"] = {"available": False, "reason": "no NVTX"}
    s = summarize_view(v)
    assert s["steps"]["available"] is False and s["per_step"]["duration_ms"] == []
    cmp = compare_runs([s], [s])
    assert cmp["step_time"]["method"] == "none" and cmp["regression"] is False
    assert any("no steps" in n for n in cmp["notes"])
    assert compare_runs([s], [s], fail_pct=5)["notes"][-1].startswith("--fail-on-regression")


def test_per_step_phases_give_phase_intervals_and_explanation():
    rng = np.random.default_rng(0)
    n = 15
    data_b = 50 + rng.normal(0, 1, n)
    data_c = 60 + rng.normal(0, 1, n)
    fwd = 50 + rng.normal(0, 1, (2, n))
    b = summarize_view(_view(list(data_b + fwd[0]), list(data_b), per_step_phases=True))
    c = summarize_view(_view(list(data_c + fwd[1]), list(data_c), per_step_phases=True))
    res = compare_runs([b], [c], seed=3, fail_pct=5)
    metrics = {m["name"]: m for m in res["metrics"]}
    assert metrics["phase.data_ms"]["method"] == "steps" and metrics["phase.data_ms"]["significant"]
    assert not metrics["phase.forward_ms"]["significant"]
    assert res["explain"][0]["name"] == "data" and res["explain"][0]["significant"] is True
    assert res["explain"][0]["share_of_delta"] == pytest.approx(
        (data_c.mean() - data_b.mean()) / ((data_c + fwd[1]).mean() - (data_b + fwd[0]).mean()))
    assert res["regression"] is True and res["step_time"]["change"] == "worse"


def test_runs_as_samples_and_verdict_change():
    rng = np.random.default_rng(1)
    base = [summarize_view(_view(list(100 + rng.normal(0, 1, 6)), [50.0] * 6)) for _ in range(3)]
    cand_views = [_view(list(100 + rng.normal(0, 1, 6)), [50.0] * 6) for _ in range(3)]
    for v in cand_views:
        v["verdict"]["code"] = "compute_bound"
        v["gpu"]["utilization"] = 0.7
    cand = [summarize_view(v) for v in cand_views]
    res = compare_runs(base, cand)
    assert res["verdict_change"]["changed"] and res["verdict_change"]["candidate"] == "compute_bound"
    gpu = next(m for m in res["metrics"] if m["name"] == "gpu_busy")
    # identical per-run values on each side: the interval collapses to the difference
    assert gpu["method"] == "runs" and gpu["significant"] and gpu["change"] == "better"
    assert not res["step_time"]["significant"]
    assert res["summary"].startswith("no significant change in step time (")


def test_rank_inputs_carry_alignment_facts():
    s = summarize_view(_view([100.0, 101.0], [50.0, 51.0], utc=42))
    (ri,) = rank_inputs([s], [3], ["rank3.sqlite"])
    assert ri.rank == 3 and ri.session_start_utc_ns == 42
    assert list(ri.step_index) == [1, 2] and ri.step_start_ns[0] == 10**9
    assert ri.phase_ms["data"] == pytest.approx(50.5) and ri.comm_ms == pytest.approx(5.0)


def test_summary_tolerates_missing_sections():
    s = summarize_view({"verdict": {"code": "insufficient_data"}})
    assert s["verdict"] == "insufficient_data" and s["kernels"] == [] and s["gpu_busy"] is None
    v = copy.deepcopy(_view([1.0, 2.0], [0.5, 1.0]))
    v["kernels"] = [None, {"name": None}]
    summarize_view(v)


def _no_steps(view: dict, busy: list[float], bin_ns: int = 10_000_000) -> dict:
    """``view`` without steps, with hand-made 10 ms window bins (``timeline.window_bins``)."""
    v = copy.deepcopy(view)
    v["steps"] = {"available": False, "reason": "no NVTX"}
    n = len(busy)
    v["timeline"] = {"available": True, "window_bins": {
        "bin_ns": bin_ns, "start_ns": 0, "count": n, "busy": busy,
        "category_ns": {"gemm": [int(b * bin_ns) for b in busy]},
        "tensor_core_ns": [int(b * bin_ns) for b in busy], "exposed_comm_ns": [0] * n,
        "kernel_ns": {"nvjet_tst": [int(b * bin_ns) for b in busy]}}}
    return v


def test_gate_is_evaluated_only_with_steps_on_both_sides_and_a_comparable_pair():
    rng = np.random.default_rng(4)
    b = summarize_view(_view(list(100 + rng.normal(0, 1, 10)), [50.0] * 10))
    c = summarize_view(_view(list(120 + rng.normal(0, 1, 10)), [50.0] * 10))
    res = compare_runs([b], [c], fail_pct=5)
    assert res["gate"] == {"requested_pct": 5, "evaluated": True, "reason": None, "passed": False}
    assert res["regression"] is True and res["comparability"]["score"] == pytest.approx(1.0)
    blind = summarize_view(_no_steps(_view([100.0], [50.0]), [0.5] * 30))
    res = compare_runs([b], [blind], fail_pct=5)
    assert res["gate"]["evaluated"] is False and res["regression"] is False
    assert "no steps on the candidate side" in res["gate"]["reason"]
    assert compare_runs([b], [c])["gate"]["evaluated"] is False  # no gate requested
    # a pair running other kernels is incomparable: gate not evaluable even with steps
    other_view = _view(list(120 + rng.normal(0, 1, 10)), [50.0] * 10)
    for k in other_view["kernels"]:
        k["name"] = "volta_sgemm_" + k["name"][:3]
    res = compare_runs([b], [summarize_view(other_view)], fail_pct=5)
    assert res["comparability"]["score"] < 0.5 and res["comparability"]["comparable"] is False
    assert res["gate"]["evaluated"] is False and "not comparable" in res["gate"]["reason"]
    assert any("kernel mix" in r for r in res["comparability"]["reasons"])


def test_comparability_scores_gpu_model_and_step_counts():
    from nsys_diag.analyses.job.compare_window import comparability
    b = summarize_view(_view([100.0] * 40, [50.0] * 40))
    c = summarize_view(_view([100.0] * 40, [50.0] * 40))
    b["gpus"], c["gpus"] = ["NVIDIA H100 80GB HBM3"], ["NVIDIA A100-SXM4-40GB"]
    comp = comparability([b], [c])
    assert comp["score"] == pytest.approx(0.5) and comp["checks"]["gpu_match"] is False
    few = summarize_view(_view([100.0] * 5, [50.0] * 5))
    few["gpus"] = b["gpus"]
    assert comparability([b], [few])["score"] == pytest.approx(0.75)


def test_explain_lists_both_signs_and_each_group_adds_up_to_the_delta():
    rng = np.random.default_rng(5)
    n = 12
    vb = _view(list(100 + rng.normal(0, 1, n)), list(50 + rng.normal(0, 1, n)), per_step_phases=True)
    vc = _view(list(90 + rng.normal(0, 1, n)), list(40 + rng.normal(0, 1, n)), per_step_phases=True)
    vc["kernels"][0]["name"] = "volta_sgemm_128x64_nn"  # one family replaced by another
    vc["kernels"][0]["total_ns"] = 45_000_000 * n
    b, c = summarize_view(vb), summarize_view(vc)
    res = compare_runs([b], [c], seed=1)
    step_delta = float(np.mean(c["per_step"]["duration_ms"]) - np.mean(b["per_step"]["duration_ms"]))
    for group in ("phases", "kernels"):
        rows = [e for e in res["explain"] if e["group"] == group]
        assert rows and sum(e["delta"] for e in rows) == pytest.approx(step_delta, abs=1e-9)
        assert sum(e["share_of_delta"] for e in rows) == pytest.approx(1.0)
        named = [e for e in rows if e["kind"] != "other"]
        assert [abs(e["delta"]) for e in named] == sorted((abs(e["delta"]) for e in named),
                                                          reverse=True)
    kernels = {e["name"]: e for e in res["explain"] if e["kind"] == "kernel"}
    assert kernels["volta_sgemm"]["delta"] == pytest.approx(45.0)      # went up …
    assert kernels["nvjet_tst"]["delta"] == pytest.approx(-30.0)       # … and down: both listed
    assert kernels["nvjet_tst"]["baseline"] == pytest.approx(40.0)
    assert kernels["nvjet_tst"]["candidate"] == pytest.approx(10.0)
    assert kernels["volta_sgemm"]["share_of_delta"] < 0 < kernels["nvjet_tst"]["share_of_delta"]


def test_window_rates_compare_bins_when_there_are_no_steps():
    rng = np.random.default_rng(6)
    b = summarize_view(_no_steps(_view([100.0], [50.0]), list(np.clip(0.5 + rng.normal(0, .05, 60), 0, 1))))
    c = summarize_view(_no_steps(_view([100.0], [50.0]), list(np.clip(0.7 + rng.normal(0, .05, 60), 0, 1))))
    res = compare_runs([b], [c], fail_pct=5)
    wr = res["window_rates"]
    assert wr["available"] and wr["bins"] == {"baseline": 60, "candidate": 60}
    m = {r["name"]: r for r in wr["metrics"]}
    assert m["window.gpu_busy"]["significant"] and m["window.gpu_busy"]["change"] == "better"
    assert m["window.gpu_busy"]["ci_low"] > 0.1
    assert m["window.kernel_ms_per_s.gemm"]["baseline"] == pytest.approx(
        np.mean(b["window_bins"]["category_ns"]["gemm"]) / 1e4)
    assert "window.kernel.nvjet_tst_ms_per_s" in m and "window.tensor_core_share" in m
    assert res["gate"]["evaluated"] is False and "step time not available" in res["gate"]["reason"]
    assert res["summary"].startswith("step time not available")
    short = summarize_view(_no_steps(_view([100.0], [50.0]), [0.5] * 10))
    wr = compare_runs([b], [short])["window_rates"]
    assert wr["available"] is False and "fewer than 20" in wr["reason"]
    json.dumps(res, allow_nan=False)
