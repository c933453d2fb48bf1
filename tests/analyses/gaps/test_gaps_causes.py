"""The twelve idle causes, one by one, on hand-built frames (every number computed by hand), and
their precedence, evidence rows and details."""
from __future__ import annotations

import pandas as pd
import pytest

import handframes as hf
from handframes import MS, US
from nsys_diag.analyses.timeline.busy import Window, device_busy
from nsys_diag.analyses.gaps.causes import analyze_gaps
from nsys_diag.analyses.steps.phases import analyze_phases
from nsys_diag.analyses.steps.detection import analyze_steps
from nsys_diag.model import contracts as C
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import GAP_CAUSE_LABELS, GAP_CAUSES

TH = Thresholds()
W = Window(0, 100 * MS, "user")
OTHER_TID = hf.GPID | 9


def _two_kernels(gap=(10 * MS, 30 * MS)):
    """Kernels [0, gap start) and [gap end, 100 ms): one idle gap."""
    return hf.kernels([dict(start_ns=0, end_ns=gap[0]), dict(start_ns=gap[1], end_ns=100 * MS)])


def _gaps(k, *, api=None, memcpy=None, nvtx=None, osrt=None, samples=None, sync=None,
          phases=None, window=W):
    memcpy = memcpy if memcpy is not None else C.MEMCPY.empty()
    busy = device_busy(k, memcpy, C.MEMSET.empty(), window)
    return analyze_gaps(busy, k, api if api is not None else C.API.empty(),
                        sync if sync is not None else C.SYNC.empty(), phases, window, th=TH,
                        memcpy=memcpy, memset=C.MEMSET.empty(), nvtx=nvtx, osrt=osrt,
                        cpu_samples=samples)


def _osrt(rows):
    d = dict(global_tid=hf.TID_MAIN, global_pid=hf.GPID, pid=hf.PID, tid=1)
    df = pd.DataFrame([{**d, **r} for r in rows])
    df["name"] = df["name"].astype("category")
    return df


def _samples(rows):
    d = dict(global_tid=hf.TID_MAIN, global_pid=hf.GPID, pid=hf.PID, tid=1, state="running")
    df = pd.DataFrame([{**d, **r} for r in rows])
    df["top_frame"] = df["top_frame"].astype("category")
    return df


def _ms(g, cause):
    return g.by_cause_ns[cause] / MS


def test_vocabulary_lists_twelve_causes_in_precedence_order_with_labels():
    assert GAP_CAUSES == ("startup", "input", "overhead", "communication", "transfer",
                          "unified_memory", "sync", "memory_management", "host_io", "host_cpu",
                          "launch", "other")
    labels = dict(GAP_CAUSE_LABELS)
    assert labels["startup"] == "Start-up" and labels["host_io"] == "Host I/O"
    assert labels["communication"] == "Communication (host)"
    assert labels["unified_memory"] == "Unified memory"
    assert labels["memory_management"] == "Memory management"
    assert labels["host_cpu"] == "Host code after a sync"


def test_idle_before_the_first_kernel_is_startup():
    k = hf.kernels([dict(start_ns=30 * MS, end_ns=100 * MS)])
    m = hf.memcpy([dict(start_ns=5 * MS, end_ns=15 * MS)])  # the program's copy: a transfer
    g = _gaps(k, memcpy=m)
    assert _ms(g, "startup") == 20 and _ms(g, "transfer") == 10
    assert g.first_kernel_ns == 30 * MS
    assert g.top[0].cause == "startup"
    assert g.top[0].evidence[0] == {"cause": "startup", "ms": 20.0,
                                    "detail": "before the process's first kernel"}
    alone = _gaps(k)  # nothing runs before the first kernel: all of it is start-up
    assert _ms(alone, "startup") == 30 and _ms(alone, "transfer") == 0
    assert "before the process's first kernel" in g.by_cause_detail["startup"]


def test_first_kernel_is_the_process_first_over_the_whole_export_not_the_window():
    k = hf.kernels([dict(start_ns=0, end_ns=5 * MS), dict(start_ns=30 * MS, end_ns=100 * MS)])
    g = _gaps(k, window=Window(20 * MS, 100 * MS, "user"))
    assert _ms(g, "startup") == 0 and _ms(g, "other") == 10
    assert g.first_kernel_ns == 0


