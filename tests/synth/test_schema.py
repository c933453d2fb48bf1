"""Schema variants (nsys_diag.synth.schema) as written: table and column layouts per version,
asserted against NSYS_SQLITE.md (literal column lists below) and, when ../shared/traces is
present, against the real exports themselves."""
from __future__ import annotations


import pytest

from conftest import shared_trace
from nsys_diag import synth
from synth_sink import open_ro, query, table_cols, table_sql, write_sink


@pytest.fixture(scope="module")
def sink(tmp_path_factory):
    """kitchen_sink written in every schema variant: {schema: path}."""
    return write_sink(tmp_path_factory.mktemp("sink"))


# ============================================================================ schema layouts
# CUPTI_ACTIVITY_KIND_KERNEL, 3.25.0 order (NSYS_SQLITE.md §2.1); older layouts drop columns.
KERNEL_40 = [
    "start", "end", "deviceId", "contextId", "greenContextId", "streamId", "correlationId",
    "globalPid", "demangledName", "shortName", "mangledName", "launchType", "cacheConfig",
    "registersPerThread", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
    "staticSharedMemory", "dynamicSharedMemory", "localMemoryPerThread", "localMemoryTotal",
    "gridId", "sharedMemoryExecuted", "graphNodeId", "sharedMemoryLimitConfig",
    "qmdBulkReleaseDone", "qmdPreexitDone", "qmdLastCtaDone", "graphId", "clusterX", "clusterY",
    "clusterZ", "clusterSchedulingPolicy", "maxPotentialClusterSize", "maxActiveClusters",
    "sharedMemoryRequestedPercentage", "tensorSizeMinusOneElements"]
KERNEL_28 = KERNEL_40[:28]
KERNEL_27 = [c for c in KERNEL_28 if c != "greenContextId"]
KERNEL_26 = [c for c in KERNEL_27 if c != "mangledName"]
KERNEL_25 = [c for c in KERNEL_26 if c != "sharedMemoryLimitConfig"]
KERNEL_BY_SCHEMA = {"2020": KERNEL_25, "2021": KERNEL_26, "2022.2": KERNEL_27, "2024.6": KERNEL_28,
                    "2026.2": KERNEL_40}
NVTX_19 = ["start", "end", "eventType", "rangeId", "category", "color", "text", "globalTid",
           "endGlobalTid", "textId", "domainId", "uint64Value", "int64Value", "doubleValue",
           "uint32Value", "int32Value", "floatValue", "jsonTextId", "jsonText"]


@pytest.mark.parametrize("schema", synth.ALL_SCHEMAS)
def test_kernel_and_nvtx_layouts(sink, schema):
    con = open_ro(sink[schema])
    assert table_cols(con, "CUPTI_ACTIVITY_KIND_KERNEL") == KERNEL_BY_SCHEMA[schema]
    assert len(KERNEL_BY_SCHEMA[schema]) == {"2020": 25, "2021": 26, "2022.2": 27, "2024.6": 28,
                                             "2026.2": 40}[schema]
    nvtx = NVTX_19 + (["binaryData"] if schema in ("2024.6", "2026.2") else [])
    assert table_cols(con, "NVTX_EVENTS") == nvtx


