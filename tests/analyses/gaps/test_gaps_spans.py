"""Streamed utilization and gaps: the merged chunk partials equal the in-memory analysis."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nsys_diag.analyses.base import Unavailable, is_available
from nsys_diag.analyses.timeline.busy import Window, device_busy
from nsys_diag.analyses.engine.context import chunk_inputs
from nsys_diag.analyses.engine.cuts import chunk_spans
from nsys_diag.analyses.gaps.spans import (io_threads_of, merge_gaps, merge_thread_sets,
                                                   merge_utilization, partial_gaps,
                                                   partial_utilization, thread_sets)
from nsys_diag.analyses.engine.sync_edges import sync_edge_rows, with_sync_edges
from nsys_diag.analyses.gaps.evidence import first_kernel_ns
from nsys_diag.analyses.gaps.causes import analyze_gaps, analyze_utilization
from nsys_diag.model import contracts as C
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.synth.presets import PRESETS
from nsys_diag.synth.scenarios import MS, US, KernelSpec, PhaseSpec, Scenario, SyncSpec
from nsys_diag.synth.writer import write_nsys_sqlite, write_preset
from tests.analyses.engine.chunking import split_process

SAMPLES = Path(__file__).resolve().parents[3] / "sample_traces"
TH = Thresholds()


def same(a, b, path="") -> None:
    """JSON values equal: ints/strings exactly, floats to relative 1e-9, order kept."""
    if isinstance(a, float) or isinstance(b, float):
        assert a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9,
                                                                abs_tol=1e-12), (path, a, b)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), (path, list(a), list(b))
        for k in a:
            same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (path, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{i}]")
    else:
        assert a == b, (path, a, b)


def whole_gaps(frames, busy, phases, window):
    """``analyze_gaps`` with the suite's inputs (``suite._process_tasks``)."""
    f = frames
    return analyze_gaps(busy, f["kernels"], f["api"], f["sync"], phases, window, th=TH,
                        memcpy=f["memcpy"], memset=f["memset"], nvtx=f["nvtx"],
                        osrt=f.get("osrt"), cpu_samples=f.get("cpu_samples"))


def streamed(frames, chunks, window, devices, *, edges=True):
    first = first_kernel_ns(frames["kernels"])
    io = io_threads_of(frames["api"])
    parts = [partial_gaps(with_sync_edges(c, frames) if edges else c, th=TH,
                          first_kernel_ns=first, io_threads=io) for c in chunks]
    return merge_gaps(parts, window=window, devices=devices, th=TH, first_kernel_ns=first)


def check_split(path: str, n: int, process: int = 0) -> int:
    sp = split_process(path, n, process=process)
    merged = streamed(sp.frames, sp.chunks, sp.window, sp.devices)
    mu = merge_utilization([partial_utilization(c) for c in sp.chunks], window=sp.window,
                           gpus=sp.bundle.gpus)
    same(analyze_utilization(sp.busy, sp.window, sp.bundle.gpus).to_json(), mu.to_json())
    if not sp.devices or sp.window.duration_ns <= 0:
        assert isinstance(merged, Unavailable)
        return 0
    assert sp.exact, "cuts that split a gap cannot merge exactly"
    whole = whole_gaps(sp.frames, sp.busy, sp.phases, sp.window)
    assert is_available(merged) and merged.intervals is None
    same(whole.to_json(), merged.to_json())
    return len(sp.chunks)


@pytest.mark.parametrize("n", [2, 3, 7])
@pytest.mark.parametrize("name", sorted(p.stem for p in SAMPLES.glob("*.sqlite")))
def test_sample_traces_merge_to_the_whole(name, n):
    check_split(str(SAMPLES / f"{name}.sqlite"), n)


def test_every_process_of_a_multi_process_trace():
    for process in (0, 1):
        check_split(str(SAMPLES / "multi_gpu.sqlite"), 5, process=process)


CASES = ("item_sync_stalls", "dataloader_workers", "host_io_stalls", "uvm_migrations", "mpi_cuda",
         "startup_with_init", "exposed_allreduce", "pageable_h2d", "no_nvtx", "cuda_graphs",
         "shuffled_rows")


