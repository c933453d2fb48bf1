"""Window reads (``loaders/read_window.py``): a window pushed down into SQL gives exactly the
rows of the whole load that the window keeps, with every launch of its GPU work, and a row
fraction reads about that share of the kernel rows from the middle of the timeline."""
from __future__ import annotations

import numpy as np
import pytest

from nsys_diag import synth
from nsys_diag.loaders import load_trace
from nsys_diag.loaders.nsys_db import NsysDb, and_where
from nsys_diag.loaders.read_window import ReadWindow, plan_window, with_launches


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("rw") / "t.sqlite"
    sc = synth.preset("healthy_tc", steps=24,
                      gpu_metrics=synth.GpuMetricsSpec(period_ns=5_000_000))
    return synth.write_nsys_sqlite(path, sc)


@pytest.fixture(scope="module")
def full(trace):
    return load_trace(trace, kernel_detail=False)


def _overlapping(df, lo, hi):
    s, e = df["start_ns"].to_numpy(), df["end_ns"].to_numpy()
    return df[(e > lo) & (s < hi)]


def _middle(full):
    s = np.sort(full.kernels["start_ns"].to_numpy())
    return int(s[len(s) // 3]), int(s[2 * len(s) // 3])


def test_window_keeps_exactly_the_overlapping_gpu_rows(trace, full):
    lo, hi = _middle(full)
    win = load_trace(trace, kernel_detail=False, time_window=(lo, hi))
    for name in ("kernels", "memcpy", "memset", "sync"):
        want = _overlapping(getattr(full, name), lo, hi)
        got = getattr(win, name)
        assert len(want) > 0 or name in ("memset", "sync")
        np.testing.assert_array_equal(np.sort(got["start_ns"].to_numpy()),
                                      np.sort(want["start_ns"].to_numpy()))
    assert win.meta.extra["read_window"] == {"start_ns": lo, "end_ns": hi, "reason": "window"}
    assert win.meta.tables == full.meta.tables  # row counts describe the whole export


def test_window_keeps_the_launches_of_its_gpu_work(trace, full):
    lo, hi = _middle(full)
    win = load_trace(trace, kernel_detail=False, time_window=(lo, hi))
    assert not [w for w in win.warnings if w.code == "unmatched_launches"]
    assert (win.kernels["launch_start_ns"].to_numpy() >= 0).all()
    # the launch columns equal the whole load's for the same kernels
    key = ["start_ns", "end_ns", "correlation_id"]
    a = win.kernels.sort_values(key)[key + ["launch_start_ns", "launch_global_tid"]]
    b = _overlapping(full.kernels, lo, hi).sort_values(key)[key + ["launch_start_ns",
                                                                  "launch_global_tid"]]
    np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())
    # API rows: every call overlapping the window is there, and nothing starting after it
    api_s = win.api["start_ns"].to_numpy()
    assert (api_s < hi).all()
    assert len(win.api) >= len(_overlapping(full.api, lo, hi))


def test_window_nvtx_and_metrics(trace, full):
    lo, hi = _middle(full)
    win = load_trace(trace, kernel_detail=False, time_window=(lo, hi))
    assert len(win.nvtx) == len(_overlapping(full.nvtx, lo, hi))
    ts = full.gpu_metrics["ts_ns"].to_numpy()
    assert len(win.gpu_metrics) == int(((ts >= lo) & (ts < hi)).sum())
    assert len(win.gpu_metrics) > 0
    # thread names survive the window (written once, at creation)
    assert set(full.threads["name"]) <= set(win.threads["name"])


def test_row_fraction_reads_about_that_share_from_the_middle(trace, full):
    win = load_trace(trace, kernel_detail=False, row_fraction=0.4)
    share = len(win.kernels) / len(full.kernels)
    assert 0.3 < share < 0.5, share
    rec = win.meta.extra["read_window"]
    assert rec["reason"] == "memory_budget" and rec["row_fraction"] == 0.4
    s = full.kernels["start_ns"].to_numpy()
    assert rec["start_ns"] > s.min() and rec["end_ns"] < s.max()  # the middle, not an edge
    codes = [w.code for w in win.warnings]
    assert "memory_window" in codes and "unmatched_launches" not in codes
    # the shares of the whole export that were read (the evidence the window is representative)
    assert rec["kernel_share"] == round(len(win.kernels) / len(full.kernels), 4)
    dur = lambda k: int((k["end_ns"] - k["start_ns"]).clip(lower=0).sum())  # noqa: E731
    assert rec["kernel_time_share"] == pytest.approx(dur(win.kernels) / dur(full.kernels),
                                                     abs=1e-4)


@pytest.mark.parametrize("fraction", [None, 1.0, 0.0])
def test_no_window_when_fraction_is_not_a_proper_share(trace, full, fraction):
    b = load_trace(trace, kernel_detail=False, row_fraction=fraction)
    assert "read_window" not in b.meta.extra and len(b.kernels) == len(full.kernels)


def test_plan_window_and_min_correlation(trace, full):
    with NsysDb(trace) as db:
        lo, hi = plan_window(db, 0.5)
        win = with_launches(db, lo, hi)
    inside = _overlapping(full.kernels, lo, hi)
    assert win.min_correlation == int(inside["correlation_id"].min())
    assert plan_window.__doc__  # the heuristic is documented


def test_sql_helpers():
    w = ReadWindow(10, 20, 7)
    assert w.overlap() == '("end" > 10 AND "start" < 20)'
    assert w.instant('"ts"') == '("ts" >= 10 AND "ts" < 20)'
    assert "correlationId\" >= 7" in w.api(True) and "correlationId" not in w.api(False)
    assert ReadWindow(10, 20).api(True) == w.overlap()
    assert and_where("a", "", "b") == "(a) AND (b)" and and_where("", "") == ""


@pytest.mark.parametrize("rowids", [
    list(range(1, 90_001)),                               # the usual 1..n
    list(range(-300, 50_000, 3)),                         # negative and strided rowids
    [*range(1, 30_000), *range(200_000, 260_000)],        # a hole in the middle
    [1, 5, 10**9, 10**9 + 20_000],                        # far sparser than their range
])
def test_strided_sample_is_the_rowid_multiples(tmp_path, rowids):
    """The rowid-seek sample holds exactly the rows a ``rowid % stride = 0`` scan selects."""
    import sqlite3

    from nsys_diag.loaders.nsys_db import NsysDb
    from nsys_diag.loaders.read_window import SAMPLE_ROWS, _strided_starts

    path = tmp_path / "t.sqlite"
    con = sqlite3.connect(path)
    con.execute('CREATE TABLE k ("start" INTEGER)')
    con.executemany('INSERT INTO k (rowid, "start") VALUES (?, ?)',
                    [(r, r * 7 if r % 11 else "text") for r in rowids])
    con.commit()
    con.close()
    stride = max(1, max(rowids) // SAMPLE_ROWS)
    with NsysDb(path) as db:
        want = db.rows(f'SELECT "start" FROM k WHERE rowid % {stride} = 0 '
                       'AND typeof("start") = \'integer\'')
        assert _strided_starts(db, "k") == want
        assert want  # the case samples something