def test_version_specific_columns(sink):
    c20, c21, c22, c24, c26 = (open_ro(sink[s]) for s in synth.ALL_SCHEMAS)
    assert "callchainId" not in table_cols(c20, "CUPTI_ACTIVITY_KIND_RUNTIME")
    assert table_cols(c21, "CUPTI_ACTIVITY_KIND_RUNTIME")[-1] == "callchainId"
    assert "eventClass" in table_cols(c20, "CUPTI_ACTIVITY_KIND_RUNTIME")
    assert "migrationCause" not in table_cols(c20, "CUPTI_ACTIVITY_KIND_MEMCPY")
    assert table_cols(c21, "CUPTI_ACTIVITY_KIND_MEMCPY")[-2:] == ["migrationCause", "graphNodeId"]
    assert table_cols(c22, "CUPTI_ACTIVITY_KIND_MEMCPY")[-1] == "virtualAddress"
    assert table_cols(c24, "CUPTI_ACTIVITY_KIND_MEMCPY")[4] == "greenContextId"
    assert table_cols(c26, "CUPTI_ACTIVITY_KIND_MEMCPY")[-1] == "copyCount"
    sync24 = table_cols(c24, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
    sync26 = table_cols(c26, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
    assert sync24[-2:] == ["syncType", "eventId"] and "deprecatedSyncType" not in sync24
    assert sync26[-4:] == ["deprecatedSyncType", "syncType", "eventId", "eventSyncId"]
    assert table_cols(c24, "TARGET_INFO_SESSION_START_TIME") == ["utcEpochNs", "utcTime", "localTime"]
    assert table_cols(c26, "TARGET_INFO_SESSION_START_TIME")[-1] == "systemClockNs"
    assert len(table_cols(c24, "TARGET_INFO_GPU")) == 41 and table_cols(c24, "TARGET_INFO_GPU")[:2] == ["vmId", "id"]
    assert table_cols(c21, "TARGET_INFO_GPU") == ["vmId", "deviceId", "name", "busLocation", "isDiscrete"]
    assert table_cols(c26, "TARGET_INFO_CUDA_DEVICE") == ["gpuId", "cudaId", "pid"]
    # 2.9.1 DDL carries real REFERENCES clauses; 3.x only comments (none in ours)
    k22 = table_sql(c22)["CUPTI_ACTIVITY_KIND_KERNEL"]
    assert "correlationId INTEGER REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)" in k22
    assert "REFERENCES" not in table_sql(c24)["CUPTI_ACTIVITY_KIND_KERNEL"]
    assert "tensorSizeMinusOneElements TEXT NOT NULL" in table_sql(c26)["CUPTI_ACTIVITY_KIND_KERNEL"]


_PRESENT = {  # table -> schemas that write it (for a scenario using every feature)
    "EXPORT_META_DATA": {"2022.2"},
    "META_DATA_EXPORT": {"2024.6", "2026.2"},
    "META_DATA_CAPTURE": {"2024.6", "2026.2"},
    "PROCESSES": {"2022.2", "2024.6", "2026.2"},
    "ANALYSIS_DETAILS": {"2022.2", "2024.6", "2026.2"},
    "TARGET_INFO_SESSION_START_TIME": {"2022.2", "2024.6", "2026.2"},
    "TARGET_INFO_SYSTEM_ENV": {"2022.2", "2024.6", "2026.2"},
    "ENUM_NSYS_EVENT_TYPE": {"2024.6", "2026.2"},
    "ENUM_CUPTI_SYNC_TYPE": {"2024.6", "2026.2"},
    "TARGET_INFO_CUDA_GPU": {"2020", "2021"},
    "TARGET_INFO_GPU": {"2021", "2022.2", "2024.6", "2026.2"},
    "TARGET_INFO_CUDA_NULL_STREAM": {"2020", "2021", "2022.2"},
    "TARGET_INFO_CUDA_CONTEXT_INFO": {"2024.6", "2026.2"},
    "TARGET_INFO_CUDA_DEVICE": {"2026.2"},
    "TARGET_INFO_GPU_METRICS": {"2024.6", "2026.2"},
    "GPU_METRICS": {"2024.6", "2026.2"},
    "CUDA_GPU_MEMORY_USAGE_EVENTS": set(synth.ALL_SCHEMAS),
    "StringIds": set(synth.ALL_SCHEMAS),
    "ThreadNames": set(synth.ALL_SCHEMAS),
    "NVTX_EVENTS": set(synth.ALL_SCHEMAS),
    "CUPTI_ACTIVITY_KIND_RUNTIME": set(synth.ALL_SCHEMAS),
    "CUPTI_ACTIVITY_KIND_MEMSET": set(synth.ALL_SCHEMAS),
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": set(synth.ALL_SCHEMAS),
}


@pytest.mark.parametrize("schema", synth.ALL_SCHEMAS)
def test_table_set_per_variant(sink, schema):
    tables = set(table_sql(open_ro(sink[schema])))
    for table, schemas in _PRESENT.items():
        assert (table in tables) == (schema in schemas), (table, schema)
    if schema in ("2024.6", "2026.2"):  # 3.x: ENUM tables; 3.0.0's KRENEL typo is not ours
        assert "ENUM_CUDA_KERNEL_LAUNCH_TYPE" in tables


def test_lazy_export_omits_empty_tables(tmp_path):
    con = open_ro(synth.write_preset(tmp_path / "w.sqlite", "worked_example", steps=2))
    tables = set(table_sql(con))
    assert "CUPTI_ACTIVITY_KIND_MEMSET" not in tables  # the worked example never memsets
    for t in tables:
        if not t.startswith("ENUM_") and t != "StringIds":
            assert con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] > 0, t
    nc = open_ro(synth.write_preset(tmp_path / "n.sqlite", "no_cuda", steps=2))
    assert not [t for t in table_sql(nc) if t.startswith("CUPTI_")]
    assert query(nc, "SELECT count(*) FROM NVTX_EVENTS")[0][0] > 0


REAL_EXPORTS = {"2021": "nsys/mordred_rtx6000_2021.sqlite",
                "2022.2": "nsys/saxpy_mpi_a100_2022.2.sqlite",
                "2024.6": "nsys/nvfuser_matmul_h200_2024.6.sqlite",
                "2026.2": "nsys/fastvideo_train_2xh100_2026.2.sqlite"}
_POST_PROCESSOR_COLUMNS = {"name"}  # pipit appends `name TEXT` to RUNTIME/MEMCPY (§2.1)


@pytest.mark.realtrace
@pytest.mark.parametrize("schema", sorted(REAL_EXPORTS))
def test_layouts_equal_the_real_export_of_that_version(sink, schema):
    real = open_ro(shared_trace(REAL_EXPORTS[schema]))
    ours = open_ro(sink[schema])
    common = set(table_sql(real)) & set(table_sql(ours))
    if schema == "2021":  # ours is the transitional 5-column TARGET_INFO_GPU (§2.10)
        common.discard("TARGET_INFO_GPU")
    assert {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME",
            "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "StringIds", "ThreadNames"} <= common
    for table in sorted(common):
        def info(con, t=table):
            return [(r[1], r[2], r[3], r[5]) for r in con.execute(f"PRAGMA table_info({t})")
                    if not (con is real and t.startswith("CUPTI_") and r[1] in _POST_PROCESSOR_COLUMNS
                            and schema == "2022.2")]
        assert info(ours) == info(real), table
