"""Row semantics of the written files (nsys_diag.synth.writer), checked with plain SQL on the
files, independently of the generator's own code."""
from __future__ import annotations

import sqlite3

import pytest

from nsys_diag import synth
from synth_sink import MASK_PID, nsys_ranges, open_ro, query, write_sink


@pytest.fixture(scope="module")
def sink(tmp_path_factory):
    """kitchen_sink written in every schema variant: {schema: path}."""
    return write_sink(tmp_path_factory.mktemp("sink"))


# ============================================================================ row semantics
def test_global_ids_processes_and_threads(sink):
    con = open_ro(sink["2024.6"])
    gpids = {r[0] for r in query(con, "SELECT DISTINCT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL")}
    assert len(gpids) == 2 and all(g >= 1 << 48 for g in gpids)
    procs = dict(query(con, "SELECT globalPid, pid FROM PROCESSES"))
    for g in gpids:
        assert procs[g] == (g >> 24) & 0xFFFFFF
        assert g & 0xFFFFFF == 0
    names = dict(query(con, "SELECT t.globalTid, s.value FROM ThreadNames t "
                         "JOIN StringIds s ON s.id = t.nameId"))
    tids = {r[0] for r in query(con, "SELECT DISTINCT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME")}
    assert {names[t] for t in tids} == {"python3", "pt_autograd_0"}
    for t in tids:  # main thread: tid == pid
        if names[t] == "python3":
            assert t & 0xFFFFFF == (t >> 24) & 0xFFFFFF
    assert len(procs) > len(gpids)  # PROCESSES lists other host processes too (§2.9)


@pytest.mark.parametrize("schema", synth.ALL_SCHEMAS)
def test_every_gpu_op_joins_exactly_one_call_of_its_process(sink, schema):
    con = open_ro(sink[schema])
    dup = query(con, """SELECT count(*) FROM (SELECT correlationId, globalTid & ? AS p, count(*) AS n
                     FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass IN (0, 1)
                     GROUP BY 1, 2 HAVING n > 1)""", MASK_PID)
    assert dup == [(0,)]
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                  "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"):
        n, joined, bad_order = query(con, f"""
            SELECT count(*), count(r.start), sum(g.start < r.start)
            FROM {table} g LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
              ON r.correlationId = g.correlationId AND g.globalPid = (r.globalTid & ?)
             AND r.eventClass IN (0, 1)""", MASK_PID)[0]
        assert n > 0 and joined == n and bad_order == 0, table
    # correlationIds repeat across the two processes (they are only unique per process)
    shared = query(con, """SELECT count(*) FROM (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL
                        GROUP BY correlationId HAVING count(DISTINCT globalPid) > 1)""")[0][0]
    assert shared > 0


@pytest.mark.parametrize("schema", synth.ALL_SCHEMAS)
def test_api_names_suffixes_and_event_classes(sink, schema):
    con = open_ro(sink[schema])
    rows = query(con, """SELECT DISTINCT r.eventClass, s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r
                      JOIN StringIds s ON s.id = r.nameId""")
    runtime = {n for c, n in rows if c == 0}
    driver = {n for c, n in rows if c == 1}
    assert "cudaLaunchKernel_v7000" in runtime and "cudaMemcpyAsync_v3020" in runtime
    assert all(n.startswith("cuda") and n.rsplit("_v", 1)[1].isdigit() for n in runtime)
    assert "cuLaunchKernel" in driver and all(n.startswith("cu") and not n.startswith("cuda")
                                              for n in driver)
    five = {n for n in runtime if len(n.rsplit("_v", 1)[1]) == 5}
    if schema in ("2024.6", "2026.2"):
        assert {"cudaLaunchKernelExC_v11060", "cudaStreamIsCapturing_v10000",
                "cudaGetDeviceProperties_v2_v12000"} <= five
        assert "cuLaunchKernelEx" in driver
    else:
        assert five == {"cudaStreamIsCapturing_v10000"}
        assert "cuLaunchKernelEx" not in driver
    # the NCCL kernel is launched by cudaLaunchKernelExC where it exists
    nccl_api = query(con, """SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k
                          JOIN StringIds kn ON kn.id = k.shortName
                          JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
                           AND k.globalPid = (r.globalTid & ?)
                          JOIN StringIds s ON s.id = r.nameId
                          WHERE kn.value LIKE 'ncclDevKernel_AllReduce%'""", MASK_PID)
    assert nccl_api == [("cudaLaunchKernelExC_v11060" if schema in ("2024.6", "2026.2")
                         else "cudaLaunchKernel_v7000",)]


