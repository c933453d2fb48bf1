"""`nsys-diag analyze` end to end: outputs, options, exit codes, presets' verdicts, real traces."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from conftest import shared_trace
from nsys_diag.cli import main
from nsys_diag.report.json_out import load_schema

synth = pytest.importorskip("nsys_diag.synth")
VALIDATOR = jsonschema.Draft202012Validator(load_schema())
PRESETS = ("worked_example", "healthy_tc", "simt_gemm", "memory_bound", "overhead_bound",
           "launch_bound", "multi_gpu", "inference", "no_cuda")


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("analyze")
    return {n: synth.write_preset(d / f"{n}.sqlite", n) for n in PRESETS}


def run(*args, env=None):
    return CliRunner().invoke(main, ["analyze", *map(str, args)], env=env or {"SOURCE_DATE_EPOCH": "0"})


def _valid(view: dict) -> dict:
    errors = list(VALIDATOR.iter_errors(view))
    assert not errors, [(list(e.path), e.message[:200]) for e in errors[:5]]
    return view


@pytest.mark.parametrize("name", PRESETS)
def test_presets_give_their_verdicts(traces, tmp_path, name):
    out = tmp_path / "a.json"
    res = run(traces[name], "--json", out, "--no-html")
    assert res.exit_code == 0, res.output
    view = _valid(json.loads(out.read_text()))
    assert view["verdict"]["code"] == synth.expected(name)["verdict"]
    assert f"VERDICT  {view['verdict']['code']}" in res.output


def test_default_html_beside_the_trace_and_summary(traces, tmp_path):
    trace = tmp_path / "run.sqlite"
    trace.write_bytes(traces["worked_example"].read_bytes())
    res = run(trace)
    assert res.exit_code == 0, res.output
    html = tmp_path / "run.nsys-diag.html"
    assert html.is_file() and html.read_text().lstrip().lower().startswith("<!doctype html")
    assert f"report: {html}" in res.output
    assert "data_loading" in res.output and "52%" in res.output


def test_json_to_stdout_keeps_stdout_machine_readable(traces):
    res = run(traces["worked_example"], "--json", "-", "--no-html")
    assert res.exit_code == 0, res.stderr
    view = _valid(json.loads(res.stdout))
    assert view["generated_at"] == "1970-01-01T00:00:00Z"  # SOURCE_DATE_EPOCH
    assert "VERDICT" in res.stderr and "VERDICT" not in res.stdout
    phases = {p["name"]: p["share"] for p in view["phases"]}
    assert phases["data_loading"] == pytest.approx(0.525, abs=1e-6)
    assert phases["forward"] == pytest.approx(0.225, abs=1e-6)
    assert phases["backward"] == pytest.approx(0.1875, abs=1e-6)
    assert phases["optimizer_step"] == pytest.approx(0.0375, abs=1e-6)
    assert phases["logging"] == pytest.approx(0.025, abs=1e-6)
    assert view["gpu"]["utilization"] == pytest.approx(0.24, abs=1e-6)


@pytest.mark.parametrize("args", [("--json", "-"), ("--md", "-"), ("--json", "-", "--md", "-")])
def test_machine_output_on_stdout_writes_no_html(traces, tmp_path, args):
    trace = tmp_path / "run.sqlite"
    trace.write_bytes(traces["worked_example"].read_bytes())
    res = run(trace, *args)
    assert res.exit_code == 0, res.output
    assert list(tmp_path.iterdir()) == [trace]  # nothing beside the trace
    assert "report:" not in res.stderr
    if args[:2] == ("--json", "-") and len(args) == 2:
        _valid(json.loads(res.stdout))


def test_machine_output_on_stdout_with_o_writes_the_html(traces, tmp_path):
    html = tmp_path / "asked.html"
    res = run(traces["worked_example"], "--json", "-", "-o", html)
    assert res.exit_code == 0, res.output
    _valid(json.loads(res.stdout))
    assert html.is_file() and f"report: {html}" in res.stderr


def test_json_to_a_file_still_writes_the_html_beside_the_trace(traces, tmp_path):
    trace = tmp_path / "run.sqlite"
    trace.write_bytes(traces["worked_example"].read_bytes())
    res = run(trace, "--json", tmp_path / "a.json")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "a.json").is_file() and (tmp_path / "run.nsys-diag.html").is_file()


def test_markdown_output_and_explicit_html_path(traces, tmp_path):
    pytest.importorskip("nsys_diag.report.markdown")
    md = tmp_path / "pr.md"
    html = tmp_path / "sub.html"
    res = run(traces["worked_example"], "--md", md, "-o", html)
    assert res.exit_code == 0, res.output
    assert md.read_text().strip() and html.is_file()
    assert not (traces["worked_example"].parent / "worked_example.nsys-diag.html").exists()


def test_unwritable_trace_directory_falls_back_to_cwd(traces, tmp_path, monkeypatch):
    from nsys_diag.app import outputs

    monkeypatch.setattr(outputs, "dir_writable", lambda d: False)
    monkeypatch.chdir(tmp_path)
    res = run(traces["healthy_tc"])
    assert res.exit_code == 0, res.output
    assert "not writable" in res.output
    assert (tmp_path / "healthy_tc.nsys-diag.html").is_file()


def test_window_steps_and_step_range_options(traces, tmp_path):
    out = tmp_path / "w.json"
    res = run(traces["worked_example"], "--no-html", "--json", out, "--steps", "3:5")
    assert res.exit_code == 0, res.output
    v = json.loads(out.read_text())
    assert v["steps"]["analysed_count"] == 3 and v["window"]["source"] == "steps"
    assert v["window"]["duration_ms"] == pytest.approx(2400.0)
    start = v["steps"]["per_step"][3]["start_ns"]
    res = run(traces["worked_example"], "--no-html", "--json", out, "--window",
              f"{start / 1e9}s:{(start + 800_000_000) / 1e9}s")
    assert res.exit_code == 0, res.output
    v = json.loads(out.read_text())
    assert v["window"]["source"] == "user"
    assert v["window"]["duration_ms"] == pytest.approx(800.0, abs=1e-3)
    res = run(traces["worked_example"], "--no-html", "--json", out, "--step-range", "forward")
    assert res.exit_code == 0, res.output
    v = json.loads(out.read_text())
    assert v["steps"]["source"] == "user:forward"


def test_phase_map_and_thresholds_files(traces, tmp_path):
    pm = tmp_path / "phases.toml"
    pm.write_text('[phases]\noverhead = ["^data_loading$"]\n')
    th = tmp_path / "th.toml"
    th.write_text("input_bound_verdict_share = 0.9\n")
    out = tmp_path / "p.json"
    res = run(traces["worked_example"], "--no-html", "--json", out, "--phase-map", pm,
              "--thresholds", th)
    assert res.exit_code == 0, res.output
    v = json.loads(out.read_text())
    assert {p["name"]: p["canonical"] for p in v["phases"]}["data_loading"] == "overhead"
    assert v["thresholds"]["input_bound_verdict_share"] == 0.9
    assert v["verdict"]["code"] == "overhead_bound"


@pytest.mark.parametrize("args,code,msg", [
    (["--window", "5:1"], 2, "END must be after START"),
    (["--window", "abc"], 2, "START:END"),
    (["--steps", "x"], 2, "FIRST:LAST"),
    (["--device", "7"], 2, "--device 7"),
    (["--max-memory", "1k"], 3, "--max-memory"),
    (["--max-memory", "lots"], 2, "--max-memory"),
])
def test_bad_options_exit_with_a_message(traces, args, code, msg):
    res = run(traces["worked_example"], "--no-html", *args)
    assert res.exit_code == code, res.output
    assert msg in res.stderr and "Traceback" not in res.output


def test_bad_toml_files(traces, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("this is = = not toml")
    res = run(traces["worked_example"], "--no-html", "--thresholds", bad)
    assert res.exit_code == 2 and "not valid TOML" in res.stderr
    unknown = tmp_path / "unknown.toml"
    unknown.write_text("no_such_threshold = 1\n")
    res = run(traces["worked_example"], "--no-html", "--thresholds", unknown)
    assert res.exit_code == 2 and "no_such_threshold" in res.stderr
    pm = tmp_path / "pm.toml"
    pm.write_text('[phases]\nloading = ["x"]\n')
    res = run(traces["worked_example"], "--no-html", "--phase-map", pm)
    assert res.exit_code == 2 and "unknown phase" in res.stderr


@pytest.mark.parametrize("kind", ["missing", "directory", "garbage"])
def test_bad_inputs_exit_3(tmp_path, kind):
    path = tmp_path / "x.sqlite"
    if kind == "directory":
        path.mkdir()
    elif kind == "garbage":
        path.write_bytes(b"\x00garbage" * 100)
    res = run(path, "--no-html")
    assert res.exit_code == 3, res.output
    assert "cannot read" in res.stderr and "Traceback" not in res.output


# ------------------------------------------------------------------------------ real traces
@pytest.mark.realtrace
@pytest.mark.parametrize("name", ["fastvideo_train_2xh100_2026.2", "nvfuser_matmul_h200_2024.6",
                                  "saxpy_mpi_a100_2022.2", "mordred_rtx6000_2021",
                                  "centerformer_nvtx_only_2022.4", "dynamicvit_no_cuda_tables"])
def test_every_real_trace(tmp_path, name):
    out = tmp_path / "r.json"
    res = run(shared_trace(f"nsys/{name}.sqlite"), "--json", out, "-o", tmp_path / "r.html")
    assert res.exit_code == 0, res.output
    _valid(json.loads(out.read_text()))
    assert (tmp_path / "r.html").is_file()


@pytest.mark.realtrace
def test_dynamicvit_says_how_to_capture(tmp_path):
    res = run(shared_trace("nsys/dynamicvit_no_cuda_tables.sqlite"), "--json", "-", "--no-html")
    assert res.exit_code == 0
    v = json.loads(res.stdout)
    assert v["verdict"]["code"] == "insufficient_data"
    assert "nsys profile -t cuda,nvtx" in res.stderr
    assert any("-t cuda" in h for h in v["capture_hints"])


@pytest.mark.realtrace
def test_fastvideo_json(tmp_path):
    res = run(shared_trace("nsys/fastvideo_train_2xh100_2026.2.sqlite"), "--json", "-", "--no-html")
    assert res.exit_code == 0, res.stderr
    v = json.loads(res.stdout)
    assert len(v["trace"]["gpus"]) == 2 and len(v["processes"]) == 2
    cats = {k["name"]: (k["category"], k["tensor_core"]) for k in v["kernels"]}
    assert all(c == "communication" for n, (c, _) in cats.items() if n.startswith("nccl"))
    assert all(tc for n, (_, tc) in cats.items() if "nvjet" in n or "flash_fwd" in n)
    assert v["tensor_cores"]["share_of_kernel_time"] > 0.5


@pytest.mark.realtrace
def test_ncu_csv_alone_and_joined_to_a_timeline(traces, tmp_path):
    ncu = shared_trace("ncu/interp_a100_details.csv")
    res = run(ncu, "--json", "-", "--no-html")
    assert res.exit_code == 0, res.output
    v = _valid(json.loads(res.stdout))
    assert v["roofline"]["available"] is True
    assert "Nsight Compute CSV" in res.stderr
    assert v["verdict"]["code"] in ("memory_bound", "compute_bound", "insufficient_data")
    res = run(traces["memory_bound"], "--ncu", ncu, "--json", "-", "--no-html")
    assert res.exit_code == 0, res.output
    v = _valid(json.loads(res.stdout))
    assert v["roofline"]["available"] is True
    # the ncu kernels are another program's: they must not decide the verdict
    assert v["verdict"]["code"] == "memory_bound"
    assert not any(e["source"] == "ncu" for e in v["verdict"]["evidence"])
