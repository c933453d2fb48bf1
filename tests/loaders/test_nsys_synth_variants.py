"""The loader on nsys_diag.synth output, in every schema variant the generator writes.

Expected counts come from independent sqlite3 queries on the generated file and from
``synth.expected`` (computed by the generator from its scenario, not by the loader).
"""
from __future__ import annotations

import re
import sqlite3

import pytest

from nsys_diag import synth
from nsys_diag.loaders import load_trace
from nsys_diag.model import contracts as C


def _count(path, table, where=""):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        if not con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone():
            return 0
        return con.execute(f"SELECT count(*) FROM {table} {('WHERE ' + where) if where else ''}").fetchone()[0]
    finally:
        con.close()


@pytest.mark.parametrize("schema", synth.ALL_SCHEMAS)
@pytest.mark.parametrize("preset", ["multi_gpu", "memory_bound"])
def test_synth_variant_loads_completely(tmp_path, schema, preset):
    path = synth.write_preset(tmp_path / f"{preset}.sqlite", preset, schema=schema, steps=3)
    b = load_trace(path)
    exp = synth.expected(preset, steps=3)
    assert len(b.kernels) == exp["kernels"]["total"] == _count(path, "CUPTI_ACTIVITY_KIND_KERNEL")
    assert len(b.memcpy) == _count(path, "CUPTI_ACTIVITY_KIND_MEMCPY")
    assert len(b.memset) == _count(path, "CUPTI_ACTIVITY_KIND_MEMSET")
    assert len(b.sync) == _count(path, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
    assert len(b.api) == _count(path, "CUPTI_ACTIVITY_KIND_RUNTIME", "eventClass IN (0, 1)")
    assert len(b.nvtx) == _count(path, "NVTX_EVENTS", "eventType IN (59, 60, 70, 71)") > 0
    assert len(b.processes) == exp["processes"]
    assert set(b.gpus["name"]) == {exp["gpu_name"]}
    assert sorted(b.kernels["device_id"].unique()) == sorted(
        d["device_id"] for d in exp["gpu"]["per_device"])
    # A complete export: every GPU operation finds its launching call.
    for frame in (b.kernels, b.memcpy, b.memset):
        assert (frame["launch_start_ns"] >= 0).all()
    assert "unmatched_launches" not in {w.code for w in b.warnings}
    runtime = b.api.loc[b.api["api_class"] == "runtime", "name"].astype(str)
    assert not runtime.str.contains(r"_v\d{4,5}$", regex=True).any()
    assert (b.sync["sync_kind"] != "unknown").all()
    assert len(b.gpu_metrics) == _count(path, "GPU_METRICS")
    for name, contract in (("kernels", C.KERNELS), ("nvtx", C.NVTX), ("gpus", C.GPUS),
                           ("api", C.API), ("memcpy", C.MEMCPY)):
        assert list(getattr(b, name).columns) == contract.names
    if schema in ("2024.6", "2026.2"):
        assert re.match(r"20\d\d\.\d", b.meta.nsys_version)
