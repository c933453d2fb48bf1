"""PyTorch profiler (Kineto) traces through the commands: analyze, inspect, batch of per-rank
traces, compare across formats, the Python API, and broken JSON (exit 3, no traceback)."""
from __future__ import annotations

import gzip
import json

import pytest
from click.testing import CliRunner

import nsys_diag
from nsys_diag import synth
from nsys_diag.cli import main
from nsys_diag.synth.kineto_writer import write_kineto_json, write_kineto_ranks


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("kcli")
    sc = synth.preset("healthy_tc", steps=5)
    return synth.write_nsys_sqlite(d / "t.sqlite", sc), write_kineto_json(d / "t.pt.trace.json", sc)


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_analyze_json_names_the_format(pair, tmp_path):
    r = run("analyze", pair[1], "--json", "-", "-o", tmp_path / "r.html")
    assert r.exit_code == 0, r.output
    view = json.loads(r.stdout)
    assert view["trace"]["format"] == "kineto"
    assert view["trace"]["tables"]["kernel"] > 0 and "gpu_user_annotation" in view["trace"]["tables"]
    assert view["verdict"]["code"] == "compute_bound"
    assert "PyTorch profiler" in (tmp_path / "r.html").read_text()


def test_inspect(pair):
    r = run("inspect", pair[1])
    assert r.exit_code == 0, r.output
    assert "PyTorch profiler (Kineto) trace" in r.output and "cuda_runtime" in r.output


def test_batch_of_rank_traces_is_one_job(tmp_path):
    r0, r1 = write_kineto_ranks(tmp_path / "job", synth.preset("multi_gpu"))
    r0.rename(r0.with_name("b.json"))  # names without ranks: distributedInfo.rank says
    r1.rename(r1.with_name("a.json"))
    (tmp_path / "job" / "options.json").write_text('{"lr": 0.1}')  # not a trace: listed as ignored
    r = run("batch", tmp_path / "job", "-o", tmp_path / "out", "--json", "-")
    assert r.exit_code == 0, r.output
    index = json.loads(r.stdout)
    assert len(index["traces"]) == 2
    assert [i["label"] for i in index["ignored"]] == ["options.json"]
    assert index["job"]["verdict"] == "communication_bound"
    assert {row["label"]: row["rank"] for row in index["ranks"]["rows"]} == {"a.json": 1,
                                                                            "b.json": 0}


def test_compare_across_formats(pair):
    r = run("compare", pair[0], pair[1])
    assert r.exit_code == 0, r.output
    assert "no significant change" in r.output
    assert "formats differ: nsys-sqlite vs kineto" in r.output


def test_python_api(pair):
    a = nsys_diag.analyze(pair[1])
    assert a.verdict.code == "compute_bound" and len(a.steps)


@pytest.mark.parametrize("data", [
    b'{"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "ker',
    b'{"not": "a trace"}',
    gzip.compress(b'{"schemaVersion": 1, "traceEvents": [' + b' ' * 100_000)[:200],
    b'{"schemaVersion": 1, "traceEvents": []}',
])
@pytest.mark.parametrize("command", ["analyze", "inspect"])
def test_broken_json_exits_3(tmp_path, data, command):
    p = tmp_path / "bad.json"
    p.write_bytes(data)
    r = run(command, p)
    assert r.exit_code == 3, r.output
    assert "Traceback" not in r.output and f"cannot read {p}" in r.output


def test_inspect_says_what_the_format_cannot_hold(pair):
    r = run("inspect", pair[1])
    line = next(ln for ln in r.output.splitlines() if "gpu metrics" in ln)
    assert "not in this format" in line
    nsys = run("inspect", pair[0])
    assert "not in this format" not in nsys.output


def test_own_trace_out_is_not_an_input(pair, tmp_path):
    d = tmp_path / "runs"
    d.mkdir()
    r = run("analyze", pair[0], "--trace-out", d / "timeline.json", "-o", tmp_path / "r.html")
    assert r.exit_code == 0, r.output
    r = run("analyze", d / "timeline.json")
    assert r.exit_code == 3 and "--trace-out" in r.output
    (d / "a.sqlite").write_bytes(pair[0].read_bytes())
    r = run("batch", d, "-o", tmp_path / "out", "--json", "-")
    assert r.exit_code == 0, r.output
    index = json.loads(r.stdout)
    assert len(index["traces"]) == 1 and index["ignored"][0]["label"] == "timeline.json"
