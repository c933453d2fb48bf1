"""The ``inspect`` terminal view (nsys_diag/report/inventory_render.py)."""
from __future__ import annotations

from pathlib import Path

from nsys_diag.loaders import load_trace
from nsys_diag.report.formatting import fmt_device_memory
from nsys_diag.report.inventory_render import build_inspect_view, render_inspect_text

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


def test_gpu_memory_reads_in_the_binary_units_the_gpu_name_uses():
    """"NVIDIA H100 80GB HBM3 (…, 85 GB, …)" read as a contradiction: the sample's 85e9 bytes
    are 79.2 GiB, as the analysis report's GPU table shows them."""
    view = build_inspect_view(load_trace(str(SAMPLES / "worked_example.sqlite")))
    line = next(x for x in render_inspect_text(view).splitlines() if "NVIDIA H100 80GB HBM3" in x)
    size = fmt_device_memory(view["gpus"][0]["memory_bytes"])
    assert size.endswith(" GiB") and f", {size}," in line and "85 GB" not in line
