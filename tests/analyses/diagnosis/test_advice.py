"""Advice wording per program (nsys_diag/analyses/diagnosis/advice.py: ``worded``)."""
from __future__ import annotations

import pytest

from nsys_diag.analyses.diagnosis.advice import ADVICE, Rule, worded
from nsys_diag.model.vocabulary import EXAMPLE_NATIVE_RUN, EXAMPLE_PYTHON_RUN, NCU_PROFILE

NCU_RULE = Rule(f"Check the kernels with {NCU_PROFILE}.", ("gpu_fill.underfilled_share",))


@pytest.mark.parametrize("flavour", ["cuda", "openmp_offload", "openacc"])
def test_a_compiled_program_is_told_to_profile_its_binary_not_a_python_script(flavour):
    text = worded(NCU_RULE, flavour)
    assert text is not None and EXAMPLE_PYTHON_RUN not in text
    assert f"--print-units base {EXAMPLE_NATIVE_RUN} > kernels.csv" in text


@pytest.mark.parametrize("flavour", ["pytorch", "kineto", "neutral"])
def test_python_programs_keep_the_python_command(flavour):
    assert f"--print-units base {EXAMPLE_PYTHON_RUN} > kernels.csv" in (worded(NCU_RULE, flavour)
                                                                      or "")


def test_every_latency_rule_offered_to_a_cuda_program_runs_its_binary():
    """The latency advice (under-filled launches, a CUDA-C symptom) quotes the ncu command."""
    texts = [worded(r, "cuda") for r in ADVICE["latency"]]
    assert any(t and "ncu " in t for t in texts)
    assert not any(t and EXAMPLE_PYTHON_RUN in t for t in texts)


def test_the_nvtx_capture_range_advice_names_the_loop_of_the_program_that_ran():
    from nsys_diag.analyses.diagnosis.advice import CAPTURE_RANGE, worded

    nvtx = CAPTURE_RANGE[1]
    assert "train_step" in worded(nvtx, "pytorch")
    for flavour in ("cuda", "openmp_offload", "openacc"):
        text = worded(nvtx, flavour)
        assert "nvtxRangePushA" in text and "train_step" not in text
    assert "train_step" not in worded(nvtx, "neutral") and "nvtxRangePushA" not in worded(nvtx, "neutral")


def test_host_registration_in_the_loop_is_told_to_register_once():
    """MPI saxpy registers its host buffers every step (cudaHostRegister, 18% of the window):
    the advice is to register once outside the loop, not to reuse device allocations."""
    from nsys_diag.analyses.diagnosis.verdict import diagnose
    from nsys_diag.analyses.diagnosis.verdict_types import VerdictInputs
    x = VerdictInputs(has_kernels=True, window_ms=585.0, step_ms=195.0, steps_source="nvtx:x",
                      utilization=0.09, gap_share={"memory_management": 0.18},
                      gap_detail={"memory_management": "in cudaHostRegister 105 ms"},
                      framework="cuda")
    (f,) = [f for f in diagnose(x).findings if f.cause == "memory_management"]
    texts = [a.text for a in f.advice]
    assert texts and texts[0].startswith("Register the host buffers once, outside the loop")
    assert not any("cudaMallocAsync" in t for t in texts)
    x2 = VerdictInputs(has_kernels=True, window_ms=585.0, step_ms=195.0, steps_source="nvtx:x",
                       utilization=0.09, gap_share={"memory_management": 0.18},
                       gap_detail={"memory_management": "in cudaMalloc 105 ms"}, framework="cuda")
    (g,) = [f for f in diagnose(x2).findings if f.cause == "memory_management"]
    assert [a.text for a in g.advice][0].startswith("Allocate once and reuse")
