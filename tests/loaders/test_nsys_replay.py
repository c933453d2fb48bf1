"""loaders/nsys_replay.py: the replay's extra columns, read for its windows only."""
from __future__ import annotations

import sqlite3

import pytest

from nsys_diag.analyses.replay import analyze_replay
from nsys_diag.analyses.replay.analysis import replay_windows
from nsys_diag.analyses.replay.model import process_timeline
from nsys_diag.analyses.steps.detection import detect_steps
from nsys_diag.loaders import load_trace
from nsys_diag.loaders.nsys_replay import merged_windows, read_replay_columns
from nsys_diag.synth.presets import preset
from nsys_diag.synth.writer import write_nsys_sqlite
from tests.analyses.replay.replay_helpers import case_path, gpu_processes, process_frames


@pytest.fixture(scope="module")
def item(tmp_path_factory):
    return case_path(tmp_path_factory.mktemp("nsys_replay"), "item_per_layer")


def _replay(path, kernel_detail: bool, graphs: bool = False):
    bundle = load_trace(path, kernel_detail=kernel_detail)
    f = process_frames(bundle, gpu_processes(bundle)[0])
    steps = detect_steps(f["nvtx"], f["kernels"])
    windows = replay_windows(steps, f["api"], (f["kernels"], f["memcpy"], f["memset"]))
    extra = read_replay_columns(path, windows, api=f["api"], kernel_streams=not kernel_detail)
    return analyze_replay(
        f["kernels"], f["memcpy"], f["memset"], f["sync"], f["api"], f["nvtx"], steps=steps,
        graphs=extra.graphs if graphs else None, sync_events=extra.sync_events,
        cuda_events=extra.cuda_events, kernel_streams=extra.kernel_streams), extra


def test_kernel_streams_read_for_the_windows_give_the_full_detail_replay(item):
    fast, extra = _replay(item, kernel_detail=False)
    full, _ = _replay(item, kernel_detail=True)
    assert len(extra.kernel_streams) and (extra.kernel_streams["stream_id"] >= 0).all()
    assert fast.to_json() == full.to_json()


def test_windows_are_merged_and_capped():
    assert merged_windows([(5, 9), (0, 6), (20, 30), (30, 31)]) == [(0, 9), (20, 31)]
    assert len(merged_windows([(i * 10, i * 10 + 1) for i in range(200)])) == 64


def test_tables_absent_give_empty_frames(item):
    extra = read_replay_columns(item, [(0, 1 << 62)], kernel_streams=False)
    assert extra.graphs.empty and extra.cuda_events.empty and extra.kernel_streams.empty
    assert len(extra.sync_events) and (extra.sync_events["event_id"] == -1).all()


def test_graph_launches_are_opaque_operations(tmp_path):
    """A CUDA-graph launch traced at graph granularity: one GRAPH_TRACE row per cudaGraphLaunch
    (here: the span of the kernels the launch ran), replayed as one operation."""
    path = write_nsys_sqlite(tmp_path / "graphs.sqlite", preset("cuda_graphs"))
    with sqlite3.connect(path) as con:
        con.execute('CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER NOT NULL, '
                    '"end" INTEGER NOT NULL, deviceId INTEGER, contextId INTEGER, '
                    'greenContextId INTEGER, streamId INTEGER, correlationId INTEGER, '
                    'globalPid INTEGER, graphId INTEGER NOT NULL, graphExecId INTEGER NOT NULL)')
        con.execute('INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE SELECT k.start, k."end", '
                    'k.deviceId, k.contextId, 0, k.streamId, k.correlationId, k.globalPid, 1, 1 '
                    'FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON '
                    'r.correlationId = k.correlationId JOIN StringIds s ON s.id = r.nameId '
                    "WHERE s.value LIKE 'cudaGraphLaunch%'")
    r, extra = _replay(path, kernel_detail=True, graphs=True)
    assert len(extra.graphs) and (extra.graphs["launch_start_ns"] >= 0).all()
    assert abs(r.error_pct) <= 5.0
    bundle = load_trace(path)
    f = process_frames(bundle, gpu_processes(bundle)[0])
    pt = process_timeline(f["kernels"], f["memcpy"], f["memset"], f["sync"], f["api"],
                          extra.graphs)
    labels = [pt.labels[i] for i in pt.o_label]
    assert labels.count("cuda_graph") == len(extra.graphs)  # one operation per graph launch
    assert len(labels) == len(f["kernels"]) + len(f["memcpy"])  # its kernels are not repeated


@pytest.mark.parametrize("name", ["fastvideo_train_2xh100_2026.2.sqlite",
                                  "saxpy_mpi_a100_2022.2.sqlite",
                                  "mordred_rtx6000_2021.sqlite"])
def test_real_traces_replay_alike_with_streams_read_for_the_windows(name):
    from tests.conftest import SHARED_TRACES

    path = SHARED_TRACES / "nsys" / name
    if not path.exists():
        pytest.skip(f"../shared/traces/nsys/{name} not present")
    fast, extra = _replay(path, kernel_detail=False)
    full, _ = _replay(path, kernel_detail=True)
    assert extra.graphs.empty  # none of these captures launched a graph
    assert fast.to_json() == full.to_json()


def test_kernel_streams_narrowed_by_rowid_equal_the_scan_and_a_wrong_count_falls_back(item):
    from nsys_diag.loaders.nsys_db import NsysDb
    from nsys_diag.loaders.nsys_replay import read_kernel_streams

    bundle = load_trace(item, kernel_detail=False)
    k = bundle.kernels
    mid = int(k["start_ns"].median())
    windows = [(mid, mid + 2_000_000)]
    inside = int(((k["end_ns"] > windows[0][0]) & (k["start_ns"] < windows[0][1])).sum())
    with NsysDb(item) as db:
        scan = read_kernel_streams(db, windows)
        narrowed = read_kernel_streams(db, windows, expected_rows=inside)
        wrong = read_kernel_streams(db, windows, expected_rows=inside + 1)
    assert len(scan) == inside > 0
    assert narrowed.equals(scan) and wrong.equals(scan)


def test_reads_limited_by_a_zone_map_equal_the_scan(item, monkeypatch):
    """A streamed run's zone map narrows each window to its rowid ranges: the same rows."""
    from nsys_diag.loaders import zone_map as Z
    from nsys_diag.loaders.nsys_db import NsysDb
    from nsys_diag.loaders.nsys_replay import read_kernel_streams, read_sync_events
    from nsys_diag.loaders.nsys_specs import KERNEL_TABLE

    monkeypatch.setattr(Z, "BLOCK_ROWS", 16)
    monkeypatch.setattr(Z, "MIN_ZONED_ROWS", 32)
    k = load_trace(item, kernel_detail=False).kernels
    lo, hi = int(k["start_ns"].quantile(0.2)), int(k["start_ns"].quantile(0.3))
    windows = [(lo, hi), (int(k["start_ns"].quantile(0.7)), int(k["start_ns"].quantile(0.75)))]
    with NsysDb(item) as db:
        zones = Z.build_zone_map(db)
        assert zones.overlap(KERNEL_TABLE, lo, hi), "the kernel table is zone-mapped"
        scan, zoned = read_kernel_streams(db, windows), read_kernel_streams(db, windows,
                                                                            zones=zones)
        syncs = read_sync_events(db, windows), read_sync_events(db, windows, zones)
    assert len(scan) > 0 and zoned.equals(scan)
    assert syncs[1].equals(syncs[0])
