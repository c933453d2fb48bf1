"""Step detection and classification on hand-built NVTX/kernel frames."""
from __future__ import annotations

import numpy as np
import pytest

import handframes as hf
from handframes import MS
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.steps.detection import STEP_NAME_RE, analyze_steps, step_family
from nsys_diag.model import contracts as C
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.thresholds import Thresholds

PHASES = [("data_loading", 420 * MS), ("forward", 180 * MS), ("backward", 150 * MS),
          ("optimizer_step", 30 * MS), ("logging", 20 * MS)]


def _steps(rows, kernels=None, **opts):
    return analyze_steps(hf.nvtx(rows), kernels if kernels is not None else C.KERNELS.empty(),
                         options=AnalyzeOptions(**opts), th=Thresholds())


@pytest.mark.parametrize("name", ["ProfilerStep#12", "step", "step_3", "Step 3", "train_step",
                                  "train_step_7", "training_step_1", "iter", "iteration_9",
                                  "Iteration 4", "train_iter_2", "STEP#5"])
def test_step_names_match(name):
    assert STEP_NAME_RE.match(name)


@pytest.mark.parametrize("name", ["optimizer_step", "optimizer.step", "step_scheduler",
                                  "forward", "zero_grad", "iterate_dataset", "steps_total"])
def test_non_step_names_do_not_match(name):
    assert not STEP_NAME_RE.match(name)


def test_family_strips_the_counter():
    assert step_family("train_step_12") == "train_step_N"
    assert step_family("ProfilerStep#3") == "ProfilerStep#N"
    assert step_family("step") == "step"


def test_empty_nvtx_is_unavailable_with_a_hint():
    res = analyze_steps(C.NVTX.empty(), C.KERNELS.empty())
    assert isinstance(res, Unavailable)
    assert "NVTX" in res.reason and "nvtx" in res.hint


def test_nvtx_without_steps_or_repeat_is_unavailable():
    res = _steps([dict(text="setup", start_ns=0, end_ns=5 * MS), dict(text="forward", start_ns=6 * MS,
                                                                     end_ns=9 * MS)])
    assert isinstance(res, Unavailable)
    assert "--step-range" in res.hint


def test_worked_example_steps_and_warmup():
    res = _steps(hf.steps_and_phases(6, PHASES))
    assert res.source == "nvtx:train_step_N" and res.count == 6
    assert res.kinds[0] == "warmup" and res.analysed_count == 5
    assert res.mean_ms == pytest.approx(800.0)
    j = res.to_json()
    assert j["warmup"] == [0] and j["incomplete"] == [] and j["outliers"] == []
    assert j["p90_ms"] == pytest.approx(800.0)
    assert len(j["per_step"]) == 6 and j["per_step"][1]["kind"] == "normal"


def test_slow_warmup_steps_are_all_excluded():
    rows = []
    t = 0
    for i, d in enumerate([5000, 3000, 800, 800, 810, 790, 800]):
        rows.append(dict(text=f"step_{i}", start_ns=t, end_ns=t + d * MS))
        t += d * MS
    res = _steps(rows)
    assert res.indices("warmup") == [0, 1]
    assert res.mean_ms == pytest.approx(800.0)


def test_periodic_checkpoint_outliers_are_listed_and_kept_in_the_mean():
    durs = [900] + [100] * 12
    for i in (4, 8, 12):
        durs[i] = 400  # checkpoint every 4 steps
    rows, t = [], 0
    for i, d in enumerate(durs):
        rows.append(dict(text=f"train_step_{i}", start_ns=t, end_ns=t + d * MS))
        t += d * MS
    res = _steps(rows)
    assert [o.index for o in res.outliers] == [4, 8, 12]
    assert all(o.reason == "periodic (every 4 steps)" for o in res.outliers)
    assert res.outliers[0].ratio_to_median == pytest.approx(4.0)
    assert res.mean_ms == pytest.approx((9 * 100 + 3 * 400) / 12)  # outliers stay in the average
    assert res.median_ms == pytest.approx(100.0)


def test_unterminated_and_truncated_last_steps_are_incomplete():
    rows = hf.steps_and_phases(5, [("forward", 10 * MS)])
    rows[-1]["closed"] = False
    res = _steps(rows)
    assert res.kinds[-1] == "incomplete"
    assert 4 not in np.flatnonzero(res.analysed_mask)


def test_last_step_with_few_kernels_is_incomplete():
    rows = hf.steps_and_phases(5, [("forward", 10 * MS)])
    kr = []
    for i in range(5):
        s = 10 * MS + i * 10 * MS
        n = 10 if i < 4 else 3
        kr += [dict(start_ns=s + j * 100_000, end_ns=s + j * 100_000 + 50_000,
                    launch_start_ns=s + j * 100_000 + 10_000) for j in range(n)]
    res = _steps(rows, hf.kernels(kr))
    assert res.kernel_counts.tolist() == [10, 10, 10, 10, 3]
    assert res.kinds[-1] == "incomplete"