@pytest.mark.parametrize("name", [c for c in CASES if c in PRESETS])
def test_generated_cases_merge_to_the_whole(name, tmp_path):
    path = write_preset(tmp_path / f"{name}.sqlite", name)
    assert max(check_split(str(path), n) for n in (2, 3, 7)) >= 2  # at least one split


def test_many_steps_many_chunks(tmp_path):
    path = write_preset(tmp_path / "w.sqlite", "worked_example", steps=40)
    assert check_split(str(path), 25) == 25


def test_host_cpu_across_an_edge_from_a_synth_trace(tmp_path):
    """A stream sync returns while another stream computes across the edge; the GPU runs dry in
    the next chunk, with the host after the sync: the gap is host time there too."""
    sc = Scenario(name="stream_sync_across", steps=6, phases=(
        PhaseSpec("forward", 10 * MS, canonical="forward", kernels=(
            KernelSpec("gemm_bf16_sm90", 6 * MS, stream=8, at=0.0),
            KernelSpec("adam", 100 * US, stream=7, at=0.0)),
            syncs=(SyncSpec("cudaStreamSynchronize", stream=7, at=0.05),)),
        PhaseSpec("backward", 10 * MS, canonical="backward", kernels=(
            KernelSpec("gemm_bf16_sm90", 8 * MS, at=0.0),))))
    path = write_nsys_sqlite(tmp_path / "s.sqlite", sc)
    for n in (2, 3, 7, 13):
        check_split(str(path), n)


# ------------------------------------------------------------------ hand-built processes
def _frame(contract, rows: list[dict]) -> pd.DataFrame:
    if not rows:
        return contract.empty()
    defaults = {"int64": -1, "float64": 0.0, "category": "", "string": "", "bool": False}
    fixed = {"device_id": 0, "global_pid": 1, "global_tid": 1, "pid": 1, "tid": 1}
    data = {c.name: [r.get(c.name, fixed.get(c.name, defaults[c.dtype])) for r in rows]
            for c in contract.columns}
    return contract.validate(pd.DataFrame(data))


def _process(kernels, api, sync=(), osrt=(), samples=()):
    """Frames of one process from row dicts (µs in the dicts, ns in the frames)."""
    def ns(rows):
        return [{k: (v * 1000 if k.endswith("_ns") and v >= 0 else v) for k, v in r.items()}
                for r in rows]
    f = {"kernels": _frame(C.KERNELS, ns(kernels)), "api": _frame(C.API, ns(api)),
         "sync": _frame(C.SYNC, ns(sync)), "memcpy": C.MEMCPY.empty(), "memset": C.MEMSET.empty(),
         "nvtx": C.NVTX.empty(), "osrt": _frame(C.OSRT, ns(osrt))}
    if samples:
        f["cpu_samples"] = _frame(C.CPU_SAMPLES, ns(samples))
    return f


def _launch(start, end, corr, tid=1, name="cudaLaunchKernel"):
    return {"start_ns": start, "end_ns": end, "correlation_id": corr, "global_tid": tid,
            "name": name}


def _kernel(start, end, corr, launch_end, device=0):
    return {"start_ns": start, "end_ns": end, "correlation_id": corr, "launch_end_ns": launch_end,
            "device_id": device, "name": "k"}


def _check_cuts(f, cuts_us, *, window=None, edges=True):
    """Whole vs streamed over the given chunk edges (µs); returns (whole, merged) JSON."""
    devices = tuple(sorted(set(f["kernels"]["device_id"].astype(int))))
    k = f["kernels"]
    window = window or Window(int(k["start_ns"].min()), int(k["end_ns"].max()), "gpu_activity")
    busy = device_busy(f["kernels"], f["memcpy"], f["memset"], window, list(devices))
    steps = Unavailable("no steps")
    whole = whole_gaps(f, busy, Unavailable("no steps"), window)
    chunks = [chunk_inputs(i, f, a, b, window=window, devices=devices, steps=steps)
              for i, (a, b) in enumerate(chunk_spans([c * 1000 for c in cuts_us]))]
    merged = streamed(f, chunks, window, devices, edges=edges)
    mu = merge_utilization([partial_utilization(c) for c in chunks], window=window)
    same(analyze_utilization(busy, window).to_json(), mu.to_json())
    return whole.to_json(), merged.to_json()