def test_one_off_initialisation_calls_and_jit_compile_ranges_are_startup():
    k = _two_kernels()
    api = hf.api([dict(start_ns=12 * MS, end_ns=16 * MS, name="cuLibraryLoadData",
                       api_class="driver"),
                  dict(start_ns=20 * MS, end_ns=22 * MS, name="cudaFuncGetAttributes")])
    nv = hf.nvtx([dict(text="KernelExecutor::compileFusion", start_ns=24 * MS, end_ns=27 * MS)])
    g = _gaps(k, api=api, nvtx=nv)
    assert _ms(g, "startup") == 7  # 4 ms loading + 3 ms compiling; FuncGetAttributes is not init
    assert _ms(g, "other") == 13
    assert g.by_cause_detail["startup"].startswith("cuLibraryLoadData 4 ms")
    assert "KernelExecutor::compileFusion (NVTX) 3 ms" in g.by_cause_detail["startup"]


def test_mpi_domain_and_collective_names_are_communication_but_aten_ops_are_not():
    k = _two_kernels()
    nv = hf.nvtx([dict(text="MPI_Recv", domain="MPI", start_ns=10 * MS, end_ns=16 * MS),
                  dict(text="ncclAllReduce", start_ns=18 * MS, end_ns=20 * MS),
                  dict(text="aten::broadcast_tensors", start_ns=22 * MS, end_ns=26 * MS)])
    m = hf.memcpy([dict(start_ns=14 * MS, end_ns=18 * MS)])  # 14–16 under MPI_Recv
    g = _gaps(k, nvtx=nv, memcpy=m)
    assert _ms(g, "communication") == 8  # MPI_Recv 6 + ncclAllReduce 2
    assert _ms(g, "transfer") == 2  # 16–18: the copy outside the MPI range
    assert _ms(g, "other") == 10  # the aten op is a local op: not communication
    assert g.by_cause_detail["communication"] == \
        "MPI_Recv (NVTX, MPI domain) 6 ms; ncclAllReduce (NVTX) 2 ms"
    ev = {e["cause"]: e for e in g.top[0].evidence}
    assert ev["communication"]["detail"] == "MPI_Recv (NVTX, MPI domain)"
    assert g.top[0].evidence[0]["cause"] == "other"  # largest first


def test_unified_memory_migrations_are_told_apart_from_plain_copies():
    k = _two_kernels()
    m = hf.memcpy([dict(start_ns=10 * MS, end_ns=14 * MS, copy_kind="uvm_h2d"),
                   dict(start_ns=12 * MS, end_ns=16 * MS, copy_kind="H2D"),
                   dict(start_ns=20 * MS, end_ns=25 * MS, copy_kind="uvm_d2h")])
    g = _gaps(k, memcpy=m)
    assert _ms(g, "transfer") == 4  # 12–16; the plain copy takes its overlap with a migration
    assert _ms(g, "unified_memory") == 7  # 10–12 and 20–25
    assert "unified-memory migration (uvm_d2h) 5 ms" in g.by_cause_detail["unified_memory"]


def test_idle_after_a_sync_that_drained_the_gpu_is_host_cpu_not_sync():
    k = hf.kernels([dict(start_ns=0, end_ns=10 * MS),
                    dict(start_ns=30 * MS, end_ns=100 * MS, launch_start_ns=25 * MS,
                         launch_end_ns=25 * MS + 10 * US)])
    api = hf.api([dict(start_ns=8 * MS, end_ns=12 * MS, name="cudaStreamSynchronize"),
                  dict(start_ns=25 * MS, end_ns=25 * MS + 10 * US, name="cudaLaunchKernel")])
    g = _gaps(k, api=api)
    # the call waits for the GPU 8–10 (no gap); 10–12 (the rest of the call, the GPU drained)
    # and 12–25 are the host's own time until the next launch; the launch call 25–25.01 is
    # launch, 25.01–30 other
    assert _ms(g, "sync") == 0 and _ms(g, "host_cpu") == 15
    assert _ms(g, "launch") == pytest.approx(0.01) and _ms(g, "other") == pytest.approx(4.99)
    # no NVTX range in the input: the time is not said to lie outside ranges it does not have
    assert g.by_cause_detail["host_cpu"] == "after cudaStreamSynchronize returned 15 ms"


