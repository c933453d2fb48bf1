"""run_suite: per-process analysis, headline choice, device filter; generated presets against their
known answers (``synth.expected``); every real trace in ../shared/traces."""
from __future__ import annotations

import dataclasses

import pytest

import handframes as hf
from conftest import shared_trace
from handframes import MS
from nsys_diag.analyses.suite import run_suite
from nsys_diag.model.bundle import TraceBundle, TraceMeta
from nsys_diag.model.errors import UsageError
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.thresholds import Thresholds

REAL_TRACES = ("fastvideo_train_2xh100_2026.2", "nvfuser_matmul_h200_2024.6",
               "saxpy_mpi_a100_2022.2", "mordred_rtx6000_2021", "centerformer_nvtx_only_2022.4",
               "dynamicvit_no_cuda_tables")


def _two_process_bundle() -> TraceBundle:
    return hf.two_process_bundle()


def test_each_process_is_analysed_and_the_slowest_is_the_headline():
    # a handful of kernels: below min_kernels_to_diagnose, which this test is not about
    suite = run_suite(_two_process_bundle(), th=Thresholds(min_kernels_to_diagnose=1,
                                                           min_kernel_time_ns_to_diagnose=0))
    assert len(suite.processes) == 2
    assert [p.pid for p in suite.processes] == [100, 101]
    assert suite.headline.pid == 101 and suite.headline.name == "rank1"
    assert suite.headline.steps.mean_ms == pytest.approx(200.0)
    assert suite.processes[0].devices == (0,) and suite.processes[1].devices == (1,)
    rows = [p.summary() for p in suite.processes]
    assert rows[0]["steps_mean_ms"] == pytest.approx(100.0)
    assert all(r["verdict_code"] == "compute_bound" for r in rows)


def test_device_filter_and_unknown_device():
    suite = run_suite(_two_process_bundle(), AnalyzeOptions(device=0))
    assert [p.pid for p in suite.processes] == [100]
    assert [g["id"] for g in suite.gpus] == [0]
    with pytest.raises(UsageError, match="devices with activity: 0, 1"):
        run_suite(_two_process_bundle(), AnalyzeOptions(device=5))


def test_empty_bundle_is_insufficient_data():
    suite = run_suite(TraceBundle(meta=TraceMeta(path="x.sqlite", format="nsys-sqlite")))
    assert len(suite.processes) == 1 and suite.headline.pid == -1
    assert suite.headline.verdict.code == "insufficient_data"
    assert suite.capture_hints and "nsys profile" in suite.capture_hints[0]


def test_user_window_is_used_and_said():
    suite = run_suite(_two_process_bundle(), AnalyzeOptions(window_ns=(0, 300 * MS)))
    assert suite.headline.window.source == "user"
    assert suite.headline.window.duration_ns == 300 * MS


# ------------------------------------------------------------------------- generated presets
synth = pytest.importorskip("nsys_diag.synth")
PRESETS = ("worked_example", "healthy_tc", "simt_gemm", "memory_bound", "overhead_bound",
           "launch_bound", "multi_gpu", "inference", "no_cuda")


@pytest.fixture(scope="module")
def preset_suites(tmp_path_factory):
    from nsys_diag.loaders import load_trace

    d = tmp_path_factory.mktemp("presets")
    out = {}
    for name in PRESETS:
        path = synth.write_preset(d / f"{name}.sqlite", name)
        out[name] = run_suite(load_trace(path))
    return out


@pytest.mark.parametrize("name", PRESETS)
def test_preset_matches_its_known_answers(preset_suites, name):
    exp = synth.expected(name)
    suite = preset_suites[name]
    head = suite.headline
    assert head.verdict.code == exp["verdict"]
    assert len(suite.processes) == exp["processes"]
    tol = max(exp.get("tolerance", 0.0), 1e-6)
    st = exp["steps"]
    assert head.steps.count == st["count"]
    assert head.steps.indices("warmup") == st["warmup"]
    assert head.steps.analysed_count == st["analysed_count"]
    assert head.steps.mean_ms == pytest.approx(st["mean_ms"], rel=tol)
    rows = {r.name: r for r in head.phases.rows}
    for p in exp["phases"]:
        r = rows[p["name"]]
        assert r.canonical == p["canonical"], p["name"]
        assert r.share == pytest.approx(p["share"], abs=tol), p["name"]
        assert r.count == p["occurrences"]
        if head.devices:
            assert r.gpu_work_ms == pytest.approx(p["gpu_work_ms"], rel=tol, abs=1e-6), p["name"]
    if head.devices:
        assert head.utilization.utilization == pytest.approx(exp["gpu"]["utilization"], abs=tol)


def test_worked_example_phase_table_is_exact(preset_suites):
    rows = {r.name: r.share for r in preset_suites["worked_example"].headline.phases.rows}
    expected = {"data_loading": 0.525, "forward": 0.225, "backward": 0.1875, "optimizer_step": 0.0375,
                "logging": 0.025}
    for name, share in expected.items():
        assert rows[name] == pytest.approx(share, abs=1e-6)
    assert preset_suites["worked_example"].headline.utilization.utilization == pytest.approx(0.24, abs=1e-6)