def _sync_across_lo():
    """Thread 2 blocks in cudaStreamSynchronize [0, 100) µs; thread 1 launched kernel A (its
    correlation id is larger) which runs [20, 1000); the next launch starts at 1900: the gap
    [1000, 2000) follows the sync. An edge at 500 (inside A) leaves the sync before the chunk."""
    kernels = [_kernel(20, 1000, 2, 12), _kernel(2000, 3000, 3, 1910)]
    api = [{"start_ns": 0, "end_ns": 100, "correlation_id": 1, "global_tid": 2,
            "name": "cudaStreamSynchronize"}, _launch(10, 12, 2), _launch(1900, 1910, 3)]
    return _process(kernels, api)


def test_host_cpu_needs_the_blocking_call_before_the_chunk():
    f = _sync_across_lo()
    whole, merged = _check_cuts(f, [500])
    same(whole, merged)
    assert whole["by_cause"]["host_cpu"] > 0.8  # ms: [1000, 1900) at least
    _, bare = _check_cuts(f, [500], edges=False)  # without the edge rows the chunk misses it
    assert bare["by_cause"]["host_cpu"] < whole["by_cause"]["host_cpu"]
    extra_api, _ = sync_edge_rows(f, 500_000, 2_500_000)
    # (b) the blocking call, (c) the last launch before the edge
    assert f["api"]["name"][extra_api].astype(str).tolist() == ["cudaStreamSynchronize",
                                                                 "cudaLaunchKernel"]


def test_host_cpu_needs_the_next_launch_after_the_chunk():
    """The sync returns at 300 inside chunk [200, 1600); A (launched before it) starts late, at
    400, and runs past the edge; the next launch is at 2000: the gap [300, 400) is the host's
    time after the sync (the chunk's own rows end before that launch: without the edge row the
    interval runs to the chunk's end, which covers the same gap time)."""
    kernels = [_kernel(0, 300, 1, 5), _kernel(400, 1800, 2, 250), _kernel(2100, 2200, 4, 2010)]
    api = [_launch(0, 5, 1), _launch(240, 250, 2),
           {"start_ns": 260, "end_ns": 300, "correlation_id": 3, "name": "cudaDeviceSynchronize"},
           _launch(2000, 2010, 4)]
    f = _process(kernels, api)
    whole, merged = _check_cuts(f, [200, 1600])
    same(whole, merged)
    assert whole["by_cause"]["host_cpu"] == pytest.approx(0.3)  # [300, 400) and [1800, 2000)
    _, bare = _check_cuts(f, [200, 1600], edges=False)
    assert bare["by_cause"]["host_cpu"] == whole["by_cause"]["host_cpu"]


def test_cupti_sync_record_before_the_chunk():
    """Only a CUPTI synchronization record (no API row) tells of the blocking call."""
    kernels = [_kernel(20, 1000, 2, 12), _kernel(2000, 3000, 3, 1910)]
    sync = [{"start_ns": 0, "end_ns": 100, "correlation_id": 1, "sync_kind": "stream",
             "launch_api": "cudaStreamSynchronize"}]
    f = _process(kernels, [_launch(10, 12, 2), _launch(1900, 1910, 3)], sync=sync)
    whole, merged = _check_cuts(f, [500])
    same(whole, merged)
    assert whole["by_cause"]["host_cpu"] > 0.8


def test_launch_cause_at_an_edge_and_launches_in_the_previous_chunk():
    """The kernel that ends a chunk's last gap starts exactly at the edge and was launched (late)
    in the chunk before; a kernel crosses the other edge."""
    kernels = [_kernel(0, 100, 1, 2), _kernel(110, 300, 2, 105), _kernel(310, 500, 3, 306)]
    api = [_launch(0, 2, 1), _launch(100, 105, 2), _launch(300, 306, 3)]
    f = _process(kernels, api)
    for cuts in ([110], [50, 310], [110, 310], [250]):
        whole, merged = _check_cuts(f, cuts)
        same(whole, merged)
        assert whole["by_cause"]["launch"] > 0