def test_sync_is_the_wait_while_another_gpu_still_computes():
    """The host waits in cudaDeviceSynchronize 5–40 ms for GPU 1 (busy 0–38 ms) while GPU 0
    idles 10–30 ms: GPU 0's gap is sync time until GPU 1 finished, host time after."""
    k = hf.kernels([dict(start_ns=0, end_ns=10 * MS), dict(start_ns=50 * MS, end_ns=100 * MS),
                    dict(start_ns=0, end_ns=38 * MS, device_id=1),
                    dict(start_ns=50 * MS, end_ns=100 * MS, device_id=1)])
    api = hf.api([dict(start_ns=5 * MS, end_ns=40 * MS, name="cudaDeviceSynchronize"),
                  dict(start_ns=45 * MS, end_ns=45 * MS + 10 * US, name="cudaLaunchKernel")])
    busy = device_busy(k, C.MEMCPY.empty(), C.MEMSET.empty(), W)
    g = analyze_gaps(busy, k, api, C.SYNC.empty(), None, W, th=TH)
    per = {d["device_id"]: d["by_cause"] for d in g.per_device}
    assert per[0]["sync"] == 28 and per[0]["host_cpu"] == 7  # 10–38 | 38–45; 45–50 other
    assert per[1]["sync"] == 0 and per[1]["host_cpu"] == 7  # its own gap 38–50
    assert g.by_cause_ns["sync"] == 14 * MS  # per GPU (the mean of the two)


def test_host_cpu_is_named_by_the_nvtx_range_it_ran_in():
    """An `.item()` inside `forward`: the sync waits for the queued kernel, then the host runs
    Python with the GPU idle — host CPU time *in forward*, never outside every named range."""
    k = _two_kernels()
    nv = hf.nvtx([dict(text="forward", start_ns=0, end_ns=26 * MS)])
    api = hf.api([dict(start_ns=8 * MS, end_ns=10 * MS + 5 * US, name="cudaStreamSynchronize"),
                  dict(start_ns=29 * MS, end_ns=29 * MS + 10 * US, name="cudaLaunchKernel")])
    g = _gaps(k, api=api, nvtx=nv)
    assert _ms(g, "sync") == 0
    assert _ms(g, "host_cpu") == pytest.approx(19)  # 10–26 in forward, 26–29 outside it
    assert g.by_cause_detail["host_cpu"] == ("in forward 16 ms; after cudaStreamSynchronize "
                                             "returned, outside every NVTX range 3 ms")


def test_non_blocking_sync_records_are_not_sync():
    k = _two_kernels()
    rec = dict(device_id=0, context_id=1, stream_id=7, correlation_id=5, global_pid=hf.GPID,
               pid=hf.PID, launch_global_tid=hf.TID_MAIN, launch_start_ns=11 * MS,
               launch_end_ns=13 * MS, start_ns=11 * MS, end_ns=13 * MS)
    sync = C.SYNC.validate(pd.DataFrame([
        {**rec, "sync_kind": "event", "launch_api": "cudaEventQuery"},
        {**rec, "sync_kind": "stream_wait", "launch_api": "cudaStreamWaitEvent",
         "start_ns": 14 * MS, "end_ns": 15 * MS}]))
    api = hf.api([dict(start_ns=28 * MS, end_ns=29 * MS, name="cudaLaunchKernel")])
    g = _gaps(k, sync=sync, api=api)
    assert _ms(g, "sync") == 0 and _ms(g, "launch") == 1 and _ms(g, "other") == 19  # the launch 28–29


