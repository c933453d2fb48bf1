"""Phase breakdown: exclusive shares, canonical mapping, GPU busy/work attribution."""
from __future__ import annotations

import pytest

import handframes as hf
from handframes import MS, US
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.timeline.busy import Window, choose_window, device_busy
from nsys_diag.analyses.steps.phases import (MAX_PHASE_ROWS, analyze_phases, canonical_phase,
                                       parse_phase_map, phase_group_name)
from nsys_diag.analyses.steps.detection import analyze_steps
from nsys_diag.model import contracts as C
from nsys_diag.model.errors import UsageError

WORKED = [("data_loading", 420 * MS), ("forward", 180 * MS), ("backward", 150 * MS),
          ("optimizer_step", 30 * MS), ("logging", 20 * MS)]
T0 = 10 * MS


def _run(rows, kernels=None, phase_map=None):
    nv = hf.nvtx(rows)
    k = kernels if kernels is not None else C.KERNELS.empty()
    steps = analyze_steps(nv, k)
    w = choose_window(steps, k, C.MEMCPY.empty(), C.MEMSET.empty())
    busy = device_busy(k, C.MEMCPY.empty(), C.MEMSET.empty(), w, [0])
    return analyze_phases(nv, steps, k, busy, phase_map=phase_map)


def _worked_kernels(n_steps=6):
    """Per step: forward kernels (main thread) and backward kernels launched by autograd."""
    rows = []
    for i in range(n_steps):
        s = T0 + i * 800 * MS
        f = s + 420 * MS
        rows.append(dict(start_ns=f + 1 * MS, end_ns=f + 101 * MS, launch_start_ns=f + 500 * US))
        b = f + 180 * MS
        # launched inside backward from the autograd thread; runs 200 ms later, past the phase
        rows.append(dict(start_ns=b + 100 * MS, end_ns=b + 190 * MS, launch_start_ns=b + 100 * US,
                         launch_global_tid=hf.TID_AUTOGRAD))
    return hf.kernels(rows)


def test_worked_example_shares_are_exact():
    res = _run(hf.steps_and_phases(6, WORKED))
    shares = {r.name: r.share for r in res.rows}
    assert shares["data_loading"] == pytest.approx(0.525, abs=1e-9)
    assert shares["forward"] == pytest.approx(0.225, abs=1e-9)
    assert shares["backward"] == pytest.approx(0.1875, abs=1e-9)
    assert shares["optimizer_step"] == pytest.approx(0.0375, abs=1e-9)
    assert shares["logging"] == pytest.approx(0.025, abs=1e-9)
    assert [r.name for r in res.rows] == ["data_loading", "forward", "backward", "optimizer_step",
                                          "logging", "other"]
    assert [r.canonical for r in res.rows] == ["data", "forward", "backward", "optimizer",
                                               "overhead", "other"]
    assert sum(r.share for r in res.rows) == pytest.approx(1.0)
    assert res.rows[-1].mean_ms == pytest.approx(0.0)
    assert res.rows[0].count == 5  # five analysed steps (step 0 is warm-up)


def test_gpu_busy_is_wall_clock_and_gpu_work_follows_the_launch_on_any_thread():
    res = _run(hf.steps_and_phases(6, WORKED), _worked_kernels())
    row = {r.name: r for r in res.rows}
    # forward kernel: 100 ms inside forward's span, launched in forward
    assert row["forward"].gpu_busy_ms == pytest.approx(100.0)
    assert row["forward"].gpu_work_ms == pytest.approx(100.0)
    # backward kernel runs [100, 190) ms after backward starts: 50 ms inside backward (150 ms),
    # 30 ms in optimizer_step, 10 ms in logging — but all 90 ms of work belong to backward
    assert row["backward"].gpu_busy_ms == pytest.approx(50.0)
    assert row["backward"].gpu_work_ms == pytest.approx(90.0)
    assert row["optimizer_step"].gpu_busy_ms == pytest.approx(30.0)
    assert row["optimizer_step"].gpu_work_ms == pytest.approx(0.0)
    assert row["logging"].gpu_busy_ms == pytest.approx(10.0)
    assert row["backward"].gpu_busy_share == pytest.approx(50 / 150)
    for r in res.rows:
        assert r.gpu_busy_ms <= r.mean_ms + 1e-9


