"""Which GPU sets the roofline's peaks, for every combination of an ncu CSV that names its GPU or
not × carries ``device__attribute_*`` values or not × joined to a trace with a GPU table, without
one, or alone × ``--gpu``; each roofline says where its peaks came from (``peaks_source``)."""
from __future__ import annotations

import shutil
import sqlite3

import pytest

from nsys_diag.analyses.roofline.gpu_choice import PEAKS_SOURCES, roofline_gpu
from nsys_diag.analyses.suite import run_suite
from nsys_diag.loaders import load_trace
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.synth.ncu import write_ncu_csv
from nsys_diag.synth.writer import write_preset

A100_80 = "NVIDIA A100-SXM4-80GB"
TRACE_GPU = "NVIDIA A100-SXM4-40GB"  # the simt_gemm preset's GPU (1.5552 TB/s, 108 SMs)


def attrs(mem_clock_khz: int, sms: int = 108, cc: tuple[int, int] = (8, 0)) -> dict:
    """Device attributes as ncu prints them (kHz clocks, bus width in bits)."""
    return {"device__attribute_multiprocessor_count": sms,
            "device__attribute_clock_rate": 1_410_000,
            "device__attribute_memory_clock_rate": mem_clock_khz,
            "device__attribute_global_memory_bus_width": 5120,
            "device__attribute_compute_capability_major": cc[0],
            "device__attribute_compute_capability_minor": cc[1]}


ATTRS_80GB = attrs(1_593_000)  # 2 × 1.593 GHz × 640 B = 2.039 TB/s: not the trace's 40 GB part
ATTRS_40GB = attrs(1_215_000)  # 1.5552 TB/s: agrees with the trace's GPU
FP32_A100 = 2 * 64 * 108 * 1.41e9  # FMA = 2 FLOP × 64 FP32 lanes × SMs × the profiled clock


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("gpu_choice")
    table = write_preset(d / "table.sqlite", "simt_gemm")
    bare = d / "no_table.sqlite"
    shutil.copy(table, bare)
    con = sqlite3.connect(bare)
    for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE "
                            "'TARGET_INFO%GPU%'").fetchall():
        con.execute(f'DROP TABLE "{t}"')
    con.commit()
    con.close()
    return {"table": table, "no_table": bare, "none": None}


def rl_of(tmp_path, traces, trace: str, *, name=None, device_attrs=None, gpu=None):
    csv = write_ncu_csv(tmp_path / "k.csv", gpu_name=name, device_attrs=device_attrs, cc="")
    path = traces[trace]
    bundle = load_trace(path, ncu=csv) if path else load_trace(csv)
    suite = run_suite(bundle, AnalyzeOptions(gpu=gpu))
    codes = {q.code for q in suite.data_quality}
    return suite.roofline.to_json(), codes


@pytest.mark.parametrize("trace", ["table", "no_table", "none"])
@pytest.mark.parametrize("device_attrs", [None, ATTRS_80GB])
def test_a_csv_that_names_its_gpu_sets_the_peaks(tmp_path, traces, trace, device_attrs):
    rl, codes = rl_of(tmp_path, traces, trace, name=A100_80, device_attrs=device_attrs)
    assert rl["peaks_source"] == "csv_gpu" and rl["gpu"] == A100_80
    assert rl["peaks"]["flop_per_s"]["fp32"] == pytest.approx(FP32_A100)
    assert rl["peaks"]["dram_bytes_per_s"] == pytest.approx(2.039e12, rel=1e-3)  # its own part
    assert ("ncu_gpu_mismatch" in codes) is (trace == "table")  # 80 GB CSV, 40 GB trace