def _steps_with_data_phase():
    """Two 100 ms steps; step 2 (analysed): forward kernels 100–110 ms, a sync ending at 112,
    a data phase 120–130, the next launch at 140, kernels again 150–200."""
    nv = hf.nvtx([dict(text="train_step_0", start_ns=0, end_ns=100 * MS),
                  dict(text="train_step_1", start_ns=100 * MS, end_ns=200 * MS),
                  dict(text="train_step_2", start_ns=200 * MS, end_ns=300 * MS),
                  dict(text="data_loading", start_ns=120 * MS, end_ns=130 * MS)])
    k = hf.kernels([dict(start_ns=s, end_ns=e, launch_start_ns=s) for s, e in
                    ((0, 100 * MS), (100 * MS, 110 * MS), (150 * MS, 200 * MS),
                     (200 * MS, 300 * MS))])
    api = hf.api([dict(start_ns=105 * MS, end_ns=112 * MS, name="cudaDeviceSynchronize"),
                  dict(start_ns=140 * MS, end_ns=141 * MS, name="cudaLaunchKernel")])
    return nv, k, api


def test_sync_follow_never_runs_across_the_start_of_a_data_phase():
    nv, k, api = _steps_with_data_phase()
    steps = analyze_steps(nv, k)
    w = Window(100 * MS, 200 * MS, "user")
    busy = device_busy(k, C.MEMCPY.empty(), C.MEMSET.empty(), w)
    ph = analyze_phases(nv, steps, k, busy)
    g = analyze_gaps(busy, k, api, C.SYNC.empty(), ph, w, th=TH, nvtx=nv)
    # gap 110–150: the call waited until 110; 110–120 is the host's after it (cut at the data
    # phase), 120–130 input, the launch call 140–141 launch, 130–140 and 141–150 other
    # (host_cpu does not resume after the phase)
    assert _ms(g, "sync") == 0 and _ms(g, "host_cpu") == 10
    assert _ms(g, "input") == 10 and _ms(g, "launch") == 1 and _ms(g, "other") == 19
    assert "data_loading (data phase)" in g.by_cause_detail["input"]


def test_memory_management_calls():
    k = _two_kernels()
    api = hf.api([dict(start_ns=12 * MS, end_ns=18 * MS, name="cudaMalloc"),
                  dict(start_ns=20 * MS, end_ns=21 * MS, name="cudaHostRegister")])
    g = _gaps(k, api=api)
    assert _ms(g, "memory_management") == 7
    assert g.by_cause_detail["memory_management"] == "in cudaMalloc 6 ms; in cudaHostRegister 1 ms"


def test_host_io_counts_every_file_call_on_a_thread_that_launches():
    k = _two_kernels()
    api = hf.api([dict(start_ns=29 * MS, end_ns=29 * MS + 10 * US, name="cudaLaunchKernel")])
    osrt = _osrt([dict(start_ns=11 * MS, end_ns=16 * MS, name="read"),  # 5 ms: host_io
                  dict(start_ns=17 * MS, end_ns=17 * MS + 500 * US, name="pwrite64"),  # short too
                  dict(start_ns=18 * MS, end_ns=28 * MS, name="read", global_tid=OTHER_TID),
                  dict(start_ns=20 * MS, end_ns=22 * MS, name="pthread_cond_wait"),
                  dict(start_ns=23 * MS, end_ns=25 * MS, name="poll"),  # a wait, not I/O
                  dict(start_ns=25 * MS, end_ns=27 * MS, name="nanosleep")])
    g = _gaps(k, api=api, osrt=osrt)
    assert _ms(g, "host_io") == 5.5 and _ms(g, "launch") == pytest.approx(0.01)
    assert _ms(g, "other") == pytest.approx(14.49)
    assert g.by_cause_detail["host_io"] == "read() 1 call, 5 ms"
    many = _gaps(k, api=api, osrt=_osrt([dict(start_ns=(11 + i) * MS, end_ns=(11 + i) * MS + 80 * US,
                                              name="pwrite64") for i in range(15)]))
    assert many.by_cause_ns["host_io"] == 15 * 80 * US  # 15 short calls: every one counts
    assert many.by_cause_detail["host_io"] == "pwrite64() 15 calls, 1.2 ms"
    assert "OS-runtime call" in g.by_cause_detail["other"]
    no_osrt = _gaps(k, api=api)
    assert _ms(no_osrt, "host_io") == 0 and "OS-runtime" not in no_osrt.by_cause_detail["other"]


