"""The ``program`` (top level) and ``gpu_fill`` (per process) sections, wired into ``analyze``:
generated programs of every kind (synth.programs) and the real exports, in memory and streamed."""
from __future__ import annotations

import json

import pytest

from nsys_diag.app.analyze import analyze_path
from nsys_diag.app.options import build_options
from nsys_diag.synth import programs
from tests.app.test_stream import _without_chunks, assert_same
from tests.conftest import shared_trace

NSYS_CASES = tuple(programs.SCENARIOS)


def _view(path, **kw) -> dict:
    return json.loads(json.dumps(analyze_path(str(path), build_options(**kw), generated_at="t"),
                                 default=str))


@pytest.fixture(scope="module")
def case_paths(tmp_path_factory):
    root = tmp_path_factory.mktemp("programs")
    return {name: programs.write_case(name, root / f"{name}.sqlite") for name in NSYS_CASES}


@pytest.mark.parametrize("name", NSYS_CASES)
def test_program_names_the_framework_the_case_was_built_as(case_paths, name):
    facts = programs.facts(name)
    program = _view(case_paths[name], memory_budget="none")["program"]
    if facts["kernels"]["count"]:  # with kernels the kernel names decide
        assert program["framework"] in facts.get("framework_any_of", [facts["framework"]])
    for lib in facts["libraries"]:
        assert lib in program["libraries"]


@pytest.mark.parametrize("name", ["cuda_tiny_blocks", "sparse_solver_t4"])
def test_gpu_fill_measures_the_cases_under_filled_kernel_time(case_paths, name):
    facts = programs.facts(name)
    fill = _view(case_paths[name], memory_budget="none")["gpu_fill"]
    assert fill["available"] is True
    assert fill["sm_count"] == facts["sm_count"]
    assert fill["underfilled_share"] == pytest.approx(facts["kernels"]["underfilled_share"],
                                                      abs=0.02)
    top = fill["kernels"][0]
    expected = max(facts["kernels"]["by_name"].items(), key=lambda kv: kv[1]["share"])
    assert top["name"] == expected[0]
    assert top["blocks"] == expected[1]["blocks"]
    assert top["threads_per_block"] == expected[1]["threads_per_block"]


def test_gpu_fill_is_unavailable_with_a_reason_without_kernel_rows(case_paths):
    fill = _view(case_paths["launches_no_kernel_rows"], memory_budget="none")["gpu_fill"]
    assert fill["available"] is False and fill["reason"]


@pytest.mark.parametrize("name", ["cuda_tiny_blocks", "sparse_solver_t4", "openmp_offload"])
def test_streamed_program_and_gpu_fill_equal_the_in_memory_run(case_paths, name):
    whole = _view(case_paths[name], memory_budget="none")
    streamed = _view(case_paths[name], chunk_rows=400)
    assert streamed["trace"]["chunks"]["count"] >= 1
    assert_same(whole, _without_chunks(streamed))


def test_real_exports_get_their_program_and_fill():
    saxpy = _view(shared_trace("nsys/saxpy_mpi_a100_2022.2.sqlite"))
    assert saxpy["program"]["framework"] == "cuda"
    assert "mpi" in saxpy["program"]["libraries"]
    assert saxpy["gpu_fill"]["available"] is True
    assert saxpy["gpu_fill"]["kernels"][0]["blocks"] < saxpy["gpu_fill"]["sm_count"]
    fastvideo = _view(shared_trace("nsys/fastvideo_train_2xh100_2026.2.sqlite"))
    assert fastvideo["program"]["framework"] == "pytorch"
    assert "flash_attention" in fastvideo["program"]["techniques"]


@pytest.mark.parametrize("name", ["cuda_tiny_blocks", "sparse_solver_t4"])
def test_under_filled_busy_gpus_are_latency_bound_with_the_launch_shape_named(case_paths, name):
    facts = programs.facts(name)
    assert facts["expected"]["verdict"] == "latency_bound"
    view = _view(case_paths[name], memory_budget="none")
    verdict = view["verdict"]
    assert verdict["code"] == "latency_bound"
    top = view["gpu_fill"]["kernels"][0]
    assert f"{top['blocks']:,} blocks of {top['threads_per_block']} threads" in verdict["headline"]
    rows = {e["metric"]: e for e in verdict["evidence"]}
    assert rows["gpu_fill.underfilled_share"]["fired"] is True
    assert rows["gpu_fill.underfilled_share"]["value"] == pytest.approx(
        view["gpu_fill"]["underfilled_share"])
    assert not verdict["scale_advice"].startswith("Yes")
    finding = next(f for f in view["findings"] if f["code"] == "latency_bound")
    assert finding["fired"]


def test_launches_without_kernel_rows_say_the_kernel_activity_was_not_recorded(case_paths):
    view = _view(case_paths["launches_no_kernel_rows"], memory_budget="none")
    launches = programs.facts("launches_no_kernel_rows")["api_calls"]["cudaLaunchKernel"]
    assert view["verdict"]["code"] == "insufficient_data"
    hint = view["capture_hints"][0]
    assert hint.startswith("kernel activity was not recorded") and f"{launches:,}" in hint
    assert not any("trace CUDA with" in h for h in view["capture_hints"])
    assert f"{launches:,} kernel launch calls" in view["verdict"]["headline"]


