"""Benchmark child, run in HTA's own venv: Holistic Trace Analysis loading one trace folder.

    python bench/hta_child.py DIR

``TraceAnalysis(trace_dir=DIR)`` (HTA parses every trace in the folder), then its GPU kernel
breakdown of every kernel by name (memory kernels left out). Prints one JSON line: ``load_s``
(in-process seconds of the load), and ``kernels``: per kernel name its summed duration in µs
(HTA's ``sum (us)``) and its launch count (``sum ÷ mean``). HTA's own log lines go to stderr.
"""
from __future__ import annotations

import contextlib
import json
import sys
import time


def main(folder: str) -> int:
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):  # HTA prints its progress
        from hta.trace_analysis import TraceAnalysis

        analysis = TraceAnalysis(trace_dir=folder)
        load_s = time.perf_counter() - t0
        # every kernel by name (no "others" row), memcpy/memset left out as ours' kernels[] does
        _, per_kernel = analysis.get_gpu_kernel_breakdown(
            visualize=False, duration_ratio=1.0, num_kernels=10**6, include_memory_kernels=False)
    out = [{"name": str(row["name"]), "sum_us": float(row["sum (us)"]),
            "count": int(round(float(row["sum (us)"]) / float(row["mean (us)"])))
            if float(row["mean (us)"]) else 0}
           for _, row in per_kernel.iterrows()]
    print(json.dumps({"load_s": load_s, "kernels": out}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
