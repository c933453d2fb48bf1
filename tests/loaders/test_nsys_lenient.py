"""Lenient GPU tables: only start, end, deviceId and one kernel-name column are required; every
other column reads as the contract's missing value, and a launch join that cannot be made is a
data-quality warning, never a refusal (issue 15: a peer project's minimal synthetic control)."""
from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner

from nsys_diag.cli import main
from nsys_diag.loaders.nsys_sqlite import load_nsys_sqlite
from nsys_diag.model.errors import SchemaError

N = 40
NAME = "void gemm<float>(float*)"


def _minimal(path, name_col: str = "demangledName", extra: tuple[str, ...] = (),
             runtime: str | None = None):
    """A kernel table with ``start, end, deviceId, <name_col>`` (+ ``extra`` int columns, 0);
    ``runtime``: add a RUNTIME table with these columns ('plain' = start,end,nameId)."""
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
    con.executemany("INSERT INTO StringIds VALUES (?, ?)",
                    [(1, NAME), (2, "cudaLaunchKernel_v7000")])
    cols = ["start", "end", "deviceId"] + ([name_col] if name_col else []) + list(extra)
    con.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL ({', '.join(c + ' INTEGER' for c in cols)})")
    rows = []
    for i in range(N):
        t = 1_000 + i * 1_000_000
        rows.append((t, t + 900_000, 0) + ((1,) if name_col else ()) + (0,) * len(extra))
    con.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({','.join('?' * len(cols))})",
                    rows)
    if runtime:
        con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, "
                    "nameId INTEGER)")
        con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 2)",
                        [(r[0] - 5_000, r[0] - 1_000) for r in rows])
    con.commit()
    con.close()
    return path


@pytest.mark.parametrize("name_col", ["demangledName", "shortName", "mangledName"])
def test_minimal_kernel_table_loads(tmp_path, name_col):
    b = load_nsys_sqlite(_minimal(tmp_path / "m.sqlite", name_col))
    k = b.kernels
    assert len(k) == N
    assert set(k["name"].astype(str)) == {NAME} and set(k["short_name"].astype(str)) == {NAME}
    for col in ("context_id", "stream_id", "correlation_id", "global_pid", "pid", "grid_x",
                "registers_per_thread", "graph_node_id", "launch_start_ns"):
        assert set(k[col]) == {-1}, col
    assert "no_launch_join" in [w.code for w in b.warnings]
    assert "unmatched_launches" not in [w.code for w in b.warnings]


def test_partial_columns_are_read_and_the_rest_missing(tmp_path):
    b = load_nsys_sqlite(_minimal(tmp_path / "m.sqlite", extra=("streamId", "gridX")))
    assert set(b.kernels["stream_id"]) == {0} and set(b.kernels["grid_x"]) == {0}
    assert set(b.kernels["context_id"]) == {-1}


def test_runtime_without_correlation_is_a_warning(tmp_path):
    b = load_nsys_sqlite(_minimal(tmp_path / "m.sqlite", extra=("correlationId",),
                                  runtime="plain"))
    assert len(b.api) == N and set(b.api["correlation_id"]) == {-1}
    assert set(b.api["global_tid"]) == {-1}
    w = [w for w in b.warnings if w.code == "no_launch_join"]
    assert w and "CUPTI_ACTIVITY_KIND_RUNTIME has no correlationId" in w[0].message


def test_no_name_column_is_refused_with_a_reason(tmp_path):
    with pytest.raises(SchemaError, match="no kernel name column"):
        load_nsys_sqlite(_minimal(tmp_path / "m.sqlite", name_col=""))


@pytest.mark.parametrize("runtime", [None, "plain"])
def test_analyze_minimal_control_exits_0(tmp_path, runtime):
    p = _minimal(tmp_path / "m.sqlite", runtime=runtime)
    out = tmp_path / "m.json"
    r = CliRunner().invoke(main, ["analyze", str(p), "--json", str(out), "--no-html"],
                           env={"SOURCE_DATE_EPOCH": "0"})
    assert r.exit_code == 0, r.output[-2000:]
    view = json.loads(out.read_text())
    assert view["verdict"]["code"]
    codes = [w["code"] for w in view["data_quality"]]
    assert "no_launch_join" in codes
