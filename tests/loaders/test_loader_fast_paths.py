"""The loader's performance shortcuts (made for `make bench`) give exactly the slow paths' result.

* ``NsysDb.read`` reads plain integer columns without ``ifnull(CAST(...))`` through ADBC and
  falls back to the type-stable SQL when a column is not all integers;
* ``attach_launch`` skips hashing / sorting / temporaries for one process and sorted API rows;
* ``load_trace(kernel_detail=False)`` skips only the kernel columns no analysis reads.
"""
from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest

from nsys_diag.loaders import load_trace
from nsys_diag.loaders.nsys_cuda import KERNEL_DETAIL_COLUMNS, attach_launch
from nsys_diag.loaders.nsys_db import Col, NsysDb
from nsys_diag.loaders.nsys_strings import categorical
from nsys_diag.model import contracts as C
from tiny_nsys import write_tiny_nsys

def _mixed_table(path) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")
    con.execute('CREATE TABLE t (a INTEGER, b INTEGER, c INTEGER, d INTEGER)')
    rows = [(i, i * 3, None if i % 7 == 0 else i, None) for i in range(3000)]
    rows += [(1.5, 2, "12", None), ("x", 3, 4, None)]  # stored as REAL / TEXT in column a
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    con.commit()
    con.close()


def _read(db: NsysDb, cols):
    out = db.read("t", cols)
    return {k: np.asarray(v) for k, v in out.items()}


@pytest.mark.parametrize("where", ["", "b > 30"])
def test_plain_int_fast_path_equals_typed_sql(tmp_path, monkeypatch, where):
    pytest.importorskip("adbc_driver_sqlite")
    path = tmp_path / "m.sqlite"
    _mixed_table(path)
    cols = [Col("b", "int"), Col("c", "int", fill=-5), Col("d", "int", fill=9)]
    with NsysDb(path) as db:
        assert db.reader == "adbc"
        fast = db.read("t", cols, where=where)
        assert db.reader == "adbc"  # NULLs are filled on the Arrow side, no fallback
    monkeypatch.setenv("NSYS_DIAG_NO_ADBC", "1")
    with NsysDb(path) as db:
        slow = db.read("t", cols, where=where)
    for c in ("b", "c", "d"):
        assert fast[c].dtype == np.int64
        np.testing.assert_array_equal(fast[c], slow[c])
    lo = 0 if not where else 11  # b = 3 i > 30
    assert (fast["d"] == 9).all()
    assert int((fast["c"] == -5).sum()) == sum(1 for i in range(lo, 3000) if i % 7 == 0)


def test_non_integer_values_are_reread_with_casts(tmp_path, monkeypatch):
    pytest.importorskip("adbc_driver_sqlite")
    path = tmp_path / "m.sqlite"
    _mixed_table(path)
    cols = [Col("a", "int"), Col("c", "int")]
    with NsysDb(path) as db:
        fast = db.read("t", cols)
        assert db.reader == "adbc"  # the typed SQL still went through ADBC
    monkeypatch.setenv("NSYS_DIAG_NO_ADBC", "1")
    with NsysDb(path) as db:
        slow = db.read("t", cols)
    np.testing.assert_array_equal(fast["a"], slow["a"])
    np.testing.assert_array_equal(fast["c"], slow["c"])
    assert list(fast["a"][-2:]) == [1, 0] and fast["c"][-2] == 12  # CAST semantics kept


# ------------------------------------------------------------------------------ launch join
def _api_frame(corr, gpid, start) -> pd.DataFrame:
    corr = np.asarray(corr, np.int64)
    n = corr.size
    names = categorical(np.arange(n) % 3, ["cudaLaunchKernel", "cuLaunchKernel_v2", "cudaMemcpy"])
    return pd.DataFrame({"correlation_id": corr, "global_pid": np.asarray(gpid, np.int64),
                         "global_tid": np.asarray(gpid, np.int64) + 1 + np.arange(n) % 2,
                         "start_ns": np.asarray(start, np.int64),
                         "end_ns": np.asarray(start, np.int64) + 10, "name": names})