def test_user_step_range_exact_and_regex():
    rows = [dict(text="my block", start_ns=i * 10 * MS, end_ns=(i + 1) * 10 * MS) for i in range(4)]
    res = _steps(rows, step_range="my block")
    assert res.source == "user:my block" and res.count == 4
    res = _steps([dict(text=f"blk-{i}", start_ns=i * 10 * MS, end_ns=(i + 1) * 10 * MS) for i in range(4)],
                 step_range=r"blk-\d+")
    assert res.count == 4
    miss = _steps(rows, step_range="nope")
    assert isinstance(miss, Unavailable) and "my block" in miss.hint


def test_nested_step_ranges_and_other_threads_are_dropped():
    rows = hf.steps_and_phases(4, [("forward", 10 * MS)])
    rows.append(dict(text="step_9", start_ns=12 * MS, end_ns=14 * MS))  # nested in step 0
    rows += [dict(text="step_x", start_ns=0, end_ns=1, global_tid=hf.TID_AUTOGRAD)]
    res = _steps(rows)
    assert res.count == 4 and res.global_tid == hf.TID_MAIN


def test_profiler_step_family_wins_over_inner_steps():
    rows = []
    for i in range(3):
        rows.append(dict(text=f"ProfilerStep#{i}", start_ns=i * 100 * MS, end_ns=(i + 1) * 100 * MS))
        for j in range(4):
            s = i * 100 * MS + j * 20 * MS
            rows.append(dict(text=f"step_{j}", start_ns=s, end_ns=s + 10 * MS))
    res = _steps(rows)
    assert res.source == "nvtx:ProfilerStep#N" and res.count == 3


def test_steps_selection_marks_unselected():
    res = _steps(hf.steps_and_phases(8, [("forward", 10 * MS)]), steps=(2, 4))
    assert res.indices("unselected") == [0, 1, 5, 6, 7]
    assert res.analysed_count == 3


def test_window_selects_only_steps_wholly_inside_it():
    rows = hf.steps_and_phases(8, [("forward", 10 * MS)])
    starts = sorted(r["start_ns"] for r in rows if r["text"].startswith("train_step"))
    lo, hi = starts[3] - 1, starts[6]  # steps 3, 4, 5 lie inside; step 6 starts at hi
    res = _steps(rows, window_ns=(lo, hi))
    assert res.indices("unselected") == [0, 1, 2, 6, 7]
    assert res.analysed_count == 3 and res.indices("warmup") == []


def test_loader_outside_step_ranges_switches_to_period_boundaries():
    rows, t = [], 0
    for i in range(6):
        rows.append(dict(text="data_loading", start_ns=t, end_ns=t + 40 * MS))
        rows.append(dict(text=f"step_{i}", start_ns=t + 40 * MS, end_ns=t + 100 * MS))
        t += 100 * MS
    res = _steps(rows)
    assert res.boundary == "period"
    assert res.kinds[-1] == "incomplete"
    assert res.mean_ms == pytest.approx(100.0)  # the loader time is inside the step period
    assert any(code == "step_gaps" for code, _, _ in res.notes)


def test_repeat_detection_uses_the_data_phase_as_cycle_head():
    rows, t = [], 0
    cycle = [("bbox_head", 3), ("reader", 4), ("backbone", 18), ("find_centers", 60)]
    # the capture starts mid-cycle, so bbox_head appears first
    for k in range(8):
        for name, ms in cycle:
            rows.append(dict(text=name, start_ns=t, end_ns=t + ms * MS))
            t += ms * MS
    res = _steps(rows)
    assert res.source == "repeat:reader"
    assert res.count == 8
    assert res.durations_ns[1] == 85 * MS
    assert any(code == "steps_from_repeat" for code, _, _ in res.notes)


def test_framework_op_ranges_are_never_a_repeat():
    rows = [dict(text=f"aten::mm, op_id = {i}", start_ns=i * MS, end_ns=i * MS + 500_000)
            for i in range(20)]
    assert isinstance(_steps(rows), Unavailable)


# ---- a detected repeat is a loop iteration, never a layer (issue 15) --------------------------
def _repeat(names_ms, cycles, t0=0, tid=hf.TID_MAIN):
    """Rows for ``cycles`` back-to-back repetitions of [(name, ms)] on one thread."""
    rows, t = [], t0
    for _ in range(cycles):
        for name, ms in names_ms:
            rows.append(dict(text=name, start_ns=t, end_ns=t + ms * MS, global_tid=tid))
            t += ms * MS
    return rows


@pytest.mark.parametrize("layer", ["FlashAttnFunc", "MyAttentionFunction", "MulBackward0",
                                   "FSDP::pre_forward (blocks.3)", "aten::mm", "LlamaDecoderLayer",
                                   "TransformerBlock", "Linear", "LayerNorm", "nn.Linear",
                                   "flash_attn::_flash_attn_forward", "CheckpointWrapper"])
def test_layer_module_and_op_ranges_are_never_steps(layer):
    res = _steps(_repeat([(layer, 10)], 20))
    assert isinstance(res, Unavailable)
    assert "whole window is analysed" in res.reason


