"""An Nsight Compute raw page read alone, without FLOP or DRAM counters (issue 26, item 5): its
kernels are listed with their counters, the Tensor Core share comes from the tensor pipe, the
roofline says which counters are missing, and nothing claims the file holds no kernels."""
from __future__ import annotations

import json

import pytest

import nsys_diag
from nsys_diag.analyses.kernels.ncu_kernels import ncu_kernels
from nsys_diag.app.analyze import analyze_path
from nsys_diag.loaders import load_trace
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import NCU_CAPTURE_COMMAND
from nsys_diag.synth import programs

NCU_CASES = tuple(programs.NCU_CASES)


@pytest.fixture(scope="module", params=NCU_CASES)
def case(request, tmp_path_factory):
    path = programs.write_case(request.param, tmp_path_factory.mktemp("ncu") / "k.csv")
    return path, programs.facts(request.param)


def test_kernel_table_and_tensor_pipe_share_match_the_known_facts(case):
    path, facts = case
    b = load_trace(str(path))
    nk = ncu_kernels(b.ncu_launches, b.ncu_metrics, th=Thresholds())
    table = nk.kernels.table.set_index("name")
    assert nk.kernels.kernel_count == facts["kernels"]["count"]
    assert nk.kernels.total_ns / 1e6 == pytest.approx(facts["kernels"]["total_ms"])
    for name, want in facts["kernels"]["by_name"].items():
        row = table.loc[name]
        assert row["count"] == want["count"]
        assert row["tensor_pipe_pct"] == pytest.approx(want["tensor_pipe_pct"])
        assert row["sm_throughput_pct"] == pytest.approx(want["sm_throughput_pct"])
        assert bool(row["tensor_core"]) is (want["tensor_pipe_pct"] > 0)
    assert nk.tensor_cores.share_of_kernel_time == pytest.approx(facts["tensor_pipe_kernel_share"])
    assert nk.tensor_cores.source == "ncu" and nk.tensor_cores.confidence == "high"


def _analysis_json(path, tmp_path) -> dict:
    return json.loads(json.dumps(analyze_path(str(path))))


def test_the_report_lists_the_kernels_and_says_which_counters_are_missing(case, tmp_path):
    path, facts = case
    doc = _analysis_json(path, tmp_path)
    assert {k["name"] for k in doc["kernels"]} == set(facts["kernels"]["by_name"])
    assert all("tensor_pipe_pct" in k and "sm_throughput_pct" in k for k in doc["kernels"])
    assert doc["tensor_cores"]["share_of_kernel_time"] == pytest.approx(
        facts["tensor_pipe_kernel_share"])
    assert doc["roofline"]["available"] is False
    assert "counters missing" in doc["roofline"]["reason"]
    v = doc["verdict"]
    assert "no CUDA kernels or copies" not in v["headline"]
    assert "counters missing" in v["headline"]
    assert any(NCU_CAPTURE_COMMAND in r for r in v["recommendations"])
    assert doc["program"]["framework"] == facts["framework"]


def test_the_python_api_gives_the_profiled_kernels(case):
    path, facts = case
    a = nsys_diag.analyze(str(path))
    names = set(a.kernels["name"].astype(str))
    assert names == set(facts["kernels"]["by_name"])