def test_precedence_startup_over_communication_over_memory_over_host_cpu():
    k = _two_kernels()
    nv = hf.nvtx([dict(text="MPI_Init", domain="MPI", start_ns=10 * MS, end_ns=14 * MS),
                  dict(text="MPI_Barrier", domain="MPI", start_ns=12 * MS, end_ns=18 * MS)])
    api = hf.api([dict(start_ns=16 * MS, end_ns=20 * MS, name="cudaDeviceSynchronize"),
                  dict(start_ns=19 * MS, end_ns=24 * MS, name="cudaFree"),
                  dict(start_ns=29 * MS, end_ns=29 * MS + 10 * US, name="cudaLaunchKernel")])
    g = _gaps(k, nvtx=nv, api=api)
    assert _ms(g, "startup") == 4  # MPI_Init 10–14
    assert _ms(g, "communication") == 4  # the barrier's 14–18
    # the sync waits for no GPU work (both GPUs idle): 18–19 is the host's own time, the
    # cudaFree 19–24 memory management, 24–29 the host's again until the launch, the launch
    # call 29–29.01 launch; 29.01–30 other
    assert _ms(g, "sync") == 0 and _ms(g, "memory_management") == 5
    assert _ms(g, "host_cpu") == 6 and _ms(g, "launch") == pytest.approx(0.01)
    assert _ms(g, "other") == pytest.approx(0.99)
    assert sum(g.by_cause_ns.values()) == g.total_ns


def test_short_gaps_with_launch_evidence_stay_launch():
    k = hf.kernels([dict(start_ns=0, end_ns=10 * MS),
                    dict(start_ns=10 * MS + 20 * US, end_ns=100 * MS,
                         launch_start_ns=10 * MS + 5 * US, launch_end_ns=10 * MS + 15 * US)])
    g = _gaps(k)
    assert g.by_cause_ns["launch"] == 20 * US
    assert g.by_cause_detail["launch"].startswith("1 short gap (≤ 50 µs)")
    assert g.top[0].evidence == ({"cause": "launch", "ms": 0.02,
                                  "detail": "short gap while the CPU was launching work"},)


def test_a_long_launch_call_in_a_long_gap_is_launch_for_the_time_it_covers():
    # the kernel ending the 10–30 ms gap was launched by a 6 ms call (22–28: a module loaded at
    # first launch); the GPU waits for it: launch 6 ms, named by the call; the rest is other
    k = hf.kernels([dict(start_ns=0, end_ns=10 * MS),
                    dict(start_ns=30 * MS, end_ns=100 * MS, launch_start_ns=22 * MS,
                         launch_end_ns=28 * MS)])
    api = hf.api([dict(start_ns=22 * MS, end_ns=28 * MS, name="cuLaunchKernel"),
                  dict(start_ns=40 * MS, end_ns=46 * MS, name="cuLaunchKernel")])  # GPU busy
    g = _gaps(k, api=api)
    assert _ms(g, "launch") == 6 and _ms(g, "other") == 14
    assert g.by_cause_detail["launch"] == "launch calls the GPU waited for: cuLaunchKernel 6 ms"
    assert {e["cause"]: e["detail"] for e in g.top[0].evidence}["launch"] == "cuLaunchKernel"
    # a long copy call is not a launch: its host time stays other
    copy = hf.api([dict(start_ns=22 * MS, end_ns=28 * MS, name="cudaMemcpyAsync")])
    assert _ms(_gaps(k, api=copy), "launch") == 0


