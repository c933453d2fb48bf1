"""The nsys loader on the real exports in ../shared/traces/nsys.

Expected numbers are recomputed here with independent sqlite3 queries wherever possible, so a
test fails if the loader drops, duplicates or mis-joins rows.
"""
from __future__ import annotations

import hashlib
import os
import re
import sqlite3

import numpy as np
import pytest

from conftest import shared_trace
from nsys_diag.loaders import load_trace
from nsys_diag.model import contracts as C
from nsys_diag.model.bundle import TraceBundle

pytestmark = pytest.mark.realtrace

TRACES = {
    "fastvideo": "nsys/fastvideo_train_2xh100_2026.2.sqlite",
    "nvfuser": "nsys/nvfuser_matmul_h200_2024.6.sqlite",
    "saxpy": "nsys/saxpy_mpi_a100_2022.2.sqlite",
    "mordred": "nsys/mordred_rtx6000_2021.sqlite",
    "centerformer": "nsys/centerformer_nvtx_only_2022.4.sqlite",
    "dynamicvit": "nsys/dynamicvit_no_cuda_tables.sqlite",
}
CONTRACT_OF = {"kernels": C.KERNELS, "memcpy": C.MEMCPY, "memset": C.MEMSET, "sync": C.SYNC,
               "api": C.API, "nvtx": C.NVTX, "nvtx_marks": C.NVTX_MARKS, "threads": C.THREADS,
               "processes": C.PROCESSES, "gpus": C.GPUS, "gpu_metrics": C.GPU_METRICS,
               "gpu_memory": C.GPU_MEMORY}

_cache: dict[str, TraceBundle] = {}


def bundle(key: str) -> TraceBundle:
    path = shared_trace(TRACES[key])
    if key not in _cache:
        _cache[key] = load_trace(path)
    return _cache[key]


def sql(key: str, query: str, params=()):
    con = sqlite3.connect(f"file:{shared_trace(TRACES[key])}?mode=ro&immutable=1", uri=True)
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    try:
        return con.execute(query, params).fetchall()
    finally:
        con.close()


def tables(key: str) -> set[str]:
    return {r[0] for r in sql(key, "SELECT name FROM sqlite_master WHERE type='table'")}


def count(key: str, table: str, where: str = "") -> int:
    if table not in tables(key):
        return 0
    return sql(key, f"SELECT count(*) FROM {table} {('WHERE ' + where) if where else ''}")[0][0]


# ------------------------------------------------------------------------------- every trace
@pytest.mark.parametrize("key", list(TRACES))
def test_frames_follow_the_contracts(key):
    b = bundle(key)
    for name, contract in CONTRACT_OF.items():
        df = getattr(b, name)
        assert list(df.columns) == contract.names, name
        for col in contract.columns:
            dtype = str(df[col.name].dtype)
            want = {"string": ("string", "str")}.get(col.dtype, (col.dtype,))
            assert dtype in want, (name, col.name, dtype)