def test_graph_kernels_land_in_the_phase_of_the_graph_launch():
    launch = T0 + 800 * MS + 420 * MS + 5 * MS  # inside step 1's forward
    rows = [dict(start_ns=launch + 10 * MS + j * MS, end_ns=launch + 10 * MS + j * MS + 500 * US,
                 launch_start_ns=launch, launch_api="cudaGraphLaunch", correlation_id=77,
                 graph_node_id=j) for j in range(4)]
    res = _run(hf.steps_and_phases(6, WORKED), hf.kernels(rows))
    row = {r.name: r for r in res.rows}
    assert row["forward"].gpu_work_ms * 5 == pytest.approx(2.0)  # 4 × 0.5 ms over 5 steps


def test_nested_ranges_count_once_and_gaps_are_other():
    rows = []
    for i in range(4):
        s = i * 100 * MS
        rows += [dict(text=f"step_{i}", start_ns=s, end_ns=s + 100 * MS),
                 dict(text="forward", start_ns=s + 10 * MS, end_ns=s + 50 * MS),
                 dict(text="aten::linear", start_ns=s + 12 * MS, end_ns=s + 30 * MS),  # nested
                 dict(text="backward", start_ns=s + 50 * MS, end_ns=s + 90 * MS)]
    res = _run(rows)
    row = {r.name: r for r in res.rows}
    assert set(row) == {"forward", "backward", "other"}
    assert row["forward"].share == pytest.approx(0.4)
    assert row["other"].share == pytest.approx(0.2)


def test_partially_overlapping_start_end_ranges_stay_exclusive():
    rows = []
    for i in range(4):
        s = i * 100 * MS
        rows += [dict(text=f"step_{i}", start_ns=s, end_ns=s + 100 * MS),
                 dict(text="DataLoader.__next__", start_ns=s, end_ns=s + 30 * MS, kind="start_end"),
                 dict(text="forward", start_ns=s + 20 * MS, end_ns=s + 100 * MS)]
    res = _run(rows)
    row = {r.name: r for r in res.rows}
    assert row["DataLoader.__next__"].mean_ms == pytest.approx(30.0)
    assert row["forward"].mean_ms == pytest.approx(70.0)
    assert sum(r.share for r in res.rows) == pytest.approx(1.0)


def test_phases_without_steps_are_unavailable():
    steps = Unavailable("no steps", "hint")
    res = analyze_phases(C.NVTX.empty(), steps, C.KERNELS.empty(), {})
    assert isinstance(res, Unavailable) and "steps" in res.reason


def test_step_with_no_phase_ranges_is_all_other():
    rows = [dict(text=f"step_{i}", start_ns=i * 10 * MS, end_ns=(i + 1) * 10 * MS) for i in range(4)]
    res = _run(rows)
    assert [r.name for r in res.rows] == ["other"] and res.rows[0].share == pytest.approx(1.0)


def test_many_distinct_names_are_folded_per_canonical():
    rows = []
    n = MAX_PHASE_ROWS + 5
    for i in range(3):
        s = i * 1000 * MS
        rows.append(dict(text=f"step_{i}", start_ns=s, end_ns=s + 1000 * MS))
        for j in range(n):
            rows.append(dict(text=f"block{j}_fwd", start_ns=s + j * 10 * MS,
                             end_ns=s + j * 10 * MS + (n - j) * 100_000))
    res = _run(rows)
    assert len(res.rows) == MAX_PHASE_ROWS + 2  # kept + one folded forward row + other
    folded = [r for r in res.rows if r.name.endswith("more forward ranges")]
    assert folded and folded[0].canonical == "forward" and folded[0].name.startswith("5 ")
    assert sum(r.share for r in res.rows) == pytest.approx(1.0)


@pytest.mark.parametrize("name,canonical", [
    ("data_loading", "data"), ("DataLoader.__next__", "data"), ("data", "data"),
    ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "data"),
    ("[_TrainingEpochLoop].train_dataloader_next", "data"), ("preprocess", "data"),
    ("forward", "forward"), ("fwd", "forward"), ("model_forward", "forward"),
    ("[LightningModule]Net.training_step", "forward"), ("compute_loss", "forward"),
    ("backward", "backward"), ("loss.backward", "backward"), ("bwd", "backward"),
    ("optimizer_step", "optimizer"), ("optimizer.step", "optimizer"), ("optimizer", "optimizer"),
    ("zero_grad", "optimizer"), ("clip_grad_norm_", "optimizer"), ("lr_scheduler.step", "optimizer"),
    ("logging", "overhead"), ("log_metrics", "overhead"), ("checkpoint", "overhead"),
    ("save_checkpoint", "overhead"), ("evaluate", "overhead"), ("validation", "overhead"),
    ("ncclAllReduce", "communication"), ("communication", "communication"),
    ("all_reduce_grads", "communication"), ("overhead", "overhead"),
    ("3D_backbone", "other"), ("postprocess", "other"), ("find_centers", "other"),
])
def test_default_patterns(name, canonical):
    assert canonical_phase(name) == canonical