def test_cuda_initialised_without_launches_says_so(case_paths):
    view = _view(case_paths["cuda_init_no_launch"], memory_budget="none")
    assert view["verdict"]["code"] == "insufficient_data"
    assert view["capture_hints"][0].startswith("CUDA was initialised but nothing was launched")
    assert not any("trace CUDA with" in h for h in view["capture_hints"])
    assert "nothing was launched" in view["verdict"]["headline"]


def test_abstention_is_judged_on_the_whole_capture_not_a_kernel_count(case_paths):
    facts = programs.facts("mpi_saxpy")
    assert facts["kernels"]["count"] < 20 and facts["kernels"]["total_ms"] >= 10
    view = _view(case_paths["mpi_saxpy"], memory_budget="none")
    assert view["verdict"]["code"] != "insufficient_data"
    assert view["verdict"]["code"] in facts["expected"]["verdict_any_of"]
    real = _view(shared_trace("nsys/saxpy_mpi_a100_2022.2.sqlite"))
    assert real["verdict"]["code"] != "insufficient_data"
    tiny = _view(shared_trace("nsys/mordred_rtx6000_2021.sqlite"))  # 6 ms of kernels: blind
    assert tiny["verdict"]["code"] == "insufficient_data"
    abstain = next(f for f in tiny["findings"] if f["cause"] == "too_little_work")
    rows = {e["metric"]: e for e in abstain["evidence"]}
    assert rows["kernels.capture_time_ms"]["fired"] is True


def test_an_abstention_beside_a_data_quality_warning_is_not_high_confidence():
    view = _view(shared_trace("nsys/nvfuser_matmul_h200_2024.6.sqlite"))
    assert view["verdict"]["code"] == "insufficient_data"
    if any(q["severity"] == "warning" for q in view["data_quality"]):
        assert view["verdict"]["confidence"] != "high"


def _advice_texts(view: dict) -> list[str]:
    """Every text that tells the user what to do: the verdict's and the findings' advice, the
    capture hints and the Tensor Core note."""
    texts = list(view["verdict"]["recommendations"])
    texts += [a["text"] for a in view["verdict"]["advice"]]
    texts += [a["text"] for f in view["findings"] for a in f.get("advice", [])]
    texts += list(view.get("capture_hints") or [])
    texts += [str((view.get("tensor_cores") or {}).get("advice") or "")]
    return texts


@pytest.mark.parametrize("name", NSYS_CASES)
def test_no_pytorch_only_words_in_the_advice_of_a_program_that_is_not_pytorch(case_paths, name):
    facts = programs.facts(name)
    assert facts["framework"] != "pytorch"
    view = _view(case_paths[name], memory_budget="none")
    forbidden = set(programs.PYTORCH_ONLY_WORDS) | set(facts["expected"]["forbidden_advice_words"])
    for text in _advice_texts(view):
        assert not [w for w in forbidden if w in text], text


@pytest.mark.parametrize("name", [n for n in NSYS_CASES
                                  if programs.facts(n)["framework"] in ("cuda", "openmp_offload",
                                                                        "openacc")])
def test_no_python_command_line_in_the_advice_of_a_compiled_program(case_paths, name):
    view = _view(case_paths[name], memory_budget="none")
    assert not [t for t in _advice_texts(view) if "python train.py" in t]


def test_cuda_programs_get_cuda_wording():
    view = _view(shared_trace("nsys/saxpy_mpi_a100_2022.2.sqlite"))
    assert view["program"]["framework"] == "cuda"
    # the host's code after each synchronisation keeps the GPU idle: its advice is CUDA's
    # (streams and events), never PyTorch's
    sync = [t for t in _advice_texts(view) if "synchronis" in t or "CUDA event" in t]
    assert sync and all("CUDA event" in t or "stream" in t for t in sync)
    assert not any(w in t for t in _advice_texts(view) for w in programs.PYTORCH_ONLY_WORDS)


def test_no_advice_suggests_a_technique_already_in_use():
    view = _view(shared_trace("nsys/fastvideo_train_2xh100_2026.2.sqlite"))
    assert view["program"]["flash_attention_share"] >= 0.10
    assert not any("FlashAttention" in t for t in _advice_texts(view))


def test_a_short_gemm_benchmark_with_big_pageable_copies_is_diagnosed(case_paths):
    """162 ms of GEMMs after 361 ms of pageable copies: the copies before the first kernel are
    the program's own work (transfer), not start-up, so the capture is diagnosed."""
    facts = programs.facts("cutlass_pageable")
    exp = facts["expected"]
    view = _view(case_paths["cutlass_pageable"], memory_budget="none")
    assert view["verdict"]["code"] == exp["verdict"] and view["verdict"]["finding"] == exp["cause"]
    by_cause = view["gaps"]["by_cause"]
    assert by_cause["transfer"] > by_cause["startup"]
    streamed = _view(case_paths["cutlass_pageable"], chunk_rows=100)
    assert streamed["verdict"]["code"] == view["verdict"]["code"]
    assert streamed["gaps"]["by_cause"]["startup"] == pytest.approx(by_cause["startup"])
