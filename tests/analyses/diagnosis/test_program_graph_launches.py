"""CUDA graph launches (``cudaGraphLaunch``/``cuGraphLaunch`` calls) count as CUDA graphs in use
for the whole capture, in memory and streamed, even without a graph trace table or graph node
ids in the kernel rows: ``program`` names them, and no advice suggests CUDA graphs again."""
from __future__ import annotations

import dataclasses

import pytest

from nsys_diag.analyses.diagnosis.program import capture_signals, detect_program
from nsys_diag.loaders import load_trace
from nsys_diag.synth.presets import _launch_bound
from nsys_diag.synth.writer import write_nsys_sqlite, write_preset
from tests.app.test_stream import SAMPLES, _view, _without_chunks, assert_same

GRAPH_ADVICE = "CUDA graph"


def _graph_launched(scenario):
    """``scenario`` with every kernel launched through ``cudaGraphLaunch``."""
    phases = tuple(dataclasses.replace(p, kernels=tuple(
        dataclasses.replace(k, api="cudaGraphLaunch") for k in p.kernels)) for p in scenario.phases)
    return dataclasses.replace(scenario, phases=phases)


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    d = tmp_path_factory.mktemp("graphs")
    return {"cuda_graphs": write_preset(d / "cuda_graphs.sqlite", "cuda_graphs"),
            "launch_bound_graphs": write_nsys_sqlite(d / "launch_bound_graphs.sqlite",
                                                     _graph_launched(_launch_bound()))}


def _advice(view: dict) -> list[str]:
    texts = list(view["verdict"]["recommendations"])
    texts += [a["text"] for a in view["verdict"]["advice"]]
    return texts + [a["text"] for f in view["findings"] for a in f.get("advice", [])]


@pytest.mark.parametrize("name", ["cuda_graphs", "launch_bound_graphs"])
def test_the_export_names_its_graph_launch_apis_without_graph_tables(paths, name):
    b = load_trace(paths[name])
    assert "CUPTI_ACTIVITY_KIND_GRAPH_TRACE" not in b.meta.tables
    assert not (b.launch_shapes["graph_node_id"] > 0).any()
    assert b.meta.extra["graph_launch_apis"] == ["cudaGraphLaunch"]
    skeleton = load_trace(paths[name], kernel_detail=False, skeleton=True)
    assert not len(skeleton.api)  # the skeleton reads no API rows, yet knows the graph launches
    assert skeleton.meta.extra["graph_launch_apis"] == ["cudaGraphLaunch"]
    program = detect_program(capture_signals(skeleton))
    assert "cuda_graphs" in program.techniques


def test_an_export_without_graph_launches_names_none():
    b = load_trace(SAMPLES / "launch_bound.sqlite")
    assert b.meta.extra["graph_launch_apis"] == []
    assert "cuda_graphs" not in detect_program(capture_signals(b)).techniques


@pytest.mark.parametrize("name", ["cuda_graphs", "launch_bound_graphs"])
def test_graph_launches_are_a_technique_in_use_with_their_evidence(paths, name):
    whole = _view(paths[name], memory_budget="none")
    streamed = _view(paths[name], chunk_rows=400)
    assert streamed["trace"]["chunks"]["count"] > 1
    for view in (whole, streamed):
        program = view["program"]
        assert "cuda_graphs" in program["techniques"]
        assert any("cudaGraphLaunch" in e["detail"] for e in program["evidence"])
        assert not [t for t in _advice(view) if GRAPH_ADVICE in t]
    assert_same(whole, _without_chunks(streamed))


def test_a_launch_bound_run_without_graphs_is_still_advised_to_use_them():
    view = _view(SAMPLES / "launch_bound.sqlite", memory_budget="none")
    assert view["verdict"]["code"] == "launch_bound"
    assert "cuda_graphs" not in view["program"]["techniques"]
    assert [t for t in _advice(view) if GRAPH_ADVICE in t]


def test_a_bundle_without_the_file_level_names_reads_its_api_rows():
    """A Kineto trace (read whole) has no ``graph_launch_apis``: its API rows' names count."""
    b = load_trace(SAMPLES / "healthy_tc.pt.trace.json.gz")
    assert "graph_launch_apis" not in b.meta.extra
    names = set(capture_signals(b).api_names)
    assert names and names == set(b.api["name"].astype(str))
