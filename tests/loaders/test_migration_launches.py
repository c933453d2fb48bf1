"""Unified-memory migrations (memcpy rows of copyKind 11/12/13, correlationId 0) are never
launched by an API call: they do not count towards the unmatched-launch warning, in memory or
streamed, while real memcpys whose call is missing still do."""
from __future__ import annotations

import shutil
import sqlite3

import numpy as np
import pandas as pd
import pytest

from nsys_diag.loaders import load_trace
from nsys_diag.model import contracts as C
from nsys_diag.synth import programs
from tests.app.test_stream import _view, _without_chunks, assert_same

MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"


@pytest.fixture(scope="module")
def host_writes(tmp_path_factory):
    return programs.write_case("host_writes", tmp_path_factory.mktemp("uvm") / "host_writes.sqlite")


@pytest.fixture(scope="module")
def with_cut_copies(host_writes, tmp_path_factory):
    """host_writes plus three real H2D copies whose launching call is not in the export."""
    path = tmp_path_factory.mktemp("uvm_cut") / "host_writes_cut.sqlite"
    shutil.copy(host_writes, path)
    con = sqlite3.connect(path)
    con.execute(f"CREATE TEMP TABLE t AS SELECT * FROM {MEMCPY} ORDER BY start LIMIT 3")
    con.execute("UPDATE t SET copyKind = 1, srcKind = 1, dstKind = 2, migrationCause = NULL, "
                "correlationId = 900000 + rowid")
    con.execute(f"INSERT INTO {MEMCPY} SELECT * FROM t")
    con.commit()
    con.close()
    return path


def _unmatched(view: dict):
    return next((q for q in view["data_quality"] if q["code"] == "unmatched_launches"), None)


def test_migrations_are_the_memcpy_rows_of_a_uvm_kind():
    f = pd.DataFrame({"copy_kind": pd.Categorical(["H2D", "uvm_h2d", "uvm_d2h", None, "D2H"]),
                      "launch_start_ns": np.array([-1, -1, -1, -1, 5], np.int64)})
    assert C.migration_rows(f).tolist() == [False, True, True, False, False]
    assert C.launch_counts(f) == (2, 3)  # the H2D and the kind-less row miss their call
    assert C.launch_counts(f, np.array([False, True, True, True, True])) == (1, 2)
    assert C.launch_counts(C.MEMCPY.empty()) == (0, 0)


def test_a_stdpar_program_s_migrations_raise_no_unmatched_launch_warning(host_writes):
    b = load_trace(host_writes)
    assert len(b.memcpy) == programs.facts("host_writes")["copies"]["count"] == 5511
    assert C.migration_rows(b.memcpy).all() and (b.memcpy["launch_start_ns"] == -1).all()
    assert "unmatched_launches" not in {w.code for w in b.warnings}
    whole = _view(host_writes, memory_budget="none")
    streamed = _view(host_writes, chunk_rows=500)
    assert streamed["trace"]["chunks"]["count"] > 1
    assert _unmatched(whole) is None and _unmatched(streamed) is None
    assert_same(whole, _without_chunks(streamed))


def test_real_memcpys_without_their_call_still_warn_beside_migrations(with_cut_copies):
    whole = _view(with_cut_copies, memory_budget="none")
    q = _unmatched(whole)
    assert q is not None and q["count"] == 3
    assert q["message"].startswith("3 of 3 memcpys have no launching CUDA API call")
    streamed = _view(with_cut_copies, chunk_rows=500)
    assert streamed["trace"]["chunks"]["count"] > 1
    assert _unmatched(streamed) == q
    assert_same(whole, _without_chunks(streamed))
