"""DataLoader workers (analyses/loader_workers.py): who counts as a worker and how busy it is,
on each basis (NVTX ranges, CPU samples, OS-runtime calls)."""
from __future__ import annotations

import pandas as pd

from nsys_diag.analyses.base import is_available
from nsys_diag.analyses.timeline.busy import Window
from nsys_diag.analyses.loader_workers import analyze_loader_workers
from nsys_diag.model import contracts as C
from nsys_diag.model.bundle import TraceBundle, TraceMeta
from nsys_diag.model.thresholds import Thresholds

MS = 1_000_000
W = Window(0, 100 * MS, "steps")
TRAINER = 100 << 24


def gid(pid: int, tid: int = 0) -> int:
    return (pid << 24) + tid


def frame(contract, rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    for c in contract.columns:
        if c.name not in df:
            df[c.name] = "" if c.dtype in ("string", "category") else 0
    return contract.validate(df[[c.name for c in contract.columns]])


def bundle(**frames) -> TraceBundle:
    kernels = frame(C.KERNELS, [{"start_ns": 0, "end_ns": 50 * MS, "global_pid": TRAINER,
                                 "pid": 100, "device_id": 0, "name": "gemm"}])
    return TraceBundle(meta=TraceMeta(path="x", format="nsys-sqlite"), kernels=kernels, **frames)


def nvtx_rows(pid: int, spans, tid: int = 1, text: str = "worker_fetch") -> list[dict]:
    return [{"start_ns": s, "end_ns": e, "closed": True, "text": text, "domain": "",
             "kind": "push_pop", "global_tid": gid(pid, tid), "end_global_tid": gid(pid, tid),
             "global_pid": gid(pid), "pid": pid, "tid": tid, "payload": float("nan")}
            for s, e in spans]


def test_nvtx_worker_busy_share_is_its_covered_window_share():
    nv = frame(C.NVTX, nvtx_rows(201, [(0, 40 * MS), (30 * MS, 60 * MS), (90 * MS, 200 * MS)]))
    r = analyze_loader_workers(bundle(nvtx=nv), W, Thresholds())
    assert is_available(r) and len(r.workers) == 1
    w = r.workers[0]
    assert w.pid == 201 and w.basis == "nvtx" and abs(w.busy_share - 0.70) < 1e-9  # 60 + 10 ms
    assert r.state == "busy"


def test_cpu_samples_basis_counts_running_samples_times_the_period():
    ts = list(range(0, 100 * MS, MS))  # 1 kHz, 100 samples over the window
    rows = [{"ts_ns": t, "global_tid": gid(202, 1), "global_pid": gid(202), "pid": 202, "tid": 1,
             "top_frame": "decode", "state": "running" if i < 90 else "sleeping"}
            for i, t in enumerate(ts)]
    r = analyze_loader_workers(bundle(cpu_samples=frame(C.CPU_SAMPLES, rows)), W, Thresholds())
    w = r.workers[0]
    assert w.basis == "cpu_samples" and abs(w.busy_share - 0.90) < 1e-9
    assert r.state == "saturated"


def test_osrt_basis_is_one_minus_blocked_time():
    rows = [{"start_ns": s, "end_ns": e, "global_tid": gid(203, 203), "global_pid": gid(203),
             "pid": 203, "tid": 203, "name": n}
            for s, e, n in ((0, 80 * MS, "poll"), (80 * MS, 85 * MS, "read"),
                            (85 * MS, 95 * MS, "pthread_cond_wait"))]
    r = analyze_loader_workers(bundle(osrt=frame(C.OSRT, rows)), W, Thresholds())
    w = r.workers[0]
    assert w.basis == "osrt" and abs(w.busy_share - 0.10) < 1e-9  # 90 ms blocked of 100
    assert r.state == "idle" and r.verdict_fact()["workers"] == 1


def test_named_worker_thread_of_the_training_process_counts():
    threads = frame(C.THREADS, [{"global_tid": gid(100, 7), "pid": 100, "tid": 7,
                                 "name": "pt_data_worker_0"},
                                {"global_tid": gid(100, 8), "pid": 100, "tid": 8, "name": "main"}])
    nv = frame(C.NVTX, nvtx_rows(100, [(0, 20 * MS)], tid=7) + nvtx_rows(100, [(0, 90 * MS)], tid=8))
    r = analyze_loader_workers(bundle(threads=threads, nvtx=nv), W, Thresholds())
    assert [(w.pid, w.tid, w.name) for w in r.workers] == [(100, 7, "pt_data_worker_0")]
    assert abs(r.busy_share - 0.20) < 1e-9


def test_launchers_are_not_workers_and_no_workers_is_unavailable():
    procs = frame(C.PROCESSES, [{"global_pid": gid(300), "pid": 300, "name": "/usr/bin/torchrun"}])
    nv = frame(C.NVTX, nvtx_rows(300, [(0, 10 * MS)]))
    r = analyze_loader_workers(bundle(processes=procs, nvtx=nv), W, Thresholds())
    assert not is_available(r) and "no DataLoader worker" in r.reason


def test_no_gpu_process_means_nothing_to_feed():
    nv = frame(C.NVTX, nvtx_rows(201, [(0, 40 * MS)]))
    b = TraceBundle(meta=TraceMeta(path="x", format="nsys-sqlite"), nvtx=nv)
    assert not is_available(analyze_loader_workers(b, W, Thresholds()))


def test_process_names_lose_their_path():
    procs = frame(C.PROCESSES, [{"global_pid": gid(201), "pid": 201,
                                 "name": "/home/me/venv/bin/python"}])
    nv = frame(C.NVTX, nvtx_rows(201, [(0, 40 * MS)], text="DataLoader.fetch"))
    r = analyze_loader_workers(bundle(processes=procs, nvtx=nv), W, Thresholds())
    assert r.workers[0].name == "python" and "DataLoader NVTX" in r.workers[0].evidence
