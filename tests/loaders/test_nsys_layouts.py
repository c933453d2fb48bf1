"""The nsys loader on small hand-built exports: one test per layout trap of NSYS_SQLITE.md."""
from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from nsys_diag.loaders import load_trace
from nsys_diag.loaders.nsys_meta import parse_environment
from nsys_diag.loaders.nsys_sqlite import load_nsys_sqlite
from nsys_diag.model.errors import InputError, SchemaError
from tiny_nsys import DURATION, GPID, GTID, GTID2, write_plain_sqlite, write_tiny_nsys


@pytest.fixture
def tiny(tmp_path):
    def make(**kw):
        return load_trace(write_tiny_nsys(tmp_path / "t.sqlite", **kw))
    return make


def codes(b):
    return {w.code: w for w in b.warnings}


def test_kernels_names_geometry_and_launch_join(tiny):
    b = tiny()
    k = b.kernels
    assert len(k) == 3  # the eventClass-67 duplicate of call 101 does not duplicate kernel 101
    first = k.iloc[0]
    assert first["name"].startswith("void gemm_kernel<float, 128>") and first["short_name"] == "gemm_kernel"
    assert (first["grid_x"], first["block_x"], first["registers_per_thread"]) == (132, 256, 128)
    assert (first["smem_static_bytes"], first["smem_dynamic_bytes"]) == (1024, 49152)
    assert (first["launch_api"], first["launch_start_ns"], first["launch_end_ns"]) == ("cudaLaunchKernel", 3000, 3500)
    assert first["launch_global_tid"] == GTID and first["pid"] == 4242 and first["global_pid"] == GPID
    # Launched through the driver API; graph node id kept.
    assert k.iloc[1]["launch_api"] == "cuLaunchKernel_v2" and k.iloc[1]["graph_node_id"] == 77
    assert first["graph_node_id"] == -1
    # Its call is not in the export: -1 / '' and a warning counting it.
    assert (k.iloc[2]["launch_start_ns"], k.iloc[2]["launch_api"]) == (-1, "")
    assert codes(b)["unmatched_launches"].count == 2  # 1 kernel + 1 device-level sync


def test_api_classes_and_suffixes(tiny):
    b = tiny()
    names = dict(zip(b.api["correlation_id"], b.api["name"].astype(str)))
    assert names == {101: "cudaLaunchKernel", 102: "cudaMemcpyAsync", 103: "cudaStreamSynchronize",
                     104: "cuLaunchKernel_v2", 105: "cudaLaunchKernelExC"}
    assert dict(zip(b.api["correlation_id"], b.api["api_class"]))[104] == "driver"
    assert (b.api["tid"] == 4243).all() and (b.api["pid"] == 4242).all()


def test_memcpy_and_sync(tiny):
    b = tiny()
    m = b.memcpy.iloc[0]
    assert (m["bytes"], m["copy_kind"], m["src_kind"], m["dst_kind"], m["copy_count"]) == \
        (4194304, "D2H", "device", "pinned", 1)
    assert list(b.sync["stream_id"]) == [7, -1]
    assert list(b.sync["sync_kind"]) == ["stream", "unknown"]


def test_sync_type_fallback_only_from_schema_3_25(tiny):
    # 3.25 writes syncType as the enum says: the call-less device row (syncType 4) → context.
    assert list(tiny(schema="3.25.0").sync["sync_kind"]) == ["stream", "context"]
    # Older numbering is unreliable (§2.6): the API name wins even if syncType says otherwise.
    assert list(tiny(schema="3.16.1", sync_type_stream=2).sync["sync_kind"]) == ["stream", "unknown"]