def test_cpu_samples_name_the_host_frames_of_other_time_only():
    k = _two_kernels()
    api = hf.api([dict(start_ns=5 * MS, end_ns=15 * MS, name="cudaStreamSynchronize"),
                  dict(start_ns=20 * MS, end_ns=20 * MS + 10 * US, name="cudaLaunchKernel")])
    samples = _samples(
        [dict(ts_ns=12 * MS, top_frame="cudaStreamSynchronize")]  # sync time: not counted
        + [dict(ts_ns=(22 + i) * MS, top_frame="verify_result") for i in range(3)]
        + [dict(ts_ns=26 * MS, top_frame="")]
        + [dict(ts_ns=50 * MS, top_frame="main")])  # GPU busy: not counted
    g = _gaps(k, api=api, samples=samples)
    assert g.cpu_samples_available
    assert list(g.other_top_frames) == [
        {"frame": "verify_result", "samples": 3, "share": 0.75},
        {"frame": "(unresolved)", "samples": 1, "share": 0.25}]
    assert "most sampled frame: verify_result (75% of 3 samples)" in g.by_cause_detail["other"]
    ev = {e["cause"]: e for e in g.top[0].evidence}
    assert ev["other"]["detail"].startswith("most sampled: verify_result")
    j = g.to_json()
    assert j["other_top_frames"][0]["frame"] == "verify_result"
    assert j["cpu_samples_available"] is True
    none = _gaps(k, api=api).to_json()
    assert none["other_top_frames"] == [] and none["cpu_samples_available"] is False


def test_json_carries_the_new_keys_for_every_cause():
    k = hf.kernels([dict(start_ns=30 * MS, end_ns=100 * MS)])
    j = _gaps(k).to_json()
    assert list(j["by_cause"]) == list(GAP_CAUSES) == j["cause_priority"]
    assert list(j["by_cause_detail"]) == list(GAP_CAUSES)
    assert j["by_cause_detail"]["sync"] is None  # no time, no detail
    assert j["first_kernel_ns"] == 30 * MS
    assert j["top"][0]["evidence"][0]["cause"] == "startup"


def test_a_gap_spent_in_many_short_writes_is_named_by_them_not_by_a_launch():
    """The host writes 80 × 100 µs with pwrite64 in a 20 ms gap and launches once (10 µs): the
    top gap's CPU activity names the writes and their share, not the longest CUDA call."""
    k = _two_kernels()
    api = hf.api([dict(start_ns=29 * MS, end_ns=29 * MS + 10 * US, name="cudaLaunchKernel")])
    writes = [dict(name="pwrite64", start_ns=10 * MS + i * 200 * US,
                   end_ns=10 * MS + i * 200 * US + 100 * US) for i in range(80)]
    g = _gaps(k, api=api, osrt=_osrt(writes))
    assert g.top[0].cpu_activity == "in pwrite64() ×80 for 40% of the gap (+1 other calls)"
    g = _gaps(k, api=api)  # without OS-runtime rows the CUDA call is all there is
    assert g.top[0].cpu_activity.startswith("in cudaLaunchKernel for <1% of the gap")


def _compile_ranges(tid=hf.TID_MAIN):
    """An outer range around the whole gap with a JIT range nested in it, covering 15 of the
    gap's 20 ms; ``emit_nvtx``-style suffixes on the nested one."""
    return hf.nvtx([dict(text="run_model", start_ns=5 * MS, end_ns=35 * MS, global_tid=tid),
                    dict(text="compileFusion, seq = 12, op_id = 7", start_ns=12 * MS,
                         end_ns=27 * MS, global_tid=tid)])


def test_a_gap_spent_inside_a_nested_range_and_no_cuda_call_is_named_by_the_range():
    """The launching thread compiles for 15 of the gap's 20 ms inside a nested NVTX range and
    calls CUDA for 10 µs: "CPU was" names the innermost range covering half the gap, its share
    and the calls, not the 10 µs launch; the outermost range (a loop, a step) is not named."""
    k = _two_kernels()
    api = hf.api([dict(start_ns=29 * MS, end_ns=29 * MS + 10 * US, name="cudaLaunchKernel")])
    g = _gaps(k, api=api, nvtx=_compile_ranges())
    assert g.top[0].cpu_activity == "in compileFusion (NVTX) for 75% of the gap (+1 call)"
    outer_only = hf.nvtx([dict(text="run_model", start_ns=5 * MS, end_ns=35 * MS)])
    assert _gaps(k, api=api, nvtx=outer_only).top[0].cpu_activity.startswith(
        "in cudaLaunchKernel for <1% of the gap")


