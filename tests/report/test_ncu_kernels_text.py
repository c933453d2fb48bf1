"""An Nsight Compute raw page without FLOP/DRAM counters read alone: the Markdown and terminal
summaries list its kernels with the counters it does hold (tensor pipe, SM throughput), and the
header says the GPU's name is unknown rather than naming it 'GPU 0'."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from nsys_diag.cli import main
from nsys_diag.report.roofline_text import ncu_kernel_rows
from nsys_diag.synth import programs


@pytest.fixture(scope="module")
def ncu_outputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("ncu")
    csv = programs.write_case("ncu_raw_no_flops", d / "k.csv")
    md, js = d / "k.md", d / "k.json"
    res = CliRunner().invoke(main, ["analyze", str(csv), "--no-html", "--md", str(md),
                                    "--json", str(js)], env={"SOURCE_DATE_EPOCH": "0", "COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    return res.output, md.read_text(), json.loads(js.read_text())


def test_every_profiled_kernel_is_listed_in_markdown_and_terminal(ncu_outputs):
    text, md, doc = ncu_outputs
    assert not doc["roofline"]["available"]
    kernels = doc["kernels"]
    assert len(kernels) == 4
    assert "**Kernels (Nsight Compute)**" in md and "Kernels (Nsight Compute)" in text
    for k in kernels:
        assert k["name"][:30] in text
        row = f"| {k['count']} | "
        assert row in md
        assert f"{k['tensor_pipe_pct']:.1f}%" in text and f"{k['sm_throughput_pct']:.1f}%" in text
    assert "counters missing" in text


def test_the_header_does_not_present_the_placeholder_as_a_name(ncu_outputs):
    text, _, doc = ncu_outputs
    gpu = doc["trace"]["gpus"][0]
    assert gpu["name_known"] is False
    assert "(GPU 0)" not in text.splitlines()[0]
    assert "name unknown" in text.splitlines()[0]
    assert f"compute capability {gpu['compute_capability']}" in text.splitlines()[0]


def test_rows_only_for_an_ncu_csv_without_a_roofline():
    kernels = [{"name": "k", "count": 3, "total_ns": 3_000, "share": 1.0,
                "tensor_pipe_pct": None, "sm_throughput_pct": 40.0}]
    ncu = {"format": "ncu-csv"}
    rows = ncu_kernel_rows({"trace": ncu, "roofline": {"available": False}, "kernels": kernels})
    assert rows == [{"kernel": "k", "launches": "3", "time": "3 µs", "share": "100%",
                     "tensor_pipe": "—", "sm_throughput": "40.0%"}]
    assert ncu_kernel_rows({"trace": ncu, "roofline": {"available": True}, "kernels": kernels}) == []
    timeline = {"format": "nsys-sqlite"}
    assert ncu_kernel_rows({"trace": timeline, "roofline": {"available": False},
                            "kernels": kernels}) == []


def test_gpus_without_names_are_one_entry_and_named_ones_stay():
    from nsys_diag.report.text import _gpu_names

    unnamed = [{"id": 0, "name": "GPU 0", "name_known": False},
               {"id": 1, "name": "GPU 1", "name_known": False}]
    assert _gpu_names(unnamed) == ["names unknown"]
    # the flag decides, not the text: an input may name a GPU anything
    assert _gpu_names([{"id": 0, "name": "GPU 0", "name_known": True}]) == ["GPU 0"]
    mixed = [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}, {"id": 1, "name": "",
                                                         "compute_capability": "9.0"}]
    assert _gpu_names(mixed) == ["NVIDIA H100 80GB HBM3", "name unknown, compute capability 9.0"]

