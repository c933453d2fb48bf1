"""Tiny contract-validated frames for the kernel-level analysis tests."""
from __future__ import annotations

import pandas as pd

from nsys_diag.model import contracts as C

US = 1_000
MS = 1_000_000


def kernels(rows: list[dict]) -> pd.DataFrame:
    """rows: name, start_ns, end_ns (+ device_id, short_name …)."""
    if not rows:
        return C.KERNELS.empty()
    d = dict(device_id=0, context_id=1, stream_id=7, correlation_id=-1, global_pid=1 << 24, pid=1,
             grid_x=1, grid_y=1, grid_z=1, block_x=128, block_y=1, block_z=1,
             registers_per_thread=32, smem_static_bytes=0, smem_dynamic_bytes=0, graph_node_id=-1,
             launch_global_tid=-1, launch_start_ns=-1, launch_end_ns=-1,
             launch_api="cudaLaunchKernel")
    full = [{**d, "short_name": r.get("short_name", r["name"]), **r} for r in rows]
    return C.KERNELS.validate(pd.DataFrame(full))


def memcpy(rows: list[dict]) -> pd.DataFrame:
    if not rows:
        return C.MEMCPY.empty()
    d = dict(device_id=0, context_id=1, stream_id=7, correlation_id=-1, global_pid=1 << 24, pid=1,
             bytes=1 << 20, copy_kind="H2D", src_kind="pinned", dst_kind="device", copy_count=1,
             launch_global_tid=-1, launch_start_ns=-1, launch_end_ns=-1,
             launch_api="cudaMemcpyAsync")
    return C.MEMCPY.validate(pd.DataFrame([{**d, **r} for r in rows]))


def memset(rows: list[dict]) -> pd.DataFrame:
    if not rows:
        return C.MEMSET.empty()
    d = dict(device_id=0, context_id=1, stream_id=7, correlation_id=-1, global_pid=1 << 24, pid=1,
             bytes=4096, launch_global_tid=-1, launch_start_ns=-1, launch_end_ns=-1,
             launch_api="cudaMemsetAsync")
    return C.MEMSET.validate(pd.DataFrame([{**d, **r} for r in rows]))


def gpus(names: list[str], *, cc_major: int = -1, bandwidth: float = float("nan"),
         memory: int = -1) -> pd.DataFrame:
    rows = [dict(device_id=i, name=n, chip_name="", sm_count=-1, clock_hz=-1,
                 memory_bandwidth_bytes_per_s=bandwidth, total_memory_bytes=memory,
                 cc_major=cc_major, cc_minor=0, bus_location="") for i, n in enumerate(names)]
    return C.GPUS.validate(pd.DataFrame(rows))


def gpu_metrics(rows: list[tuple[int, int, str, float]]) -> pd.DataFrame:
    """rows: (ts_ns, device_id, metric, value)."""
    if not rows:
        return C.GPU_METRICS.empty()
    ts, dev, metric, value = zip(*rows)
    return C.GPU_METRICS.validate(pd.DataFrame(
        {"ts_ns": ts, "device_id": dev, "metric": metric, "value": value}))


def gpu_memory(rows: list[tuple[int, int, int, str]]) -> pd.DataFrame:
    """rows: (ts_ns, device_id, bytes, op)."""
    if not rows:
        return C.GPU_MEMORY.empty()
    ts, dev, nbytes, op = zip(*rows)
    return C.GPU_MEMORY.validate(pd.DataFrame(
        {"ts_ns": ts, "device_id": dev, "pid": [1] * len(ts), "bytes": nbytes, "op": op}))
