"""`nsys-diag inspect` on real and hand-built exports: text, JSON, privacy, escaping."""
from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner

from conftest import shared_trace
from nsys_diag.cli import main
from nsys_diag.loaders import load_trace
from nsys_diag.report.inventory_render import build_inspect_view, inspect_to_json, render_inspect_text
from tiny_nsys import write_tiny_nsys

FASTVIDEO = "nsys/fastvideo_train_2xh100_2026.2.sqlite"
DYNAMICVIT = "nsys/dynamicvit_no_cuda_tables.sqlite"


def invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


def json_of(path, *extra):
    result = CliRunner().invoke(main, ["inspect", str(path), "--json", "-", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def status(view, name):
    return {a["name"]: a for a in view["analyses"]}[name]


def test_fastvideo_json(tmp_path):
    path = shared_trace(FASTVIDEO)
    out = tmp_path / "v.json"
    invoke("inspect", path, "--json", out)
    view = json.loads(out.read_text())
    assert view["format"] == "nsys-sqlite" and view["nsys_version"] == "2026.2.1.210"
    assert view["schema_version"] == "3.25.0"
    assert view["cuda"]["kernels"] == 4010 and view["cuda"]["memcpy"] == 1020
    assert [g["kernels"] for g in view["gpus"]] == [1993, 2017]
    assert all(g["name"] is None for g in view["gpus"])  # no GPU table in this file
    assert sorted(p["pid"] for p in view["processes"]) == [144, 145]
    assert view["tables"]["CUPTI_ACTIVITY_KIND_KERNEL"] == 4010
    assert view["cuda"]["launch_matched_share"] == pytest.approx((3986 + 1015 + 267 + 366) / (4010 + 1020 + 269 + 366))
    assert status(view, "launch_attribution")["status"] == "partial"
    # analyze finds no step on this window (issue 15): inspect no longer promises steps/phases
    assert status(view, "steps_and_phases")["status"] == "partial"
    assert view["capabilities"]["steps"] is False
    assert status(view, "gpu_metrics")["status"] == "no"
    assert "--gpu-metrics-devices=all" in status(view, "gpu_metrics")["hint"]
    doms = {d["name"]: d["ranges"] for d in view["nvtx"]["domains"]}
    assert doms == {"": 18656, "domain#1": 462}
    top = [r["name"] for r in view["nvtx"]["top_ranges"]]
    assert "aten::to" in top and not any("op_id" in n for n in top)  # grouped by normalised name
    t = view["time"]
    assert t["first_event_ns"] >= 60_000_000_000 and t["capture_end_ns"] > t["last_event_ns"]
    assert {w["code"] for w in view["warnings"]} >= {"unmatched_launches", "no_gpu_info"}


def test_json_to_stdout_keeps_text_on_stderr():
    path = shared_trace(FASTVIDEO)
    result = CliRunner().invoke(main, ["inspect", str(path), "--json", "-"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["cuda"]["kernels"] == 4010
    assert "What this export supports" in result.stderr


def test_dynamicvit_says_what_is_missing_and_how_to_capture():
    path = shared_trace(DYNAMICVIT)
    text = invoke("inspect", path).output
    assert "no CUDA GPU activity recorded" in text and "no NVTX ranges" in text
    assert "nsys profile -t cuda,nvtx,osrt" in text
    view = json_of(path)
    assert view["cuda"]["kernels"] == 0 and view["nvtx"]["ranges"] == 0
    assert status(view, "gpu_utilization")["status"] == "no"
    assert "-t cuda,nvtx,osrt" in status(view, "gpu_utilization")["hint"]
    assert any("-t cuda,nvtx,osrt" in h for h in view["capture_hints"])
    assert view["gpus"][0]["name"] == "NVIDIA RTX A2000 12GB"


@pytest.mark.parametrize("rel", ["nsys/saxpy_mpi_a100_2022.2.sqlite", "nsys/mordred_rtx6000_2021.sqlite",
                                 "nsys/centerformer_nvtx_only_2022.4.sqlite",
                                 "nsys/nvfuser_matmul_h200_2024.6.sqlite"])
def test_every_real_trace_renders(rel):
    path = shared_trace(rel)
    text = invoke("inspect", path).output
    assert path.name in text and "What this export supports" in text
    view = json_of(path)
    assert view["frames"]["kernels"] == view["cuda"]["kernels"]


def test_saxpy_domains_and_versions():
    view = json_of(shared_trace("nsys/saxpy_mpi_a100_2022.2.sqlite"))
    assert {d["name"] for d in view["nvtx"]["domains"]} == {"MPI", ""}
    assert view["nsys_version"] == "2022.2.1.31" and view["gpus"][0]["compute_capability"] == "8.0"


def test_mordred_pre_2022_version_note():
    view = json_of(shared_trace("nsys/mordred_rtx6000_2021.sqlite"))
    assert view["nsys_version"] is None and "2021.2.1" in view["version_note"]


def test_private_data_only_with_host_info_and_never_env_values():
    path = shared_trace("nsys/nvfuser_matmul_h200_2024.6.sqlite")
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    host = con.execute("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name='Hostname'").fetchone()[0]
    env_values = [r[0].split("=", 1)[1].strip('"') for r in con.execute(
        "SELECT value FROM META_DATA_CAPTURE WHERE name LIKE '%ENVIRONMENT_VARIABLE'")]
    con.close()
    env_values = [v for v in env_values if len(v) >= 6]  # ignore trivial values like "1"
    assert env_values
    plain = invoke("inspect", path).output + json.dumps(json_of(path))
    secret_arg = "--gtest_filter=HopperMatmulTest"  # from the captured command line
    assert host not in plain and secret_arg not in plain and str(path.parent) not in plain
    assert "./bin/test_matmul" not in plain and "test_matmul (pid" in plain  # basename only
    full = invoke("inspect", path, "--include-host-info").output
    full_json = json.dumps(json_of(path, "--include-host-info"))
    assert host in full and secret_arg in full and str(path) in full and "./bin/test_matmul" in full
    # Values that also occur as ordinary trace data (e.g. the nsys version) are not evidence.
    distinctive = [v for v in env_values if v not in plain and v != host]
    assert len(distinctive) > 10
    for value in distinctive:
        assert value not in full and value not in full_json


def test_tiny_fixture_secret_never_shown(tmp_path):
    path = write_tiny_nsys(tmp_path / "t.sqlite", with_metrics=True, with_memory=True)
    for args in ([], ["--include-host-info"]):
        text = invoke("inspect", path, *args).output + json.dumps(json_of(path, *args))
        assert "hunter2-do-not-show" not in text
    view = json_of(path)
    assert status(view, "gpu_metrics")["status"] == "yes"
    assert status(view, "tensor_cores")["status"] == "yes"
    assert status(view, "memory_usage")["status"] == "yes"
    assert view["nvtx"]["unterminated"] == 1 and view["nvtx"]["marks"] == 1


def test_terminal_output_is_escaped(tmp_path):
    evil = "evil\x1b[31mRED\x1b]0;title\x07\x00name"
    path = write_tiny_nsys(tmp_path / "t.sqlite", kernel_name=evil, nvtx_text=evil)
    view = build_inspect_view(load_trace(path))
    text = render_inspect_text(view)
    assert "\x1b" not in text and "\x00" not in text and "\x07" not in text
    assert "evil" in text
    # JSON keeps the raw text (escaped by json itself).
    assert json.loads(inspect_to_json(view))["nvtx"]["top_ranges"]
