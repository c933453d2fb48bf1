"""The `make bench` child scripts work on small traces (what they read and print, never timing)."""
from __future__ import annotations

import importlib.util
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
TRACE = REPO / "sample_traces" / "worked_example.sqlite"
NO_CUDA = REPO / "sample_traces" / "no_cuda.sqlite"

sys.path.insert(0, str(BENCH))
import needed_columns as spec  # noqa: E402


def _child(*args: str) -> dict:
    r = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _rows(path: Path, sql: str) -> int:
    con = sqlite3.connect(path)
    try:
        return con.execute(f"SELECT count(*) FROM ({sql})").fetchone()[0]
    finally:
        con.close()


def test_queries_select_the_needed_columns_that_exist():
    qs = spec.queries(str(TRACE))
    assert set(qs) <= set(spec.NEEDED)
    assert "CUPTI_ACTIVITY_KIND_KERNEL" in qs and "StringIds" in qs
    k = qs["CUPTI_ACTIVITY_KIND_KERNEL"]
    assert '"demangledName"' in k and '"gridX"' not in k
    assert "eventClass IN (0, 1)" in qs["CUPTI_ACTIVITY_KIND_RUNTIME"]
    for sql in qs.values():  # every query runs
        _rows(TRACE, sql)
    assert "CUPTI_ACTIVITY_KIND_KERNEL" not in spec.queries(str(NO_CUDA))  # absent: skipped


@pytest.mark.parametrize("reader", ["adbc", "connectorx", "adbc-threads", "connectorx-threads",
                                    "count"])
def test_floor_reads_every_needed_row(reader):
    module = {"adbc": "adbc_driver_sqlite", "connectorx": "connectorx"}.get(reader.split("-")[0])
    if module and importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} not installed")
    out = _child(str(BENCH / "floor.py"), str(TRACE), reader)
    if reader == "count":
        want = sum(spec.counts(str(TRACE))[t] for t in spec.DURATION_TABLES)
        assert out["rows"] == want
    else:
        want = sum(_rows(TRACE, sql) for sql in spec.queries(str(TRACE)).values())
        assert out["rows"] == want and out["arrow_bytes"] > 0
    assert out["read_s"] >= 0


def test_naive_baseline_computes_its_summary():
    out = _child(str(BENCH / "naive.py"), str(TRACE))
    assert out["kernels"] == spec.counts(str(TRACE))["CUPTI_ACTIVITY_KIND_KERNEL"]
    assert out["busy_sum_ns"] > 0 and out["top_kernel"]
    assert out["nvtx_top"]  # the sample has NVTX ranges