def test_multi_gpu_process_with_an_empty_chunk_and_a_window_inside():
    kernels = [_kernel(0, 400, 1, 1), _kernel(500, 900, 2, 2), _kernel(50, 450, 3, 3, device=1),
               _kernel(600, 1000, 4, 4, device=1), _kernel(1200, 1300, 5, 1150),
               _kernel(1250, 1400, 6, 1150, device=1)]
    api = [_launch(0, 1, 1), _launch(1, 2, 2), _launch(2, 3, 3), _launch(3, 4, 4),
           _launch(1140, 1150, 5), _launch(1140, 1150, 6)]
    f = _process(kernels, api)
    for cuts in ([100, 700], [300, 800, 1260]):
        same(*_check_cuts(f, cuts))
    same(*_check_cuts(f, [100, 700], window=Window(200_000, 650_000, "user")))  # last chunk empty


def test_host_io_call_across_an_edge_is_counted_once():
    """One 3 ms read() on the launching thread spans an edge and covers gaps on both sides."""
    kernels = [_kernel(0, 1000, 1, 1), _kernel(2000, 3000, 2, 2), _kernel(4000, 5000, 3, 3)]
    api = [_launch(0, 1, 1), _launch(1, 2, 2), _launch(2, 3, 3)]
    osrt = [{"start_ns": 900, "end_ns": 3900, "name": "read"},
            {"start_ns": 1100, "end_ns": 1900, "name": "poll", "global_tid": 9}]
    f = _process(kernels, api, osrt=osrt)
    whole, merged = _check_cuts(f, [2500])
    same(whole, merged)
    assert whole["by_cause_detail"]["host_io"].startswith("read() 1 call, ")


def test_other_frames_add_up_over_chunks():
    kernels = [_kernel(0, 1000, 1, 1), _kernel(2000, 3000, 2, 2), _kernel(4000, 5000, 3, 3)]
    api = [_launch(0, 1, 1), _launch(1, 2, 2), _launch(2, 3, 3)]
    samples = [{"ts_ns": t, "top_frame": fr} for t, fr in
               [(1100, "a"), (1200, "b"), (1300, "a"), (3100, "b"), (3200, "b"), (3300, "")]]
    f = _process(kernels, api, samples=samples)
    whole, merged = _check_cuts(f, [2500])
    same(whole, merged)
    assert [x["frame"] for x in whole["other_top_frames"]] == ["b", "a", "(unresolved)"]


def test_host_io_threads_merge_over_chunks():
    api = _frame(C.API, [_launch(0, 1, 1, tid=3), {"start_ns": 5, "end_ns": 6, "global_tid": 4,
                                                    "name": "cudaMalloc"}])
    assert io_threads_of(api) == (3,)
    parts = [thread_sets(api.iloc[1:]), thread_sets(api.iloc[:1])]
    assert merge_thread_sets(parts) == (3,)
    assert merge_thread_sets([thread_sets(api.iloc[1:])]) == (4,)  # none enqueues: every caller
    assert merge_thread_sets([]) == ()


def test_startup_before_the_first_kernel_is_global():
    """An edge that does not keep gaps whole: the later chunk's own first kernel is not the
    process's first kernel, so its idle start is not startup time."""
    kernels = [_kernel(100, 200, 1, 1), _kernel(600, 700, 2, 2)]
    f = _process(kernels, [_launch(0, 1, 1), _launch(1, 2, 2)])
    window = Window(0, 700_000, "capture")
    devices = (0,)
    steps = Unavailable("no steps")
    chunks = [chunk_inputs(i, f, a, b, window=window, devices=devices, steps=steps)
              for i, (a, b) in enumerate(chunk_spans([400_000]))]
    merged = streamed(f, chunks, window, devices).to_json()
    assert merged["by_cause"]["startup"] == pytest.approx(0.1)  # [0, 100) µs only
    assert merged["first_kernel_ns"] == 100_000
    assert np.isclose(merged["total_ms"], 0.1 + 0.2 + 0.2)  # the gap [200, 600) split in two