def _reference_join(ops: pd.DataFrame, api: pd.DataFrame) -> pd.DataFrame:
    """Plain pandas: first API row per (correlation id, process), ids < 0 never match."""
    a = api.assign(row=np.arange(len(api)))
    a = a[a["correlation_id"] >= 0].drop_duplicates(["correlation_id", "global_pid"])
    m = ops.reset_index().merge(a, on=["correlation_id", "global_pid"], how="left",
                                suffixes=("", "_api")).sort_values("index")
    ok = m["row"].notna().to_numpy()
    out = pd.DataFrame({
        "launch_global_tid": np.where(ok, m["global_tid"].fillna(-1), -1).astype(np.int64),
        "launch_start_ns": np.where(ok, m["start_ns"].fillna(-1), -1).astype(np.int64),
        "launch_end_ns": np.where(ok, m["end_ns"].fillna(-1), -1).astype(np.int64),
        "launch_api": np.where(ok, m["name"].astype(object).fillna(""), ""),
    })
    return out


@pytest.mark.parametrize("case", ["one_process_sorted", "one_process_shuffled", "two_processes",
                                  "duplicates_sorted", "negatives_sorted",
                                  "duplicates_and_negatives_shuffled", "no_api",
                                  "one_process_sparse_ids"])
def test_attach_launch_matches_a_plain_merge(case):
    rng = np.random.default_rng(len(case))
    p1, p2 = 1 << 24, 2 << 24
    n = 400
    corr = np.arange(10, 10 + n)
    gp = np.full(n, p1)
    if case == "one_process_shuffled":
        corr = rng.permutation(corr)
    elif case == "two_processes":
        gp = np.where(np.arange(n) % 2, p1, p2)
        corr = rng.permutation(np.concatenate([np.arange(n // 2), np.arange(n // 2)]))
    elif case == "duplicates_sorted":  # still in key order: the no-sort path drops duplicates
        corr = corr.copy()
        corr[5:15] = corr[4]  # the first row wins
    elif case == "negatives_sorted":  # a -1 id first: in key order, dropped as never matching
        corr = corr.copy()
        corr[0] = -1
    elif case == "one_process_sparse_ids":  # too sparse for the lookup table: binary search
        corr = rng.permutation(corr * 10**7)
    elif case == "duplicates_and_negatives_shuffled":
        corr = corr.copy()
        corr[5:15] = corr[4]
        corr[20:25] = -1
        corr = rng.permutation(corr)
    api = _api_frame(corr, gp, rng.integers(0, 10**9, n))
    if case == "no_api":
        api = api.iloc[:0]
    ops_corr = np.concatenate([corr[::3], [10**6, -1]])
    ops_gp = np.concatenate([gp[::3], [p1, p1]])
    ops = pd.DataFrame({"correlation_id": ops_corr.astype(np.int64),
                        "global_pid": ops_gp.astype(np.int64)})
    out, missing = attach_launch(ops, api)
    ref = _reference_join(ops, api)
    for c in ("launch_global_tid", "launch_start_ns", "launch_end_ns"):
        np.testing.assert_array_equal(out[c].to_numpy(), ref[c].to_numpy(), err_msg=c)
    assert list(out["launch_api"].astype(str)) == list(ref["launch_api"].astype(str))
    assert missing == int((ref["launch_start_ns"] == -1).sum())


# ------------------------------------------------------------------------- kernel detail off
def test_kernel_detail_false_skips_only_the_unused_columns(tmp_path):
    path = write_tiny_nsys(tmp_path / "t.sqlite")
    full = load_trace(path)
    lean = load_trace(path, kernel_detail=False)
    detail = ["context_id", "grid_x", "grid_y", "grid_z", "block_x", "block_y",
              "block_z", "registers_per_thread", "smem_static_bytes", "smem_dynamic_bytes",
              "graph_node_id"]
    assert len(detail) == len(KERNEL_DETAIL_COLUMNS)
    assert list(lean.kernels.columns) == C.KERNELS.names  # still the full contract
    for c in detail:
        assert (lean.kernels[c] == -1).all(), c
    assert (full.kernels["grid_x"] != -1).any()
    rest = [c for c in C.KERNELS.names if c not in detail]
    pd.testing.assert_frame_equal(lean.kernels[rest], full.kernels[rest])
    assert (lean.kernels["stream_id"] >= 0).all()  # read: the timeline's lanes are per stream
    assert lean.meta.extra.get("kernel_detail") is False
    assert "kernel_detail" not in full.meta.extra
    pd.testing.assert_frame_equal(lean.api, full.api)


def test_analyze_reads_the_kernel_streams_and_draws_a_lane_per_stream(tmp_path):
    """Kernels on two streams of one GPU: the whole-run timeline of ``analyze`` (which loads
    without the kernel detail) has a lane for each stream, the prefetched read included."""
    from nsys_diag.app.analyze import analyze_command

    import json

    from nsys_diag.app.analyze import analyze_command

    path = write_tiny_nsys(tmp_path / "t.sqlite")
    con = sqlite3.connect(path)
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET streamId = 13 WHERE correlationId = 104")
    con.commit()
    con.close()
    lean = load_trace(path, kernel_detail=False)
    assert set(lean.kernels["stream_id"].tolist()) == {7, 13}
    out = tmp_path / "r.json"
    analyze_command(str(path), html_out=str(tmp_path / "r.html"), json_out=str(out))
    lanes = json.loads(out.read_text())["timeline_lanes"]["lanes"]
    by_stream = {ln["stream_id"]: ln for ln in lanes}
    assert -1 not in by_stream  # no "stream not read" lane
    assert by_stream[13]["ops"] == 1 and by_stream[13]["class_ms"]  # the kernel on stream 13
    assert by_stream[7]["ops"] >= 1


DETAIL_READERS = {
    "inventory.py": "inspect loads the full kernel rows",
    "roofline/ncu_join.py": "analyze --ncu loads the kernel detail (launch configs)",
    "kernels/gpu_fill.py": "reads the launch-shape sample (loaders/nsys_launch_shapes.py)",
    "diagnosis/program.py": "reads the launch-shape sample (loaders/nsys_launch_shapes.py)",
    "replay/model.py": "joins the kernels' context ids read for the replayed windows "
                       "(loaders/nsys_replay.py) where they are -1",
    "replay/analysis.py": "refuses to replay kernels whose context ids were not read"}
"""Analyses allowed to read ``KERNEL_DETAIL_FRAME_COLUMNS`` (paths under ``nsys_diag/analyses``),
and why they get them."""


def test_no_analysis_reads_a_column_that_analyze_skips():
    """``analyze`` loads with ``kernel_detail=False``: the skipped kernel columns hold -1, so no
    analysis (in any subpackage) may read them (remove a column from KERNEL_DETAIL_COLUMNS before
    using it), except those of ``DETAIL_READERS``, whose callers load them."""
    from pathlib import Path

    from nsys_diag.loaders.nsys_cuda import KERNEL_DETAIL_FRAME_COLUMNS

    src = Path(__file__).resolve().parents[2] / "nsys_diag" / "analyses"
    files = {p.relative_to(src).as_posix(): p for p in src.rglob("*.py")}
    assert "timeline/lanes.py" in files and set(DETAIL_READERS) <= set(files)
    used = {(name, c) for name, p in files.items() for c in KERNEL_DETAIL_FRAME_COLUMNS
            if c in p.read_text(encoding="utf-8") and name not in DETAIL_READERS}
    assert not used, f"analyses read columns that analyze does not load: {sorted(used)}"


@pytest.mark.parametrize("with_ncu", [False, True])
def test_analyze_loads_the_launch_configs_only_with_ncu(tmp_path, with_ncu):
    from nsys_diag.app.analyze import load_for_analysis
    from nsys_diag.model.options import AnalyzeOptions
    from nsys_diag.synth.ncu import write_ncu_csv

    path = write_tiny_nsys(tmp_path / "t.sqlite")
    ncu = str(write_ncu_csv(tmp_path / "k.csv")) if with_ncu else None
    b = load_for_analysis(str(path), AnalyzeOptions(ncu_path=ncu))
    assert ((b.kernels["grid_x"] > 0).all() if with_ncu else (b.kernels["grid_x"] == -1).all())
    assert b.meta.extra.get("kernel_detail", True) is with_ncu


@pytest.mark.parametrize("values", [
    [1, 2.5, None, 7],            # INTEGER + REAL + NULL: read uncast
    [3, "4.5", None, "x"],        # TEXT values: back to the type-stable SQL
    [None, None, None, None],     # all NULL
])
def test_plain_float_fast_path_equals_typed_sql(tmp_path, monkeypatch, values):
    pytest.importorskip("adbc_driver_sqlite")
    path = tmp_path / "f.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")
    con.execute("CREATE TABLE t (k INTEGER, v)")
    con.executemany("INSERT INTO t VALUES (?, ?)", list(enumerate(values * 500)))
    con.commit()
    con.close()
    cols = [Col("k", "int"), Col("v", "float")]
    with NsysDb(path) as db:
        fast = db.read("t", cols)
        assert db.reader == "adbc"
    monkeypatch.setenv("NSYS_DIAG_NO_ADBC", "1")
    with NsysDb(path) as db:
        slow = db.read("t", cols)
    assert fast["v"].dtype == np.float64
    np.testing.assert_array_equal(fast["v"], slow["v"])  # NaN == NaN here
    np.testing.assert_array_equal(fast["k"], slow["k"])
    assert int(np.isnan(fast["v"]).sum()) == 500 * sum(v is None for v in values)


def test_sanity_fast_check_never_hides_an_invalid_row():
    """``sanity._all_valid`` (min/max shortcut) is True only when ``invalid_mask`` drops nothing."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from nsys_diag.loaders import sanity

    times = st.one_of(st.integers(-10**12, 10**12), st.sampled_from(
        [sanity.NULL_TIME, sanity.HARD_LIMIT_NS + 1, -sanity.HARD_LIMIT_NS - 1,
         sanity.MAX_OP_DURATION_NS + 5]))

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.tuples(times, times), min_size=1, max_size=20),
           st.sampled_from(["kernels", "nvtx"]),
           st.one_of(st.none(), st.tuples(st.integers(-10**12, 0), st.integers(1, 10**12))))
    def check(rows, name, window):
        df = pd.DataFrame({"start_ns": np.array([r[0] for r in rows], np.int64),
                           "end_ns": np.array([r[1] for r in rows], np.int64)})
        if sanity._all_valid(name, df, window):
            assert not sanity.invalid_mask(name, df, window).any()

    check()
    clean = pd.DataFrame({"start_ns": np.arange(0, 100, 10), "end_ns": np.arange(5, 105, 10)})
    assert sanity._all_valid("kernels", clean, None)  # the shortcut does fire on clean frames


# ------------------------------------------------------------------------------ distinct ids
def test_distinct_ints_of_a_constant_view_is_its_one_value():
    from nsys_diag.loaders.nsys_strings import constant_view, distinct_ints

    const = constant_view(np.full(1000, 7, np.int64))
    assert const.strides == (0,)
    assert distinct_ints(const).tolist() == [7]
    mixed = np.array([5, 3, 5, 9, 3], np.int64)
    assert distinct_ints(mixed).tolist() == [5, 3, 9]  # first appearance, as pd.unique
    assert distinct_ints(np.zeros(0, np.int64)).tolist() == []


# ------------------------------------------------------------ constant device / process columns
def _kernel_ids(path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """deviceId, globalPid and streamId of every kernel row, in rowid order, as the plain read
    gives them."""
    with NsysDb(path) as db:
        d = db.read("CUPTI_ACTIVITY_KIND_KERNEL", [Col("deviceId", "int"), Col("globalPid", "int"),
                                                   Col("streamId", "int")])
    return d.ints("deviceId"), d.ints("globalPid"), d.ints("streamId")


def _read_kernel_frame(path):
    from nsys_diag.loaders.nsys_cuda import read_kernels
    from nsys_diag.loaders.nsys_strings import StringTable

    with NsysDb(path) as db:
        return read_kernels(db, StringTable(db), detail=False)


@pytest.mark.parametrize("change", [None, 'SET "deviceId" = 1', 'SET "globalPid" = NULL',
                                    'SET "globalPid" = "globalPid" + 1', 'SET "streamId" = 99'])
def test_constant_kernel_columns_are_read_in_the_where_and_checked(tmp_path, change):
    """One GPU, one process, one stream: deviceId/globalPid/streamId come from the WHERE as
    stride-0 views; a row the sampled rows miss (rowid 2) that differs makes the read per row
    again — values exact."""
    from nsys_diag import synth

    path = synth.write_nsys_sqlite(tmp_path / "k.sqlite", synth.preset("healthy_tc", steps=3))
    if change:
        con = sqlite3.connect(path)
        con.execute(f'UPDATE CUPTI_ACTIVITY_KIND_KERNEL {change} WHERE rowid = 2')
        con.commit()
        con.close()
    dev, gpid, stream = _kernel_ids(path)
    k = _read_kernel_frame(path)
    np.testing.assert_array_equal(k["device_id"].to_numpy(), dev)
    np.testing.assert_array_equal(k["global_pid"].to_numpy(), gpid)
    np.testing.assert_array_equal(k["stream_id"].to_numpy(), stream)
    columns = {"deviceId": "device_id", "globalPid": "global_pid", "streamId": "stream_id"}
    if change is None:
        assert all(k[c].to_numpy().strides == (0,) for c in columns.values())
    else:
        changed = next(c for name, c in columns.items() if name in change)
        assert k[changed].to_numpy().strides != (0,)


def test_a_constant_column_is_found_beside_one_that_varies():
    """The sampled rows are compared column by column: a second stream does not cost the
    device and process their WHERE test."""
    from nsys_diag.loaders.nsys_specs import kernel_constants

    path = "sample_traces/multi_gpu.sqlite"
    with NsysDb(path) as db:
        consts = kernel_constants(db, db.columns("CUPTI_ACTIVITY_KIND_KERNEL"))
    dev, gpid, stream = _kernel_ids(path)
    assert "deviceId" not in consts and "streamId" not in consts  # two GPUs, two streams
    assert len(np.unique(stream)) > 1
    assert consts.get("globalPid") == (int(gpid[0]) if len(np.unique(gpid)) == 1 else None)


def test_several_devices_are_read_per_row():
    path = "sample_traces/multi_gpu.sqlite"
    dev, _, _ = _kernel_ids(path)
    assert len(np.unique(dev)) > 1
    with NsysDb(path) as db:
        from nsys_diag.loaders.nsys_specs import kernel_constants

        assert "deviceId" not in kernel_constants(db, db.columns("CUPTI_ACTIVITY_KIND_KERNEL"))
    np.testing.assert_array_equal(_read_kernel_frame(path)["device_id"].to_numpy(), dev)


@pytest.mark.parametrize("case", ["all_matched", "some_unmatched", "empty_name", "many_names",
                                  "none_matched"])
def test_launch_api_fast_path_equals_the_general_categorical(case):
    """``launch_api`` built in the API codes' small type equals the int64 general path exactly:
    categories (values and dtype), codes and the dtype of the codes."""
    from nsys_diag.loaders.nsys_cuda import _launch_api, _used_categorical

    rng = np.random.default_rng(len(case))
    labels = [f"api{i}" for i in range(300 if case == "many_names" else 6)]
    if case == "empty_name":
        labels[2] = ""
    api_codes = categorical(rng.integers(0, len(labels) - 1, 500), labels).codes
    n = 400
    matched = np.ones(n, bool) if case == "all_matched" else rng.random(n) < 0.8
    if case == "none_matched":
        matched[:] = False
    src = rng.integers(0, 500, int(matched.sum()))
    general = np.full(n, -1, np.int64)
    general[matched] = api_codes[src]
    ref = _used_categorical(general, labels)
    got = _launch_api(api_codes, src, matched, labels)
    if got is None:  # the fast path declines only where "" would merge with a name
        assert case == "empty_name"
        return
    assert list(got.categories) == list(ref.categories)
    assert got.categories.dtype == ref.categories.dtype
    np.testing.assert_array_equal(got.codes, ref.codes)
    assert got.codes.dtype == ref.codes.dtype
