"""The trace generator (nsys_diag/synth.py): committed samples, schema layouts, semantics of the
written rows, ``expected()`` answers, scale and CLI.

Layouts are asserted against NSYS_SQLITE.md (literal column lists below) and, when
../shared/traces is present, against the real exports themselves. Semantics are checked with
plain SQL on the written files, independently of the generator's own code.
"""
from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from conftest import SAMPLE_TRACES, shared_trace
from nsys_diag import synth
from nsys_diag.synth import (
    MS, NCCL_STREAM, US, GpuMemorySpec, GpuMetricsSpec, KernelSpec, MemcpySpec, MemsetSpec, MiB,
    PhaseSpec, RangeSpec, Scenario, SyncSpec)

MASK_PID = -16_777_216  # 0xFFFFFFFFFF000000 as a signed 64-bit SQLite integer


def _con(path) -> sqlite3.Connection:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    return con


def _tables(con) -> dict[str, str]:
    return dict(con.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))


def _cols(con, table) -> list[str]:
    return [r[1] for r in con.execute(f"PRAGMA table_info({table})")]


def _q(con, sql, *args):
    return con.execute(sql, args).fetchall()


def kitchen_sink(**kw) -> Scenario:
    """A small scenario that uses every feature (two processes, all op kinds, metrics, memory)."""
    base = dict(
        name="kitchen_sink", steps=3, warmup_extra_ns=5 * MS, nvtx_text="mixed",
        gpu_metrics=GpuMetricsSpec(period_ns=5 * MS), gpu_memory=GpuMemorySpec(chunks=2),
        env={"HF_TOKEN": "hf_FAKE_SECRET_123"}, n_devices=2,
        phases=(
            PhaseSpec("data", 10 * MS, canonical="data", kind="start_end",
                      memcpys=(MemcpySpec("H2D", MiB, 100 * US, at=1.0),)),
            PhaseSpec("forward", 20 * MS, canonical="forward",
                      ranges=(RangeSpec("aten::linear", 3),),
                      kernels=(KernelSpec("nvjet", 2 * MS, 4), KernelSpec("ew_add", 500 * US, 4))),
            PhaseSpec("backward", 20 * MS, canonical="backward", kernels=(
                KernelSpec("gemm_bf16_sm90", 2 * MS, 4, thread="autograd"),
                KernelSpec("nccl_allreduce", 3 * MS, 1, thread="autograd", stream=NCCL_STREAM,
                           nvtx="ncclAllReduce", nvtx_domain="NCCL"))),
            PhaseSpec("optimizer", 5 * MS, canonical="optimizer",
                      kernels=(KernelSpec("adam", 1 * MS, 2),),
                      memsets=(MemsetSpec(MiB, 50 * US, at=0.0),)),
            PhaseSpec("logging", 5 * MS, canonical="overhead", marks=("logged",),
                      memcpys=(MemcpySpec("D2H", 4, 2 * US, host="pageable", at=0.5),),
                      syncs=(SyncSpec(at=0.5), SyncSpec("cudaEventSynchronize", at=0.8),
                             SyncSpec("cudaDeviceSynchronize", at=1.0)))))
    base.update(kw)
    return Scenario(**base)


@pytest.fixture(scope="module")
def sink(tmp_path_factory):
    """kitchen_sink written in every schema variant: {schema: path}."""
    d = tmp_path_factory.mktemp("sink")
    return {s: synth.write_nsys_sqlite(d / f"sink_{s}.sqlite", kitchen_sink(), s)
            for s in synth.ALL_SCHEMAS}


# ============================================================================ committed samples
@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    """`python -m nsys_diag.synth --write-samples DIR` run in-process, once."""
    d = tmp_path_factory.mktemp("samples")
    assert synth.main(["--write-samples", str(d)]) == 0
    return d


@pytest.mark.parametrize("fname", [s[0] for s in synth.SAMPLES])
def test_committed_sample_equals_regeneration_row_by_row(regenerated, fname):
    committed = SAMPLE_TRACES / fname
    assert committed.exists(), f"{committed} missing: run `make samples`"
    assert committed.stat().st_size <= 300 * 1024
    a, b = _con(committed), _con(regenerated / fname)
    ta, tb = _tables(a), _tables(b)
    assert ta == tb  # same tables, same DDL
    for table in ta:
        rows_a = a.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
        rows_b = b.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
        assert rows_a == rows_b, f"{fname}: table {table} differs; run `make samples`"


