"""Launch shapes and per-SM limits read from nsys exports (loaders/nsys_launch_shapes.py)."""
from __future__ import annotations

import sqlite3

import pytest
from conftest import SAMPLE_TRACES, shared_trace

from nsys_diag.loaders.nsys_db import NsysDb
from nsys_diag.loaders.nsys_launch_shapes import read_launch_shapes, read_sm_limits
from nsys_diag.loaders.nsys_strings import StringTable

TRACE = SAMPLE_TRACES / "launch_bound.sqlite"


def _direct(path, sql):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_small_table_is_read_whole_with_weight_one():
    with NsysDb(TRACE) as db:
        shapes = read_launch_shapes(db, StringTable(db))
    (n,), = _direct(TRACE, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    assert len(shapes) == n and (shapes["weight"] == 1.0).all()
    (grid_sum, regs_sum), = _direct(TRACE, "SELECT sum(gridX), sum(registersPerThread) "
                                           "FROM CUPTI_ACTIVITY_KIND_KERNEL")
    assert shapes["grid_x"].sum() == grid_sum and shapes["registers_per_thread"].sum() == regs_sum
    assert (shapes["duration_ns"] >= 0).all() and shapes["name"].str.len().min() > 0


def test_large_table_is_sampled_and_each_row_stands_for_its_share():
    with NsysDb(TRACE) as db:
        shapes = read_launch_shapes(db, StringTable(db), sample_rows=100)
    (n,), = _direct(TRACE, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    assert 90 <= len(shapes) <= 110
    assert shapes["weight"].sum() == pytest.approx(n)


def test_sm_limits_from_target_info_gpu():
    with NsysDb(TRACE) as db:
        lim = read_sm_limits(db)
    row = lim.iloc[0]
    assert row["max_threads_per_sm"] > 0 and row["max_blocks_per_sm"] > 0
    assert row["registers_per_sm"] == 65536


def test_real_turing_export_reports_unknown_block_limit_as_zero():
    """The 2021 Quadro RTX 6000 export stores maxBlocksPerSm = 0 (unknown): kept as read, the
    analysis completes it from the spec table."""
    path = shared_trace("nsys/mordred_rtx6000_2021.sqlite")
    with NsysDb(path) as db:
        lim = read_sm_limits(db)
        shapes = read_launch_shapes(db, StringTable(db))
    assert lim.iloc[0]["max_threads_per_sm"] == 1024 and lim.iloc[0]["max_blocks_per_sm"] <= 0
    assert len(shapes) == 12 and (shapes["block_x"] > 0).all()


def test_no_kernel_table_gives_empty_frames():
    path = shared_trace("nsys/centerformer_nvtx_only_2022.4.sqlite")
    with NsysDb(path) as db:
        assert read_launch_shapes(db, StringTable(db)).empty