_SYNC_TYPES = {  # API -> syncType written, per version (NSYS_SQLITE.md §2.6)
    "2020": {"cudaStreamSynchronize_v3020": 3, "cudaDeviceSynchronize_v3020": 1,
             "cudaEventSynchronize_v3020": 2},
    "2021": {"cudaStreamSynchronize_v3020": 3, "cudaDeviceSynchronize_v3020": 1,
             "cudaEventSynchronize_v3020": 2},
    "2022.2": {"cudaStreamSynchronize_v3020": 3, "cudaDeviceSynchronize_v3020": 1,
               "cudaEventSynchronize_v3020": 2},
    "2024.6": {"cudaStreamSynchronize_v3020": 2, "cudaDeviceSynchronize_v3020": 4,
               "cudaEventSynchronize_v3020": 1},
    "2026.2": {"cudaStreamSynchronize_v3020": 3, "cudaDeviceSynchronize_v3020": 4,
               "cudaEventSynchronize_v3020": 1},
}


@pytest.mark.parametrize("schema", synth.ALL_SCHEMAS)
def test_sync_rows_lie_inside_their_call_with_versioned_sync_type(sink, schema):
    con = open_ro(sink[schema])
    rows = query(con, """SELECT s.value, y.syncType, y.streamId, y.eventId, y.start, y.end, r.start, r.end
                      FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION y
                      JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = y.correlationId
                       AND y.globalPid = (r.globalTid & ?) AND r.eventClass IN (0, 1)
                      JOIN StringIds s ON s.id = r.nameId""", MASK_PID)
    assert {r[0] for r in rows} == set(_SYNC_TYPES[schema])
    for api, sync_type, stream, event, ys, ye, rs, re_ in rows:
        assert sync_type == _SYNC_TYPES[schema][api]
        assert rs <= ys < ye <= re_
        assert (stream == 0xFFFFFFFF) == (api != "cudaStreamSynchronize_v3020")
        assert (event == 0xFFFFFFFF) == (api != "cudaEventSynchronize_v3020")