@pytest.mark.parametrize("trace", ["table", "no_table", "none"])
def test_unnamed_csv_with_device_attributes_gets_roofs_from_them(tmp_path, traces, trace):
    rl, codes = rl_of(tmp_path, traces, trace, device_attrs=ATTRS_80GB)
    assert rl["peaks_source"] == "csv_device_attributes"
    assert rl["gpu"] is None  # the attributes contradict the trace's 40 GB part (or no trace)
    assert rl["peaks"]["flop_per_s"]["fp32"] == pytest.approx(FP32_A100)
    assert rl["peaks"]["dram_bytes_per_s"] == pytest.approx(2 * 1.593e9 * 640)
    assert any(r["kind"] == "memory" for r in rl["roofs"]) and any(
        r["kind"] == "compute" for r in rl["roofs"])
    note = next(n for n in rl["notes"] if "device attributes" in n)
    assert "CC 8.0, 108 SMs, SM clock 1.41 GHz, DRAM 2.04 TB/s" in note
    assert ("ncu_gpu_mismatch" in codes) is (trace == "table")
    assert "ncu_gpu_assumed" not in codes


def test_device_attributes_that_agree_with_the_trace_take_its_name(tmp_path, traces):
    rl, codes = rl_of(tmp_path, traces, "table", device_attrs=ATTRS_40GB)
    assert rl["peaks_source"] == "csv_device_attributes" and rl["gpu"] == TRACE_GPU
    assert "A100 40GB SXM" in rl["peaks"]["provenance"]  # the built-in rates of the trace's GPU
    assert rl["peaks"]["dram_bytes_per_s"] == pytest.approx(1.5552e12)
    assert any("agree with the trace's" in n for n in rl["notes"])
    assert not {"ncu_gpu_mismatch", "ncu_gpu_assumed"} & codes


def test_a_csv_without_name_or_attributes_takes_the_trace_gpu(tmp_path, traces):
    rl, codes = rl_of(tmp_path, traces, "table")
    assert rl["peaks_source"] == "trace_gpu" and rl["gpu"] == TRACE_GPU
    assert rl["peaks"]["dram_bytes_per_s"] == pytest.approx(1.5552e12)
    assert any("the trace's GPU (NVIDIA A100-SXM4-40GB) sets the peaks" in n for n in rl["notes"])
    assert "ncu_gpu_assumed" in codes


@pytest.mark.parametrize("trace", ["no_table", "none"])
def test_no_gpu_anywhere_means_no_roofs_and_a_hint_to_name_it(tmp_path, traces, trace):
    rl, codes = rl_of(tmp_path, traces, trace)
    assert rl["peaks_source"] == "none" and rl["gpu"] is None
    assert rl["peaks"]["dram_bytes_per_s"] is None and rl["roofs"] == []
    assert any("--gpu NAME" in n for n in rl["notes"])
    assert "ncu_gpu_assumed" not in codes  # no trace GPU was assumed


@pytest.mark.parametrize("trace", ["table", "no_table", "none"])
@pytest.mark.parametrize("name,device_attrs", [(None, None), (None, ATTRS_80GB), (A100_80, None)])
def test_gpu_option_sets_the_peaks_in_every_case(tmp_path, traces, trace, name, device_attrs):
    rl, codes = rl_of(tmp_path, traces, trace, name=name, device_attrs=device_attrs, gpu="H100")
    assert rl["peaks_source"] == "gpu_option" and rl["gpu"] == "NVIDIA H100 SXM"
    assert rl["peaks"]["dram_bytes_per_s"] == pytest.approx(3.35e12)
    # overriding what the input names or describes is a warning; naming an unnamed GPU is not
    overrides = name is not None or device_attrs is not None or trace == "table"
    assert ("gpu_overridden" in codes) is overrides


def test_peaks_sources_are_the_contract_enum():
    from nsys_diag.report.contract import json_schema
    from nsys_diag.report.roofline_text import PEAKS_SOURCE_LABEL

    roofline = json_schema()["$defs"]["roofline"]["oneOf"][-1]["properties"]
    assert set(roofline["peaks_source"]["enum"]) == set(PEAKS_SOURCES) == set(PEAKS_SOURCE_LABEL)


def test_roofline_gpu_of_an_ncu_only_bundle(tmp_path):
    b = load_trace(write_ncu_csv(tmp_path / "k.csv", device_attrs=ATTRS_80GB, cc=""))
    rg = roofline_gpu(b, None)
    assert rg.source == "csv_device_attributes" and int(rg.gpus["sm_count"].iloc[0]) == 108