def test_sample_directory_has_every_sample_and_a_current_readme(regenerated):
    assert {s[0] for s in synth.SAMPLES} <= {p.name for p in SAMPLE_TRACES.glob("*.sqlite")}
    readme = (SAMPLE_TRACES / "README.md").read_text(encoding="utf-8")
    block = synth.samples_readme_block(readme)
    assert block.strip() and block == synth.samples_readme_block(
        (regenerated / "README.md").read_text(encoding="utf-8"))
    for fname, name, _schema, _ov in synth.SAMPLES:
        assert f"`{fname}`" in readme and f"`{synth.preset(name).expected_verdict}`" in readme


@pytest.mark.parametrize("fname", [s[0] for s in synth.SAMPLES])
def test_calls_of_one_thread_never_overlap_in_the_samples(fname):
    rows = _q(_con(SAMPLE_TRACES / fname), """SELECT globalTid, start, end FROM
              CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass IN (0, 1) ORDER BY globalTid, start""") \
        if "CUPTI_ACTIVITY_KIND_RUNTIME" in _tables(_con(SAMPLE_TRACES / fname)) else []
    a = np.array(rows, dtype=np.int64).reshape(-1, 3)
    same = a[1:, 0] == a[:-1, 0]
    assert (a[1:, 1][same] >= a[:-1, 2][same]).all()
    assert (a[:, 2] > a[:, 1]).all()


def test_generation_is_deterministic_and_seed_sensitive(tmp_path):
    def rows(path):
        return _q(_con(path), "SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid")

    a = synth.write_preset(tmp_path / "a.sqlite", "healthy_tc", steps=3)
    b = synth.write_preset(tmp_path / "b.sqlite", "healthy_tc", steps=3)
    c = synth.write_preset(tmp_path / "c.sqlite", "healthy_tc", steps=3, seed=99)
    assert rows(a) == rows(b)
    assert rows(a) != rows(c)


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
    con = _con(sink[schema])
    assert _cols(con, "CUPTI_ACTIVITY_KIND_KERNEL") == KERNEL_BY_SCHEMA[schema]
    assert len(KERNEL_BY_SCHEMA[schema]) == {"2020": 25, "2021": 26, "2022.2": 27, "2024.6": 28,
                                             "2026.2": 40}[schema]
    nvtx = NVTX_19 + (["binaryData"] if schema in ("2024.6", "2026.2") else [])
    assert _cols(con, "NVTX_EVENTS") == nvtx