def test_nvtx_ranges_domains_text_and_open_ends(tiny):
    b = tiny()
    n = b.nvtx.set_index("text")
    assert set(n.index) == {"forward", "layer0", "open", "neg", "ncclKernel", "handoff"}
    assert n.loc["forward", "domain"] == "" and n.loc["forward", "payload"] == 7.0
    assert n.loc["layer0", "domain"] == "MyLib" and n.loc["layer0", "payload"] == 2.5  # textId
    assert n.loc["ncclKernel", "domain"] == "domain#2"  # no create row: never the default domain
    assert n.loc["neg", "start_ns"] == -2000  # negative times kept
    assert not n.loc["open", "closed"] and n.loc["open", "end_ns"] == DURATION
    assert n.loc["forward", "closed"] and n.loc["forward", "end_ns"] == 900000
    assert n.loc["handoff", "kind"] == "start_end" and n.loc["handoff", "end_global_tid"] == GTID2
    assert n.loc["forward", "end_global_tid"] == GTID
    assert codes(b)["unterminated_nvtx"].count == 1
    marks = b.nvtx_marks
    assert list(marks["text"]) == ["mark-here"] and marks.iloc[0]["ts_ns"] == 950000


def test_non_utf8_text_is_replaced_not_fatal(tiny):
    b = tiny(bad_utf8=True)
    assert "caf\ufffd-range" in set(b.nvtx["text"].astype(str))


def test_post_processor_columns_ignored(tiny):
    b = tiny(extra_columns=True)
    assert len(b.kernels) == 3 and "kernel_name" not in b.kernels.columns


def test_gpu_metrics_join_units_and_range_checks(tiny):
    b = tiny(with_metrics=True)
    gm = b.gpu_metrics
    assert set(gm["metric"]) == {"GPC Clock Frequency [MHz]", "SMs Active [Throughput %]",
                                 "Tensor Active [Throughput %]"}
    assert (gm["device_id"] == 0).all()
    clock = gm[gm["metric"] == "GPC Clock Frequency [MHz]"]["value"]
    assert clock.tolist() == [1755.0, 1755.0]  # stored in Hz under a [MHz] label → rescaled
    tensor = gm[gm["metric"] == "Tensor Active [Throughput %]"]["value"]
    assert tensor.tolist() == [80.0]  # 182 % dropped
    w = codes(b)
    assert w["gpu_metric_out_of_range"].count == 1 and w["gpu_metric_units"].count == 2


def test_gpu_memory_events(tiny):
    b = tiny(with_memory=True)
    assert list(b.gpu_memory["op"]) == ["alloc", "free"]
    assert list(b.gpu_memory["bytes"]) == [1 << 20, 1 << 20] and (b.gpu_memory["pid"] == 4242).all()


def test_gpu_table_full_layout(tiny):
    g = tiny().gpus.iloc[0]
    assert (g["name"], g["chip_name"], g["sm_count"], g["clock_hz"]) == ("NVIDIA H200", "GH100", 132, 1980000000)
    assert (g["cc_major"], g["cc_minor"]) == (9, 0)  # computeMajor/Minor, not smMajor/smMinor (9.2)
    assert g["memory_bandwidth_bytes_per_s"] == 4.8e12 and g["total_memory_bytes"] == 150000000000


def test_gpu_table_oldest_layout_mib_khz_unknown_bandwidth(tiny):
    b = tiny(gpu_layout="cuda_gpu_mib", meta_table="")
    assert len(b.gpus) == 1  # one row per (process, device) in the table → one per device
    g = b.gpus.iloc[0]
    assert g["total_memory_bytes"] == 32510 * 2**20 and g["clock_hz"] == 1_380_000_000
    assert np.isnan(g["memory_bandwidth_bytes_per_s"]) and (g["cc_major"], g["cc_minor"]) == (7, 0)


def test_gpu_table_transitional_layout_bytes_kbps_and_reduced_table(tiny):
    g = tiny(gpu_layout="cuda_gpu_bytes", meta_table="").gpus.iloc[0]
    assert g["total_memory_bytes"] == 10495524864 and g["clock_hz"] == 1_740_000_000
    assert g["memory_bandwidth_bytes_per_s"] == 760_080_000_000.0
    assert g["bus_location"] == "0000:65:00.0" and g["sm_count"] == 68


def test_no_gpu_table_derives_rows_from_kernels(tiny):
    b = tiny(gpu_layout="none")
    assert b.gpus["device_id"].tolist() == [0] and b.gpus.iloc[0]["name"] == ""
    assert codes(b)["no_gpu_info"].count == 1


