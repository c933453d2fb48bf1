"""PyTorch profiler (Kineto) traces: detection, the mapping onto the nsys frames, bad input."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from nsys_diag import synth
from nsys_diag.app.analyze import analyze_path
from nsys_diag.loaders import load_trace
from nsys_diag.loaders.kineto import short_name
from nsys_diag.loaders.sniff import Format, sniff_format
from nsys_diag.model.errors import InputError, UnrecognizedFormatError
from nsys_diag.synth.kineto_writer import kineto_document, write_kineto_json
from nsys_diag.synth.timeline import build_timeline


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    d = tmp_path_factory.mktemp("kineto")
    sc = synth.preset("healthy_tc", steps=4)
    return sc, build_timeline(sc), write_kineto_json(d / "r.pt.trace.json", sc), d


def _write(path, doc):
    path.write_text(json.dumps(doc))
    return path


def _codes(bundle):
    return [w.code for w in bundle.warnings]


@pytest.mark.parametrize("name", ["t.json", "t.pt.trace.json", "t.json.gz", "renamed.bin"])
def test_detected_by_content(tmp_path, name):
    doc = kineto_document(build_timeline(synth.preset("tiny_two_kernels")))
    data = json.dumps(doc).encode()
    p = tmp_path / name
    p.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    assert sniff_format(p) is Format.KINETO
    b = load_trace(p)
    assert b.meta.format == "kineto" and len(b.kernels) == 2


def test_frames_match_the_timeline(healthy):
    _, tl, path, _ = healthy
    b = load_trace(path)
    assert b.meta.tables["kernel"] == tl.kernels["start"].size == len(b.kernels)
    assert b.meta.tables["cuda_runtime"] + b.meta.tables.get("cuda_driver", 0) == len(b.api)
    # the GPU copies of the annotations are counted, never read twice
    assert b.meta.tables["gpu_user_annotation"] == b.meta.tables["user_annotation"] == len(b.nvtx)
    assert (b.kernels["launch_start_ns"] >= 0).all()  # every kernel joined to its launch
    assert (b.kernels["launch_api"].astype(str) != "").all()
    assert set(b.kernels["stream_id"]) == set(tl.kernels["stream"].tolist())
    dur = np.sort((b.kernels["end_ns"] - b.kernels["start_ns"]).to_numpy())
    want = np.sort(tl.kernels["end"] - tl.kernels["start"])
    assert np.abs(dur - want).max() <= 1  # µs with three decimals: whole ns
    assert b.gpus["name"].iloc[0].startswith("NVIDIA") and b.gpus["sm_count"].iloc[0] > 0
    assert (b.kernels["grid_x"] > 0).all() and len(b.launch_shapes)
    assert "not_in_format" in _codes(b) and not len(b.gpu_metrics)


def test_legacy_schema_and_string_thread_ids(healthy, tmp_path):
    sc, tl, _, _ = healthy
    p = write_kineto_json(tmp_path / "old.json", sc, schema="legacy")
    raw = json.loads(p.read_text())
    assert any(e.get("cat") == "Kernel" and str(e["tid"]).startswith("stream ")
               for e in raw["traceEvents"])
    b = load_trace(p)
    assert b.meta.extra["kineto_schema"].startswith("legacy")
    assert len(b.kernels) == tl.kernels["start"].size
    ranges = [e for e in raw["traceEvents"] if e.get("cat") == "Operator"]
    assert len(b.nvtx) == len([e for e in ranges if "::" not in e["name"]]) > 0  # ops: not ranges
    assert (b.kernels["launch_start_ns"] >= 0).all()


def test_flows_link_launches_without_correlation_args(healthy, tmp_path):
    _, tl, path, _ = healthy
    doc = json.loads(path.read_text())
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and isinstance(e.get("args"), dict):
            e["args"].pop("correlation", None)
    b = load_trace(_write(tmp_path / "flows.json", doc))
    assert (b.kernels["launch_start_ns"] >= 0).all() and (b.memcpy["launch_start_ns"] >= 0).all()
    assert not [w for w in b.warnings if w.code == "no_launch_join" and "kernel" in w.message]
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("ph") not in ("s", "f")]
    b = load_trace(_write(tmp_path / "none.json", doc))
    assert "no_launch_join" in _codes(b) and (b.kernels["launch_start_ns"] == -1).all()


def test_hand_written_trace(tmp_path):
    doc = {"schemaVersion": 1, "baseTimeNanoseconds": 1_700_000_000_000_000_000,
           "distributedInfo": {"rank": 3, "world_size": 8},
           "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-40GB", "numSms": 108,
                                 "computeMajor": 8, "computeMinor": 0,
                                 "maxThreadsPerMultiprocessor": 2048}],
           "traceEvents": [
               {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 10, "tid": 11,
                "ts": 1000.5, "dur": 100},
               {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 11,
                "ts": 1001, "dur": 5},
               {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10,
                "tid": 11, "ts": 1002.25, "dur": 4.5, "args": {"correlation": 5}},
               {"ph": "X", "cat": "kernel", "name": "void at::native::gemm<float>(float*)",
                "pid": 0, "tid": 7, "ts": 1010.0625, "dur": 20.0005,
                "args": {"correlation": 5, "device": 0, "stream": 7, "grid": [4, 1, 1],
                         "block": [128, 1, 1], "registers per thread": 32,
                         "shared memory": 1024}},
               {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)",
                "pid": 0, "tid": 7, "ts": 1040, "dur": 2, "args": {"bytes": 4096}},
               {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7,
                "ts": 1050, "dur": 1, "args": {"stream": 7}},
               {"ph": "M", "name": "thread_name", "pid": 10, "tid": 11,
                "args": {"name": "python"}},
               {"ph": "X", "cat": "kernel", "name": "bad", "pid": 0, "tid": 7, "ts": "x"}]}
    b = load_trace(_write(tmp_path / "hand.json", doc))
    k = b.kernels.iloc[0]
    assert k["start_ns"] == 9562 and k["end_ns"] - k["start_ns"] == 20000  # ns from trace start
    assert k["launch_start_ns"] == 1750 and k["launch_api"] == "cudaLaunchKernel"
    assert k["short_name"] == "gemm" and k["block_x"] == 128 and k["smem_static_bytes"] == 1024
    assert list(b.nvtx["text"].astype(str)) == ["ProfilerStep#1"]  # aten ops are not ranges
    assert b.memcpy.iloc[0][["copy_kind", "src_kind", "dst_kind", "bytes"]].tolist() == [
        "H2D", "pageable", "device", 4096]
    assert b.sync["sync_kind"].tolist() == ["stream"]
    assert b.meta.environment == {"RANK": "3", "WORLD_SIZE": "8"}
    assert b.meta.tables == {"cpu_op": 2, "cuda_runtime": 1, "cuda_sync": 1, "gpu_memcpy": 1,
                             "kernel": 2}
    assert "dropped_rows" in _codes(b)
    assert b.threads["name"].tolist() == ["python"] and b.sm_limits["max_threads_per_sm"][0] == 2048
    assert b.meta.session_start_utc_ns == 1_700_000_000_000_000_000 + 1_000_500


def test_cpu_only_trace_is_a_warning(tmp_path):
    doc = {"schemaVersion": 1, "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 0, "dur": 3}]}
    b = load_trace(_write(tmp_path / "cpu.json", doc))
    assert "no_gpu_events" in _codes(b) and not b.has_cuda


@pytest.mark.parametrize("text,cls,reason", [
    ('{"traceEvents": [{"ph": "X", "cat": "kernel"', InputError, "truncated JSON"),
    ('{"schemaVersion": 1, "traceEvents": {}}', UnrecognizedFormatError, "without a traceEvents"),
    ('{"schemaVersion": 1, "traceEvents": []}', UnrecognizedFormatError, "without events"),
])
def test_bad_kineto_input(tmp_path, text, cls, reason):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(cls) as e:
        load_trace(p)
    assert reason in e.value.reason and e.value.exit_code == 3


def test_non_kineto_json_and_cut_gzip(tmp_path):
    p = tmp_path / "other.json"
    p.write_text('{"name": "not a trace"}')
    with pytest.raises(UnrecognizedFormatError) as e:
        sniff_format(p)
    assert "not a PyTorch profiler" in e.value.reason
    data = gzip.compress(json.dumps(kineto_document(build_timeline(
        synth.preset("tiny_two_kernels")))).encode())
    g = tmp_path / "cut.json.gz"
    g.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError) as e:
        load_trace(g)
    assert "truncated gzip" in e.value.reason


@pytest.mark.parametrize("name,short", [
    ("void at::native::vectorized_elementwise_kernel<4, at::native::Fn>(int, Fn)",
     "vectorized_elementwise_kernel"),
    ("ampere_sgemm_128x64_nn", "ampere_sgemm_128x64_nn"),
    ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_h161616gemm>(Params)", "Kernel2"),
])
def test_short_name(name, short):
    assert short_name(name) == short


def test_mixed_clocks_are_dropped_with_a_warning(tmp_path):
    evs = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1000.0 + i,
            "dur": 0.5, "args": {"stream": 7}} for i in range(5)]
    evs.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                "ts": 1_700_000_000_000_000.0, "dur": 0.5})  # µs since the epoch
    b = load_trace(_write(tmp_path / "mixed.json", {"schemaVersion": 1, "traceEvents": evs}))
    assert len(b.kernels) == 5 and b.kernels["end_ns"].max() < 10_000
    w = {x.code: x for x in b.warnings}
    assert w["mixed_clocks"].count == 1 and "dropped_rows" not in w


def test_hostile_events_never_crash(tmp_path):
    evs = [None, 3, "x", {"ph": "X"}, {"ph": "X", "cat": ["kernel"], "ts": 1},
           {"ph": "X", "cat": "kernel", "name": {"a": 1}, "ts": 2, "dur": "1", "pid": "p",
            "tid": 1e30, "args": {"grid": [1, "2", 3], "block": [True, 1, 1],
                                  "correlation": "7", "stream": [1]}},
           {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1, "dur": -5,
            "args": "not a dict"},
           {"ph": "M", "name": "thread_name", "args": None},
           {"ph": "s", "id": "z", "ts": "q"}, {"ph": "X", "cat": "kernel", "ts": 2**70, "dur": 1}]
    p = _write(tmp_path / "hostile.json", {"schemaVersion": 1, "traceEvents": evs})
    b = load_trace(p)
    assert b.meta.format == "kineto" and len(b.kernels) <= 3
    assert analyze_path(str(p))["trace"]["format"] == "kineto"


def test_cut_or_damaged_bytes_give_a_typed_error_or_a_bundle(tmp_path):
    data = json.dumps(kineto_document(build_timeline(synth.preset("tiny_two_kernels")))).encode()
    rng = np.random.default_rng(0)
    cases = [data[:n] for n in np.linspace(1, len(data) - 1, 25).astype(int)]
    for _ in range(25):
        b = bytearray(data)
        for i in rng.integers(0, len(b), 3):
            b[i] = int(rng.integers(0, 256))
        cases.append(bytes(b))
    outcomes = set()
    for i, blob in enumerate(cases):
        p = tmp_path / f"c{i}.json"
        p.write_bytes(blob)
        try:
            outcomes.add(load_trace(p).meta.format)
        except InputError as e:
            assert e.exit_code == 3
            outcomes.add("error")
    assert "error" in outcomes  # every cut is refused; some damaged bytes still parse


def _kernel(ts, dur, corr):
    return {"ph": "X", "cat": "kernel", "name": "void gemm_kernel(float*)", "pid": 0, "tid": 7,
            "ts": ts, "dur": dur, "args": {"correlation": corr, "device": 0, "stream": 7}}


def _launch(ts, corr, tid=11):
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": tid,
            "ts": ts, "dur": 5, "args": {"correlation": corr}}


def test_host_operators_are_kept_apart_and_name_the_host_time_in_a_gap(tmp_path):
    """The host spends 8 of a 10.1 ms gap in ``aten::item`` (its ``aten::_local_scalar_dense``
    child 6 ms) on the launching thread: the operators are no NVTX ranges (no steps, no phases)
    but ``TraceBundle.cpu_ops``, and the top gap's "CPU was" names the innermost one covering
    half the gap, as a host operator."""
    ev = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 10,
           "tid": 11, "ts": i * 20_000, "dur": 20_000} for i in range(3)]
    ev += [_launch(i * 20_000 + 10, i + 1) for i in range(3)]
    ev += [_kernel(i * 20_000 + 100, 9_900, i + 1) for i in range(3)]  # busy 0.1–10 ms a step
    ev += [{"ph": "X", "cat": "cpu_op", "name": "aten::item", "pid": 10, "tid": 11,
            "ts": 31_000, "dur": 8_000},
           {"ph": "X", "cat": "cpu_op", "name": "aten::_local_scalar_dense", "pid": 10,
            "tid": 11, "ts": 32_000, "dur": 6_000},
           {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 99,  # no launches
            "ts": 30_500, "dur": 9_000}]
    path = _write(tmp_path / "ops.json", {"schemaVersion": 1, "traceEvents": ev})
    b = load_trace(path)
    assert sorted(b.cpu_ops["text"].astype(str)) == ["aten::_local_scalar_dense", "aten::item",
                                                     "aten::mm"]
    assert set(b.cpu_ops["domain"]) == {"cpu_op"}
    assert all(t.startswith("ProfilerStep#") for t in b.nvtx["text"].astype(str))
    v = analyze_path(str(path))
    top = max(v["gaps"]["top"], key=lambda g: g["duration_ms"])
    assert top["cpu_activity"] == "in aten::_local_scalar_dense (cpu_op) for 59% of the gap (+1 call)"
