"""Bootstrap comparison statistics: intervals, noise floor, significance, explanation."""
from __future__ import annotations

import numpy as np
import pytest

from nsys_diag.analyses.job.compare_stats import (
    CompareSettings,
    as_runs,
    bootstrap_replicates,
    compare_metric,
    explain_delta,
    is_regression,
    mean_delta,
    noise_floor,
    robust_cv,
)


def _steps(mean, cv, n, seed):
    return np.random.default_rng(seed).normal(mean, mean * cv, n)


def test_as_runs_shapes():
    assert [r.tolist() for r in as_runs([1.0, 2.0])] == [[1.0, 2.0]]
    assert [r.tolist() for r in as_runs(np.array([3.0]))] == [[3.0]]
    runs = as_runs([[1.0, np.nan], [], np.array([2.0, 3.0])])
    assert [r.tolist() for r in runs] == [[1.0], [2.0, 3.0]]
    assert as_runs(None) == [] and as_runs([]) == []


def test_shift_of_ten_percent_is_significant_and_worse():
    base, cand = _steps(100, 0.03, 30, 1), _steps(110, 0.03, 30, 2)
    m = compare_metric("step_time_ms", base, cand, seed=0)
    assert m.significant and m.change == "worse" and m.method == "steps"
    assert m.ci_low > 0 and m.ci_low < m.delta < m.ci_high
    assert 6 < m.ci_low_pct < 10 < m.ci_high_pct < 14
    assert is_regression(m, 5.0) and not is_regression(m, 12.0)


def test_same_distribution_is_not_significant():
    base, cand = _steps(100, 0.03, 30, 1), _steps(100, 0.03, 30, 3)
    m = compare_metric("step_time_ms", base, cand, seed=0)
    assert not m.significant and m.change == "none"
    assert m.ci_low < 0 < m.ci_high
    assert not is_regression(m, 0.0)


def test_faster_candidate_is_better_not_a_regression():
    m = compare_metric("step_time_ms", _steps(100, 0.02, 20, 1), _steps(80, 0.02, 20, 2))
    assert m.significant and m.change == "better" and m.delta < 0
    assert not is_regression(m, 0.0)


def test_higher_is_better_direction_and_no_preference():
    up = compare_metric("gpu_busy", _steps(0.5, 0.02, 20, 1), _steps(0.7, 0.02, 20, 2),
                        higher_is_worse=False)
    assert up.change == "better"
    neutral = compare_metric("x", _steps(1, 0.02, 20, 1), _steps(2, 0.02, 20, 2),
                             higher_is_worse=None)
    assert neutral.change == "changed"


def test_deterministic_with_seed_and_seed_matters():
    base, cand = _steps(100, 0.05, 15, 1), _steps(103, 0.05, 15, 2)
    a = compare_metric("m", base, cand, seed=7).to_json()
    b = compare_metric("m", base, cand, seed=7).to_json()
    c = compare_metric("m", base, cand, seed=8).to_json()
    assert a == b
    assert (a["ci_low"], a["ci_high"]) != (c["ci_low"], c["ci_high"])


def test_tiny_but_consistent_change_stays_below_noise_floor():
    # a 0.5% shift with almost no jitter: the interval excludes 0, but 0.5% < the 1% floor
    base = 100 + np.random.default_rng(1).normal(0, 0.01, 50)
    cand = 100.5 + np.random.default_rng(2).normal(0, 0.01, 50)
    m = compare_metric("m", base, cand)
    assert m.ci_low > 0
    assert not m.significant and "noise floor" in m.note


def test_noise_floor_from_step_jitter_and_run_to_run():
    s = CompareSettings()
    assert noise_floor([np.full(10, 5.0)], settings=s) == s.min_rel_change
    noisy = [_steps(100, 0.2, 200, 1)]
    assert noise_floor(noisy, settings=s) == pytest.approx(0.2 * robust_cv(noisy[0]))
    assert 0.03 < noise_floor(noisy, settings=s) < 0.05
    # runs whose medians differ by ±10% → floor ≥ their CV
    runs = [np.full(5, 90.0), np.full(5, 100.0), np.full(5, 110.0)]
    assert noise_floor(runs, settings=s) == pytest.approx(np.std([90, 100, 110], ddof=1) / 100)


def test_robust_cv_edge_cases():
    assert robust_cv(np.array([1.0])) == 0.0
    assert robust_cv(np.array([2.0, 2.0, 2.0])) == 0.0
    # MAD is 0 but one value differs → mean-absolute-deviation fallback, > 0
    assert robust_cv(np.array([1.0, 1.0, 1.0, 2.0])) > 0


def test_hierarchical_bootstrap_widens_interval_with_run_to_run_variation():
    rng = np.random.default_rng(5)
    # every run is tight, but runs differ by a run-level offset of ~4%
    base_runs = [100 * (1 + rng.normal(0, 0.04)) + rng.normal(0, 0.5, 20) for _ in range(4)]
    cand_runs = [100 * (1 + rng.normal(0, 0.04)) + rng.normal(0, 0.5, 20) for _ in range(4)]
    hier = compare_metric("m", base_runs, cand_runs, seed=1)
    flat = compare_metric("m", np.concatenate(base_runs), np.concatenate(cand_runs), seed=1)
    assert hier.method == "runs+steps" and flat.method == "steps"
    assert (hier.ci_high - hier.ci_low) > 2 * (flat.ci_high - flat.ci_low)
    assert hier.noise_floor_pct > 1.0  # run-to-run CV enters the floor