def test_nvtx_start_end_domains_marks_and_nested_ranges(sink):
    con = open_ro(sink["2024.6"])
    se = query(con, "SELECT rangeId FROM NVTX_EVENTS WHERE eventType = 60")
    assert len(se) == 2 * 3 and all(r[0] is not None for r in se)
    assert query(con, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59 AND rangeId IS NOT NULL") == [(0,)]
    domains = query(con, "SELECT text, domainId, end FROM NVTX_EVENTS WHERE eventType = 75")
    assert domains == [("NCCL", 1, None)] * 2  # one per process, end NULL
    nccl = query(con, """SELECT s.value, n.text FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
                      WHERE n.domainId = 1 AND n.eventType = 59""")
    assert nccl and all(r == ("ncclAllReduce", None) for r in nccl)
    marks = query(con, "SELECT text, end FROM NVTX_EVENTS WHERE eventType = 34")
    assert marks == [("logged", None)] * 6
    fwd = [r for r in nsys_ranges(con) if r[2] == "forward"]
    lin = [r for r in nsys_ranges(con) if r[2] == "aten::linear"]
    assert len(lin) == 3 * len(fwd)
    for r in lin:
        assert any(f[0] <= r[0] and r[1] <= f[1] for f in fwd)


def test_environment_and_host_rows(sink):
    secret = "hf_FAKE_SECRET_123"
    for schema in ("2022.2", "2024.6", "2026.2"):
        con = open_ro(sink[schema])
        env = query(con, "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'DeviceEnvironment'")[0][0]
        sep = "\0" if schema == "2022.2" else ";"  # as in the real 2.9.1 / 3.16.1 files
        assert f"HF_TOKEN={secret}" in env.split(sep)
        assert query(con, "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'") == [
            ("synth-node-01",)]
        if schema != "2022.2":
            assert (f'HF_TOKEN="{secret}"',) in query(
                con, "SELECT value FROM META_DATA_CAPTURE WHERE name = 'PROCESS_0:ENVIRONMENT_VARIABLE'")
    raw = sqlite3.connect(sink["2022.2"])
    with pytest.raises(sqlite3.OperationalError):  # the non-UTF-8 GpuInfo row of 2.9.1 files
        raw.execute("SELECT value FROM TARGET_INFO_SYSTEM_ENV").fetchall()
    for schema in ("2020", "2021"):  # nothing of the host is recorded in qdrep-era exports
        con = open_ro(sink[schema])
        dump = "\n".join(con.iterdump())
        assert secret not in dump


def test_metadata_versions(sink):
    c22, c24, c26 = (open_ro(sink[s]) for s in ("2022.2", "2024.6", "2026.2"))
    m22 = dict(query(c22, "SELECT name, value FROM EXPORT_META_DATA"))
    assert m22["EXPORT_SCHEMA_VERSION"] == "2.9.1" and m22["EXPORT_LAZY"] == "true"
    assert "EXPORT_OUTUPT_PATH_ABS" in m22  # the real typo
    m24 = dict(query(c24, "SELECT name, value FROM META_DATA_EXPORT"))
    assert (m24["EXPORT_PRODUCT_VERSION"], m24["EXPORT_SCHEMA_VERSION"]) == ("2024.6.2.25", "3.16.1")
    m26 = dict(query(c26, "SELECT name, value FROM META_DATA_EXPORT"))
    assert m26["EXPORT_SCHEMA_VERSION"] == "3.25.0" and m26["EXPORT_PARAM_LAZY"] == "true"
    assert m26["EXPORT_TIME"].endswith(" sec")
    dur = query(c26, "SELECT duration, startTime, stopTime FROM ANALYSIS_DETAILS")[0]
    assert dur[2] - dur[1] == dur[0]
    assert query(c26, "SELECT systemClockNs FROM TARGET_INFO_SESSION_START_TIME")[0][0] == dur[1]
    last = max(query(c26, "SELECT max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0],
               query(c26, "SELECT max(end) FROM NVTX_EVENTS")[0][0])
    assert last < dur[0]


def test_gpu_metrics_rows(sink):
    con = open_ro(sink["2024.6"])
    info = query(con, "SELECT typeId, metricId, metricName FROM TARGET_INFO_GPU_METRICS")
    names = {r[2] for r in info}
    for n in ("SMs Active [Throughput %]", "Tensor Active [Throughput %]",
              "DRAM Read Bandwidth [Throughput %]", "DRAM Write Bandwidth [Throughput %]",
              "PCIe RX Throughput [Throughput %]", "PCIe TX Throughput [Throughput %]"):
        assert n in names
    assert {r[0] & 0xFF for r in info} == {0, 1}  # GPU id in the low byte (§1.5)
    bad = query(con, """SELECT count(*) FROM GPU_METRICS g JOIN TARGET_INFO_GPU_METRICS t
                     ON t.typeId = g.typeId AND t.metricId = g.metricId
                     WHERE t.metricName LIKE '%[Throughput %]' AND (g.value < 0 OR g.value > 100)""")
    assert bad == [(0,)]
    assert query(con, "SELECT count(*) FROM GPU_METRICS")[0][0] > 0


def test_gpu_memory_events_balance(sink):
    con = open_ro(sink["2026.2"])
    rows = query(con, """SELECT m.memoryOperationType, m.bytes, s.value FROM CUDA_GPU_MEMORY_USAGE_EVENTS m
                      JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = m.correlationId
                       AND m.globalPid = (r.globalTid & ?) JOIN StringIds s ON s.id = r.nameId""",
              MASK_PID)
    alloc = sum(b for op, b, api in rows if op == 0 and api == "cudaMalloc_v3020")
    free = sum(b for op, b, api in rows if op == 1 and api == "cudaFree_v3020")
    assert alloc == free == 2 * (12 + 18) * (1 << 30)  # two processes


def test_pre2022_gpu_tables_use_their_units(sink):
    c20, c21 = open_ro(sink["2020"]), open_ro(sink["2021"])
    g = synth.GPU_CATALOG["H100"]
    mem, bw, clock = query(c21, "SELECT globalMemorySize, globalMemoryBandwidth, coreClockRate "
                             "FROM TARGET_INFO_CUDA_GPU")[0]
    assert (mem, bw, clock) == (g.total_memory, g.memory_bandwidth // 1000, g.clock_hz // 1000)
    mem, bw = query(c20, "SELECT globalMemorySize, globalMemoryBandwidth FROM TARGET_INFO_CUDA_GPU")[0]
    assert (mem, bw) == (g.total_memory >> 20, 0)  # MiB, unknown
    assert len(query(c21, "SELECT * FROM TARGET_INFO_CUDA_GPU")) == 2  # one per (process, device)


def test_backtrace_duplicates_share_the_correlation_id(tmp_path):
    con = open_ro(synth.write_preset(tmp_path / "b.sqlite", "simt_gemm", schema="2022.2", steps=2,
                                  cuda_backtraces=True))
    rows = query(con, """SELECT d.correlationId, s.value, o.start - d.start, d.end - o.end
                      FROM CUPTI_ACTIVITY_KIND_RUNTIME d JOIN CUPTI_ACTIVITY_KIND_RUNTIME o
                        ON o.correlationId = d.correlationId AND o.eventClass = 0
                      JOIN StringIds s ON s.id = d.nameId WHERE d.eventClass = 67""")
    assert rows
    assert all("_v" not in name and before > 0 and after > 0 for _, name, before, after in rows)