@pytest.mark.parametrize("table", ["META_DATA_EXPORT", "EXPORT_META_DATA"])
def test_both_metadata_tables(tiny, table):
    b = tiny(meta_table=table)
    assert (b.meta.nsys_version, b.meta.schema_version) == ("2024.6.2.25", "3.16.1")
    assert b.meta.capture_end_ns == DURATION and b.meta.session_start_utc_ns == 1767225600000000000


def test_no_metadata_capture_end_from_events(tiny):
    b = tiny(meta_table="")
    assert b.meta.nsys_version == "" and b.meta.extra["era"].startswith("pre-2022")
    assert b.meta.capture_end_ns == 8_000_000  # largest event time: the open range's start
    assert b.meta.session_start_utc_ns is None


def test_lazily_absent_tables(tiny):
    b = tiny(with_nvtx=False)
    assert len(b.nvtx) == 0 and len(b.memset) == 0 and len(b.gpu_metrics) == 0
    assert "no_nvtx" in codes(b)


def test_private_fields_are_kept_but_separate(tiny):
    b = tiny()
    assert b.meta.environment["RANK"] == "0"
    assert b.meta.host["Hostname"] == "tiny-host"


def test_environment_parsing_both_separators():
    assert parse_environment("A=1;B=x;y;C=") == {"A": "1", "B": "x;y", "C": ""}
    assert parse_environment("A=1\x00B=2\x00") == {"A": "1", "B": "2"}


def test_not_an_nsys_export(tmp_path):
    with pytest.raises(SchemaError, match="not an Nsight Systems export.*StringIds"):
        load_nsys_sqlite(write_plain_sqlite(tmp_path / "plain.sqlite"))
    empty_db = tmp_path / "empty.sqlite"
    con = sqlite3.connect(empty_db)
    con.execute("CREATE TABLE x (a)")
    con.execute("DROP TABLE x")
    con.commit()
    con.close()
    with pytest.raises(SchemaError):
        load_nsys_sqlite(empty_db)


def test_truncated_and_corrupt(tmp_path):
    src = write_tiny_nsys(tmp_path / "t.sqlite")
    data = src.read_bytes()
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="truncated"):
        load_trace(cut)
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(data[:100] + bytes(len(data) - 100))  # header intact, every page zeroed
    with pytest.raises(InputError, match="corrupt|malformed|SQLite"):
        load_trace(bad)


def test_sparse_string_ids(tmp_path):
    path = write_tiny_nsys(tmp_path / "t.sqlite")
    con = sqlite3.connect(path)
    con.execute("DELETE FROM StringIds WHERE id = 4")  # a rewritten file with a dangling id
    con.commit()
    con.close()
    b = load_trace(path)
    assert "<string #4>" in set(b.kernels["short_name"])
    assert codes(b)["unresolved_strings"].count == 1


def test_correlation_ids_repeat_across_processes(tmp_path):
    """The same correlationId in two processes joins each kernel to its own process's call."""
    path = write_tiny_nsys(tmp_path / "t.sqlite")
    other_gpid = (1 << 48) | (5000 << 24)
    con = sqlite3.connect(path)
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, "
                "correlationId, nameId, returnValue) VALUES (7777, 7800, 0, ?, 101, 1, 0)",
                (other_gpid | 5001,))
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, "
                "correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY, "
                "gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory) "
                "VALUES (8000, 9000, 1, 2, 7, 101, ?, 3, 4, 1, 1, 1, 1, 1, 1, 1, 0, 0)", (other_gpid,))
    con.commit()
    con.close()
    b = load_trace(path)
    k = b.kernels
    mine = k[(k["correlation_id"] == 101)].set_index("pid")
    assert mine.loc[4242, "launch_start_ns"] == 3000 and mine.loc[5000, "launch_start_ns"] == 7777
    assert mine.loc[5000, "launch_api"] == "cudaMemcpyAsync"
    assert len(b.processes) == 2


def test_event_tables_without_stringids_still_load(tmp_path):
    path = write_tiny_nsys(tmp_path / "t.sqlite")
    con = sqlite3.connect(path)
    con.execute("DROP TABLE StringIds")
    con.commit()
    con.close()
    b = load_trace(path)
    assert len(b.kernels) == 3 and b.kernels.iloc[0]["name"] == "<string #3>"
    assert codes(b)["unresolved_strings"].count > 0