def test_ragged_runs_and_per_run_scalars():
    runs_b = [np.array([10.0, 10.2, 9.9]), np.array([10.1, 10.0]), np.array([9.8, 10.3, 10.0, 10.1])]
    runs_c = [np.array([12.0, 12.1]), np.array([11.9, 12.2, 12.0])]
    m = compare_metric("m", runs_b, runs_c)
    assert m.significant and m.runs_baseline == 3 and m.n_candidate == 5
    # one scalar per run (e.g. a run-level metric) → resample runs
    s = compare_metric("share", [[0.50], [0.52], [0.49]], [[0.70], [0.71], [0.69]],
                       higher_is_worse=False)
    assert s.method == "runs" and s.significant and s.change == "better"


def test_single_sample_per_side_has_no_interval():
    m = compare_metric("m", [1.0], [2.0])
    assert m.method == "none" and m.ci_low is None and not m.significant
    assert m.delta == 1.0 and m.delta_pct == 100.0 and "no confidence interval" in m.note
    assert not is_regression(m, 0.0)
    # in the JSON: not tested is null, not false; a tested metric stays a boolean
    assert m.to_json()["significant"] is None
    assert compare_metric("m", _steps(100, 0.02, 30, 1), _steps(100, 0.02, 30, 2)).to_json()["significant"] is False


def test_missing_side_and_zero_baseline():
    m = compare_metric("m", [], [1.0, 2.0])
    assert m.change == "n/a" and m.baseline is None and "baseline" in m.note
    z = compare_metric("gap", np.zeros(10), np.full(10, 2.0) + np.arange(10) * 0.01, abs_floor=0.1)
    assert z.delta_pct is None and z.ci_low_pct is None and z.significant
    small = compare_metric("gap", np.zeros(10), np.full(10, 0.05), abs_floor=0.1)
    assert not small.significant


def test_bootstrap_replicates_chunking_is_equivalent():
    x = [np.arange(50, dtype=float)]
    a = bootstrap_replicates(x, "mean", 300, np.random.default_rng(0), max_chunk_elements=10**9)
    b = bootstrap_replicates(x, "mean", 300, np.random.default_rng(0), max_chunk_elements=50 * 7)
    assert a.shape == b.shape == (300,)
    # chunks draw the same stream in the same order for one run
    np.testing.assert_allclose(a, b)
    assert abs(a.mean() - 24.5) < 1.0


def test_to_json_has_no_nan():
    m = compare_metric("m", [np.nan, np.nan], [1.0, 2.0]).to_json()
    assert m["baseline"] is None and m["significant"] is None  # not tested: null (issue 28)
    import json
    json.dumps(m, allow_nan=False)


def test_explain_delta_ranks_both_signs_by_size_and_adds_up_with_other():
    comps = [("phase", "data", 8.0, True, 40.0, 48.0), ("phase", "forward", 1.5, False),
             ("phase", "backward", 0.1, False), ("phase", "optimizer", -2.5, False),
             ("kernel", "gemm", 0.0, False)]
    rows = explain_delta(10.0, comps, top=3)
    assert [r.name for r in rows] == ["data", "optimizer", "forward", "other"]
    assert rows[0].share_of_delta == pytest.approx(0.8)
    assert rows[0].baseline == 40.0 and rows[0].candidate == 48.0
    assert rows[1].share_of_delta == pytest.approx(-0.25)  # went against the total: negative share
    assert rows[-1].kind == "other" and rows[-1].delta == pytest.approx(3.0)  # 10 − (8 − 2.5 + 1.5)
    assert sum(r.delta for r in rows) == pytest.approx(10.0)
    assert sum(r.share_of_delta for r in rows) == pytest.approx(1.0)
    flat = explain_delta(0.0, [("phase", "a", -3.0, None), ("phase", "b", 1.0, None)])
    assert [r.name for r in flat] == ["a", "b", "other"] and flat[0].share_of_delta is None
    assert sum(r.delta for r in flat) == pytest.approx(0.0)
    exact = explain_delta(2.0, [("phase", "a", 3.0, None), ("phase", "b", -1.0, None)])
    assert [r.name for r in exact] == ["a", "b"]  # nothing left over: no other row


def test_mean_delta_is_additive_over_phases():
    data_b, data_c = np.array([400.0, 420, 440]), np.array([480.0, 505, 530])
    fwd_b, fwd_c = np.array([180.0, 181, 179]), np.array([180.0, 180, 181])
    step = mean_delta(data_b + fwd_b, data_c + fwd_c)
    assert step == pytest.approx(mean_delta(data_b, data_c) + mean_delta(fwd_b, fwd_c))
    assert mean_delta([], [1.0]) is None