def test_a_layer_beside_a_loop_iteration_loses_to_the_iteration():
    # FlashAttnFunc repeats regularly inside a 1 s window with no step markers: never a step; the
    # per-iteration 'get_batch' range is
    rows = _repeat([("get_batch", 5), ("FlashAttnFunc", 10), ("FlashAttnFunc", 10),
                    ("optimizer", 5)], 8)
    res = _steps(rows)
    assert res.source == "repeat:get_batch" and res.count == 8


def test_pipeline_stage_forward_names_can_head_a_loop():
    res = _steps(_repeat([("transformer_forward", 20), ("post_processing", 5)], 8))
    assert res.source == "repeat:transformer_forward"


def _layer_kernels(heads_ms, per_gap):
    rows = []
    for s, n in zip(heads_ms, per_gap):
        for j in range(n):
            rows.append(dict(name="k", start_ns=int((s + 0.1 + j * 0.01) * MS),
                             end_ns=int((s + 0.1 + j * 0.01) * MS) + 5_000,
                             launch_start_ns=int((s + 0.1 + j * 0.01) * MS)))
    return hf.kernels(rows)


def test_a_layer_nested_in_an_unmarked_cycle_is_not_a_step():
    # 'attn_block' opens 4 times per unmarked iteration; after the 4th comes the rest of the
    # iteration (loss, backward, optimizer): a long gap, at a fixed stride, with far more kernels
    rows, heads, t = [], [], 0.0
    for _ in range(6):
        for j in range(4):
            rows.append(dict(text="attn_block", start_ns=int(t * MS), end_ns=int((t + 2) * MS)))
            heads.append(t)
            t += 10 if j < 3 else 18
    work = [3 if (i % 4) < 3 else 40 for i in range(len(heads))]
    assert isinstance(_steps(rows, kernels=_layer_kernels(heads, work)), Unavailable)


def test_a_periodic_slow_step_with_little_gpu_work_stays_a_step():
    # a checkpoint every 4th iteration: long gaps at a fixed stride, but no extra GPU work
    rows, heads, t = [], [], 0.0
    for i in range(24):
        rows.append(dict(text="get_batch", start_ns=int(t * MS), end_ns=int((t + 2) * MS)))
        heads.append(t)
        t += 10 if i % 4 < 3 else 18
    res = _steps(rows, kernels=_layer_kernels(heads, [3] * len(heads)))
    assert res.source == "repeat:get_batch"


def test_gradient_accumulation_micro_batches_inside_profiler_step():
    # 4 micro-batches named like steps inside each ProfilerStep#N: the step is ProfilerStep
    rows = []
    for i in range(6):
        base = i * 100 * MS
        rows.append(dict(text=f"ProfilerStep#{i}", start_ns=base, end_ns=base + 100 * MS))
        for j in range(4):
            s = base + j * 25 * MS
            rows.append(dict(text=f"train_step_{j}", start_ns=s + MS, end_ns=s + 24 * MS))
    res = _steps(rows)
    assert res.source == "nvtx:ProfilerStep#N" and res.count == 6


def test_outer_iteration_family_wins_over_inner_micro_steps():
    rows = []
    for i in range(6):
        base = i * 100 * MS
        rows.append(dict(text=f"iteration_{i}", start_ns=base, end_ns=base + 100 * MS))
        for j in range(4):
            s = base + j * 25 * MS
            rows.append(dict(text=f"step_{j}", start_ns=s + MS, end_ns=s + 24 * MS))
    res = _steps(rows)
    assert res.source == "nvtx:iteration_N" and res.count == 6


def test_two_steps_the_first_is_warmup():
    res = _steps(hf.steps_and_phases(2, [("forward", 10 * MS)]))
    assert res.kinds[0] == "warmup" and res.analysed_count == 1


def test_detect_steps_is_the_single_detector():
    from nsys_diag.analyses.steps.detection import detect_steps

    rows = hf.steps_and_phases(4, [("forward", 10 * MS)])
    a = detect_steps(hf.nvtx(rows), C.KERNELS.empty())
    b = _steps(rows)
    assert a.source == b.source and a.count == b.count


def test_real_fastvideo_layers_are_not_steps(shared):
    # a window of an FSDP job without step markers: FlashAttnFunc / FSDP::* must never be steps,
    # also once the enclosing long-running ranges are cut away (the sibling window's case)
    from nsys_diag.loaders import load_trace

    b = load_trace(shared("nsys/fastvideo_train_2xh100_2026.2.sqlite"))
    for gpid in b.nvtx["global_pid"].unique():
        nv = b.nvtx[b.nvtx["global_pid"] == gpid]
        k = b.kernels[b.kernels["global_pid"] == gpid]
        assert isinstance(analyze_steps(nv, k), Unavailable)
        span = nv["end_ns"] - nv["start_ns"]
        cut = nv[span < 100 * MS]
        res = analyze_steps(cut, k)
        assert isinstance(res, Unavailable), res.source