def test_version_specific_columns(sink):
    c20, c21, c22, c24, c26 = (_con(sink[s]) for s in synth.ALL_SCHEMAS)
    assert "callchainId" not in _cols(c20, "CUPTI_ACTIVITY_KIND_RUNTIME")
    assert _cols(c21, "CUPTI_ACTIVITY_KIND_RUNTIME")[-1] == "callchainId"
    assert "eventClass" in _cols(c20, "CUPTI_ACTIVITY_KIND_RUNTIME")
    assert "migrationCause" not in _cols(c20, "CUPTI_ACTIVITY_KIND_MEMCPY")
    assert _cols(c21, "CUPTI_ACTIVITY_KIND_MEMCPY")[-2:] == ["migrationCause", "graphNodeId"]
    assert _cols(c22, "CUPTI_ACTIVITY_KIND_MEMCPY")[-1] == "virtualAddress"
    assert _cols(c24, "CUPTI_ACTIVITY_KIND_MEMCPY")[4] == "greenContextId"
    assert _cols(c26, "CUPTI_ACTIVITY_KIND_MEMCPY")[-1] == "copyCount"
    sync24 = _cols(c24, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
    sync26 = _cols(c26, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
    assert sync24[-2:] == ["syncType", "eventId"] and "deprecatedSyncType" not in sync24
    assert sync26[-4:] == ["deprecatedSyncType", "syncType", "eventId", "eventSyncId"]
    assert _cols(c24, "TARGET_INFO_SESSION_START_TIME") == ["utcEpochNs", "utcTime", "localTime"]
    assert _cols(c26, "TARGET_INFO_SESSION_START_TIME")[-1] == "systemClockNs"
    assert len(_cols(c24, "TARGET_INFO_GPU")) == 41 and _cols(c24, "TARGET_INFO_GPU")[:2] == ["vmId", "id"]
    assert _cols(c21, "TARGET_INFO_GPU") == ["vmId", "deviceId", "name", "busLocation", "isDiscrete"]
    assert _cols(c26, "TARGET_INFO_CUDA_DEVICE") == ["gpuId", "cudaId", "pid"]
    # 2.9.1 DDL carries real REFERENCES clauses; 3.x only comments (none in ours)
    k22 = _tables(c22)["CUPTI_ACTIVITY_KIND_KERNEL"]
    assert "correlationId INTEGER REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)" in k22
    assert "REFERENCES" not in _tables(c24)["CUPTI_ACTIVITY_KIND_KERNEL"]
    assert "tensorSizeMinusOneElements TEXT NOT NULL" in _tables(c26)["CUPTI_ACTIVITY_KIND_KERNEL"]


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
    tables = set(_tables(_con(sink[schema])))
    for table, schemas in _PRESENT.items():
        assert (table in tables) == (schema in schemas), (table, schema)
    if schema in ("2024.6", "2026.2"):  # 3.x: ENUM tables; 3.0.0's KRENEL typo is not ours
        assert "ENUM_CUDA_KERNEL_LAUNCH_TYPE" in tables


def test_lazy_export_omits_empty_tables(tmp_path):
    con = _con(synth.write_preset(tmp_path / "w.sqlite", "worked_example", steps=2))
    tables = set(_tables(con))
    assert "CUPTI_ACTIVITY_KIND_MEMSET" not in tables  # the worked example never memsets
    for t in tables:
        if not t.startswith("ENUM_") and t != "StringIds":
            assert con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] > 0, t
    nc = _con(synth.write_preset(tmp_path / "n.sqlite", "no_cuda", steps=2))
    assert not [t for t in _tables(nc) if t.startswith("CUPTI_")]
    assert _q(nc, "SELECT count(*) FROM NVTX_EVENTS")[0][0] > 0


REAL_EXPORTS = {"2021": "nsys/mordred_rtx6000_2021.sqlite",
                "2022.2": "nsys/saxpy_mpi_a100_2022.2.sqlite",
                "2024.6": "nsys/nvfuser_matmul_h200_2024.6.sqlite",
                "2026.2": "nsys/fastvideo_train_2xh100_2026.2.sqlite"}
_POST_PROCESSOR_COLUMNS = {"name"}  # pipit appends `name TEXT` to RUNTIME/MEMCPY (§2.1)


@pytest.mark.realtrace
@pytest.mark.parametrize("schema", sorted(REAL_EXPORTS))
def test_layouts_equal_the_real_export_of_that_version(sink, schema):
    real = _con(shared_trace(REAL_EXPORTS[schema]))
    ours = _con(sink[schema])
    common = set(_tables(real)) & set(_tables(ours))
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


# ============================================================================ row semantics
def test_global_ids_processes_and_threads(sink):
    con = _con(sink["2024.6"])
    gpids = {r[0] for r in _q(con, "SELECT DISTINCT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL")}
    assert len(gpids) == 2 and all(g >= 1 << 48 for g in gpids)
    procs = dict(_q(con, "SELECT globalPid, pid FROM PROCESSES"))
    for g in gpids:
        assert procs[g] == (g >> 24) & 0xFFFFFF
        assert g & 0xFFFFFF == 0
    names = dict(_q(con, "SELECT t.globalTid, s.value FROM ThreadNames t "
                         "JOIN StringIds s ON s.id = t.nameId"))
    tids = {r[0] for r in _q(con, "SELECT DISTINCT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME")}
    assert {names[t] for t in tids} == {"python3", "pt_autograd_0"}
    for t in tids:  # main thread: tid == pid
        if names[t] == "python3":
            assert t & 0xFFFFFF == (t >> 24) & 0xFFFFFF
    assert len(procs) > len(gpids)  # PROCESSES lists other host processes too (§2.9)


@pytest.mark.parametrize("schema", synth.ALL_SCHEMAS)
def test_every_gpu_op_joins_exactly_one_call_of_its_process(sink, schema):
    con = _con(sink[schema])
    dup = _q(con, """SELECT count(*) FROM (SELECT correlationId, globalTid & ? AS p, count(*) AS n
                     FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass IN (0, 1)
                     GROUP BY 1, 2 HAVING n > 1)""", MASK_PID)
    assert dup == [(0,)]
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                  "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"):
        n, joined, bad_order = _q(con, f"""
            SELECT count(*), count(r.start), sum(g.start < r.start)
            FROM {table} g LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
              ON r.correlationId = g.correlationId AND g.globalPid = (r.globalTid & ?)
             AND r.eventClass IN (0, 1)""", MASK_PID)[0]
        assert n > 0 and joined == n and bad_order == 0, table
    # correlationIds repeat across the two processes (they are only unique per process)
    shared = _q(con, """SELECT count(*) FROM (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL
                        GROUP BY correlationId HAVING count(DISTINCT globalPid) > 1)""")[0][0]
    assert shared > 0


