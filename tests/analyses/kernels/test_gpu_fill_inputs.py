"""``gpu_fill``'s reason and hint fit the input: an Nsight Compute CSV read alone (ncu's launch
statistics, or an nsys capture), a capture without kernel rows (nothing to judge, no re-capture
hint), an old export without launch-configuration columns; and the per-SM limits are labelled
with where they came from (an nsys export's TARGET_INFO_GPU, a Kineto trace's deviceProperties)."""
from __future__ import annotations

import pytest

from nsys_diag.analyses.kernels.gpu_fill import has_kernel_rows, process_gpu_fill, without_shapes
from nsys_diag.analyses.kernels.sm_limits import from_export, limits_for
from nsys_diag.loaders import load_trace
from nsys_diag.model import vocabulary as V
from nsys_diag.synth import programs
from tests.app.test_stream import SAMPLES, _view, _without_chunks, assert_same
from tests.conftest import shared_trace

RECAPTURE_WORDS = ("re-export", "re-capture", "gridX")


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    d = tmp_path_factory.mktemp("fill_inputs")
    names = ("ncu_raw_no_flops", "ncu_raw_no_flops_64", "launches_no_kernel_rows",
             "cuda_init_no_launch")
    return {n: programs.write_case(n, d / (f"{n}.csv" if n in programs.NCU_CASES
                                           else f"{n}.sqlite")) for n in names}


def _ncu_fill(fill: dict) -> None:
    assert fill["available"] is False
    assert fill["reason"] == V.FILL_NCU_ONLY and fill["hint"] == V.HINT_FILL_NCU
    assert "--section LaunchStats --section Occupancy" in fill["hint"]
    assert V.NSYS_TRACE_CUDA in fill["hint"]
    assert not any(w in fill["hint"] for w in RECAPTURE_WORDS)


def _no_kernel_fill(fill: dict) -> None:
    assert fill["available"] is False
    assert fill["reason"] == V.FILL_NO_KERNELS and "no kernel rows" in fill["reason"]
    assert fill["hint"] == ""


@pytest.mark.parametrize("name", ["ncu_raw_no_flops", "ncu_raw_no_flops_64"])
def test_an_ncu_csv_alone_points_at_ncu_launch_statistics_or_an_nsys_capture(cases, name):
    _ncu_fill(_view(cases[name])["gpu_fill"])


def test_the_real_ncu_csv_gets_the_ncu_reason():
    _ncu_fill(_view(shared_trace("ncu/interp_a100_details.csv"))["gpu_fill"])


@pytest.mark.parametrize("name", ["launches_no_kernel_rows", "cuda_init_no_launch"])
def test_a_capture_without_kernel_rows_has_nothing_to_judge(cases, name):
    whole = _view(cases[name], memory_budget="none")
    _no_kernel_fill(whole["gpu_fill"])
    streamed = _view(cases[name], chunk_rows=200)
    _no_kernel_fill(streamed["gpu_fill"])
    assert_same(whole, _without_chunks(streamed))


@pytest.mark.parametrize("rel", ["nsys/dynamicvit_no_cuda_tables.sqlite",
                                 "nsys/centerformer_nvtx_only_2022.4.sqlite"])
def test_real_exports_without_kernel_tables_have_nothing_to_judge(rel):
    path = shared_trace(rel)
    assert not has_kernel_rows(load_trace(path))
    _no_kernel_fill(_view(path, memory_budget="none")["gpu_fill"])
    _no_kernel_fill(_view(path, chunk_rows=500)["gpu_fill"])


def test_an_export_with_kernels_but_no_launch_columns_keeps_the_reexport_hint():
    r = without_shapes("nsys-sqlite", kernel_rows=True)
    assert r.hint == V.HINT_FILL_NO_SHAPE and "re-export" in r.hint
    assert process_gpu_fill(None, None, None, -1, ()).hint == V.HINT_FILL_NO_SHAPE


def test_kineto_limits_are_labelled_from_the_trace_s_device_properties():
    view = _view(SAMPLES / "healthy_tc.pt.trace.json.gz")
    fill = view["gpu_fill"]
    assert fill["available"] is True
    source = fill["limits"]["source"]
    assert source.startswith("trace (deviceProperties)") and "TARGET_INFO_GPU" not in source
    # the trace's deviceProperties lack the per-SM block limit: the spec table completes it
    assert "max blocks per SM from the spec table" in source
    assert "TARGET_INFO_GPU" not in fill["basis"] and "deviceProperties" in fill["basis"]


def test_nsys_limits_keep_the_target_info_gpu_label():
    fill = _view(SAMPLES / "launch_bound.sqlite", memory_budget="none")["gpu_fill"]
    assert fill["limits"]["source"] == "export (TARGET_INFO_GPU)"


def test_the_label_names_what_the_spec_table_completed():
    h100 = limits_for(9, 0)
    full = from_export(2048, 32, 65536, 233472, h100, "trace (deviceProperties)")
    assert full.source == "trace (deviceProperties)"
    part = from_export(2048, 0, 65536, 233472, h100, "trace (deviceProperties)")
    assert part.source == "trace (deviceProperties); max blocks per SM from the spec table"
    assert from_export(2048, 32, 0, 0, None).source.endswith("registers, shared memory per SM "
                                                             "assumed")
    assert from_export(0, 0, 0, 0, h100).source == "spec table"
