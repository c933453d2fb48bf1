"""Validated on real torch.profiler traces (tests/loaders/kineto_traces/, see its NOTICE): each
loads, its kernel time per kernel name equals the sum over the raw JSON's kernel events
(computed here independently, as Holistic Trace Analysis's kernel breakdown sums them), its
launches are joined, and ``analyze`` ends with a verdict, never a traceback."""
from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest

from nsys_diag.app.analyze import analyze_path
from nsys_diag.loaders import load_trace

DATA = Path(__file__).parent / "kineto_traces"
TRACES = sorted(p.name for p in DATA.glob("*.json.gz"))

# per trace: (kernels, steps found, verdict)
EXPECTED = {
    "hta_sampled_rank-0.json.gz": (1154, 2, "overhead_bound"),
    "hta_event_sync.json.gz": (4, 1, "insufficient_data"),
    "hta_mi250_rocm.json.gz": (14, 2, "insufficient_data"),
    "hta_cpu_only.json.gz": (0, 1, "insufficient_data"),
}


def _raw_kernel_ns(path: Path) -> dict[str, int]:
    doc = json.loads(gzip.decompress(path.read_bytes()))
    out: dict[str, int] = defaultdict(int)
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            out[e["name"]] += round(float(e["dur"]) * 1000)
    return dict(out)


def test_every_trace_has_an_expectation():
    assert set(TRACES) == set(EXPECTED)


@pytest.mark.parametrize("name", TRACES)
def test_kernel_totals_match_the_raw_json(name):
    b = load_trace(DATA / name)
    assert b.meta.format == "kineto" and len(b.kernels) == EXPECTED[name][0]
    raw = _raw_kernel_ns(DATA / name)
    dur = (b.kernels["end_ns"] - b.kernels["start_ns"]).groupby(
        b.kernels["name"].astype(str)).agg(["sum", "size"])
    assert set(dur.index) == set(raw)
    for kname, ns in raw.items():  # rounding of each event's start and end: ≤ 1 ns each
        assert abs(int(dur.loc[kname, "sum"]) - ns) <= dur.loc[kname, "size"], kname
    if len(b.kernels):
        assert (b.kernels["launch_start_ns"] >= 0).mean() > 0.95


@pytest.mark.parametrize("name", TRACES)
def test_analyze_gives_a_verdict(name):
    v = analyze_path(str(DATA / name))
    assert v["trace"]["format"] == "kineto"
    assert ((v.get("steps") or {}).get("count"), v["verdict"]["code"]) == EXPECTED[name][1:]
    assert "not_in_format" in [d["code"] for d in v["data_quality"]]


def test_event_sync_trace_has_its_syncs():
    b = load_trace(DATA / "hta_event_sync.json.gz")
    assert len(b.sync) == 4 and set(b.sync["sync_kind"].astype(str)) <= {
        "stream", "event", "device", "stream_wait", "unknown"}
    assert "unknown" not in set(b.sync["sync_kind"].astype(str))
    assert len(b.gpus) == 8 and (b.gpus["sm_count"] == 108).all()
    links = b.meta.extra["replay_columns"]  # cudaEventRecord (corr 1533) → the two waits on it
    assert links.cuda_events["correlation_id"].tolist() == [1533]
    assert links.sync_events["correlation_id"].tolist() == [1536, 1537]
    replay = analyze_path(str(DATA / "hta_event_sync.json.gz"))["replay"]
    assert replay["available"] and replay["fidelity"]["error_pct"] < 5


def test_cpu_only_trace_warns():
    b = load_trace(DATA / "hta_cpu_only.json.gz")
    assert not b.has_cuda and "no_gpu_events" in [w.code for w in b.warnings]


@pytest.mark.parametrize("name", TRACES)
def test_outputs_follow_the_json_contract(name, tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from click.testing import CliRunner

    from nsys_diag.cli import main

    schemas = Path(__file__).parents[2] / "nsys_diag" / "schemas"
    for command, schema in (("analyze", "analysis"), ("inspect", "inspect")):
        html = ["-o", str(tmp_path / "r.html")] if command == "analyze" else []
        r = CliRunner().invoke(main, [command, str(DATA / name), "--json", "-", *html])
        assert r.exit_code == 0, r.output
        jsonschema.validate(json.loads(r.stdout),
                            json.loads((schemas / f"{schema}.schema.json").read_text()))


def test_unnamed_host_time_says_sampling_needs_an_nsys_capture_not_this_one():
    """torch.profiler cannot sample the CPU: the 'other' time's detail says the sampling needs
    an Nsight Systems capture, not that "the capture" could have it."""
    detail = analyze_path(str(DATA / "hta_sampled_rank-0.json.gz"))["gaps"]["by_cause_detail"]["other"]
    assert detail.endswith("CPU sampling would name it, but it needs an Nsight Systems capture")
    assert "in the capture" not in detail


def test_rocm_trace_names_its_hip_calls_as_their_cuda_twins():
    """HTA's MI250 trace: a 6.5 ms hipLaunchKernel holds the GPU idle in backward. The gap is a
    launch cause (the call the gap table's 'CPU was' names), not host time 'that no CUDA call
    covers'; the replay reads the inferred phases the phase table shows."""
    doc = analyze_path(str(DATA / "hta_mi250_rocm.json.gz"))
    top = doc["gaps"]["top"][0]
    assert top["cause"] == "launch" and "hipLaunchKernel" in top["cpu_activity"]
    assert doc["gaps"]["by_cause"]["launch"] > 6.0 > doc["gaps"]["by_cause"]["other"]
    assert "hipLaunchKernel 6.6 ms" in doc["gaps"]["by_cause_detail"]["launch"]
    phases = {r["phase"] for r in doc["replay"]["critical_path"] if r["kind"] == "host_cpu"}
    assert {"forward", "backward", "optimizer"} <= phases