def test_streams_run_fifo_and_launch_latency_is_realistic(sink):
    con = _con(sink["2024.6"])
    rows = _q(con, """SELECT k.globalPid, k.streamId, k.start, k.end, k.start - r.start
                      FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
                        ON r.correlationId = k.correlationId AND k.globalPid = (r.globalTid & ?)
                      ORDER BY 1, 2, 3""", MASK_PID)
    a = np.array(rows, dtype=np.int64)
    same = (a[1:, 0] == a[:-1, 0]) & (a[1:, 1] == a[:-1, 1])
    assert (a[1:, 2][same] >= a[:-1, 3][same]).all()  # no overlap on one stream
    assert (a[:, 3] > a[:, 2]).all()
    assert (a[:, 4] >= 5 * US).all()  # GPU start >= call start + latency
    assert ((a[:, 2] % 1000) != 0).any()  # not all on a µs grid


def _ranges(con, pattern=None):
    """NVTX push/pop + start/end ranges with resolved text: (start, end, text, globalTid, type)."""
    sql = """SELECT n.start, n.end, coalesce(s.value, n.text), n.globalTid, n.eventType
             FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
             WHERE n.eventType IN (59, 60)"""
    rows = _q(con, sql)
    return [r for r in rows if pattern is None or pattern(r[2])]


