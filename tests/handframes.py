"""Tiny hand-built frames for analysis tests (always passed through the contracts)."""
from __future__ import annotations

import pandas as pd

from nsys_diag.model import contracts as C
from nsys_diag.model.bundle import TraceBundle, TraceMeta

PID = 100
GPID = PID << 24
TID_MAIN = GPID | 1
TID_AUTOGRAD = GPID | 2
MS = 1_000_000
US = 1_000


def _frame(contract, rows: list[dict], defaults: dict) -> pd.DataFrame:
    if not rows:
        return contract.empty()
    full = [{**defaults, **r} for r in rows]
    return contract.validate(pd.DataFrame(full))


def kernels(rows: list[dict]) -> pd.DataFrame:
    """rows: start_ns, end_ns (+ name, device_id, launch_start_ns, launch_global_tid…)."""
    d = dict(device_id=0, context_id=1, stream_id=7, correlation_id=-1, global_pid=GPID, pid=PID,
             name="kernel", short_name=None, grid_x=1, grid_y=1, grid_z=1, block_x=128, block_y=1,
             block_z=1, registers_per_thread=32, smem_static_bytes=0, smem_dynamic_bytes=0,
             graph_node_id=-1, launch_global_tid=TID_MAIN, launch_start_ns=-1, launch_end_ns=-1,
             launch_api="cudaLaunchKernel")
    rows = [{**r, "short_name": r.get("short_name") or r.get("name", "kernel")} for r in rows]
    return _frame(C.KERNELS, rows, d)


def memcpy(rows: list[dict]) -> pd.DataFrame:
    d = dict(device_id=0, context_id=1, stream_id=7, correlation_id=-1, global_pid=GPID, pid=PID,
             bytes=1 << 20, copy_kind="H2D", src_kind="pinned", dst_kind="device", copy_count=1,
             launch_global_tid=TID_MAIN, launch_start_ns=-1, launch_end_ns=-1,
             launch_api="cudaMemcpyAsync")
    return _frame(C.MEMCPY, rows, d)


def nvtx(rows: list[dict]) -> pd.DataFrame:
    """rows: text, start_ns, end_ns (+ global_tid, closed, payload…)."""
    d = dict(closed=True, domain="", kind="push_pop", global_tid=TID_MAIN, end_global_tid=TID_MAIN,
             global_pid=GPID, pid=PID, tid=1, payload=float("nan"))
    return _frame(C.NVTX, rows, d)


def api(rows: list[dict]) -> pd.DataFrame:
    d = dict(global_tid=TID_MAIN, global_pid=GPID, pid=PID, tid=1, correlation_id=-1,
             api_class="runtime")
    return _frame(C.API, rows, d)


def gpus(n: int = 1) -> pd.DataFrame:
    rows = [dict(device_id=i, name="NVIDIA H100 80GB HBM3", chip_name="GH100", sm_count=132,
                 clock_hz=1_980_000_000, memory_bandwidth_bytes_per_s=3.35e12,
                 total_memory_bytes=80 << 30, cc_major=9, cc_minor=0, bus_location="")
            for i in range(n)]
    return C.GPUS.validate(pd.DataFrame(rows))


def steps_and_phases(n_steps: int, phases: list[tuple[str, int]], *, t0: int = 10 * MS,
                     step_name: str = "train_step_{i}") -> list[dict]:
    """NVTX rows: ``n_steps`` back-to-back steps each made of ``phases`` [(name, dur_ns)]."""
    rows = []
    t = t0
    for i in range(n_steps):
        start = t
        for name, dur in phases:
            rows.append(dict(text=name, start_ns=t, end_ns=t + dur))
            t += dur
        rows.append(dict(text=step_name.format(i=i), start_ns=start, end_ns=t))
    return rows


def bundle(**frames) -> TraceBundle:
    meta = TraceMeta(path="/tmp/hand.sqlite", format="nsys-sqlite", nsys_version="2024.6.2",
                     capture_end_ns=int(frames.pop("capture_end_ns", 10_000 * MS)))
    return TraceBundle(meta=meta, **frames)


def _process_rows(pid: int, step_ms: int, n: int = 5):
    gpid = pid << 24
    tid = gpid | 1
    nv, kr = [], []
    for i in range(n):
        s = i * step_ms * MS
        for text in (f"step_{i}", "forward"):
            nv.append(dict(text=text, start_ns=s, end_ns=s + step_ms * MS, global_tid=tid,
                           end_global_tid=tid, global_pid=gpid, pid=pid))
        kr.append(dict(start_ns=s + MS, end_ns=s + (step_ms - 1) * MS, launch_start_ns=s,
                       launch_global_tid=tid, global_pid=gpid, pid=pid, device_id=pid % 2,
                       name="sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"))
    return nv, kr


def two_process_bundle() -> TraceBundle:
    """Two ranks in one file: pid 100 (device 0, 100 ms steps), pid 101 (device 1, 200 ms)."""
    nv1, k1 = _process_rows(100, 100)
    nv2, k2 = _process_rows(101, 200)
    procs = C.PROCESSES.validate(pd.DataFrame([dict(global_pid=100 << 24, pid=100, name="rank0"),
                                               dict(global_pid=101 << 24, pid=101, name="rank1")]))
    return bundle(nvtx=nvtx(nv1 + nv2), kernels=kernels(k1 + k2), gpus=gpus(2), processes=procs)
