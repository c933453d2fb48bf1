"""``analyze --trace-out``: the Chrome-trace file, its refusals."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from nsys_diag.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "sample_traces" / "worked_example.sqlite"


def test_trace_out_writes_a_chrome_trace_in_a_new_directory(tmp_path):
    out = tmp_path / "new" / "run.trace.json"
    r = CliRunner().invoke(main, ["analyze", str(SAMPLE), "--no-html", "--trace-out", str(out)])
    assert r.exit_code == 0, r.output
    assert f"trace events: {out}" in r.output
    doc = json.loads(out.read_text())
    assert doc["displayTimeUnit"] == "ns" and doc["otherData"]["source"] == SAMPLE.name
    assert any(e["ph"] == "X" and e["cat"] == "idle" for e in doc["traceEvents"])
    assert [p.name for p in out.parent.iterdir()] == ["run.trace.json"]  # atomic: no temporary left


def test_trace_out_refuses_a_streamed_run_before_reading(tmp_path):
    out = tmp_path / "t.json"
    r = CliRunner().invoke(main, ["analyze", str(SAMPLE), "--no-html", "--chunk-rows", "300",
                                  "--trace-out", str(out)])
    assert r.exit_code == 2
    assert "streamed" in r.output and "--memory-mode middle" in r.output
    assert not out.exists()


def test_trace_out_refuses_stdout(tmp_path):
    r = CliRunner().invoke(main, ["analyze", str(SAMPLE), "--no-html", "--trace-out", "-"])
    assert r.exit_code == 2 and "takes a file" in r.output


def test_trace_out_follows_the_device_selection(tmp_path):
    multi = SAMPLE.with_name("multi_gpu.sqlite")
    out = tmp_path / "d.json"
    r = CliRunner().invoke(main, ["analyze", str(multi), "--no-html", "--device", "1", "--trace-out", str(out)])
    assert r.exit_code == 0, r.output
    gpus = {e["args"]["name"].split(" ·")[0] for e in json.loads(out.read_text())["traceEvents"]
            if e["ph"] == "M" and e["name"] == "process_name" and e["args"]["name"].startswith("GPU")}
    assert gpus == {"GPU 1"}