def test_steps_and_phases_tile_exactly_in_the_worked_example(tmp_path):
    con = _con(synth.write_preset(tmp_path / "w.sqlite", "worked_example"))
    steps = sorted(r for r in _ranges(con) if r[2].startswith("train_step_"))
    assert [r[2] for r in steps] == [f"train_step_{i}" for i in range(11)]
    assert steps[0][0] > 1_000_000_000  # real exports never start at 0
    assert steps[0][1] - steps[0][0] > 800 * MS  # warm-up
    for s in steps[1:]:
        assert s[1] - s[0] == 800 * MS
    want = [("data_loading", 420), ("forward", 180), ("backward", 150), ("optimizer_step", 30),
            ("logging", 20)]
    phases = sorted(r for r in _ranges(con) if not r[2].startswith("train_step_"))
    for s in steps[1:]:
        inside = [p for p in phases if s[0] <= p[0] and p[1] <= s[1]]
        assert [(p[2], (p[1] - p[0]) // MS) for p in inside] == want
        assert inside[0][0] == s[0] and inside[-1][1] == s[1]
        assert all(a[1] == b[0] for a, b in zip(inside, inside[1:]))  # contiguous
    # mixed text: step names inline, phase names registered (textId)
    assert _q(con, "SELECT count(*) FROM NVTX_EVENTS WHERE text LIKE 'train_step_%'")[0][0] == 11
    assert _q(con, "SELECT count(*) FROM NVTX_EVENTS WHERE textId IS NOT NULL")[0][0] == 55
    assert _q(con, "SELECT count(*) FROM NVTX_EVENTS WHERE text IS NOT NULL AND textId IS NOT NULL") == [(0,)]


def test_backward_kernels_are_launched_from_the_autograd_thread_inside_backward(tmp_path):
    con = _con(synth.write_preset(tmp_path / "w.sqlite", "worked_example", steps=3))
    main = _q(con, """SELECT t.globalTid FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId
                      WHERE s.value = 'python3' AND (t.globalTid & 16777215) =
                      ((t.globalTid >> 24) & 16777215)""")[0][0]
    autograd = _q(con, """SELECT t.globalTid FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId
                          WHERE s.value = 'pt_autograd_0'""")[0][0]
    backward = [r for r in _ranges(con) if r[2] == "backward"]
    assert backward and all(r[3] == main for r in backward)  # the main thread holds the range
    launches = _q(con, """SELECT r.start, r.end FROM CUPTI_ACTIVITY_KIND_RUNTIME r
                          JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r.correlationId
                          WHERE r.globalTid = ?""", autograd)
    assert len(launches) == 3 * 64
    for s, e in launches:
        assert any(b[0] <= s and e <= b[1] for b in backward)
    # forward/optimizer launches come from the main thread, inside their ranges
    n_main = _q(con, """SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN
                        CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r.correlationId
                        WHERE r.globalTid = ?""", main)[0][0]
    assert n_main == 3 * (52 + 12)


@pytest.mark.parametrize("schema", synth.ALL_SCHEMAS)
def test_api_names_suffixes_and_event_classes(sink, schema):
    con = _con(sink[schema])
    rows = _q(con, """SELECT DISTINCT r.eventClass, s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r
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
    nccl_api = _q(con, """SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k
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
    con = _con(sink[schema])
    rows = _q(con, """SELECT s.value, y.syncType, y.streamId, y.eventId, y.start, y.end, r.start, r.end
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


def test_a_host_sync_waits_for_the_queued_gpu_work(tmp_path):
    sc = Scenario(name="wait", steps=2, phases=(PhaseSpec("step", 50 * MS, kernels=(
        KernelSpec("nvjet", 20 * MS, 1, at=0.0),), syncs=(SyncSpec(at=0.1),)),))
    con = _con(synth.write_nsys_sqlite(tmp_path / "s.sqlite", sc))
    k_end = [r[0] for r in _q(con, "SELECT end FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start")]
    s_end = [r[0] for r in _q(con, """SELECT r.end FROM CUPTI_ACTIVITY_KIND_RUNTIME r
                                      JOIN StringIds s ON s.id = r.nameId
                                      WHERE s.value = 'cudaStreamSynchronize_v3020' ORDER BY r.start""")]
    for k, s in zip(k_end, s_end):
        assert k < s < k + 10 * US


def test_nvtx_start_end_domains_marks_and_nested_ranges(sink):
    con = _con(sink["2024.6"])
    se = _q(con, "SELECT rangeId FROM NVTX_EVENTS WHERE eventType = 60")
    assert len(se) == 2 * 3 and all(r[0] is not None for r in se)
    assert _q(con, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59 AND rangeId IS NOT NULL") == [(0,)]
    domains = _q(con, "SELECT text, domainId, end FROM NVTX_EVENTS WHERE eventType = 75")
    assert domains == [("NCCL", 1, None)] * 2  # one per process, end NULL
    nccl = _q(con, """SELECT s.value, n.text FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
                      WHERE n.domainId = 1 AND n.eventType = 59""")
    assert nccl and all(r == ("ncclAllReduce", None) for r in nccl)
    marks = _q(con, "SELECT text, end FROM NVTX_EVENTS WHERE eventType = 34")
    assert marks == [("logged", None)] * 6
    fwd = [r for r in _ranges(con) if r[2] == "forward"]
    lin = [r for r in _ranges(con) if r[2] == "aten::linear"]
    assert len(lin) == 3 * len(fwd)
    for r in lin:
        assert any(f[0] <= r[0] and r[1] <= f[1] for f in fwd)


def test_environment_and_host_rows(sink):
    secret = "hf_FAKE_SECRET_123"
    for schema in ("2022.2", "2024.6", "2026.2"):
        con = _con(sink[schema])
        env = _q(con, "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'DeviceEnvironment'")[0][0]
        sep = "\0" if schema == "2022.2" else ";"  # as in the real 2.9.1 / 3.16.1 files
        assert f"HF_TOKEN={secret}" in env.split(sep)
        assert _q(con, "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'") == [
            ("synth-node-01",)]
        if schema != "2022.2":
            assert (f'HF_TOKEN="{secret}"',) in _q(
                con, "SELECT value FROM META_DATA_CAPTURE WHERE name = 'PROCESS_0:ENVIRONMENT_VARIABLE'")
    raw = sqlite3.connect(sink["2022.2"])
    with pytest.raises(sqlite3.OperationalError):  # the non-UTF-8 GpuInfo row of 2.9.1 files
        raw.execute("SELECT value FROM TARGET_INFO_SYSTEM_ENV").fetchall()
    for schema in ("2020", "2021"):  # nothing of the host is recorded in qdrep-era exports
        con = _con(sink[schema])
        dump = "\n".join(con.iterdump())
        assert secret not in dump


def test_metadata_versions(sink):
    c22, c24, c26 = (_con(sink[s]) for s in ("2022.2", "2024.6", "2026.2"))
    m22 = dict(_q(c22, "SELECT name, value FROM EXPORT_META_DATA"))
    assert m22["EXPORT_SCHEMA_VERSION"] == "2.9.1" and m22["EXPORT_LAZY"] == "true"
    assert "EXPORT_OUTUPT_PATH_ABS" in m22  # the real typo
    m24 = dict(_q(c24, "SELECT name, value FROM META_DATA_EXPORT"))
    assert (m24["EXPORT_PRODUCT_VERSION"], m24["EXPORT_SCHEMA_VERSION"]) == ("2024.6.2.25", "3.16.1")
    m26 = dict(_q(c26, "SELECT name, value FROM META_DATA_EXPORT"))
    assert m26["EXPORT_SCHEMA_VERSION"] == "3.25.0" and m26["EXPORT_PARAM_LAZY"] == "true"
    assert m26["EXPORT_TIME"].endswith(" sec")
    dur = _q(c26, "SELECT duration, startTime, stopTime FROM ANALYSIS_DETAILS")[0]
    assert dur[2] - dur[1] == dur[0]
    assert _q(c26, "SELECT systemClockNs FROM TARGET_INFO_SESSION_START_TIME")[0][0] == dur[1]
    last = max(_q(c26, "SELECT max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0],
               _q(c26, "SELECT max(end) FROM NVTX_EVENTS")[0][0])
    assert last < dur[0]


def test_gpu_metrics_rows(sink):
    con = _con(sink["2024.6"])
    info = _q(con, "SELECT typeId, metricId, metricName FROM TARGET_INFO_GPU_METRICS")
    names = {r[2] for r in info}
    for n in ("SMs Active [Throughput %]", "Tensor Active [Throughput %]",
              "DRAM Read Bandwidth [Throughput %]", "DRAM Write Bandwidth [Throughput %]",
              "PCIe RX Throughput [Throughput %]", "PCIe TX Throughput [Throughput %]"):
        assert n in names
    assert {r[0] & 0xFF for r in info} == {0, 1}  # GPU id in the low byte (§1.5)
    bad = _q(con, """SELECT count(*) FROM GPU_METRICS g JOIN TARGET_INFO_GPU_METRICS t
                     ON t.typeId = g.typeId AND t.metricId = g.metricId
                     WHERE t.metricName LIKE '%[Throughput %]' AND (g.value < 0 OR g.value > 100)""")
    assert bad == [(0,)]
    assert _q(con, "SELECT count(*) FROM GPU_METRICS")[0][0] > 0


def test_gpu_memory_events_balance(sink):
    con = _con(sink["2026.2"])
    rows = _q(con, """SELECT m.memoryOperationType, m.bytes, s.value FROM CUDA_GPU_MEMORY_USAGE_EVENTS m
                      JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = m.correlationId
                       AND m.globalPid = (r.globalTid & ?) JOIN StringIds s ON s.id = r.nameId""",
              MASK_PID)
    alloc = sum(b for op, b, api in rows if op == 0 and api == "cudaMalloc_v3020")
    free = sum(b for op, b, api in rows if op == 1 and api == "cudaFree_v3020")
    assert alloc == free == 2 * (12 + 18) * (1 << 30)  # two processes


def test_pre2022_gpu_tables_use_their_units(sink):
    c20, c21 = _con(sink["2020"]), _con(sink["2021"])
    g = synth.GPU_CATALOG["H100"]
    mem, bw, clock = _q(c21, "SELECT globalMemorySize, globalMemoryBandwidth, coreClockRate "
                             "FROM TARGET_INFO_CUDA_GPU")[0]
    assert (mem, bw, clock) == (g.total_memory, g.memory_bandwidth // 1000, g.clock_hz // 1000)
    mem, bw = _q(c20, "SELECT globalMemorySize, globalMemoryBandwidth FROM TARGET_INFO_CUDA_GPU")[0]
    assert (mem, bw) == (g.total_memory >> 20, 0)  # MiB, unknown
    assert len(_q(c21, "SELECT * FROM TARGET_INFO_CUDA_GPU")) == 2  # one per (process, device)


def test_backtrace_duplicates_share_the_correlation_id(tmp_path):
    con = _con(synth.write_preset(tmp_path / "b.sqlite", "simt_gemm", schema="2022.2", steps=2,
                                  cuda_backtraces=True))
    rows = _q(con, """SELECT d.correlationId, s.value, o.start - d.start, d.end - o.end
                      FROM CUPTI_ACTIVITY_KIND_RUNTIME d JOIN CUPTI_ACTIVITY_KIND_RUNTIME o
                        ON o.correlationId = d.correlationId AND o.eventClass = 0
                      JOIN StringIds s ON s.id = d.nameId WHERE d.eventClass = 67""")
    assert rows
    assert all("_v" not in name and before > 0 and after > 0 for _, name, before, after in rows)


# ============================================================================ expected()
def test_worked_example_answers_are_exact():
    e = synth.expected("worked_example")
    assert e["verdict"] == "input_bound" and e["tolerance"] == 0
    assert e["steps"]["count"] == 11 and e["steps"]["warmup"] == [0]
    assert e["steps"]["analysed_count"] == 10 and e["steps"]["mean_ms"] == 800.0
    assert {p["name"]: p["share"] for p in e["phases"]} == {
        "data_loading": 0.525, "forward": 0.225, "backward": 0.1875, "optimizer_step": 0.0375,
        "logging": 0.025}
    assert {p["name"]: p["gpu_work_ms"] for p in e["phases"]} == {
        "data_loading": 0.0, "forward": 80.0, "backward": 100.0, "optimizer_step": 12.0,
        "logging": 0.0}
    assert e["gpu"]["utilization"] == pytest.approx(0.24, abs=1e-12)
    assert e["gpu"]["compute_busy_ms_per_step"] == pytest.approx(192.0, abs=1e-9)
    assert e["memory"]["peak_bytes"] == 30 * (1 << 30)


@pytest.mark.parametrize("name", list(synth.PRESETS))
def test_expected_answers_are_consistent_with_the_design(name):
    sc = synth.preset(name)
    e = synth.expected(name)
    assert e["verdict"] == sc.expected_verdict
    assert sum(p["share"] for p in e["phases"]) == pytest.approx(1.0, abs=1e-9)
    assert e["steps"]["count"] == sc.steps and e["steps"]["warmup_ms"] > e["steps"]["mean_ms"]
    tol = e["tolerance"]
    for p, spec in zip(e["phases"], sc.phases):  # base phases keep their nominal duration
        assert p["mean_ms"] == pytest.approx(spec.dur_ns / MS, rel=tol + 1e-12)
    util = e["gpu"]["utilization"]
    k = e["kernels"]
    if name == "healthy_tc":
        assert util >= 0.9 and k["tensor_core_share"] > 0.8 and k["tc_share_of_gemm"] == 1.0
    elif name == "simt_gemm":
        assert util >= 0.85 and k["tensor_core_share"] == 0.0 and k["gemm_share"] > 0.8
    elif name in ("memory_bound", "inference"):
        m = e["gpu_metrics"]
        dram = m["DRAM Read Bandwidth [Throughput %]"] + m["DRAM Write Bandwidth [Throughput %]"]
        assert 70 <= dram <= 85 and m["Tensor Active [Throughput %]"] == 0
        assert 30 <= m["SMs Active [Throughput %]"] <= 60 and util >= 0.75
    elif name == "overhead_bound":
        per_step = sum(p["share"] for p in e["phases"] if p["canonical"] == "overhead")
        assert per_step > 0.3
        log = next(p for p in e["phases"] if p["name"] == "log_metrics")
        assert log["mean_ms"] / sum(p.dur_ns for p in sc.phases) * MS > 0.10  # without checkpoints
        assert e["steps"]["periodic"][0]["steps"] == [4, 9]
    elif name == "launch_bound":
        assert k["small_fraction"] == 1.0 and util < 0.3 and k["per_step"] >= 1000
    elif name == "multi_gpu":
        assert e["processes"] == 2
        for d in e["gpu"]["per_device"]:
            assert 0.10 < d["exposed_comm_share"] < 0.2 and d["hidden_comm_ms"] > 0
    elif name == "no_cuda":
        assert k["total"] == 0 and util == 0
    elif name == "worked_example":
        assert util == pytest.approx(0.24)


@pytest.mark.parametrize("name", ["worked_example", "multi_gpu", "launch_bound"])
def test_expected_utilization_matches_the_written_rows(tmp_path, name):
    """Recompute GPU busy from the file with SQL + a plain interval union: must equal expected()."""
    e = synth.expected(name, steps=4)
    con = _con(synth.write_preset(tmp_path / "x.sqlite", name, steps=4))
    prefix = synth.preset(name).step_prefix
    for dev in e["gpu"]["per_device"]:
        gpid = (1 << 48) | (dev["pid"] << 24)
        main = gpid | dev["pid"]
        steps = sorted(_q(con, "SELECT start, end FROM NVTX_EVENTS WHERE text LIKE ? AND globalTid = ?",
                          prefix + "%", main))
        lo, hi = steps[1][0], steps[-1][1]
        ks = _q(con, "SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE globalPid = ? "
                     "ORDER BY start", gpid)
        busy, cur_s, cur_e = 0, None, None
        for s, t in ks:
            s, t = max(s, lo), min(t, hi)
            if t <= s:
                continue
            if cur_e is None or s > cur_e:
                busy += 0 if cur_e is None else cur_e - cur_s
                cur_s, cur_e = s, t
            else:
                cur_e = max(cur_e, t)
        busy += 0 if cur_e is None else cur_e - cur_s
        assert busy / (hi - lo) == pytest.approx(dev["utilization"], abs=1e-12)


def test_overrides_and_scale_keep_the_design():
    e = synth.expected("worked_example", steps=5, scale=4)
    assert e["steps"]["count"] == 5 and e["kernels"]["per_step"] == 4 * 128
    assert e["gpu"]["utilization"] == pytest.approx(0.24, abs=1e-3)
    assert [round(p["share"], 6) for p in e["phases"]] == [0.525, 0.225, 0.1875, 0.0375, 0.025]
    sc = synth.preset("healthy_tc", jitter=0.0)
    assert synth.expected(sc)["tolerance"] == 0
    with pytest.raises(ValueError):
        synth.preset("nope")
    with pytest.raises(ValueError):
        GpuMetricsSpec(levels={"*": {"SM Active": 50.0}})  # names must be nsys's exact labels
    ph = PhaseSpec("p", MS, kernels=[KernelSpec("ew_add", 100 * US, 2)])  # lists are accepted
    assert isinstance(ph.kernels, tuple)
    assert synth.expected(Scenario(steps=3, phases=[ph]))["kernels"]["per_step"] == 2
    with pytest.raises(ValueError):
        synth.write_preset("/nonexistent/x.sqlite", "worked_example", schema="1999")


# ============================================================================ scale + CLI
def test_scale_smoke_fifty_thousand_kernels(tmp_path):
    path = synth.write_preset(tmp_path / "big.sqlite", "worked_example", scale=35)
    con = _con(path)
    n = _q(con, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0]
    assert n == 11 * 128 * 35 == synth.expected("worked_example", scale=35)["kernels"]["total"]
    assert _q(con, """SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN
                      CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
                      WHERE r.start IS NULL""") == [(0,)]


def test_cli_writes_one_preset_and_prints_its_answers(tmp_path, capsys):
    out = tmp_path / "lb.sqlite"
    assert synth.main(["launch_bound", str(out), "--schema", "2022.2", "--steps", "3",
                       "--env", "HF_TOKEN=hf_FAKE", "--expected"]) == 0
    e = json.loads(capsys.readouterr().out)
    assert e["verdict"] == "launch_bound" and e["steps"]["count"] == 3
    con = _con(out)
    assert _q(con, "SELECT value FROM EXPORT_META_DATA WHERE name = 'EXPORT_SCHEMA_VERSION'") == [("2.9.1",)]
    assert "HF_TOKEN=hf_FAKE" in _q(con, "SELECT value FROM TARGET_INFO_SYSTEM_ENV "
                                         "WHERE name = 'DeviceEnvironment'")[0][0]
    assert synth.main(["--list"]) == 0
    assert "worked_example" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        synth.main(["not_a_preset", str(tmp_path / "x.sqlite")])
