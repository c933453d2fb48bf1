"""Benchmark child: the naive baseline a user writes by hand with pandas.

    python bench/naive.py TRACE

``pandas.read_sql`` of the same tables and columns as the floor (``needed_columns.py``), then the obvious
pandas: names merged in from ``StringIds``, the launching API call merged on correlationId,
time per kernel name (groupby-sum), "busy" as the sum of kernel durations (which double-counts
overlapping kernels — what hand-written scripts usually do), NVTX range time per name and the
mean of each GPU metric. Prints a small JSON summary (so the work cannot be skipped).
"""
from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from needed_columns import queries, ro_uri  # noqa: E402


def main() -> int:
    path = sys.argv[1]
    t0 = time.perf_counter()
    qs = queries(path)
    con = sqlite3.connect(ro_uri(path), uri=True)
    df = {table: pd.read_sql(sql, con) for table, sql in qs.items()}
    con.close()

    strings = df["StringIds"].set_index("id")["value"]
    k = df["CUPTI_ACTIVITY_KIND_KERNEL"]
    k["name"] = k["demangledName"].map(strings)
    api = df.get("CUPTI_ACTIVITY_KIND_RUNTIME", pd.DataFrame(
        columns=["start", "end", "correlationId", "nameId"]))
    api["api_name"] = api["nameId"].map(strings)
    k = k.merge(api[["correlationId", "start", "end", "api_name"]], on="correlationId",
                how="left", suffixes=("", "_api"))
    k["dur"] = k["end"] - k["start"]
    k["launch_latency"] = k["start"] - k["start_api"]
    top = k.groupby("name")["dur"].sum().sort_values(ascending=False).head(20)
    busy = int(k["dur"].sum())
    span = int(k["end"].max() - k["start"].min()) if len(k) else 0

    nv = df.get("NVTX_EVENTS")
    nvtx_top = {}
    if nv is not None and len(nv):
        nv = nv[nv["end"].notna()].copy()
        nv["name"] = nv["text"].fillna(nv["textId"].map(strings))
        nv["dur"] = nv["end"] - nv["start"]
        nvtx_top = nv.groupby("name")["dur"].sum().sort_values(ascending=False).head(10)
        nvtx_top = {str(a): int(b) for a, b in nvtx_top.items()}
    gm = df.get("GPU_METRICS")
    metrics = {}
    if gm is not None and len(gm):
        metrics = {int(a): float(b) for a, b in gm.groupby("metricId")["value"].mean().items()}

    print(json.dumps({
        "kernels": len(k), "busy_sum_ns": busy, "span_ns": span,
        "utilization_naive": busy / span if span else None,
        "median_launch_latency_ns": float(k["launch_latency"].median()) if len(k) else None,
        "top_kernel": str(top.index[0]) if len(top) else None,
        "nvtx_top": nvtx_top, "metrics_mean": metrics,
        "seconds": time.perf_counter() - t0}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