def test_a_cuda_call_covering_half_the_gap_keeps_the_name_and_other_threads_ranges_do_not_count():
    k = _two_kernels()
    sync = hf.api([dict(start_ns=10 * MS, end_ns=21 * MS, name="cudaStreamSynchronize"),
                   dict(start_ns=29 * MS, end_ns=29 * MS + 10 * US, name="cudaLaunchKernel")])
    assert _gaps(k, api=sync, nvtx=_compile_ranges()).top[0].cpu_activity.startswith(
        "in cudaStreamSynchronize for 55% of the gap")
    api = hf.api([dict(start_ns=29 * MS, end_ns=29 * MS + 10 * US, name="cudaLaunchKernel")])
    elsewhere = _gaps(k, api=api, nvtx=_compile_ranges(tid=OTHER_TID))  # a thread that never launches
    assert elsewhere.top[0].cpu_activity.startswith("in cudaLaunchKernel")


def test_ranges_around_the_step_phase_covering_the_gap_are_not_named():
    """A gap inside a step's ``forward`` phase: the phase column names it; the step range around
    it is not "CPU was"; a range nested in the phase is."""
    nv = hf.nvtx([dict(text="train_step_0", start_ns=0, end_ns=50 * MS),
                  dict(text="forward", start_ns=2 * MS, end_ns=40 * MS),
                  dict(text="train_step_1", start_ns=50 * MS, end_ns=100 * MS),
                  dict(text="forward", start_ns=52 * MS, end_ns=90 * MS)])
    k = hf.kernels([dict(start_ns=0, end_ns=10 * MS), dict(start_ns=30 * MS, end_ns=60 * MS),
                    dict(start_ns=80 * MS, end_ns=100 * MS)])
    api = hf.api([dict(start_ns=29 * MS, end_ns=29 * MS + 10 * US, name="cudaLaunchKernel"),
                  dict(start_ns=79 * MS, end_ns=79 * MS + 10 * US, name="cudaLaunchKernel")])
    steps = analyze_steps(nv, k, th=TH)
    busy = device_busy(k, C.MEMCPY.empty(), C.MEMSET.empty(), W)
    phases = analyze_phases(nv, steps, k, busy)
    in_phase = [t for t in _gaps(k, api=api, nvtx=nv, phases=phases).top if t.phase == "forward"]
    assert in_phase and all("(NVTX)" not in t.cpu_activity for t in in_phase)
    nested = pd.concat([nv, hf.nvtx([dict(text="layer_norm", start_ns=12 * MS, end_ns=28 * MS)])])
    g = _gaps(k, api=api, nvtx=nested.sort_values("start_ns", kind="stable"), phases=phases)
    (gap,) = [t for t in g.top if t.phase == "forward"]
    assert gap.cpu_activity.startswith("in layer_norm (NVTX) for 80% of the gap")


def test_only_ranges_nested_in_a_range_of_their_own_thread_are_named():
    """Another launching thread's outermost range that starts inside the main thread's range is
    not nested; nor is a start/end range that only overlaps an earlier one."""
    k = _two_kernels()
    launches = [dict(start_ns=29 * MS, end_ns=29 * MS + 10 * US, name="cudaLaunchKernel"),
                dict(start_ns=1 * MS, end_ns=1 * MS + 10 * US, name="cudaLaunchKernel",
                     global_tid=OTHER_TID)]  # the second thread launches too
    api = hf.api(launches)
    other_outer = hf.nvtx([dict(text="run_model", start_ns=5 * MS, end_ns=35 * MS),
                           dict(text="worker_loop", start_ns=12 * MS, end_ns=27 * MS,
                                global_tid=OTHER_TID)])
    assert "(NVTX)" not in _gaps(k, api=api, nvtx=other_outer).top[0].cpu_activity
    overlapping = hf.nvtx([dict(text="A", start_ns=0, end_ns=20 * MS),
                           dict(text="B", start_ns=15 * MS, end_ns=60 * MS)])
    assert "(NVTX)" not in _gaps(k, api=api, nvtx=overlapping).top[0].cpu_activity


def test_the_range_names_count_every_call_in_the_gap_file_calls_included():
    k = _two_kernels()
    api = hf.api([dict(start_ns=29 * MS, end_ns=29 * MS + 10 * US, name="cudaLaunchKernel")])
    writes = [dict(name="pwrite64", start_ns=12 * MS + i * 100 * US,
                   end_ns=12 * MS + i * 100 * US + 10 * US) for i in range(80)]
    g = _gaps(k, api=api, nvtx=_compile_ranges(), osrt=_osrt(writes))
    assert g.top[0].cpu_activity == "in compileFusion (NVTX) for 75% of the gap (+81 calls)"