def test_user_phase_map_wins_and_is_validated():
    pm = parse_phase_map({"phases": {"data": ["^find_centers$"], "overhead": "bbox"}})
    assert canonical_phase("find_centers", pm) == "data"
    assert canonical_phase("bbox_head", pm) == "overhead"
    assert canonical_phase("forward", pm) == "forward"  # defaults still apply
    assert parse_phase_map({"forward": ["x"]}) == (("forward", ("x",)),)
    with pytest.raises(UsageError, match="unknown phase"):
        parse_phase_map({"phases": {"loading": ["x"]}})
    with pytest.raises(UsageError, match="bad pattern"):
        parse_phase_map({"phases": {"data": ["("]}})
    with pytest.raises(UsageError):
        parse_phase_map({"phases": {"data": [1]}})


def test_phase_names_are_normalised_for_grouping():
    assert phase_group_name("aten::mm, op_id = 12") == "aten::mm"
    assert phase_group_name("Linear, seq = 3, op_id = 9") == "Linear"
    assert phase_group_name("micro_batch_3") == "micro_batch"
    assert phase_group_name("layer4") == "layer4"


def test_phase_windows_and_canonical_intervals():
    res = _run(hf.steps_and_phases(3, WORKED))
    pw = res.phase_windows()
    assert set(pw.columns) == {"phase", "start_ns", "end_ns"}
    assert (pw["phase"] == "data_loading").sum() == 2
    s, e = res.canonical_intervals("data")
    assert ((e - s) == 420 * MS).all() and s.size == 2
    assert res.canonical_share("overhead") == pytest.approx(0.025)


def test_process_without_gpu_activity_has_no_gpu_numbers():
    res = analyze_phases(hf.nvtx(hf.steps_and_phases(4, WORKED)),
                         analyze_steps(hf.nvtx(hf.steps_and_phases(4, WORKED)), C.KERNELS.empty()),
                         C.KERNELS.empty(), {})
    assert all(r.gpu_busy_ms is None and r.gpu_busy_share is None for r in res.rows)


def test_window_choice_precedence():
    steps = analyze_steps(hf.nvtx(hf.steps_and_phases(4, WORKED)), C.KERNELS.empty())
    k = hf.kernels([dict(start_ns=5 * MS, end_ns=9000 * MS)])
    w = choose_window(steps, k, C.MEMCPY.empty(), C.MEMSET.empty())
    assert w.source == "steps" and w.start_ns == T0 + 800 * MS
    w = choose_window(Unavailable("x"), k, C.MEMCPY.empty(), C.MEMSET.empty())
    assert (w.source, w.start_ns, w.end_ns) == ("gpu_activity", 5 * MS, 9000 * MS)
    w = choose_window(steps, k, C.MEMCPY.empty(), C.MEMSET.empty(), user_window=(1, 2))
    assert w == Window(1, 2, "user")
    w = choose_window(Unavailable("x"), C.KERNELS.empty(), C.MEMCPY.empty(), C.MEMSET.empty(),
                      capture=(0, 50))
    assert w.source == "capture"


@pytest.mark.parametrize("name", ["FSDP::pre_forward (blocks.15._checkpoint_wrapped_module)",
                                  "FSDP::post_backward", "FSDP::pre_backward", "c10d::allreduce_",
                                  "nccl:all_to_all", "ncclAllReduce", "record_param_comms",
                                  "allgather_into_tensor", "reduce_scatter", "MPI_Recv",
                                  "torch.distributed.all_reduce"])
def test_fsdp_and_collective_ranges_are_communication(name):
    assert canonical_phase(name) == "communication"


def test_activation_checkpointing_is_not_checkpoint_overhead():
    assert canonical_phase("checkpoint_wrapped_module") != "overhead"
    assert canonical_phase("save_checkpoint") == "overhead"
    assert canonical_phase("loss.backward") == "backward"