@pytest.mark.parametrize("key", list(TRACES))
def test_row_counts_match_independent_queries(key):
    b = bundle(key)
    assert len(b.kernels) == count(key, "CUPTI_ACTIVITY_KIND_KERNEL")
    assert len(b.memcpy) == count(key, "CUPTI_ACTIVITY_KIND_MEMCPY")
    assert len(b.memset) == count(key, "CUPTI_ACTIVITY_KIND_MEMSET")
    assert len(b.sync) == count(key, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
    assert len(b.api) == count(key, "CUPTI_ACTIVITY_KIND_RUNTIME", "eventClass IN (0, 1)")
    assert len(b.nvtx) == count(key, "NVTX_EVENTS", "eventType IN (59, 60, 70, 71)")
    assert len(b.nvtx_marks) == count(key, "NVTX_EVENTS", "eventType = 34")
    assert b.meta.tables == {t: count(key, t) for t in tables(key)}


@pytest.mark.parametrize("key", list(TRACES))
def test_input_is_byte_identical_after_loading(key, tmp_path):
    path = shared_trace(TRACES[key])
    before = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    load_trace(path)
    after = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    assert before == after
    # A writable copy: still unchanged, and no journal/WAL/SHM files appear beside it.
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes(path.read_bytes())
    digest, mode = hashlib.sha256(copy.read_bytes()).hexdigest(), copy.stat().st_mode
    mtime = copy.stat().st_mtime_ns
    load_trace(copy)
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == digest
    assert (copy.stat().st_mtime_ns, copy.stat().st_mode) == (mtime, mode)
    assert sorted(os.listdir(tmp_path)) == ["copy.sqlite"]


@pytest.mark.parametrize("key", ["fastvideo", "nvfuser", "saxpy", "mordred"])
def test_kernel_names_resolved_from_stringids(key):
    b = bundle(key)
    want = sql(key, "SELECT d.value, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                    "JOIN StringIds d ON d.id = k.demangledName JOIN StringIds s ON s.id = k.shortName "
                    "ORDER BY k.rowid")
    assert list(zip(b.kernels["name"].astype(str), b.kernels["short_name"].astype(str))) == want


@pytest.mark.parametrize("key", ["fastvideo", "nvfuser", "saxpy", "mordred"])
def test_launch_join_matches_sql_join_within_process(key):
    """Same (kernel, call) pairs as NVIDIA's join: correlationId + process, eventClass 0/1."""
    b = bundle(key)
    rows = sql(key, """
        SELECT k.rowid, r.start, r.globalTid FROM CUPTI_ACTIVITY_KIND_KERNEL k
        JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
         AND k.globalPid = (r.globalTid & -16777216) AND r.eventClass IN (0, 1)
        ORDER BY k.rowid""")
    assert int((b.kernels["launch_start_ns"] >= 0).sum()) == len(rows)
    order = [r[0] for r in sql(key, "SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid")]
    pos = {rowid: i for i, rowid in enumerate(order)}
    for rowid, start, gtid in rows:
        assert b.kernels["launch_start_ns"].iat[pos[rowid]] == start
        assert b.kernels["launch_global_tid"].iat[pos[rowid]] == gtid


@pytest.mark.parametrize("key", ["fastvideo", "nvfuser", "saxpy", "mordred"])
def test_runtime_suffix_stripped_driver_names_kept(key):
    b = bundle(key)
    runtime = b.api.loc[b.api["api_class"] == "runtime", "name"].astype(str).unique()
    assert runtime.size and not any(re.search(r"_v\d{4,5}$", n) for n in runtime)
    raw_driver = {r[0] for r in sql(key, "SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
                                         "JOIN StringIds s ON s.id = r.nameId WHERE r.eventClass = 1")}
    assert set(b.api.loc[b.api["api_class"] == "driver", "name"].astype(str).unique()) == raw_driver


@pytest.mark.parametrize("key", list(TRACES))
def test_global_ids_decode_to_process_table(key):
    b = bundle(key)
    if "PROCESSES" in tables(key) and len(b.processes):
        known = dict(sql(key, "SELECT pid, name FROM PROCESSES"))
        for pid, name in zip(b.processes["pid"], b.processes["name"]):
            assert known[pid] == name
    for frame in (b.kernels, b.api, b.nvtx):
        if len(frame):
            assert ((frame["global_pid"].to_numpy() >> 24) & 0xFFFFFF == frame["pid"].to_numpy()).all()


# ------------------------------------------------------------------------------ per trace
def test_fastvideo_two_devices_two_processes_and_time_cut_join():
    b = bundle("fastvideo")
    assert len(b.kernels) == 4010
    assert b.kernels.groupby("device_id").size().to_dict() == dict(
        sql("fastvideo", "SELECT deviceId, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1"))
    assert sorted(b.kernels["device_id"].unique()) == [0, 1]
    assert len(b.processes) == 2 and set(b.processes["name"]) == {"python3"}
    matched = int((b.kernels["launch_start_ns"] >= 0).sum())
    assert matched == 3986
    assert (b.kernels.loc[b.kernels["launch_start_ns"] < 0, "launch_api"] == "").all()
    w = {x.code: x for x in b.warnings}
    assert w["unmatched_launches"].count >= 4010 - 3986
    assert "24 of 4,010 kernels" in w["unmatched_launches"].message
    # No GPU table in this rewritten file: one row per device that ran work, with a warning.
    assert b.gpus["device_id"].tolist() == [0, 1] and (b.gpus["sm_count"] == -1).all()
    assert w["no_gpu_info"].count == 2
    assert b.meta.nsys_version == "2026.2.1.210" and b.meta.schema_version == "3.25.0"
    assert b.meta.capture_end_ns == sql("fastvideo", "SELECT duration FROM ANALYSIS_DETAILS")[0][0]
    assert b.meta.session_start_utc_ns == sql(
        "fastvideo", "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME")[0][0]


def test_fastvideo_nvtx_mixed_text_and_domain_without_create_row():
    b = bundle("fastvideo")
    want = dict(sql("fastvideo", "SELECT coalesce(s.value, n.text), count(*) FROM NVTX_EVENTS n "
                                 "LEFT JOIN StringIds s ON s.id = n.textId "
                                 "WHERE n.eventType IN (59, 60) GROUP BY 1"))
    assert b.nvtx["text"].astype(str).value_counts().to_dict() == want
    by_domain = b.nvtx["domain"].value_counts().to_dict()
    n_dom1 = count("fastvideo", "NVTX_EVENTS", "domainId = 1 AND eventType IN (59, 60)")
    assert by_domain["domain#1"] == n_dom1 == 462
    nccl = b.nvtx[b.nvtx["domain"] == "domain#1"]["text"].astype(str)
    assert {"ncclSend", "ncclRecv"} <= set(nccl)


def test_fastvideo_sync_kind_from_correlated_api():
    b = bundle("fastvideo")
    want = dict(sql("fastvideo", """
        SELECT s.value, count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION y
        JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = y.correlationId
         AND y.globalPid = (r.globalTid & -16777216) AND r.eventClass IN (0, 1)
        JOIN StringIds s ON s.id = r.nameId GROUP BY 1"""))
    kinds = b.sync["sync_kind"].value_counts().to_dict()
    assert kinds["stream_wait"] == sum(v for k, v in want.items() if "StreamWaitEvent" in k)
    assert kinds["stream"] == sum(v for k, v in want.items() if "StreamSynchronize" in k)
    assert kinds["event"] == sum(v for k, v in want.items() if "EventQuery" in k)
    no_stream = count("fastvideo", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "streamId = 4294967295")
    assert int((b.sync["stream_id"] == -1).sum()) == no_stream > 0
    assert (b.sync["stream_id"] != 4294967295).all()


def test_mordred_counts_bytes_kinds_and_old_gpu_table():
    b = bundle("mordred")
    assert (len(b.kernels), len(b.memcpy)) == (12, 188)
    assert int(b.memcpy["bytes"].sum()) == sql("mordred", "SELECT sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY")[0][0]
    kinds = dict(sql("mordred", "SELECT copyKind, count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY 1"))
    assert b.memcpy["copy_kind"].value_counts().to_dict() == {
        {1: "H2D", 2: "D2H", 8: "D2D"}[k]: v for k, v in kinds.items()}
    pageable = count("mordred", "CUPTI_ACTIVITY_KIND_MEMCPY", "srcKind = 0 OR dstKind = 0")
    assert int(((b.memcpy["src_kind"] == "pageable") | (b.memcpy["dst_kind"] == "pageable")).sum()) == pageable
    g = b.gpus.iloc[0]
    assert g["name"] == "Quadro RTX 6000" and g["sm_count"] == 72 and (g["cc_major"], g["cc_minor"]) == (7, 5)
    assert g["clock_hz"] == sql("mordred", "SELECT clockRate FROM TARGET_INFO_GPU")[0][0]
    # No version table before 2022: versions unknown, dated by the install path inside.
    assert b.meta.nsys_version == "" and b.meta.extra["nsys_version_hint"] == "2021.2.1"
    assert b.meta.capture_end_ns >= int(b.kernels["end_ns"].max())
    assert (b.sync["sync_kind"] != "unknown").all()


def test_saxpy_nvtx_domains_text_and_backtrace_duplicates():
    b = bundle("saxpy")
    assert count("saxpy", "NVTX_EVENTS") == 24
    rows = sql("saxpy", "SELECT coalesce(s.value, n.text), n.textId IS NOT NULL FROM NVTX_EVENTS n "
                        "LEFT JOIN StringIds s ON s.id = n.textId WHERE n.eventType = 59 ORDER BY n.rowid")
    assert {r[1] for r in rows} == {0, 1}  # mixed inline text and textId
    assert b.nvtx["text"].astype(str).tolist() == [r[0] for r in rows]
    doms = b.nvtx.groupby("domain", observed=True).size().to_dict()
    assert set(doms) == {"", "MPI"}
    assert set(b.nvtx.loc[b.nvtx["domain"] == "", "text"].astype(str)) == {"saxpy"}
    # eventClass 67 copies dropped: one call per kernel, no duplicated kernels.
    assert len(b.api) == 95 - count("saxpy", "CUPTI_ACTIVITY_KIND_RUNTIME", "eventClass = 67")
    assert (b.kernels["launch_api"] == "cudaLaunchKernel").all() and len(b.kernels) == 5
    # Thread named by NVTX (eventType 39) / ThreadNames; non-UTF-8 bytes in the env table tolerated.
    assert "MPI Rank 0" in set(b.threads["name"])
    assert b.meta.schema_version == "2.9.1" and b.meta.nsys_version == "2022.2.1.31"
    assert b.gpus.iloc[0]["memory_bandwidth_bytes_per_s"] == pytest.approx(1.5552e12)


def test_centerformer_nvtx_only():
    b = bundle("centerformer")
    assert len(b.nvtx) == 1824 and len(b.kernels) == 0 and not b.has_cuda
    assert (b.nvtx["domain"] == "").all()
    names = set(b.nvtx["text"].astype(str))
    assert {"reader", "3D_backbone", "find_centers", "transformer_forward", "bbox_head",
            "post_processing"} <= names
    assert "no_cuda_tables" in {w.code for w in b.warnings}


def test_nvfuser_h200():
    b = bundle("nvfuser")
    assert len(b.kernels) == 19 and b.meta.schema_version == "3.16.1"
    g = b.gpus.iloc[0]
    assert g["chip_name"] == "GH100" and g["sm_count"] == 132 and g["cc_major"] == 9
    assert g["memory_bandwidth_bytes_per_s"] == pytest.approx(4.916736e12)
    assert (b.kernels["launch_start_ns"] >= 0).all()
    assert (b.kernels["launch_start_ns"] <= b.kernels["start_ns"]).all()


def test_dynamicvit_no_cuda_no_nvtx_is_not_an_error():
    b = bundle("dynamicvit")
    assert not b.has_cuda and not b.has_nvtx
    w = {x.code: x for x in b.warnings}
    assert "-t cuda,nvtx,osrt" in w["no_cuda_tables"].hint
    assert "no_nvtx" in w
    assert len(b.gpus) == 1 and b.gpus.iloc[0]["name"] != ""
    assert len(b.threads) > 0


def test_reader_paths_agree(monkeypatch):
    """The sqlite3 fallback gives frames identical to the Arrow (ADBC) path."""
    path = shared_trace(TRACES["fastvideo"])
    fast = load_trace(path)
    monkeypatch.setenv("NSYS_DIAG_NO_ADBC", "1")
    slow = load_trace(path)
    assert slow.meta.extra["reader"] == "sqlite3"
    for name in CONTRACT_OF:
        a, b_ = getattr(fast, name), getattr(slow, name)
        assert a.shape == b_.shape, name
        for col in a.columns:
            x, y = a[col].astype(str).to_numpy() if a[col].dtype.name == "category" else a[col].to_numpy(), \
                b_[col].astype(str).to_numpy() if b_[col].dtype.name == "category" else b_[col].to_numpy()
            assert np.array_equal(x, y) or (x.dtype.kind == "f" and np.allclose(x, y, equal_nan=True)), \
                (name, col)