def test_a_step_range_inside_an_epoch_range_is_not_named():
    """Steps nested in an ``epoch`` range (no phases): the step is no place the host was in."""
    nv = hf.nvtx([dict(text="epoch", start_ns=0, end_ns=100 * MS),
                  *[dict(text=f"train_step_{i}", start_ns=i * 25 * MS, end_ns=(i + 1) * 25 * MS)
                    for i in range(4)]])
    k = hf.kernels([dict(start_ns=i * 25 * MS, end_ns=i * 25 * MS + 5 * MS) for i in range(4)])
    api = hf.api([dict(start_ns=i * 25 * MS - 10 * US, end_ns=i * 25 * MS, name="cudaLaunchKernel")
                  for i in range(1, 4)])
    steps = analyze_steps(nv, k, th=TH)
    assert steps.count >= 3
    g = _gaps(k, api=api, nvtx=nv)
    assert "(NVTX)" in g.top[0].cpu_activity  # the steps are the innermost ranges …
    from nsys_diag.analyses.gaps.evidence import gap_evidence
    busy = device_busy(k, C.MEMCPY.empty(), C.MEMSET.empty(), W)
    ev = gap_evidence(busy, k, api, C.SYNC.empty(), W, th=TH, nvtx=nv, steps=steps)
    g = analyze_gaps(busy, k, api, C.SYNC.empty(), None, W, th=TH, evidence=ev, nvtx=nv)
    assert all("(NVTX)" not in t.cpu_activity for t in g.top)  # … but given the steps, not named


def test_a_read_of_the_launching_thread_before_the_first_kernel_is_host_io_not_startup():
    """Before the first kernel the launching thread reads its input (5 ms of read() calls): that
    time is host I/O, the rest of the wait start-up; another thread's read stays start-up."""
    k = hf.kernels([dict(start_ns=30 * MS, end_ns=100 * MS)])
    api = hf.api([dict(start_ns=29 * MS, end_ns=29 * MS + 10 * US, name="cudaLaunchKernel")])
    reads = [dict(name="read", start_ns=10 * MS + i * MS, end_ns=10 * MS + i * MS + 500 * US)
             for i in range(10)]
    g = _gaps(k, api=api, osrt=_osrt(reads))
    assert _ms(g, "host_io") == pytest.approx(5.0)
    assert _ms(g, "startup") == pytest.approx(30.0 - 5.0, abs=0.02)
    other = _osrt([{**r, "global_tid": OTHER_TID} for r in reads])
    g = _gaps(k, api=api, osrt=other)
    assert _ms(g, "host_io") == 0 and _ms(g, "startup") == pytest.approx(30.0, abs=0.02)


def test_many_short_calls_of_one_name_are_named_together_not_by_the_longest_call():
    """A 20 ms gap: 40 cudaMemcpy calls of 200 µs (8 ms in sum) and one 1 ms cudaMalloc — the
    copies are what the host was in, ×40 for 40% of the gap; a single long wait still wins."""
    k = _two_kernels()
    copies = [dict(start_ns=10 * MS + i * 400 * US, end_ns=10 * MS + i * 400 * US + 200 * US,
                   name="cudaMemcpy") for i in range(40)]
    api = hf.api(copies + [dict(start_ns=27 * MS, end_ns=28 * MS, name="cudaMalloc")])
    assert _gaps(k, api=api).top[0].cpu_activity == \
        "in cudaMemcpy ×40 for 40% of the gap (+1 other calls)"
    wait = hf.api(copies[:10] + [dict(start_ns=26 * MS, end_ns=29 * MS + 500 * US,
                                      name="cudaStreamSynchronize")])
    # 10 × 200 µs = 2 ms of copies against one 3.5 ms wait: the wait covers more
    assert _gaps(k, api=wait).top[0].cpu_activity == \
        "in cudaStreamSynchronize for 18% of the gap (+10 other calls)"