def test_overhead_preset_lists_the_periodic_checkpoint(preset_suites):
    head = preset_suites["overhead_bound"].headline
    assert [o.index for o in head.steps.outliers] == [4, 9]
    assert all("every 5 steps" in o.reason and "save_checkpoint" in o.reason
               for o in head.steps.outliers)


def test_multi_gpu_preset_is_per_process(preset_suites):
    suite = preset_suites["multi_gpu"]
    assert {p.devices for p in suite.processes} == {(0,), (1,)}
    assert suite.headline.communication.exposed_share_of_step > 0.10


# ------------------------------------------------------------------------------ real traces
def _real(name):
    from nsys_diag.loaders import load_trace

    return run_suite(load_trace(shared_trace(f"nsys/{name}.sqlite")))


@pytest.mark.realtrace
@pytest.mark.parametrize("name", REAL_TRACES)
def test_every_real_trace_is_analysed(name):
    suite = _real(name)
    assert suite.processes
    v = suite.headline.verdict
    assert v.code and v.headline and v.recommendations


@pytest.mark.realtrace
def test_fastvideo_two_devices_nccl_and_tensor_cores():
    suite = _real("fastvideo_train_2xh100_2026.2")
    assert [g["id"] for g in suite.gpus] == [0, 1]
    assert len(suite.processes) == 2
    assert sorted(d for p in suite.processes for d in p.devices) == [0, 1]
    for p in suite.processes:
        table = p.kernels.table
        nccl = table[table["name"].str.startswith("nccl")]
        assert len(nccl) and (nccl["category"] == "communication").all()
        tc_named = table[table["name"].str.contains("nvjet|flash_fwd|flash_bwd", regex=True)]
        assert len(tc_named) and tc_named["tensor_core"].all()
        tc_share = float(tc_named["total_ns"].sum()) / float(table["total_ns"].sum())
        assert p.tensor_cores.share_of_kernel_time >= tc_share - 1e-9
        assert p.communication.per_device[0].comm_ns > 0
        assert p.verdict.code != "insufficient_data"


@pytest.mark.realtrace
def test_dynamicvit_is_insufficient_data_with_capture_flags():
    suite = _real("dynamicvit_no_cuda_tables")
    v = suite.headline.verdict
    assert v.code == "insufficient_data"
    assert any("-t cuda" in r for r in v.recommendations)
    assert any("nvtx" in h for h in suite.capture_hints)


@pytest.mark.realtrace
def test_centerformer_steps_from_the_repeating_reader_range():
    suite = _real("centerformer_nvtx_only_2022.4")
    head = suite.headline
    assert head.steps.source == "repeat:reader" and head.steps.count == 304
    assert head.verdict.code == "insufficient_data"
    assert {r.name: r.canonical for r in head.phases.rows}["reader"] == "data"


def test_suite_result_is_not_frozen_but_results_are():
    suite = run_suite(_two_process_bundle())
    with pytest.raises(dataclasses.FrozenInstanceError):
        suite.headline.steps.source = "x"  # type: ignore[misc]


def test_process_analyses_are_a_valid_task_graph_with_the_heavy_work_pooled():
    """The per-process analyses form a task graph (analyses/engine/taskgraph.py): every dependency is
    declared and the pooled (worker-thread) tasks are the kernel table, NVTX ranges, gap evidence,
    gaps, GPU metrics and Tensor Core levels — the same split whatever order the tasks are listed
    in."""
    import random

    from nsys_diag.analyses import suite as S
    from nsys_diag.analyses.timeline.busy import choose_window
    from nsys_diag.analyses.steps.detection import analyze_steps
    from nsys_diag.analyses.engine.taskgraph import run_tasks, topological_order
    from nsys_diag.model.thresholds import Thresholds

    bundle = _two_process_bundle()
    gpid = S._process_ids(bundle)[0]
    f = {name: S.process_rows(getattr(bundle, name), gpid) for name in S.PROCESS_FRAMES}
    opts, th = AnalyzeOptions(), Thresholds()
    steps = analyze_steps(f["nvtx"], f["kernels"], options=opts, th=th)
    window = choose_window(steps, f["kernels"], f["memcpy"], f["memset"], user_window=None,
                           capture=(0, 10**12))

    def tasks():
        return S._process_tasks(bundle, f, 100, (0,), steps, window, opts, th, None)

    assert {t.name for t in tasks() if t.pooled} == {"kernel_table", "nvtx_ranges", "evidence",
                                                     "gaps", "gpu_metrics", "tensor_cores"}
    assert len(topological_order(tasks())) == len(tasks())
    ref = run_tasks(tasks(), parallel=False)
    shuffled = tasks()
    random.Random(3).shuffle(shuffled)
    got = run_tasks(shuffled, parallel=True)
    assert got.keys() == ref.keys()
    assert got["gaps"].to_json() == ref["gaps"].to_json()
    assert got["phases"].to_json() == ref["phases"].to_json()
    assert got["kernel_table"][1].to_json() == ref["kernel_table"][1].to_json()
