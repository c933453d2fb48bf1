"""``analyze --gpu NAME``: names the GPU when the input does not, overrides it with a warning when
it does, short forms say which variant they picked, unknown names are usage errors (exit 2); and an
ncu CSV of another GPU than the trace is a data-quality warning, its own GPU setting the peaks."""
from __future__ import annotations

import json

from click.testing import CliRunner

from conftest import SAMPLE_TRACES, shared_trace
from nsys_diag.cli import main
from nsys_diag.synth.ncu import write_ncu_csv

A100_CSV = "ncu/interp_a100_details.csv"  # no device name, no device attributes
H200 = "nsys/nvfuser_matmul_h200_2024.6.sqlite"


def analyze_json(tmp_path, *args):
    out = tmp_path / "a.json"
    res = CliRunner().invoke(main, ["analyze", *map(str, args), "--no-html", "--json", str(out)],
                             env={"SOURCE_DATE_EPOCH": "0"})
    assert res.exit_code == 0, res.output
    return json.loads(out.read_text())


def codes(view) -> dict[str, dict]:
    return {d["code"]: d for d in view["data_quality"]}


def test_unknown_gpu_is_a_usage_error_listing_known_names():
    res = CliRunner().invoke(main, ["analyze", str(SAMPLE_TRACES / "simt_gemm.sqlite"), "--no-html",
                                    "--gpu", "H300"])
    assert res.exit_code == 2, res.output
    assert "--gpu 'H300': unknown GPU" in res.stderr
    assert "A100 80GB SXM" in res.stderr and "H200" in res.stderr and "B200" in res.stderr


def test_gpu_names_an_ncu_csv_without_device_attributes(tmp_path):
    plain = analyze_json(tmp_path, shared_trace(A100_CSV))
    assert plain["roofline"]["gpu"] is None
    v = analyze_json(tmp_path, shared_trace(A100_CSV), "--gpu", "NVIDIA A100-SXM4-40GB")
    rl = v["roofline"]
    assert rl["gpu"] == "NVIDIA A100-SXM4-40GB"
    assert "A100 40GB SXM" in rl["peaks"]["provenance"]
    assert rl["peaks"]["dram_bytes_per_s"] == 1555e9
    q = codes(v)["gpu_named"]
    assert q["severity"] == "info" and "does not name its GPU" in q["message"]


def test_short_form_picks_the_sxm_variant_with_most_memory_and_says_so(tmp_path):
    v = analyze_json(tmp_path, shared_trace(A100_CSV), "--gpu", "A100")
    assert "A100 80GB SXM" in v["roofline"]["peaks"]["provenance"]
    notes = [d["message"] for d in v["data_quality"] if d["code"] == "gpu_named"]
    assert any("taken as A100 80GB SXM (the SXM variant with the most memory)" in n for n in notes)


def test_gpu_overrides_the_trace_with_a_warning(tmp_path):
    v = analyze_json(tmp_path, shared_trace(H200), "--gpu", "H100 80GB HBM3")
    assert [g["name"] for g in v["trace"]["gpus"]] == ["NVIDIA H100 80GB HBM3"]
    q = codes(v)["gpu_overridden"]
    assert q["severity"] == "warning" and "NVIDIA H200" in q["message"]
    # naming the GPU the trace already names is no override
    v = analyze_json(tmp_path, shared_trace(H200), "--gpu", "H200")
    assert "gpu_overridden" not in codes(v)


def test_csv_without_gpu_joined_to_a_trace_says_the_trace_gpu_is_assumed(tmp_path):
    v = analyze_json(tmp_path, shared_trace(H200), "--ncu", shared_trace(A100_CSV))
    q = codes(v)["ncu_gpu_assumed"]
    assert q["severity"] == "warning" and "NVIDIA H200" in q["message"] and "--gpu" in q["hint"]


def test_csv_of_another_gpu_is_a_mismatch_and_sets_the_peaks(tmp_path):
    csv = write_ncu_csv(tmp_path / "k.csv", gpu_name="NVIDIA A100-SXM4-80GB")
    v = analyze_json(tmp_path, shared_trace(H200), "--ncu", csv)
    q = codes(v)["ncu_gpu_mismatch"]
    assert q["severity"] == "warning" and "A100-SXM4-80GB" in q["message"]
    assert "NVIDIA H200" in q["message"]
    rl = v["roofline"]
    assert rl["gpu"] == "NVIDIA A100-SXM4-80GB"
    assert "A100 80GB SXM" in rl["peaks"]["provenance"] and "H200" not in rl["peaks"]["provenance"]
    assert rl["peaks"]["dram_bytes_per_s"] < 2.1e12  # A100's 2.04 TB/s, not H200's 4.8


def test_csv_of_the_same_gpu_is_no_mismatch(tmp_path):
    csv = write_ncu_csv(tmp_path / "k.csv", gpu_name="NVIDIA H200")
    v = analyze_json(tmp_path, shared_trace(H200), "--ncu", csv)
    assert not {"ncu_gpu_mismatch", "ncu_gpu_assumed"} & set(codes(v))
