"""The model's edges on a hand-built process: a cross-stream wait joined through its event
record (explicit) or inferred without it, a device sync, and the critical path through them."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nsys_diag.analyses.replay import analyze_replay
from nsys_diag.model import contracts as C

GPID = 7 << 24
TID = GPID | 7


def _api(rows) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["start_ns", "end_ns", "correlation_id", "name"])
    return C.API.validate(df.assign(global_tid=TID, global_pid=GPID, pid=7, tid=7,
                                    api_class="runtime"))


def _gpu(contract, rows, **extra) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["start_ns", "end_ns", "stream_id", "correlation_id"])
    df = df.assign(device_id=0, context_id=1, global_pid=GPID, pid=7, launch_global_tid=TID,
                   launch_start_ns=-1, launch_end_ns=-1, launch_api="", **extra)
    for c in contract.names:
        if c not in df:
            df[c] = -1 if contract.columns[contract.names.index(c)].dtype == "int64" else "x"
    return contract.validate(df)


def _process():
    api = _api([(0, 5_000, 1, "cudaLaunchKernel"), (6_000, 8_000, 2, "cudaEventRecord"),
                (9_000, 10_000, 3, "cudaStreamWaitEvent"), (11_000, 15_000, 4, "cudaLaunchKernel"),
                (16_000, 151_000, 5, "cudaDeviceSynchronize")])
    kernels = _gpu(C.KERNELS, [(10_000, 110_000, 7, 1), (110_500, 150_000, 13, 4)],
                   name=["ampere_sgemm_128x64_nn", "void at::native::vectorized_elementwise"],
                   short_name=["k", "k"])
    sync = _gpu(C.SYNC, [(9_100, 9_900, 13, 3), (16_100, 150_900, -1, 5)],
                sync_kind=["stream_wait", "device"])
    empty = {"memcpy": C.MEMCPY.empty(), "memset": C.MEMSET.empty(), "nvtx": C.NVTX.empty()}
    return kernels, sync, api, empty


def _replay(**extra):
    kernels, sync, api, e = _process()
    return analyze_replay(kernels, e["memcpy"], e["memset"], sync, api, e["nvtx"], steps=None,
                          **extra)


def test_cross_stream_wait_is_inferred_without_event_records():
    r = _replay()
    j = r.to_json()
    assert j["inferred_edges"] == 1 and j["explicit_edges"] == 0
    assert j["fidelity"]["basis"] == "window"
    assert j["fidelity"]["error_pct"] == pytest.approx(0.0, abs=1e-9)
    kinds = {(x["kind"], x["name"]) for x in j["critical_path"]}
    # the sync waits for B, B for A on the other stream, A for its launch
    assert ("gpu_compute", "gemm") in kinds and ("gpu_compute", "elementwise") in kinds
    assert j["unexplained_share"] == 0


def test_cross_stream_wait_is_joined_through_the_event_record():
    sync_events = C.SYNC_EVENTS.validate(pd.DataFrame({
        "correlation_id": [3], "global_pid": [GPID], "stream_id": [13], "event_id": [42]}))
    cuda_events = C.CUDA_EVENTS.validate(pd.DataFrame({
        "ts_ns": [-1], "device_id": [0], "context_id": [1], "stream_id": [7],
        "correlation_id": [2], "global_pid": [GPID], "event_id": [42]}))
    j = _replay(sync_events=sync_events, cuda_events=cuda_events).to_json()
    assert j["explicit_edges"] == 1 and j["inferred_edges"] == 0
    assert j["fidelity"]["error_pct"] == pytest.approx(0.0, abs=1e-9)


def test_the_critical_path_adds_up_to_the_window():
    r = _replay()
    total = sum(x.ms_per_step for x in r.critical_path)
    assert total == pytest.approx(r.fidelity()["replayed_ms"], rel=1e-6)
    assert np.isclose(sum(x.share for x in r.critical_path), 1.0)


def test_inferred_waits_ask_for_cuda_event_records_and_joined_ones_do_not():
    from nsys_diag.model.vocabulary import HINT_REPLAY_CUDA_EVENTS

    assert _replay().to_json()["capture_hints"] == [HINT_REPLAY_CUDA_EVENTS]
    sync_events = C.SYNC_EVENTS.validate(pd.DataFrame({
        "correlation_id": [3], "global_pid": [GPID], "stream_id": [13], "event_id": [42]}))
    cuda_events = C.CUDA_EVENTS.validate(pd.DataFrame({
        "ts_ns": [-1], "device_id": [0], "context_id": [1], "stream_id": [7],
        "correlation_id": [2], "global_pid": [GPID], "event_id": [42]}))
    assert _replay(sync_events=sync_events, cuda_events=cuda_events).to_json()[
        "capture_hints"] == []


def test_whole_graph_launches_ask_for_node_tracing():
    from nsys_diag.model.vocabulary import HINT_REPLAY_GRAPH_NODES, NSYS_FLAG_GRAPH_NODE_TRACE

    kernels, sync, api, e = _process()
    api = pd.concat([api, _api([(152_000, 153_000, 6, "cudaGraphLaunch")])], ignore_index=True)
    graphs = _gpu(C.GRAPH_LAUNCHES, [(153_500, 180_000, 7, 6)], graph_id=1, graph_exec_id=1)
    r = analyze_replay(kernels, e["memcpy"], e["memset"], sync, C.API.validate(api), e["nvtx"],
                       steps=None, graphs=graphs)
    hints = r.to_json()["capture_hints"]
    assert HINT_REPLAY_GRAPH_NODES in hints and NSYS_FLAG_GRAPH_NODE_TRACE in hints[0]
