"""Benchmark child: write one benchmark trace with the project's own generator.

    python bench/gen.py OUT.sqlite PRESET STEPS SCALE METRICS_PERIOD_NS SCHEMA

A training preset (``healthy_tc`` by default: forward/backward/optimizer NVTX phases, H2D copies,
memsets) with every kernel count multiplied by SCALE, STEPS steps, and GPU metrics sampled every
METRICS_PERIOD_NS. Writes to ``OUT.partial`` and renames, so an interrupted run leaves no
half-written file that a later run would take for a cached trace.
"""
from __future__ import annotations

import os
import sys

from nsys_diag import synth


def main() -> int:
    out, preset, steps, scale, period, schema = sys.argv[1:7]
    sc = synth.preset(preset, steps=int(steps), scale=float(scale),
                      gpu_metrics=synth.GpuMetricsSpec(period_ns=int(period)))
    tmp = out + ".partial"
    synth.write_nsys_sqlite(tmp, sc, schema=schema)
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
